/**
 * renew: a holder's renewal, or a waiter's heartbeat. A holder's lease lasts its ttl from now (never
 * past its maxHold); a waiter keeps its place for its ttl from now (never past its wait). A request
 * that is no longer held or waiting answers how it ended, or `{'u'}` when unknown: never a grant.
 * Answers `standing` (see common.ts) or `{'u'}`.
 */
export default `
local rec = reaped(load(id))
if not rec then
  save()
  return {'u'}
end
local r = fields(rec)
if r[1] == 'H' then
  local ttl, hard = tonumber(r[3]), tonumber(r[4])
  local until_ = now + ttl
  if hard > 0 then until_ = math.min(until_, hard) end
  redis.call('ZADD', T, until_, 'h' .. id)
  covers(until_, nil)
elseif r[1] == 'W' then
  local ttl, waitUntil = tonumber(r[2]), tonumber(r[4])
  local until_ = now + ttl
  if waitUntil >= 0 then until_ = math.min(until_, waitUntil) end
  redis.call('ZADD', T, until_, 'w' .. id)
  covers(until_, nil)
end
save()
return standing(id, rec)
`

/**
 * renew: a holder's renewal, or a waiter's heartbeat. A holder's lease lasts its ttl from now (never
 * past its maxHold); a waiter keeps its place for its ttl from now (never past its wait). A request
 * that is no longer held or waiting answers how it ended, or `{'u'}` when unknown: never a grant.
 * Answers `standing` (see common.ts), `{'u'}`, or `{'a'}` (ask again: see acquire).
 */
export default `
local function renew(keys, args)
  begin(keys, args)
  now = time()
  local rec = settle(load())
  if again then
    save()
    return {'a'}
  end
  if not rec then
    save()
    return {'u'}
  end
  local kind = string.sub(rec, 1, 1)
  if kind == 'H' then
    local f, ttl, hard, since = string.match(rec, '^H (%d+) (%d+) (%d+) (%d+)')
    ttl, hard = tonumber(ttl), tonumber(hard)
    local until_ = now + ttl
    if hard > 0 and hard < until_ then until_ = hard end
    if inSlot(id) then
      setSlot(string.format('H %s %d %d %s %d %s', f, ttl, hard, since, until_, id))
    else
      redis.call('ZADD', Z, int(until_), 'h' .. id, int(INDEX + until_), 'H' .. id)
    end
    covers(until_)
    save()
    -- The lease is its ttl from now, or (cut short by its maxHold) the holder's maxHold timer ends it.
    return {'g', tonumber(f), ttl, hard > 0 and hard - now or 0}
  elseif kind == 'W' then
    local ttl, waitUntil = string.match(rec, '^W (%d+) %d+ (%-?%d+)')
    ttl, waitUntil = tonumber(ttl), tonumber(waitUntil)
    local until_ = now + ttl
    if waitUntil >= 0 and waitUntil < until_ then until_ = waitUntil end
    redis.call('ZADD', Z, int(until_), 'w' .. id)
    covers(until_)
  end
  save()
  return standing(id, rec)
end
`

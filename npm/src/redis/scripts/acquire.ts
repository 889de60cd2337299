/**
 * acquire: asks for a permit of one key. Idempotent by request id: asked again, it answers where the
 * request stands (its lease and fence, its place in line, or how it ended), never a second grant.
 *
 * ARGV (after the common three): 4 ttl ms, 5 maxHold ms (0: none), 6 wait ms (-1: without limit),
 * 7 limit (1 for a lock), 8 the channel that tells this request's process of a grant.
 * Answers `standing` (see common.ts), `{'b'}` (busy, for a wait of 0) or `{'x', code, message}`.
 */
export default `
local ttl, maxHold, wait, want, chan = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local rec = reaped(load(id))
if rec then
  save()
  return standing(id, rec)
end
if want ~= limit then
  if held + waiting > 0 then
    save()
    return {'x', 'invalid', 'limit ' .. want .. ' differs from the limit ' .. limit .. ' its holders use'}
  end
  limit = want
  set('l', want)
end
if held < limit and waiting == 0 then
  local f, lease, revoke = grant(id, ttl, maxHold, chan)
  save()
  return {'g', f, lease, revoke}
end
if wait == 0 then
  save()
  return {'b'}
end
if waiting >= 10000 then
  save()
  return {'x', 'limit', 'more than 10000 waiting holds on one key'}
end
local ticket = redis.call('HINCRBY', M, 't', 1)
redis.call('ZADD', Q, ticket, id)
waiting = waiting + 1
set('q', waiting)
local waitUntil = -1
local beat = now + ttl
if wait > 0 then
  waitUntil = now + wait
  beat = math.min(beat, waitUntil)
end
rec = 'W ' .. ttl .. ' ' .. maxHold .. ' ' .. int(waitUntil) .. ' ' .. chan
set(id, rec)
redis.call('ZADD', T, beat, 'w' .. id)
covers(beat, nil) -- a waiter waits for a holder: the deadlines' key was there
if waiting == 1 then redis.call('PEXPIREAT', Q, int(mark)) end
save()
return standing(id, rec)
`

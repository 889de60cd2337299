/**
 * acquire: asks for a permit of one key. Idempotent by request id: asked again, it answers where the
 * request stands (its lease and fence, its place in line, or how it ended), never a second grant.
 *
 * ARGV (after the common three): 4 ttl ms, 5 maxHold ms (0: none), 6 wait ms (-1: without limit),
 * 7 limit (1 for a lock), 8 the channel that tells this request's process of a grant.
 * Answers `standing` (see common.ts), `{'b'}` (busy, for a wait of 0) or `{'x', code, message}`.
 */
export default `
local ttl, maxHold, wait, limit, chan = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
if reap() > 0 then serve() end
local rec = redis.call('HGET', R, id)
if rec then
  settle()
  return standing(id, rec)
end
local held = redis.call('ZCARD', H)
local waiting = redis.call('ZCARD', Q)
local known = tonumber(redis.call('HGET', M, 'l') or '0')
if known ~= limit then
  if known > 0 and held + waiting > 0 then
    settle()
    return {'x', 'invalid', 'limit ' .. limit .. ' differs from the limit ' .. known .. ' its holders use'}
  end
  redis.call('HSET', M, 'l', limit)
  dirty = true
end
if held < limit and waiting == 0 then
  local f, lease, revoke = grant(id, ttl, maxHold, chan)
  settle()
  return {'g', f, lease, revoke}
end
if wait == 0 then
  settle()
  return {'b'}
end
if waiting >= 10000 then
  settle()
  return {'x', 'limit', 'more than 10000 waiting holds on one key'}
end
local ticket = redis.call('HINCRBY', M, 't', 1)
redis.call('ZADD', Q, ticket, id)
local waitUntil = -1
local beat = now + ttl
if wait > 0 then
  waitUntil = now + wait
  beat = math.min(beat, waitUntil)
end
redis.call('HSET', R, id, 'W ' .. ttl .. ' ' .. maxHold .. ' ' .. int(waitUntil) .. ' ' .. chan)
redis.call('ZADD', D, beat, id)
dirty = true
settle()
return standing(id, redis.call('HGET', R, id))
`

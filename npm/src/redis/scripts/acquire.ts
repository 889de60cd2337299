/**
 * acquire: asks for a permit of one key. Idempotent by request id: asked again, it answers where the
 * request stands (its lease and fence, its place in line, or how it ended), never a second grant.
 *
 * args: 1 request id, 2 wait ms (-1: without limit), 3 the handle's constants (see common.ts).
 * Answers the fence alone (a whole number) when it grants the request now, its lease its ttl and its
 * revoke its maxHold as asked (the cheapest answer to make and to read); else `standing` (see
 * common.ts), `{'b'}` (busy, for a wait of 0) or `{'x', code, message}`.
 * A free lock costs TIME, HMGET, HSET.
 */
export default `
local function acquire(keys, args)
  -- The common case first, by itself: a lock's key Redis has, free, nobody in line, nothing due, and
  -- the new lease inside the keys' expiry and after the bound \`e\` (so that neither moves). The same
  -- grant as below, in TIME, HMGET, HSET and nothing else; anything else goes the general way.
  -- (The fields as \`load\` reads them, which takes them from here.)
  local g = redis.call('HMGET', keys[1], 'l', 'q', 'h', 'n', args[1], 'f', 'x', 'e')
  local grace, _, ttl, maxHold, want = string.match(args[3], '^(%d+) (%S+) (%d+) (%d+) (%d+)')
  ttl, maxHold = tonumber(ttl), tonumber(maxHold)
  local at
  if not (g[1] or g[2] or g[3] or g[5]) and g[7] and want == '1' then
    at = time()
    local bound, hard, until_ = tonumber(g[8]), 0, at + ttl
    if maxHold > 0 then
      hard = at + maxHold
      if hard < until_ then until_ = hard end
    end
    if at < bound and until_ >= bound and until_ + tonumber(grace) <= tonumber(g[7]) then
      local f = math.max((tonumber(g[6]) or 0) + 1, at * 1024)
      redis.call('HSET', keys[1], 'h', string.format('H %d %d %d %d %d %s', f, ttl, hard, at, until_, args[1]), 'f', string.format('%d', f))
      return f
    end
  end
  begin(keys, args)
  local wait, chan = tonumber(args[2]), chanArg
  want = tonumber(want)
  now = at or time()
  local rec = settle(load(g))
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
    set('l', want > 1 and int(want))
  end
  if held < limit and waiting == 0 then
    local f = grant(id, ttl, maxHold)
    save()
    return f
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
  waiting = waiting + 1
  local waitUntil, beat = -1, now + ttl
  if wait > 0 then
    waitUntil = now + wait
    if waitUntil < beat then beat = waitUntil end
  end
  set(id, string.format('W %d %d %d %s', ttl, maxHold, waitUntil, chan))
  redis.call('ZADD', Z, int(ticket - LINE), 'q' .. id, int(beat), 'w' .. id)
  covers(beat)
  save()
  return waitingAnswer(waiting - 1, waitUntil)
end
`

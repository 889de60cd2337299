/**
 * acquire: asks for a permit of one key. Idempotent by request id: asked again, it answers where the
 * request stands (its lease and fence, its place in line, or how it ended), never a second grant.
 *
 * args: 1 request id, 2 wait ms (-1: without limit), 3 the handle's constants (see common.ts).
 * Answers the fence alone (a whole number) when it grants the request now, its lease its ttl and its
 * revoke its maxHold as asked (the cheapest answer to make and to read); else `standing` (see
 * common.ts), `{'b'}` (busy, for a wait of 0) or `{'x', code, message}`. Like renew and release, it
 * may answer `{'a'}`: more deadlines were due than one call ends (`REAP`); it ended that many and did
 * nothing else: ask again.
 * A free lock costs TIME, HMGET, HSET; a request that waits for a lock's key another holds, HMGET, TIME,
 * HSET, ZADD.
 */
export default `
local function acquire(keys, args)
  -- The common case first, by itself: a lock's key Redis has, free, nobody in line, nothing due, and
  -- the new lease inside the keys' expiry and after the bound \`e\` (so that neither moves). The same
  -- grant as below, in TIME, HMGET, HSET and nothing else; anything else goes the general way.
  -- (The fields as \`load\` reads them, which takes them from here.)
  local g = redis.call('HMGET', keys[1], 'l', 'q', 'h', 'n', args[1], 'f', 'x', 'e', 't')
  local c = handleOf(args[3])
  local grace, ttl, maxHold, want = c[1], c[3], c[4], c[5]
  local at
  if not (g[1] or g[2] or g[3] or g[5]) and g[7] and want == '1' then
    at = time()
    local bound, hard, until_ = tonumber(g[8]), 0, at + ttl
    if maxHold > 0 then
      hard = at + maxHold
      if hard < until_ then until_ = hard end
    end
    if at < bound and until_ >= bound and until_ + grace <= tonumber(g[7]) then
      local f = math.max((tonumber(g[6]) or 0) + 1, at * 1024)
      redis.call('HSET', keys[1], 'h', string.format('H %d %d %d %d %d %s', f, ttl, hard, at, until_, args[1]), 'f', string.format('%d', f))
      return f
    end
  end
  -- The other common case: a lock's key another request holds (not this one), nothing due, the
  -- request new, waiting. It joins the line as below, in TIME, HSET, ZADD (its ticket read with the
  -- meta, its heartbeat deadline after the bound \`e\` and inside the keys' expiry, so neither moves).
  local head = g[3]
  if head and not (g[1] or g[5]) and want == '1' and args[2] ~= '0' and g[7] and string.sub(head, -#args[1] - 1) ~= ' ' .. args[1] then
    at = at or time()
    local waiting, wait = tonumber(g[2]) or 0, tonumber(args[2])
    local waitUntil, beat = -1, at + ttl
    if wait > 0 then
      waitUntil = at + wait
      if waitUntil < beat then beat = waitUntil end
    end
    if at < tonumber(g[8]) and beat >= tonumber(g[8]) and beat + grace <= tonumber(g[7]) and waiting < 10000 then
      local ticket = (tonumber(g[9]) or 0) + 1
      redis.call('HSET', keys[1], args[1], string.format('W %d %d %d %s', ttl, maxHold, waitUntil, c[6]),
        'q', string.format('%d', waiting + 1), 't', string.format('%d', ticket))
      redis.call('ZADD', keys[2], string.format('%d', ticket - LINE), 'q' .. args[1], string.format('%d', beat), 'w' .. args[1])
      -- First in line: the holder's lease ends before it is served (see waitingAnswer).
      local hint = -1
      if waiting == 0 then hint = tonumber(string.match(head, '^H %d+ %d+ %d+ %d+ (%d+)')) - at end
      return {'w', waitUntil >= 0 and waitUntil - at or -1, hint}
    end
  end
  begin(keys, args)
  local wait, chan = tonumber(args[2]), chanArg
  want = tonumber(want)
  now = at or time()
  local rec = settle(load(g))
  if again then
    save()
    return {'a'}
  end
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
    return {'x', 'limit', '10000 waiters on one key is the most'}
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

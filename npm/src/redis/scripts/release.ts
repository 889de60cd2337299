/**
 * release (and cancel): ends a request, whatever it is: a holder lets its permit go, a waiter leaves
 * the line, and the head of the line is granted at once, within this call. Ending an ended or unknown
 * request does nothing. args 2: why ('R' released, 'C' cancelled) and '1' to keep a tombstone (a copy
 * of the request's acquire may still be on its way: the client never had an answer to one) or '0' to
 * forget the request at once (every copy was answered: none can come late), as 'R0'; 1 and 3 as for
 * every entry point (see common.ts).
 * Answers what the request was, as one word (the cheapest answer to make and to read): `h` held,
 * `w` waiting, `eR` (`e` and why) ended, `u` unknown; or `{'a'}` (ask again: see acquire).
 */
export default `
local function release(keys, args)
  local why, keepTomb = string.sub(args[2], 1, 1), string.sub(args[2], 2) == '1'
  -- A holder lets go, nobody waits, no tombstone: without the clock. Nothing needs it: nobody is to be
  -- served, and a lease past its deadline that no call reaped yet is released as if just before (no
  -- other request was granted its permit meanwhile: grants reap first). A lock: HMGET, HDEL.
  -- (The fields as \`load\` reads them, which takes them from here.)
  local g = redis.call('HMGET', keys[1], 'l', 'q', 'h', 'n', args[1], 'f', 'x', 'e')
  local mine = not (g[1] or keepTomb) and g[3] and string.sub(g[3], -#args[1] - 1) == ' ' .. args[1]
  if mine and not g[2] then
    redis.call('HDEL', keys[1], 'h')
    return 'h'
  end
  -- A lock's holder lets go and a request waits, nothing due: the head of the line is granted and
  -- told, as serve and grant do, without the general path's bookkeeping (TIME, ZPOPMIN, HGET, ZREM,
  -- PUBLISH, HSET, HDEL). Its lease must end after the bound \`e\` and inside the keys' expiry (so that
  -- neither moves); else, or if the line and the count disagree, the head goes back and the general
  -- path runs.
  if mine and g[7] then
    local at = time()
    if at < tonumber(g[8]) then
      local head = redis.call('ZPOPMIN', keys[2])
      local member = head[1]
      local rid = member and string.sub(member, 1, 1) == 'q' and string.sub(member, 2)
      local rec = rid and redis.call('HGET', keys[1], rid)
      local ttl, maxHold, chan
      if rec then ttl, maxHold, chan = string.match(rec, '^W (%d+) (%d+) %-?%d+ (.*)$') end
      if ttl then
        local c = handleOf(args[3])
        local grace, pub = c[1], c[2]
        local ttlN, maxHoldN = tonumber(ttl), tonumber(maxHold)
        local hard, until_ = 0, at + ttlN
        if maxHoldN > 0 then
          hard = at + maxHoldN
          if hard < until_ then until_ = hard end
        end
        if until_ >= tonumber(g[8]) and until_ + grace <= tonumber(g[7]) then
          local f = math.max((tonumber(g[6]) or 0) + 1, at * 1024)
          local left = tonumber(g[2]) - 1
          redis.call('ZREM', keys[2], 'w' .. rid)
          redis.call(pub, chan, string.format('g %s %d %s %s', rid, f, ttl, maxHold))
          local slot = string.format('H %d %d %d %d %d %s', f, ttlN, hard, at, until_, rid)
          if left > 0 then
            redis.call('HSET', keys[1], 'h', slot, 'f', string.format('%d', f), 'q', string.format('%d', left))
            redis.call('HDEL', keys[1], rid)
          else
            redis.call('HSET', keys[1], 'h', slot, 'f', string.format('%d', f))
            redis.call('HDEL', keys[1], rid, 'q')
          end
          return 'h'
        end
      end
      if member then redis.call('ZADD', keys[2], head[2], member) end
    end
  end
  begin(keys, args)
  local rec = load(g)
  if rec and waiting == 0 and not keepTomb and string.sub(rec, 1, 1) == 'H' then
    -- A semaphore's holder (a lock's went above).
    held = held - 1
    set(id, false)
    redis.call('ZREM', Z, 'h' .. id, 'H' .. id)
    save()
    return 'h'
  end
  now = time()
  rec = settle(rec)
  if again then
    save()
    return {'a'}
  end
  local was, member = 'u', nil
  if rec then
    local kind = string.sub(rec, 1, 1)
    local ttl
    if kind == 'H' then
      held = held - 1
      ttl = tonumber(string.match(rec, '^H %d+ (%d+)'))
      if inSlot(id) then setSlot(false) else member = id end
      was = 'h'
    elseif kind == 'W' then
      waiting = waiting - 1
      ttl = tonumber(string.match(rec, '^W (%d+)'))
      redis.call('ZREM', Z, 'q' .. id, 'w' .. id)
      was = 'w'
    else
      was = 'e' .. string.sub(rec, 3)
    end
    if ttl then
      if keepTomb then
        tomb(id, why, ttl)
      elseif member or kind == 'W' then
        set(id, false)
      end
    end
  end
  -- A semaphore holder's deadline (and its index entry) leaves Z in the ZREM that takes the head's
  -- heartbeat out (one call).
  serve(member)
  save()
  return was
end
`

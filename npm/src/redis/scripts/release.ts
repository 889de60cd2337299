/**
 * release (and cancel): ends a request, whatever it is: a holder lets its permit go, a waiter leaves
 * the line, and the head of the line is granted at once, within this call. Ending an ended or unknown
 * request does nothing. args 2: why ('R' released, 'C' cancelled) and '1' to keep a tombstone (a copy
 * of the request's acquire may still be on its way: the client never had an answer to one) or '0' to
 * forget the request at once (every copy was answered: none can come late), as 'R0'; 1 and 3 as for
 * every entry point (see common.ts).
 * Answers what the request was, as one word (the cheapest answer to make and to read): `h` held,
 * `w` waiting, `eR` (`e` and why) ended, `u` unknown.
 */
export default `
local function release(keys, args)
  local why, keepTomb = string.sub(args[2], 1, 1), string.sub(args[2], 2) == '1'
  -- A holder lets go, nobody waits, no tombstone: without the clock. Nothing needs it: nobody is to be
  -- served, and a lease past its deadline that no call reaped yet is released as if just before (no
  -- other request was granted its permit meanwhile: grants reap first). A lock: HMGET, HDEL.
  -- (The fields as \`load\` reads them, which takes them from here.)
  local g = redis.call('HMGET', keys[1], 'l', 'q', 'h', 'n', args[1], 'f', 'x', 'e')
  if not (g[1] or g[2] or keepTomb) and g[3] and string.sub(g[3], -#args[1] - 1) == ' ' .. args[1] then
    redis.call('HDEL', keys[1], 'h')
    return 'h'
  end
  begin(keys, args)
  local rec = load(g)
  if rec and waiting == 0 and not keepTomb and string.sub(rec, 1, 1) == 'H' then
    -- A semaphore's holder (a lock's went above).
    held = held - 1
    set(id, false)
    redis.call('ZREM', Z, 'h' .. id)
    save()
    return 'h'
  end
  now = time()
  rec = settle(rec)
  local was, member = 'u', nil
  if rec then
    local kind = string.sub(rec, 1, 1)
    local ttl
    if kind == 'H' then
      held = held - 1
      ttl = tonumber(string.match(rec, '^H %d+ (%d+)'))
      if inSlot(id) then setSlot(false) else member = 'h' .. id end
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
  -- A semaphore holder's deadline leaves Z in the ZREM that takes the head's heartbeat out (one call).
  serve(member)
  save()
  return was
end
`

/**
 * release (and cancel): ends a request, whatever it is: a holder lets its permit go, a waiter leaves
 * the line, and the head of the line is granted at once, within this script. Ending an ended or
 * unknown request does nothing. ARGV 4: why ('R' released, 'C' cancelled); 5: '1' to keep a tombstone
 * (a copy of the request's acquire may still be on its way: the client never had an answer to one),
 * '0' to forget the request at once (every copy was answered: none can come late).
 * Answers what the request was: `{'h'}` held, `{'w'}` waiting, `{'e', why}` ended, `{'u'}` unknown.
 */
export default `
local why, keepTomb = ARGV[4], ARGV[5] == '1'
local rec = reaped(load(id))
local was = {'u'}
local function forget(member, ttl)
  redis.call('ZREM', T, member)
  if keepTomb then
    tomb(id, why, ttl)
  else
    redis.call('HDEL', M, id)
  end
end
if rec then
  local r = fields(rec)
  if r[1] == 'H' then
    held = held - 1
    set('n', held)
    forget('h' .. id, tonumber(r[3]))
    was = {'h'}
  elseif r[1] == 'W' then
    redis.call('ZREM', Q, id)
    waiting = waiting - 1
    set('q', waiting)
    forget('w' .. id, tonumber(r[2]))
    was = {'w'}
  else
    was = {'e', r[2]}
  end
end
serve()
save()
return was
`

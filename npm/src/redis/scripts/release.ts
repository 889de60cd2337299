/**
 * release (and cancel): ends a request, whatever it is: a holder lets its permit go, a waiter leaves
 * the line, and the head of the line is granted at once, within this script. Ending an ended or
 * unknown request does nothing. ARGV 4: why, kept in the tombstone ('R' released, 'C' cancelled).
 * Answers what the request was: `{'h'}` held, `{'w'}` waiting, `{'e', why}` ended, `{'u'}` unknown.
 */
export default `
local why = ARGV[4]
reap()
local rec = redis.call('HGET', R, id)
local was = {'u'}
if rec then
  local r = fields(rec)
  if r[1] == 'H' then
    redis.call('ZREM', H, id)
    tomb(id, why, tonumber(r[3]))
    was = {'h'}
  elseif r[1] == 'W' then
    redis.call('ZREM', Q, id)
    tomb(id, why, tonumber(r[2]))
    was = {'w'}
  else
    was = {'e', r[2]}
  end
end
serve()
keep()
return was
`

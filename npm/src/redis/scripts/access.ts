/**
 * access (read-only): the first command the other entry points run that the store's Redis user may not
 * run, or '' when it may run them all. The store asks it once when it opens, and refuses to open when
 * one is refused (`StorageError` naming it).
 *
 * Why at the open: a script's writes stay when a later command of the same call is refused (Lua in
 * Redis is atomic, not transactional), and the scripts keep their counts in a last write (`save`). A
 * refusal in the middle of a call (an ACL without `PUBLISH`: a release that served the line, after it
 * gave its units back and served the waiter) left records and counts that disagree, for good: units
 * counted claimed with no claim holding them (lost), or a claim holding units the count left free
 * (sold twice), a count of waiters with nobody in line. Ordering each script so that every refusable
 * command comes before its writes is not possible (any command, a write too, may be refused), so the
 * store asks whether its user may run every one, before it does anything.
 *
 * `redis.acl_check_cmd` judges the command, its keys (the key patterns of the user, `~…`) and its
 * channel (`&…`) without running it; it came with Redis 7: on Redis 6.2 nothing is checked (answers
 * ''). keys: a pool's hash and zset (never read: they route the call in a Cluster). args: 1 a lock's hash,
 * 2 its zset (every key holdfast writes has the form of one of the two), 3 PUBLISH or SPUBLISH, 4 a
 * channel of the store's wake-ups.
 */
export default `
local function access(keys, args)
  if not redis.acl_check_cmd then return '' end
  local pub, chan = args[3], args[4]
  for _, of in ipairs({keys, args}) do
    local m, z = of[1], of[2]
    local uses = {
      {'TIME'},
      {'HMGET', m, 'f'}, {'HGET', m, 'f'}, {'HSET', m, 'f', 'v'}, {'HDEL', m, 'f'}, {'HINCRBY', m, 'f', '1'},
      {'HLEN', m}, {'PERSIST', m}, {'PEXPIREAT', m, '1'},
      {'ZADD', z, '1', 'e'}, {'ZREM', z, 'e'}, {'ZRANGE', z, '0', '0'}, {'ZRANGEBYSCORE', z, '0', '1'},
      {'ZSCORE', z, 'e'}, {'ZMSCORE', z, 'e'}, {'ZRANK', z, 'e'}, {'ZPOPMIN', z}, {'PERSIST', z}, {'PEXPIREAT', z, '1'},
      {pub, chan, 'm'},
    }
    for _, use in ipairs(uses) do
      if not redis.acl_check_cmd(unpack(use)) then return use[1] end
    end
  end
  return ''
end
`

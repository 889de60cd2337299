/**
 * inspect (read-only): a key's live holders (fence, held ms) and how many wait, judged at the server's
 * time as the reap step would (nothing past its deadline counts). Answers `{waiting, f1, ms1, f2, ms2, …}`.
 * keys as the others; no args.
 *
 * Its cost is bounded by the holders and the waiters (10,000 at most each), never by the tombstones:
 * they share the deadlines' range of the zset with the holders' and waiters' deadlines, and an
 * inspect that read every live member of that range (as one did) read 100,000 of them for a key that
 * remembered 100,000 requests, one Redis call of tens of ms blocking every other client. So the
 * waiters are read from the line (scored below 0) with their deadlines (`ZMSCORE` of their `w`
 * members), and a semaphore's holders from their index (`H` + id scored 2^52 + the deadline: see
 * `../scripts.ts`), each entry checked against its holder's `h` deadline. A holder granted by a script
 * of before the index has no entry: when the entries that match a holder are fewer than the meta's
 * count `n`, the holders are read as before, from the deadlines (compatibility, for at most a lease).
 */
export default `
local function inspect(keys, args)
  local INDEX, FAR = '4503599627370496', '(9000000000000000'
  local t = redis.call('TIME')
  local at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local out = {0}
  local function holder(rec)
    local f, since = string.match(rec or '', '^H (%d+) %d+ %d+ (%d+)')
    if f then
      out[#out + 1] = tonumber(f)
      out[#out + 1] = at - tonumber(since)
    end
  end
  -- The scores of \`members\` with their first letter made \`kind\` (nil: none), 1,000 a call (Lua's
  -- unpack takes ~8,000 at most).
  local function scores(kind, members)
    local got = {}
    for i = 1, #members, 1000 do
      local batch = {}
      for j = i, math.min(i + 999, #members) do batch[#batch + 1] = kind .. string.sub(members[j], 2) end
      local s = redis.call('ZMSCORE', keys[2], unpack(batch))
      for j = 1, #batch do got[i + j - 1] = s[j] and tonumber(s[j]) end
    end
    return got
  end
  local g = redis.call('HMGET', keys[1], 'h', 'n')
  -- A lock's holder, in the meta's slot with its deadline.
  local h = g[1]
  if h and tonumber(string.match(h, '^H %d+ %d+ %d+ %d+ (%d+)')) > at then holder(h) end
  -- The waiters: the line, each while its wait (or its heartbeat's ttl) has not run out.
  local line = redis.call('ZRANGEBYSCORE', keys[2], '-inf', '(0')
  local waits = scores('w', line)
  for i = 1, #line do
    if waits[i] and waits[i] > at then out[1] = out[1] + 1 end
  end
  -- A semaphore's holders, by their index, in the order of their deadlines.
  local n = tonumber(g[2]) or 0
  if n == 0 then return out end
  local index = redis.call('ZRANGEBYSCORE', keys[2], INDEX, FAR, 'WITHSCORES')
  local entries = {}
  for i = 1, #index, 2 do entries[#entries + 1] = index[i] end
  local leases, live, matched = scores('h', entries), {}, 0
  for i = 1, #entries do
    local until_ = tonumber(index[2 * i]) - tonumber(INDEX)
    if leases[i] == until_ then
      matched = matched + 1
      if until_ > at then live[#live + 1] = string.sub(entries[i], 2) end
    end
  end
  if matched < n then
    -- A holder without an entry (granted by a script of before the index): read the deadlines.
    live = {}
    local all = redis.call('ZRANGEBYSCORE', keys[2], '(' .. at, '(' .. INDEX)
    for i = 1, #all do
      if string.sub(all[i], 1, 1) == 'h' then live[#live + 1] = string.sub(all[i], 2) end
    end
  end
  for i = 1, #live, 1000 do
    local fields = {}
    for j = i, math.min(i + 999, #live) do fields[#fields + 1] = live[j] end
    local recs = redis.call('HMGET', keys[1], unpack(fields))
    for j = 1, #recs do holder(recs[j]) end
  end
  return out
end
`

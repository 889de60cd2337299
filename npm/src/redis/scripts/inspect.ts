/**
 * inspect (read-only): a key's live holders (fence, held ms) and how many wait, judged at the server's
 * time as the reap step would (nothing past its deadline counts). Answers `{waiting, f1, ms1, f2, ms2, …}`.
 * keys as the others; no args.
 */
export default `
local function inspect(keys, args)
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
  -- A lock's holder, in the meta's slot with its deadline.
  local h = redis.call('HGET', keys[1], 'h')
  if h and tonumber(string.match(h, '^H %d+ %d+ %d+ %d+ (%d+)')) > at then holder(h) end
  local live = redis.call('ZRANGEBYSCORE', keys[2], '(' .. at, '+inf')
  for i = 1, #live do
    local kind = string.sub(live[i], 1, 1)
    if kind == 'w' then
      out[1] = out[1] + 1
    elseif kind == 'h' then
      holder(redis.call('HGET', keys[1], string.sub(live[i], 2)))
    end
  end
  return out
end
`

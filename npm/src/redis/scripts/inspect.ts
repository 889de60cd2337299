/**
 * inspect (read-only): a key's live holders (fence, held ms) and how many wait, judged at the server's
 * time as the reap step would (nothing past its deadline counts). Answers `{waiting, f1, ms1, f2, ms2, …}`.
 * KEYS as the others; no ARGV.
 */
export default `
local Q, H, D, R = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local out = {0}
local live = redis.call('ZRANGEBYSCORE', H, '(' .. now, '+inf')
for i = 1, #live do
  local rec = redis.call('HGET', R, live[i])
  if rec then
    local f, since = string.match(rec, '^H (%d+) %d+ %d+ (%d+)')
    if f then
      out[#out + 1] = tonumber(f)
      out[#out + 1] = now - tonumber(since)
    end
  end
end
local waiting = redis.call('ZRANGE', Q, 0, -1)
for i = 1, #waiting do
  local until_ = redis.call('ZSCORE', D, waiting[i])
  if until_ and tonumber(until_) > now then out[1] = out[1] + 1 end
end
return out
`

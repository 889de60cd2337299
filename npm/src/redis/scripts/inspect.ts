/**
 * inspect (read-only): a key's live holders (fence, held ms) and how many wait, judged at the server's
 * time as the reap step would (nothing past its deadline counts). Answers `{waiting, f1, ms1, f2, ms2, …}`.
 * KEYS as the others; no ARGV.
 */
export default `
local M, T = KEYS[1], KEYS[3]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local out = {0}
local live = redis.call('ZRANGEBYSCORE', T, '(' .. now, '+inf')
for i = 1, #live do
  local kind = string.sub(live[i], 1, 1)
  if kind == 'w' then
    out[1] = out[1] + 1
  elseif kind == 'h' then
    local rec = redis.call('HGET', M, string.sub(live[i], 2))
    local f, since = string.match(rec or '', '^H (%d+) %d+ %d+ (%d+)')
    if f then
      out[#out + 1] = tonumber(f)
      out[#out + 1] = now - tonumber(since)
    end
  end
end
return out
`

/**
 * The Lua every writing script starts with (see `../scripts.ts` for the data layout and invariants):
 * the server's clock (`TIME`), the reap step, fences, grants from the head of the line, and the expiry
 * of every key at its largest deadline plus the grace. Scripts append their own body to it.
 *
 * KEYS: 1 meta (hash), 2 line (zset), 3 holders (zset), 4 deadlines (zset), 5 records (hash).
 * ARGV: 1 request id, 2 grace ms, 3 publish command (PUBLISH, or SPUBLISH in Cluster); then the script's.
 */
export default `
local M, Q, H, D, R = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, grace, pub = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
-- Whether a deadline was added or moved (a grant, a renewal, a waiter, a tombstone): then \`settle\`
-- moves every key's expiry. A script that only took things away leaves it as it was (it covers more).
local dirty = false

-- Whole numbers as text without an exponent (tostring would give 1.7e+15 for a fence).
local function int(x) return string.format('%.0f', x) end

local function fields(text)
  local out = {}
  for word in string.gmatch(text, '%S+') do out[#out + 1] = word end
  return out
end

-- An ended request: kept for its ttl, so that a late copy of its acquire is answered, not granted.
local function tomb(rid, reason, ttl)
  redis.call('HSET', R, rid, 'E ' .. reason)
  redis.call('ZADD', D, now + ttl, rid)
  dirty = true
end

-- Holders past their lease (ttl from the last renewal, or maxHold) are lost; waiters past their wait
-- or their last heartbeat's ttl leave the line; tombstones past their time are forgotten. Answers how
-- many permits it freed (then the line must be served).
local function reap()
  local due = redis.call('ZRANGEBYSCORE', H, '-inf', now)
  local freed = #due
  for i = 1, #due do
    local rid = due[i]
    redis.call('ZREM', H, rid)
    local rec = redis.call('HGET', R, rid)
    if rec then tomb(rid, 'L', tonumber(fields(rec)[3])) end
  end
  due = redis.call('ZRANGEBYSCORE', D, '-inf', now)
  for i = 1, #due do
    local rid = due[i]
    local rec = redis.call('HGET', R, rid)
    local r = rec and fields(rec)
    if r and r[1] == 'W' then
      redis.call('ZREM', Q, rid)
      local waitUntil = tonumber(r[4])
      tomb(rid, (waitUntil >= 0 and waitUntil <= now) and 'T' or 'X', tonumber(r[2]))
    else
      redis.call('ZREM', D, rid)
      if rec then redis.call('HDEL', R, rid) end
    end
  end
  return freed
end

-- Larger than every fence this key gave, and than every fence it could have given before a rollback
-- of recent writes (a restart, a failover) or the expiry of its meta, as long as the server's clock
-- has not gone back by more than the time since: the milliseconds of TIME, 1024 numbers each.
local function nextFence()
  local last = tonumber(redis.call('HGET', M, 'f') or '0')
  local f = math.max(last + 1, now * 1024)
  redis.call('HSET', M, 'f', int(f))
  return f
end

-- Makes a request the holder of a permit: its record, its lease deadline (its ttl, never past its
-- maxHold). Answers fence, lease ms (the ttl: the holder's own maxHold timer ends it sooner), revoke ms.
local function grant(rid, ttl, maxHold, chan)
  local f = nextFence()
  local hard = 0
  local until_ = now + ttl
  if maxHold > 0 then
    hard = now + maxHold
    until_ = math.min(until_, hard)
  end
  redis.call('HSET', R, rid, 'H ' .. int(f) .. ' ' .. ttl .. ' ' .. int(hard) .. ' ' .. int(now) .. ' ' .. chan)
  redis.call('ZADD', H, until_, rid)
  dirty = true
  return f, ttl, maxHold
end

-- While permits are free, the head of the line is granted, here, and told on its process's channel.
local function serve()
  local limit = tonumber(redis.call('HGET', M, 'l') or '1')
  local held = redis.call('ZCARD', H)
  while held < limit do
    local head = redis.call('ZRANGE', Q, 0, 0)
    if #head == 0 then break end
    local rid = head[1]
    redis.call('ZREM', Q, rid)
    local rec = redis.call('HGET', R, rid)
    if rec then
      local r = fields(rec)
      redis.call('ZREM', D, rid)
      local f, lease, revoke = grant(rid, tonumber(r[2]), tonumber(r[3]), r[5])
      redis.call(pub, r[5], 'g ' .. rid .. ' ' .. int(f) .. ' ' .. lease .. ' ' .. revoke)
      held = held + 1
    end
  end
end

-- Every key expires at the largest deadline it holds, plus the grace: idle keys cost nothing.
local function settle()
  if not dirty then return end
  local last = now
  local h = redis.call('ZRANGE', H, -1, -1, 'WITHSCORES')
  if #h > 0 then last = math.max(last, tonumber(h[2])) end
  local d = redis.call('ZRANGE', D, -1, -1, 'WITHSCORES')
  if #d > 0 then last = math.max(last, tonumber(d[2])) end
  local at = int(last + grace)
  redis.call('PEXPIREAT', M, at)
  redis.call('PEXPIREAT', Q, at)
  redis.call('PEXPIREAT', H, at)
  redis.call('PEXPIREAT', D, at)
  redis.call('PEXPIREAT', R, at)
end

-- Where a request stands: granted (fence, lease ms, revoke ms), waiting (wait ms left or -1, and ms to
-- the earliest holder's deadline for a waiter that a leaving holder would serve, else -1), ended (why).
local function standing(rid, rec)
  local r = fields(rec)
  if r[1] == 'H' then
    local hard = tonumber(r[4])
    local until_ = tonumber(redis.call('ZSCORE', H, rid))
    -- A lease cut short by its maxHold answers its ttl: the holder's maxHold timer ends it, not its renewal.
    local lease = (hard > 0 and until_ >= hard) and tonumber(r[3]) or until_ - now
    return {'g', tonumber(r[2]), lease, hard > 0 and hard - now or 0}
  elseif r[1] == 'W' then
    local waitUntil = tonumber(r[4])
    local hint = -1
    local rank = redis.call('ZRANK', Q, rid)
    if rank and rank < tonumber(redis.call('HGET', M, 'l') or '1') then
      local first = redis.call('ZRANGE', H, 0, 0, 'WITHSCORES')
      if #first > 0 then hint = tonumber(first[2]) - now end
    end
    return {'w', waitUntil >= 0 and waitUntil - now or -1, hint}
  end
  return {'e', r[2]}
end
`

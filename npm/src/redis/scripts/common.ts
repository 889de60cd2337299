/**
 * The Lua every writing script starts with (see `../scripts.ts` for the data layout and invariants):
 * the server's clock (`TIME`), the reap step, fences, grants from the head of the line, and the expiry
 * of every key past its largest deadline. Scripts append their own body to it. Every `redis.call`
 * costs (about half a microsecond of the server's time, more than most commands themselves), so the
 * common path reads the meta and the request's record in one `HMGET` and writes them in one `HSET`.
 *
 * KEYS: 1 meta and records (hash), 2 line (zset), 3 deadlines (zset).
 * ARGV: 1 request id, 2 grace ms, 3 publish command (PUBLISH); then the script's.
 */
export default `
local M, Q, T = KEYS[1], KEYS[2], KEYS[3]
local id, grace, pub = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
-- The meta, read once by \`load\`: limit, last fence, holders, waiters, the expiry mark, and \`due\`: no
-- deadline of the key is earlier (a bound kept low as deadlines are added, raised by the reap step).
local limit, last, held, waiting, mark, due = 1, 0, 0, 0, 0, 0
-- What the script changes in the meta (and records), written by \`save\` in one HSET; and which keys'
-- expiry it must set then (all of them when the mark moved).
local writes, expireAll, expireKeys = {}, false, {}

-- Whole numbers as text without an exponent (tostring would give 1.7e+15 for a fence).
local function int(x) return string.format('%.0f', x) end

local function fields(text)
  local out = {}
  for word in string.gmatch(text, '%S+') do out[#out + 1] = word end
  return out
end

local function set(field, value)
  writes[#writes + 1] = field
  writes[#writes + 1] = value
end

local function save()
  if #writes > 0 then redis.call('HSET', M, unpack(writes)) end
  if expireAll then
    redis.call('PEXPIREAT', M, int(mark))
    redis.call('PEXPIREAT', Q, int(mark))
    redis.call('PEXPIREAT', T, int(mark))
  else
    for key in pairs(expireKeys) do redis.call('PEXPIREAT', key, int(mark)) end
  end
  writes, expireAll, expireKeys = {}, false, {}
end

-- Reads the meta and the records of \`...\` (request ids); answers the records.
local function load(...)
  local got = redis.call('HMGET', M, 'l', 'f', 'n', 'q', 'x', 'e', ...)
  limit = tonumber(got[1] or '1')
  last = tonumber(got[2] or '0')
  held = tonumber(got[3] or '0')
  waiting = tonumber(got[4] or '0')
  mark = tonumber(got[5] or '0')
  due = tonumber(got[6] or '0')
  return unpack(got, 7, 6 + select('#', ...))
end

-- A deadline \`at\` was added to a key (T or Q): the keys must outlive it by the grace. They expire at
-- the mark, moved half a grace past what is needed each time it is passed, so that most scripts only
-- set the expiry of a key that may have just been made.
local function covers(at, key)
  if at < due then
    due = at
    set('e', int(due))
  end
  if at + grace > mark then
    mark = at + grace + math.floor(grace / 2)
    set('x', int(mark))
    expireAll = true
  elseif key then
    expireKeys[key] = true
  end
end

-- An ended request: kept for its ttl, so that a late copy of its acquire is answered, not granted.
local function tomb(rid, reason, ttl)
  set(rid, 'E ' .. reason)
  redis.call('ZADD', T, now + ttl, 'e' .. rid)
  covers(now + ttl, T)
end

-- Holders past their lease (ttl from the last renewal, or maxHold) are lost; waiters past their wait
-- or their last heartbeat's ttl leave the line; tombstones past their time are forgotten. Deadlines
-- are members of T: 'h' holder, 'w' waiter, 'e' tombstone, then the request id. Answers whether it
-- ended anything; its writes are then saved, and the line served if a permit was freed.
local function reap()
  if now < due then return false end
  local heldBefore = held
  local any = false
  local list = redis.call('ZRANGEBYSCORE', T, '-inf', now, 'LIMIT', 0, 1000)
  while #list > 0 do
    any = true
    redis.call('ZREM', T, unpack(list))
    for i = 1, #list do
      local kind, rid = string.sub(list[i], 1, 1), string.sub(list[i], 2)
      if kind == 'e' then
        redis.call('HDEL', M, rid)
      else
        local rec = redis.call('HGET', M, rid)
        if rec then
          local r = fields(rec)
          if kind == 'h' then
            held = held - 1
            set('n', held)
            tomb(rid, 'L', tonumber(r[3]))
          else
            redis.call('ZREM', Q, rid)
            waiting = waiting - 1
            set('q', waiting)
            local waitUntil = tonumber(r[4])
            tomb(rid, (waitUntil >= 0 and waitUntil <= now) and 'T' or 'X', tonumber(r[2]))
          end
        end
      end
    end
    list = redis.call('ZRANGEBYSCORE', T, '-inf', now, 'LIMIT', 0, 1000)
  end
  -- The bound, raised to the earliest deadline left (an hour on when none is: covers lowers it).
  local first = redis.call('ZRANGE', T, 0, 0, 'WITHSCORES')
  due = #first > 0 and tonumber(first[2]) or now + 3600000
  set('e', int(due))
  return any, held < heldBefore
end

-- Larger than every fence this key gave, and than every fence it could have given before a rollback
-- of recent writes (a restart, a failover) or the expiry of its meta, as long as the server's clock
-- has not gone back by more than the time since: the milliseconds of TIME, 1024 numbers each.
local function nextFence()
  last = math.max(last + 1, now * 1024)
  set('f', int(last))
  return last
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
  set(rid, 'H ' .. int(f) .. ' ' .. ttl .. ' ' .. int(hard) .. ' ' .. int(now) .. ' ' .. chan)
  held = held + 1
  set('n', held)
  redis.call('ZADD', T, until_, 'h' .. rid)
  -- The deadlines' key may have just been made (nobody else held or waited): it needs its expiry.
  covers(until_, (held == 1 and waiting == 0) and T or nil)
  return f, ttl, maxHold
end

-- While permits are free, the head of the line is granted, here, and told on its process's channel.
local function serve()
  while held < limit and waiting > 0 do
    local head = redis.call('ZPOPMIN', Q)
    if #head == 0 then break end
    local rid = head[1]
    waiting = waiting - 1
    set('q', waiting)
    local rec = redis.call('HGET', M, rid)
    if rec then
      local r = fields(rec)
      redis.call('ZREM', T, 'w' .. rid)
      local f, lease, revoke = grant(rid, tonumber(r[2]), tonumber(r[3]), r[5])
      redis.call(pub, r[5], 'g ' .. rid .. ' ' .. int(f) .. ' ' .. lease .. ' ' .. revoke)
    end
  end
end

-- The reap step of every script, with what follows it when it ended something: the line served if a
-- permit was freed, the writes saved, and the request's record read again. Answers the record.
local function reaped(rec)
  local any, freed = reap()
  if not any then return rec end
  if freed then serve() end
  save()
  return redis.call('HGET', M, id)
end

-- The earliest deadline of a holder, or nil.
local function firstHolder()
  local at = 0
  while true do
    local page = redis.call('ZRANGE', T, at, at + 99, 'WITHSCORES')
    if #page == 0 then return nil end
    for i = 1, #page, 2 do
      if string.sub(page[i], 1, 1) == 'h' then return tonumber(page[i + 1]) end
    end
    at = at + 100
  end
end

-- Where a request stands: granted (fence, lease ms, revoke ms), waiting (wait ms left or -1, and ms to
-- the earliest holder's deadline for a waiter that a leaving holder would serve, else -1), ended (why).
local function standing(rid, rec)
  local r = fields(rec)
  if r[1] == 'H' then
    local hard = tonumber(r[4])
    local until_ = tonumber(redis.call('ZSCORE', T, 'h' .. rid))
    -- A lease cut short by its maxHold answers its ttl: the holder's maxHold timer ends it, not its renewal.
    local lease = (hard > 0 and until_ >= hard) and tonumber(r[3]) or until_ - now
    return {'g', tonumber(r[2]), lease, hard > 0 and hard - now or 0}
  elseif r[1] == 'W' then
    local waitUntil = tonumber(r[4])
    local hint = -1
    local rank = redis.call('ZRANK', Q, rid)
    if rank and rank < limit then
      local first = firstHolder()
      if first then hint = first - now end
    end
    return {'w', waitUntil >= 0 and waitUntil - now or -1, hint}
  end
  return {'e', r[2]}
end
`

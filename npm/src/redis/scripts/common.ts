/**
 * The Lua every entry point shares (see `../scripts.ts` for the data layout and invariants): the
 * server's clock, the meta read in one call and written in one, fences, grants from the head of the
 * line, the reap step, and the expiry of both keys past the largest deadline.
 *
 * Loaded once as a Redis Function library, these helpers are made once, not at every call; every entry
 * point starts with `begin`, which resets the state below, so nothing of one call is seen by the next.
 * What a call costs is mostly its `redis.call`s (about a microsecond of the server's time each, more
 * than most commands themselves) and its conversions between numbers and text (`string.format`,
 * `tonumber`: a few tenths of a microsecond each): the common paths read the meta and the request's
 * record in one `HMGET`, write them in one `HSET` (and one `HDEL`), and touch the zset only for a line,
 * a semaphore's holders and tombstones. The holder of a key whose limit is 1 (every lock's) is a field
 * of the meta, its deadline inside it: a free lock is taken with TIME, HMGET, HSET and let go with
 * HMGET, HDEL.
 *
 * keys: 1 meta and records (hash), 2 line and deadlines (zset).
 *
 * The only place the Lua reads the time is `time()` (`clock`, below): the model test swaps it for a
 * clock of its own (`scriptsFor`'s `clockKey`), and nothing else differs.
 * args: 1 request id, 2 the entry point's own, 3 what a handle sends with every call, as one text
 * (`constants` in ../scripts.ts: one argument rather than six, each of which costs the client and the
 * server): 'grace publish ttl maxHold limit channel' — the grace ms, the publish command (PUBLISH or
 * SPUBLISH), the lease ttl ms, maxHold ms (0: none), the limit (1 for a lock), and the channel that
 * tells this request's process of a grant.
 */
/** The server's clock (ms): every deadline is judged by it, never by a client's. */
export const clock = `
local function time()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

export default `
-- The state of one call (set by begin and load).
local M, Z, id, grace, pub, now
-- The handle's: ttl, maxHold, limit and channel of the request, as args[3] gives them.
local ttlArg, maxHoldArg, limitArg, chanArg
local limit, last, held, waiting, mark, due
local held0, waiting0, last0
-- The holder of a key whose limit is 1 (field 'h' of the meta: its record, its deadline, its id), or false.
local slot
-- Fields of M to write (a value) or delete (false) at save; whether the keys' expiry moved.
local staged, dirty, expire
-- Whether the reap step left deadlines due (more than REAP were): the call answers {'a'}, ask again.
local again
-- The most deadlines one call's reap step ends (holders, waiters, tombstones; about 5 µs each): a few
-- ms of Redis a call, and a few hundred fields written at its save (Lua's unpack takes ~8,000 at most).
local REAP = 250

-- A waiter's place in line is scored ticket - LINE: below every deadline, which are server ms (>= 0).
local LINE = 4503599627370496
-- A semaphore holder's lease deadline is also indexed: 'H' + id scored INDEX + the deadline, after
-- every deadline and before 'z', so that the earliest holder is the first of that range (O(log n),
-- however many waiters' and tombstones' deadlines come first). An entry whose holder has no such
-- deadline (left by a script of before the index, which removed its 'h' only) goes when it comes first.
local INDEX = 4503599627370496
-- The score of 'z', the member that keeps Z in being while M is (so that a member added to it never
-- makes a key without an expiry): after every deadline.
local FAR = 9000000000000000
local FAR_TEXT = '9000000000000000'

-- Whole numbers as text: %d (a 64-bit integer), several times quicker than %.0f or Redis's own
-- conversion of a Lua number given to redis.call, and exact where tostring (14 digits) is not.
local function int(x)
  return string.format('%d', x)
end

-- What a handle sends with every call (args[3]), parsed: {grace, publish, ttl, maxHold, limit (text),
-- channel}, all numbers but the texts. A handle sends the same text with each call, and a string.match
-- of it costs more than most commands, so a Function library keeps the last few hundred parsed (the
-- library's helpers live as long as it; run as a script, this is made at each call and keeps nothing).
-- The channel is the rest of the text: a sharded channel names the key, which may hold any character.
local parsed, nparsed = {}, 0
local function handleOf(text)
  local c = parsed[text]
  if c then return c end
  local g, p, t, m, l, ch = string.match(text, '^(%d+) (%S+) (%d+) (%d+) (%d+) (.+)$')
  c = {tonumber(g), p, tonumber(t), tonumber(m), l, ch}
  if nparsed >= 256 then parsed, nparsed = {}, 0 end
  parsed[text], nparsed = c, nparsed + 1
  return c
end

local function begin(keys, args)
  M, Z = keys[1], keys[2]
  id = args[1]
  local c = handleOf(args[3])
  grace, pub, ttlArg, maxHoldArg, limitArg, chanArg = c[1], c[2], c[3], c[4], c[5], c[6]
  staged, dirty, expire, again = {}, false, false, false
end

${clock}
-- Whether the holder in the slot is request \`rid\`: the slot ends with its id.
local function inSlot(rid)
  return slot and string.sub(slot, -#rid - 1) == ' ' .. rid
end

-- Reads the meta and the record of the request (false when none; the slot when the request holds it).
-- Fields at their default are absent: 'l' for a limit of 1, 'q' when nobody waits, 'h' when free.
-- \`last\`: the last fence (text until a grant). \`due\`: no deadline of the key is earlier (a bound
-- lowered as deadlines are added, raised by the reap step). \`mark\`: when the keys expire; 0 for a
-- key Redis does not have (no meta, no zset). \`g\`: these fields read already, in this order (by an
-- entry point's own first look), or nil.
local function load(g)
  g = g or redis.call('HMGET', M, 'l', 'q', 'h', 'n', id, 'f', 'x', 'e')
  limit = tonumber(g[1]) or 1
  waiting = tonumber(g[2]) or 0
  slot = g[3]
  if limit == 1 then held = slot and 1 or 0 else held = tonumber(g[4]) or 0 end
  last, mark, due = g[6], tonumber(g[7]) or 0, tonumber(g[8]) or FAR
  held0, waiting0, last0 = held, waiting, last
  if inSlot(id) then return slot end
  return g[5]
end

local function set(field, value)
  staged[field] = value
  dirty = true
end

local function setSlot(value)
  slot = value
  set('h', value)
end

-- A record as this call left it: staged, else as Redis has it (false: none). Not for the slot.
local function record(rid)
  local r = staged[rid]
  if r == nil then return redis.call('HGET', M, rid) end
  return r
end

-- Writes what the call changed: the counters, the staged fields (one HSET, one HDEL), the expiry.
local function save()
  if held ~= held0 and limit > 1 then set('n', int(held)) end
  if waiting ~= waiting0 then set('q', waiting > 0 and int(waiting)) end
  if last ~= last0 then set('f', int(last)) end
  held0, waiting0, last0 = held, waiting, last
  if dirty then
    local hset, hdel = {M}, {M}
    for field, value in pairs(staged) do
      if value then
        hset[#hset + 1] = field
        hset[#hset + 1] = value
      else
        hdel[#hdel + 1] = field
      end
    end
    if #hset > 1 then redis.call('HSET', unpack(hset)) end
    if #hdel > 1 then redis.call('HDEL', unpack(hdel)) end
    staged, dirty = {}, false
  end
  if expire then
    local at = int(mark)
    redis.call('PEXPIREAT', M, at)
    redis.call('PEXPIREAT', Z, at)
    expire = false
  end
end

-- A deadline \`at\` was added: the keys must outlive it by the grace. They expire at the mark, moved
-- half a grace past what is needed each time it is passed, so that most calls leave the expiry alone.
local function covers(at)
  if at < due then
    due = at
    set('e', int(at))
  end
  if at + grace > mark then
    mark = at + grace + math.floor(grace / 2)
    set('x', int(mark))
    expire = true
  end
end

-- An ended request: kept for its ttl, so that a late copy of its acquire is answered, not granted.
local function tomb(rid, why, ttl)
  set(rid, 'E ' .. why)
  redis.call('ZADD', Z, int(now + ttl), 'e' .. rid)
  covers(now + ttl)
end

-- Makes a request the holder of a permit, with its lease deadline (its ttl, never past its maxHold):
-- in the slot for a key whose limit is 1 ('H fence ttl hardDeadline since until id'), else a record by
-- id ('H fence ttl hardDeadline since') and its deadline in Z. The fence is larger than every fence
-- this key gave, and than every fence it could have given before a rollback of recent writes (a
-- restart, a failover) or the expiry of its meta, as long as the server's clock has not gone back by
-- more than the time since: the ms of TIME, 1024 numbers each.
local function grant(rid, ttl, maxHold)
  last = math.max((tonumber(last) or 0) + 1, now * 1024)
  local hard, until_ = 0, now + ttl
  if maxHold > 0 then
    hard = now + maxHold
    if hard < until_ then until_ = hard end
  end
  if limit == 1 then
    setSlot(string.format('H %d %d %d %d %d %s', last, ttl, hard, now, until_, rid))
    if mark == 0 then redis.call('ZADD', Z, FAR_TEXT, 'z') end
  else
    set(rid, string.format('H %d %d %d %d', last, ttl, hard, now))
    if mark == 0 then
      redis.call('ZADD', Z, int(until_), 'h' .. rid, int(INDEX + until_), 'H' .. rid, FAR_TEXT, 'z')
    else
      redis.call('ZADD', Z, int(until_), 'h' .. rid, int(INDEX + until_), 'H' .. rid)
    end
  end
  held = held + 1
  covers(until_)
  return last
end

-- While permits are free, the head of the line is granted, here, and told on its process's channel.
-- \`extra\`: a semaphore holder's id whose deadline (and its index entry) to take out of Z with the
-- head's heartbeat deadline (one ZREM for all).
local function serve(extra)
  while held < limit and waiting > 0 do
    local head = redis.call('ZPOPMIN', Z)
    local member = head[1]
    if not member or string.sub(member, 1, 1) ~= 'q' then
      -- The count and the line disagree (never, unless Redis lost part of a write): trust the line.
      if member then redis.call('ZADD', Z, head[2], member) end
      waiting = 0
      break
    end
    local rid = string.sub(member, 2)
    waiting = waiting - 1
    local rec = record(rid)
    if extra then
      redis.call('ZREM', Z, 'w' .. rid, 'h' .. extra, 'H' .. extra)
      extra = nil
    else
      redis.call('ZREM', Z, 'w' .. rid)
    end
    if rec and string.sub(rec, 1, 1) == 'W' then
      local ttl, maxHold, _, chan = string.match(rec, '^W (%d+) (%d+) (%-?%d+) (.*)$')
      -- A lock's holder lives in the slot: the waiter's record goes.
      if limit == 1 then set(rid, false) end
      local f = grant(rid, tonumber(ttl), tonumber(maxHold))
      redis.call(pub, chan, string.format('g %s %d %s %s', rid, f, ttl, maxHold))
    end
  end
  if extra then redis.call('ZREM', Z, 'h' .. extra, 'H' .. extra) end
end

-- The slot holder's lease deadline.
local function slotUntil()
  return tonumber(string.match(slot, '^H %d+ %d+ %d+ %d+ (%d+)'))
end

-- Holders past their lease (ttl from the last renewal, or maxHold) are lost; waiters past their wait
-- or their last heartbeat's ttl leave the line; tombstones past their time are forgotten. Deadlines
-- are members of Z: 'h' holder (of a semaphore), 'w' waiter, 'e' tombstone, then the request id; a
-- lock's holder has its own in the slot. At most REAP of Z's, earliest first: when more are due, the
-- rest wait for the next call, \`again\` is set, and the bound \`e\` stays at the earliest left (so
-- that every call that decides anything, fast paths included, reaps first).
local function reap()
  if slot and slotUntil() <= now then
    local ttl, rid = string.match(slot, '^H %d+ (%d+) %d+ %d+ %d+ (.*)$')
    held = held - 1
    setSlot(false)
    tomb(rid, 'L', tonumber(ttl))
  end
  local upto = int(now)
  local list = redis.call('ZRANGEBYSCORE', Z, 0, upto, 'LIMIT', 0, REAP + 1)
  again = #list > REAP
  if #list > 0 then
    local gone = {}
    for i = 1, math.min(#list, REAP) do
      local member = list[i]
      local kind, rid = string.sub(member, 1, 1), string.sub(member, 2)
      gone[#gone + 1] = member
      if kind == 'e' then
        set(rid, false)
      else
        if kind == 'h' then gone[#gone + 1] = 'H' .. rid end
        local rec = record(rid)
        local is = rec and string.sub(rec, 1, 1)
        if kind == 'h' and is == 'H' then
          held = held - 1
          tomb(rid, 'L', tonumber(string.match(rec, '^H %d+ (%d+)')))
        elseif kind == 'w' and is == 'W' then
          local ttl, waitUntil = string.match(rec, '^W (%d+) %d+ (%-?%d+)')
          waitUntil = tonumber(waitUntil)
          waiting = waiting - 1
          gone[#gone + 1] = 'q' .. rid
          tomb(rid, (waitUntil >= 0 and waitUntil <= now) and 'T' or 'X', tonumber(ttl))
        end
      end
    end
    redis.call('ZREM', Z, unpack(gone))
  end
  -- The bound, raised to the earliest deadline left ('z' when none: \`covers\` lowers it).
  local first = redis.call('ZRANGEBYSCORE', Z, 0, '(' .. int(INDEX), 'WITHSCORES', 'LIMIT', 0, 1)
  due = tonumber(first[2]) or FAR
  if slot then due = math.min(due, slotUntil()) end
  set('e', int(due))
end

-- The record of the request as this call left it (\`rec\`: as it was loaded).
local function current(rec)
  if inSlot(id) then return slot end
  local r = staged[id]
  if r == nil then return rec end
  return r
end

-- The reap step of a call that read the clock: when a deadline may be due, ends what is past it and
-- serves the line (serve does nothing, without a command, unless a permit is free while someone
-- waits). Answers the request's record as it is now. When more was due than one call ends
-- (\`again\`), nobody is served (a waiter past its wait may still be in line): the caller saves and
-- answers {'a'}, and its store asks again; the call that ends the rest serves a permit this one freed.
local function settle(rec)
  if mark == 0 or now < due then return rec end
  reap()
  if again then return rec end
  serve(nil)
  return current(rec)
end

-- The earliest deadline of a holder, or nil: the first of the index (O(log n)). An entry whose holder
-- has no such deadline (a script of before the index released or reaped it) goes; a holder granted by
-- a script of before has no entry: its waiters learn of its end at their next heartbeat instead.
local function firstHolder()
  if limit == 1 then return slot and slotUntil() or nil end
  for _ = 1, 100000 do
    local first = redis.call('ZRANGEBYSCORE', Z, int(INDEX), '(' .. FAR_TEXT, 'WITHSCORES', 'LIMIT', 0, 1)
    if not first[1] then return nil end
    local at = tonumber(first[2]) - INDEX
    if tonumber(redis.call('ZSCORE', Z, 'h' .. string.sub(first[1], 2))) == at then return at end
    redis.call('ZREM', Z, first[1])
  end
  return nil
end

-- What a waiter is told: the ms left of its wait (-1: no limit), and the ms to the earliest holder's
-- deadline when it is among the next \`limit\` in line (a holder leaving would serve it), else -1.
local function waitingAnswer(rank, waitUntil)
  local hint = -1
  if rank and rank < limit then
    local first = firstHolder()
    if first then hint = first - now end
  end
  return {'w', waitUntil >= 0 and waitUntil - now or -1, hint}
end

-- Where a request stands: granted (fence, lease ms, revoke ms), waiting (see waitingAnswer), ended (why).
local function standing(rid, rec)
  local kind = string.sub(rec, 1, 1)
  if kind == 'H' then
    local f, ttl, hard = string.match(rec, '^H (%d+) (%d+) (%d+)')
    ttl, hard = tonumber(ttl), tonumber(hard)
    local until_
    if inSlot(rid) then until_ = slotUntil() else until_ = tonumber(redis.call('ZSCORE', Z, 'h' .. rid)) end
    -- A lease cut short by its maxHold answers its ttl: the holder's maxHold timer ends it, not its renewal.
    local lease = (hard > 0 and until_ >= hard) and ttl or until_ - now
    return {'g', tonumber(f), lease, hard > 0 and hard - now or 0}
  elseif kind == 'W' then
    return waitingAnswer(redis.call('ZRANK', Z, 'q' .. rid), tonumber(string.match(rec, '^W %d+ %d+ (%-?%d+)')))
  end
  return {'e', string.sub(rec, 3)}
end
`

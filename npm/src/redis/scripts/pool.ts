/**
 * pool: the Lua of pools kept in Redis (issue #16), one entry point whose first argument names the
 * operation. It shares nothing with the locks' Lua but `time()` (the server's clock, or the model
 * test's: see `scriptsFor`), and keeps its state in a `do` block of its own.
 *
 * # Data layout (everything of one pool in the slot of its hash tag `{p:NAME}`)
 * - `P:{p:NAME}:m` hash: `c` the capacity, `u` the units claimed (the sum of the open claims'), `o`
 *   how many claims are open, `k` how many of them have no ttl (permanent: while any is, the keys do
 *   not expire), `q` how many wait, `t` the last ticket, `x` when the keys expire unless permanent
 *   claims keep them, `f` a time no tombstone ends before (absent in a pool of before it: looked up).
 *   And the records, by `#` + claim id:
 *   `O n first ttlAt forgetAt seen ackAt owner` (open: `first` the units left right after it took its own,
 *   `ttlAt` when its units come back unless confirmed, 0 for never; `forgetAt` when its id is
 *   forgotten once it holds nothing, 0 for a claim nobody can ask again; `seen` 1 once an ask of its
 *   id by another claim than its owner was answered its outcome, or a confirm of it done; `ackAt`, for a claim served from the line, when its units come
 *   back unless its process asked about it by then — a process that died while it waited is told
 *   nothing, and takes nothing — else 0; `owner` the ask id of the claim that put it here: the only
 *   one whose cancel undoes it), `E n first [@release] forgetAt` (a tombstone: released or expired, its id
 *   remembered; `release` the ask id of the release that ended it, when it carried one: asked again,
 *   its answer lost, that release answers released),
 *   `W n waitUntil ttl remember @owner chan…` (waiting; `waitUntil` -1 for no limit; `owner` as an open
 *   record's, which it becomes when served; the channels of the processes that asked it). A record
 *   written before owners were kept has none (`O` ends at `ackAt`, `W` has no `@` word): it is read as
 *   owned by no claim, so that no cancel takes it out (its ttl, or its id's release, still does).
 * - `P:{p:NAME}:z` zset: the line, `q` + id scored by ticket − 2^52 (so that it comes before every
 *   deadline and its head is the zset's first member); the deadlines (server ms): `x` + id an open
 *   claim's ttl, `a` + id a served claim's `ackAt`, `w` + id a waiter's (its wait, or its last
 *   heartbeat's `beat`, whichever is first),
 *   `f` + id a tombstone's end, in a range of its own (scored 2^51 + the end; one written before the range was,
 *   scored the end, is ended with the other deadlines); the index of the deadlines that give units back, `X` + id and `A` + id
 *   scored 2^52 + the claim's `x` and `a` deadline (after every deadline, before `z`), so that the head
 *   of the line finds the earliest in O(log n) however many tombstones and heartbeats come first; and
 *   `z`, after all of them, so that the zset exists while the hash does. The index came after the rest
 *   (a script without it walked every deadline at each ask of the head): an entry whose claim has no
 *   such deadline any more is dropped when it comes first, and a deadline without one (written by a
 *   script of before) is served at the head's next heartbeat instead of at its time.
 *
 * # Invariants (every call keeps them before it answers)
 * - POOL-01: `0 <= u <= c`. A claim takes units only when they are there (`take`); a release or an
 *   expiry gives back exactly what its open record took, and the record stops being open in the same
 *   call; a resize never goes below `u`.
 * - Every deadline is judged by the server's clock. Each call first ends what is past its deadline, one
 *   deadline at a time in time order (a claim's ttl gives its units back, a waiter past its wait or its
 *   heartbeat leaves the line), serving the line after each: at most REAP of them, so that no call
 *   blocks Redis for long. A call that finds more due ends REAP, runs nothing else and answers `{'a'}`
 *   (the caller asks again at once): every other answer is given with no ttl, ack or wait past its end, so
 *   no claim is refused or put in line for units a ttl gives back. Tombstones only remember ids: a
 *   tombstone past its end is gone to every call (`record`), and each call forgets at most FORGET
 *   of them, earliest first.
 * - POOL-04: while the head of the line fits, it takes its units, in this same call, and is told on
 *   its channels (whose process then asks for its answer: that ask acknowledges it) (`p REMAINING KEY ID`, KEY the pool's hash). A
 *   resize below a claim in line, wherever it stands, takes it out of the line and tells it (`n REMAINING
 *   KEY ID`): no claim waits for more than the capacity. A claim that finds others waiting does not take units, even if they would fit.
 * - POOL-03: an id with a record answers it: open or tombstone, its first outcome (`first`); waiting,
 *   its place. An id whose claim took nothing leaves nothing behind.
 * - The keys expire a grace (to one and a half) after their last deadline, unless a permanent claim
 *   keeps them (then they never expire): a pool with nothing claimed, nobody waiting and no remembered
 *   id is forgotten, capacity included, and its next use fixes the capacity again.
 *
 * keys: 1 the hash, 2 the zset. args: 1 the operation, 2 the capacity as the handle knows it (`C`
 * + capacity: the pool must have it, or be made with it; `c` + capacity: made with it if Redis has no
 * such pool; `-`: the pool must exist), 3 `'grace publish beat'` (the grace ms, PUBLISH or SPUBLISH, how long a waiter keeps its
 * place without a heartbeat), then the operation's own:
 * - `claim` id n wait(-1: none) ttl(0: none) remember(0/1) mode chan ask. `ask`: the ask id of the
 *   claim asking (one a claim of a process, the same in all its asks and its cancel): a claim it puts
 *   here is its owner's, and an answer to another's ask marks it seen. mode `f`: a caller's ask; `r`:
 *   this process asking again after no answer; `b`: a heartbeat or a
 *   waiter asking where it stands (it never makes a claim); `B`: the same by a caller that joined the
 *   claim (it marks the claim seen: that caller is told); `e`: as `b`, by the process whose claim it is
 *   when a caller of its own joined it with a longer wait: the claim in line waits until `now + wait`
 *   if that is later (-1: no limit). Answers (units as text, here and below: see `int`) `{'c', remaining}` claimed now,
 *   `{'k', first, open}` known (the first outcome), `{'w', waitLeftMs, hintMs[, 1]}` waiting (-1: no
 *   limit; the hint: at the head, the ms to the earliest ttl or ackAt of an open claim, else -1; 1: an
 *   ask (`f` or `r`) joined a claim in line that another claim's ask put there), `{'n', remaining}` not claimed, `{'g', remaining}`
 *   (modes b and B) no such claim or waiter. A `b` or `e` of a claim in line another claim's ask put
 *   there (its own left the line unknown to it) is answered as an ask that joined it (1), and never
 *   makes its wait longer.
 * - `release` id [ask] → 1 released (or released before by this very ask: its tombstone says so), 0 it
 *   held nothing. `confirm` id → `d` done (and seen), `l` it holds nothing.
 * - `cancel` id ask → `w` it left the line, `u` it was undone (it took units no caller was told of: open
 *   and not seen), `n` nothing (ended, seen, or put here by another claim's ask: it stands). Only the
 *   claim whose ask put the record here (`owner`) takes it out.
 * - `remaining` → the units left (a pool Redis does not have is made, as by any first use). `resize` capacity → `ok`. `inspect` → `{capacity, remaining,
 *   claims, waiting}`, or `{}` for a pool Redis does not have.
 * Errors are answered `{'x', code, message}` (code `invalid` or `limit`). Any operation may answer `{'a'}`:
 * more deadlines were due than one call ends; it ended REAP of them and did nothing else: ask again.
 */
export default `
local pool
do
  local M, Z, now, grace, pub, beat
  local exists, fresh, changed, cap, used, opened, perm, perm0, waiting, mark, moved, tombs, tombs0
  local DAY = 86400000
  local LINE = 4503599627370496
  local INDEX = 4503599627370496
  local TOMB = 2251799813685248
  local FAR = '9000000000000000'
  local MAX_WAITING = 10000
  local MAX_RECORDS = 1000000
  local MAX_CHANNELS = 8
  -- The most deadlines one call ends: ttls, acks and waiters (about 10 µs each, serving the line
  -- aside), and tombstones (about 3 µs each, ended together): a few ms of Redis a call.
  local REAP = 250
  local FORGET = 1000
  -- How long the tombstone of a remembered id released past its 24 hours keeps the release's ask id:
  -- twice the 10 s within which the store asks a release again.
  local AGAIN = 20000

  -- A count as text: Redis answers a Lua number as an integer, which node-redis 5 reads rounded past
  -- 2^53-49 (its decoder adds each digit past 2^53): a pool of 2^53-1 units said it had 2^53 left.
  -- Counts of units (capacity, remaining) are answered so; the store reads them with Number().
  local function int(x)
    return string.format('%d', x)
  end

  local function fail(code, message)
    return {'x', code, message}
  end

  -- The keys outlive deadline \`at\` by a grace: moved half a grace past what is needed when passed.
  local function covers(at)
    if at + grace > mark then
      mark = at + grace + math.floor(grace / 2)
      moved = true
    end
  end

  -- Deadline \`at\` of claim \`id\`: \`x\` its ttl, \`a\` its ackAt; with its entry in their index.
  local function due(kind, id, at)
    redis.call('ZADD', Z, int(at), kind .. id, int(INDEX + at), string.upper(kind) .. id)
  end

  -- Claim \`id\`'s ttl (\`x\`) and/or ackAt (\`a\`) deadlines go, with their index entries.
  local function undue(x, a, id)
    local gone = {}
    if x then gone = {'x' .. id, 'X' .. id} end
    if a then table.insert(gone, 'a' .. id); table.insert(gone, 'A' .. id) end
    if #gone > 0 then redis.call('ZREM', Z, unpack(gone)) end
  end

  -- Claim \`id\`'s record; a tombstone past its end is as good as gone (its reaping may come later).
  local function record(id)
    local rec = redis.call('HGET', M, '#' .. id)
    if rec and string.sub(rec, 1, 1) == 'E' and tonumber(string.match(rec, '(%d+)$')) <= now then return false end
    return rec
  end

  -- An open record; \`owner\` '' when written without one (an older layout: no cancel matches it).
  local function parseOpen(rec)
    local n, first, ttlAt, forget, seen, ackAt, owner = string.match(rec, '^O (%d+) (%d+) (%d+) (%d+) (%d) (%d+) ?(%S*)$')
    return tonumber(n), tonumber(first), tonumber(ttlAt), tonumber(forget), seen == '1', tonumber(ackAt), owner
  end

  local function writeOpen(id, n, first, ttlAt, forget, seen, ackAt, owner)
    local rec = string.format('O %d %d %d %d %d %d', n, first, ttlAt, forget, seen and 1 or 0, ackAt)
    if owner ~= '' then rec = rec .. ' ' .. owner end
    redis.call('HSET', M, '#' .. id, rec)
  end

  -- A waiting record: its owner is its first word after \`remember\`, marked \`@\` (never a channel's
  -- first character); '' in an older layout, which had none.
  local function parseWait(rec)
    local n, waitUntil, ttl, remember, chans = string.match(rec, '^W (%d+) (%-?%d+) (%d+) (%d) (.*)$')
    local owner, rest = string.match(chans, '^@(%S+) (.*)$')
    if owner then chans = rest else owner = '' end
    return tonumber(n), tonumber(waitUntil), tonumber(ttl), remember == '1', chans, owner
  end

  local function writeWait(id, n, waitUntil, ttl, remember, chans, owner)
    if owner ~= '' then chans = '@' .. owner .. ' ' .. chans end
    redis.call('HSET', M, '#' .. id, string.format('W %d %d %d %d %s', n, waitUntil, ttl, remember and 1 or 0, chans))
  end

  -- The units of any record (open, tombstone, waiting).
  local function unitsOf(rec)
    return tonumber(string.match(rec, '^%a (%d+)'))
  end

  -- Makes the pool, when Redis has none, with the capacity the handle knows.
  local function create()
    if exists then return end
    exists, fresh, changed = true, true, true
    redis.call('ZADD', Z, FAR, 'z')
  end

  -- Claim \`id\` takes \`n\` units now (they are there). \`ackAt\`: served from the line, when its units
  -- come back unless its process asked about it by then (0: it was answered directly). \`owner\`: the
  -- ask id of the claim that put it in Redis.
  local function take(id, n, ttl, remember, ackAt, owner)
    used = used + n
    opened = opened + 1
    local ttlAt, forget = 0, 0
    if ttl > 0 then
      ttlAt = now + ttl
      due('x', id, ttlAt)
      covers(ttlAt)
    else
      perm = perm + 1
    end
    if remember then
      forget = now + DAY
      covers(forget)
    end
    if ackAt > 0 then
      due('a', id, ackAt)
      covers(ackAt)
    end
    writeOpen(id, n, cap - used, ttlAt, forget, false, ackAt, owner)
    changed = true
  end

  -- An open claim gives its units back (released, or its ttl ran out); its id is kept as a tombstone
  -- until its forgetAt when it is remembered, else (or \`undo\`: no caller was told of it) forgotten.
  -- Released by an ask \`by\`: the tombstone keeps it, so that that release asked again answers alike
  -- (a remembered id past its 24 hours is kept AGAIN for it). A drawn id (\`forget\` 0) leaves none.
  local function giveBack(id, rec, undo, by)
    local n, first, ttlAt, forget, _, ackAt = parseOpen(rec)
    used = used - n
    opened = opened - 1
    if ttlAt <= 0 then perm = perm - 1 end
    undue(ttlAt > 0, ackAt > 0, id)
    if by and forget > 0 and forget <= now then
      forget = now + AGAIN
      covers(forget)
    end
    if forget > now and not undo then
      local tomb = string.format('E %d %d %d', n, first, forget)
      if by then tomb = string.format('E %d %d @%s %d', n, first, by, forget) end
      redis.call('HSET', M, '#' .. id, tomb)
      redis.call('ZADD', Z, int(TOMB + forget), 'f' .. id)
      if forget < tombs then tombs = forget end
    else
      redis.call('HDEL', M, '#' .. id)
    end
    changed = true
  end

  -- A waiter leaves the line (its record goes: a claim that took nothing leaves nothing behind).
  local function leave(id)
    redis.call('ZREM', Z, 'q' .. id, 'w' .. id)
    redis.call('HDEL', M, '#' .. id)
    waiting = waiting - 1
    changed = true
  end

  local function tell(chans, what, id)
    local text = what .. ' ' .. int(cap - used) .. ' ' .. M .. ' ' .. id
    for chan in string.gmatch(chans, '%S+') do redis.call(pub, chan, text) end
  end

  -- While the head of the line fits, it takes its units.
  local function serve()
    while waiting > 0 do
      local head = redis.call('ZRANGE', Z, 0, 0)[1]
      if not head or string.sub(head, 1, 1) ~= 'q' then
        -- The count and the line disagree (never, unless Redis lost part of a write): trust the line.
        waiting = 0
        changed = true
        break
      end
      local id = string.sub(head, 2)
      local rec = record(id)
      if not rec or string.sub(rec, 1, 1) ~= 'W' then
        redis.call('ZREM', Z, head, 'w' .. id)
        waiting = waiting - 1
        changed = true
      else
        local n, _, ttl, remember, chans, owner = parseWait(rec)
        if n <= cap - used then
          leave(id)
          take(id, n, ttl, remember, now + beat, owner)
          tell(chans, 'p', id)
        else
          break
        end
      end
    end
  end

  -- Forgets at most FORGET tombstones past their end (\`f\` + id at TOMB + its end), earliest first, in
  -- one read of the zset and one of the hash; \`tombs\` (no tombstone ends before it) spares the look
  -- while none is due. Those left are as good as gone (\`record\`): the next calls forget them.
  local function forget()
    if tombs > now then return end
    local due = redis.call('ZRANGEBYSCORE', Z, int(TOMB), '(' .. int(INDEX), 'WITHSCORES', 'LIMIT', 0, FORGET + 1)
    local members, fields = {}, {}
    tombs = INDEX
    for i = 1, #due, 2 do
      local at = tonumber(due[i + 1]) - TOMB
      if at > now or #members == FORGET then
        tombs = at
        break
      end
      members[#members + 1] = due[i]
      fields[#fields + 1] = '#' .. string.sub(due[i], 2)
    end
    if #members == 0 then return end
    local recs, gone = redis.call('HMGET', M, unpack(fields)), {}
    for k = 1, #fields do
      local rec = recs[k]
      -- The id may have been claimed again since (its new record stays).
      if rec and string.sub(rec, 1, 1) == 'E' and tonumber(string.match(rec, '(%d+)$')) <= now then gone[#gone + 1] = fields[k] end
    end
    if #gone > 0 then redis.call('HDEL', M, unpack(gone)) end
    redis.call('ZREM', Z, unpack(members))
    changed = true
  end

  -- Ends what is past its deadline, one deadline at a time in time order, serving the line after each:
  -- at most REAP of them (and FORGET tombstones). False when more are due: the caller is to ask again.
  local function reap()
    if not exists then return true end
    forget()
    for i = 1, REAP + 1 do
      local due = redis.call('ZRANGEBYSCORE', Z, 0, int(now), 'WITHSCORES', 'LIMIT', 0, 1)
      local member = due[1]
      if not member then return true end
      if i > REAP then return false end
      local kind, id, at = string.sub(member, 1, 1), string.sub(member, 2), tonumber(due[2])
      local rec = redis.call('HGET', M, '#' .. id)
      local is = rec and string.sub(rec, 1, 1)
      if kind == 'x' and is == 'O' then
        giveBack(id, rec, false)
        serve()
      elseif kind == 'w' and is == 'W' then
        leave(id)
        serve()
      elseif kind == 'a' and is == 'O' then
        -- Served from the line, and its process never asked about it: it died (nobody was told).
        giveBack(id, rec, true)
        serve()
      elseif kind == 'f' and is == 'E' then
        -- A tombstone's end written before they had a range of their own (TOMB).
        redis.call('HDEL', M, '#' .. id)
        redis.call('ZREM', Z, member)
        changed = true
      else
        -- A deadline whose record has gone or changed (never, unless Redis lost part of a write).
        if kind == 'x' or kind == 'a' then undue(kind == 'x', kind == 'a', id) else redis.call('ZREM', Z, member) end
        changed = true
      end
    end
  end

  local function save()
    if not changed and tombs == tombs0 then return end
    covers(now)
    redis.call('HSET', M, 'c', int(cap), 'u', int(used), 'o', int(opened), 'k', int(perm), 'q', int(waiting), 'x', int(mark), 'f', int(tombs))
    if perm > 0 then
      if perm0 == 0 and not fresh then
        redis.call('PERSIST', M)
        redis.call('PERSIST', Z)
      end
    elseif perm0 > 0 or moved or fresh then
      redis.call('PEXPIREAT', M, int(mark))
      redis.call('PEXPIREAT', Z, int(mark))
    end
  end

  -- A waiter's deadline: its wait, or its heartbeat's, whichever is first.
  local function waiterDeadline(waitUntil)
    local at = now + beat
    if waitUntil >= 0 and waitUntil < at then at = waitUntil end
    return at
  end

  -- The ms to the earliest ttl or ackAt of an open claim, else -1: the first of their index (\`X\`/\`A\` +
  -- id, at INDEX + the deadline), O(log n) whatever else the zset holds. An entry whose deadline is
  -- not the one its claim has (left by a script of an older layout, which kept no index) goes.
  local function nextBack()
    for _ = 1, 100000 do
      local first = redis.call('ZRANGEBYSCORE', Z, INDEX, '(' .. FAR, 'WITHSCORES', 'LIMIT', 0, 1)
      if not first[1] then return -1 end
      local at = tonumber(first[2]) - INDEX
      if tonumber(redis.call('ZSCORE', Z, string.lower(string.sub(first[1], 1, 1)) .. string.sub(first[1], 2))) == at then
        return at - now
      end
      redis.call('ZREM', Z, first[1])
    end
    return -1
  end

  -- What a waiter is told: the ms left of its wait (-1: no limit), and, at the head of the line, the ms
  -- to the earliest ttl or ackAt of an open claim (units that come back then may serve it), else -1.
  local function waiting_(id, waitUntil)
    local hint = -1
    if redis.call('ZRANK', Z, 'q' .. id) == 0 then hint = nextBack() end
    return {'w', waitUntil >= 0 and waitUntil - now or -1, hint}
  end

  local function claim(args)
    local id, n, wait, ttl, remember, mode, chan, ask = args[4], tonumber(args[5]), tonumber(args[6]), tonumber(args[7]), args[8] == '1', args[9], args[10], args[11] or ''
    local rec = record(id)
    if rec then
      local kind, had = string.sub(rec, 1, 1), unitsOf(rec)
      if had ~= n then
        return fail('invalid', string.format('took %d units; asked again for %d', had, n))
      end
      if kind == 'O' then
        local _, first, ttlAt, forget, seen, ackAt, owner = parseOpen(rec)
        -- Answered to an ask of another claim than the one that put it here: it stands (see cancel).
        local tells = ask ~= owner or mode == 'B'
        if ackAt > 0 or (tells and not seen) then
          if ackAt > 0 then undue(false, true, id) end
          writeOpen(id, n, first, ttlAt, forget, seen or tells, 0, owner)
          changed = true
        end
        return {'k', int(first), 1}
      elseif kind == 'E' then
        return {'k', string.match(rec, '^E %d+ (%d+)'), 0}
      end
      local _, waitUntil, wttl, wremember, chans, owner = parseWait(rec)
      local rewrite = false
      -- Its process has a caller that waits longer: the claim waits as long. Only its owner's: a
      -- process whose claim left the line unknown to it (no heartbeat reached Redis for a beat) may
      -- ask of the claim of its id another process put there since, whose callers wait what they said.
      if mode == 'e' and ask == owner and waitUntil >= 0 and (wait < 0 or now + wait > waitUntil) then
        waitUntil = wait < 0 and -1 or now + wait
        rewrite = true
      end
      local at = waiterDeadline(waitUntil)
      redis.call('ZADD', Z, int(at), 'w' .. id)
      covers(at)
      changed = true
      if (mode == 'f' or mode == 'r') and not string.find(' ' .. chans .. ' ', ' ' .. chan .. ' ', 1, true) then
        local count = select(2, string.gsub(chans, '%S+', ''))
        if count < MAX_CHANNELS then
          chans = chans .. ' ' .. chan
          rewrite = true
        end
      end
      if rewrite then
        writeWait(id, n, waitUntil, wttl, wremember, chans, owner)
      end
      local answer = waiting_(id, waitUntil)
      -- Another claim's ask (first or again, or a process asking of a claim it believes its own: see
      -- above) joins the claim in line: it is told, and its cancel never takes it out.
      if mode ~= 'B' and ask ~= owner then answer[4] = 1 end
      return answer
    end
    if mode == 'b' or mode == 'B' or mode == 'e' then return {'g', int(cap - used)} end
    if n > cap then
      return fail('invalid', string.format('a claim takes 1 to %d units (its capacity), not %d', cap, n))
    end
    -- (Tombstones past their end still counted: let through while some are left to forget.)
    if exists and tombs > now and redis.call('HLEN', M) >= MAX_RECORDS then
      return fail('limit', int(MAX_RECORDS) .. ' claims (open, waiting, and ids kept for 24 hours) is the most one pool keeps')
    end
    if waiting == 0 and n <= cap - used then
      create()
      take(id, n, ttl, remember, 0, ask)
      return {'c', int(cap - used)}
    end
    if wait == 0 then return {'n', int(cap - used)} end
    if waiting >= MAX_WAITING then
      return fail('limit', MAX_WAITING .. ' waiting claims on one pool is the most')
    end
    create()
    -- What it is told is read before it goes in line: a call refused there (by an ACL: ZSCORE) ends
    -- before \`save\`, and a claim written in line would stay there uncounted, in the line's way.
    -- It will be the head (as \`waiting_\` says) when nobody is in line.
    local head = redis.call('ZRANGE', Z, 0, 0)[1]
    local hint = -1
    if not (head and string.sub(head, 1, 1) == 'q') then hint = nextBack() end
    local ticket = redis.call('HINCRBY', M, 't', 1)
    local waitUntil = wait >= 0 and now + wait or -1
    local at = waiterDeadline(waitUntil)
    writeWait(id, n, waitUntil, ttl, remember, chan, ask)
    redis.call('ZADD', Z, int(ticket - LINE), 'q' .. id, int(at), 'w' .. id)
    covers(at)
    waiting = waiting + 1
    changed = true
    return {'w', waitUntil >= 0 and waitUntil - now or -1, hint}
  end

  -- After a resize down: every claim in line for more than the capacity leaves it, told so, wherever
  -- it stands (the line is at most MAX_WAITING; its records read 1000 at a time).
  local function tooLarge()
    local line = redis.call('ZRANGEBYSCORE', Z, '-inf', '(0')
    for from = 1, #line, 1000 do
      local fields = {}
      for i = from, math.min(from + 999, #line) do fields[#fields + 1] = '#' .. string.sub(line[i], 2) end
      local recs = redis.call('HMGET', M, unpack(fields))
      for k, rec in ipairs(recs) do
        if rec and string.sub(rec, 1, 1) == 'W' and unitsOf(rec) > cap then
          local id = string.sub(line[from + k - 1], 2)
          leave(id)
          tell(select(5, parseWait(rec)), 'n', id)
        end
      end
    end
  end

  local ops = {}
  ops.claim = claim
  function ops.release(args)
    local id, by = args[4], args[5]
    if by == '' then by = nil end
    local rec = record(id)
    if rec and by and string.match(rec, '^E %d+ %d+ @(%S+) ') == by then return 1 end
    if not rec or string.sub(rec, 1, 1) ~= 'O' then return 0 end
    giveBack(id, rec, false, by)
    serve()
    return 1
  end
  function ops.confirm(args)
    local id = args[4]
    local rec = record(id)
    if not rec or string.sub(rec, 1, 1) ~= 'O' then return 'l' end
    local n, first, ttlAt, forget, seen, ackAt, owner = parseOpen(rec)
    -- Answered done, the claim is seen: its process, whose own answer may have been lost, cancels it
    -- when it gives up, which undoes a claim nobody was told of; the confirm's caller was.
    if ttlAt > 0 or ackAt > 0 or not seen then
      if ttlAt > 0 then perm = perm + 1 end
      undue(ttlAt > 0, ackAt > 0, id)
      writeOpen(id, n, first, 0, forget, true, 0, owner)
      changed = true
    end
    return 'd'
  end
  -- Only the claim whose ask put the record in Redis takes it out (an id may be asked by several).
  function ops.cancel(args)
    local id, ask = args[4], args[5] or ''
    local rec = record(id)
    local kind = rec and string.sub(rec, 1, 1)
    if kind == 'W' and select(6, parseWait(rec)) == ask and ask ~= '' then
      leave(id)
      serve()
      return 'w'
    end
    if kind ~= 'O' then return 'n' end
    local _, _, _, _, seen, _, owner = parseOpen(rec)
    if not seen and owner == ask and ask ~= '' then
      giveBack(id, rec, true)
      serve()
      return 'u'
    end
    return 'n'
  end
  -- A first use, as in process: the pool is made (kept a grace), so that its capacity stands.
  function ops.remaining()
    create()
    return int(cap - used)
  end
  function ops.resize(args)
    local to = tonumber(args[4])
    if to < used then
      return fail('invalid', string.format('capacity %d is below the %d units claimed', to, used))
    end
    create()
    if to ~= cap then
      local smaller = to < cap
      cap = to
      changed = true
      if smaller and waiting > 0 then tooLarge() end
      serve()
    end
    return 'ok'
  end
  function ops.inspect()
    if not exists then return {} end
    return {int(cap), int(cap - used), opened, waiting}
  end

  pool = function(keys, args)
    M, Z = keys[1], keys[2]
    local g, p, b = string.match(args[3], '^(%d+) (%S+) (%d+)$')
    grace, pub, beat = tonumber(g), p, tonumber(b)
    now = time()
    local m = redis.call('HMGET', M, 'c', 'u', 'o', 'k', 'q', 'x', 'f')
    exists, fresh, changed, moved = m[1] ~= false, false, false, false
    used, opened, perm, waiting, mark = tonumber(m[2]) or 0, tonumber(m[3]) or 0, tonumber(m[4]) or 0, tonumber(m[5]) or 0, tonumber(m[6]) or 0
    -- No tombstone ends before \`tombs\` (a pool of before it: look once).
    tombs = tonumber(m[7]) or (exists and 0 or INDEX)
    tombs0 = tombs
    perm0 = perm
    local check, asked = string.sub(args[2], 1, 1), tonumber(string.sub(args[2], 2))
    if check == '-' and not exists then
      return fail('invalid', 'no such pool (its first use names its capacity)')
    end
    if exists then
      cap = tonumber(m[1])
      if check == 'C' and asked ~= cap then
        return fail('invalid', string.format('capacity %d differs from its capacity %d (resize changes it)', asked, cap))
      end
    else
      cap = asked
    end
    if not reap() then
      -- More deadlines are due than one call ends: the op waits for a call that ended them all.
      save()
      return {'a'}
    end
    local answer = ops[args[1]](args)
    -- Saved on every answer, an error's too: the reap step may have changed the pool.
    save()
    return answer
  end
end
`

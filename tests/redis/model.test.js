// The Redis scripts held to a reference model by a seeded random driver, against a real redis-server.
//
// The driver plays client processes: each asks for keys of a lock and of a semaphore (acquires that
// wait or not, with or without a wait limit and a maxHold, and the same request asked again, as after
// a dropped connection), renews, releases and cancels (keeping a tombstone or not), and is killed at
// random: from then on it sends nothing, so its leases end at their ttl or maxHold and its waiters at
// their heartbeat's ttl, as a process killed with kill -9 leaves them. Time is the test's: the Lua is
// the same but for its clock, which reads a Redis key the driver moves (a few ms, a ttl, or past every
// deadline; scriptsFor's clockKey), so that every deadline comes exactly when the model says, and a
// seed replays exactly. Now and then Redis saves and reloads its data (DEBUG RELOAD), which keeps it.
//
// Every answer is checked against the model, which keeps the state as Redis does — reaped only where
// a script reaps: every acquire and renew, and every release but a holder's own with nobody in line
// and no tombstone asked (that one reads no clock); at most REAP deadlines of the zset a call (1, 2 or
// the real 250, by seed), earliest first (ties by member), a lock's holder aside: a call that finds
// more due ends REAP of them, serves nobody and answers "ask again", and is asked again as a store
// does, until it answers — and answers with it: who holds (each fence
// exactly max(last + 1, now × 1024)), who waits in what order, how each request ended and until when
// its tombstone lasts, the lease and revoke ms of a grant, the wait left and the head's hint of a
// waiter; every grant made inside a call is the one Redis published, on the waiter's channel, in order.
// Odd seeds call the Functions (FCALL), even ones the same Lua as scripts (EVALSHA).
//
// A failure names its seed and its ops; replay one with HOLDFAST_REDIS_SEED=N (HOLDFAST_REDIS_SEEDS:
// how many seeds, default 300; HOLDFAST_REDIS_OPS: ops a seed, default 80).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { raw, sleep, seeded, modelRedis } from './helpers.js'

const SEEDS = process.env.HOLDFAST_REDIS_SEED ? [Number(process.env.HOLDFAST_REDIS_SEED)] : Array.from({ length: Number(process.env.HOLDFAST_REDIS_SEEDS || 300) }, (_, i) => i + 1)
const OPS = Number(process.env.HOLDFAST_REDIS_OPS || 80)
const GRACE = 60_000
const CLOCK = 'model:clock'
// The most deadlines a call ends, by seed (undefined: the real REAP).
const REAPS = [1, 2, undefined]

/** One key of a lock or a semaphore, as the model keeps it (what Redis has, unreaped items included). */
class Key {
  constructor(redis, limit) {
    this.redis = redis
    this.limit = limit
    this.last = 0
    this.holders = new Map() // id -> { fence, ttl, hard, until, maxHold }
    this.line = [] // { id, ttl, maxHold, waitUntil, beat, chan }, in ticket order
    this.ended = new Map() // id -> { why, until }
  }
}

test(`#15 model: ${SEEDS.length} seeds x ${OPS} random calls by killable processes on a driven clock agree with the reference model (FIFO, limit, fences, ttl and maxHold, waits, heartbeats, tombstones, wake-ups)`, async t => {
  const { server, send, published } = await modelRedis(t)
  const { scriptsFor, keysOf, constants } = await import(pathToFileURL(path.join(process.cwd(), 'node_modules/holdfast/dist/redis/scripts.js')).href)
  const builds = REAPS.map(lockReap => scriptsFor(true, { clockKey: CLOCK, lockReap }))
  for (const { library } of builds) await send(['FUNCTION', 'LOAD', 'REPLACE', library.source])
  // The driven clock starts a year ahead of the real one and only moves on: the keys' expiry (real
  // time, at the Lua's clock plus a grace) never comes during the test.
  let now = Date.now() + 365 * 86_400_000
  // Coverage: how many seeds reached each corner (a run of many seeds fails if one is never reached).
  const marks = new Map()
  let reached
  const mark = name => reached.add(name)

  for (const seed of SEEDS) {
    reached = new Set()
    const { random, pick, log, fail } = seeded(seed)
    published.length = 0
    const expected = [] // [channel, text] of the grants the model made inside calls, in order
    const keys = [new Key(keysOf(`m${seed}`, 'lock', 'l', 'k'), 1), new Key(keysOf(`m${seed}`, 'semaphore', 's', 'k'), 1 + Math.floor(random() * 3))]
    const processes = []
    const newProcess = () => processes.push({ chan: `model:w:${seed}:${processes.length}`, alive: true, requests: [] })
    newProcess()
    newProcess()
    let next = 1
    await send(['SET', CLOCK, now])

    const REAP = REAPS[seed % REAPS.length] ?? 250
    const { library, scripts } = builds[seed % REAPS.length]
    const run = async (op, k, args) => {
      const call = seed % 2 ? ['FCALL', library.functions[op], 2, ...k.redis, ...args] : ['EVALSHA', scripts[op].sha, 2, ...k.redis, ...args]
      try {
        return await send(call)
      } catch (error) {
        if (!/NOSCRIPT/.test(error.message)) throw error
        return await send(['EVAL', scripts[op].source, 2, ...k.redis, ...args])
      }
    }

    // ---- the model: the same state, changed at the same points, the same answers ----
    const tomb = (k, id, why, ttl) => k.ended.set(id, { why, until: now + ttl })
    const grant = (k, w) => {
      const fence = Math.max(k.last + 1, now * 1024)
      k.last = fence
      const hard = w.maxHold > 0 ? now + w.maxHold : 0
      k.holders.set(w.id, { fence, ttl: w.ttl, hard, maxHold: w.maxHold, until: hard > 0 ? Math.min(now + w.ttl, hard) : now + w.ttl })
      return fence
    }
    const serve = k => {
      while (k.holders.size < k.limit && k.line.length > 0) {
        const w = k.line.shift()
        const fence = grant(k, w)
        mark(k.limit > 1 ? 'semaphore hand-over' : 'lock hand-over')
        if (!processes.find(x => x.chan === w.chan).alive) mark('a killed process granted')
        expected.push([w.chan, `g ${w.id} ${fence} ${w.ttl} ${w.maxHold}`])
      }
    }
    // Whatever is past its deadline ends, at most REAP of the zset's (a lock's holder, in the meta,
    // aside), earliest first and by member at one score, as Redis orders them. False when more were
    // due: nobody is served, and the call answers "ask again". Else the line is served while a permit
    // is free (one freed by a call that answered "ask again" too).
    const reap = k => {
      let freed = false
      const lost = (id, h) => {
        k.holders.delete(id)
        tomb(k, id, 'L', h.ttl)
        mark(h.hard > 0 && h.until >= h.hard ? 'holder past maxHold' : 'holder past its ttl')
        freed = true
      }
      if (k.limit === 1) for (const [id, h] of k.holders) if (h.until <= now) lost(id, h)
      const due = [
        ...(k.limit > 1 ? [...k.holders].filter(([, h]) => h.until <= now).map(([id, h]) => ({ at: h.until, member: `h${id}`, end: () => lost(id, h) })) : []),
        ...k.line.filter(w => w.beat <= now).map(w => ({ at: w.beat, member: `w${w.id}`, end: () => {
          k.line.splice(k.line.indexOf(w), 1)
          tomb(k, w.id, w.waitUntil >= 0 && w.waitUntil <= now ? 'T' : 'X', w.ttl)
          mark(w.waitUntil >= 0 && w.waitUntil <= now ? 'wait ran out' : 'waiter without heartbeat')
        } })),
        // (A tombstone made by this very reap lasts past now: its ttl is more than 0.)
        ...[...k.ended].filter(([, e]) => e.until <= now).map(([id, e]) => ({ at: e.until, member: `e${id}`, end: () => {
          k.ended.delete(id)
          mark('tombstone forgotten')
        } })),
      ].sort((x, y) => x.at - y.at || (x.member < y.member ? -1 : x.member > y.member ? 1 : 0))
      for (const d of due.slice(0, REAP)) d.end()
      if (due.length > REAP) return false
      if (freed && k.line.length > 0) mark('a dead holder passes the key to the next in line')
      serve(k)
      return true
    }
    // A call as a store makes it: asked again while it answers "ask again", each call reaping as Redis
    // does, but one for which \`clockless()\` holds when it is sent (it reads no clock: it reaps nothing).
    const settled = async (what, op, k, args, clockless = () => false) => {
      for (;;) {
        const skip = clockless()
        const got = await run(op, k, args)
        if (skip || reap(k)) return got
        mark('ask again')
        check(`${what} (more due than a call ends)`, got, ['a'])
      }
    }
    const firstHolder = k => (k.holders.size ? Math.min(...[...k.holders.values()].map(h => h.until)) : undefined)
    const waiting = (k, rank, waitUntil) => {
      const first = rank < k.limit ? firstHolder(k) : undefined
      return ['w', waitUntil >= 0 ? waitUntil - now : -1, first === undefined ? -1 : first - now]
    }
    const standing = (k, id) => {
      const h = k.holders.get(id)
      if (h) return ['g', h.fence, h.hard > 0 && h.until >= h.hard ? h.ttl : h.until - now, h.hard > 0 ? h.hard - now : 0]
      const rank = k.line.findIndex(w => w.id === id)
      if (rank >= 0) return waiting(k, rank, k.line[rank].waitUntil)
      const e = k.ended.get(id)
      return e ? ['e', e.why] : undefined
    }
    const same = (got, want) => {
      if (typeof want === 'number') return !Array.isArray(got) && Number(got) === want
      if (typeof want === 'string') return got === want
      return Array.isArray(got) && got.length === want.length && want.every((v, i) => (typeof v === 'number' ? Number(got[i]) === v : got[i] === v))
    }
    const check = (what, got, want) => {
      if (!same(got, want)) fail(`${what}: Redis answered ${JSON.stringify(got)}, the model says ${JSON.stringify(want)}`)
    }
    const checkWakeups = async () => {
      for (let i = 0; i < 100 && published.length < expected.length; i++) await sleep(2)
      const got = JSON.stringify(published.splice(0))
      const want = JSON.stringify(expected.splice(0))
      if (got !== want) fail(`published ${got}, the model granted ${want}`)
    }

    for (let op = 0; op < OPS; op++) {
      const roll = random()
      const alive = processes.filter(p => p.alive)
      const p = pick(alive)
      const mine = p.requests
      if (roll < 0.08) {
        // The clock moves: a little, about a heartbeat, or past most deadlines.
        const step = pick([1, 5, 40, 150, 400, 1_100, 3_500, 12_000])
        now += step
        log.push(`clock +${step}`)
        await send(['SET', CLOCK, now])
      } else if (roll < 0.12) {
        // The clock moves to the next deadline exactly (a deadline at now is past), or one ms short of it.
        const deadlines = keys.flatMap(k => [...[...k.holders.values()].map(h => h.until), ...k.line.map(w => w.beat), ...[...k.ended.values()].map(e => e.until)]).filter(d => d > now)
        if (deadlines.length > 0) {
          const short = random() < 0.3 ? 1 : 0
          now = Math.max(now, Math.min(...deadlines) - short)
          log.push(`clock to the next deadline${short ? ' - 1' : ''} (${now})`)
          await send(['SET', CLOCK, now])
        }
      } else if (roll < 0.15) {
        p.alive = false
        log.push(`kill ${p.chan}`)
        if (alive.length <= 2) newProcess()
      } else if (roll < 0.16) {
        log.push('DEBUG RELOAD')
        mark('DEBUG RELOAD')
        assert.equal(await raw(server.port, 'DEBUG', 'RELOAD'), 'OK')
      } else if (roll < 0.5 || mine.length === 0) {
        const k = pick(keys)
        const id = `r${next++}`
        const ttl = pick([100, 1_000, 5_000])
        const maxHold = pick([0, 0, 0, 700, 4_000])
        const wait = pick([0, -1, -1, 200, 3_000])
        mine.push({ k, id, ttl, maxHold, wait })
        log.push(`${p.chan} acquire ${id} on ${k.limit > 1 ? `semaphore(${k.limit})` : 'lock'} ttl ${ttl} maxHold ${maxHold} wait ${wait}`)
        const got = await settled(`acquire ${id}`, 'acquire', k, [id, wait, constants(GRACE, 'PUBLISH', ttl, maxHold, k.limit, p.chan)])
        let want
        if (k.holders.size < k.limit && k.line.length === 0) want = grant(k, { id, ttl, maxHold })
        else if (wait === 0) want = ['b']
        else {
          const waitUntil = wait > 0 ? now + wait : -1
          k.line.push({ id, ttl, maxHold, waitUntil, beat: waitUntil >= 0 ? Math.min(now + ttl, waitUntil) : now + ttl, chan: p.chan })
          want = waiting(k, k.line.length - 1, waitUntil)
        }
        check(`acquire ${id}`, got, want)
      } else {
        const r = pick(mine)
        const { k, id } = r
        const consts = constants(GRACE, 'PUBLISH', r.ttl, r.maxHold, k.limit, p.chan)
        if (roll < 0.6) {
          // Asked again, as after a dropped connection: where it stands; a forgotten request is new.
          log.push(`${p.chan} acquire ${id} again`)
          const got = await settled(`acquire ${id} again`, 'acquire', k, [id, r.wait, consts])
          let want = standing(k, id)
          if (!want) {
            mark('a forgotten request asked again')
            if (k.holders.size < k.limit && k.line.length === 0) want = grant(k, { id, ttl: r.ttl, maxHold: r.maxHold })
            else if (r.wait === 0) want = ['b']
            else {
              const waitUntil = r.wait > 0 ? now + r.wait : -1
              k.line.push({ id, ttl: r.ttl, maxHold: r.maxHold, waitUntil, beat: waitUntil >= 0 ? Math.min(now + r.ttl, waitUntil) : now + r.ttl, chan: p.chan })
              want = waiting(k, k.line.length - 1, waitUntil)
            }
          }
          if (want[0] === 'e') mark('a late copy answered by its tombstone')
          check(`acquire ${id} again`, got, want)
        } else if (roll < 0.78) {
          log.push(`${p.chan} renew ${id}`)
          const got = await settled(`renew ${id}`, 'renew', k, [id, '', consts])
          const h = k.holders.get(id)
          const w = k.line.find(x => x.id === id)
          let want
          if (h) {
            h.until = h.hard > 0 ? Math.min(now + h.ttl, h.hard) : now + h.ttl
            want = ['g', h.fence, h.ttl, h.hard > 0 ? h.hard - now : 0]
          } else if (w) {
            w.beat = w.waitUntil >= 0 ? Math.min(now + w.ttl, w.waitUntil) : now + w.ttl
            want = standing(k, id)
          } else want = standing(k, id) ?? ['u']
          check(`renew ${id}`, got, want)
        } else {
          const why = roll < 0.92 ? 'R' : 'C'
          // A tombstone is kept when asked (a copy of the acquire may still come), else the request is forgotten.
          const keep = random() < 0.4 ? 1 : 0
          log.push(`${p.chan} ${why === 'R' ? 'release' : 'cancel'} ${id} tomb ${keep}`)
          // Without the clock (below: asked again after "ask again" too, once the line is empty).
          const clockless = () => k.holders.has(id) && k.line.length === 0 && !keep
          const got = await settled(`release ${id}`, 'release', k, [id, why + keep, consts], clockless)
          let want
          if (clockless()) {
            // Without the clock: nothing else is reaped, and its own lease goes even if past its deadline.
            if (k.holders.get(id).until <= now) mark('a lease past its deadline released unreaped')
            k.holders.delete(id)
            want = 'h'
          } else {
            const h = k.holders.get(id)
            const rank = k.line.findIndex(x => x.id === id)
            const e = k.ended.get(id)
            if (h || rank >= 0) {
              if (h) k.holders.delete(id)
              else k.line.splice(rank, 1)
              if (keep) tomb(k, id, why, (h ?? r).ttl)
              want = h ? 'h' : 'w'
            } else want = e ? `e${e.why}` : 'u'
            if (keep && (h || rank >= 0)) mark('a tombstone kept')
            serve(k)
          }
          check(`${why === 'R' ? 'release' : 'cancel'} ${id}`, got, want)
        }
      }
      await checkWakeups()
    }
    for (const name of reached) marks.set(name, (marks.get(name) ?? 0) + 1)
  }
  if (SEEDS.length >= 100) {
    const corners = ['holder past its ttl', 'holder past maxHold', 'wait ran out', 'waiter without heartbeat', 'tombstone forgotten', 'a dead holder passes the key to the next in line', 'lock hand-over', 'semaphore hand-over', 'a killed process granted', 'a forgotten request asked again', 'a late copy answered by its tombstone', 'a lease past its deadline released unreaped', 'a tombstone kept', 'DEBUG RELOAD', 'ask again']
    const rare = corners.filter(c => (marks.get(c) ?? 0) < SEEDS.length / 100)
    assert.deepEqual(rare, [], `corners reached by fewer than 1% of the seeds: ${JSON.stringify(Object.fromEntries(marks))}`)
  }
  t.diagnostic(`seeds reaching each corner: ${JSON.stringify(Object.fromEntries(marks))}`)
})

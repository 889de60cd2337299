// The pools' Lua (#16) held to a reference model by a seeded random driver, against a real redis-server,
// as model.test.js does for the locks' Lua.
//
// The driver plays client processes asking one pool: claims (at once, in line with or without a wait
// limit, with and without a ttl, with an id of a few shared ones or a fresh one, of 1 to more than the
// capacity units), the same claim asked again (by its process after no answer, by another caller),
// heartbeats and questions of waiting claims, releases, confirms, cancels, resizes (some below what is
// claimed), `remaining` and `inspect`; and processes killed at random (from then on they send nothing:
// their claims in line leave at their heartbeat's deadline, and units served to them come back at
// their ackAt). Time is the test's: the Lua reads its clock from a Redis key the driver moves (a few ms,
// about a heartbeat, to the next deadline exactly or one ms short of it, past a day), so every deadline
// comes exactly when the model says, and a seed replays exactly. Now and then Redis saves and reloads
// its data (DEBUG RELOAD).
//
// Every answer is checked against the model, which keeps the pool as the Lua does (reaped where every
// call reaps: first, one deadline at a time in time order, serving the line after each; the Lua is
// built to end at most REAP deadlines and FORGET tombstones a call (0, 1 or 2, by seed: 0 forgets
// none, so that tombstones past their end are met), so that the driver reaches the cap: a call that found more due answers ['a'] having done nothing else, and is asked again, as a
// store does, until it answers; a tombstone past its end is gone whether or not it was reaped), and so is
// every wake-up the Lua published (`p` served, `n` left the line), in order, and `inspect` after each
// call: POOL-01 (0 <= remaining <= capacity, by the model's own count), POOL-03 (an id answers its
// first outcome for 24 hours, then is new), POOL-04 (FIFO, the head not overtaken; every ending
// leaves the line). Odd seeds call the Function (FCALL), even ones the script (EVALSHA).
//
// A failure names its seed and its ops; replay one with HOLDFAST_REDIS_SEED=N (HOLDFAST_REDIS_SEEDS:
// how many seeds, default 200; HOLDFAST_REDIS_OPS: ops a seed, default 80).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { raw, sleep, seeded, modelRedis } from './helpers.js'

const SEEDS = process.env.HOLDFAST_REDIS_SEED ? [Number(process.env.HOLDFAST_REDIS_SEED)] : Array.from({ length: Number(process.env.HOLDFAST_REDIS_SEEDS || 200) }, (_, i) => i + 1)
const OPS = Number(process.env.HOLDFAST_REDIS_OPS || 80)
const GRACE = 60_000
const BEAT = 10_000
const DAY = 86_400_000
const CLOCK = 'model:clock'
const REAP = 2
const FORGET = [0, 1, 2]
const TOMB = 2 ** 51

/** The pool as the Lua keeps it: records by id (O open, E tombstone, W waiting) and the line. */
class PoolModel {
  constructor(key) {
    this.key = key
    this.exists = false
    this.cap = 0
    this.used = 0
    this.recs = new Map()
    this.line = [] // ids, in ticket order
  }

  get opened() {
    let n = 0
    for (const r of this.recs.values()) if (r.kind === 'O') n++
    return n
  }

  /** Every deadline the zset holds: [score, member]. */
  deadlines() {
    const out = []
    for (const [id, r] of this.recs) {
      if (r.kind === 'O' && r.ttlAt > 0) out.push([r.ttlAt, `x${id}`])
      if (r.kind === 'O' && r.ackAt > 0) out.push([r.ackAt, `a${id}`])
      if (r.kind === 'W') out.push([r.at, `w${id}`])
      if (r.kind === 'E') out.push([r.forget, `f${id}`])
    }
    return out.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
  }
}

test(`#16 model: ${SEEDS.length} seeds x ${OPS} random pool calls by killable processes on a driven clock agree with the reference model (POOL-01, POOL-03, POOL-04, ttl, acks, heartbeats, tombstones, resizes, wake-ups)`, async t => {
  const { server, send, published } = await modelRedis(t)
  const { scriptsFor, poolKeysOf } = await import(pathToFileURL(path.join(process.cwd(), 'node_modules/holdfast/dist/redis/scripts.js')).href)
  const builds = FORGET.map(tombstones => scriptsFor(true, { clockKey: CLOCK, reap: { deadlines: REAP, tombstones } }))
  for (const { library } of builds) await send(['FUNCTION', 'LOAD', 'REPLACE', library.source])
  // The driven clock starts a year ahead of the real one and only moves on: the keys' expiry (real
  // time) never comes during the test.
  let now = Date.now() + 365 * DAY
  const marks = new Map()
  let reached
  const mark = name => reached.add(name)
  const constants = `${GRACE} PUBLISH ${BEAT}`

  for (const seed of SEEDS) {
    reached = new Set()
    const { random, pick, log, fail } = seeded(seed)
    published.length = 0
    const expected = []
    const name = `p${seed}`
    const keys = poolKeysOf(`m${seed}`, name)
    const pool = new PoolModel(keys[0])
    const firstCap = 1 + Math.floor(random() * 6)
    const processes = []
    // A process's ask id for each claim id it asks (a new one now and then: a new claim of the id).
    const newProcess = () => processes.push({ chan: `model:w:${seed}:${processes.length}`, alive: true, claims: new Set(), asks: new Map() })
    let asks = 0
    const askOf = (proc, id, fresh) => {
      if (fresh || !proc.asks.has(id)) proc.asks.set(id, `k${asks++}`)
      return proc.asks.get(id)
    }
    newProcess()
    newProcess()
    let fresh = 0
    let ticket = 0
    await send(['SET', CLOCK, now])

    const { library, scripts } = builds[seed % FORGET.length]
    const run = async args => {
      const call = seed % 2 ? ['FCALL', library.functions.pool, 2, ...keys, ...args] : ['EVALSHA', scripts.pool.sha, 2, ...keys, ...args]
      try {
        return await send(call)
      } catch (error) {
        if (!/NOSCRIPT/.test(error.message)) throw error
        return await send(['EVAL', scripts.pool.source, 2, ...keys, ...args])
      }
    }

    // ---- the model: the same changes at the same points, the same answers ----
    const p = pool
    const tell = (chans, what, id) => {
      for (const chan of chans) expected.push([chan, `${what} ${p.cap - p.used} ${p.key} ${id}`])
    }
    const take = (id, n, ttl, remember, ackAt, owner) => {
      p.used += n
      p.recs.set(id, { kind: 'O', n, first: p.cap - p.used, ttlAt: ttl > 0 ? now + ttl : 0, forget: remember ? now + DAY : 0, seen: false, ackAt, owner })
    }
    const giveBack = (id, undo) => {
      const r = p.recs.get(id)
      p.used -= r.n
      if (r.forget > now && !undo) p.recs.set(id, { kind: 'E', n: r.n, first: r.first, forget: r.forget })
      else p.recs.delete(id)
    }
    const leave = id => {
      p.line.splice(p.line.indexOf(id), 1)
      p.recs.delete(id)
    }
    const serve = () => {
      while (p.line.length > 0) {
        const id = p.line[0]
        const r = p.recs.get(id)
        if (r.n <= p.cap - p.used) {
          leave(id)
          take(id, r.n, r.ttl, r.remember, now + BEAT, r.owner)
          tell(r.chans, 'p', id)
          mark('served from the line')
        } else break
      }
    }
    // False when more than REAP deadlines (ttls, acks, waiters) were due: the call ended REAP of them,
    // in time order, and nothing else. A tombstone past its end is gone (forgotten in this call or a later one).
    const reap = () => {
      if (!p.exists) return true
      for (const [id, r] of p.recs) {
        if (r.kind === 'E' && r.forget <= now) {
          p.recs.delete(id)
          mark('a tombstone forgotten after 24 hours')
        }
      }
      for (let ended = 0; ; ended++) {
        const due = p.deadlines().find(([at]) => at <= now)
        if (!due) return true
        if (ended === REAP) {
          mark('more deadlines due than a call ends: asked again')
          return false
        }
        const [, member] = due
        const kind = member[0]
        const id = member.slice(1)
        if (kind === 'x') {
          giveBack(id, false)
          serve()
          mark('a ttl ran out')
        } else if (kind === 'a') {
          giveBack(id, true)
          serve()
          mark('served to a dead process: back at its ackAt')
        } else {
          const r = p.recs.get(id)
          mark(r.waitUntil >= 0 && r.waitUntil <= now ? 'a wait ran out' : 'a heartbeat missed')
          leave(id)
          serve()
        }
      }
    }
    const waiterAt = waitUntil => (waitUntil >= 0 && waitUntil < now + BEAT ? waitUntil : now + BEAT)
    const waitingAnswer = (id, waitUntil) => {
      let hint = -1
      if (p.line[0] === id) {
        const first = p.deadlines().find(([, m]) => m[0] === 'x' || m[0] === 'a')
        if (first) hint = first[0] - now
      }
      return ['w', waitUntil >= 0 ? waitUntil - now : -1, hint]
    }
    const create = () => {
      p.exists = true
    }
    const model = {
      claim(id, n, wait, ttl, remember, mode, chan, ask) {
        const r = p.recs.get(id)
        if (r) {
          if (r.n !== n) return ['x', 'invalid', `took ${r.n} units; asked again for ${n}`]
          if (r.kind === 'O') {
            r.ackAt = 0
            if (ask !== r.owner || mode === 'B') r.seen = true
            mark(ask === r.owner ? 'a claim asked again by its own claim while open' : 'an id asked again while open')
            return ['k', String(r.first), 1]
          }
          if (r.kind === 'E') {
            mark('an id asked again after its release')
            return ['k', String(r.first), 0]
          }
          if (mode === 'e' && ask === r.owner && r.waitUntil >= 0 && (wait < 0 || now + wait > r.waitUntil)) {
            r.waitUntil = wait < 0 ? -1 : now + wait
            mark('a wait made longer by a caller that joined in its process')
          }
          r.at = waiterAt(r.waitUntil)
          if ((mode === 'f' || mode === 'r') && !r.chans.includes(chan) && r.chans.length < 8) r.chans.push(chan)
          const answer = waitingAnswer(id, r.waitUntil)
          if (mode !== 'B' && ask !== r.owner) {
            answer.push(1)
            mark(mode === 'f' || mode === 'r' ? 'another caller joined a claim in line' : 'a process asked of a claim in line another put there')
          }
          return answer
        }
        if (mode === 'b' || mode === 'B' || mode === 'e') return ['g', String(p.cap - p.used)]
        if (n > p.cap) return ['x', 'invalid', `a claim takes 1 to ${p.cap} units (its capacity), not ${n}`]
        if (p.line.length === 0 && n <= p.cap - p.used) {
          create()
          take(id, n, ttl, remember, 0, ask)
          return ['c', String(p.cap - p.used)]
        }
        if (wait === 0) {
          if (p.line.length > 0 && n <= p.cap - p.used) mark('no barging: refused while others wait')
          return ['n', String(p.cap - p.used)]
        }
        create()
        const waitUntil = wait >= 0 ? now + wait : -1
        p.recs.set(id, { kind: 'W', n, waitUntil, ttl, remember, chans: [chan], ticket: ++ticket, at: waiterAt(waitUntil), owner: ask })
        p.line.push(id)
        return waitingAnswer(id, waitUntil)
      },
      release(id) {
        const r = p.recs.get(id)
        if (!r || r.kind !== 'O') return 0
        giveBack(id, false)
        serve()
        return 1
      },
      confirm(id) {
        const r = p.recs.get(id)
        if (!r || r.kind !== 'O') return 'l'
        r.ttlAt = 0
        r.ackAt = 0
        r.seen = true
        return 'd'
      },
      cancel(id, ask) {
        const r = p.recs.get(id)
        if ((r?.kind === 'W' || r?.kind === 'O') && r.owner !== ask) {
          mark("a cancel by another claim's ask: it stands")
          return 'n'
        }
        if (r?.kind === 'W') {
          leave(id)
          serve()
          return 'w'
        }
        if (r?.kind === 'O' && !r.seen) {
          giveBack(id, true)
          serve()
          mark('a claim undone by its cancel')
          return 'u'
        }
        return 'n'
      },
      remaining: () => {
        create()
        return String(p.cap - p.used)
      },
      resize(to) {
        if (to < p.used) return ['x', 'invalid', `capacity ${to} is below the ${p.used} units claimed`]
        create()
        if (to !== p.cap) {
          const smaller = to < p.cap
          p.cap = to
          // Smaller: every claim in line for more than the capacity leaves it, told, in line order.
          if (smaller) {
            for (const [i, id] of [...p.line].entries()) {
              const r = p.recs.get(id)
              if (r.n <= p.cap) continue
              leave(id)
              tell(r.chans, 'n', id)
              mark(i === 0 ? 'too large after a resize' : 'too large after a resize, behind the head')
            }
          }
          serve()
        }
        return 'ok'
      },
      inspect: () => (p.exists ? [String(p.cap), String(p.cap - p.used), p.opened, p.line.length] : []),
    }
    /** Asks Redis; its answer must be `want`. */
    const ask = async (op, spec, rest, want) => {
      const got = await run([op, spec, constants, ...rest])
      if (JSON.stringify(got) !== JSON.stringify(want)) fail(`${op}: Redis answered ${JSON.stringify(got)}, the model ${JSON.stringify(want)}`)
      return got
    }
    /** One call, in the model then in Redis: the answers must agree. */
    const call = async (op, spec, ...rest) => {
      log.push(`${op} ${spec} ${rest.join(' ')}`)
      const asked = Number(spec.slice(1))
      let want
      let unknown = false
      if (spec === '-' && !p.exists) want = ['x', 'invalid', 'no such pool (its first use names its capacity)']
      else if (p.exists && spec[0] === 'C' && asked !== p.cap) want = ['x', 'invalid', `capacity ${asked} differs from its capacity ${p.cap} (resize changes it)`]
      else {
        if (!p.exists) p.cap = asked
        if (!reap()) {
          // Asked again, as a store does (the clock has not moved): each call ends up to REAP more.
          await ask(op, spec, rest, ['a'])
          return call(op, spec, ...rest)
        }
        unknown = op === 'claim' && !p.recs.has(rest[0])
        want = model[op](...rest)
      }
      const got = await ask(op, spec, rest, want)
      if (unknown) {
        // A tombstone's end of the id still in the zset, past (FORGET of them a call): not forgotten when
        // the claim came, and yet gone to it.
        const end = await send(['ZSCORE', keys[1], `f${rest[0]}`])
        if (end !== null && Number(end) - TOMB <= now) mark('an id whose tombstone ended, not forgotten yet, claimed anew')
      }
      return got
    }

    const ids = ['a', 'b', 'c', 'd']
    for (let i = 0; i < OPS; i++) {
      const alive = processes.filter(pr => pr.alive)
      if (alive.length === 0) newProcess()
      const proc = pick(processes.filter(pr => pr.alive))
      // The handle's capacity: unchecked (c), checked (C), now and then another than the pool's; or none (-).
      const spec = random() < 0.05 ? '-' : random() < 0.2 ? `C${(p.exists ? p.cap : firstCap) + (random() < 0.1 ? 1 : 0)}` : `c${p.exists ? p.cap : firstCap}`
      const r = random()
      if (r < 0.3) {
        const remember = random() < 0.6
        const id = remember ? pick(ids) : `z${fresh++}`
        const known = p.recs.get(id)
        const n = known && random() < 0.8 ? known.n : 1 + Math.floor(random() * (p.exists ? p.cap + 1 : firstCap + 1))
        const wait = pick([0, 0, -1, Math.floor(random() * 3 * BEAT)])
        const ttl = random() < 0.3 ? 1 + Math.floor(random() * 2 * BEAT) : 0
        const mode = pick(['f', 'f', 'r'])
        await call('claim', spec, id, n, wait, ttl, remember ? 1 : 0, mode, proc.chan, askOf(proc, id, mode === 'f' && random() < 0.3))
        proc.claims.add(id)
      } else if (r < 0.45) {
        // A process asks where its claims stand (a heartbeat, or a wake-up's question).
        for (const id of proc.claims) {
          const rec = p.recs.get(id)
          const mode = pick(['b', 'b', 'B', 'e'])
          const wait = mode === 'e' ? pick([-1, Math.floor(random() * 3 * BEAT)]) : -1
          if (rec) await call('claim', spec, id, rec.n, wait, 0, 1, mode, proc.chan, askOf(proc, id, false))
        }
      } else if (r < 0.55) {
        const id = pick([...p.recs.keys(), 'a', 'nobody'])
        await call('release', spec, id)
      } else if (r < 0.6) {
        await call('confirm', spec, pick([...p.recs.keys(), 'nobody']))
      } else if (r < 0.67) {
        // Mostly by the claim that owns it; else by another claim's ask of its id, or by nobody's.
        const id = pick([...p.recs.keys(), 'nobody'])
        const owner = p.recs.get(id)?.owner
        const others = processes.map(pr => pr.asks.get(id)).filter(a => a !== undefined && a !== owner)
        await call('cancel', spec, id, owner !== undefined && random() < 0.6 ? owner : pick([...others, 'k-nobody']))
      } else if (r < 0.72) {
        const to = Math.max(1, p.used + Math.floor(random() * 5) - 2)
        if (to < p.used) mark('a resize below what is claimed')
        await call('resize', spec, to)
      } else if (r < 0.76) {
        await call('remaining', spec)
      } else if (r < 0.78) {
        // An entry of the index of ttls and ackAts that no claim has (as a script of before the index
        // leaves when it ends a ttl): the head's hint must pass over it.
        const kind = pick(['x', 'a'])
        const id = pick([...ids, 'ghost'])
        const rec = p.recs.get(id)
        if (p.exists && !(rec?.kind === 'O' && rec[kind === 'x' ? 'ttlAt' : 'ackAt'] > 0)) {
          const at = now + 1 + Math.floor(random() * 2 * BEAT)
          log.push(`stale index entry ${kind.toUpperCase()}${id} at ${at}`)
          await send(['ZADD', keys[1], 2 ** 52 + at, `${kind.toUpperCase()}${id}`])
          mark('a stale entry in the index of ttls')
        }
      } else if (r < 0.8) {
        proc.alive = false
        log.push(`kill ${proc.chan}`)
        if (random() < 0.5) newProcess()
      } else if (r < 0.97) {
        const deadlines = p.deadlines()
        const nextAt = deadlines.find(([at]) => at > now)?.[0]
        if (nextAt !== undefined && random() < 0.5) {
          const short = random() < 0.3
          now = short ? nextAt - 1 : nextAt
          log.push(`clock to the next deadline${short ? ' - 1' : ''} (${now})`)
        } else {
          const step = pick([1, 50, Math.floor(BEAT / 3), BEAT, DAY + 1])
          now += step
          log.push(`clock +${step}`)
        }
        await send(['SET', CLOCK, now])
      } else {
        log.push('DEBUG RELOAD')
        await raw(server.port, 'DEBUG', 'RELOAD')
      }
      // POOL-01 by the model's own count, and inspect as the model has it.
      if (p.used < 0 || p.used > p.cap) fail(`the model's count left [0, ${p.cap}]: ${p.used}`)
      const seen = await call('inspect', `c${p.exists ? p.cap : firstCap}`)
      if (seen.length && !(Number(seen[1]) >= 0 && Number(seen[1]) <= Number(seen[0]))) fail(`remaining ${seen[1]} of ${seen[0]}`)
    }
    // Every wake-up the Lua published, in order, is the one the model made.
    for (let waited = 0; published.length < expected.length && waited < 2_000; waited += 10) await sleep(10)
    if (JSON.stringify(published) !== JSON.stringify(expected)) fail(`published ${JSON.stringify(published)}\nexpected ${JSON.stringify(expected)}`)
    for (const name of reached) marks.set(name, (marks.get(name) ?? 0) + 1)
  }
  t.diagnostic(`seeds reaching each corner: ${JSON.stringify(Object.fromEntries(marks))}`)
  if (SEEDS.length >= 100) {
    const corners = [
      'served from the line',
      'too large after a resize',
      'too large after a resize, behind the head',
      'a ttl ran out',
      'served to a dead process: back at its ackAt',
      'a wait ran out',
      'a heartbeat missed',
      'a tombstone forgotten after 24 hours',
      'an id asked again while open',
      'an id asked again after its release',
      'no barging: refused while others wait',
      'a claim undone by its cancel',
      "a cancel by another claim's ask: it stands",
      'a claim asked again by its own claim while open',
      'a resize below what is claimed',
      'another caller joined a claim in line',
      'a stale entry in the index of ttls',
      'a wait made longer by a caller that joined in its process',
      'more deadlines due than a call ends: asked again',
      'an id whose tombstone ended, not forgotten yet, claimed anew',
    ]
    for (const corner of corners) assert.ok((marks.get(corner) ?? 0) >= SEEDS.length / 100, `corner "${corner}" reached by ${marks.get(corner) ?? 0} seeds of ${SEEDS.length}`)
  }
})

/**
 * A pool NAME of capacity CAPACITY (`c…`) on a redis-server of its own, the pools' Lua loaded with the
 * driven clock (set a year on): `pool(op, ...args)` calls it; `M`, `Z` its keys.
 */
async function modelPool(t, name, capacity) {
  const { send } = await modelRedis(t)
  const { scriptsFor, poolKeysOf } = await import(pathToFileURL(path.join(process.cwd(), 'node_modules/holdfast/dist/redis/scripts.js')).href)
  const { library } = scriptsFor(true, { clockKey: CLOCK })
  await send(['FUNCTION', 'LOAD', 'REPLACE', library.source])
  const [M, Z] = poolKeysOf('holdfast', name)
  const pool = (op, ...rest) => send(['FCALL', library.functions.pool, 2, M, Z, op, capacity, `${GRACE} PUBLISH ${BEAT}`, ...rest])
  await send(['SET', CLOCK, Date.now() + 365 * DAY])
  return { send, pool, M, Z }
}

test('#16: tombstones that end together are forgotten at most 1,000 a call, never in one long call that blocks Redis; one past its end and not forgotten yet is gone to a claim of its id (POOL-03)', async t => {
  const N = 3_000
  const { send, pool, M, Z } = await modelPool(t, 'tombs', `c${N}`)
  await Promise.all(Array.from({ length: N }, (_, i) => pool('claim', `order-${i}`, 1, 0, 0, 1, 'f', 'chan').then(() => pool('release', `order-${i}`))))
  // The zset: a tombstone's end for each id, and `z`.
  assert.equal(await send(['ZCARD', Z]), N + 1)
  await send(['INCRBY', CLOCK, DAY + 1])
  assert.equal(await pool('remaining'), String(N), 'tombstones do not hold an answer back')
  const forgotten = N + 1 - (await send(['ZCARD', Z]))
  assert.ok(forgotten > 0 && forgotten <= 1_000, `one call forgot ${forgotten} tombstones of ${N} past their end`)
  // One not forgotten yet: its id is new (another n, which its record would refuse).
  const [last] = await send(['ZRANGE', Z, -2, -2])
  assert.match(await send(['HGET', M, `#${last.slice(1)}`]), /^E /)
  assert.deepEqual(await pool('claim', last.slice(1), 2, 0, 0, 1, 'f', 'chan'), ['c', String(N - 2)])
  // The next calls forget the rest, at most 1,000 each.
  let calls = 0
  while ((await send(['ZCARD', Z])) > 2) {
    assert.equal(await pool('remaining'), String(N - 2))
    assert.ok(++calls <= Math.ceil(N / 1_000), `${calls} calls and tombstones left`)
  }
  assert.match(await send(['HGET', M, `#${last.slice(1)}`]), /^O 2 /, 'the new claim stands')
})

test('POOL-01/POOL-03: a cancel undoes only a claim its own asks put in Redis and nobody else was answered; another ask of the id, asked again, never makes that claim its own', async t => {
  // Each claim's asks and its cancel carry its ask id (the last argument). A claim answered `c` to its
  // first asker was written unseen, and an ask again (`r`) neither marked it seen nor told who asked:
  // another process whose first ask never reached Redis, asked again (answered `k`, lost) and then
  // gave up, cancelled the claim the first process had been told it holds.
  const { send, pool, M, Z } = await modelPool(t, 'asks', 'c3')
  // X is answered; Y's ask again is answered the same (lost): Y's cancel leaves X's claim alone.
  assert.deepEqual(await pool('claim', 'order-1', 2, 0, 0, 1, 'f', 'model:w:x', 'x1'), ['c', '1'])
  assert.deepEqual(await pool('claim', 'order-1', 2, 0, 0, 1, 'r', 'model:w:y', 'y1'), ['k', '1', 1])
  assert.equal(await pool('cancel', 'order-1', 'y1'), 'n')
  assert.equal(await pool('remaining'), '1', 'the claim X was answered stands')
  // A claim whose answers all went to its own asks, lost: its cancel undoes it (what it is for).
  assert.deepEqual(await pool('claim', 'order-2', 1, 0, 0, 1, 'f', 'model:w:x', 'x2'), ['c', '0'])
  assert.deepEqual(await pool('claim', 'order-2', 1, 0, 0, 1, 'r', 'model:w:x', 'x2'), ['k', '0', 1])
  assert.equal(await pool('cancel', 'order-2', 'x2'), 'u')
  // In line: Y's ask again joins X's claim (told so: 1), its cancel leaves it there.
  assert.deepEqual(await pool('claim', 'order-3', 2, -1, 0, 1, 'f', 'model:w:x', 'x3'), ['w', -1, -1])
  assert.deepEqual(await pool('claim', 'order-3', 2, -1, 0, 1, 'r', 'model:w:y', 'y3'), ['w', -1, -1, 1])
  assert.equal(await pool('cancel', 'order-3', 'y3'), 'n')
  assert.equal(await pool('inspect').then(i => i[3]), 1, "X's claim is still in line")
  // Served at the release; X's answer on its heartbeat (b) is lost: X's cancel undoes it, nobody else told.
  assert.equal(await pool('release', 'order-1'), 1)
  assert.deepEqual(await pool('claim', 'order-3', 2, -1, 0, 1, 'b', 'model:w:x', 'x3'), ['k', '1', 1])
  assert.equal(await pool('cancel', 'order-3', 'x3'), 'u')
  // Served again; Y, which joined, is answered it (B): X's cancel leaves it.
  assert.deepEqual(await pool('claim', 'order-4', 3, -1, 0, 1, 'f', 'model:w:x', 'x4'), ['c', '0'])
  assert.equal(await pool('release', 'order-4'), 1)
  assert.deepEqual(await pool('claim', 'order-5', 2, 0, 0, 1, 'f', 'model:w:z', 'z5'), ['c', '1'])
  assert.deepEqual(await pool('claim', 'order-6', 2, -1, 0, 1, 'f', 'model:w:x', 'x6'), ['w', -1, -1])
  assert.deepEqual(await pool('claim', 'order-6', 2, -1, 0, 1, 'r', 'model:w:y', 'y6'), ['w', -1, -1, 1])
  assert.equal(await pool('release', 'order-5'), 1)
  assert.deepEqual(await pool('claim', 'order-6', 2, -1, 0, 1, 'B', 'model:w:y', 'y6'), ['k', '1', 1])
  assert.equal(await pool('cancel', 'order-6', 'x6'), 'n')
  assert.equal(await pool('remaining'), '1', 'the claim Y was answered stands')
  // Records of the layout before owners (none kept, as a store of before writes them) are read as
  // owned by no claim: asked, answered; no cancel takes them out; a release, and being served, do.
  const clock = Number(await send(['GET', CLOCK]))
  await send(['HSET', M, '#old-1', `O 1 0 0 ${clock + DAY} 0 0`])
  await send(['HINCRBY', M, 'u', 1])
  await send(['HINCRBY', M, 'o', 1])
  await send(['HINCRBY', M, 'k', 1])
  assert.deepEqual(await pool('claim', 'old-1', 1, 0, 0, 1, 'r', 'model:w:y', 'y7'), ['k', '0', 1])
  assert.equal(await pool('cancel', 'old-1', 'y7'), 'n')
  assert.equal(await pool('release', 'old-1'), 1)
  const ticket = await send(['HINCRBY', M, 't', 1])
  await send(['HSET', M, '#old-2', 'W 2 -1 0 1 model:w:x'])
  await send(['ZADD', Z, ticket - 2 ** 52, 'qold-2', clock + BEAT, 'wold-2'])
  await send(['HINCRBY', M, 'q', 1])
  assert.deepEqual(await pool('claim', 'old-2', 2, -1, 0, 1, 'r', 'model:w:y', 'y8'), ['w', -1, -1, 1])
  assert.equal(await pool('cancel', 'old-2', 'y8'), 'n')
  assert.equal(await pool('release', 'order-6'), 1)
  assert.match(await send(['HGET', M, '#old-2']), /^O 2 1 0 \d+ 0 \d+$/, 'served in the layout it was written in')
  assert.deepEqual(await pool('claim', 'old-2', 2, -1, 0, 1, 'B', 'model:w:y', 'y8'), ['k', '1', 1])
  assert.deepEqual(await pool('inspect'), ['3', '1', 1, 0])
})

test('POOL-04: a process whose claim left the line unknown to it (no heartbeat reached Redis), and whose id another claim then put in line, never makes that claim wait longer: it is told it joined it', async t => {
  // X's heartbeats did not reach Redis for a BEAT (a connection down): its claim left the line. Y, of
  // another process, claimed the id, waiting 1 s. X's process, back, asked where its claim stands (b):
  // answered waiting, as if the claim were still its own, so that a caller of X's with a longer wait
  // (e) made Y's claim wait that long (here without limit): Y's caller, told it waits 1 s, waited on.
  const { send, pool } = await modelPool(t, 'owners', 'c2')
  assert.deepEqual(await pool('claim', 'held', 2, 0, 0, 1, 'f', 'model:w:z', 'z1'), ['c', '0'])
  assert.deepEqual(await pool('claim', 'order-1', 1, -1, 0, 1, 'f', 'model:w:x', 'x1'), ['w', -1, -1])
  await send(['INCRBY', CLOCK, BEAT + 1])
  assert.deepEqual(await pool('inspect'), ['2', '0', 1, 0], "X's claim left the line")
  assert.deepEqual(await pool('claim', 'order-1', 1, 1_000, 0, 1, 'f', 'model:w:y', 'y1'), ['w', 1_000, -1])
  // X's process asks, as the claim's owner it believes it is: it is told it joined another's claim.
  assert.deepEqual(await pool('claim', 'order-1', 1, -1, 0, 1, 'b', 'model:w:x', 'x1'), ['w', 1_000, -1, 1])
  assert.deepEqual(await pool('claim', 'order-1', 1, -1, 0, 1, 'e', 'model:w:x', 'x1'), ['w', 1_000, -1, 1])
  // Y's wait runs out when Y's caller was told.
  await send(['INCRBY', CLOCK, 1_001])
  assert.deepEqual(await pool('claim', 'order-1', 1, 0, 0, 1, 'b', 'model:w:y', 'y1'), ['g', '0'], 'its wait ran out: it left the line')
  assert.deepEqual(await pool('inspect'), ['2', '0', 1, 0])
  // Its own process's longer wait still counts (e by its owner).
  assert.deepEqual(await pool('claim', 'order-2', 1, 1_000, 0, 1, 'f', 'model:w:y', 'y2'), ['w', 1_000, -1])
  assert.deepEqual(await pool('claim', 'order-2', 1, 5_000, 0, 1, 'e', 'model:w:y', 'y2'), ['w', 5_000, -1])
})

test('POOL-01/02: a confirm by id of a claim whose own answer was lost is never undone by that claim\'s cancel: the claim stands, confirmed', async t => {
  // The claim took its units; its answer was lost (a connection dropped) and its process, given up,
  // cancels it, which undoes a claim nobody was told of. A confirm by id meanwhile (another process's)
  // was answered done, and the cancel then undid the claim: the confirm's caller believed it held
  // units back in the pool, as 830f01b fixed for a local store. A confirm tells of the claim: it stands.
  const { send, pool } = await modelPool(t, 'confirms', 'c3')
  // Its answer lost; confirmed by id; its process's cancel.
  assert.deepEqual(await pool('claim', 'cart', 2, 0, 60_000, 1, 'f', 'model:w:x', 'x1'), ['c', '1'])
  assert.equal(await pool('confirm', 'cart'), 'd')
  assert.equal(await pool('cancel', 'cart', 'x1'), 'n', 'the confirmed claim stands')
  assert.equal(await pool('remaining'), '1')
  await send(['INCRBY', CLOCK, 60_001])
  assert.equal(await pool('remaining'), '1', 'confirmed: its ttl no longer gives its units back')
  // A claim without a ttl, served from the line (its ack deadline): the same.
  assert.deepEqual(await pool('claim', 'order', 1, -1, 0, 1, 'f', 'model:w:x', 'x2'), ['c', '0'])
  assert.deepEqual(await pool('claim', 'next', 1, -1, 0, 1, 'f', 'model:w:x', 'x3'), ['w', -1, -1])
  assert.equal(await pool('release', 'order'), 1)
  assert.equal(await pool('confirm', 'next'), 'd')
  assert.equal(await pool('cancel', 'next', 'x3'), 'n')
  assert.equal(await pool('remaining'), '0')
  // Unconfirmed, its cancel still undoes it (what it is for).
  assert.equal(await pool('release', 'next'), 1)
  assert.deepEqual(await pool('claim', 'lost', 1, 0, 0, 1, 'f', 'model:w:x', 'x4'), ['c', '0'])
  assert.equal(await pool('cancel', 'lost', 'x4'), 'u')
  assert.equal(await pool('remaining'), '1')
})

test('POOL-02/POOL-03: a release asked again after its answer was lost answers released, as its first try did: its ask id is kept in the tombstone it left; another release answers that it held nothing', async t => {
  // Asked again (by the store after a cut; by ioredis, which sends again what a cut left unanswered),
  // a release that had run found its own tombstone and answered 0: `release(id)` said false of a claim
  // it had just released.
  const { send, pool, M } = await modelPool(t, 'releases', 'c5')
  assert.deepEqual(await pool('claim', 'order', 2, 0, 0, 1, 'f', 'model:w:x', 'x1'), ['c', '3'])
  assert.equal(await pool('release', 'order', 'r1'), 1)
  assert.equal(await pool('release', 'order', 'r1'), 1, 'the same release, asked again')
  assert.equal(await pool('release', 'order', 'r2'), 0, 'another release')
  assert.equal(await pool('release', 'order'), 0, 'a release without an ask id (a store of before)')
  assert.deepEqual(await pool('claim', 'order', 2, 0, 0, 1, 'f', 'model:w:x', 'x2'), ['k', '3', 0], 'the id still answers its first outcome')
  assert.equal(await pool('remaining'), '5')
  // An id drawn by its process (not remembered) leaves nothing: its release asked again answers 0
  // (the store asks it again only after a reply that ran nothing: pool.ts).
  assert.deepEqual(await pool('claim', 'drawn', 1, 0, 0, 0, 'f', 'model:w:x', 'x3'), ['c', '4'])
  assert.equal(await pool('release', 'drawn', 'r3'), 1)
  assert.equal(await send(['HGET', M, '#drawn']), null)
  assert.equal(await pool('release', 'drawn', 'r3'), 0)
  // An id whose claim outlived its 24 hours is forgotten once released, but for the release's retry: 20 s.
  assert.deepEqual(await pool('claim', 'old', 1, 0, 0, 1, 'f', 'model:w:x', 'x4'), ['c', '4'])
  await send(['INCRBY', CLOCK, DAY + 1])
  assert.equal(await pool('release', 'old', 'r4'), 1)
  await send(['INCRBY', CLOCK, 19_999])
  assert.equal(await pool('release', 'old', 'r4'), 1, 'the same release, asked again')
  assert.equal(await pool('release', 'old', 'r5'), 0)
  await send(['INCRBY', CLOCK, 1])
  assert.equal(await pool('release', 'old', 'r4'), 0, 'past the 20 s, the id is forgotten')
  assert.deepEqual(await pool('claim', 'old', 3, 0, 0, 1, 'f', 'model:w:x', 'x5'), ['c', '2'], 'a new claim of the id')
})

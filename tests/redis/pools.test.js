// Pools (#16) kept in Redis: POOL-01..04 against a real redis-server, two stores (two clients, as two
// processes would have) sharing pools through Redis. The client is ioredis or node-redis
// (HOLDFAST_REDIS_CLIENT); the runner runs this file under Node 20, Node 24 and Bun with each. The
// processes, restart and Cluster cases are in pool-processes.test.js and cluster.test.js.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openRedisStore, InvalidError, CancelledError, ClosedError, LostError, StorageError } from 'holdfast/redis'
import { manualClock } from 'holdfast/testing'
import { memoryStorage, openStore } from 'holdfast'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { startRedis, redisClient, commandClient, raw, sleep, later, commandStats, freePort, proxyTo } from './helpers.js'

async function twoStores(t, options = {}, server) {
  server ??= await startRedis(t)
  const a = await openRedisStore({ redis: await redisClient(t, server.url), ...options })
  const b = await openRedisStore({ redis: await redisClient(t, server.url), ...options })
  later(t, () => Promise.all([a.close(), b.close()]))
  return { server, a, b }
}

/** Polls the pool's entry in `store.inspect()` until `check(entry)` holds; rejects after `ms`. */
async function until(store, name, check, ms = 5_000) {
  const end = Date.now() + ms
  for (;;) {
    const entry = (await store.inspect()).find(e => e.kind === 'pool' && e.name === name)
    if (check(entry)) return entry
    if (Date.now() > end) throw new Error(`pool ${name}: condition not met in ${ms}ms; last: ${JSON.stringify(entry)}`)
    await sleep(10)
  }
}

/** `promise`, or a rejection saying `what` 15 s on: bounds an answer only a wake-up can bring (its store's clock never moves). */
function bounded(promise, what) {
  let timer
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(what)), 15_000)))]).finally(() => clearTimeout(timer))
}

test('POOL-01: remaining is never below zero nor above capacity, across two stores; a release hands back its claim, once', async t => {
  const { a, b } = await twoStores(t)
  const sa = a.pool('seats', { capacity: 3 })
  const sb = b.pool('seats', { capacity: 3 })
  const first = await sa.claim(2)
  assert.deepEqual([first.claimed, first.remaining, first.claim.units], [true, 1, 2])
  assert.deepEqual(await sb.claim(2), { claimed: false, remaining: 1 })
  // Twenty claims from both stores racing for the one unit left: exactly one takes it.
  const race = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? sa : sb).claim(1)))
  assert.equal(race.filter(r => r.claimed).length, 1)
  assert.ok(race.every(r => r.remaining === 0))
  assert.equal(await sb.remaining(), 0)
  assert.equal(await first.claim.release(), true)
  assert.equal(await first.claim.release(), false, 'released once')
  assert.equal(await sb.release(first.claim.id), false, 'by id from the other store: nothing left to release')
  await race.find(r => r.claimed).claim.release()
  assert.equal(await sa.remaining(), 3, 'never above the capacity')
  await assert.rejects(sa.claim(4), e => e instanceof InvalidError && /1 to 3/.test(e.message) && /4/.test(e.message))
  // Counts are exact up to 2^53-1 (the Lua's numbers are doubles, written as whole numbers).
  const big = a.pool('big', { capacity: 2 ** 53 - 1 })
  assert.equal((await big.claim(2 ** 53 - 3)).remaining, 2)
  assert.equal((await b.pool('big', { capacity: 2 ** 53 - 1 }).claim(1)).remaining, 1)
  assert.equal(await big.remaining(), 1)
})

test('POOL-01: the capacity is fixed by first use, across stores (another is InvalidError naming both); resize never goes below what is claimed', async t => {
  const { a, b } = await twoStores(t)
  const seats = a.pool('flight-aa123', { capacity: 180 })
  const held = await seats.claim(150)
  const other = b.pool('flight-aa123', { capacity: 200 })
  await assert.rejects(other.claim(1), e => e instanceof InvalidError && e.message.includes('200') && e.message.includes('180'))
  await assert.rejects(other.remaining(), InvalidError)
  await assert.rejects(seats.resize(149), e => e instanceof InvalidError && e.message.includes('149') && e.message.includes('150'))
  await seats.resize(160)
  assert.equal(await seats.remaining(), 10)
  // A handle answered before keeps working after another store's resize; a new one must name the new capacity.
  assert.equal(await b.pool('flight-aa123', { capacity: 160 }).remaining(), 10)
  await b.pool('flight-aa123', { capacity: 160 }).resize(170)
  assert.equal(await seats.remaining(), 20, 'a checked handle follows the pool')
  await held.claim.release()
  assert.deepEqual(
    (await b.inspect()).filter(e => e.kind === 'pool'),
    [{ kind: 'pool', name: 'flight-aa123', capacity: 170, remaining: 170, claims: 0, waiting: 0 }],
  )
  // Without a capacity, the pool Redis has (as over a connection).
  assert.equal((await b.pool('flight-aa123').claim(20)).remaining, 150)
})

test('POOL-01, differential seed 1: a claim with an id for more than a resize left is refused in the words of a store in process, the pool\'s ("pool seats: a claim takes 1 to 1 units ..."), not naming the claim', async t => {
  const { a } = await twoStores(t)
  const local = await openStore({ storage: memoryStorage() })
  later(t, () => local.close())
  const refusal = async store => {
    const seats = store.pool('seats', { capacity: 4 })
    await seats.resize(1)
    return seats.claim(2, { id: 'order-1' }).then(
      () => 'claimed',
      e => [e.code, e.message],
    )
  }
  const want = await refusal(local)
  assert.deepEqual(want, ['invalid', 'pool seats: a claim takes 1 to 1 units (its capacity), not 2'])
  assert.deepEqual(await refusal(a), want)
})

test('POOL-01: options are checked and named (typed errors)', async t => {
  const { a } = await twoStores(t)
  await assert.rejects(a.pool('nothing-here').remaining(), e => e instanceof InvalidError && e.message === 'pool nothing-here: no such pool (its first use names its capacity)')
  assert.throws(() => a.pool('seats', { capacity: 1.5 }), e => e instanceof InvalidError && /1.5/.test(e.message))
  assert.throws(() => a.pool('Seats!', { capacity: 3 }), InvalidError)
  assert.throws(() => a.pool('seats', { capacity: 3, limit: 2 }), e => e instanceof InvalidError && /limit/.test(e.message))
  const seats = a.pool('seats', { capacity: 3 })
  await assert.rejects(seats.claim(0), e => e instanceof InvalidError && /pool seats/.test(e.message))
  await assert.rejects(seats.claim(1, { wiat: 5 }), e => e instanceof InvalidError && /wiat/.test(e.message))
  await assert.rejects(seats.claim(1, { id: '' }), InvalidError)
  await assert.rejects(seats.claim(1, { id: 'x'.repeat(129) }), e => e instanceof InvalidError && /129 bytes/.test(e.message))
  await assert.rejects(seats.claim(1, { ttl: 0 }), e => e instanceof InvalidError && /ttl/.test(e.message))
  await assert.rejects(seats.claim(1, { signal: AbortSignal.abort('no') }), CancelledError)
  await a.close()
  assert.throws(() => a.pool('seats', { capacity: 3 }), ClosedError)
  await assert.rejects(seats.claim(1), ClosedError)
})

test('POOL-03: a claim id asked again, from either store, answers the first claim and never takes units twice', async t => {
  const { server, a, b } = await twoStores(t)
  const sa = a.pool('seats', { capacity: 10 })
  const sb = b.pool('seats', { capacity: 10 })
  // Asked from both stores at once (a retry racing the first): one claim, one outcome.
  const [first, second] = await Promise.all([sa.claim(2, { id: 'order-7' }), sb.claim(2, { id: 'order-7' })])
  assert.deepEqual([first.claimed, second.claimed, first.remaining, second.remaining], [true, true, 8, 8])
  assert.equal(await sa.remaining(), 8)
  const third = await sb.claim(2, { id: 'order-7' })
  assert.deepEqual([third.claimed, third.remaining, third.claim.id], [true, 8, 'order-7'])
  await assert.rejects(sa.claim(3, { id: 'order-7' }), e => e instanceof InvalidError && e.message.includes('order-7') && e.message.includes('took 2'))
  // Released, the id still answers its first outcome; its claim holds nothing any more.
  assert.equal(await sb.release('order-7'), true)
  const late = await sa.claim(2, { id: 'order-7' })
  assert.deepEqual([late.claimed, late.remaining], [true, 8])
  assert.equal(await late.claim.release(), false)
  assert.equal(await sa.remaining(), 10)
  // Its tombstone lasts 24 hours after the claim, by the server's clock (its end scored in a range of
  // its own, from 2^51); the pool's keys outlive it.
  const [tombScore, time, pttl] = await Promise.all([
    raw(server.port, 'ZSCORE', 'holdfast:{p:seats}:z', 'forder-7'),
    raw(server.port, 'TIME'),
    raw(server.port, 'PTTL', 'holdfast:{p:seats}:m'),
  ])
  const serverMs = Number(/\$\d+\r\n(\d+)/.exec(time)[1]) * 1000
  const day = 24 * 3_600_000
  const tomb = Number(tombScore) - 2 ** 51
  assert.ok(Number(tomb) > serverMs + day - 60_000 && Number(tomb) <= serverMs + day + 1_000, `tombstone until ${tomb}, server at ${serverMs}`)
  assert.ok(pttl > day, `the keys expire in ${pttl}ms`)
  // A claim that took nothing leaves nothing behind: asked again, it is a new claim.
  await sa.claim(10, { id: 'all' })
  assert.deepEqual(await sb.claim(1, { id: 'refused' }), { claimed: false, remaining: 0 })
  await sa.release('all')
  assert.equal((await sb.claim(1, { id: 'refused' })).remaining, 9)
})

test('POOL-04: waiting claims are served in order across stores, the head not overtaken, woken by the release that frees the units (no polling)', async t => {
  // The waiting store's clock never moves: no heartbeat, no timer of its own; only the wake-up can answer it.
  const server = await startRedis(t)
  const a = await openRedisStore({ redis: await redisClient(t, server.url) })
  const b = await openRedisStore({ redis: await redisClient(t, server.url), clock: manualClock() })
  const c = await openRedisStore({ redis: await redisClient(t, server.url), clock: manualClock() })
  later(t, () => Promise.all([a.close(), b.close(), c.close()]))
  const seats = a.pool('seats', { capacity: 5 })
  const held = await seats.claim(4)
  const big = b.pool('seats', { capacity: 5 }).claim(3, { wait: Infinity })
  await until(a, 'seats', e => e?.waiting === 1)
  const small = c.pool('seats', { capacity: 5 }).claim(1, { wait: Infinity })
  await until(a, 'seats', e => e?.waiting === 2)
  assert.equal(await seats.remaining(), 1, 'the small claim behind the head does not take the unit left')
  assert.deepEqual(await seats.claim(1), { claimed: false, remaining: 1 }, 'nor does a claim that would not wait')
  await held.claim.release()
  // Bounded: without the wake-up they would wait for ever (their clocks never move).
  const [bg, sm] = await bounded(Promise.all([big, small]), 'not woken by the release')
  assert.deepEqual([bg.claimed, bg.remaining, sm.claimed, sm.remaining], [true, 2, true, 1])
})

test('POOL-04: every ending of a wait leaves the line: the signal, the wait running out (judged by Redis), the store closing', async t => {
  const { a, b } = await twoStores(t)
  const seats = a.pool('seats', { capacity: 2 })
  const other = b.pool('seats', { capacity: 2 })
  const held = await seats.claim(2)
  const ac = new AbortController()
  const cancelled = other.claim(2, { wait: Infinity, signal: ac.signal })
  await until(a, 'seats', e => e?.waiting === 1)
  const timed = other.claim(1, { wait: 300 })
  await until(a, 'seats', e => e?.waiting === 2)
  ac.abort('changed my mind')
  await assert.rejects(cancelled, e => e instanceof CancelledError && e.cause === 'changed my mind')
  assert.deepEqual(await timed, { claimed: false, remaining: 0 })
  await until(a, 'seats', e => e?.waiting === 0)
  const closing = assert.rejects(other.claim(1, { wait: Infinity }), ClosedError)
  await until(a, 'seats', e => e?.waiting === 1)
  await b.close()
  await closing
  await until(a, 'seats', e => e?.waiting === 0)
  await held.claim.release()
  assert.equal(await seats.remaining(), 2, 'nobody left in line took the units')
})

test('POOL-04: a resize below a claim waiting behind the head answers it claimed: false at once, as it does the head; the head waits on', async t => {
  // The waiting store's clock never moves: only the resize's wake-up can answer the claim behind.
  const server = await startRedis(t)
  const a = await openRedisStore({ redis: await redisClient(t, server.url) })
  const b = await openRedisStore({ redis: await redisClient(t, server.url), clock: manualClock() })
  later(t, () => Promise.all([a.close(), b.close()]))
  const seats = a.pool('seats', { capacity: 10 })
  const held = await seats.claim(5)
  const head = b.pool('seats', { capacity: 10 }).claim(6, { wait: Infinity })
  await until(a, 'seats', e => e?.waiting === 1)
  const behind = b.pool('seats', { capacity: 10 }).claim(9, { wait: Infinity })
  const fits = b.pool('seats', { capacity: 10 }).claim(1, { wait: Infinity })
  await until(a, 'seats', e => e?.waiting === 3)
  await seats.resize(7)
  const [entry] = (await a.inspect()).filter(e => e.name === 'seats')
  assert.deepEqual([entry.capacity, entry.waiting], [7, 2], 'the claim of 9 left the line in the resize; the head and the claim that fits wait on')
  assert.deepEqual(await bounded(behind, 'the claim of 9 units was not told'), { claimed: false, remaining: 2 })
  await held.claim.release()
  const [h, f] = await Promise.all([head, fits])
  assert.deepEqual([h.claimed, h.remaining, f.claimed, f.remaining], [true, 1, true, 0])
})

test('POOL-04: a cancelled head leaves the line and the claim behind it is served at once', async t => {
  const { a, b } = await twoStores(t)
  const seats = a.pool('seats', { capacity: 3 })
  await seats.claim(2)
  const ac = new AbortController()
  const head = b.pool('seats', { capacity: 3 }).claim(3, { wait: Infinity, signal: ac.signal })
  await until(a, 'seats', e => e?.waiting === 1)
  const behind = seats.claim(1, { wait: Infinity })
  await until(a, 'seats', e => e?.waiting === 2)
  ac.abort()
  await assert.rejects(head, CancelledError)
  assert.deepEqual(await behind, { claimed: true, remaining: 0, claim: (await behind).claim })
})

test('a claim with a ttl comes back unless confirmed, judged by the server clock; confirm after it ran out is LostError', async t => {
  // This store's clock never moves: only Redis's can end the ttl.
  const { a } = await twoStores(t, { clock: manualClock() })
  const seats = a.pool('seats', { capacity: 10 })
  const cart = await seats.claim(3, { ttl: 200 })
  const bought = await seats.claim(2, { ttl: 200, id: 'bought' })
  await bought.claim.confirm()
  await sleep(400)
  assert.equal(await seats.remaining(), 8, "the cart's 3 came back; the bought 2 did not")
  await assert.rejects(cart.claim.confirm(), e => e instanceof LostError && /ttl/.test(e.message))
  assert.equal(await cart.claim.release(), false)
  assert.equal(await bought.claim.release(), true)
})

test('POOL-04: units that come back at a ttl serve the head of the line, which asks at that ttl (not at a heartbeat)', async t => {
  const { a, b } = await twoStores(t)
  const seats = a.pool('seats', { capacity: 2 })
  await seats.claim(2, { ttl: 300 })
  const asked = Date.now()
  const waiting = await b.pool('seats', { capacity: 2 }).claim(2, { wait: '10s' })
  assert.equal(waiting.claimed, true)
  assert.ok(Date.now() - asked < 3_000, `served ${Date.now() - asked}ms after it asked (a heartbeat comes every 3.3 s)`)
})

test('POOL-04: the head of the line asks at the earliest ttl at a cost that does not grow with the ids the pool remembers (tombstones, heartbeats)', async t => {
  // The waiting store's clock never moves: its claim asks once (no heartbeat), and that ask is counted.
  const server = await startRedis(t)
  const a = await openRedisStore({ redis: await redisClient(t, server.url) })
  const b = await openRedisStore({ redis: await redisClient(t, server.url), clock: manualClock() })
  later(t, () => Promise.all([a.close(), b.close()]))
  /** The commands inside the first ask of a claim that waits at the head of pool `name`, which has `tombs` tombstones. */
  const headsAsk = async (name, tombs) => {
    const pool = a.pool(name, { capacity: 1_000 })
    for (let i = 0; i < tombs; i += 250) {
      const claims = await Promise.all(Array.from({ length: Math.min(250, tombs - i) }, (_, j) => pool.claim(1, { id: `order-${i + j}` })))
      await Promise.all(claims.map(c => c.claim.release()))
    }
    await pool.claim(1_000)
    const before = await commandStats(server.port)
    void b.pool(name, { capacity: 1_000 }).claim(1, { wait: Infinity }).catch(() => {})
    let after
    while (((after = await commandStats(server.port)).fcall ?? 0) === before.fcall) await sleep(5)
    return Object.fromEntries(Object.keys(after).filter(c => !['info', 'fcall', 'evalsha'].includes(c) && after[c] !== before[c]).map(c => [c, after[c] - (before[c] ?? 0)]))
  }
  const few = await headsAsk('few', 0)
  const many = await headsAsk('many', 2_000)
  assert.deepEqual(many, few, 'the same commands with 2,000 ids remembered as with none')
  assert.ok(few.zrangebyscore <= 2, `a look for due deadlines, and one for the earliest ttl: ${JSON.stringify(few)}`)
})

test('POOL-01/POOL-04: ttls that come due together are ended at most 1,000 a call, never in one long call that blocks Redis; a call answers once all are ended (their units back: a claim of all of them is claimed)', async t => {
  const { server, a } = await twoStores(t)
  const { scriptsFor } = await import(pathToFileURL(path.join(process.cwd(), 'node_modules/holdfast/dist/redis/scripts.js')).href)
  const [M, Z] = ['holdfast:{p:flash}:m', 'holdfast:{p:flash}:z']
  const N = 2_000
  const ttl = 4_000
  const seats = a.pool('flash', { capacity: N })
  const asked = Date.now()
  const claims = await Promise.all(Array.from({ length: N }, () => seats.claim(1, { ttl })))
  assert.ok(Date.now() - asked < ttl && claims.every(c => c.claimed), 'all claimed before the first ttl')
  // Every deadline but tombstones' (ttls, acks, waiters) scores below 2^51: none ended yet.
  const deadlines = async () => Number(await raw(server.port, 'ZCOUNT', Z, 0, `(${2 ** 51}`))
  assert.equal(await deadlines(), N)
  await sleep(ttl + 200)
  // One call, as a store sends it: it ends some, and answers "ask again" while more are due.
  const { send } = await commandClient(t, server.url)
  const one = await send(['FCALL', scriptsFor(true).library.functions.pool, 2, M, Z, 'remaining', `c${N}`, '60000 PUBLISH 10000'])
  const ended = N - (await deadlines())
  assert.ok(ended > 0 && ended <= 1_000, `one call ended ${ended} ttls of ${N} due (answered ${JSON.stringify(one)})`)
  assert.deepEqual(one, ['a'])
  // The store asks again until a call answers: the units of every ttl are back, none counted twice.
  assert.equal(await seats.remaining(), N)
  assert.equal(await deadlines(), 0)
  const all = await seats.claim(N, { wait: 0 })
  assert.deepEqual([all.claimed, all.remaining], [true, 0])
})

test('#16 idle pools: nothing claimed and nobody waiting, a pool costs nothing after the grace; an open claim keeps it', async t => {
  const { server, a } = await twoStores(t, { grace: '1s' })
  const before = await raw(server.port, 'DBSIZE')
  const seats = a.pool('idle', { capacity: 5 })
  const c = await seats.claim(2)
  assert.equal(await raw(server.port, 'PTTL', 'holdfast:{p:idle}:m'), -1, 'an open claim without a ttl: the keys do not expire')
  assert.equal(await raw(server.port, 'PTTL', 'holdfast:{p:idle}:z'), -1)
  await c.claim.release()
  const pttl = await raw(server.port, 'PTTL', 'holdfast:{p:idle}:m')
  assert.ok(pttl > 0 && pttl <= 1_500, `then they expire after the grace: ${pttl}`)
  await sleep(1_700)
  assert.equal(await raw(server.port, 'DBSIZE'), before)
  assert.equal(await seats.remaining(), 5)
})

test('#16 Functions and scripts: a pool works by FCALL and, where the library is gone, by EVALSHA', async t => {
  const { server, a } = await twoStores(t)
  const seats = a.pool('seats', { capacity: 2 })
  assert.equal((await seats.claim(1)).remaining, 1)
  await raw(server.port, 'FUNCTION', 'FLUSH')
  assert.equal((await seats.claim(1)).remaining, 0)
  assert.equal(await seats.remaining(), 0)
})

test('#16: Redis unreachable — claims end with ClosedError after their wait and a grace, never hang; once Redis answers, the given-up claims took nothing', async t => {
  const { server, a } = await twoStores(t)
  const seats = a.pool('down', { capacity: 3 })
  await seats.claim(2)
  const waiting = seats.claim(2, { wait: 800 })
  await until(a, 'down', e => e?.waiting === 1)
  server.kill('SIGSTOP')
  const stoppedAt = Date.now()
  const ended = p => assert.rejects(p, ClosedError).then(() => Date.now() - stoppedAt)
  const [now, waited, late] = await Promise.all([ended(seats.claim(1)), ended(waiting), ended(seats.claim(1, { wait: 500, id: 'late' }))])
  assert.ok(now < 3_000, `a claim ended after ${now}ms`)
  assert.ok(waited >= 700 && waited < 3_000, `a waiting claim ended after ${waited}ms`)
  assert.ok(late >= 500 && late < 3_000, `a claim with a wait ended after ${late}ms`)
  server.kill('SIGCONT')
  // Redis ran the claims it had been sent, then the cancels sent when they were given up: undone.
  const end = Date.now() + 5_000
  while ((await seats.remaining()) !== 1) {
    assert.ok(Date.now() < end, 'the given-up claims still hold units')
    await sleep(20)
  }
  assert.equal((await seats.claim(1, { id: 'late' })).remaining, 0, 'an id given up on is a new claim')
})

test('POOL-03/POOL-04: a claim id asked from another store while it waits joins it: both are answered its outcome, and the joiner\'s signal does not take it out of the line', async t => {
  const { server, a, b } = await twoStores(t)
  const c = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => c.close())
  const seats = a.pool('seats', { capacity: 2 })
  const held = await seats.claim(2)
  const first = seats.claim(2, { id: 'order-9', wait: '30s' })
  await until(a, 'seats', e => e?.waiting === 1)
  const ac = new AbortController()
  const joiner = b.pool('seats', { capacity: 2 }).claim(2, { id: 'order-9', wait: '30s', signal: ac.signal })
  const second = c.pool('seats', { capacity: 2 }).claim(2, { id: 'order-9', wait: '30s' })
  // Both joined (told they wait): their asks came back.
  assert.equal(await c.pool('seats', { capacity: 2 }).remaining(), 0)
  await b.pool('seats', { capacity: 2 }).remaining()
  ac.abort()
  await assert.rejects(joiner, CancelledError)
  assert.equal((await a.inspect()).find(e => e.name === 'seats').waiting, 1, 'still in line')
  await held.claim.release()
  const [x, y] = await Promise.all([first, second])
  assert.deepEqual([x.claimed, x.remaining, y.claimed, y.remaining], [true, 0, true, 0])
  assert.equal(await seats.remaining(), 0, 'taken once')
})

test('POOL-04: callers joined to one claim id are each answered by their own signal and wait, in one store and from another; the claim stays in line while one still wants it', async t => {
  // The callers' store: its clock moves only when told (their waits), Redis answers only by wake-ups.
  const server = await startRedis(t)
  const clock = manualClock()
  const a = await openRedisStore({ redis: await redisClient(t, server.url) })
  const b = await openRedisStore({ redis: await redisClient(t, server.url), clock })
  later(t, () => Promise.all([a.close(), b.close()]))
  const seats = a.pool('seats', { capacity: 2 })
  const held = await seats.claim(2)
  const mine = b.pool('seats', { capacity: 2 })
  const ac = new AbortController()
  const first = mine.claim(2, { id: 'order-5', wait: Infinity, signal: ac.signal })
  await until(a, 'seats', e => e?.waiting === 1)
  const short = mine.claim(2, { id: 'order-5', wait: 1_000 })
  const long = mine.claim(2, { id: 'order-5', wait: Infinity })
  ac.abort('gone')
  await assert.rejects(first, e => e instanceof CancelledError && e.cause === 'gone')
  clock.advance(1_000)
  assert.deepEqual(await short, { claimed: false, remaining: 0 }, 'the short wait ran out')
  assert.equal((await until(a, 'seats', e => e !== undefined)).waiting, 1, 'still in line for the caller that waits')
  await held.claim.release()
  const served = await long
  assert.deepEqual([served.claimed, served.remaining, served.claim.id], [true, 0, 'order-5'])

  // A caller that joins with a longer wait than the first's: Redis is told, the claim waits as long,
  // and the first is answered at its own wait.
  await served.claim.release()
  await seats.claim(2, { id: 'held' })
  const brief = mine.claim(2, { id: 'order-6', wait: 60_000 })
  await until(a, 'seats', e => e?.waiting === 1)
  const patient = mine.claim(2, { id: 'order-6', wait: Infinity })
  const end = Date.now() + 5_000
  while (!/^W 2 -1 /.test(await raw(server.port, 'HGET', 'holdfast:{p:seats}:m', '#order-6'))) {
    assert.ok(Date.now() < end, 'Redis was not told the longer wait')
    // Joined before store b read Redis's answer that the claim waits, the longer wait is sent from a
    // timer due at once on b's clock (as its next question), which this clock runs when moved: by 0.
    clock.advance(0)
    await sleep(10)
  }
  clock.advance(60_000)
  assert.deepEqual(await brief, { claimed: false, remaining: 0 })
  await seats.release('held')
  const got = await patient
  assert.equal(got.claimed, true)

  // Joined from another store, a caller is answered at its own wait too; the claim is the first's.
  await got.claim.release()
  const again = await seats.claim(2)
  const owner = seats.claim(2, { id: 'order-7', wait: Infinity })
  await until(a, 'seats', e => e?.waiting === 1)
  const visitor = mine.claim(2, { id: 'order-7', wait: 5_000 })
  await mine.remaining() // after the join's answer (one connection, in order)
  clock.advance(5_000)
  assert.deepEqual(await bounded(visitor, 'the visitor waited past its own wait'), { claimed: false, remaining: 0 })
  assert.equal((await a.inspect()).find(e => e.name === 'seats').waiting, 1, 'the claim stays in line for its owner')
  await again.claim.release()
  assert.equal((await owner).claimed, true)
})

test('#16: an uncontended claim is one command to Redis (FCALL), and so is its release; what runs inside is listed', async t => {
  const { server, a } = await twoStores(t)
  const seats = a.pool('cost', { capacity: 1_000 })
  await (await seats.claim(1)).claim.release()
  await sleep(50)
  const before = await commandStats(server.port)
  for (let i = 0; i < 20; i++) await (await seats.claim(1)).claim.release()
  await sleep(50)
  const after = await commandStats(server.port)
  const delta = Object.fromEntries(Object.keys(after).filter(c => c !== 'info' && after[c] !== before[c]).map(c => [c, (after[c] - (before[c] ?? 0)) / 20]))
  assert.equal(delta.fcall, 2, 'one FCALL to claim, one to release')
  assert.equal(delta.evalsha ?? 0, 0)
  // Inside each: the clock, the pool's counts, a look for due deadlines, the claim's record, the counts
  // written; the claim makes the keys permanent (an open claim without a ttl), the release lets them expire.
  assert.deepEqual(delta, { fcall: 2, time: 2, hmget: 2, zrangebyscore: 2, hget: 2, hlen: 1, hset: 3, hdel: 1, persist: 2, pexpireat: 2 })
})

test('POOL-04: a wait under 1 ms is no wait, as on a local store: the claim is a try, answered claimed: false at once, never put in line', async t => {
  // It was sent to Redis as a wait of 1 ms: the claim joined the line (in the way of claims behind it,
  // and served if units came back within that ms), and was answered only at its next ask.
  // The claiming store's clock never moves: a claim put in line is never answered.
  const server = await startRedis(t)
  const a = await openRedisStore({ redis: await redisClient(t, server.url) })
  const b = await openRedisStore({ redis: await redisClient(t, server.url), clock: manualClock() })
  later(t, () => Promise.all([a.close(), b.close()]))
  const held = await a.pool('seats', { capacity: 2 }).claim(2)
  const seats = b.pool('seats', { capacity: 2 })
  for (const wait of [0, 0.5, 0.999]) {
    assert.deepEqual(await bounded(seats.claim(1, { wait }), `wait ${wait}: the claim waited in line`), { claimed: false, remaining: 0 }, `wait ${wait}`)
    assert.deepEqual(await bounded(seats.claim(1, { wait, id: `order-${wait}` }), `wait ${wait}, an id: the claim waited in line`), { claimed: false, remaining: 0 })
  }
  assert.equal((await until(a, 'seats', e => e !== undefined)).waiting, 0)
  await held.claim.release()
})

test('POOL-04: a waiting claim whose heartbeat Redis refuses (an error reply) rejects StorageError and leaves the line in Redis too: the units freed next are not served to it', async t => {
  // It was forgotten here only: its place in Redis's line stayed until its heartbeat's deadline (10 s),
  // in the way of the claims behind it, and a release meanwhile served it the units, held for nobody
  // until its ack deadline. The waiting store's user may not run ZSCORE, which a heartbeat at the head of
  // the line runs (looking up when the first open claim's ttl ends) and a claim behind the head, or a
  // cancel, does not. Its clock moves only when told: its heartbeat is sent when the test says.
  const server = await startRedis(t)
  const a = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => a.close())
  // ZSCORE is taken from its user once it opened: a store opens only if its user may run every command
  // of the scripts (see the test of PUBLISH below), and an ACL may change after.
  assert.equal(await raw(server.port, 'ACL', 'SETUSER', 'nozscore', 'on', '>secret', '~*', '&*', '+@all'), 'OK')
  const clock = manualClock()
  const b = await openRedisStore({ redis: await redisClient(t, `redis://nozscore:secret@127.0.0.1:${server.port}`), clock })
  later(t, () => b.close())
  assert.equal(await raw(server.port, 'ACL', 'SETUSER', 'nozscore', '-zscore'), 'OK')
  const seats = a.pool('seats', { capacity: 2 })
  const held = await seats.claim(2, { ttl: '1h' })
  const ac = new AbortController()
  const head = seats.claim(1, { wait: Infinity, signal: ac.signal })
  await until(a, 'seats', e => e?.waiting === 1)
  const refused = b.pool('seats', { capacity: 2 }).claim(1, { wait: Infinity }).catch(e => e)
  await until(a, 'seats', e => e?.waiting === 2)
  ac.abort()
  await assert.rejects(head, CancelledError)
  await until(a, 'seats', e => e?.waiting === 1)
  // Now at the head: its heartbeat (every 10 s / 3) runs ZSCORE, refused.
  clock.advance(3_334)
  const answer = await bounded(refused, 'the refused heartbeat was not answered')
  assert.ok(answer instanceof StorageError && /can't run this command/.test(answer.message), String(answer))
  await until(a, 'seats', e => e?.waiting === 0, 1_000)
  await held.claim.release()
  assert.equal(await seats.remaining(), 2, 'nobody in line took the units')
})

test('POOL-01: a claim id asked from another store, which gives up before its answer, never undoes the claim the first store was answered (nor takes it out of the line)', async t => {
  // A cancel undid any open claim of its id that no later ask had been answered, whoever put it in
  // Redis: a store whose ask of the id was refused there (another n), or never reached Redis, and
  // which then gave up on it (its signal, its wait, no answer), gave back the units of the claim
  // another store held, and took a claim another store had in line out of it.
  const { a, b } = await twoStores(t)
  const sa = a.pool('seats', { capacity: 3 })
  const sb = b.pool('seats', { capacity: 3 })
  const held = await sa.claim(2, { id: 'order-1' })
  assert.equal(held.claimed, true)
  const ac = new AbortController()
  const asked = sb.claim(1, { id: 'order-1', signal: ac.signal })
  ac.abort()
  await assert.rejects(asked, CancelledError)
  // b's commands run in order: its cancel ran before this.
  assert.equal(await sb.remaining(), 1, "a's claim still holds its units")
  assert.deepEqual(await sb.claim(2), { claimed: false, remaining: 1 }, 'never oversold')
  const waiting = sa.claim(2, { id: 'order-2', wait: Infinity })
  await until(a, 'seats', e => e?.waiting === 1)
  const ac2 = new AbortController()
  const asked2 = sb.claim(1, { id: 'order-2', wait: Infinity, signal: ac2.signal })
  ac2.abort()
  await assert.rejects(asked2, CancelledError)
  assert.equal(await sb.remaining(), 1)
  assert.equal((await until(a, 'seats', e => e !== undefined)).waiting, 1, "a's claim is still in line")
  await held.claim.release()
  const served = await bounded(waiting, "a's claim in line was not served")
  assert.deepEqual([served.claimed, served.remaining], [true, 1])
  await served.claim.release()
})

test('POOL-04: a wait of a fraction of a ms counts its whole ms, as on a local store (1000.5 ms is 1000): Redis is told 1000, and the claim asks when that ran out', async t => {
  // It was rounded up (1.5 ms sent as 2, 1000.5 as 1001): Redis kept the claim in line a ms longer
  // than a local store's engine, which takes a wait in whole ms, rounded down. The claiming store's
  // clock moves only when told: it asks again when Redis said the wait ends, plus 5 ms (1005 ms).
  const server = await startRedis(t)
  const a = await openRedisStore({ redis: await redisClient(t, server.url) })
  const clock = manualClock()
  const b = await openRedisStore({ redis: await redisClient(t, server.url), clock })
  later(t, () => Promise.all([a.close(), b.close()]))
  const held = await a.pool('seats', { capacity: 2 }).claim(2)
  const claim = b.pool('seats', { capacity: 2 }).claim(1, { wait: 1000.5 })
  await until(a, 'seats', e => e?.waiting === 1)
  // Redis (its own clock) ends the wait: the claim learns it at its next ask.
  await until(a, 'seats', e => e?.waiting === 0, 5_000)
  clock.advance(1005)
  assert.deepEqual(await bounded(claim, 'not asked at 1005 ms: Redis was told a longer wait'), { claimed: false, remaining: 0 })
  await held.claim.release()
})

test('POOL-04: a claim put in line whose first ask Redis refuses (an error reply) leaves nothing behind: its process was told it failed', async t => {
  // The script wrote the claim in line and then ran the command refused (a claim at the head looks up
  // when the first open claim's ttl ends, ZSCORE), so the call ended without counting it: the claim
  // stood in the line, uncounted, served units when it came first, and at its heartbeat's deadline left
  // the pool's count of waiters at -1, which made every later claim, with units free, wait or be
  // refused. The store's user may not run ZSCORE.
  const server = await startRedis(t)
  const a = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => a.close())
  // Taken from its user once it opened (see the test before).
  assert.equal(await raw(server.port, 'ACL', 'SETUSER', 'nozscore', 'on', '>secret', '~*', '&*', '+@all'), 'OK')
  const b = await openRedisStore({ redis: await redisClient(t, `redis://nozscore:secret@127.0.0.1:${server.port}`) })
  later(t, () => b.close())
  assert.equal(await raw(server.port, 'ACL', 'SETUSER', 'nozscore', '-zscore'), 'OK')
  const seats = a.pool('seats', { capacity: 2 })
  const held = await seats.claim(2, { ttl: '1h' })
  const refused = await b.pool('seats', { capacity: 2 }).claim(1, { wait: Infinity, id: 'order-1' }).catch(e => e)
  assert.ok(refused instanceof StorageError && /can't run this command/.test(refused.message), String(refused))
  assert.equal(await raw(server.port, 'HEXISTS', 'holdfast:{p:seats}:m', '#order-1'), 0, 'the claim refused is not in Redis')
  assert.equal(await raw(server.port, 'ZSCORE', 'holdfast:{p:seats}:z', 'qorder-1'), null, 'nor in its line')
  await held.claim.release()
  const again = await seats.claim(1, { id: 'order-1' })
  assert.deepEqual([again.claimed, again.remaining], [true, 1], 'its id is a new claim, served at once')
})

test('POOL-01: a store whose Redis user may not run a command of the scripts (PUBLISH) refuses to open, naming it: a refusal inside a call left half its writes, units lost for good', async t => {
  // It opened, and a release of its that served the line gave the units back and served the waiter,
  // then was refused at PUBLISH (telling the waiter): the call ended before its counts were written,
  // and rejected StorageError though done. The pool counted the released units claimed for good: with
  // every claim released, 1 of 2 left, a claim of 2 refused. The other commands the same (any of them,
  // a write too, may be refused after a write), so the store checks them all when it opens.
  const server = await startRedis(t)
  // A store that opens (as it did) is closed at the end, so that the test ends.
  const open = async (url, prefix) => openRedisStore({ redis: await redisClient(t, url), prefix }).then(store => (later(t, () => store.close()), store))
  assert.equal(await raw(server.port, 'ACL', 'SETUSER', 'nopub', 'on', '>secret', '~*', '&*', '+@all', '-publish', '-spublish'), 'OK')
  const url = `redis://nopub:secret@127.0.0.1:${server.port}`
  const refused = e => e instanceof StorageError && /^openRedisStore: the Redis user may not run PUBLISH /.test(e.message)
  await assert.rejects(open(url), refused)
  assert.equal(await raw(server.port, 'ACL', 'SETUSER', 'nohlen', 'on', '>secret', '~*', '&*', '+@all', '-hlen'), 'OK')
  const other = `redis://nohlen:secret@127.0.0.1:${server.port}`
  await assert.rejects(open(other), e => e instanceof StorageError && /may not run HLEN /.test(e.message))
  // A user allowed them all on its keys alone opens.
  assert.equal(await raw(server.port, 'ACL', 'SETUSER', 'app', 'on', '>secret', '~app:*', '&app:*', '+@all'), 'OK')
  const ok = await open(`redis://app:secret@127.0.0.1:${server.port}`, 'app:locks')
  assert.deepEqual([(await ok.pool('seats', { capacity: 2 }).claim(2)).claimed], [true], 'a user allowed all of them opens')
})

test('POOL-04: a waiting claim\'s cancel that the connection lost before Redis ran it is asked again, the store open or closing: the claim behind it is served at once, not a heartbeat\'s deadline later', async t => {
  // Sent, not awaited: with node-redis (which rejects what was in flight when its socket closes) the
  // cancel was dropped, and the cancelled head stood in the way of the claims behind it until its
  // heartbeat's deadline (10 s), as a lock's waiter did before 080b860; a close() did not wait for it.
  const { server, a } = await twoStores(t)
  for (const closing of [false, true]) {
    const b = await openRedisStore({ redis: await redisClient(t, server.url) })
    later(t, () => b.close())
    const seats = a.pool(`seats-${closing}`, { capacity: 3 })
    const first = await seats.claim(2)
    const ac = new AbortController()
    const head = b.pool(`seats-${closing}`, { capacity: 3 }).claim(3, { wait: Infinity, signal: ac.signal })
    await until(a, `seats-${closing}`, e => e?.waiting === 1)
    const behind = seats.claim(1, { wait: '20s' })
    await until(a, `seats-${closing}`, e => e?.waiting === 2)
    // Redis holds back every write (CLIENT PAUSE WRITE): the cancel waits there, unrun, until the
    // connection is cut.
    assert.equal(await raw(server.port, 'CLIENT', 'PAUSE', '5000', 'WRITE'), 'OK')
    const from = Date.now()
    ac.abort()
    await assert.rejects(head, CancelledError)
    const closed = closing ? b.close() : undefined
    await sleep(200)
    await raw(server.port, 'CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
    assert.equal(await raw(server.port, 'CLIENT', 'UNPAUSE'), 'OK')
    await closed
    const served = await behind
    assert.equal(served.claimed, true)
    assert.ok(Date.now() - from < 3_000, `closing ${closing}: the cancel was asked again, the head left the line (${Date.now() - from}ms)`)
    await Promise.all([first.claim.release(), served.claim.release()])
  }
})

test('POOL-02: a release, and a remaining, asked just before close() are answered what Redis did, not ClosedError: close() waits for what was asked before it, up to its second', async t => {
  // close() gave up at once on every command still unanswered: a claim released just before it was
  // released in Redis, and its caller told ClosedError ("no answer from Redis: the store closed").
  const { a } = await twoStores(t)
  const seats = a.pool('seats', { capacity: 2 })
  const { claim } = await seats.claim(1)
  const released = claim.release().catch(e => e)
  const remaining = seats.remaining().catch(e => e)
  await a.close()
  assert.equal(await released, true)
  assert.equal(await remaining, 2)
})

test('POOL-01: a claim given up while Redis refused its cancel for more than 20 s (READONLY: a failover under way) is undone once Redis takes writes again, not left holding its units for good', async t => {
  // The cancel was asked again for two BEATs (20 s) and then dropped: a claim Redis took whose answer
  // was lost, and that has no ttl, held its units for good, though its caller was told ClosedError
  // and nobody knows its drawn id to release it.
  const server = await startRedis(t)
  const proxy = await proxyTo(t, server.port)
  const clock = manualClock(Date.now())
  const a = await openRedisStore({ redis: await redisClient(t, proxy.url), clock })
  const b = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => Promise.all([a.close(), b.close()]))
  const seats = a.pool('failover', { capacity: 2 })
  const watch = b.pool('failover', { capacity: 2 })
  assert.equal(await seats.remaining(), 2)
  // Redis takes the claim; its answer never reaches the store.
  proxy.mute()
  const claimed = seats.claim(1).catch(e => e)
  for (let end = Date.now() + 5_000; (await watch.remaining()) !== 1; await sleep(10)) assert.ok(Date.now() < end, 'the claim reached Redis')
  // From now on Redis answers every write READONLY (a replica of a primary that is not there), and the
  // connection that lost the answer is cut.
  assert.equal(await raw(server.port, 'REPLICAOF', '127.0.0.1', String(await freePort())), 'OK')
  proxy.cut()
  // The store asks again, gives the claim up after its grace, and cancels it: refused, asked again. 30 s on its clock.
  for (let i = 0; i < 300; i++) {
    clock.advance(100)
    await sleep(5)
  }
  const given = await claimed
  assert.ok(given instanceof ClosedError, String(given))
  assert.equal(await raw(server.port, 'REPLICAOF', 'NO', 'ONE'), 'OK')
  for (let end = Date.now() + 5_000; (await watch.remaining()) !== 2; await sleep(10)) {
    assert.ok(Date.now() < end, 'the given-up claim still holds its unit once Redis takes writes again')
    clock.advance(200)
  }
})

// holdfast/cloudflare in the real workerd runtime: HoldfastObject (a Durable Object hosting a store per
// lock name) and workerStore(env.HOLDFAST) in the test worker (src/cloudflare.js), driven through
// wrangler's test harness as test.mjs is. Run by tests/workerd/run.sh with Node 24.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { pathToFileURL } from 'node:url'
import { until } from './until.mjs'

const { createTestHarness } = await import(process.env.WRANGLER_MODULE ? pathToFileURL(process.env.WRANGLER_MODULE).href : 'wrangler')

let server
before(async () => {
  server = createTestHarness({ root: process.cwd(), workers: [{ configPath: 'wrangler.jsonc' }] })
  await server.listen()
})
after(async () => {
  await server?.close()
})

/** GETs a /cf/ route of the test worker and answers its JSON. */
async function cf(op, params = {}) {
  const response = await server.getWorker().fetch(`/cf/${op}?${new URLSearchParams(params)}`)
  assert.equal(response.status, 200, `${op}: HTTP ${response.status}: ${await response.clone().text()}`)
  return await response.json()
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * Restarts a Durable Object, its storage kept. An object workerd already stopped by itself (idle past
 * its timeout, which a loaded machine can stretch a test's pause into) starts again on its next call
 * all the same, from its storage: that refusal is the restart asked for; any other error fails.
 */
async function restart(className, name) {
  try {
    await server.getWorker().evictDurableObject(className, { name })
  } catch (error) {
    if (!/not currently running/.test(String(error?.message))) throw error
  }
}

test('two concurrent holds of one key through the object are served one at a time, in the order they came (LOCK-01)', async () => {
  const hold = (tag, ms) => cf('hold', { name: 'order', key: 'chat', ms, tag })
  const first = hold('a', 400)
  await sleep(100)
  const second = hold('b', 100)
  await sleep(100)
  const third = hold('c', 100)
  const [a, b, c] = await Promise.all([first, second, third])
  for (const r of [a, b, c]) assert.equal(typeof r.fence, 'number', JSON.stringify(r))
  assert.deepEqual([a.tag, b.tag, c.tag], ['a', 'b', 'c'])
  assert.ok(a.fence < b.fence && b.fence < c.fence, `fences in order: ${a.fence} ${b.fence} ${c.fence}`)
  assert.ok(b.start >= a.end, `b started (${b.start}) after a ended (${a.end})`)
  assert.ok(c.start >= b.end, `c started (${c.start}) after b ended (${b.end})`)
  assert.deepEqual(await cf('inspect', { name: 'order' }), [], 'every key let go')
})

test('#17: five callers of workerStore, each in its own AsyncLocalStorage value, hold one key in turn through the object: each fn sees its own (lock, semaphore; hold, acquire, tryHold)', async () => {
  for (const limit of [undefined, 2]) {
    for (const form of ['hold', 'acquire', 'tryHold']) {
      const answer = await cf('callers', { name: 'callers', key: `${form}-${limit ?? 1}`, form, ...(limit ? { limit } : {}) })
      assert.deepEqual(answer.wrong, [], `${form}, limit ${limit ?? 1}: ${JSON.stringify(answer)}`)
      assert.equal(answer.reports.length, form === 'tryHold' ? 10 : 5)
    }
  }
})

test('tryHold on a held key answers acquired: false; a wait that runs out is InUseError; an aborted wait is CancelledError', async () => {
  const holding = cf('hold', { name: 'try', key: 'job', ms: 600 })
  await sleep(150)
  assert.deepEqual(await cf('tryHold', { name: 'try', key: 'job' }), { acquired: false })
  const asked = Date.now()
  const timedOut = await cf('hold', { name: 'try', key: 'job', wait: '100ms' })
  // It waited (the object's deadlines follow its alarm and workerd's clock, which advances only with
  // I/O: under load the answer can come a little before 100 ms by this process's clock).
  assert.ok(Date.now() - asked >= 50, 'it waited for its 100ms first')
  assert.equal(timedOut.error?.code, 'in_use', JSON.stringify(timedOut))
  assert.equal(timedOut.error.name, 'InUseError')
  const cancelled = await cf('cancel', { name: 'try', key: 'job', ms: 100 })
  assert.equal(cancelled.error?.name, 'CancelledError', JSON.stringify(cancelled))
  assert.equal(cancelled.cause, 'enough')
  const [view] = await cf('inspect', { name: 'try' })
  assert.equal(view.waiting, 0, 'the cancelled hold left the line on the object')
  const held = await holding
  const after = await cf('tryHold', { name: 'try', key: 'job' })
  assert.equal(after.acquired, true)
  assert.ok(after.value.fence > held.fence)
})

test('a workerStore hold whose fn throws rejects with fn\'s own error and has let its key go when it rejects; its signal aborted once granted changes nothing (LOCK-05)', async () => {
  for (const sync of ['1', '0']) {
    const at = { name: 'throwing', key: `k${sync}` }
    const answer = await cf('throwing', { ...at, sync, ms: 1_500, ttl: '1s' })
    assert.deepEqual(answer.error, { name: 'RangeError', message: 'fn failed' }, JSON.stringify(answer))
    assert.deepEqual(answer.seen, { lost: false, aborted: false }, `renewed past its ttl, the signal's abort ignored: ${JSON.stringify(answer)}`)
    assert.deepEqual(await cf('inspect', at), [], 'let go once hold rejected')
  }
})

test('LOCK-06 over Workers RPC: an acquire that comes after its own cancel (the two travel on different stubs, in no order) is answered cancelled at once, never waits in line or is granted for a caller that gave up', async () => {
  const at = { name: 'early-cancel' }
  const request = 'e'.repeat(31) + '1'
  // The cancel finds nothing yet: the object remembers it.
  assert.deepEqual(await cf('raw-cancel', { ...at, key: 'k', request }), { ok: true })
  // The key free: granted before (held to its ttl, the caller having gone), now answered cancelled.
  const free = await cf('raw-acquire', { ...at, key: 'k', ttlMs: 30_000, request })
  assert.equal(free.error?.code, 'cancelled', JSON.stringify(free))
  assert.deepEqual(await cf('inspect', at), [], 'nothing held')
  // The key busy: it waited its whole wait in line before, now answered at once.
  const holder = await cf('raw-acquire', { ...at, key: 'b', ttlMs: 30_000 })
  assert.ok(holder.ok, JSON.stringify(holder))
  const late = 'e'.repeat(31) + '2'
  assert.deepEqual(await cf('raw-cancel', { ...at, key: 'b', request: late }), { ok: true })
  const asked = Date.now()
  const busy = await cf('raw-acquire', { ...at, key: 'b', ttlMs: 30_000, waitMs: 5_000, request: late })
  assert.equal(busy.error?.code, 'cancelled', JSON.stringify(busy))
  assert.ok(Date.now() - asked < 4_000, 'answered without waiting in line')
  const [view] = await cf('inspect', at)
  assert.deepEqual([view.key, view.holders.length, view.waiting], ['b', 1, 0], JSON.stringify(view))
  await cf('raw-release', { ...at, key: 'b', lease: holder.ok.lease })
  // A request id its cancel did not name is served as ever.
  const other = await cf('raw-acquire', { ...at, key: 'k', ttlMs: 30_000 })
  assert.ok(other.ok, JSON.stringify(other))
  await cf('raw-release', { ...at, key: 'k', lease: other.ok.lease })
})

test('LOCK-06 across a restart: a cancel that came before its acquire is kept in the object\'s storage, so an object restarted between the two still answers the acquire cancelled, never grants it to a caller that gave up', async () => {
  // Kept in memory only, the restarted object granted the acquire: a key held to its ttl by nobody.
  const at = { name: 'early-cancel-restart' }
  const request = 'e'.repeat(31) + '3'
  assert.deepEqual(await cf('raw-cancel', { ...at, key: 'k', request }), { ok: true })
  await restart('HoldfastObject', at.name)
  const late = await cf('raw-acquire', { ...at, key: 'k', ttlMs: 30_000, request })
  assert.equal(late.error?.code, 'cancelled', JSON.stringify(late))
  assert.deepEqual(await cf('inspect', at), [], 'nothing held')
  // Another request id is served as ever.
  const other = await cf('raw-acquire', { ...at, key: 'k', ttlMs: 30_000 })
  assert.ok(other.ok, JSON.stringify(other))
  await cf('raw-release', { ...at, key: 'k', lease: other.ok.lease })
})

test('a holder that stops renewing loses the key after its ttl; its late renewal answers lost (LOCK-05)', async () => {
  // The object's RPC directly, as a Worker that died after its grant: a lease of 1 s, never renewed.
  const granted = await cf('raw-acquire', { name: 'stall', key: 'k', ttlMs: 1000 })
  assert.ok(granted.ok?.lease, JSON.stringify(granted))
  assert.deepEqual(await cf('raw-try', { name: 'stall', key: 'k' }), { ok: null }, 'held')
  await sleep(1_300)
  const next = await cf('raw-try', { name: 'stall', key: 'k' })
  assert.ok(next.ok?.fence > granted.ok.fence, `the key went to the next, with a larger fence: ${JSON.stringify(next)}`)
  const late = await cf('raw-renew', { name: 'stall', lease: granted.ok.lease })
  assert.equal(late.error?.code, 'lost', JSON.stringify(late))
  await cf('raw-release', { name: 'stall', lease: next.ok.lease })
})

test('workerStore renews a lease while fn runs, well past its ttl (hold and acquire)', async () => {
  const held = await cf('hold', { name: 'renew', key: 'k', ttl: '1s', ms: 2_500 })
  assert.equal(held.lost, false, JSON.stringify(held))
  assert.ok(held.end - held.start >= 2_400)
  const acquired = await cf('acquire', { name: 'renew', key: 'k', ttl: '1s', ms: 2_000 })
  assert.equal(acquired.lost, false, JSON.stringify(acquired))
  assert.ok(acquired.fence > held.fence)
  assert.deepEqual(await cf('inspect', { name: 'renew' }), [], 'released')
})

test('docs/cloudflare.md: a workerStore hold costs an acquire, a release and a renewal every ttl/3; a renewal the object\'s storage fails to keep (answered storage) is asked again, and the lease is kept (LOCK-02, LOCK-05)', async () => {
  const held = await cf('counted-hold', { ns: 'counting', name: 'cadence', key: 'k', ttl: '3s', ms: 3_500 })
  assert.equal(held.lost, false, JSON.stringify(held))
  assert.deepEqual([held.calls.acquire, held.calls.release, held.calls.renew], [1, 1, 3], `one acquire, one release, a renewal per second of a ttl of 3 s: ${JSON.stringify(held)}`)
  // Renewed at about 1, 2 and 3 s into fn (timers late on a loaded machine, never early).
  held.renewedAt.forEach((at, i) => assert.ok(at >= (i + 1) * 1_000 - 100 && at < (i + 1) * 1_000 + 800, `renewal ${i + 1} at ${at} ms: ${JSON.stringify(held)}`))
  // Two renewals answered storage: asked again (every ttl/10), the lease kept, the hold not lost.
  const refused = await cf('counted-hold', { ns: 'counting', name: 'cadence', key: 'k', ttl: '1s', ms: 1_500, refuse: 2 })
  assert.equal(refused.lost, false, JSON.stringify(refused))
  const [first, second, third] = refused.renewedAt
  assert.ok(second - first < 250 && third - second < 250, `the two refused renewals asked again at once, not a ttl/3 later: ${JSON.stringify(refused)}`)
  assert.ok(refused.calls.renew >= 5, `then renewed every ttl/3: ${JSON.stringify(refused)}`)
  assert.ok(refused.fence > held.fence)
  assert.deepEqual(await cf('inspect', { ns: 'counting', name: 'cadence' }), [], 'released')
})

test('docs/cloudflare.md: a workerStore release whose delete the object\'s storage keeps failing is asked again a few times, then left to its ttl: the key is held until then, and free after (LOCK-05)', async () => {
  const at = { ns: 'counting', name: 'release-given-up', key: 'k' }
  assert.equal((await cf('refuse-deletes', { ...at, n: 4 })).refused, 4)
  const asked = Date.now()
  const held = await cf('counted-hold', { ...at, ttl: '2s', ms: 0 })
  assert.equal(typeof held.fence, 'number', JSON.stringify(held))
  const [view] = await cf('inspect', at)
  assert.equal(view?.holders.length, 1, `not released: held to its ttl: ${JSON.stringify(view)}`)
  await until(async () => (await cf('inspect', at)).length === 0, 10_000, 'the key is free at the lease\'s ttl')
  console.log(`# released asked ${held.calls.release} times (at the hold's answer); the key free ${Date.now() - asked} ms after the hold was asked (ttl 2 s)`)
  assert.ok(held.calls.release >= 2, `asked again: ${JSON.stringify(held)}`)
})

test('docs/cloudflare.md: shard does not apply to pools: a pool of workerStore(ns, { shard }) is the one kept by the object named by the pool, as without it; the object\'s inspectPools() lists its remaining units, open claims and claims waiting', async () => {
  const at = { capacity: 3 }
  const name = 'pool-unsharded'
  assert.deepEqual(await pool(name, 'claim', { ...at, n: 2, id: 'a', shard: 4 }), { claimed: true, remaining: 1, id: 'a', units: 2 })
  assert.deepEqual(await pool(name, 'remaining', at), { remaining: 1 }, 'the same pool without shard')
  const waiting = pool(name, 'try-claim', { ...at, n: 2, id: 'b', wait: '10s', shard: 16 })
  const viewOf = async () => (await cf('inspect-pools', { name })).find(p => p.name === name)
  await until(async () => (await viewOf())?.waiting === 1, 5_000, 'b waits in line')
  const view = await viewOf()
  assert.deepEqual([view.capacity, view.remaining, view.claims, view.waiting], [3, 1, 1, 1], JSON.stringify(view))
  assert.deepEqual(await pool(name, 'release', { ...at, id: 'a' }), { released: true })
  assert.deepEqual(await waiting, { claimed: true, remaining: 1, id: 'b', units: 2 })
  assert.deepEqual(await pool(name, 'release', { ...at, id: 'b', shard: 2 }), { released: true })
  assert.deepEqual(await viewOf(), { kind: 'pool', name, capacity: 3, remaining: 3, claims: 0, waiting: 0 })
})

test('a renewal answered lost aborts lease.signal with LostError, and hold rejects LostError after fn settles', async () => {
  const answer = await cf('stall', { ns: 'counting', name: 'lapse', key: 'k', ttl: '1s', ms: 1_200 })
  assert.deepEqual(answer.seen, { aborted: true, reason: 'LostError', lost: true }, JSON.stringify(answer))
  assert.equal(answer.error?.name, 'LostError', JSON.stringify(answer))
  assert.match(answer.error.message, /renewal refused/)
})

test('maxHold revokes a lease over RPC: signal aborted, hold rejects LostError (LOCK-03)', async () => {
  // A ttl longer than maxHold: no renewal is due before maxHold revokes the lease (the first comes at
  // a third of the ttl), so none delayed by a loaded machine can lose it first. With ttl 1s, then 2s,
  // a loaded machine lost it so ("renewal refused", "not renewed within its ttl": session 39's CI).
  const answer = await cf('hold', { name: 'bounded', key: 'k', ttl: '10s', maxHold: '3s', ms: 4_000 })
  assert.equal(answer.error?.name, 'LostError', JSON.stringify(answer))
  assert.match(answer.error.message, /maxHold/)
  const after = await cf('tryHold', { name: 'bounded', key: 'k' })
  assert.equal(after.acquired, true, 'the key went on at maxHold')
})

test('#13 items 10 and 11 in workerd: a late renewal timer never renews past the deadline (the lease is lost instead); a lease read past its deadline reads lost, through a signal kept from before too (test clocks)', async () => {
  const answer = await cf('paused', { name: 'paused' })
  assert.equal(answer.late.renewedOnce, 1, JSON.stringify(answer))
  assert.equal(answer.late.renewals, 1, `renewed past its deadline: ${JSON.stringify(answer)}`)
  assert.equal(answer.late.lostAt, 4_000, JSON.stringify(answer))
  assert.match(answer.late.reason, /not renewed within its ttl/)
  assert.equal(answer.read.before, false, JSON.stringify(answer))
  assert.deepEqual(answer.read.after, { aborted: true, heard: 1, lost: true, reason: answer.read.after.reason }, JSON.stringify(answer))
  assert.match(answer.read.after.reason, /not renewed within its ttl/)
  assert.equal(answer.read.renewals, 0)
})

test('fences keep growing after the object restarts with its persisted storage; a granted lease survives the restart (LOCK-02)', async () => {
  const first = await cf('hold', { name: 'restart', key: 'k' })
  const kept = await cf('raw-acquire', { name: 'restart', key: 'held', ttlMs: 30_000 })
  assert.ok(kept.ok, JSON.stringify(kept))
  await restart('HoldfastObject', 'restart')
  const second = await cf('hold', { name: 'restart', key: 'k' })
  assert.ok(second.fence > first.fence && second.fence > kept.ok.fence, `after the restart, fence ${second.fence} > ${first.fence}, ${kept.ok.fence}`)
  // The lease granted before the restart still holds its key, and renews.
  assert.deepEqual(await cf('raw-try', { name: 'restart', key: 'held' }), { ok: null })
  const renewed = await cf('raw-renew', { name: 'restart', lease: kept.ok.lease })
  assert.equal(renewed.ok?.ttl, 30_000, JSON.stringify(renewed))
  await cf('raw-release', { name: 'restart', lease: kept.ok.lease })
  const after = await cf('raw-try', { name: 'restart', key: 'held' })
  assert.ok(after.ok?.fence > second.fence, JSON.stringify(after))
})

test('an object reset (ctx.abort) while workerStore holds and waits: the waiting hold is asked again of the new instance and served in turn, the held lease is renewed there and its release reaches it (LOCK-05)', async () => {
  // A stub through which a call failed with the reset stays broken: every later call through it fails
  // the same way. workerStore kept one stub per hold: the waiting hold was given up (ClosedError), the
  // holder's renewals failed until it was lost, and its release was dropped (the key held to its ttl).
  const at = Date.now()
  const held = cf('hold', { ns: 'counting', name: 'reset', key: 'k', ms: 3_000, ttl: '2s', tag: 'a' })
  await sleep(300)
  const waiting = cf('hold', { ns: 'counting', name: 'reset', key: 'k', ms: 0, ttl: '2s', wait: '20s', tag: 'b' })
  await sleep(300)
  const crash = await cf('crash', { ns: 'counting', name: 'reset', key: 'k' })
  assert.equal(crash.reset, true, JSON.stringify(crash))
  const [a, b] = await Promise.all([held, waiting])
  assert.ok(a.fence && a.lost === false, `the holder kept its lease across the reset (renewed on the new instance): ${JSON.stringify(a)}`)
  assert.ok(b.fence > a.fence && b.start >= a.end, `the waiting hold was served after the holder: ${JSON.stringify({ a, b })}`)
  assert.ok(Date.now() - at < 10_000)
  assert.deepEqual(await cf('inspect', { ns: 'counting', name: 'reset' }), [], 'both releases reached the new instance')
})

test('LOCK-05 across an object reset: a release under way when its object resets is asked again of the new instance, so the key is free once hold answers, not held until its ttl by the lease taken back', async () => {
  // The release failed with the reset and was dropped: the new instance took the lease back from its
  // storage (the delete never happened) and held the key for nobody until its ttl, 20 s here.
  const at = { ns: 'counting', name: 'release-reset', key: 'k' }
  assert.deepEqual(await cf('hold-deletes', at), { held: true })
  const held = cf('hold', { ...at, ms: 0, ttl: '20s' })
  const crash = await cf('crash-while-delete-held', at)
  assert.equal(crash.reset, true, JSON.stringify(crash))
  const answer = await held
  assert.equal(typeof answer.fence, 'number', JSON.stringify(answer))
  assert.deepEqual(await cf('inspect', at), [], 'released on the new instance')
})

test('POOL-01 across an object reset: a release the object kept, then reset before answering, is asked again and resolves true (the units came back by it), not false', async () => {
  const at = { ns: 'counting', capacity: 2 }
  assert.equal((await pool('pool-release-reset', 'claim', { ...at, n: 2, id: 'r' })).claimed, true)
  assert.deepEqual(await cf('crash-after-pool-write', { ...at, name: 'pool-release-reset' }), { armed: true })
  // Asked again of the next instance, which read the release back: it held nothing (answered 0), and
  // release() resolved false although this very release gave the units back.
  assert.deepEqual(await pool('pool-release-reset', 'release', { ...at, id: 'r' }), { released: true })
  assert.deepEqual(await pool('pool-release-reset', 'remaining', at), { remaining: 2 })
  assert.deepEqual(await pool('pool-release-reset', 'release', { ...at, id: 'r' }), { released: false }, 'a second release, asked once: false')
})

test('POOL-01 across an object reset: a claim (its id drawn by workerStore) that the object kept, then reset before answering, while its signal aborted, is let go on the next instance: its units are not taken for good by a caller told CancelledError', async () => {
  // The call failed with the reset, and was not asked again (its signal aborted): the cancel found
  // no call on the next instance, nothing withdrew the claim read back, and its unit stayed taken.
  const at = { ns: 'counting', capacity: 1 }
  const reset = await pool('pool-reset-cancel', 'reset-cancel', { ...at, n: 1 })
  assert.equal(reset.asked.error?.name, 'CancelledError', JSON.stringify(reset))
  assert.equal(reset.remaining, 1, `the unit is back: ${JSON.stringify(reset)}`)
  const next = await pool('pool-reset-cancel', 'claim', { ...at, n: 1 })
  assert.deepEqual([next.claimed, next.remaining], [true, 0], `the next claim takes it: ${JSON.stringify(next)}`)
})

test('POOL-03 across an object reset: a claim waiting when its pool\'s object resets is asked again with its claim id and claimed once the units come back', async () => {
  const first = await pool('pool-reset', 'claim', { ns: 'counting', capacity: 2, n: 2, id: 'first' })
  assert.equal(first.claimed, true)
  const waiting = pool('pool-reset', 'claim', { ns: 'counting', capacity: 2, n: 1, id: 'waiting', wait: '20s' })
  await sleep(300)
  const crash = await cf('crash', { ns: 'counting', name: 'pool-reset', key: 'k' })
  assert.equal(crash.reset, true, JSON.stringify(crash))
  await sleep(300)
  assert.deepEqual(await pool('pool-reset', 'release', { ns: 'counting', capacity: 2, id: 'first' }), { released: true })
  const claimed = await waiting
  assert.equal(claimed.claimed, true, JSON.stringify(claimed))
  assert.deepEqual(await pool('pool-reset', 'remaining', { ns: 'counting', capacity: 2 }), { remaining: 1 })
})

test('LOCK-02: a grant whose kept lease the object\'s storage fails to write is answered StorageError, never granted: the key goes on to the next in line, and after a restart only leases kept hold keys', async () => {
  // The object granted the lease and answered it before its write settled, and a failed write was
  // ignored: the caller held a lease a restart forgot, and the next in line waited behind a ghost.
  const at = { ns: 'counting', name: 'unkept' }
  const waiting = async n => (await cf('inspect', at)).find(k => k.key === 'k')?.waiting === n
  const first = await cf('raw-acquire', { ...at, key: 'k', ttlMs: 30_000 })
  assert.ok(first.ok, JSON.stringify(first))
  const second = cf('raw-acquire', { ...at, key: 'k', ttlMs: 30_000, waitMs: 5_000 })
  await until(() => waiting(1), 5_000, 'the second waits')
  const third = cf('raw-acquire', { ...at, key: 'k', ttlMs: 30_000, waitMs: 5_000 })
  await until(() => waiting(2), 5_000, 'the third waits behind it')
  assert.deepEqual(await cf('refuse-writes', { ...at, n: 1 }), { refused: 1 })
  await cf('raw-release', { ...at, lease: first.ok.lease })
  const [failed, next] = await Promise.all([second, third])
  assert.equal(failed.error?.code, 'storage', `the grant whose write failed: ${JSON.stringify(failed)}`)
  assert.match(failed.error.message, /lock unkept: key "k"/)
  assert.match(failed.error.message, /refused by the test/, 'the storage\'s own error, named')
  assert.ok(next.ok?.fence > first.ok.fence, `the next in line moved up at once: ${JSON.stringify(next)}`)
  const [view] = await cf('inspect', at)
  assert.deepEqual([view.holders.length, view.waiting], [1, 0], JSON.stringify(view))
  // Through workerStore: hold rejects StorageError, and fn never runs.
  assert.equal((await cf('refuse-writes', { ...at, n: 1 })).refused, 1)
  const held = await cf('hold', { ...at, key: 'other' })
  assert.equal(held.error?.name, 'StorageError', JSON.stringify(held))
  assert.deepEqual((await cf('inspect', at)).map(k => k.key), ['k'], 'the key whose write failed is not held')
  // After a restart, the lease whose write landed holds its key, and renews.
  await restart('CountingHoldfast', at.name)
  assert.deepEqual(await cf('raw-try', { ...at, key: 'k' }), { ok: null }, 'the kept lease still holds its key')
  assert.equal((await cf('raw-renew', { ...at, lease: next.ok.lease })).ok?.ttl, 30_000)
  await cf('raw-release', { ...at, lease: next.ok.lease })
  assert.deepEqual(await cf('inspect', at), [])
})

test('LOCK-02: a renewal the object\'s storage fails to keep is answered StorageError, not renewed (its holder asks again); asked again, it is renewed', async () => {
  // It was answered renewed: a restart would then end the lease at its kept deadline, before the one
  // its holder was told.
  const at = { ns: 'counting', name: 'unkept-renewal' }
  const granted = await cf('raw-acquire', { ...at, key: 'k', ttlMs: 30_000 })
  assert.ok(granted.ok, JSON.stringify(granted))
  assert.equal((await cf('refuse-writes', { ...at, n: 1 })).refused, 1)
  const failed = await cf('raw-renew', { ...at, lease: granted.ok.lease })
  assert.equal(failed.error?.code, 'storage', JSON.stringify(failed))
  assert.match(failed.error.message, /lock unkept-renewal: key "k": .*refused by the test/)
  assert.equal((await cf('raw-renew', { ...at, lease: granted.ok.lease })).ok?.ttl, 30_000, 'asked again, renewed')
  await cf('raw-release', { ...at, lease: granted.ok.lease })
})

test('LOCK-05: a release whose kept lease the object\'s storage fails to delete is answered StorageError, the key still held; asked again, it is released: a restart never takes back a lease whose release was answered', async () => {
  // The failed delete was ignored and the release answered ok: after a restart the released lease was
  // taken back from storage and held its key, with no holder, until its old deadline.
  const at = { ns: 'counting', name: 'undeleted' }
  const granted = await cf('raw-acquire', { ...at, key: 'k', ttlMs: 30_000 })
  assert.ok(granted.ok, JSON.stringify(granted))
  assert.deepEqual(await cf('refuse-deletes', { ...at, n: 1 }), { refused: 1 })
  const released = await cf('raw-release', { ...at, lease: granted.ok.lease })
  await restart('CountingHoldfast', at.name)
  const held = await cf('raw-try', { ...at, key: 'k' })
  if ('ok' in released) assert.ok(held.ok, `a release answered ${JSON.stringify(released)}, yet after a restart the key is held: ${JSON.stringify(held)}`)
  assert.equal(released.error?.code, 'storage', `a release whose delete failed: ${JSON.stringify(released)}`)
  assert.match(released.error.message, /lock undeleted: key "k": .*not released.*refused by the test/)
  assert.deepEqual(held, { ok: null }, 'not released: still held, as kept, across the restart')
  assert.deepEqual(await cf('raw-release', { ...at, lease: granted.ok.lease }), { ok: true }, 'asked again, released')
  await restart('CountingHoldfast', at.name)
  const after = await cf('raw-try', { ...at, key: 'k' })
  assert.ok(after.ok?.lease, `after a restart the released lease holds nothing: ${JSON.stringify(after)}`)
  await cf('raw-release', { ...at, lease: after.ok.lease })
  assert.deepEqual(await cf('inspect', at), [])
  // Through workerStore: a hold whose release the storage refuses twice asks again until it is taken;
  // the key is free once hold answers, and stays free across a restart.
  assert.equal((await cf('refuse-deletes', { ...at, n: 2 })).refused, 2)
  const hold = await cf('hold', { ...at, key: 'k', ms: 0 })
  assert.equal(typeof hold.fence, 'number', JSON.stringify(hold))
  assert.deepEqual(await cf('inspect', at), [], 'released once hold answered')
  await restart('CountingHoldfast', at.name)
  assert.deepEqual(await cf('inspect', at), [], 'and after a restart')
})

test('LOCK-06: a hold or a tryHold of workerStore granted in the turn that granted another, whose signal the other\'s fn aborts before its own fn started, is cancelled: CancelledError, fn not run, the key let go', async () => {
  // The object's answers to both are let through together (src/cloudflare.js abortAtGrant): the
  // first's fn runs first and aborts the second's signal, whose lease had come. Its fn ran all the same.
  const answers = await cf('abort-at-grant', { name: 'abort-at-grant' })
  for (const form of ['hold', 'tryHold']) {
    assert.deepEqual(
      answers[form],
      { error: answers[form].error, cause: 'gave up', ran: false, free: { acquired: true, value: 'free' } },
      `${form}: ${JSON.stringify(answers)}`,
    )
    assert.equal(answers[form].error?.code, 'cancelled', `${form}: ${JSON.stringify(answers)}`)
  }
})

test('LOCK-06: a grant that crossed its hold\'s cancel is let go, asked again while the object\'s storage fails its delete: the key is not held until its ttl by a caller that gave up', async () => {
  // The let-go release was asked once: answered StorageError (the lease still held and kept), it was
  // dropped, and the key stayed held, for nobody, until its ttl.
  const crossed = await cf('crossed-grant', { ns: 'counting', name: 'crossed-grant', key: 'k', refuse: 2 })
  assert.equal(crossed.granted, true, JSON.stringify(crossed))
  assert.equal(crossed.cancelled.error?.name, 'CancelledError', JSON.stringify(crossed))
  assert.equal(crossed.cancel.error?.code, 'storage', `the cancel met the first refused delete: ${JSON.stringify(crossed)}`)
  assert.equal(crossed.releases[0]?.error?.code, 'storage', JSON.stringify(crossed))
  assert.deepEqual(crossed.releases.at(-1), { ok: true }, JSON.stringify(crossed))
  assert.deepEqual(crossed.held, [], 'nothing held')
})

test('LOCK-06 across an object reset: a hold granted and kept, its signal aborted before the answer came, its cancel and its answer both lost with a reset of the object, is let go on the next instance (which took the lease back), not held until its ttl by a caller that gave up', async () => {
  // The call failed once its signal aborted and was not asked again; the cancel had failed with the
  // reset: nothing reached the next instance, and the key stayed held, for nobody, until its ttl.
  const at = { ns: 'counting', name: 'reset-grant', key: 'k' }
  const reset = await cf('reset-grant', at)
  assert.equal(reset.granted, true, JSON.stringify(reset))
  assert.equal(reset.cancelled.error?.name, 'CancelledError', JSON.stringify(reset))
  assert.equal(reset.cancel.reset, true, `the first cancel was lost with the reset: ${JSON.stringify(reset)}`)
  assert.deepEqual(reset.held, [], `nothing held: ${JSON.stringify(reset)}`)
})

test('LOCK-06 after the response: a grant that crossed its hold\'s cancel in a Worker that answered at once is still let go (asked again while the object\'s storage fails its delete): the work outlives the request', async () => {
  // The release asked again after its first `storage` answer (a 50 ms wait) was work of the request
  // alone: the request answered, workerd dropped it, and the key stayed held, for nobody, until its ttl.
  const at = { ns: 'counting', name: 'crossed-grant-early', key: 'k' }
  const crossed = await cf('crossed-grant', { ...at, refuse: 2, early: '1' })
  assert.equal(crossed.granted, true, JSON.stringify(crossed))
  assert.equal(crossed.cancelled.error?.name, 'CancelledError', JSON.stringify(crossed))
  assert.equal(crossed.cancel.error?.code, 'storage', `the cancel met the first refused delete: ${JSON.stringify(crossed)}`)
  await until(async () => (await cf('inspect', at)).length === 0, 5_000, 'the key is let go after the response')
})

test('LOCK-05 after the response: a lease whose release() the Worker did not await before answering is released all the same, asked again while the object\'s storage fails its delete', async () => {
  // The release asked again after its `storage` answer was work of the request alone: the key stayed
  // held until its ttl.
  const at = { ns: 'counting', name: 'release-unawaited', key: 'k' }
  assert.equal((await cf('refuse-deletes', { ...at, n: 1 })).refused, 1)
  const held = await cf('release-unawaited', at)
  assert.equal(typeof held.fence, 'number', JSON.stringify(held))
  await until(async () => (await cf('inspect', at)).length === 0, 5_000, 'the key is let go after the response')
})

test('a lease taken back after a restart still ends at its old deadline, not a ttl after the restart', async () => {
  const granted = await cf('raw-acquire', { name: 'old-deadline', key: 'k', ttlMs: 3_000 })
  assert.ok(granted.ok, JSON.stringify(granted))
  const at = Date.now()
  await sleep(1_500)
  await restart('HoldfastObject', 'old-deadline')
  assert.deepEqual(await cf('raw-try', { name: 'old-deadline', key: 'k' }), { ok: null }, 'taken back: still held')
  await sleep(3_300 - (Date.now() - at))
  // 3.3 s after the grant, 1.8 s after the restart: lapsed at its deadline from before.
  const next = await cf('raw-try', { name: 'old-deadline', key: 'k' })
  assert.ok(next.ok?.fence > granted.ok.fence, JSON.stringify(next))
})

test('a request asked again with its request id after a restart gets the same lease and fence', async () => {
  const request = 'ab'.repeat(16)
  const granted = await cf('raw-acquire', { name: 'resume', key: 'k', ttlMs: 30_000, request })
  assert.ok(granted.ok, JSON.stringify(granted))
  await restart('HoldfastObject', 'resume')
  const again = await cf('raw-acquire', { name: 'resume', key: 'k', ttlMs: 30_000, request })
  assert.deepEqual(again.ok && { lease: again.ok.lease, fence: again.ok.fence }, { lease: granted.ok.lease, fence: granted.ok.fence })
  await cf('raw-release', { name: 'resume', lease: granted.ok.lease })
})

test('the alarm ends a lease past its ttl when nothing else wakes the object (the backstop)', async () => {
  const granted = await cf('raw-acquire', { ns: 'counting', name: 'alarm', key: 'k', ttlMs: 1000 })
  assert.ok(granted.ok, JSON.stringify(granted))
  // Evicted: its timers are gone with it; only the alarm set at the lease's deadline can wake it.
  await restart('CountingHoldfast', 'alarm')
  await sleep(2_500)
  const seen = await cf('alarms', { ns: 'counting', name: 'alarm' })
  assert.ok(seen.alarms >= 1, `the alarm fired: ${JSON.stringify(seen)}`)
  assert.equal(seen.leases, 0, 'and the lapsed lease is no longer kept')
})

test('LOCK-05: a deadline whose alarm the object\'s storage failed to set is armed again at the next call, so the alarm still ends the lease past its ttl with no call after it', async () => {
  // The clock counted the refused alarm as set: no later call armed it again, and the lease lived on
  // past its ttl until a call came after it.
  const at = { ns: 'counting', name: 'alarm-refused', key: 'k' }
  assert.deepEqual(await cf('refuse-alarms', { ...at, n: 1 }), { refused: 1 })
  const granted = await cf('raw-acquire', { ...at, ttlMs: 1000 })
  assert.ok(granted.ok, JSON.stringify(granted))
  assert.deepEqual(await cf('alarms-refused', at), { refused: 1 }, 'the lease\'s alarm was refused')
  assert.equal((await cf('inspect', at)).length, 1, 'a call before the deadline')
  await sleep(2_500)
  const seen = await cf('alarms', at)
  assert.ok(seen.alarms >= 1, `the alarm fired: ${JSON.stringify(seen)}`)
  assert.equal(seen.leases, 0, 'and the lapsed lease is no longer kept')
})

test('LOCK-05: a deadline whose alarm the object\'s storage keeps failing to set, with no call after it, still ends the lease past its ttl: the alarm is asked again with backoff, and the object acts on the deadline meanwhile', async () => {
  // Armed again only by the next call: with none, every refused setAlarm left the lease held past
  // its ttl (and its waiters waiting) until a call came, however long after.
  const at = { ns: 'counting', name: 'alarm-refused-always', key: 'k' }
  assert.deepEqual(await cf('refuse-alarms', { ...at, n: 1_000_000 }), { refused: 1_000_000 })
  const granted = await cf('raw-acquire', { ...at, ttlMs: 1000 })
  assert.ok(granted.ok, JSON.stringify(granted))
  await sleep(2_500)
  const seen = await cf('alarms', at)
  assert.equal(seen.leases, 0, `the lapsed lease is no longer kept: ${JSON.stringify(seen)}`)
  const refused = (await cf('alarms-refused', at)).refused
  assert.ok(refused > 1 && refused < 50, `the alarm was asked again, with backoff: ${refused} refused`)
})

test('a bad name, key, ttl or limit gets a typed error over the boundary', async () => {
  // Straight to the object (past workerStore's own checks): error values, never thrown.
  for (const [params, message] of [
    [{ badName: 'Bad' }, /name "Bad" must match/],
    [{ badName: '-x' }, /name "-x" must match/],
    [{ badKey: '' }, /key "" must be 1 to 1024 bytes/],
    [{ badKey: 'é'.repeat(513) }, /1024 bytes/],
    [{ ttlMs: 500 }, /ttl 500ms must be 1s to 1h/],
    [{ ttlMs: 0.5 }, /ttl 0\.5ms must be 1s to 1h/], // named as given, not as whole ms ("ttl 0ms")
    [{ maxHoldMs: 31 * 24 * 3_600_000 }, /maxHold \d+ms must be 1ms to 30 days/],
    [{ request: 'nothex' }, /request must be 32 hex digits/],
    [{ kind: 'mutex' }, /kind "mutex"/],
    // A semaphore's limit, worded as every store's handle words it, past the bounds or not whole.
    [{ kind: 'semaphore', limitNum: 10_001 }, /^semaphore jobs: limit 10001 must be a whole number from 1 to 10000$/],
    [{ kind: 'semaphore', limitNum: 0 }, /^semaphore jobs: limit 0 must be a whole number from 1 to 10000$/],
    [{ kind: 'semaphore', limitNum: 2.5 }, /^semaphore jobs: limit 2\.5 must be a whole number from 1 to 10000$/],
  ]) {
    const answer = await cf('raw-bad', params)
    assert.equal(answer.error?.code, 'invalid', `${JSON.stringify(params)}: ${JSON.stringify(answer)}`)
    assert.match(answer.error.message, message)
  }
  // Through workerStore: the object's refusal comes back as the InvalidError class (another limit
  // while the name is in use; once idle, the name is forgotten and comes back new: #13 item 5).
  const held = cf('hold', { name: 'permits', limit: 2, ms: 1_000 })
  await sleep(300)
  const mismatch = await cf('hold', { name: 'permits', limit: 3 })
  assert.equal(mismatch.error?.name, 'InvalidError', JSON.stringify(mismatch))
  assert.equal(mismatch.error.code, 'invalid')
  assert.equal((await held).fence > 0, true)
  assert.equal((await cf('hold', { name: 'permits', limit: 3 })).fence > 0, true)
  // And workerStore's own checks, before anything is sent.
  for (const params of [{ name: 'Bad Name' }, { key: 'x'.repeat(1025) }, { ttl: '2h' }, { wait: '250' }]) {
    const answer = await cf('hold', params)
    assert.equal(answer.error?.name, 'InvalidError', `${JSON.stringify(params)}: ${JSON.stringify(answer)}`)
  }
  // ttl and maxHold in whole ms, as a local store's engine judges them, named as given: a ttl of 1 h
  // and half a ms is 1 h (workerStore refused it), a maxHold of 0.5 ms is none (it let it go).
  const halfMs = await cf('hold', { maxHoldNum: 0.5 })
  assert.equal(halfMs.error?.name, 'InvalidError', JSON.stringify(halfMs))
  assert.equal(halfMs.error.message, 'lock jobs: maxHold 0.5ms must be 1ms to 30 days')
  const hourAndHalfMs = await cf('hold', { name: 'whole-ms', ttlNum: 3_600_000.5 })
  assert.ok(hourAndHalfMs.fence > 0, JSON.stringify(hourAndHalfMs))
  // #13: a key with a lone surrogate ('user-' and half an emoji), through workerStore and straight to
  // the object's RPC: refused, as in process and over a connection, before anything is held.
  const lone = { keyUnits: [...'user-'].map(c => c.charCodeAt(0)).concat(0xd83d).join(',') }
  for (const op of ['hold', 'raw-bad']) {
    const answer = await cf(op, lone)
    assert.equal(answer.error?.code, 'invalid', `${op}: ${JSON.stringify(answer)}`)
    assert.match(answer.error.message, /well-formed/, op)
  }
})

test('a semaphore through the object: at most limit holders of a key at a time', async () => {
  const holds = ['a', 'b', 'c'].map(tag => cf('hold', { name: 'uploads', limit: 2, key: 'u', ms: 300, tag }))
  const all = await Promise.all(holds)
  for (const r of all) assert.equal(typeof r.fence, 'number', JSON.stringify(r))
  // Three requests at once reach the object in any order: the hold that began last is the third,
  // whichever was sent last.
  const [first, second, third] = all.sort((x, y) => x.start - y.start)
  const firstEnd = Math.min(first.end, second.end)
  assert.ok(third.start >= firstEnd, `the third (${third.tag}, ${third.start}) began after one of the first two ended (${firstEnd})`)
})

test('a semaphore asked for again with another limit while a handle of it lives in the workerStore is an InvalidError at once, idle or busy, as in process', async () => {
  // It was taken while idle: the object forgets a name nothing holds, and then judged no limit.
  const error = { code: 'invalid', name: 'InvalidError', message: 'semaphore uploads: limit 3 differs from its limit 2' }
  assert.deepEqual(await cf('two-limits', { name: 'uploads', limit: 2, key: 'u' }), { idle: { error }, busy: { error } })
})

test('shard: N spreads a name over N objects by FNV-1a of the key; one key always meets itself there', async () => {
  const where = await cf('object', { name: 'jobs', key: 'k', shard: 4 })
  assert.equal(where.name, `jobs/${where.hash % 4}`)
  // FNV-1a as published (32 bits, over the key's UTF-8), so that a client elsewhere names the same object.
  assert.equal((await cf('object', { name: 'jobs', key: 'a', shard: 4 })).hash, 0xe40c292c)
  assert.equal((await cf('object', { name: 'jobs', key: 'foobar', shard: 4 })).hash, 0xbf9cf968)
  const holding = cf('hold', { name: 'jobs', key: 'k', shard: 4, ms: 400 })
  await sleep(150)
  assert.deepEqual(await cf('tryHold', { name: 'jobs', key: 'k', shard: 4 }), { acquired: false })
  const [view] = await cf('inspect', { name: 'jobs', key: 'k', shard: 4 })
  assert.equal(view.key, 'k')
  // Without the shard option the same key goes to another object: why N must never change.
  assert.equal((await cf('tryHold', { name: 'jobs', key: 'k' })).acquired, true)
  await holding
})

test('durableObjectStorage() given what is not a Durable Object\'s storage (the object\'s ctx, nothing, text, an object without get and put) or an argument past its own is an InvalidError naming the place and the value, at the call', async () => {
  const answers = await cf('do-storage-bad')
  const expected = {
    ctx: /^durableObjectStorage: storage must be a Durable Object's storage \(ctx\.storage\), not the object's ctx: pass ctx\.storage$/,
    undefined: /^durableObjectStorage: storage must be a Durable Object's storage \(ctx\.storage\), not undefined$/,
    text: /^durableObjectStorage: storage must be a Durable Object's storage \(ctx\.storage\), not a string$/,
    empty: /^durableObjectStorage: storage must be a Durable Object's storage \(ctx\.storage\), not an object without get and put$/,
    extra: /^durableObjectStorage takes \(storage\): nothing after storage$/,
  }
  for (const [label, message] of Object.entries(expected)) {
    const answer = answers[label]
    assert.equal(answer?.error?.code, 'invalid', `${label}: ${JSON.stringify(answer)}`)
    assert.equal(answer.error.name, 'InvalidError', label)
    assert.match(answer.error.message, message, label)
  }
})

test('holdfast/cloudflare outside workerd (Node): importing is harmless, using it throws a clear InvalidError', async () => {
  const cloudflare = await import('holdfast/cloudflare')
  const { InvalidError } = await import('holdfast')
  assert.throws(() => new cloudflare.HoldfastObject({}, {}), e => e instanceof InvalidError && /runs in Cloudflare workerd only/.test(e.message))
  assert.throws(() => cloudflare.workerStore({}), e => e instanceof InvalidError && /workerd only/.test(e.message))
  // The pure helper names the same object as the worker does.
  const where = await cf('object', { name: 'jobs', key: 'chat-42', shard: 16 })
  assert.equal(cloudflare.objectName('jobs', 'chat-42', { shard: 16 }), where.name)
})

// ---- pools (issue #16) in the Durable Object, from a Worker: workerStore(env.HOLDFAST).pool(name, { capacity }) ----

/** One pool step (see src/cloudflare.js `pools`). */
const pool = (name, step, params = {}) => cf('pool', { name, step, ...params })

test('POOL-01 from a Worker, the steps other stores worded apart (tests/shared/differential.js): a pool made by remaining(), another capacity, an id asked again for another n, in the words of a store in process', async () => {
  assert.deepEqual(await pool('diff-seats', 'remaining', { capacity: 3 }), { remaining: 3 })
  const said = 'pool diff-seats: capacity 4 differs from its capacity 3 (resize changes it)'
  assert.equal((await pool('diff-seats', 'remaining', { capacity: 4 })).error?.message, said)
  assert.equal((await pool('diff-seats', 'try-claim', { capacity: 4, n: 1, id: 'order-0' })).error?.message, said)
  assert.deepEqual(await pool('diff-seats', 'remaining', { capacity: 'none' }), { remaining: 3 })
  assert.equal((await pool('diff-seats', 'claim', { capacity: 3, n: 2, id: 'order-1' })).claimed, true)
  const again = await pool('diff-seats', 'try-claim', { capacity: 3, n: 1, id: 'order-1' })
  assert.deepEqual(again.error, { code: 'invalid', name: 'InvalidError', message: 'pool diff-seats: claim id "order-1" took 2 units; asked again for 1' })
  assert.deepEqual(await pool('diff-seats', 'release', { capacity: 3, id: 'order-1' }), { released: true })
})

test('POOL-01 in the Durable Object: remaining never goes below zero nor above capacity, under concurrent claims from a Worker', async () => {
  const many = await pool('pool-01', 'many', { capacity: 5, n: 1, count: 12 })
  const claimed = many.results.filter(r => r.claimed)
  // 12 claims of 1 on 5 units, the odd ones asked twice at once by id (6 ids): at most 5 units taken.
  assert.equal(many.remaining, 0, JSON.stringify(many))
  assert.ok(claimed.length >= 5, JSON.stringify(many))
  assert.equal(new Set(claimed.map(r => r.id)).size, 5, `5 distinct claims took the 5 units: ${JSON.stringify(many)}`)
  for (const r of many.results) assert.ok(r.remaining >= 0 && r.remaining <= 5, JSON.stringify(r))
  assert.deepEqual(await pool('pool-01', 'claim', { capacity: 5, n: 1 }), { claimed: false, remaining: 0 })
  for (const id of new Set(claimed.map(r => r.id))) assert.deepEqual(await pool('pool-01', 'release', { capacity: 5, id }), { released: true })
  assert.deepEqual(await pool('pool-01', 'release', { capacity: 5, id: claimed[0].id }), { released: false }, 'released once')
  assert.deepEqual(await pool('pool-01', 'remaining', { capacity: 5 }), { remaining: 5 }, 'never above capacity')
  // Capacity is fixed by first use; a resize never goes below what is claimed.
  const other = await pool('pool-01', 'remaining', { capacity: 6 })
  assert.equal(other.error?.code, 'invalid', JSON.stringify(other))
  assert.match(other.error.message, /5/)
  assert.match(other.error.message, /6/)
  const c = await pool('pool-01', 'claim', { capacity: 5, n: 4, id: 'four' })
  assert.equal(c.claimed, true, JSON.stringify(c))
  const shrink = await pool('pool-01', 'resize', { capacity: 5, to: 3 })
  assert.equal(shrink.error?.code, 'invalid', JSON.stringify(shrink))
  assert.deepEqual(await pool('pool-01', 'resize', { capacity: 5, to: 8 }), { remaining: 4 })
  assert.deepEqual(await pool('pool-01', 'release', { capacity: 8, id: 'four' }), { released: true })
})

test('POOL-01 in the Durable Object: a pool that exists is named alone from a Worker (workerStore(...).pool(name)), whatever a resize made it; one that does not is "no such pool", as on every store', async () => {
  assert.deepEqual(await pool('pool-named', 'claim', { capacity: 3, n: 2, id: 'order-1' }), { claimed: true, remaining: 1, id: 'order-1', units: 2 })
  assert.deepEqual(await pool('pool-named', 'resize', { capacity: 3, to: 5 }), { remaining: 3 })
  assert.deepEqual(await pool('pool-named', 'remaining', { capacity: 'none' }), { remaining: 3 })
  assert.deepEqual(await pool('pool-named', 'release', { capacity: 'none', id: 'order-1' }), { released: true })
  const none = await pool('pool-nothing', 'remaining', { capacity: 'none' })
  assert.deepEqual([none.error?.code, none.error?.message], ['invalid', 'pool pool-nothing: no such pool (its first use names its capacity)'], JSON.stringify(none))
})

test('POOL-02 in the Durable Object: a claim answered claimed survives a restart of the object (its storage keeps it)', async () => {
  const kept = await pool('pool-02', 'claim', { capacity: 10, n: 3, id: 'order-1' })
  assert.deepEqual(kept, { claimed: true, remaining: 7, id: 'order-1', units: 3 })
  const ttl = await pool('pool-02', 'claim', { capacity: 10, n: 2, id: 'cart', ttl: '1h' })
  assert.equal(ttl.claimed, true, JSON.stringify(ttl))
  await restart('HoldfastObject', 'pool-02')
  assert.deepEqual(await pool('pool-02', 'remaining', { capacity: 10 }), { remaining: 5 }, 'both claims read back')
  // The id asked again after the restart answers the first outcome, and takes nothing.
  assert.deepEqual(await pool('pool-02', 'claim', { capacity: 10, n: 3, id: 'order-1' }), { claimed: true, remaining: 7, id: 'order-1', units: 3 })
  assert.deepEqual(await pool('pool-02', 'confirm', { capacity: 10, id: 'cart' }), { confirmed: true })
  assert.deepEqual(await pool('pool-02', 'release', { capacity: 10, id: 'order-1' }), { released: true })
  await restart('HoldfastObject', 'pool-02')
  assert.deepEqual(await pool('pool-02', 'remaining', { capacity: 10 }), { remaining: 8 }, 'the release and the confirm read back')
  assert.deepEqual(await pool('pool-02', 'release', { capacity: 10, id: 'cart' }), { released: true })
  assert.deepEqual(await pool('pool-02', 'remaining', { capacity: 10 }), { remaining: 10 })
})

test('POOL-02 in the Durable Object: a claim is answered once the object\'s storage kept it: one whose write the storage fails is answered StorageError, takes no units (after a restart too), and asked again with its id is claimed', async () => {
  const at = { ns: 'counting', capacity: 3 }
  const name = 'pool-unkept'
  assert.deepEqual(await pool(name, 'remaining', at), { remaining: 3 })
  assert.equal((await cf('refuse-pool-writes', { ...at, name, n: 1 })).refused, 1)
  const failed = await pool(name, 'try-claim', { ...at, n: 2, id: 'c' })
  console.log(`# a claim whose write failed: ${JSON.stringify(failed)}`)
  const before = await pool(name, 'remaining', at)
  await restart('CountingHoldfast', name)
  const after = await pool(name, 'remaining', at)
  console.log(`# remaining: ${JSON.stringify(before)} before a restart, ${JSON.stringify(after)} after`)
  assert.equal(failed.error?.code, 'storage', JSON.stringify(failed))
  assert.deepEqual([before, after], [{ remaining: 3 }, { remaining: 3 }], 'no units taken by a claim not kept')
  assert.deepEqual(await pool(name, 'claim', { ...at, n: 2, id: 'c' }), { claimed: true, remaining: 1, id: 'c', units: 2 })
  assert.deepEqual(await pool(name, 'release', { ...at, id: 'c' }), { released: true })
})

test('POOL-03 in the Durable Object: a claim id asked again answers the first outcome and never takes units twice', async () => {
  const first = await pool('pool-03', 'claim', { capacity: 4, n: 3, id: 'retry' })
  assert.deepEqual(first, { claimed: true, remaining: 1, id: 'retry', units: 3 })
  assert.deepEqual(await pool('pool-03', 'claim', { capacity: 4, n: 3, id: 'retry' }), first, 'the first outcome again')
  assert.deepEqual(await pool('pool-03', 'remaining', { capacity: 4 }), { remaining: 1 }, 'units taken once')
  const other = await pool('pool-03', 'claim', { capacity: 4, n: 2, id: 'retry' })
  assert.equal(other.error?.code, 'invalid', `another n under the same id: ${JSON.stringify(other)}`)
  assert.deepEqual(await pool('pool-03', 'release', { capacity: 4, id: 'retry' }), { released: true })
  // Released, its id is still remembered: asked again, the first outcome, not a new claim.
  assert.deepEqual(await pool('pool-03', 'claim', { capacity: 4, n: 3, id: 'retry' }), first)
  assert.deepEqual(await pool('pool-03', 'remaining', { capacity: 4 }), { remaining: 4 })
})

test('POOL-04 in the Durable Object: waiting claims are served in order, the head is not overtaken, and an aborted wait leaves the line', async () => {
  const line = await pool('pool-04', 'line', { capacity: 3 })
  assert.deepEqual(line.before, { order: [], remaining: 1 }, `B (1 unit) fits but waits behind A: ${JSON.stringify(line)}`)
  assert.deepEqual(line.order, ['a', 'b'], JSON.stringify(line))
  assert.equal(line.first.claimed && line.second.claimed, true, JSON.stringify(line))
  assert.equal(line.third.error?.name, 'CancelledError', JSON.stringify(line.third))
  // C has no id: its message names the pool alone, as in process (the id drawn for it is nobody's).
  assert.equal(line.third.error.message, 'pool pool-04: cancelled while waiting')
  assert.equal(line.fourth.claimed, true, `a claim after the aborted one is not held up: ${JSON.stringify(line)}`)
  assert.equal(line.after, 3, JSON.stringify(line))
})

test('POOL-04 in the Durable Object: a claim id asked again over Workers RPC joins the claim, which keeps its place in line; each caller is answered by its own wait and signal', async () => {
  // The object aborted the first call when the id was asked again: the first caller was answered
  // cancelled, and the claim, its only asker gone, left the line and joined it again at its end.
  const at = { capacity: 2 }
  const waiting = async n => (await cf('inspect-pools', { name: 'pool-rejoin' })).find(p => p.name === 'pool-rejoin')?.waiting === n
  assert.equal((await pool('pool-rejoin', 'claim', { ...at, n: 1, id: 'holder' })).claimed, true)
  const first = pool('pool-rejoin', 'try-claim', { ...at, n: 2, id: 'x', wait: '10s' })
  await until(() => waiting(1), 5_000, 'x waits')
  const behind = pool('pool-rejoin', 'try-claim', { ...at, n: 1, id: 'y', wait: '10s' })
  await until(() => waiting(2), 5_000, 'y (1 unit, which fits) waits behind x')
  // Asked again by a second caller whose wait runs out, then by a third whose signal aborts.
  const waitedOut = await pool('pool-rejoin', 'try-claim', { ...at, n: 2, id: 'x', wait: '300ms' })
  assert.deepEqual(waitedOut, { claimed: false, remaining: 1 }, 'its own wait ran out, not the claim\'s')
  const aborted = await pool('pool-rejoin', 'try-claim', { ...at, n: 2, id: 'x', wait: '10s', abortMs: 300 })
  assert.equal(aborted.error?.name, 'CancelledError', JSON.stringify(aborted))
  const [view] = await cf('inspect-pools', { name: 'pool-rejoin' })
  assert.deepEqual([view.waiting, view.remaining], [2, 1], `x kept its place, y still behind it: ${JSON.stringify(view)}`)
  // The holder lets go: x is served first, to its first caller.
  assert.equal((await pool('pool-rejoin', 'release', { ...at, id: 'holder' })).released, true)
  assert.deepEqual(await first, { claimed: true, remaining: 0, id: 'x', units: 2 })
  assert.equal((await pool('pool-rejoin', 'release', { ...at, id: 'x' })).released, true)
  assert.equal((await behind).claimed, true)
  assert.equal((await pool('pool-rejoin', 'release', { ...at, id: 'y' })).released, true)
  assert.deepEqual(await pool('pool-rejoin', 'remaining', at), { remaining: 2 })
})

test('#16 part 1 in the Durable Object: a pool of 10,000 open claims with 36-character ids is kept in values within the object\'s 128 KiB, and reads back after a restart (POOL-02)', { timeout: 120_000 }, async () => {
  // LimitedHoldfast: its storage refuses a value over 128 KiB, as a Durable Object's key-value storage does.
  const limited = { capacity: 20_000, ns: 'limited' }
  const bulk = await pool('pool-bulk', 'bulk', { ...limited, count: 5_000 })
  assert.deepEqual(bulk, { claimed: 5_000, remaining: 15_000 }, JSON.stringify(bulk).slice(0, 500))
  const more = await pool('pool-bulk', 'bulk', { ...limited, count: 5_000, tag: 'secondsecond' })
  assert.deepEqual(more, { claimed: 5_000, remaining: 10_000 }, JSON.stringify(more).slice(0, 500))
  // docs/cloudflare.md: "a large pool is kept in chunks of at most 60 KiB".
  const kept = await cf('pool-values', { name: 'pool-bulk', ns: 'limited' })
  assert.ok(kept.values > 1 && kept.largest.bytes <= 60 * 1024, `kept in ${kept.values} values, the largest of ${kept.largest.bytes} bytes: ${JSON.stringify(kept)}`)
  await restart('LimitedHoldfast', 'pool-bulk')
  assert.deepEqual(await pool('pool-bulk', 'remaining', limited), { remaining: 10_000 })
  // The first 5,000 ids are remembered after the restart: asked again, nothing more is taken.
  const again = await pool('pool-bulk', 'bulk', { ...limited, count: 5_000 })
  assert.deepEqual(again, { claimed: 5_000, remaining: 10_000 }, JSON.stringify(again).slice(0, 500))
})

test('POOL-04 over Workers RPC: a claim that comes after its own cancel (the two travel on different stubs, in no order) is answered cancelled at once, never takes units or waits in line for a caller that gave up; another asker of the same claim id is served', async () => {
  const at = { name: 'pool-early-cancel', capacity: 2 }
  // The cancel finds no call of the claim yet: the object remembers it, with its asker.
  assert.deepEqual(await cf('raw-pool-op', { ...at, op: 'cancel', id: 'x', asker: 'a1' }), { ok: 0 })
  // Units free: claimed before (held for good, its caller gone), now answered cancelled.
  const free = await cf('raw-pool-claim', { ...at, n: 1, id: 'x', asker: 'a1' })
  assert.equal(free.error?.code, 'cancelled', JSON.stringify(free))
  assert.deepEqual(await cf('raw-pool-op', { ...at, op: 'remaining' }), { ok: 2 }, 'no unit taken')
  // No unit free: it waited its whole wait in line before (holding up those behind it), now answered at once.
  assert.equal((await cf('raw-pool-claim', { ...at, n: 2, id: 'holder', asker: 'h' })).ok?.claimed, true)
  assert.deepEqual(await cf('raw-pool-op', { ...at, op: 'cancel', id: 'y', asker: 'a2' }), { ok: 0 })
  const asked = Date.now()
  const busy = await cf('raw-pool-claim', { ...at, n: 1, id: 'y', asker: 'a2', waitMs: 5_000 })
  assert.equal(busy.error?.code, 'cancelled', JSON.stringify(busy))
  assert.ok(Date.now() - asked < 4_000, 'answered without waiting in line')
  const [view] = (await cf('inspect-pools', at)).filter(p => p.name === at.name)
  assert.equal(view.waiting, 0, JSON.stringify(view))
  assert.deepEqual(await cf('raw-pool-op', { ...at, op: 'release', id: 'holder' }), { ok: 1 })
  // The claim id asked by another caller (another asker) is served: a claim id may be reused.
  assert.deepEqual(await cf('raw-pool-claim', { ...at, n: 1, id: 'x', asker: 'a3' }), { ok: { claimed: true, remaining: 1 } })
  assert.deepEqual(await cf('raw-pool-op', { ...at, op: 'release', id: 'x' }), { ok: 1 })
})

test('POOL-04 across a restart: a claim\'s cancel that came before its call is kept in the object\'s storage, so an object restarted between the two still answers the claim cancelled, taking no units', async () => {
  // Kept in memory only, the restarted object took the units for a caller that gave up, for good.
  const at = { name: 'pool-early-cancel-restart', capacity: 2 }
  assert.deepEqual(await cf('raw-pool-op', { ...at, op: 'cancel', id: 'x', asker: 'a1' }), { ok: 0 })
  await restart('HoldfastObject', at.name)
  const late = await cf('raw-pool-claim', { ...at, n: 1, id: 'x', asker: 'a1' })
  assert.equal(late.error?.code, 'cancelled', JSON.stringify(late))
  assert.deepEqual(await cf('raw-pool-op', { ...at, op: 'remaining' }), { ok: 2 }, 'no unit taken')
  // Another asker of the claim id is served.
  assert.deepEqual(await cf('raw-pool-claim', { ...at, n: 1, id: 'x', asker: 'a2' }), { ok: { claimed: true, remaining: 1 } })
  assert.deepEqual(await cf('raw-pool-op', { ...at, op: 'release', id: 'x' }), { ok: 1 })
})

test('POOL-01 across an object reset: a claimed answer that crossed its caller\'s cancel, its claim id drawn by workerStore, is let go though the object reset before the withdraw came (the next instance knows nobody it told): its units are not taken for good; a caller\'s own id stays claimed, as any claim read back', async () => {
  // The withdraw reached the next instance, which read the claim back and, not knowing whom it told,
  // kept it (answered 0): with no ttl its unit stayed taken for good, by a claim whose id nobody knew.
  const at = { ns: 'counting', capacity: 1 }
  const drawn = await pool('pool-crossed-reset', 'crossed', { ...at, n: 1, drawn: '1', reset: '1' })
  assert.deepEqual(drawn.answered, { ok: { claimed: true, remaining: 0 } }, JSON.stringify(drawn))
  assert.equal(drawn.cancelled.error?.name, 'CancelledError', JSON.stringify(drawn))
  assert.deepEqual(drawn.letGo, { op: 'withdraw', asker: 'string', answer: { ok: 0 } }, `kept by the next instance: ${JSON.stringify(drawn)}`)
  assert.equal(drawn.remaining, 1, `the unit is back: ${JSON.stringify(drawn)}`)
  // The caller's own id: another caller may hold it (asked with that id before the reset), so it stays claimed.
  const own = await pool('pool-crossed-reset-own', 'crossed', { ...at, n: 1, id: 'mine', reset: '1' })
  assert.deepEqual(own.ops, ['cancel', 'withdraw'], JSON.stringify(own))
  assert.equal(own.remaining, 0, JSON.stringify(own))
  assert.deepEqual(await pool('pool-crossed-reset-own', 'claim', { ...at, n: 1, id: 'mine' }), { claimed: true, remaining: 0, id: 'mine', units: 1 }, 'its first outcome')
  assert.deepEqual(await pool('pool-crossed-reset-own', 'release', { ...at, id: 'mine' }), { released: true })
})

test('POOL-01/POOL-02: a withdraw of a crossed claim that the object\'s storage fails to write (answered storage at first) undoes the claim all the same: the object writes it again, and its units are back, after a restart too', async () => {
  const at = { ns: 'counting', capacity: 1 }
  const crossed = await pool('pool-crossed-refused', 'crossed', { ...at, n: 1, id: 'w', refusePool: '1' })
  assert.equal(crossed.letGo.op, 'withdraw', JSON.stringify(crossed))
  assert.equal(crossed.letGo.answer.error?.code, 'storage', JSON.stringify(crossed))
  assert.equal(crossed.remaining, 1, JSON.stringify(crossed))
  await restart('CountingHoldfast', 'pool-crossed-refused')
  assert.deepEqual(await pool('pool-crossed-refused', 'remaining', at), { remaining: 1 }, 'the undo was written again')
})

test('POOL-01 across an object reset: a withdraw of a crossed claim (its id drawn by workerStore) that the object\'s storage fails to write is asked again until kept, so an object reset before it wrote the undo again does not keep the claim\'s units for good; a storage that recovers answers it withdrawn', async () => {
  // Not asked again when answered storage: the next instance read the claim back (the undo lived in
  // memory only), and its unit stayed taken for good by a claim whose id nobody knew.
  const at = { ns: 'counting', capacity: 1 }
  const reset = await pool('pool-withdraw-refused-reset', 'crossed', { ...at, n: 1, drawn: '1', refusePool: '1000', resetOnStorage: '1' })
  assert.equal(reset.letGo.answer.error?.code, 'storage', JSON.stringify(reset))
  assert.deepEqual(reset.last, { op: 'release', answer: { ok: 1 } }, `released on the next instance: ${JSON.stringify(reset)}`)
  assert.equal(reset.remaining, 1, `the unit is back: ${JSON.stringify(reset)}`)
  await restart('CountingHoldfast', 'pool-withdraw-refused-reset')
  assert.deepEqual(await pool('pool-withdraw-refused-reset', 'remaining', at), { remaining: 1 })
  // The storage recovers (three writes refused): asked again, the withdraw is answered once kept.
  const kept = await pool('pool-withdraw-refused-kept', 'crossed', { ...at, n: 1, id: 'k', refusePool: '3', settle: '1000' })
  assert.equal(kept.letGo.answer.error?.code, 'storage', JSON.stringify(kept))
  assert.deepEqual(kept.last, { op: 'withdraw', answer: { ok: 1 } }, JSON.stringify(kept))
  assert.equal(kept.remaining, 1, JSON.stringify(kept))
})

test('POOL-01 after the response: a crossed claim (its id drawn by workerStore) in a Worker that answered at once is still let go on the object\'s next instance (a withdraw, then a release): its units are not taken for good', async () => {
  // The release that follows the withdraw answered 0 was work of the request alone: the request
  // answered, workerd dropped it, and the unit stayed taken for good by a claim whose id nobody knew.
  const at = { ns: 'counting', capacity: 1 }
  const crossed = await pool('pool-crossed-early', 'crossed', { ...at, n: 1, drawn: '1', reset: '1', early: '1' })
  assert.deepEqual(crossed.answered, { ok: { claimed: true, remaining: 0 } }, JSON.stringify(crossed))
  assert.equal(crossed.cancelled.error?.name, 'CancelledError', JSON.stringify(crossed))
  await until(async () => (await pool('pool-crossed-early', 'remaining', at)).remaining === 1, 5_000, 'the unit is back after the response')
})

test('POOL-01/POOL-03 over Workers RPC: a claimed answer that crossed its caller\'s cancel is withdrawn, and the object keeps the claim when another caller of its id was told claimed (joined while it waited, or answered it open); told to that caller alone, it is undone as if it never was', async () => {
  // The crossed answer was released at once, though the other caller had been told claimed: its unit
  // went back to the pool, to be sold again (an oversell).
  for (const [name, line] of [
    ['pool-crossed-joined', '1'],
    ['pool-crossed-known', '0'],
  ]) {
    const at = { capacity: 1 }
    const crossed = await pool(name, 'crossed', { ...at, n: 1, id: 'x', line, others: '1' })
    assert.deepEqual(crossed.answered, { ok: { claimed: true, remaining: 0 } }, `${name}: ${JSON.stringify(crossed)}`)
    assert.equal(crossed.told, true, 'the other caller was told claimed')
    assert.equal(crossed.cancelled.error?.name, 'CancelledError', JSON.stringify(crossed))
    assert.equal(crossed.remaining, 0, `${name}: the unit the other caller holds is not back in the pool: ${JSON.stringify(crossed)}`)
    assert.deepEqual(crossed.letGo, { op: 'withdraw', asker: 'string', answer: { ok: 0 } }, `${name}: withdrawn, and kept: the other caller's`)
    assert.deepEqual(await pool(name, 'claim', { ...at, n: 1, id: 'third' }), { claimed: false, remaining: 0 }, 'not sold again')
    assert.deepEqual(await pool(name, 'release', { ...at, id: 'x' }), { released: true }, 'the other caller releases what it holds')
    assert.deepEqual(await pool(name, 'remaining', at), { remaining: 1 })
  }
  // Told to the cancelled caller alone: undone, its id forgotten — asked again, a claim anew that takes its unit.
  const at = { capacity: 1 }
  const alone = await pool('pool-crossed-alone', 'crossed', { ...at, n: 1, id: 'y', line: '0', others: '0' })
  assert.deepEqual(alone.letGo, { op: 'withdraw', asker: 'string', answer: { ok: 1 } }, JSON.stringify(alone))
  assert.equal(alone.remaining, 1, JSON.stringify(alone))
  assert.deepEqual(await pool('pool-crossed-alone', 'claim', { ...at, n: 1, id: 'y' }), { claimed: true, remaining: 0, id: 'y', units: 1 })
  assert.deepEqual(await pool('pool-crossed-alone', 'remaining', at), { remaining: 0 }, 'the claim anew holds its unit')
  assert.deepEqual(await pool('pool-crossed-alone', 'release', { ...at, id: 'y' }), { released: true })
})

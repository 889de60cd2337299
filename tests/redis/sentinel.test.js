// Sentinel: one primary, two replicas, three sentinels, with ioredis (a Redis with `sentinels`) and
// node-redis (createSentinel) finding the primary through them.
// A graceful failover (SENTINEL FAILOVER) and the lost write — the replicas paused, a grant, the
// primary killed, the replicas resumed and one promoted without the grant: fences keep growing, the
// request is never granted twice (its holder learns it lost the lease), and holds carry on. Pools
// (#16): a graceful failover keeps the claims answered, ids and the line.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openRedisStore, LostError } from 'holdfast/redis'
import { startSentinelSet, raw, later, sleep, listenersAroundStores } from './helpers.js'

async function untilPrimaryMoves(set, from, ms = 30_000) {
  const end = Date.now() + ms
  for (;;) {
    const port = await set.primaryPort().catch(() => from)
    if (port !== from && port > 0) return port
    if (Date.now() > end) throw new Error(`the sentinels did not promote a replica in ${ms}ms`)
    await sleep(100)
  }
}

for (const kind of ['ioredis', 'node-redis'])
test(`LOCK-02/LOCK-05 Sentinel (${kind}): a graceful failover keeps the lease and its fence; fences keep growing; holds carry on; a waiter is woken after it`, async t => {
  const set = await startSentinelSet(t)
  const a = await openRedisStore({ redis: await set.client(kind) })
  const b = await openRedisStore({ redis: await set.client(kind) })
  assert.equal(a.server.topology, 'sentinel')
  later(t, () => Promise.all([a.close(), b.close()]))
  const lock = a.lock('failover', { ttl: '3s' })
  const lease = await lock.acquire('k')
  const fences = [lease.fence]
  for (let i = 0; i < 5; i++) fences.push(await b.lock('failover').hold(`other-${i}`, l => l.fence))
  await raw(set.primary.port, 'WAIT', '2', '2000')
  assert.equal(await raw(set.sentinels[0].port, 'SENTINEL', 'FAILOVER', 'mymaster'), 'OK')
  await untilPrimaryMoves(set, set.primary.port)
  // The lease was replicated before the failover: its renewals go on on the new primary.
  await sleep(3_500)
  assert.equal(lease.lost, false, `the lease was lost: ${lease.signal.reason?.message}`)
  assert.deepEqual(await b.lock('failover').tryHold('k', () => 'barged'), { acquired: false })
  // A waiter in the other store, woken by the release on the new primary (its pub/sub moved there too).
  const waiting = b.lock('failover', { ttl: '30s' }).hold('k', { wait: '20s' }, l => ({ fence: l.fence, at: Date.now() }))
  for (let i = 0; i < 200 && !(await a.inspect()).some(e => e.name === 'failover' && e.waiting === 1); i++) await sleep(10)
  const releasedAt = Date.now()
  await lease.release()
  const woken = await waiting
  assert.ok(woken.at - releasedAt < 5_000, `woken ${woken.at - releasedAt}ms after the release (a heartbeat comes every 10 s)`)
  const after = await lock.hold('k', { wait: '10s' }, l => l.fence)
  assert.ok(woken.fence > Math.max(...fences) && after > woken.fence, `fences ${woken.fence}, ${after} after the failover`)
})

for (const kind of ['ioredis', 'node-redis'])
test(`LOCK-02 Sentinel (${kind}), the lost write: replicas paused, a grant, the primary killed, a replica promoted without it — the next fence is larger and the request is never granted twice`, async t => {
  const set = await startSentinelSet(t)
  const a = await openRedisStore({ redis: await set.client(kind) })
  const b = await openRedisStore({ redis: await set.client(kind) })
  later(t, () => Promise.all([a.close(), b.close()]))
  const before = await a.lock('lost').hold('k', l => l.fence)
  await raw(set.primary.port, 'WAIT', '2', '2000')
  for (const r of set.replicas) r.kill('SIGSTOP')
  // Cut the replicas' links on the primary too: a stopped replica's socket would still take in the
  // grant (the kernel buffers it), and the replica would apply it once resumed, before any promotion.
  await raw(set.primary.port, 'CLIENT', 'KILL', 'TYPE', 'replica')
  let granted = 0
  let lease
  const held = a.lock('lost', { ttl: '3s' }).hold('k', async l => {
    granted++
    lease = l
    await new Promise(r => l.signal.addEventListener('abort', r))
    return 'ended'
  })
  const heldEnds = assert.rejects(held, LostError)
  while (!lease) await sleep(5)
  assert.ok(lease.fence > before)
  set.primary.kill('SIGKILL')
  for (const r of set.replicas) r.kill('SIGCONT')
  await untilPrimaryMoves(set, set.primary.port)
  // The new primary never saw the grant: the key is free there, and its next fence is still larger.
  const next = await b.lock('lost').hold('k', { wait: '20s' }, l => l.fence)
  assert.ok(next > lease.fence, `fence ${next} after the lost grant of ${lease.fence}`)
  // The forgotten holder learns it at its next renewal: lost, never granted again.
  await heldEnds
  assert.ok(lease.signal.reason instanceof LostError)
  assert.equal(granted, 1)
  const again = await a.lock('lost').hold('k', { wait: '10s' }, l => l.fence)
  assert.ok(again > next)
})

for (const kind of ['ioredis', 'node-redis'])
test(`#16 Sentinel (${kind}): a graceful failover keeps every claim answered (POOL-02 by replication), ids answer their first outcome on the new primary, and a waiting claim is served there`, async t => {
  const set = await startSentinelSet(t)
  const a = await openRedisStore({ redis: await set.client(kind) })
  const b = await openRedisStore({ redis: await set.client(kind) })
  later(t, () => Promise.all([a.close(), b.close()]))
  const seats = a.pool('failover', { capacity: 10 })
  for (let i = 0; i < 5; i++) assert.equal((await seats.claim(2, { id: `order-${i}` })).claimed, true)
  const waiting = b.pool('failover', { capacity: 10 }).claim(2, { wait: '30s', id: 'late' })
  for (let i = 0; i < 200 && (await a.inspect()).find(e => e.kind === 'pool')?.waiting !== 1; i++) await sleep(10)
  await raw(set.primary.port, 'WAIT', '2', '2000')
  assert.equal(await raw(set.sentinels[0].port, 'SENTINEL', 'FAILOVER', 'mymaster'), 'OK')
  await untilPrimaryMoves(set, set.primary.port)
  assert.equal(await seats.remaining(), 0, 'every claim replicated')
  assert.equal((await b.pool('failover', { capacity: 10 }).claim(2, { id: 'order-3' })).remaining, 2, 'the first outcome of order-3')
  // The waiter kept its place (heartbeats on the new primary); a release there serves it.
  assert.equal(await seats.release('order-0'), true)
  const served = await waiting
  assert.deepEqual([served.claimed, served.remaining], [true, 0])
})

for (const kind of ['ioredis', 'node-redis'])
test(`#15 Sentinel (${kind}): a store closed leaves no listener on the application's client`, async t => {
  // node-redis's Sentinel client was given a 'topology-change' listener by each store (a new primary:
  // wake-ups may have been missed), never taken off at close(): the closed store stayed reachable
  // from the client, never collected, and each store opened on it added one more.
  const set = await startSentinelSet(t)
  const { before, after } = await listenersAroundStores(openRedisStore, await set.client(kind))
  assert.deepEqual(after, before)
})

// Redis Cluster while it changes under the stores: a slot moved to another primary (resharding:
// CLUSTER SETSLOT … IMPORTING / MIGRATING, MIGRATE … KEYS, SETSLOT … NODE) and a primary failed over
// to its replica (CLUSTER FAILOVER, and a kill -9), while a lease is held, a hold waits and a pool's
// claim waits, on the slots that change. What we promise (docs/redis.md, *Cluster*): one holder a key
// (LOCK-01), fences that only grow (LOCK-02), no oversell (POOL-01), and a waiter woken by the release,
// not at its heartbeat, wherever its key's slot went; what fails says so and nothing hangs.
// The waiting stores run on a clock that creeps (1 ms every 5 ms): what the store does at once (a
// catch-up after its subscriber may have missed messages) runs, but their heartbeats (every ttl/3, 10 s
// of that clock, 50 s of the test's) never come, so a waiter is answered by its wake-up or not at all.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openRedisStore } from 'holdfast/redis'
import { manualClock } from 'holdfast/testing'
import { startCluster, raw, later, sleep } from './helpers.js'

const lockKey = (name, key) => `holdfast:{l:${name}:${key}}:m`
const poolKey = name => `holdfast:{p:${name}}:m`

/** The primary (from `cluster.layout()`, as `port` says) that serves `slot` now. */
async function ownerOf(cluster, slot, port) {
  const nodes = await cluster.layout(port)
  return nodes.find(n => !n.replica && n.slots.some(([a, b]) => a <= slot && slot <= b))
}

/**
 * Moves `slot` to the primary `to`, as `redis-cli --cluster reshard` does: IMPORTING on the target,
 * MIGRATING on the source, its keys migrated one at a time (`between()` runs after the first: the slot
 * half moved), then SETSLOT … NODE on both and every other primary.
 */
async function moveSlot(cluster, slot, to, between = async () => {}) {
  const from = await ownerOf(cluster, slot)
  assert.notEqual(from.id, to.id)
  assert.equal(await raw(to.port, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id), 'OK')
  assert.equal(await raw(from.port, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id), 'OK')
  const keys = [...String(await raw(from.port, 'CLUSTER', 'GETKEYSINSLOT', slot, 1000)).matchAll(/\$\d+\r\n([^\r]+)\r\n/g)].map(m => m[1])
  assert.ok(keys.length > 0, `slot ${slot} holds no key`)
  for (const [i, key] of keys.entries()) {
    assert.equal(await raw(from.port, 'MIGRATE', '127.0.0.1', to.port, key, 0, 5000), 'OK')
    if (i === 0) await between()
  }
  for (const n of [to, from, ...(await cluster.layout()).filter(n => !n.replica && n.id !== to.id && n.id !== from.id)])
    assert.equal(await raw(n.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', to.id), 'OK')
}

/**
 * A store on `cluster` whose clock creeps (above), closed after the test: the clock then runs fast,
 * so that what its close waits for (a second, by its clock) does not take the test's minutes. On
 * `redis` if given (else a client of `kind`); its clock stands still while `pace.creeps` is false.
 */
async function creeping(t, cluster, kind, { redis, pace = { creeps: true } } = {}) {
  const clock = manualClock()
  const timer = setInterval(() => pace.creeps && clock.advance(1), 5)
  const store = await openRedisStore({ redis: redis ?? (await cluster.client(kind)), clock })
  later(t, async () => {
    clearInterval(timer)
    const closing = store.close()
    const fast = setInterval(() => clock.advance(100), 5)
    await bounded(closing, 'close() never settled', 10_000).finally(() => clearInterval(fast))
  })
  return store
}

/** Until `check()` is truthy (asked every 20 ms), for at most `ms`; else fails saying `what`. */
async function until(check, what, ms = 10_000) {
  const end = Date.now() + ms
  for (;;) {
    if (await check()) return
    assert.ok(Date.now() < end, what)
    await sleep(20)
  }
}

/** `promise`, or a rejection saying `what` `ms` on: bounds an answer only a wake-up can bring. */
function bounded(promise, what, ms = 5_000) {
  let timer
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(what)), ms)))]).finally(() => clearTimeout(timer))
}

/** The sharded channels `port` has subscribers on. */
async function shardChannels(port) {
  return String(await raw(port, 'PUBSUB', 'SHARDCHANNELS', 'holdfast:w:*')).split('holdfast:w:').length - 1
}

/**
 * A lease of `lock` on `key` held by `a`, a hold of b's waiting behind it, a claim of `pool` held by
 * `a` and one of b's waiting for it, each waiter's channel subscribed.
 */
async function busy(a, b, lock, key, pool) {
  const lease = await a.lock(lock, { ttl: '30s' }).acquire(key)
  const waiter = b.lock(lock, { ttl: '30s' }).hold(key, { wait: '30s' }, l => l.fence)
  const held = await a.pool(pool, { capacity: 1 }).claim(1)
  assert.equal(held.claimed, true)
  const claim = b.pool(pool, { capacity: 1 }).claim(1, { wait: '30s' })
  await until(async () => {
    const seen = await a.inspect()
    return seen.find(e => e.name === lock)?.waiting === 1 && seen.find(e => e.name === pool)?.waiting === 1
  }, 'the waiters did not join their lines')
  return { lease, waiter, held, claim }
}

for (const kind of ['ioredis', 'node-redis'])
test(`Cluster (${kind}), resharding: a slot holding a lease, a waiter and a pool moved to another primary while holds and claims go on; the waiter is woken by the release there (LOCK-01, LOCK-02, POOL-01)`, async t => {
  const cluster = await startCluster(t)
  const a = await openRedisStore({ redis: await cluster.client(kind) })
  const b = await creeping(t, cluster, kind)
  const c = await openRedisStore({ redis: await cluster.client(kind) })
  later(t, () => Promise.all([a.close(), c.close()]))
  const port = cluster.nodes[0].port
  const lockSlot = await raw(port, 'CLUSTER', 'KEYSLOT', lockKey('moving', 'k'))
  const poolSlot = await raw(port, 'CLUSTER', 'KEYSLOT', poolKey('moving-seats'))
  const { lease, waiter, held, claim } = await busy(a, b, 'moving', 'k', 'moving-seats')
  const from = await ownerOf(cluster, lockSlot)
  const to = (await cluster.layout()).find(n => !n.replica && n.id !== from.id)

  // Half moved (the lock's meta on the target, its line still on the source): a third store asks for
  // the key and for a unit; Redis answers TRYAGAIN or ASK until the slot is whole again.
  let tried
  let extra
  await moveSlot(cluster, lockSlot, to, async () => {
    tried = c.lock('moving', { ttl: '30s' }).tryHold('k', () => 'taken')
    extra = c.pool('moving-seats').claim(1)
    await sleep(200)
  })
  await moveSlot(cluster, poolSlot, (await cluster.layout()).find(n => !n.replica && n.id !== from.id && n.id !== to.id) ?? to)
  assert.equal((await bounded(tried, 'a tryHold asked as the slot moved was not answered')).acquired, false, 'one holder a key (LOCK-01)')
  assert.equal((await bounded(extra, 'a claim asked as the slot moved was not answered')).claimed, false, 'no oversell (POOL-01)')
  assert.ok((await raw(to.port, 'CLUSTER', 'COUNTKEYSINSLOT', lockSlot)) >= 2, "the lock's keys are on the new primary")

  // The release there wakes b's waiter, whose channel was on the old primary.
  await lease.release()
  const fence = await bounded(waiter, 'the waiter was not woken by the release once its slot had moved')
  assert.ok(fence > lease.fence, 'fences grow (LOCK-02)')
  await held.claim.release()
  const served = await bounded(claim, 'the waiting claim was not woken by the release once its slot had moved')
  assert.equal(served.claimed, true)
  assert.equal(served.remaining, 0)
  assert.equal((await c.pool('moving-seats').claim(1)).claimed, false, 'no oversell (POOL-01)')

  // New waits on the moved slot are woken too (a channel subscribed anew, on the new primary).
  const again = await a.lock('moving', { ttl: '30s' }).acquire('k')
  const next = b.lock('moving', { ttl: '30s' }).hold('k', { wait: '30s' }, l => l.fence)
  await until(async () => (await a.inspect()).find(e => e.name === 'moving')?.waiting === 1, 'the second waiter did not join the line')
  await again.release()
  assert.ok((await bounded(next, 'a later waiter on the moved slot was not woken')) > again.fence)
})

/**
 * A node-redis Cluster client seen through two gates the test shuts and opens: while `subscriptions`
 * is shut, each sharded subscription waits before it goes to the client (`waiting` counts them); while
 * `answers` is shut, each command goes to Redis at once, and its answer, once there, waits before the
 * store reads it (`held` counts them). `asking` counts the commands not answered to the store yet,
 * `subscribing` the subscriptions not settled yet, `stirred` when one last began or settled.
 */
function gated(client) {
  const gate = () => {
    let open = () => {}
    let passed = Promise.resolve()
    return {
      shut: () => void (passed = new Promise(resolve => (open = resolve))),
      open: () => open(),
      get passed() {
        return passed
      },
    }
  }
  const g = { subscriptions: gate(), answers: gate(), waiting: 0, held: 0, asking: 0, subscribing: 0, stirred: Date.now() }
  g.client = new Proxy(client, {
    get(target, prop) {
      if (prop === 'sSubscribe')
        return async (...args) => {
          g.subscribing++
          g.stirred = Date.now()
          try {
            g.waiting++
            await g.subscriptions.passed
            g.waiting--
            return await target.sSubscribe(...args)
          } finally {
            g.subscribing--
            g.stirred = Date.now()
          }
        }
      if (prop === 'sendCommand')
        return async (...args) => {
          g.asking++
          const answer = target.sendCommand(...args)
          await answer.catch(() => {})
          const passed = g.answers.passed
          g.held++
          await passed
          g.held--
          g.asking--
          return answer
        }
      const value = Reflect.get(target, prop)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return g
}

test('Cluster (node-redis), resharding while a waiter asks Redis: the catch-up once its channel is subscribed again is not lost to the answer of a question sent before, and the release published meanwhile is heard (LOCK-02, POOL-01)', async t => {
  const cluster = await startCluster(t)
  const a = await openRedisStore({ redis: await cluster.client('node-redis') })
  later(t, () => a.close())
  // b's clock stands still while the test arranges the order of things (its timers, the catch-up's
  // questions among them, wait for it), and creeps again at the end: its heartbeats never come.
  const pace = { creeps: true }
  const g = gated(await cluster.client('node-redis'))
  const b = await creeping(t, cluster, 'node-redis', { redis: g.client, pace })
  const port = cluster.nodes[0].port
  const { lease, waiter, held, claim } = await busy(a, b, 'doubted', 'k', 'doubted-seats')
  await until(() => g.asking === 0, "b's waiters still ask")
  // Each slot to another primary: Redis drops b's subscriptions of its channels there, and b
  // subscribes them again (held back here), catching up before and once they are back.
  pace.creeps = false
  g.subscriptions.shut()
  g.answers.shut()
  for (const name of [lockKey('doubted', 'k'), poolKey('doubted-seats')]) {
    const slot = await raw(port, 'CLUSTER', 'KEYSLOT', name)
    const from = await ownerOf(cluster, slot)
    await moveSlot(cluster, slot, (await cluster.layout()).find(n => !n.replica && n.id !== from.id))
  }
  await until(() => g.waiting >= 2, "b did not subscribe its waiters' channels again")
  // The catch-up before: b's waiter and claim ask where they stand; Redis answers both "waiting" (the
  // answers held back), then the releases publish their grants to channels nobody hears.
  pace.creeps = true
  await until(() => g.held >= 2, 'the catch-up did not ask where the waiter and the claim stand')
  pace.creeps = false
  await lease.release()
  await held.claim.release()
  // The channels subscribed again, then the catch-up after them (and those after node-redis's new
  // pub/sub connections were ready, each subscribing again): only then the old answers come.
  g.subscriptions.open()
  await until(() => g.subscribing === 0 && Date.now() - g.stirred > 100, 'the channels were not subscribed again')
  g.answers.open()
  pace.creeps = true
  const fence = await bounded(waiter, 'the waiter was not woken: the catch-up after its channel was subscribed again was lost')
  assert.ok(fence > lease.fence, 'fences grow (LOCK-02)')
  const served = await bounded(claim, 'the waiting claim was not woken: the catch-up after its channel was subscribed again was lost')
  assert.equal(served.claimed, true)
  assert.equal((await a.pool('doubted-seats').claim(1)).claimed, false, 'no oversell (POOL-01)')
})

/**
 * A Cluster with replicas (`options` of startCluster), a store `a` and a creeping store `b` of `kind`,
 * and `busy` on lock `lock` (key `k`) and a pool whose slots one primary serves; resolves once that
 * primary's replica caught up with it.
 */
async function beforeFailover(t, kind, lock, options) {
  const cluster = await startCluster(t, options)
  const a = await openRedisStore({ redis: await cluster.client(kind) })
  const b = await creeping(t, cluster, kind)
  later(t, () => a.close())
  const port = cluster.nodes[0].port
  // A lock and a pool whose slots the same primary serves.
  const lockSlot = await raw(port, 'CLUSTER', 'KEYSLOT', lockKey(lock, 'k'))
  const primary = await ownerOf(cluster, lockSlot)
  let pool
  for (let i = 0; !pool; i++) if ((await ownerOf(cluster, await raw(port, 'CLUSTER', 'KEYSLOT', poolKey(`seats-${i}`)))).id === primary.id) pool = `seats-${i}`
  const busied = await busy(a, b, lock, 'k', pool)
  const replica = (await cluster.layout()).find(n => n.replica && n.primary === primary.id)
  await until(async () => String(await raw(replica.port, 'INFO', 'replication')).match(/slave_repl_offset:(\d+)/)?.[1] === String(await raw(primary.port, 'INFO', 'replication')).match(/master_repl_offset:(\d+)/)?.[1], 'the replica did not catch up')
  return { cluster, a, b, port, lockSlot, primary, pool, replica, ...busied }
}

for (const kind of ['ioredis', 'node-redis'])
test(`Cluster with replicas (${kind}), CLUSTER FAILOVER: the lease, its fence, the waiter and the waiting claim carry over to the promoted replica, woken by the release there`, async t => {
  const { cluster, a, lockSlot, pool, lease, waiter, held, claim, replica } = await beforeFailover(t, kind, 'failing', { replicas: 1 })

  assert.equal(await raw(replica.port, 'CLUSTER', 'FAILOVER'), 'OK')
  await until(async () => (await ownerOf(cluster, lockSlot))?.id === replica.id, 'the replica was not promoted')

  await lease.release()
  assert.ok((await bounded(waiter, 'the waiter was not woken by the release on the promoted replica')) > lease.fence, 'fences grow (LOCK-02)')
  await held.claim.release()
  assert.equal((await bounded(claim, 'the waiting claim was not woken on the promoted replica')).claimed, true)
  assert.equal((await a.pool(pool).claim(1)).claimed, false, 'no oversell (POOL-01)')
})

for (const kind of ['ioredis', 'node-redis'])
test(`Cluster with replicas (${kind}), kill -9 of a primary: holds asked meanwhile are answered once its replica took over (ioredis) or ClosedError within their wait (node-redis); the waiter is woken there, a lease lives on with its fence`, async t => {
  const { cluster, a, port, lockSlot, primary, pool, lease, waiter, held, claim, replica } = await beforeFailover(t, kind, 'dying', { replicas: 1, nodeTimeout: 1000 })

  // A key of another name on the same primary: asked while nothing serves its slot.
  let other
  for (let i = 0; !other; i++) if ((await ownerOf(cluster, await raw(port, 'CLUSTER', 'KEYSLOT', lockKey('dying', `other-${i}`)))).id === primary.id) other = `other-${i}`
  // A store on the real clock with a waiter too: its close() after the kill.
  const d = await openRedisStore({ redis: await cluster.client(kind) })
  later(t, () => bounded(d.close(), 'close() never settled'))
  const subscribed = await shardChannels(primary.port)
  const dWaits = d.lock('dying', { ttl: '30s' }).hold('k', { wait: '30s' }, () => {}).catch(e => e)
  await until(async () => (await a.inspect()).find(e => e.name === 'dying')?.waiting === 2, 'the second waiter did not join the line')
  await until(async () => (await shardChannels(primary.port)) === subscribed + 1, "the second waiter's channel was not subscribed")
  const killedAt = Date.now()
  await cluster.nodes.find(n => n.port === primary.port).stop()
  // A try has no wait: past its second's grace it is answered ClosedError, saying Redis was unreachable.
  const tried = a.lock('dying', { ttl: '30s' }).tryHold('k', () => 'taken').catch(e => e)
  if (kind === 'node-redis') {
    // node-redis's Cluster client never learns that a primary died (docs/redis.md, *Cluster*): what
    // goes to its slots waits on its connection until it comes back. What we promise there: every ask
    // answered ClosedError within its wait and a second, nobody granted a key held, close() not stuck.
    const asked = a.lock('dying', { ttl: '30s' }).acquire(other, { wait: '2s' }).catch(e => e)
    for (const answer of [await bounded(tried, 'a tryHold was not answered'), await bounded(asked, 'an acquire was not answered')]) {
      assert.equal(answer.code, 'closed', String(answer))
      assert.match(answer.message, /unreachable/)
    }
    assert.ok(Date.now() - killedAt < 4_000, 'answered within the wait and its grace')
    // close() unsubscribes its waiters' channels: on the dead primary's connection, which never answers.
    const closing = Date.now()
    await bounded(d.close(), 'close() of a store whose waiter was on the dead primary never settled')
    assert.equal((await dWaits).code, 'closed')
    assert.ok(Date.now() - closing < 3_000, 'close() waits a second for what it releases, no more')
    // b's waiters are answered ClosedError by its close, after the test.
    for (const answer of [waiter, claim]) answer.catch(() => {})
    return
  }
  const asked = a.lock('dying', { ttl: '30s' }).acquire(other, { wait: '20s' })
  await until(async () => (await ownerOf(cluster, lockSlot, replica.port))?.id === replica.id, 'the replica was not promoted', 15_000)
  const otherLease = await bounded(asked, 'an acquire asked during the failover was not answered', 15_000)
  await otherLease.release()
  const answer = await bounded(tried, 'a tryHold asked during the failover was not answered', 15_000)
  assert.ok(answer.acquired === false || answer.code === 'closed', `one holder a key (LOCK-01): ${answer}`)
  t.diagnostic(`promoted and answered ${Date.now() - killedAt}ms after the kill`)

  await d.close()
  assert.equal(lease.signal.aborted, false, 'the lease lives on')
  await lease.release()
  assert.ok((await bounded(waiter, 'the waiter was not woken by the release on the promoted replica')) > lease.fence, 'fences grow (LOCK-02)')
  await held.claim.release()
  assert.equal((await bounded(claim, 'the waiting claim was not woken on the promoted replica')).claimed, true)
  assert.equal((await a.pool(pool).claim(1)).claimed, false, 'no oversell (POOL-01)')
})

// The clients users pass are configured for their app, not for holdfast: each option a user may
// reasonably set on an ioredis or node-redis client either works fully (a contended hold served in
// order with growing fences, a pool claim, a waiting claim woken by the release, inspect() seeing
// both) or is refused when the store opens, with an InvalidError that names the option. The client
// under test is the run's (HOLDFAST_REDIS_CLIENT); the Cluster and ACL cases run with ioredis.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openRedisStore, InvalidError, ClosedError } from 'holdfast/redis'
import { manualClock } from 'holdfast/testing'
import { startRedis, startCluster, startSentinelSet, nodeRedisConnected, redisClient, raw, sleep, later, tempDir, freePort, CLIENT } from './helpers.js'

/** `promise`, or a rejection saying `what` 15 s on: bounds an answer only a wake-up can bring (its store's clock never moves). */
function bounded(promise, what) {
  let timer
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(what)), 15_000)))]).finally(() => clearTimeout(timer))
}

/** Polls `store.inspect()` until `check(list)` holds; rejects after `ms` with the last list. */
async function until(store, check, what, ms = 5_000) {
  const end = Date.now() + ms
  for (;;) {
    const list = await store.inspect()
    if (check(list)) return list
    if (Date.now() > end) throw new Error(`${what}: not seen in ${ms}ms; inspect() answered ${JSON.stringify(list)}`)
    await sleep(10)
  }
}

/** An ioredis client with `options` (a `Cluster` when `nodes` is given), closed after the test. */
async function ioredis(t, port, options = {}) {
  const { Redis } = await import('ioredis')
  const client = new Redis({ host: '127.0.0.1', port, ...options })
  client.on('error', () => {})
  later(t, () => client.disconnect())
  return client
}

/**
 * A node-redis client with `options`, closed after the test: connected (`connect` true), not (false),
 * or its connect() under way, not awaited (`'started'`).
 */
async function nodeRedis(t, url, options = {}, connect = true) {
  const { createClient } = await import('redis')
  return nodeRedisConnected(t, createClient({ url, ...options }), connect)
}

/**
 * Cuts every pub/sub connection of the servers on `ports` (one, or a Cluster's nodes), and waits until
 * as many are back on each (a connection is listed as pub/sub once it subscribed again).
 */
async function cutPubSub(...ports) {
  const count = async port => String(await raw(port, 'CLIENT', 'LIST', 'TYPE', 'pubsub')).split('\n').filter(l => l.includes('id=')).length
  const before = await Promise.all(ports.map(count))
  assert.ok(before.some(n => n > 0), 'a pub/sub connection to cut')
  for (const port of ports) await raw(port, 'CLIENT', 'KILL', 'TYPE', 'pubsub')
  const end = Date.now() + 10_000
  for (const [i, port] of ports.entries()) {
    while ((await count(port)) < before[i]) {
      if (Date.now() > end) throw new Error('the pub/sub connections did not come back in 10 s')
      await sleep(20)
    }
  }
}

/**
 * Two stores on clients `make()` makes: `a` holds, `b` waits with a clock that never moves (no
 * heartbeat: only a wake-up answers it). A contended key served in order with growing fences
 * (LOCK-01/02), a pool's claim (POOL-01) and a waiting one, inspect() of either store seeing both,
 * then no key busy and the pool whole once all is released. With `port`, the pub/sub connections of
 * that server are cut too, and a waiter is woken all the same once they are back.
 */
async function exercise(t, make, options = {}) {
  const a = await openRedisStore({ redis: await make() })
  const b = await openRedisStore({ redis: await make(), clock: manualClock() })
  later(t, () => Promise.all([a.close(), b.close()]))

  const first = await a.lock('jobs', { ttl: '30s' }).acquire('k')
  const order = []
  const waiters = []
  for (let i = 0; i < 2; i++) {
    waiters.push(b.lock('jobs', { ttl: '30s' }).hold('k', { wait: '1m' }, lease => void order.push([i, lease.fence])))
    await until(a, list => list.find(e => e.name === 'jobs')?.waiting === i + 1, `waiter ${i} in line`)
  }
  const seats = a.pool('seats', { capacity: 3 })
  const c = await seats.claim(3, { id: 'order-1' })
  assert.deepEqual([c.claimed, c.remaining], [true, 0], 'POOL-01: the claim took its units')
  const later1 = b.pool('seats').claim(1, { wait: '1m' })
  await until(a, list => list.find(e => e.kind === 'pool')?.waiting === 1, 'the waiting claim in line')

  for (const store of [a, b]) {
    const list = await store.inspect()
    assert.deepEqual(
      list.map(e => (e.kind === 'pool' ? [e.kind, e.name, e.remaining, e.claims, e.waiting] : [e.kind, e.name, e.key, e.holders.map(h => h.fence), e.waiting])),
      [
        ['lock', 'jobs', 'k', [first.fence], 2],
        ['pool', 'seats', 0, 1, 1],
      ],
      'inspect() sees the held key and the pool',
    )
  }

  await first.release()
  await bounded(Promise.all(waiters), 'the waiters were not woken by the release')
  assert.deepEqual(order.map(([i]) => i), [0, 1], 'LOCK-01: served in the order they asked')
  assert.ok(first.fence < order[0][1] && order[0][1] < order[1][1], `LOCK-02: fences grow: ${first.fence}, ${order.map(o => o[1])}`)
  assert.equal(await c.claim.release(), true)
  const served = await bounded(later1, 'the waiting claim was not woken by the release')
  assert.deepEqual([served.claimed, served.remaining], [true, 2], 'the waiting claim took its unit')
  await served.claim.release()
  if (options.port !== undefined) {
    // The wake-ups' connections cut: the client connects again, the store subscribes again (or the
    // client does) and catches up; a waiter is still woken by the release.
    await cutPubSub(options.port)
    const lease = await a.lock('jobs', { ttl: '30s' }).acquire('k')
    const waiter = b.lock('jobs', { ttl: '30s' }).hold('k', { wait: '1m' }, l => l.fence)
    await until(a, list => list.find(e => e.name === 'jobs')?.waiting === 1, 'the waiter in line after the reconnection')
    await lease.release()
    assert.ok((await bounded(waiter, 'the waiter was not woken after the subscriber reconnected')) > lease.fence)
  }
  const idle = (await a.inspect()).map(e => [e.kind, e.name, e.remaining, e.claims, e.waiting])
  assert.deepEqual(idle, [['pool', 'seats', 3, 0, 0]], 'no key busy once all is released; the pool whole again')
  return { a, b }
}

/**
 * An inspect(), a claim and a hold of `store` (with `remaining`, a pool's remaining() too; with
 * `release`, the release of a claim made before, by the id the store drew), each sent while Redis is away: `down()` takes it away (stops its servers, or cuts the connections), then each
 * is sent once `client` (the store's) knows it is not connected (`offline(client)`, when it can tell),
 * and `up()` brings Redis back: each is answered once the client is back.
 */
async function whileAway(store, client, { down, up = async () => {}, offline = () => true, remaining = false, release = false }, what) {
  const away = async (ask, say) => {
    await down()
    for (const end = Date.now() + 5_000; !offline(client); await sleep(5)) if (Date.now() > end) throw new Error(`${what}: the client did not see Redis go`)
    const asked = ask()
    await up()
    return asked.catch(e => {
      throw Object.assign(e, { message: `${what}: ${say}: ${e.message}` })
    })
  }
  assert.ok(Array.isArray(await away(() => store.inspect(), 'inspect()')))
  const claimed = await away(() => store.pool('seats', { capacity: 3 }).claim(1, { wait: '10s' }), 'a claim')
  assert.equal(claimed.claimed, true, `${what}: claimed`)
  // Asked once, not again after no answer as a claim is (as a pool's release, confirm, resize).
  if (remaining) assert.equal(typeof (await away(() => store.pool('seats', { capacity: 3 }).remaining(), 'remaining()')), 'number')
  // Asked again only after a refusal that sent nothing (an id drawn by the store leaves no tombstone).
  // Its answer is the Redis it finds: false when the servers came back without their data.
  if (release) {
    const { claim } = await store.pool('seats', { capacity: 3 }).claim(1)
    assert.equal(typeof (await away(() => claim.release(), 'claim.release()')), 'boolean')
  }
  assert.ok((await away(() => store.lock('jobs').hold('away', { wait: '10s' }, l => l.fence), 'a hold')) > 0, `${what}: held`)
}

/** Stops `servers`, and starts them again. */
const restarting = servers => ({ down: () => Promise.all(servers.map(s => s.stop())), up: () => Promise.all(servers.map(s => s.start())) })

if (CLIENT === 'ioredis') {
  test('ioredis keyPrefix: held, waited for, claimed and inspected, every Redis key holdfast writes under the prefix', async t => {
    // SCAN's MATCH is not prefixed by ioredis, and the keys it finds come back prefixed: inspect()
    // answered [] while a key was held and a pool had claims; a waiting claim's wake-up names its
    // pool's hash as Redis knows it (prefixed), which the store did not recognise.
    const server = await startRedis(t, { appendonly: 'no' })
    await raw(server.port, 'SET', 'other:holdfast:{l:jobs:k}:m', 'not ours')
    await exercise(t, () => ioredis(t, server.port, { keyPrefix: 'app:' }), { port: server.port })
    const keys = String(await raw(server.port, 'KEYS', '*holdfast*'))
    assert.match(keys, /app:holdfast:\{p:seats\}:m/, 'the pool is kept under the keyPrefix')
    assert.doesNotMatch(keys.replaceAll('app:holdfast:', '').replaceAll('other:holdfast:', ''), /holdfast:\{/, 'nothing outside it')
    const ttl = await raw(server.port, 'PTTL', 'app:holdfast:{l:jobs:k}:m')
    assert.ok(ttl > 0, `the key's state expires once idle (PTTL ${ttl})`)
  })

  test('ioredis keyPrefix with glob characters (app*[1]:) lists only its own keys', async t => {
    const server = await startRedis(t, { appendonly: 'no' })
    const a = await openRedisStore({ redis: await ioredis(t, server.port, { keyPrefix: 'app*[1]:' }) })
    const b = await openRedisStore({ redis: await ioredis(t, server.port, { keyPrefix: 'app-x-:' }) })
    later(t, () => Promise.all([a.close(), b.close()]))
    const lease = await a.lock('jobs').acquire('k')
    const other = await b.lock('jobs').acquire('other')
    assert.deepEqual((await a.inspect()).map(e => e.key), ['k'])
    assert.deepEqual((await b.inspect()).map(e => e.key), ['other'])
    await Promise.all([lease.release(), other.release()])
  })

  test('ioredis keyPrefix under an ACL that allows only keys and channels of the prefix (~app:* &app:*): opens, and works', async t => {
    // The open's check of the user's rights named the lock's keys as arguments, which ioredis does
    // not prefix: judged against ~app:*, they were refused, and so was the store. The wake-ups'
    // channel carries the keyPrefix too (SUBSCRIBE's channel is not a key: ioredis leaves it).
    const server = await startRedis(t, { appendonly: 'no' })
    await raw(server.port, 'ACL', 'SETUSER', 'app', 'on', '>secret', '~app:*', '&app:*', '+@all')
    await exercise(t, () => ioredis(t, server.port, { keyPrefix: 'app:', username: 'app', password: 'secret' }))
  })

  test('ioredis Cluster with keyPrefix (app:, {app}: whose hash tag puts all in one slot, in redisOptions, and with enableOfflineQueue: false and lazyConnect): waiters woken by sharded pub/sub, after the subscriber reconnected too, inspect sees every node', async t => {
    // SSUBSCRIBE names its channel as a key, which ioredis prefixes; the scripts published to the
    // channel without it: no waiter was ever woken, each answered by its heartbeat alone. With the
    // keyPrefix in redisOptions, the subscriber's own connections prefix too, and subscribed again
    // (a reconnection) to the channel prefixed twice.
    const cluster = await startCluster(t)
    const { Cluster } = await import('ioredis')
    for (const options of [{ keyPrefix: 'app:' }, { keyPrefix: '{app}:' }, { redisOptions: { keyPrefix: 'red:' } }, { keyPrefix: 'off:', enableOfflineQueue: false, lazyConnect: true }]) {
      const make = () => {
        const client = new Cluster(cluster.nodes.map(n => ({ host: '127.0.0.1', port: n.port })), options)
        client.on('error', () => {})
        later(t, () => client.disconnect())
        return client
      }
      const { a, b } = await exercise(t, make)
      assert.equal(a.server.pubsub, 'sharded')
      const leases = await Promise.all(Array.from({ length: 12 }, (_, i) => a.lock('spread').acquire(`key-${i}`)))
      assert.equal((await a.inspect()).filter(e => e.name === 'spread').length, 12, 'inspect lists the keys of every node')
      const sizes = await Promise.all(cluster.nodes.map(n => raw(n.port, 'DBSIZE')))
      if (options.keyPrefix === 'app:') assert.ok(sizes.every(n => n > 0), `keys on every node: ${sizes}`)
      // A waiter, its subscriber's connections cut (ioredis subscribes again by itself), then the release.
      const waiting = b.lock('spread').hold('key-0', { wait: '1m' }, lease => lease.fence)
      await until(a, list => list.find(e => e.key === 'key-0')?.waiting === 1, 'the waiter in line')
      await cutPubSub(...cluster.nodes.map(n => n.port))
      await Promise.all(leases.map(l => l.release()))
      assert.ok((await bounded(waiting, `${JSON.stringify(options)}: the waiter was not woken once its subscriber reconnected`)) > leases[0].fence)
    }
  })
}

if (CLIENT === 'ioredis') {
  // Commands refused rather than queued while the client is not connected (enableOfflineQueue:
  // false), the client passed as soon as made (not connected yet), or made with lazyConnect (which
  // connects at its first command, refused then): the store's first commands, and its subscriber's
  // first subscription, were refused ("Stream isn't writeable"), and so was the store (ClosedError).
  const configs = {
    'enableOfflineQueue: false': { enableOfflineQueue: false },
    'enableOfflineQueue: false, lazyConnect: true': { enableOfflineQueue: false, lazyConnect: true },
    // And what needed nothing of holdfast: not connected yet (lazyConnect: connects at its first
    // command), never or at once given up across reconnections (maxRetriesPerRequest null, as
    // BullMQ asks, and 0), the commands of one tick sent as one pipeline (enableAutoPipelining),
    // another database (db: 3: the subscriber connection, duplicated, is on it too; pub/sub is not per
    // database, and the wake-ups' channels are the store's own), integers answered as text (stringNumbers).
    'lazyConnect: true': { lazyConnect: true },
    'maxRetriesPerRequest: null': { maxRetriesPerRequest: null },
    'maxRetriesPerRequest: 0': { maxRetriesPerRequest: 0 },
    'enableAutoPipelining: true': { enableAutoPipelining: true },
    'db: 3': { db: 3 },
    'stringNumbers: true': { stringNumbers: true },
  }
  for (const [name, options] of Object.entries(configs)) {
    test(`ioredis ${name}: a contended hold served in order with growing fences, a pool claim, a waiting one woken, inspect() seeing both${options.enableOfflineQueue === false ? '; commands sent while Redis is away answered once it is back' : ''}`, async t => {
      const server = await startRedis(t, { appendonly: 'no' })
      const clients = []
      const { a } = await exercise(t, async () => clients[clients.push(await ioredis(t, server.port, options)) - 1], { port: server.port })
      // A command sent while the client reconnects is refused at once ("Stream isn't writeable and
      // enableOfflineQueue options is false"): inspect() answered ClosedError, as node-redis's
      // disableOfflineQueue did.
      if (options.enableOfflineQueue === false) await whileAway(a, clients[0], { ...restarting([server]), offline: client => client.status !== 'ready', remaining: true }, name)
      if (options.db) {
        const db3 = await ioredis(t, server.port, { db: 3 })
        assert.ok((await db3.keys('holdfast:*')).length > 0, 'the pool is kept in database 3')
        assert.equal(await raw(server.port, 'DBSIZE'), 0, 'nothing in database 0')
      }
    })
  }
}

if (CLIENT === 'ioredis') {
  test('ioredis Cluster with enableOfflineQueue: false: a contended hold served in order with growing fences, a pool claim, a waiting one woken, inspect() seeing both; commands sent while the Cluster restarts answered once it is back', async t => {
    // A Cluster client that refuses commands while it is not ready ("Cluster isn't ready and
    // enableOfflineQueue options is false") was not waited out as a client of one server's refusal is: the release of a claim by the id the
    // store drew (asked again only after a refusal that sent nothing) answered ClosedError at once;
    // inspect(), remaining(), a claim and a hold were answered, asked again after no answer.
    const cluster = await startCluster(t)
    const clients = []
    const make = async () => clients[clients.push(await cluster.client('ioredis', { options: { enableOfflineQueue: false } })) - 1]
    const { a } = await exercise(t, make)
    await whileAway(a, clients[0], { ...restarting(cluster.nodes), offline: client => client.status !== 'ready', remaining: true, release: true }, 'ioredis Cluster, enableOfflineQueue: false')
  })

  test('ioredis enableOfflineQueue: false, a client the application quit before: refused ClosedError at once, not after waiting for it to be ready', async t => {
    // The wait for a client that refuses commands while not connected waited its 10 s for a client
    // that would never be ready again, and only then said it was closed.
    const server = await startRedis(t, { appendonly: 'no' })
    const client = await ioredis(t, server.port, { enableOfflineQueue: false })
    await new Promise(resolve => client.once('ready', resolve))
    await client.quit()
    await new Promise(resolve => (client.status === 'end' ? resolve() : client.once('end', resolve)))
    const from = Date.now()
    await assert.rejects(openRedisStore({ redis: client }), e => e instanceof ClosedError && /closed/.test(e.message))
    assert.ok(Date.now() - from < 2_000, `refused after ${Date.now() - from}ms`)
  })
}

if (CLIENT === 'node-redis') {
  test('node-redis: a client not connected yet is refused at open, with an InvalidError that names option redis and says to connect it', async t => {
    const server = await startRedis(t, { appendonly: 'no' })
    const client = await nodeRedis(t, server.url, {}, false)
    await assert.rejects(openRedisStore({ redis: client }), e => e instanceof InvalidError && /option redis/.test(e.message) && /await client\.connect\(\)/.test(e.message))
    assert.equal(client.isOpen, false, 'holdfast does not connect it')
  })

  // Replies as RESP3 (maps, sets, doubles, verbatim text), another database (database: 3: its
  // duplicate, the subscriber, is on it too; pub/sub is not per database), a connection name.
  const configs = {
    'RESP: 3': { RESP: 3 },
    'database: 3': { database: 3 },
    "name: 'app'": { name: 'app' },
    'disableOfflineQueue: true': { disableOfflineQueue: true },
  }
  for (const [name, options] of Object.entries(configs)) {
    test(`node-redis ${name}: a contended hold served in order with growing fences, a pool claim, a waiting one woken, inspect() seeing both`, async t => {
      const server = await startRedis(t, { appendonly: 'no' })
      await exercise(t, () => nodeRedis(t, server.url, options), { port: server.port })
      if (options.disableOfflineQueue) {
        // Passed while its connect() is under way (not awaited): it refused the store's first command
        // ("The client is offline"), and the store with it (ClosedError).
        const other = await startRedis(t, { appendonly: 'no' })
        const clients = []
        const make = async () => clients[clients.push(await nodeRedis(t, other.url, options, 'started')) - 1]
        const { a } = await exercise(t, make, { port: other.port })
        // And a command sent while it reconnected was refused the same way: inspect() answered ClosedError.
        await whileAway(a, clients[0], { ...restarting([other]), offline: client => !client.isReady, remaining: true }, 'disableOfflineQueue')
      }
      if (options.database) {
        const db3 = await nodeRedis(t, server.url, { database: 3 })
        assert.ok((await db3.keys('holdfast:*')).length > 0, 'the pool is kept in database 3')
        assert.equal(await raw(server.port, 'DBSIZE'), 0, 'nothing in database 0')
      }
      if (options.name) assert.match(String(await raw(server.port, 'CLIENT', 'LIST')), /name=app /, 'the connections keep their name')
    })
  }

  // A Sentinel's and a Cluster's connections made with disableOfflineQueue (nodeClientOptions,
  // defaults) refuse commands while not connected, as a client of one server does ("The client is
  // offline"): the store waits for the client to be ready, and goes on across a reconnection.
  const offline = {
    // The Sentinel client tells no connection's state (it finds the primary again and sends again by
    // itself): its connections are cut, the servers left running (stopped, the primary is failed over).
    sentinel: {
      options: { nodeClientOptions: { disableOfflineQueue: true } },
      start: startSentinelSet,
      away: set => ({ down: () => Promise.all(set.servers.map(s => raw(s.port, 'CLIENT', 'KILL', 'TYPE', 'normal'))) }),
    },
    cluster: {
      options: { defaults: { disableOfflineQueue: true } },
      start: startCluster,
      // remaining() too: asked while the nodes restart, it answered ClosedError "CLUSTERDOWN" (a reply
      // that passes by itself) at once, rather than waiting it out within its patience.
      away: set => ({ ...restarting(set.nodes), offline: client => client.masters.every(m => m.client?.isReady === false), remaining: true, release: true }),
    },
  }
  for (const [topology, { options, start, away }] of Object.entries(offline)) {
    test(`node-redis ${topology} with disableOfflineQueue, passed connected and while its connect() is under way: a contended hold served in order with growing fences, a pool claim, a waiting one woken, inspect() seeing both; commands sent while Redis is away answered once it is back`, async t => {
      const set = await start(t)
      const primaries = set.nodes ?? [set.primary]
      for (const passed of ['connected', 'started']) {
        // Each on a Redis with nothing in it: the ids of the first round's claims are remembered.
        for (const { port } of primaries) await raw(port, 'FLUSHALL')
        const clients = []
        const make = async () => clients[clients.push(await set.client('node-redis', { options, connect: passed === 'connected' || passed })) - 1]
        const { a } = await exercise(t, make).catch(e => {
          throw Object.assign(e, { message: `passed ${passed}: ${e.message}` })
        })
        await whileAway(a, clients[0], away(set), `passed ${passed}`)
      }
    })
  }

  test('node-redis Cluster with RESP: 3: waiters woken by sharded pub/sub (push messages), a pool claim, inspect sees every node', async t => {
    const cluster = await startCluster(t)
    const { createCluster } = await import('redis')
    const make = async () => {
      const client = createCluster({ rootNodes: cluster.nodes.map(n => ({ url: n.url })), RESP: 3 })
      client.on('error', () => {})
      await client.connect()
      later(t, () => client.destroy())
      return client
    }
    const { a } = await exercise(t, make)
    assert.equal(a.server.pubsub, 'sharded')
  })
}

if (CLIENT === 'bun') {
  /** Bun's own client with `options`, closed after the test; not connected (Bun connects at the first command). */
  const bunClient = async (t, url, options = {}) => {
    const { RedisClient } = await import('bun')
    const client = new RedisClient(url, options)
    later(t, () => client.close())
    return client
  }

  // The wake-ups' connection cut (exercise's `port`): Bun reconnects it without subscribing again,
  // and subscribing again doubled its listener; holdfast takes it off and subscribes anew.
  const configs = {
    defaults: [{}, ''],
    'enableOfflineQueue: false': [{ enableOfflineQueue: false }, ''],
    'enableAutoPipelining: false': [{ enableAutoPipelining: false }, ''],
    'database 3 (redis://…/3)': [{}, '/3'],
  }
  for (const [name, [options, path]] of Object.entries(configs)) {
    test(`Bun RedisClient ${name}: a contended hold served in order with growing fences, a pool claim, a waiting one woken, inspect() seeing both, a waiter woken after the wake-ups' connection was cut`, async t => {
      const server = await startRedis(t, { appendonly: 'no' })
      const { a } = await exercise(t, () => bunClient(t, server.url + path, options), { port: server.port })
      assert.equal(a.server.client, 'bun')
      assert.equal(a.server.topology, 'server')
      if (path === '/3') assert.equal(await raw(server.port, 'DBSIZE'), 0, 'nothing in database 0')
    })
  }

  /** The wake-ups' channels Redis has subscribers for, waited for until there are `n` (one a store). */
  async function channels(port, n) {
    const list = async () => String(await raw(port, 'PUBSUB', 'CHANNELS', 'holdfast:w:*')).match(/holdfast:w:[^\r\n]*/g) ?? []
    for (let end = Date.now() + 10_000; (await list()).length < n; await sleep(20)) if (Date.now() > end) throw new Error(`${n} channels not subscribed in 10 s: ${await list()}`)
    return list()
  }

  test("Bun RedisClient: the wake-ups' connection cut three times, each time subscribed again, and a waiter is still woken", async t => {
    const server = await startRedis(t, { appendonly: 'no' })
    const a = await openRedisStore({ redis: await bunClient(t, server.url) })
    const b = await openRedisStore({ redis: await bunClient(t, server.url), clock: manualClock() })
    later(t, () => Promise.all([a.close(), b.close()]))
    for (let i = 0; i < 3; i++) await cutPubSub(server.port)
    await channels(server.port, 2)
    const lease = await a.lock('jobs').acquire('k')
    let runs = 0
    const waiter = b.lock('jobs').hold('k', { wait: '1m' }, l => (runs++, l.fence))
    await until(a, list => list.find(e => e.name === 'jobs')?.waiting === 1, 'the waiter in line')
    await lease.release()
    assert.ok((await bounded(waiter, 'the waiter was not woken after the subscriber reconnected')) > lease.fence)
    assert.equal(runs, 1)
  })

  test('Bun RedisClient that gave up reconnecting (maxRetries): holds answer ClosedError at once; once the application connects it again, the store carries on, and its wake-ups\' connection is back by itself', async t => {
    const server = await startRedis(t, { appendonly: 'no' })
    const client = await bunClient(t, server.url, { maxRetries: 1 })
    // The waiter's store: a clock that never moves (no heartbeat), so only a wake-up answers it.
    const a = await openRedisStore({ redis: client, clock: manualClock() })
    const b = await openRedisStore({ redis: await bunClient(t, server.url) })
    later(t, () => Promise.all([a.close(), b.close()]))
    await server.stop()
    await assert.rejects(a.lock('jobs').hold('k', { wait: Infinity }, () => 'ran'), e => e instanceof ClosedError && /the Redis client was closed/.test(e.message))
    await server.start()
    await client.connect()
    await channels(server.port, 2)
    const lease = await b.lock('jobs').acquire('k')
    const waiter = a.lock('jobs').hold('k', { wait: Infinity }, l => l.fence)
    await until(b, list => list.find(e => e.name === 'jobs')?.waiting === 1, 'the waiter in line')
    await lease.release()
    assert.ok((await bounded(waiter, 'the waiter was not woken')) > lease.fence)
  })

  test('Bun RedisClient that gave up reconnecting and that the application connected again: a later cut is a reconnection again, not a client closed (an acquire cut unanswered is asked again and granted)', async t => {
    const server = await startRedis(t, { appendonly: 'no' })
    const client = await bunClient(t, server.url, { maxRetries: 1 })
    const a = await openRedisStore({ redis: client })
    later(t, () => a.close())
    await server.stop()
    await assert.rejects(a.lock('jobs').tryHold('k', () => 'ran'), e => e instanceof ClosedError && /the Redis client was closed/.test(e.message))
    await server.start()
    await client.connect()
    assert.deepEqual(await a.lock('jobs').tryHold('k', () => 'ran'), { acquired: true, value: 'ran' })
    // Redis holds back the next acquire (CLIENT PAUSE WRITE), the connection is cut with it unanswered.
    assert.equal(await raw(server.port, 'CLIENT', 'PAUSE', '5000', 'WRITE'), 'OK')
    const tried = a.lock('jobs').tryHold('k', () => 'ran again')
    await sleep(100)
    await raw(server.port, 'CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
    assert.equal(await raw(server.port, 'CLIENT', 'UNPAUSE'), 'OK')
    assert.deepEqual(await tried, { acquired: true, value: 'ran again' })
  })

  test('Bun RedisClient idleTimeout: Bun closes an idle client for good (no reconnection), and the store says so: ClosedError "the Redis client was closed" at once, not a wait for an answer', async t => {
    // Bun's option, which holdfast cannot read: documented as one to leave unset on a store's client.
    const server = await startRedis(t, { appendonly: 'no' })
    const a = await openRedisStore({ redis: await bunClient(t, server.url, { idleTimeout: 300 }) })
    later(t, () => a.close())
    assert.deepEqual(await a.lock('jobs').tryHold('k', () => 'ran'), { acquired: true, value: 'ran' })
    await sleep(800)
    const from = Date.now()
    await assert.rejects(a.lock('jobs').hold('k', { wait: '10s' }, () => 'ran'), e => e instanceof ClosedError && /the Redis client was closed/.test(e.message))
    assert.ok(Date.now() - from < 1_000, `answered after ${Date.now() - from}ms`)
  })

  test('openRedisStore({ url }) on Bun with neither ioredis nor redis installed opens Bun\'s own client, and closes it with the store (the process ends); a refused password is named (WRONGPASS), and a refused connection at once (ECONNREFUSED)', async t => {
    // A project of its own: holdfast alone (copied, so that ioredis and redis beside this file are not found).
    const server = await startRedis(t, { appendonly: 'no' })
    const { cpSync, mkdirSync, writeFileSync } = await import('node:fs')
    const { spawnSync } = await import('node:child_process')
    const path = await import('node:path')
    const dir = tempDir(t)
    mkdirSync(path.join(dir, 'node_modules'))
    cpSync(path.join(import.meta.dirname, 'node_modules', 'holdfast'), path.join(dir, 'node_modules', 'holdfast'), { recursive: true, dereference: true })
    writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }')
    writeFileSync(
      path.join(dir, 'main.js'),
      `import { openRedisStore } from 'holdfast/redis'
      for (const name of ['ioredis', 'redis']) await import(name).then(() => { throw new Error(name + ' was found') }, () => {})
      const started = Date.now()
      try {
        const store = await openRedisStore({ url: process.argv[2] })
        const fence = await store.lock('jobs').hold('k', lease => lease.fence)
        const claim = await store.pool('seats', { capacity: 2 }).claim(1)
        console.log(JSON.stringify({ client: store.server.client, fence, remaining: claim.remaining }))
        await store.close()
      } catch (error) {
        console.log(JSON.stringify({ error: error.name, message: error.message, ms: Date.now() - started }))
      }`,
    )
    const run = url => {
      const ran = spawnSync(process.execPath, ['main.js', url], { cwd: dir, encoding: 'utf8', timeout: 20_000 })
      assert.equal(ran.status, 0, ran.stderr)
      return JSON.parse(ran.stdout.trim())
    }
    // One connection for the store's commands and one for its pub/sub: none more to open it (a Redis
    // that answers in time is not asked again by a client that does not reconnect).
    const connections = async () => Number(/total_connections_received:(\d+)/.exec(await raw(server.port, 'INFO', 'stats'))[1])
    const before = await connections()
    const out = run(server.url)
    assert.equal((await connections()) - before - 1, 2, 'connections the store made (the count itself makes one)')
    assert.equal(out.client, 'bun')
    assert.ok(out.fence > 0)
    assert.equal(out.remaining, 1)
    // A refused password is told in the server's words, the password masked.
    assert.equal(await raw(server.port, 'ACL', 'SETUSER', 'app', 'on', '>right', '~*', '&*', '+@all'), 'OK')
    const wrong = run(`redis://app:wrong-pw@127.0.0.1:${server.port}`)
    assert.equal(wrong.error, 'ClosedError')
    assert.match(wrong.message, /^openRedisStore: cannot reach redis:\/\/app:\*\*\*@127\.0\.0\.1:\d+: WRONGPASS /)
    // Nothing listening: Bun's client tells it only once it gave up reconnecting (about 30 s), as
    // "Connection closed"; the store said "not ready within 10000ms" at 10 s. Now it is asked why once
    // it is late (a client that does not reconnect), and says so at once.
    const refused = run(`redis://app:pw@127.0.0.1:${await freePort()}`)
    assert.equal(refused.error, 'ClosedError')
    assert.match(refused.message, /^openRedisStore: cannot reach redis:\/\/app:\*\*\*@127\.0\.0\.1:\d+: connect ECONNREFUSED 127\.0\.0\.1:\d+$/)
    assert.ok(refused.ms < 5_000, `refused after ${refused.ms}ms, not at the 10 s patience`)
  })
}

test(`${CLIENT}: the application quits the store's client and connects it again: the store's own subscriber connection goes with the client, comes back with it, and a waiter is woken by a release`, async t => {
  // A store left open kept its subscriber connected once its client was quit (the process lived on
  // for it: keep-alive.test.js); gone with the client, it must come back when the client does, or no
  // waiter would ever be woken again (each answered by its heartbeats alone).
  const server = await startRedis(t, { appendonly: 'no' })
  const client = await redisClient(t, server.url)
  // The waiter's store: a clock that never moves (no heartbeat), so only a wake-up answers it.
  const a = await openRedisStore({ redis: client, clock: manualClock() })
  const b = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => Promise.all([a.close(), b.close()]))
  const subscribers = async n => {
    const count = async () => String(await raw(server.port, 'CLIENT', 'LIST', 'TYPE', 'pubsub')).split('\n').filter(l => l.includes('id=')).length
    for (let end = Date.now() + 10_000; (await count()) !== n; await sleep(20)) if (Date.now() > end) throw new Error(`not ${n} subscriber connections in 10 s: ${await count()}`)
  }
  await subscribers(2)
  if (CLIENT === 'bun') client.close()
  else {
    const ended = CLIENT === 'ioredis' ? new Promise(resolve => client.once('end', resolve)) : undefined
    await client.quit()
    await ended
  }
  await subscribers(1)
  await client.connect()
  await subscribers(2)
  const lease = await b.lock('jobs').acquire('k')
  const waiter = a.lock('jobs').hold('k', { wait: '1m' }, l => l.fence)
  await until(b, list => list.find(e => e.name === 'jobs')?.waiting === 1, 'the waiter in line')
  await lease.release()
  assert.ok((await bounded(waiter, 'the waiter was not woken once the client and its subscriber were back')) > lease.fence)
})

// Redis Cluster, three primaries, with ioredis's Cluster client and node-redis's createCluster:
// everything holdfast writes for one key of one lock lives in one hash slot (one hash tag), so keys
// spread over the three nodes; the contracts hold (one holder, FIFO across stores, fences growing,
// wake-ups from a script on any node); inspect() lists the busy keys of every node. Wake-ups go by
// sharded pub/sub: SPUBLISH to a channel carrying the key's hash tag, heard by the node of its slot.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openRedisStore, CancelledError, InvalidError } from 'holdfast/redis'
import { manualClock } from 'holdfast/testing'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startCluster, raw, later, sleep, commandStats, listenersAroundStores, redisClient, disconnectCluster } from './helpers.js'

for (const kind of ['ioredis', 'node-redis'])
test(`#15 Cluster (3 primaries, ${kind}): keys spread over every node, one holder a key, FIFO across stores with growing fences woken by sharded pub/sub, inspect sees every node`, async t => {
  const cluster = await startCluster(t)
  const a = await openRedisStore({ redis: await cluster.client(kind) })
  const b = await openRedisStore({ redis: await cluster.client(kind) })
  later(t, () => Promise.all([a.close(), b.close()]))
  assert.equal(a.server.topology, 'cluster')
  assert.equal(a.server.pubsub, 'sharded')

  // 30 keys held at once: their state is on every node, and each key's five Redis keys on one node.
  const leases = await Promise.all(Array.from({ length: 30 }, (_, i) => a.lock('spread').acquire(`key-${i}`)))
  const sizes = await Promise.all(cluster.nodes.map(n => raw(n.port, 'DBSIZE')))
  for (const [i, size] of sizes.entries()) assert.ok(size > 0, `node ${i} holds nothing: ${sizes}`)
  assert.equal((await b.inspect()).filter(e => e.name === 'spread').length, 30, 'inspect lists the keys of every node')
  await Promise.all(leases.map(l => l.release()))

  // Exclusion and fences on shared keys, from both stores at once.
  let inside = 0
  let most = 0
  const fences = {}
  await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? b : a).lock('shared').hold(`k${i % 3}`, { wait: '30s' }, async lease => {
    inside++
    most = Math.max(most, inside)
    ;(fences[lease.key] ??= []).push(lease.fence)
    await sleep(2)
    inside--
  })))
  assert.ok(most <= 3, 'one holder a key (three keys)')
  for (const list of Object.values(fences)) for (let i = 1; i < list.length; i++) assert.ok(list[i] > list[i - 1])

  // FIFO across stores: each waiter in line before the next asks, woken in that order.
  const first = await a.lock('fifo').acquire('k')
  const order = []
  const waiters = []
  for (let i = 0; i < 6; i++) {
    waiters.push((i % 2 ? b : a).lock('fifo').hold('k', { wait: '30s' }, () => void order.push(i)))
    for (;;) {
      const entry = (await a.inspect()).find(e => e.name === 'fifo')
      if (entry?.waiting === i + 1) break
      await sleep(10)
    }
  }
  const releasedAt = Date.now()
  await first.release()
  await Promise.all(waiters)
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5])
  assert.ok(Date.now() - releasedAt < 5_000, 'woken by the release (a ttl/3 heartbeat would take 10 s)')
  // Every grant told by SPUBLISH, none by classic PUBLISH (which a Cluster sends to every node).
  const stats = await Promise.all(cluster.nodes.map(n => commandStats(n.port)))
  assert.ok(stats.reduce((n, s) => n + (s.spublish ?? 0), 0) >= 6, 'wake-ups by SPUBLISH')
  assert.equal(stats.reduce((n, s) => n + (s.publish ?? 0), 0), 0, 'no classic PUBLISH')
})

for (const kind of ['ioredis', 'node-redis'])
test(`#15 Cluster (${kind}): a key with white space in it (a space, a tab, a newline) is held, waited for and handed over like any other (its sharded channel carries the key)`, async t => {
  // The scripts parsed a handle's constants, whose last field is the key's sharded channel, as text
  // without white space: such a key was refused StorageError ("attempt to compare number with nil").
  const cluster = await startCluster(t)
  const a = await openRedisStore({ redis: await cluster.client(kind) })
  const b = await openRedisStore({ redis: await cluster.client(kind) })
  later(t, () => Promise.all([a.close(), b.close()]))
  for (const key of ['a b', 'tab\tx', 'nl\nx', ' ']) {
    const lease = await a.lock('spaced').acquire(key)
    const waited = b.lock('spaced').hold(key, { wait: '30s' }, l => l.fence)
    for (;;) {
      const entry = (await a.inspect()).find(e => e.name === 'spaced' && e.key === key)
      if (entry?.waiting === 1) break
      await sleep(10)
    }
    await lease.release()
    assert.ok((await waited) > lease.fence, JSON.stringify(key))
  }
  assert.deepEqual((await a.inspect()).filter(e => e.name === 'spaced'), [])
})

for (const kind of ['ioredis', 'node-redis'])
test(`#15 Cluster (${kind}), sharded wake-ups: a grant published before the waiter's process subscribed to its key's channel is found at once (not at a ttl/3 heartbeat)`, async t => {
  const cluster = await startCluster(t)
  const a = await openRedisStore({ redis: await cluster.client(kind) })
  const b = await openRedisStore({ redis: await cluster.client(kind) })
  later(t, () => Promise.all([a.close(), b.close()]))
  for (let i = 0; i < 3; i++) {
    const lease = await a.lock('race', { ttl: '30s' }).acquire(`k${i}`)
    // b's acquire goes first, a's release right after it, in the same turn: Redis grants b inside the
    // release, before b (told it waits) has subscribed to the key's channel.
    const waited = b.lock('race', { ttl: '30s' }).hold(`k${i}`, { wait: '30s' }, () => Date.now())
    const releasedAt = Date.now()
    void lease.release()
    const grantedAt = await waited
    assert.ok(grantedAt - releasedAt < 3_000, `granted ${grantedAt - releasedAt}ms after the release (a heartbeat comes every 10 s)`)
  }
})

for (const kind of ['ioredis', 'node-redis'])
test(`#16 Cluster (${kind}): pools spread over every node, each pool's keys in one slot; no oversell from two stores; a waiting claim woken by sharded pub/sub; inspect lists every pool`, async t => {
  const cluster = await startCluster(t)
  const a = await openRedisStore({ redis: await cluster.client(kind) })
  const b = await openRedisStore({ redis: await cluster.client(kind) })
  later(t, () => Promise.all([a.close(), b.close()]))
  // 20 pools, one unit claimed in each: their keys are on every node, a pool's two keys in one slot.
  await Promise.all(Array.from({ length: 20 }, (_, i) => a.pool(`pool-${i}`, { capacity: 2 }).claim(1)))
  const sizes = await Promise.all(cluster.nodes.map(n => raw(n.port, 'DBSIZE')))
  for (const [i, size] of sizes.entries()) assert.ok(size > 0, `node ${i} holds nothing: ${sizes}`)
  const port = cluster.nodes[0].port
  assert.equal(await raw(port, 'CLUSTER', 'KEYSLOT', 'holdfast:{p:pool-3}:m'), await raw(port, 'CLUSTER', 'KEYSLOT', 'holdfast:{p:pool-3}:z'))
  const listed = (await b.inspect()).filter(e => e.kind === 'pool')
  assert.equal(listed.length, 20, 'inspect lists the pools of every node')
  assert.ok(listed.every(p => p.remaining === 1 && p.claims === 1))

  // Two stores racing for 30 units: exactly 30 claimed.
  const race = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).pool('race', { capacity: 30 }).claim(1)))
  assert.equal(race.filter(r => r.claimed).length, 30)

  // A waiter in b, served by a's release through SPUBLISH on the pool's slot.
  const held = await a.pool('wait', { capacity: 1 }).claim(1)
  const waiting = b.pool('wait', { capacity: 1 }).claim(1, { wait: '30s' })
  for (;;) {
    if ((await a.inspect()).find(e => e.kind === 'pool' && e.name === 'wait')?.waiting === 1) break
    await sleep(10)
  }
  const releasedAt = Date.now()
  await held.claim.release()
  assert.equal((await waiting).claimed, true)
  assert.ok(Date.now() - releasedAt < 3_000, 'woken by the release (a heartbeat comes every 3.3 s)')
  const stats = await Promise.all(cluster.nodes.map(n => commandStats(n.port)))
  assert.equal(stats.reduce((n, s) => n + (s.publish ?? 0), 0), 0, 'no classic PUBLISH')
})

for (const kind of ['ioredis', 'node-redis'])
test(`#15 Cluster (${kind}): a client of one server (or a url) given a Cluster node's address is refused at opening, an InvalidError naming the Cluster clients, whichever node it names`, async t => {
  // Such a store opened on the node that has the slot of holdfast's access check, said topology
  // 'server', and answered every hold of a key of another node's slots ClosedError 'Redis answered
  // "MOVED …"' after its wait (the CLI's `holdfast hold redis://NODE …` too); on the other nodes it
  // failed to open with that ClosedError, as if Redis were unreachable.
  const cluster = await startCluster(t)
  for (const node of cluster.nodes) {
    for (const options of [{ redis: await redisClient(t, node.url, kind) }, { url: node.url }]) {
      await assert.rejects(
        openRedisStore(options),
        e => e instanceof InvalidError && /a node of a Cluster/.test(e.message) && /createCluster/.test(e.message),
        `${options.url ? 'url' : 'client'} of node ${node.port}`,
      )
    }
  }
  // A Cluster client opens there as ever.
  const store = await openRedisStore({ redis: await cluster.client(kind) })
  assert.equal(store.server.topology, 'cluster')
  await store.close()
})

for (const kind of ['ioredis', 'node-redis'])
test(`#15 Cluster (${kind}): a store closed leaves no listener on the application's client`, async t => {
  // node-redis's Cluster client was given a 'node-ready' listener by each store (a node connecting
  // anew: wake-ups may have been missed), never taken off at close(): the closed store stayed
  // reachable from the client, never collected, and each store opened on it added one more.
  const cluster = await startCluster(t)
  const { before, after } = await listenersAroundStores(openRedisStore, await cluster.client(kind))
  assert.deepEqual(after, before)
})

test('#15 Cluster (ioredis): calls made while the Cluster is unreachable leave no listener on the application\'s client once they ended', async t => {
  // Each call that needs the primaries (inspect(), loading the library) waits up to 10 s for the
  // client's 'ready'; a wait that ended without it left its listener on the client, one more a call,
  // for as long as the Cluster stayed unreachable (ioredis warns past 10).
  const cluster = await startCluster(t)
  const client = await cluster.client('ioredis')
  const store = await openRedisStore({ redis: client })
  later(t, () => store.close())
  const before = client.listenerCount('ready')
  for (const n of cluster.nodes) await n.stop()
  while (client.status === 'ready') await sleep(10)
  const asked = Array.from({ length: 3 }, () => store.inspect().catch(e => e))
  assert.ok((await Promise.all(asked)).every(e => e instanceof Error), 'inspect() answered with nothing reachable')
  // The waits for 'ready' end 10 s after they began, about as the inspections' patience runs out.
  await sleep(500)
  assert.equal(client.listenerCount('ready'), before)
})

/**
 * A child process running `script` (beside this file) with the ports of `cluster`'s nodes, killed
 * after the test: its stdout lines (`{ line, at }`) and its exit code; resolves once it said `open`.
 */
async function openedChild(t, cluster, script) {
  const child = spawn(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), script), ...cluster.nodes.map(n => n.port)], { stdio: ['pipe', 'pipe', 'inherit'] })
  later(t, () => child.kill('SIGKILL'))
  const lines = []
  const exited = new Promise(resolve => child.once('exit', resolve))
  createInterface({ input: child.stdout }).on('line', line => lines.push({ line, at: Date.now() }))
  await said(child, lines, 'open')
  return { child, lines, exited }
}

/** Until `child` said `word` (a line of `lines`), within `ms`; fails if it exited first. */
async function said(child, lines, word, ms = Infinity) {
  const end = Date.now() + ms
  while (!lines.some(l => l.line === word)) {
    assert.equal(child.exitCode, null, `exited before it said ${word}: ${JSON.stringify(lines)}`)
    assert.ok(Date.now() < end, `never said ${word}: ${JSON.stringify(lines)}`)
    await sleep(20)
  }
}

test('#15 LOCK-06 Cluster (ioredis): a process that asked inspect() while the Cluster was unreachable, then closed its store and its client, exits at once', async t => {
  // inspect() waits up to 10 s for the client's 'ready' (clusterReady): its timer was neither ended
  // by close() nor unref'd, so the process lived on for those 10 s after everything was closed.
  const cluster = await startCluster(t)
  const { child, lines, exited } = await openedChild(t, cluster, 'cluster-closing.js')
  for (const n of cluster.nodes) await n.stop()
  child.stdin.end()
  assert.equal(await exited, 0, JSON.stringify(lines))
  const exitedAt = Date.now()
  const closed = lines.find(l => l.line === 'closed')
  assert.ok(closed, JSON.stringify(lines))
  // ioredis's own: the connections its Cluster client made to refresh the slots of nodes that refuse
  // them keep the process up to their disconnectTimeout (2 s) after disconnect(): not holdfast's.
  assert.ok(exitedAt - closed.at < 4_000, `exited ${exitedAt - closed.at}ms after its store and client were closed`)
  assert.deepEqual(lines.map(l => l.line).slice(1), ['closed', 'inspect ClosedError'])
})

test('LOCK-06 Cluster (ioredis): a process that closed its store while the sharded subscriber refreshed its slots exits once that refresh ended (ioredis scheduled the next one after the close, for good)', async t => {
  // ioredis 5 schedules a Cluster's next slots refresh when the one under way ends, disconnected or
  // not, and every slotsRefreshInterval after that (a refresh of no nodes fails at once): a timer
  // that kept the process alive for good. The nodes stopped (SIGSTOP) make the refresh last (a second
  // a node), so that the close comes during it.
  const cluster = await startCluster(t)
  const { child, lines, exited } = await openedChild(t, cluster, 'cluster-refreshing.js')
  for (const n of cluster.nodes) n.kill('SIGSTOP')
  later(t, () => cluster.nodes.forEach(n => n.kill('SIGCONT')))
  child.stdin.end()
  // Its next refresh begins within a second, or once the one under way gave up (three seconds).
  await said(child, lines, 'closed', 15_000)
  for (const n of cluster.nodes) n.kill('SIGCONT')
  let timer
  const late = new Promise(resolve => (timer = setTimeout(resolve, 6_000, 'still running')))
  const code = await Promise.race([exited, late]).finally(() => clearTimeout(timer))
  assert.equal(code, 0, `6 s after its store and client were closed, the process was ${code === 'still running' ? 'still running (a timer ioredis scheduled after the close)' : `gone with ${code}`}: ${JSON.stringify(lines)}`)
  assert.deepEqual(lines.map(l => l.line), ['open', 'closed'])
})

/** A Cluster client of `kind` logged in as `username`, closed after the test. */
async function userClient(t, cluster, kind, username, password) {
  if (kind === 'node-redis') {
    const { createCluster } = await import('redis')
    const client = createCluster({ rootNodes: cluster.nodes.map(n => ({ url: n.url })), defaults: { username, password } })
    client.on('error', () => {})
    await client.connect()
    later(t, () => client.destroy())
    return client
  }
  const { Cluster } = await import('ioredis')
  const client = new Cluster(
    cluster.nodes.map(n => ({ host: '127.0.0.1', port: n.port })),
    { redisOptions: { username, password } },
  )
  client.on('error', () => {})
  later(t, () => disconnectCluster(client))
  return client
}

for (const kind of ['ioredis', 'node-redis'])
test(`#15 Cluster (${kind}), sharded wake-ups: a waiter whose pub/sub connection was cut, and could connect again only after the release, is woken by it (the store catches up once its channels are back), not at its next heartbeat`, async t => {
  // node-redis makes a primary's pub/sub connection again and subscribes its channels again by
  // itself; its Cluster client says 'node-ready' once a connection, never after a reconnection: the
  // store did not catch up, and a grant published while the connection was away was never heard.
  const cluster = await startCluster(t)
  for (const n of cluster.nodes) assert.equal(await raw(n.port, 'ACL', 'SETUSER', 'cut', 'on', '>secret', '~*', '&*', '+@all'), 'OK')
  const a = await openRedisStore({ redis: await cluster.client(kind) })
  // b's clock creeps (1 ms every 5 ms): what it does at once runs, its heartbeats (every 10 s of it) never come.
  const clock = manualClock()
  const creep = setInterval(() => clock.advance(1), 5)
  const b = await openRedisStore({ redis: await userClient(t, cluster, kind, 'cut', 'secret'), clock })
  later(t, async () => {
    clearInterval(creep)
    const fast = setInterval(() => clock.advance(100), 5)
    await Promise.all([a.close(), b.close()]).finally(() => clearInterval(fast))
  })
  const slot = await raw(cluster.nodes[0].port, 'CLUSTER', 'KEYSLOT', 'holdfast:{l:cut:k}:m')
  const owner = (await cluster.layout()).find(n => !n.replica && n.slots.some(([x, y]) => x <= slot && slot <= y))
  const lease = await a.lock('cut', { ttl: '30s' }).acquire('k')
  const waiter = b.lock('cut', { ttl: '30s' }).hold('k', { wait: '30s' }, l => l.fence)
  const end = Date.now() + 10_000
  while (!String(await raw(owner.port, 'PUBSUB', 'SHARDCHANNELS', 'holdfast:w:*')).includes('{l:cut:k}')) {
    assert.ok(Date.now() < end, "b's channel was not subscribed")
    await sleep(20)
  }
  // b's pub/sub connection cut, and refused (its user off) until the release published its grant.
  assert.equal(await raw(owner.port, 'ACL', 'SETUSER', 'cut', 'off'), 'OK')
  assert.ok((await raw(owner.port, 'CLIENT', 'KILL', 'USER', 'cut', 'TYPE', 'pubsub')) >= 1)
  await lease.release()
  assert.equal(await raw(owner.port, 'ACL', 'SETUSER', 'cut', 'on'), 'OK')
  let timer
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the waiter was not woken once its pub/sub connection was back')), 5_000)))
  const fence = await Promise.race([waiter, late]).finally(() => clearTimeout(timer))
  assert.ok(fence > lease.fence, 'fences grow (LOCK-02)')
})

for (const kind of ['ioredis', 'node-redis'])
test(`#15 Cluster (${kind}), sharded wake-ups: a key's subscription refused (NOPERM) is tried again by its next waiter, and the first waiter's leaving does not let the second's channel go: it is woken by the release`, async t => {
  // A failed SSUBSCRIBE dropped the channel's count of waiters, and the first waiter's leaving took one
  // from the count the second made: at 0, the channel was let go after 30 s idle while the second
  // still waited on it, told of its grant only by its next heartbeat.
  // The waiting store's clock moves only when told: without the wake-up, the second is never answered.
  const cluster = await startCluster(t)
  // Its channels are taken once it opened: a store opens only if its user may run every command of
  // the scripts, SPUBLISH to its channels too (pools.test.js), and an ACL may change after.
  for (const n of cluster.nodes) assert.equal(await raw(n.port, 'ACL', 'SETUSER', 'nochan', 'on', '>secret', '~*', '&*', '+@all'), 'OK')
  const a = await openRedisStore({ redis: await cluster.client(kind) })
  const clock = manualClock()
  const b = await openRedisStore({ redis: await userClient(t, cluster, kind, 'nochan', 'secret'), clock })
  later(t, () => Promise.all([a.close(), b.close()]))
  for (const n of cluster.nodes) assert.equal(await raw(n.port, 'ACL', 'SETUSER', 'nochan', 'resetchannels'), 'OK')
  const lease = await a.lock('sub', { ttl: '30s' }).acquire('k')
  const refusals = async () => (await Promise.all(cluster.nodes.map(n => raw(n.port, 'INFO', 'errorstats')))).join('').match(/errorstat_NOPERM:count=(\d+)/)?.[1] ?? '0'
  const channels = async () => (await Promise.all(cluster.nodes.map(n => raw(n.port, 'PUBSUB', 'SHARDCHANNELS', 'holdfast:w:*')))).join('').split('holdfast:w:').length - 1
  const ac = new AbortController()
  const first = b.lock('sub', { ttl: '30s' }).hold('k', { wait: Infinity, signal: ac.signal }, () => 'first').catch(e => e)
  const end = Date.now() + 5_000
  while ((await refusals()) === '0') {
    assert.ok(Date.now() < end, 'the first waiter\'s SSUBSCRIBE was not refused')
    await sleep(20)
  }
  await sleep(100)
  for (const n of cluster.nodes) assert.equal(await raw(n.port, 'ACL', 'SETUSER', 'nochan', 'allchannels'), 'OK')
  const second = b.lock('sub', { ttl: '30s' }).hold('k', { wait: Infinity }, () => 'second')
  while ((await channels()) !== 1) {
    assert.ok(Date.now() < end + 5_000, 'the second waiter did not subscribe')
    await sleep(20)
  }
  ac.abort()
  assert.ok((await first) instanceof CancelledError)
  // Past the 30 s a channel stays subscribed once nobody waits on it (and a heartbeat of the second's).
  clock.advance(31_000)
  await sleep(300)
  assert.equal(await channels(), 1, 'the second waiter\'s channel is still subscribed')
  await lease.release()
  assert.equal(await bounded(second, 'the second waiter was not woken by the release'), 'second')
})

/** `promise`, or a rejection saying `what` 15 s on: bounds an answer only a wake-up can bring. */
function bounded(promise, what) {
  let timer
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(what)), 15_000)))]).finally(() => clearTimeout(timer))
}

test("#15 Cluster (ioredis): the application quits the store's Cluster client and connects it again: the store's own sharded subscriber goes with the client, comes back with its channels, and a waiter is woken by a release", async t => {
  // The subscriber (a Cluster duplicated from the client) stayed connected once the client was quit,
  // keeping the process alive; gone with the client, it must come back when the client does, its
  // channels subscribed again, or a waiter there would never be woken (only its heartbeats).
  const cluster = await startCluster(t)
  const client = await cluster.client('ioredis')
  // The waiter's store: a clock that never moves (no heartbeat), so only a wake-up answers it.
  const a = await openRedisStore({ redis: client, clock: manualClock() })
  const b = await openRedisStore({ redis: await cluster.client('ioredis') })
  later(t, () => Promise.all([a.close(), b.close()]))
  const slot = await raw(cluster.nodes[0].port, 'CLUSTER', 'KEYSLOT', 'holdfast:{l:back:k}:m')
  const owner = (await cluster.layout()).find(n => !n.replica && n.slots.some(([x, y]) => x <= slot && slot <= y))
  const subscribed = async yes => {
    const end = Date.now() + 10_000
    while (String(await raw(owner.port, 'PUBSUB', 'SHARDCHANNELS', 'holdfast:w:*')).includes('{l:back:k}') !== yes) {
      assert.ok(Date.now() < end, `the waiter's channel was ${yes ? 'not subscribed' : 'still subscribed'} after 10 s`)
      await sleep(20)
    }
  }
  const lease = await b.lock('back').acquire('k')
  const gone = new AbortController()
  const first = a.lock('back').hold('k', { wait: '1m', signal: gone.signal }, () => 'ran')
  await subscribed(true)
  // It leaves the line; its channel stays subscribed (let go only after a while idle, on a's clock).
  gone.abort()
  await assert.rejects(first, CancelledError)
  for (let end = Date.now() + 10_000; (await b.inspect()).find(e => e.name === 'back')?.waiting !== 0; await sleep(10)) assert.ok(Date.now() < end, 'the first waiter gone')
  const ended = new Promise(resolve => client.once('end', resolve))
  await client.quit()
  await ended
  await subscribed(false)
  await client.connect()
  await subscribed(true)
  const waiter = a.lock('back').hold('k', { wait: '1m' }, l => l.fence)
  for (let end = Date.now() + 10_000; (await b.inspect()).find(e => e.name === 'back')?.waiting !== 1; await sleep(10)) assert.ok(Date.now() < end, 'the waiter in line')
  await lease.release()
  let timer
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the waiter was not woken once the client and its subscriber were back')), 5_000)))
  assert.ok((await Promise.race([waiter, late]).finally(() => clearTimeout(timer))) > lease.fence)
})

// Redis unreachable (the server frozen with SIGSTOP: connections stay open, nothing answers): waiting
// and new holds end with a typed error after their wait, never hang; a held lease is lost at its ttl
// (its signal aborts LostError, its hold rejects LostError); once Redis answers again, the store carries on.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openRedisStore, ClosedError, InUseError, InvalidError, LostError } from 'holdfast/redis'
import { CLIENT, startRedis, redisClient, quitClient, later, sleep, raw, freePort, proxyTo, commandStats } from './helpers.js'

test('#15: Redis unreachable — holds end with a typed error after their wait, a lease is lost at its ttl, then the store carries on', async t => {
  const server = await startRedis(t)
  const store = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => store.close())
  const lock = store.lock('down', { ttl: 1_500 })
  let lease
  const held = lock.hold('held', async l => {
    lease = l
    await new Promise(r => l.signal.addEventListener('abort', r))
    return 'fn returned'
  })
  while (!lease) await sleep(5)
  const waiting = lock.hold('held', { wait: 800 }, () => 'never')
  await sleep(100)
  server.kill('SIGSTOP')
  const stoppedAt = Date.now()
  const ended = (p, Class) => assert.rejects(p, Class).then(() => Date.now() - stoppedAt)
  const [newHold, tried, waited, lost] = await Promise.all([
    ended(lock.hold('new', { wait: 500 }, () => 'never'), ClosedError),
    ended(lock.tryHold('other', () => 'never'), ClosedError),
    ended(waiting, ClosedError),
    ended(held, LostError),
  ])
  assert.ok(lease.signal.reason instanceof LostError)
  assert.ok(newHold >= 500 && newHold < 3_000, `a new hold ended after ${newHold}ms`)
  assert.ok(tried < 3_000, `a try ended after ${tried}ms`)
  assert.ok(waited >= 700 && waited < 3_000, `a waiting hold ended after ${waited}ms`)
  assert.ok(lost < 1_600, `the lease was lost after ${lost}ms (ttl 1500 ms)`)
  server.kill('SIGCONT')
  assert.equal(await lock.hold('fresh', { wait: '10s' }, () => 'back'), 'back')
  assert.equal(await lock.hold('held', { wait: '10s' }, () => 'free again'), 'free again')
})

test('#15: close() of a store that opened its own client ({ url }) while Redis is gone ends within seconds, its holds answered', { skip: CLIENT !== 'ioredis' && 'the url opens an ioredis client: run once' }, async t => {
  // Its QUIT waited behind the releases close() had given up on, until ioredis's retries flushed its
  // queue: close() took about 74 s (and `holdfast hold redis://…` exited that late).
  const server = await startRedis(t)
  const store = await openRedisStore({ url: server.url })
  const lock = store.lock('gone', { ttl: '3s' })
  let lease
  const held = lock
    .hold('k', l => {
      lease = l
      return new Promise(r => l.signal.addEventListener('abort', r))
    })
    .catch(e => e)
  while (!lease) await sleep(5)
  const waiting = lock.hold('k', { wait: '1m' }, () => 'never').catch(e => e)
  await sleep(100)
  server.kill('SIGKILL')
  await sleep(300)
  const started = Date.now()
  await store.close()
  const took = Date.now() - started
  assert.ok(took < 5_000, `close() took ${took} ms`)
  assert.ok((await waiting) instanceof ClosedError)
  assert.ok((await held) instanceof ClosedError)
  assert.ok(lease.signal.aborted)
})

test('#15: a waiter whose event loop was blocked across the end of its wait rejects InUseError: Redis answered all along, so it was not unreachable', async t => {
  // Its heartbeat and its give-up fire in one turn once the loop runs again; the heartbeat, just sent,
  // was taken for an unanswered one: the hold rejected ClosedError "unreachable".
  const server = await startRedis(t)
  const a = await openRedisStore({ redis: await redisClient(t, server.url) })
  const b = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => Promise.all([a.close(), b.close()]))
  const lease = await a.lock('blocked', { ttl: '10s' }).acquire('k')
  const waiting = b.lock('blocked', { ttl: '10s' }).hold('k', { wait: 1_000 }, () => 'never').catch(e => e)
  await sleep(300)
  const until = Date.now() + 2_500
  while (Date.now() < until) {} // the event loop blocked past the wait and its grace
  const answer = await waiting
  assert.ok(answer instanceof InUseError && /still held after waiting 1000ms/.test(answer.message), String(answer))
  await lease.release()
})

test('#15: openRedisStore({ url }) of a Redis that takes connections and never answers (SIGSTOP) rejects ClosedError within its 10 s, rather than never settling, and leaves no connection', { skip: CLIENT !== 'ioredis' && 'the url opens an ioredis client: run once' }, async t => {
  // The client holdfast opens for the url waited to be ready: ioredis's readiness check (INFO) and
  // node-redis's handshake have no bound once the TCP connection is made (the kernel makes it for a
  // frozen server, or a proxy whose Redis is gone): openRedisStore, and `holdfast hold redis://…`, hung.
  const server = await startRedis(t)
  server.kill('SIGSTOP')
  later(t, () => server.kill('SIGCONT'))
  const started = Date.now()
  let timer
  const late = new Promise(resolve => (timer = setTimeout(resolve, 15_000, 'not settled in 15 s')))
  const answer = await Promise.race([openRedisStore({ url: server.url }).then(s => (later(t, () => s.close()), s), e => e), late])
  clearTimeout(timer)
  const took = Date.now() - started
  assert.ok(answer instanceof ClosedError && /^openRedisStore: cannot reach redis:\/\/127\.0\.0\.1:\d+: /.test(answer.message), String(answer))
  assert.ok(took >= 9_000 && took < 12_000, `rejected after ${took} ms`)
  server.kill('SIGCONT')
  // Redis, awake, has the connection it never answered gone: the raw client that asks is the only one.
  await sleep(200)
  assert.match(String(await raw(server.port, 'INFO', 'clients')), /connected_clients:1\r\n/)
})

test('#15: a Redis that answers READONLY (a replica: a failover under way) is not called unreachable: a hold and a claim end ClosedError naming its answer, and openRedisStore says it reached a replica', async t => {
  // Redis answered every ask, READONLY; the hold rejected "no answer from Redis within the wait
  // (500ms): unreachable", the claim the same, and openRedisStore "cannot reach Redis: READONLY …".
  const server = await startRedis(t, { appendonly: 'no' })
  const store = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => store.close())
  const lock = store.lock('ro', { ttl: '2s' })
  const seats = store.pool('ro-seats', { capacity: 2 })
  assert.equal(await lock.hold('k', () => 'before'), 'before')
  // From now on Redis answers every write READONLY: a replica of a primary nobody runs.
  assert.equal(await raw(server.port, 'REPLICAOF', '127.0.0.1', String(await freePort())), 'OK')
  later(t, () => raw(server.port, 'REPLICAOF', 'NO', 'ONE'))
  const [held, claimed, opened] = await Promise.all([
    lock.hold('k', { wait: 500 }, () => 'never').catch(e => e),
    seats.claim(1, { wait: 500 }).catch(e => e),
    redisClient(t, server.url).then(client => openRedisStore({ redis: client }).catch(e => e)),
  ])
  for (const answer of [held, claimed]) {
    assert.ok(answer instanceof ClosedError && /: Redis answered "READONLY .*" within the wait( \(500ms\))?: a replica/.test(answer.message), String(answer))
    assert.doesNotMatch(answer.message, /unreachable|no answer/)
  }
  assert.ok(opened instanceof ClosedError && /^openRedisStore: Redis answered "READONLY .*": a replica/.test(opened.message), String(opened))
  assert.doesNotMatch(opened.message, /cannot reach/)
  assert.equal(await raw(server.port, 'REPLICAOF', 'NO', 'ONE'), 'OK')
  assert.equal(await lock.hold('k', { wait: '5s' }, () => 'after'), 'after')
})

test('#15: a primary that refuses writes for want of replicas (NOREPLICAS: min-replicas-to-write, a replica restarting or moved away by a failover) is waited out as a failover is: a hold ends ClosedError naming it after its wait, and one asked while it lasts is granted once writes resume', async t => {
  // Each hold and claim rejected StorageError "Redis refused the script: NOREPLICAS …" at once.
  const server = await startRedis(t, { appendonly: 'no' })
  const store = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => store.close())
  const lock = store.lock('norep', { ttl: '2s' })
  assert.equal(await lock.hold('k', () => 'before'), 'before')
  assert.equal(await raw(server.port, 'CONFIG', 'SET', 'min-replicas-to-write', '1'), 'OK')
  later(t, () => raw(server.port, 'CONFIG', 'SET', 'min-replicas-to-write', '0'))
  const [held, claimed] = await Promise.all([
    lock.hold('k', { wait: 500 }, () => 'never').catch(e => e),
    store.pool('norep-seats', { capacity: 2 }).claim(1, { wait: 500 }).catch(e => e),
  ])
  for (const answer of [held, claimed]) {
    assert.ok(answer instanceof ClosedError && /: Redis answered "NOREPLICAS .*" within the wait( \(500ms\))?: a primary with fewer replicas/.test(answer.message), String(answer))
  }
  const waiting = lock.hold('k', { wait: '10s' }, () => 'after')
  await sleep(300)
  assert.equal(await raw(server.port, 'CONFIG', 'SET', 'min-replicas-to-write', '0'), 'OK')
  assert.equal(await waiting, 'after')
})

test('#15: openRedisStore({ url }) that cannot open its client says why (the password refused, the connection refused), not "Connection is closed."', { skip: CLIENT !== 'ioredis' && 'the url opens an ioredis client: run once' }, async t => {
  // ioredis's connect() rejects "Connection is closed." whatever happened; why went to its 'error'
  // event, which holdfast listens to only to keep it from being thrown: a wrong password read as an
  // unreachable Redis.
  const server = await startRedis(t)
  assert.equal(await raw(server.port, 'ACL', 'SETUSER', 'app', 'on', '>right', '~*', '&*', '+@all'), 'OK')
  const wrong = await openRedisStore({ url: `redis://app:wrong-pw@127.0.0.1:${server.port}` }).catch(e => e)
  assert.ok(wrong instanceof ClosedError && /^openRedisStore: cannot reach redis:\/\/app:\*\*\*@127\.0\.0\.1:\d+: WRONGPASS /.test(wrong.message), String(wrong))
  assert.doesNotMatch(wrong.message, /wrong-pw/)
  const refused = await openRedisStore({ url: `redis://127.0.0.1:${await freePort()}` }).catch(e => e)
  assert.ok(refused instanceof ClosedError && /^openRedisStore: cannot reach redis:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED /.test(refused.message), String(refused))
  const right = await openRedisStore({ url: `redis://app:right@127.0.0.1:${server.port}` })
  await right.close()
})

test('LOCK-06: openRedisStore({ redis }) given a client the application already closed says so, at once, rather than "cannot reach Redis: Connection is closed."', async t => {
  // ioredis's own words for a client quit before: read as a Redis down. (node-redis's is refused as
  // not connected, an InvalidError, before anything is asked.)
  const server = await startRedis(t)
  // Bun's client has no state to read: it is told by its answer to the store's first command ("Connection has failed").
  const client = await redisClient(t, server.url)
  if (CLIENT === 'bun') await client.send('PING', [])
  await quitClient(client)
  const started = Date.now()
  const answer = await openRedisStore({ redis: client }).catch(e => e)
  assert.ok(Date.now() - started < 1_000)
  if (CLIENT !== 'node-redis') assert.ok(answer instanceof ClosedError && /^openRedisStore: the Redis client was closed/.test(answer.message), String(answer))
  else assert.ok(answer instanceof InvalidError && /not connected/.test(answer.message), String(answer))
})

test('LOCK-06: an inspect() asked before close() of a Redis that does not answer (SIGSTOP) is answered ClosedError once the close gave up on it, not 10 s later', async t => {
  // The close waits for an inspection asked before it, up to its second, then gives up on it. One
  // still at its SCAN kept its own 10 s timer, which the close knew nothing of: it was answered
  // ("no answer from Redis within 10000ms") 9 s after close() had resolved.
  const server = await startRedis(t)
  const store = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => store.close())
  server.kill('SIGSTOP')
  later(t, () => server.kill('SIGCONT'))
  const listing = store.inspect().then(
    () => 'answered',
    e => e,
  )
  await sleep(100)
  await store.close()
  const closedAt = Date.now()
  let timer
  const answer = await Promise.race([listing, new Promise(resolve => (timer = setTimeout(resolve, 15_000, 'not settled in 15 s')))])
  clearTimeout(timer)
  const after = Date.now() - closedAt
  assert.ok(answer instanceof ClosedError && /^inspect: /.test(answer.message), String(answer))
  assert.ok(after < 500, `answered ${after} ms after close() resolved`)
})

test('#15: an inspect() in flight when its connection is cut is asked again once the client is back, as a hold is, rather than answered ClosedError "Socket closed unexpectedly"', async t => {
  // node-redis (and Bun's client) reject a command in flight when its connection is cut, where ioredis
  // sends it again: holds, claims and releases were asked again by the store, inspect() was not.
  const server = await startRedis(t, { appendonly: 'no' })
  const proxy = await proxyTo(t, server.port)
  const store = await openRedisStore({ redis: await redisClient(t, proxy.url) })
  later(t, () => store.close())
  const lease = await store.lock('cut').acquire('k')
  // Redis takes the SCAN; its answer is lost on the way back, and the connection is cut with it unanswered.
  const scans = async () => (await commandStats(server.port)).scan ?? 0
  const before = await scans()
  proxy.mute()
  const listing = store.inspect().catch(e => e)
  for (let end = Date.now() + 5_000; (await scans()) === before; await sleep(5)) assert.ok(Date.now() < end, 'the SCAN reached Redis')
  proxy.cut()
  const answer = await listing
  assert.ok(Array.isArray(answer), String(answer))
  assert.deepEqual(
    answer.map(e => [e.name, e.key, e.holders.map(h => h.fence)]),
    [['cut', 'k', [lease.fence]]],
  )
  await lease.release()
})

test('#15: an inspect() that Redis answers BUSY (a script of another client running past its time limit) is asked again, and answered once the script is killed', async t => {
  // SCAN's BUSY was taken for a refusal: inspect() rejected StorageError "Redis refused: BUSY …".
  const server = await startRedis(t, { appendonly: 'no', extra: ['--lua-time-limit', '50'] })
  const store = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => store.close())
  const lease = await store.lock('busy').acquire('k')
  const script = raw(server.port, 'EVAL', 'while true do end', '0').catch(e => e)
  later(t, () => raw(server.port, 'SCRIPT', 'KILL').catch(() => {}))
  for (let end = Date.now() + 5_000; !/BUSY/.test(String(await raw(server.port, 'PING'))); await sleep(10)) assert.ok(Date.now() < end, 'Redis answers BUSY')
  const listing = store.inspect().catch(e => e)
  // Redis runs nothing else meanwhile (INFO neither): the store is given time to be answered BUSY, which
  // Redis counts (rejected_calls), then the script is killed.
  await sleep(200)
  assert.equal(await raw(server.port, 'SCRIPT', 'KILL'), 'OK')
  await script
  const answer = await listing
  assert.ok(Array.isArray(answer), String(answer))
  assert.deepEqual(
    answer.map(e => [e.name, e.key]),
    [['busy', 'k']],
  )
  const rejected = Number(/^cmdstat_scan:.*rejected_calls=(\d+)/m.exec(String(await raw(server.port, 'INFO', 'commandstats')))?.[1])
  assert.ok(rejected > 0, `the SCAN was answered BUSY (rejected_calls=${rejected})`)
  await lease.release()
})

/**
 * A pool's operations asked once more after no answer (a cut, BUSY), and what each answers asked once:
 * `prepare` makes the pool (through `store`), `ask` asks the operation, `check` what it answered;
 * `cut`, what it answers when its try ran and its answer was lost, if not that.
 */
const poolOps = [
  {
    name: 'remaining()',
    prepare: async store => {
      const pool = store.pool('p', { capacity: 5 })
      await pool.claim(2, { id: 'a' })
      return pool
    },
    ask: pool => pool.remaining(),
    check: async (answer, pool) => assert.equal(answer, 3),
  },
  {
    name: 'release(id)',
    prepare: async store => {
      const pool = store.pool('p', { capacity: 5 })
      await pool.claim(2, { id: 'a' })
      return pool
    },
    ask: pool => pool.release('a'),
    check: async (answer, pool) => {
      assert.equal(answer, true, 'released, as the try that ran released it')
      assert.equal(await pool.remaining(), 5)
      assert.equal(await pool.release('a'), false, 'a release of its own answers that it held nothing')
    },
  },
  {
    name: 'claim.release() of a claim without an id',
    prepare: async store => {
      const pool = store.pool('p', { capacity: 5 })
      const c = await pool.claim(2)
      return { pool, claim: c.claim }
    },
    ask: ({ claim }) => claim.release(),
    check: async (answer, { pool, claim }) => {
      assert.equal(answer, true)
      assert.equal(await pool.remaining(), 5)
      assert.equal(await claim.release(), false)
    },
    // Redis forgets a drawn id once it holds nothing: asked again, the release would answer false.
    // Not asked again after no answer: ClosedError, and asked again by hand it says it held nothing.
    // ioredis sends it again itself, and its copy answers false (docs/redis.md says so).
    cut: async (answer, { pool, claim }) => {
      if (CLIENT === 'ioredis') assert.equal(answer, false)
      else assert.ok(answer instanceof ClosedError && /no answer from Redis/.test(answer.message), String(answer))
      assert.equal(await pool.remaining(), 5, 'the try that ran released it')
      assert.equal(await claim.release(), false)
    },
  },
  {
    name: 'confirm(id)',
    prepare: async store => {
      const pool = store.pool('p', { capacity: 5 })
      await pool.claim(2, { id: 'a', ttl: '1m' })
      return pool
    },
    ask: pool => pool.confirm('a'),
    check: async (answer, pool) => {
      assert.equal(answer, undefined)
      assert.equal(await pool.remaining(), 3)
    },
  },
  {
    name: 'resize() as the first call of its handle',
    prepare: async store => {
      await store.pool('p', { capacity: 5 }).claim(2, { id: 'a' })
      // A handle none of whose calls was answered: it carries its capacity to be checked.
      return store.pool('p', { capacity: 5 })
    },
    ask: pool => pool.resize(8),
    check: async (answer, pool) => {
      assert.equal(answer, undefined)
      assert.equal(await pool.remaining(), 6)
    },
  },
]

for (const op of poolOps) {
  const cutTitle = op.cut
    ? 'is not asked again (Redis forgets its id: asked again it would answer false): ClosedError on node-redis and Bun\'s client, false on ioredis (which sends it again itself), its units back'
    : 'is asked again once the client is back, and answers as if asked once, rather than ClosedError "Socket closed unexpectedly"'
  test(`POOL-02: a pool's ${op.name} in flight when its connection is cut ${cutTitle}`, async t => {
    // node-redis and Bun's client reject a command in flight when its connection is cut (ioredis sends
    // it again): the store asked these once. A release asked again found the tombstone its first try
    // left and answered false; a resize asked again by a handle never answered was refused its capacity.
    const server = await startRedis(t, { appendonly: 'no' })
    const proxy = await proxyTo(t, server.port)
    const store = await openRedisStore({ redis: await redisClient(t, proxy.url) })
    later(t, () => store.close())
    const it = await op.prepare(store)
    // Redis runs the call; its answer is lost on the way back, and the connection is cut with it unanswered.
    const calls = async () => Object.entries(await commandStats(server.port)).reduce((sum, [name, n]) => sum + (/^(fcall|evalsha|eval)$/.test(name) ? n : 0), 0)
    const before = await calls()
    proxy.mute()
    const asked = op.ask(it).catch(e => e)
    for (let end = Date.now() + 5_000; (await calls()) === before; await sleep(5)) assert.ok(Date.now() < end, 'the call reached Redis')
    proxy.cut()
    const answer = await asked
    if (op.cut) return op.cut(answer, it)
    assert.ok(!(answer instanceof Error), String(answer))
    await op.check(answer, it)
  })

  test(`POOL-02: a pool's ${op.name} that Redis answers BUSY (a script of another client running past its time limit) is asked again, and answered once the script is killed`, async t => {
    // BUSY was answered ClosedError ("Redis answered \"BUSY …\"") at once, on every client.
    const server = await startRedis(t, { appendonly: 'no', extra: ['--lua-time-limit', '50'] })
    const proxy = await proxyTo(t, server.port)
    const store = await openRedisStore({ redis: await redisClient(t, proxy.url) })
    later(t, () => store.close())
    const it = await op.prepare(store)
    const script = raw(server.port, 'EVAL', 'while true do end', '0').catch(e => e)
    later(t, () => raw(server.port, 'SCRIPT', 'KILL').catch(() => {}))
    for (let end = Date.now() + 5_000; !/BUSY/.test(String(await raw(server.port, 'PING'))); await sleep(10)) assert.ok(Date.now() < end, 'Redis answers BUSY')
    const scripts = /FCALL|EVALSHA/gi
    const before = proxy.sent(scripts)
    let settled = false
    const asked = op.ask(it).then(
      a => ((settled = true), a),
      e => ((settled = true), e),
    )
    // Answered BUSY, and asked again (or answered before: the test fails below, saying so).
    for (let end = Date.now() + 5_000; proxy.sent(scripts) < before + 2 && !settled; await sleep(5)) assert.ok(Date.now() < end, 'the call was sent')
    assert.equal(await raw(server.port, 'SCRIPT', 'KILL'), 'OK')
    await script
    const answer = await asked
    assert.ok(!(answer instanceof Error), String(answer))
    await op.check(answer, it)
  })
}

// Redis unreachable (the server frozen with SIGSTOP: connections stay open, nothing answers): waiting
// and new holds end with a typed error after their wait, never hang; a held lease is lost at its ttl
// (its signal aborts LostError, its hold rejects LostError); once Redis answers again, the store carries on.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openRedisStore, ClosedError, LostError } from 'holdfast/redis'
import { startRedis, redisClient, later, sleep } from './helpers.js'

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

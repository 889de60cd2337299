// Idle keys cost nothing in Redis: everything holdfast writes for a key expires at its last deadline
// plus the grace. 100,000 distinct keys held and released, then DBSIZE back to where it was.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openRedisStore } from 'holdfast/redis'
import { startRedis, redisClient, later, raw, sleep } from './helpers.js'

const KEYS = Number(process.env.HOLDFAST_REDIS_IDLE_KEYS || 100_000)

test(`#15: ${KEYS} distinct keys held and released, then DBSIZE back to where it was once the grace passed`, async t => {
  const server = await startRedis(t, { appendonly: 'no', extra: ['--hz', '100'] })
  const store = await openRedisStore({ redis: await redisClient(t, server.url), grace: '1s' })
  later(t, () => store.close())
  await raw(server.port, 'SET', 'unrelated', 'kept')
  const before = await raw(server.port, 'DBSIZE')
  const lock = store.lock('idle', { ttl: '1s' })
  let next = 0
  let most = 0
  await Promise.all(Array.from({ length: 64 }, async (_, w) => {
    while (next < KEYS) {
      await lock.hold(`key-${next++}`, () => {})
      if (w === 0 && next % 2_000 < 64) most = Math.max(most, await raw(server.port, 'DBSIZE'))
    }
  }))
  // While the keys were held and for their grace, their state was there (a test that could not fail otherwise).
  assert.ok(most > before + 1_000, `at most ${most} keys during the run`)
  const end = Date.now() + 60_000
  let size = await raw(server.port, 'DBSIZE')
  while (size > before && Date.now() < end) {
    await sleep(250)
    size = await raw(server.port, 'DBSIZE')
  }
  assert.equal(size, before, 'every key holdfast wrote expired')
  assert.equal(await raw(server.port, 'GET', 'unrelated'), 'kept')
})

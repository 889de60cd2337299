// The same calls, bad inputs among them, answered alike in process and by `holdfast/redis`: the
// outcome's shape, and an error's code and message (tests/shared/differential.js), in one hand-written
// scenario and in seeded random ones (tests/shared/differential-random.js).
import { test } from 'node:test'
import { memoryStorage, openStore } from 'holdfast'
import { openRedisStore } from 'holdfast/redis'
import { startRedis, redisClient, later } from './helpers.js'
import { sameAnswers } from './differential.js'
import { everySeedAnswersAlike } from './differential-random.js'

/** Steps a Redis store still answers otherwise, until each is fixed. */
const DIFFERS = []

test('differential: a Redis store answers every call of the scenario as the in-process store does', async t => {
  const server = await startRedis(t)
  const reference = await openStore({ storage: memoryStorage() })
  const store = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => store.close())
  await sameAnswers(reference, store, DIFFERS)
})

test('differential: a Redis store answers every call of the random scenarios as the in-process store does (HOLDFAST_DIFF_SEEDS, HOLDFAST_DIFF_SEED)', { timeout: 600_000 }, async t => {
  const server = await startRedis(t)
  // Each seed its own Redis store and names (`d<seed>-`) on the one server.
  await everySeedAnswersAlike({
    reference: () => openStore({ storage: memoryStorage() }),
    other: async () => openRedisStore({ redis: await redisClient(t, server.url) }),
    options: () => ({ idlePools: false }),
  })
})

// The same calls, bad inputs among them, answered alike in process and by `holdfast/redis`: the
// outcome's shape, and an error's code and message (tests/shared/differential.js), in one hand-written
// scenario and in seeded random ones (tests/shared/differential-random.js).
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { memoryStorage, openStore } from 'holdfast'
import { openRedisStore } from 'holdfast/redis'
import { startRedis, redisClient, later } from './helpers.js'
import { sameAnswers } from './differential.js'
import { sameRandomAnswers, seeds } from './differential-random.js'

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
  const failed = []
  for (const seed of seeds()) {
    // Each seed its own stores (the scenario ends with close()) and names (`d<seed>-`).
    const reference = await openStore({ storage: memoryStorage() })
    const store = await openRedisStore({ redis: await redisClient(t, server.url) })
    try {
      await sameRandomAnswers(seed, reference, store, { idlePools: false })
    } catch (e) {
      failed.push([seed, e.message])
    } finally {
      await reference.close()
      await store.close()
    }
  }
  assert.equal(failed.length, 0, `seeds ${failed.map(([seed]) => seed).join(', ')} differ; the first:\n${failed[0]?.[1]}`)
})

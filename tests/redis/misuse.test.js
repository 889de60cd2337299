// Misuse, refused alike: the list of invalid calls of tests/shared/misuse.js answered by `holdfast/redis`
// word for word as by the in-process store (tests/js/misuse.test.js checks that one against each step's
// expectation), but for the differences chosen and documented (below, each with where it is written down).
import { test } from 'node:test'
import { CancelledError, ClosedError, InUseError, InvalidError, LimitError, LostError, memoryStorage, openStore } from 'holdfast'
import { openRedisStore } from 'holdfast/redis'
import { CLIENT, later, redisClient, startRedis } from './helpers.js'
import { sameTranscript, transcript } from './misuse.js'

const classes = { invalid: InvalidError, closed: ClosedError, cancelled: CancelledError, lost: LostError, in_use: InUseError, limit: LimitError }

/** Differences chosen, by step, with where they are documented. */
const CHOSEN = {
  'pool capacity undefined, a new pool': 'README, Pools: a pool that does not exist is refused at once in process, at the handle\'s first call on Redis',
  'closed: inspect': 'docs/redis.md: inspect() returns a promise, as for connect()',
}


test('misuse: a Redis store refuses each invalid call as the in-process store does, word for word', async t => {
  const reference = await transcript(await openStore({ storage: memoryStorage() }), 'm', { classes })
  const server = await startRedis(t)
  const store = await openRedisStore({ redis: await redisClient(t, server.url) })
  later(t, () => store.close())
  sameTranscript(reference, await transcript(store, 'm', { classes }), { chosen: CHOSEN })
})

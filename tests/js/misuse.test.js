// Misuse, refused alike: the list of invalid calls of tests/shared/misuse.js answered by the in-process
// store as each step expects (class, `code`, thrown or rejected, the place and the bad value in the
// message), and by a client over `connect()` to `serve()` word for word as in process, but for the
// differences chosen and documented (below, each with where it is written down).
import { test } from 'node:test'
import { CancelledError, ClosedError, connect, InUseError, InvalidError, LimitError, LostError, memoryStorage, openStore } from 'holdfast'
import { checkExpected, sameTranscript, transcript } from './misuse.js'

const TOKEN = 'test-token-0123456789'
const classes = { invalid: InvalidError, closed: ClosedError, cancelled: CancelledError, lost: LostError, in_use: InUseError, limit: LimitError }

/** Differences chosen for every store other than the one in process, by step, with where they are documented. */
export const CHOSEN = {
  'pool capacity undefined, a new pool': 'README, Pools: a pool that does not exist is refused at once in process, at the handle\'s first call elsewhere',
  'closed: inspect': 'README, Holding keys from other processes: a remote store\'s inspect() returns a promise (docs/redis.md too)',
}

test('misuse: the in-process store refuses each invalid call with its class and code, naming the place and the bad value', async () => {
  const store = await openStore({ storage: memoryStorage() })
  checkExpected(await transcript(store, 'm', { classes }))
})

test('misuse: a client of serve() refuses each invalid call as the in-process store does, word for word', async () => {
  const reference = await transcript(await openStore({ storage: memoryStorage() }), 'm', { classes })
  const served = await openStore({ storage: memoryStorage() })
  const server = await served.serve({ port: 0, token: TOKEN })
  try {
    const client = await connect(server.url, { token: TOKEN })
    // A closed client says so naming its server, where a store says "the store is closed": chosen
    // (0e8ecac, a3d030d; tests/js/remote-leases.test.js, LOCK-06), so that a log tells which client.
    const words = m => m.replace(`${client.url}: the client closed`, 'the store is closed')
    sameTranscript(reference, await transcript(client, 'm', { classes }), { chosen: CHOSEN, words })
  } finally {
    await served.close()
  }
})

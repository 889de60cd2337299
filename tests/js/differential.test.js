// The same calls, bad inputs among them, answered alike in process and by a client over `connect()` to
// `serve()`: the outcome's shape, and an error's code and message (tests/shared/differential.js), in
// one hand-written scenario and in seeded random ones (tests/shared/differential-random.js).
import { test } from 'node:test'
import { connect, memoryStorage, openStore } from 'holdfast'
import { sameAnswers } from './differential.js'
import { everySeedAnswersAlike } from './differential-random.js'

const TOKEN = 'test-token-0123456789'

test('differential: a client of serve() answers every call of the scenario as the in-process store does', async () => {
  const reference = await openStore({ storage: memoryStorage() })
  const served = await openStore({ storage: memoryStorage() })
  const server = await served.serve({ port: 0, token: TOKEN })
  const client = await connect(server.url, { token: TOKEN })
  try {
    // A closed client says so naming its server, where a store says "the store is closed": chosen
    // (0e8ecac, a3d030d; tests/js/remote-leases.test.js, LOCK-06), so that a log tells which client.
    await sameAnswers(reference, client, [], m => m.replace(`${client.url}: the client closed`, 'the store is closed'))
  } finally {
    await client.close()
    await served.close()
  }
})

test('differential: a client of serve() answers every call of the random scenarios as the in-process store does (HOLDFAST_DIFF_SEEDS, HOLDFAST_DIFF_SEED)', { timeout: 600_000 }, async () => {
  const served = await openStore({ storage: memoryStorage() })
  const server = await served.serve({ port: 0, token: TOKEN })
  try {
    // Each seed its own client and names (`d<seed>-`) on the one server.
    await everySeedAnswersAlike({
      reference: () => openStore({ storage: memoryStorage() }),
      other: () => connect(server.url, { token: TOKEN }),
      options: client => ({ words: m => m.replaceAll(`${client.url}: the client closed`, 'the store is closed') }),
    })
  } finally {
    await served.close()
  }
})

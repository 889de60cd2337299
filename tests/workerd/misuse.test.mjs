// Misuse, refused alike in workerd: the list of invalid calls of tests/shared/misuse.js answered by a
// connect() client of a HoldfastObject (over WebSocket, through the test worker's /ws/NAME) word for
// word as by the in-process store (tests/js/misuse.test.js checks that one against each step's
// expectation), but for the differences chosen and documented (below, each with where it is written).
import { test, before, after } from 'node:test'
import { pathToFileURL } from 'node:url'
import { CancelledError, ClosedError, connect, InUseError, InvalidError, LimitError, LostError, memoryStorage, openStore } from 'holdfast'
import { sameTranscript, transcript } from './misuse.js'

const { createTestHarness } = await import(process.env.WRANGLER_MODULE ? pathToFileURL(process.env.WRANGLER_MODULE).href : 'wrangler')

const TOKEN = 'workerd-test-token'
const classes = { invalid: InvalidError, closed: ClosedError, cancelled: CancelledError, lost: LostError, in_use: InUseError, limit: LimitError }

/** Differences chosen, by step, with where they are documented. */
const CHOSEN = {
  'pool capacity undefined, a new pool': "README, Pools: a pool that does not exist is refused at once in process, at the handle's first call over a connection",
  'closed: inspect': "README, Holding keys from other processes: a remote store's inspect() returns a promise",
}

let server
let base
before(async () => {
  server = createTestHarness({ root: process.cwd(), workers: [{ configPath: 'wrangler.jsonc', secrets: { HOLDFAST_TOKEN: TOKEN } }] })
  const { url } = await server.listen()
  base = `ws://${url.host}`
})
after(async () => {
  await server?.close()
})

test('misuse: a connect() client of a HoldfastObject refuses each invalid call as the in-process store does, word for word', { timeout: 120_000 }, async () => {
  const reference = await transcript(await openStore({ storage: memoryStorage() }), 'm', { classes })
  const client = await connect(`${base}/ws/misuse`, { token: TOKEN })
  // A closed client names its server (tests/js/misuse.test.js says where that is chosen).
  const words = m => m.replace(`${client.url}: the client closed`, 'the store is closed')
  sameTranscript(reference, await transcript(client, 'm', { classes }), { chosen: CHOSEN, words })
})

/**
 * Differences chosen for a Worker's store (`workerStore()`), by step, beside those above. It has no
 * close() (CHANGELOG, Added: `await using`), so the steps after close are not run.
 */
const CHOSEN_WORKER = {
  'pool capacity undefined, a new pool': CHOSEN['pool capacity undefined, a new pool'],
}

test('misuse: a workerStore() in a Worker refuses each invalid call as the in-process store does, word for word', { timeout: 120_000 }, async () => {
  const reference = await transcript(await openStore({ storage: memoryStorage() }), 'w', { classes, afterClose: false })
  const response = await server.getWorker().fetch('/cf/misuse?prefix=w')
  const body = await response.json()
  if (body.error) throw new Error(`the worker's transcript failed: ${JSON.stringify(body.error)}`)
  sameTranscript(reference, body.lines, { chosen: CHOSEN_WORKER })
})

// A client whose server went away, for remote-leases.test.js: with nothing else alive in the process,
// it asks one thing (argv: `hold`, with a wait of 1 s, `inspect` or `claim`, a pool's) while it
// reconnects to nobody. Prints one JSON line: the code it was answered.
import { openStore, memoryStorage, connect } from 'holdfast'

const token = 'test-token-0123456789'
const store = await openStore({ storage: memoryStorage() })
const server = await store.serve({ port: 0, token })
const client = await connect(server.url, { token })
const seats = client.pool('seats', { capacity: 3 })
await seats.remaining()
await server.close()
await store.close()
const asks = {
  hold: () => client.lock('jobs').hold('k', { wait: '1s' }, () => {}),
  inspect: () => client.inspect(),
  claim: () => seats.claim(1),
}
const answer = await asks[process.argv.at(-1)]().then(
  () => 'answered',
  e => e.code,
)
process.stdout.write(`${JSON.stringify({ answer })}\n`)
await client.close()

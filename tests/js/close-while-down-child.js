// A process whose client's connection drops while it holds a lease, for remote-leases.test.js: its
// server closed (refusing every dial after), close() is the only work left in the process. Prints
// "closed" once close() settled.
import { openStore, memoryStorage, connect } from 'holdfast'

const TOKEN = 'close-while-down-token-0123456789'
const store = await openStore({ storage: memoryStorage() })
const server = await store.serve({ port: 0, token: TOKEN })
const client = await connect(server.url, { token: TOKEN })
await client.lock('jobs', { ttl: '30s' }).acquire('nightly')
await server.close()
await store.close()
// Until the client has read the close (the server's close answers before the client's side ran).
await new Promise(resolve => setTimeout(resolve, 200))
await client.close()
process.stdout.write('closed\n')

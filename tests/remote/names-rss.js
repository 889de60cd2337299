// The figure of #13 item 5: a server's memory before and after a client held N distinct names, one
// after another (locks, and every third a semaphore), each released at once. Prints one JSON line:
// the server's `_footprint()` (an old build has no counts of names), RSS, JS heap and wasm memory,
// after a full collection, before and after. Run it where holdfast is installed, e.g. the project
// that tests/remote/run.sh makes:  node names-rss.js 300000
import { connect } from 'holdfast'
import { TOKEN, startServer } from './helpers.js'

const N = Number(process.argv[2] ?? 300_000)
const started = []
const server = await startServer(p => (started.push(p), p))
const remote = await connect(server.url, { token: TOKEN })

async function footprint() {
  await remote.inspect() // the server has read every release sent before
  const since = server.events.length
  server.send({ op: 'footprint', gc: true })
  const { footprint, rss, heap, wasm } = await server.next({ ev: 'footprint' }, 60_000, { since })
  return { footprint, rss, heap, wasm }
}

const before = await footprint()
const t0 = Date.now()
for (let i = 0; i < N; i++) {
  if (i % 3 === 0) await remote.semaphore(`sem-${i}`, { limit: 2 }).hold('k', () => {})
  else await remote.lock(`name-${i}`).hold('k', () => {})
}
const ms = Date.now() - t0
const after = await footprint()
console.log(JSON.stringify({ names: N, ms, before, after }))
await remote.close()
await Promise.all(started.map(p => p.stop()))

// A store's server in its own process, for the remote tests: `RUNTIME server.js '<json options>'`.
// Options: { dir (fileStorage; else memoryStorage), manualClock (a start time: the store and server
// run on a manual clock, moved only by `advance`), and any of serve()'s: port, host, path, socketMode,
// token, maxConnections, maxUnauthenticated, helloTimeout, maxBuffered, connectionLimit, maxHolds }.
// Prints one JSON line `{ "ev": "listening", "url", "pid" }` when it listens, then answers commands on
// stdin (one JSON object a line):
//   { "op": "inspect" }      -> { "ev": "inspected", "entries": store.inspect(), "connections" }
//   { "op": "footprint", "gc": bool } -> { "ev": "footprint", "footprint": store._footprint(), "rss",
//                               "heap", "wasm" } (bytes), after a full garbage collection if `gc`
//   { "op": "count" }        -> { "ev": "counted", "busy": store.inspect().length, "connections", "rss" }
//   { "op": "gc" }           -> a full garbage collection, where the runtime lets it (--expose-gc);
//                               { "ev": "gced" }
//   { "op": "fill", "lock", "count", "keyBytes" }
//                            -> holds `count` keys of `keyBytes` bytes of the lock here (never let go);
//                               { "ev": "filled", "count" }
//   { "op": "advance", "ms" } -> moves the manual clock (option manualClock) by `ms`, running the
//                               timers due; { "ev": "advanced", "connections" }
//   { "op": "close" }        -> closes the store (which answers its remote waiters and holders), then
//                               the server; prints { "ev": "closed" } and exits
// SIGTERM closes cleanly too. Every line it prints carries `t` (Date.now()).
import { openStore, fileStorage, memoryStorage } from 'holdfast'
import { manualClock } from 'holdfast/testing'
import { createInterface } from 'node:readline'
import { fullGc } from './helpers.js'

const o = JSON.parse(process.argv[2] ?? '{}')
const say = event => process.stdout.write(JSON.stringify({ ...event, t: Date.now() }) + '\n')

const clock = o.manualClock === undefined ? undefined : manualClock(o.manualClock)
const store = await openStore({ storage: o.dir ? fileStorage(o.dir) : memoryStorage(), ...(clock ? { clock } : {}) })
const options = { token: o.token }
const passed = ['port', 'host', 'path', 'socketMode', 'maxConnections', 'maxUnauthenticated', 'helloTimeout', 'maxBuffered', 'connectionLimit', 'maxHolds']
for (const k of passed) if (o[k] !== undefined) options[k] = o[k]
const server = await store.serve(options)
say({ ev: 'listening', url: server.url, pid: process.pid })

async function fill({ lock, count, keyBytes }) {
  const handle = store.lock(lock)
  for (let i = 0; i < count; i++) await handle.acquire(`${i}-`.padEnd(keyBytes, 'k'), { wait: 0 })
  say({ ev: 'filled', count })
}

async function close() {
  await store.close()
  await server.close()
  say({ ev: 'closed' })
  process.exit(0)
}

createInterface({ input: process.stdin }).on('line', line => {
  if (!line.trim()) return
  const cmd = JSON.parse(line)
  if (cmd.op === 'inspect') say({ ev: 'inspected', entries: store.inspect(), connections: server.connections })
  else if (cmd.op === 'footprint') {
    if (cmd.gc) fullGc()
    const { rss, heapUsed } = process.memoryUsage()
    say({ ev: 'footprint', footprint: store._footprint(), rss, heap: heapUsed, wasm: store._memoryBytes() })
  } else if (cmd.op === 'count') say({ ev: 'counted', busy: store.inspect().length, connections: server.connections, rss: process.memoryUsage().rss })
  else if (cmd.op === 'fill') void fill(cmd)
  else if (cmd.op === 'gc') {
    fullGc()
    say({ ev: 'gced' })
  }
  else if (cmd.op === 'advance') {
    clock.advance(cmd.ms)
    say({ ev: 'advanced', connections: server.connections })
  }
  else if (cmd.op === 'close') void close()
})
process.on('SIGTERM', () => void close())

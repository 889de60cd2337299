// The client's side of R1 without sockets: holdfast's client (`connect()` of the Node entry, with its
// async context) holding one key in sequence, joined in one process to a server's `Protocol` by a pipe
// that delivers what one side sends in a turn as the other's next read. It prints the time the client
// spends from the server's grant arriving to its next message leaving (the grant read, fn run, the
// release and the next hold encoded): the part of the client's CPU that holdfast's own code decides,
// apart from `ws`, the streams and the kernel, which `ws-lock`'s client pays as well.
//
//   node tests/bench/client.mjs DIR [holdfast|floor] [holds per pass]     (SLEEP_US=100: below)
//
// DIR holds a build (`dist/` and `wasm/`), as for protocol.mjs. `floor` is `ws-lock`'s client
// (adapters.mjs `wsLockClient`) joined to `ws-lock`'s server handler the same way (DIR is then unused).
// PASSES (default 40) passes are run after a warm-up; the least time of a pass and the median are
// printed, with the CPU time of the whole loop (the server's side included).
//
// SLEEP_US=N: the thread sleeps N µs before each grant is delivered to the client, as a client's main
// thread sleeps in epoll while its hold travels (see protocol.mjs): the client's work then starts on a
// CPU that was idle. Both sides' sends are flushed in an immediate, as the `ws` transport flushes a
// turn's frames; a client's answer to a grant delivered in an immediate leaves in the next loop's
// check phase, so the time includes one turn of the event loop (as much for `floor`).
import path from 'node:path'
import { wsLockClient } from './adapters.mjs'
import { wsLockMessages } from './remote.mjs'
import { passes, sleep } from './passes.mjs'

const dir = path.resolve(process.argv[2] ?? 'npm')
const mode = process.argv[3] ?? 'holdfast'
const N = Number(process.argv[4] ?? 8000)

/** The client's time, summed: from a delivery to the client (`since`) to the flush of its answer. */
let ns = 0n
let since = 0n

/**
 * One direction of a connection: `send` queues, and the turn's frames go at its end (an immediate), as
 * one message each or packed where `pack()` says the peer takes batches, to `deliver`. `toClient`: the
 * thread first sleeps (SLEEP_US) and the client's time starts; else the client's time ends.
 */
function direction(deliver, pack, toClient, packed, max) {
  let queue = []
  const flush = () => {
    const frames = queue
    queue = []
    const p = pack()
    const messages = p !== undefined && frames.length > 1 ? packed(frames, p, max) : frames
    if (toClient) {
      sleep()
      since = process.hrtime.bigint()
    } else if (since !== 0n) {
      ns += process.hrtime.bigint() - since
      since = 0n
    }
    for (const m of messages) deliver(m)
  }
  return (frame) => {
    if (queue.length === 0) setImmediate(flush)
    queue.push(frame)
  }
}

/** holdfast's client over the pipe: a lock's `hold` on a store served by a `Protocol` in this process. */
async function holdfast() {
  const { nodeRuntime } = await import(`${dir}/dist/runtime/node/runtime.js`)
  const { openStore, memoryStorage } = await import(`${dir}/dist/entry/node.js`)
  const { Protocol, Session } = await import(`${dir}/dist/remote/session.js`)
  const { withHandlers, packed } = await import(`${dir}/dist/runtime/transport.js`)
  const { BATCHED_MAX } = await import(`${dir}/dist/runtime/node/ws-frames.js`)
  const store = await openStore({ storage: memoryStorage() })
  const protocol = new Protocol(() => store, 'token', {})
  const transport = {
    listen: () => Promise.reject(new Error('client.mjs: no listening')),
    dial: async () => {
      let session
      const ends = {}
      const client = withHandlers({
        send: direction((m) => protocol.frame(session, m), () => ends.client.pack, false, packed, BATCHED_MAX),
        close() {},
      })
      const serverSocket = {
        send: direction((m) => client.message(m), () => serverSocket.pack, true, packed, BATCHED_MAX),
        close() {},
        pack: undefined,
        onMessage: undefined,
        onClose: undefined,
      }
      ends.client = client.socket
      session = new Session(1, serverSocket, protocol)
      return client.socket
    },
  }
  const remote = await nodeRuntime(transport).connect('ws://client.mjs', { token: 'token' })
  const lock = remote.lock('bench', { ttl: '30s', wait: Infinity })
  return (fn) => lock.hold('k', fn)
}

/** `ws-lock`'s client and server handler over the pipe. */
function floor() {
  let server
  const client = wsLockClient(direction((m) => server(m), () => undefined, false))
  server = wsLockMessages(new Map(), direction((m) => client.message(m), () => undefined, true))
  return (fn) => client.hold('k', fn)
}

const hold = mode === 'floor' ? floor() : await holdfast()
async function run(n) {
  // A new fn for each pass, as R1's client makes one for each of its runs.
  const fn = async () => {}
  for (let i = 0; i < n; i++) await hold(fn)
  // The last hold's release leaves in the next turn.
  await new Promise((resolve) => setImmediate(resolve))
  return n
}

const taken = () => {
  const t = ns
  ns = 0n
  since = 0n
  return t
}
await passes(run, N, taken, mode === 'floor' ? "floor (ws-lock's client): the client" : `holdfast ${dir}: the client`)
process.exit(0)

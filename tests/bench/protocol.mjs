// The server's side of a served store without sockets: `Protocol.frame` (npm/src/remote/session.ts)
// fed the messages a client sends in R1 or R3, in one process, with a socket that only keeps what the
// server sends. It prints the time spent in `frame` per hold (decoding, dispatch, the store and engine,
// encoding the answers), the part of the server's CPU that holdfast's own code decides, apart from the
// event loop, `ws` and the kernel, which `ws-lock`'s server pays as well.
//
//   node tests/bench/protocol.mjs DIR [r1|r2|r3|floor] [holds per pass]     (SLEEP_US=100, THRASH=2: below)
//
// DIR holds a build (`dist/` and `wasm/`): npm/ after npm/build.sh, or an unpacked .tgz's `package/`;
// two builds are compared by running it on each in turn, interleaved. PASSES (default 40) passes are
// run after a warm-up, and the least time of a pass is printed (the machine is shared: the least is
// the pass least disturbed), and the median (THRASH, below, makes passes vary more), with the CPU time
// of the whole loop (the client's side simulated here too).
//
//   r1: one session; each message is `[release of the last lease, hold]` on one key, as a client holding
//       one key in sequence sends it (its release and next hold leave in one turn, one batch).
//   r3: two sessions of 32 workers each on 100 keys; in turns, each session sends the releases of its
//       workers holding and a hold for each free worker, as one batch; the grants are read back.
//   r2: two sessions; A holds a gate on one key, then 100 holds are sent one a message, alternately
//       from A and B, and wait in line; A lets the gate go, and each grant is answered by its session's
//       release (id 0, a message of its own), which hands the key to the next in line. Only the
//       hand-overs are timed (from the gate's release on), as in the benchmark's R2; the whole loop's
//       CPU includes the issue phase.
//   floor: r1's messages as `ws-lock` sends them (a release and a hold, two messages of one read) to
//       `ws-lock`'s own handler (remote.mjs `wsLockMessages`): what the floor's server does of a hold,
//       timed as `frame` is (DIR is still read, and unused).
//
// SLEEP_US=N: before each message the thread sleeps N µs (Atomics.wait), as a server's main thread
// sleeps in epoll between two messages of R1 (most of its 110-180 µs round trip): the message's work
// then starts on a CPU that was idle (its caches and branch predictors used by others), as it does in
// the benchmark. The time of `frame` (or the floor's handler) is then measured after each wake-up; the
// whole loop's CPU includes the sleeps' system calls. WITH_TURN=1: each message's time runs to the end
// of its turn (see there).
import path from 'node:path'
import { WS_LOCK } from './adapters.mjs'
import { wsLockMessages } from './remote.mjs'
import { passes, sleep } from './passes.mjs'

const dir = path.resolve(process.argv[2] ?? 'npm')
const mode = process.argv[3] ?? 'r1'
const N = Number(process.argv[4] ?? 8000)
const { openStore, memoryStorage } = await import(`${dir}/dist/entry/node.js`)
const { Protocol, Session } = await import(`${dir}/dist/remote/session.js`)
const wire = await import(`${dir}/dist/remote/wire.js`)

const store = await openStore({ storage: memoryStorage() })
const protocol = new Protocol(() => store, 'token', {})
const hex = () => {
  let s = ''
  for (let i = 0; i < 32; i++) s += '0123456789abcdef'[(Math.random() * 16) | 0]
  return s
}
let conn = 0
function session() {
  const out = []
  const socket = { send: (f) => out.push(f), close() {}, pack: undefined, onMessage: undefined, onClose: undefined }
  const s = new Session(++conn, socket, protocol)
  protocol.frame(s, wire.encodeClient(1, { type: 'hello', revision: wire.REVISION, token: 'token', client: 'bench' }))
  out.length = 0
  return { s, out }
}
const hold = (id, key) => wire.encodeClient(id, { type: 'hold', semaphore: false, limit: 1, name: 'bench', key, ttl: 30_000, maxHold: 0, wait: null, request: hex() })
const release = (lease) => wire.encodeClient(0, { type: 'release', lease })
/** The leases granted in what a session was sent, by frame id. */
function grants(msgs, into) {
  for (const m of msgs) {
    for (const f of wire.decodeServerAll(m)) {
      if (f.type !== 'granted') throw new Error(`the server answered ${JSON.stringify(f)}`)
      into.set(f.id, f.lease)
    }
  }
}
let ns = 0n
/** Whether `feed` counts its time (r2 counts only the hand-overs). */
let timed = true
/**
 * WITH_TURN=1: the time of a message runs to the end of its turn: `frame`, and what the server left
 * to the turn's end (its microtasks; and one `await`, the same for every build).
 */
const WITH_TURN = process.env.WITH_TURN === '1'
/**
 * THRASH=MB: before each message, write a buffer of that size, as the other processes of the machine
 * do to the caches between two messages of a real server (which sleeps between them): the work of a
 * message from cold caches, what its code and data's footprint costs.
 */
const thrash = new Uint8Array(Number(process.env.THRASH ?? 0) * 1024 * 1024)
let spoil = 0
/** Before a message: the caches spoiled (THRASH) or the thread asleep (SLEEP_US, see the top), if asked. */
function between() {
  if (thrash.length) thrash.fill(++spoil & 255)
  sleep()
}
/** One message, in a turn of its own (as a socket's messages come): what the server leaves to the turn's end runs after it. */
const feed = async (s, bytes) => {
  between()
  const t = process.hrtime.bigint()
  protocol.frame(s, bytes)
  if (timed && !WITH_TURN) ns += process.hrtime.bigint() - t
  await undefined
  if (timed && WITH_TURN) ns += process.hrtime.bigint() - t
}
const goodbye = (s) => protocol.frame(s, wire.encodeClient(99, { type: 'goodbye' }))

async function r1(n) {
  const { s, out } = session()
  const got = new Map()
  const holds = Array.from({ length: n }, (_, i) => hold(i + 1, 'k'))
  let lease
  for (let i = 0; i < n; i++) {
    await feed(s, lease === undefined ? holds[i] : wire.batchOf([release(lease), holds[i]], false))
    grants(out, got)
    out.length = 0
    lease = got.get(i + 1)
    got.delete(i + 1)
  }
  await feed(s, release(lease))
  goodbye(s)
  return n
}

async function r3(n) {
  const W = 32
  const sessions = [session(), session()]
  const state = sessions.map(() => ({ holding: new Map(), free: W }))
  let id = 1
  let done = 0
  while (done < n) {
    for (let k = 0; k < 2; k++) {
      const { s } = sessions[k]
      const st = state[k]
      const frames = []
      for (const lease of st.holding.values()) frames.push(release(lease))
      done += st.holding.size
      st.free += st.holding.size
      st.holding.clear()
      for (; st.free > 0; st.free--) frames.push(hold(id++, `k${(Math.random() * 100) | 0}`))
      if (frames.length) await feed(s, frames.length === 1 ? frames[0] : wire.batchOf(frames, false))
      for (let j = 0; j < 2; j++) {
        const granted = new Map()
        grants(sessions[j].out, granted)
        sessions[j].out.length = 0
        for (const [frame, lease] of granted) state[j].holding.set(frame, lease)
      }
    }
  }
  for (const { s } of sessions) goodbye(s)
  return done
}

async function r2(n) {
  const H = 100
  const sessions = [session(), session()]
  let id = 1
  let done = 0
  while (done < n) {
    timed = false
    const gate = id++
    await feed(sessions[0].s, hold(gate, 'k'))
    const got = new Map()
    grants(sessions[0].out, got)
    sessions[0].out.length = 0
    let lease = got.get(gate)
    for (let i = 0; i < H; i++) await feed(sessions[i % 2].s, hold(id++, 'k'))
    timed = true
    // Holder i is session i % 2's; the gate is A's.
    let from = 0
    for (let i = 0; i <= H; i++) {
      await feed(sessions[from].s, release(lease))
      if (i === H) break
      from = i % 2
      const { out } = sessions[from]
      got.clear()
      grants(out, got)
      out.length = 0
      if (got.size !== 1) throw new Error(`holder ${i}: ${got.size} grants`)
      lease = [...got.values()][0]
    }
    done += H
  }
  timed = true
  for (const { s } of sessions) goodbye(s)
  return done
}

/** `ws-lock`'s server fed r1's messages: per hold a release and a hold, two messages of one read. */
async function floor(n) {
  const out = []
  const handler = wsLockMessages(new Map(), (m) => out.push(m))
  const message = (op, id) => {
    const m = Buffer.allocUnsafe(6)
    m[0] = op
    m.writeUInt32LE(id, 1)
    m[5] = 0x6b // 'k'
    return m
  }
  const holds = Array.from({ length: n }, (_, i) => message(WS_LOCK.hold, i + 1))
  const release = message(WS_LOCK.release, 0)
  for (let i = 0; i < n; i++) {
    between()
    const t = process.hrtime.bigint()
    if (i > 0) handler(release)
    handler(holds[i])
    ns += process.hrtime.bigint() - t
    if (out.length !== 1 || out[0][4] !== 1) throw new Error(`floor: hold ${i + 1} was not granted`)
    out.length = 0
    await undefined
  }
  handler(release)
  return n
}

const run = mode === 'r3' ? r3 : mode === 'r2' ? r2 : mode === 'floor' ? floor : r1
const taken = () => {
  const t = ns
  ns = 0n
  return t
}
const what = mode === 'floor' ? "floor (ws-lock): ws-lock's handler" : `${mode} ${dir}: Protocol.frame`
await passes(run, N, taken, what, thrash.length ? `, THRASH=${process.env.THRASH}` : '')
process.exit(0)

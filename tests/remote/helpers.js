// The harness of the remote tests: real processes (a server, clients, a TCP proxy) talking over real
// sockets on 127.0.0.1 or Unix sockets, driven through their stdin and watched through their stdout
// (one JSON line per event). Nothing is mocked.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import assert from 'node:assert/strict'
import WebSocket from 'ws'
import net from 'node:net'
import { encode, framesOf, masked, wsStream } from './frames.js'


/** The runtimes: the one running the tests, and those the runner names (else the same one). */
export const RUNTIMES = {
  node20: process.env.HOLDFAST_NODE20 || process.execPath,
  node24: process.env.HOLDFAST_NODE24 || process.execPath,
  node26: process.env.HOLDFAST_NODE26 || process.execPath,
  bun: process.env.HOLDFAST_BUN || process.execPath,
  self: process.execPath,
}
export const TOKEN = 'test-token-0123456789abcdef'
export const sleep = ms => new Promise(r => setTimeout(r, ms))

/** A temporary directory, removed by `cleanup()`. */
export function tempDir(t, prefix = 'holdfast-remote-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix))
  t?.after?.(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

import { Proc } from './proc.js'

export { Proc }

/** Every process a test started, stopped after it. */
export function procs(t) {
  const list = []
  t.after(() => Promise.all(list.map(p => p.stop())))
  return p => (list.push(p), p)
}

/** Starts a server process; resolves once it listens: `{ proc, url }`. */
export async function startServer(own, options = {}, runtime = RUNTIMES.self) {
  const o = { token: TOKEN, ...(options.path === undefined ? { port: 0 } : {}), ...options }
  const proc = own(new Proc(runtime, 'server.js', [JSON.stringify(o)], 'server'))
  const { url } = await proc.next({ ev: 'listening' }, 15_000)
  proc.url = url
  return proc
}

/** The server's own view of its store: `store.inspect()` and its count of connections. */
export async function serverInspect(server) {
  const since = server.events.length
  server.send({ op: 'inspect' })
  return server.next({ ev: 'inspected' }, 5_000, { since })
}

/** The entry of one key in an inspection (or undefined when the key is idle). */
export function entryOf(inspected, name, key) {
  return inspected.entries.find(e => e.name === name && e.key === key)
}

/** Polls the server until `check(inspected)` is true; rejects after `ms`. */
export async function untilServer(server, check, ms = 10_000, what = 'condition') {
  const end = Date.now() + ms
  for (;;) {
    const inspected = await serverInspect(server)
    if (check(inspected)) return inspected
    if (Date.now() > end) throw new Error(`server: ${what} not met in ${ms}ms; last inspect: ${JSON.stringify(inspected)}`)
    await sleep(20)
  }
}

/** Starts a client agent on `runtime` and connects it (to `url`, unless `connect: false`). */
export async function startAgent(own, name, runtime, url, { token = TOKEN, connect = true } = {}) {
  const agent = own(new Proc(runtime, 'agent.js', [name], name))
  await agent.next({ ev: 'ready' }, 15_000)
  if (connect) {
    agent.send({ op: 'connect', url, token })
    const e = await agent.next(e => e.ev === 'connected' || e.ev === 'connect-error', 10_000)
    if (e.ev !== 'connected') throw new Error(`${name}: connect failed: ${JSON.stringify(e.error)}`)
  }
  return agent
}

/** Asks an agent to hold a key; resolves once it says it asked (the hold is on its way). */
export async function ask(agent, cmd) {
  const since = agent.events.length
  agent.send({ op: 'hold', ...cmd })
  await agent.next({ ev: 'asked', id: cmd.id }, 5_000, { since })
}

/** Starts the TCP proxy: `{ proc, port }`. */
export async function startProxy(own, target, { listen = 0, frames = false, holdOpen, pauseAccept } = {}) {
  const proc = own(new Proc(RUNTIMES.self, 'proxy.js', [JSON.stringify({ listen, target, frames, holdOpen, pauseAccept })], 'proxy'))
  const { port } = await proc.next({ ev: 'listening' }, 10_000)
  proc.port = port
  return proc
}

export const portOf = url => Number(new URL(url).port)

/**
 * A raw WebSocket client speaking frames.js: for what the package's client never sends. Keeps every
 * decoded frame in `frames` and the close in `closed` ({ code, reason }).
 */
/**
 * Sends `frames` on a new raw connection to `url` and checks the server refuses them as an
 * unauthenticated caller: an error `permission`, the connection closed 4401. Answers the client (its
 * `frames`, to check nothing else came).
 */
export async function refusedUnauthenticated(url, frames) {
  const raw = await rawClient(url)
  for (const f of frames) raw.send(f)
  const answer = await raw.answer(f => f.type === 'error')
  assert.equal(answer.code, 'permission')
  assert.equal((await raw.whenClosed).code, 4401)
  return raw
}

export async function rawClient(url) {
  const target = url.startsWith('ws+unix://') ? `${url}:/` : url
  const ws = new WebSocket(target)
  const client = { ws, frames: [], closed: undefined, waiters: [] }
  client.whenClosed = new Promise(resolve => ws.on('close', (code, reason) => resolve((client.closed = { code, reason: String(reason) }))))
  ws.on('error', () => {})
  ws.on('message', (data, isBinary) => {
    client.messages = (client.messages ?? 0) + 1
    // A batch (revision 3, to a client that said it) is its frames, in order.
    for (const frame of isBinary ? framesOf(data) : [{ type: 'text', text: String(data) }]) {
      client.frames.push(frame)
      for (const w of [...client.waiters]) if (w.match(frame)) w.resolve(frame)
    }
  })
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  client.send = bytes => ws.send(bytes)
  /** The answer to frame `id` (or any frame matching a function). */
  client.answer = (match, ms = 5_000) => {
    const m = typeof match === 'function' ? match : f => f.id === match
    const seen = client.frames.find(m)
    if (seen) return Promise.resolve(seen)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`raw client: no answer in ${ms}ms; frames ${JSON.stringify(client.frames)}; closed ${JSON.stringify(client.closed)}`)), ms)
      client.waiters.push({ match: m, resolve: f => (clearTimeout(timer), resolve(f)) })
    })
  }
  client.close = () => ws.terminate()
  return client
}

export { fullGc } from './gc.js'

/**
 * A client that never reads: a raw TCP connection that upgrades to WebSocket (by hand, over
 * `node:net`), sends `frames` (protocol frames, masked here), and then leaves everything the server
 * sends unread. `closed` resolves when the connection ended and the client read to its end (a socket
 * that does not read does not see its end: `socket.resume()` first).
 */
export async function stallingClient(url, frames) {
  const { port, hostname } = new URL(url)
  const s = net.connect(Number(port), hostname)
  s.on('error', () => {})
  const closed = new Promise(resolve => s.once('close', resolve))
  await new Promise(resolve => s.once('connect', resolve))
  s.write(`GET / HTTP/1.1\r\nHost: ${hostname}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${Buffer.alloc(16, 7).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`)
  // Read up to the end of the upgrade's answer only, then stop reading for good.
  await new Promise((resolve, reject) => {
    let head = ''
    const onData = chunk => {
      head += chunk.toString('latin1')
      if (!head.includes('\r\n\r\n')) return
      s.off('data', onData)
      s.pause()
      if (!head.startsWith('HTTP/1.1 101')) reject(new Error(`no upgrade: ${head.split('\r\n')[0]}`))
      else resolve()
    }
    s.on('data', onData)
  })
  s.write(Buffer.concat(frames.map(masked)))
  return { socket: s, closed, close: () => s.destroy() }
}

/**
 * A client that reads what the server sends but never answers its close (a host that froze, a client
 * that only half-implements WebSocket): a raw TCP connection upgraded by hand, which sends `frames`
 * (masked here) and `send(frame)` later, keeps every decoded server frame in `frames` and the close
 * frame's code in `closeCode`, and answers nothing. `answer(match)` as `rawClient`'s.
 */
export async function closeDeafClient(url, frames) {
  const { port, hostname } = new URL(url)
  const s = net.connect(Number(port), hostname)
  s.on('error', () => {})
  await new Promise(resolve => s.once('connect', resolve))
  const client = { socket: s, frames: [], closeCode: undefined, waiters: [] }
  let upgraded
  const upgrade = new Promise(resolve => (upgraded = resolve))
  s.on(
    'data',
    wsStream(
      frame => {
        if (frame.opcode === 8) return void (client.closeCode = frame.payload.length >= 2 ? frame.payload.readUInt16BE(0) : 1005)
        if (frame.opcode !== 2) return
        for (const f of framesOf(frame.payload)) {
          client.frames.push(f)
          for (const w of [...client.waiters]) if (w.match(f)) w.resolve(f)
        }
      },
      upgraded,
    ),
  )
  s.write(`GET / HTTP/1.1\r\nHost: ${hostname}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${Buffer.alloc(16, 9).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`)
  const head = await upgrade
  if (!head.startsWith('HTTP/1.1 101')) throw new Error(`no upgrade: ${head.split('\r\n')[0]}`)
  client.send = frame => s.write(masked(frame))
  for (const f of frames) client.send(f)
  client.answer = (match, ms = 5_000) => {
    const m = typeof match === 'function' ? match : f => f.id === match
    const seen = client.frames.find(m)
    if (seen) return Promise.resolve(seen)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`close-deaf client: no answer in ${ms}ms; frames ${JSON.stringify(client.frames)}`)), ms)
      client.waiters.push({ match: m, resolve: f => (clearTimeout(timer), resolve(f)) })
    })
  }
  client.close = () => s.destroy()
  return client
}

/** A process holding a lease (ttl 3 s: the flood of 10,000 holds may keep a loaded server busy for
 * most of a second) for the whole test; `check()` asserts it still holds it. */
export async function bystander(own, server) {
  const agent = await startAgent(own, 'bystander', RUNTIMES.bun, server.url)
  await ask(agent, { id: 'b', lock: 'bystander', key: 'b', ttl: 3000 })
  const { fence } = await agent.next({ ev: 'granted', id: 'b' })
  return {
    async check() {
      assert.ok(!agent.saw({ ev: 'lost' }), 'the bystander lost its lease: the server stopped serving it')
      const s = await serverInspect(server)
      assert.deepEqual(entryOf(s, 'bystander', 'b')?.holders.map(h => h.fence), [fence])
      assert.equal(server.exit, undefined, 'the server is up')
      // And it can still hold another key.
      await ask(agent, { id: 'again', lock: 'bystander', key: 'again', ttl: 1000 })
      await agent.next({ ev: 'granted', id: 'again' })
      agent.send({ op: 'release', id: 'again' })
    },
  }
}

/** A raw connection that said hello with the right token. */
export async function authed(url) {
  const raw = await rawClient(url)
  raw.send(encode.hello(1, TOKEN))
  assert.equal((await raw.answer(1)).type, 'welcome')
  return raw
}

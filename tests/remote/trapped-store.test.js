// A store that closed itself after an internal error (a wasm trap: `_trapForTest()`, or one inside
// `close()`) ends what it started as `close()` does: every request over a connection is answered
// (a lease lost `closed`, a waiting hold `error` `closed`), then its servers stop listening and their
// connections close; `close()` resolves once they did, and again at once. `_whenTrapped()` (what
// `holdfast serve` waits for) answers a trap before `close()` or during it, never one after it (nothing
// traps then). No clock runs: the store's timers are on a manual clock, and everything awaited is an
// event.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { openStore, connect, memoryStorage, ClosedError } from 'holdfast'
import { manualClock } from 'holdfast/testing'
import { encode } from './frames.js'
import { TOKEN, rawClient, tempDir } from './helpers.js'

/** `promise`, or a rejection naming `what` if it has not settled within 5 s (instead of a hang). */
function within(promise, what) {
  let timer
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within 5 s`)), 5_000)))
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/**
 * Makes the engine trap at the next call of its `method` (`close` by default): `Core`'s (the wasm glue
 * of the installed package, the module the store itself loaded) makes a real wasm panic instead,
 * once. Answers whether that call came yet; the method is put back after the test (`t`) either way.
 */
async function trapAtNext(t, method = 'close') {
  const { Core } = await import(new URL('../../wasm/holdfast_wasm.js', import.meta.resolve('holdfast')).href)
  const original = Core.prototype[method]
  Core.prototype[method] = function () {
    Core.prototype[method] = original
    return this.trapForTest()
  }
  t.after(() => (Core.prototype[method] = original))
  return () => Core.prototype[method] === original
}

/**
 * A store on a manual clock served on a loopback port; a raw connection past hello holding `jobs/k`
 * (its lease) and waiting for it again (another request); a hold of this process waiting behind it.
 */
async function servedAndHeld(t) {
  const store = await openStore({ storage: memoryStorage(), clock: manualClock(1_000_000) })
  const server = await store.serve({ port: 0, token: TOKEN })
  const raw = await rawClient(server.url)
  raw.send(encode.hello3(1, TOKEN, 6))
  assert.equal((await raw.answer(1)).type, 'welcome')
  raw.send(encode.hold(2, { name: 'jobs', key: 'k' }))
  const granted = await raw.answer(2)
  assert.equal(granted.type, 'granted')
  // Acted on in order: once the ping is answered, the hold is in line.
  raw.send(encode.batch([encode.hold(3, { name: 'jobs', key: 'k' }), encode.ping(4)]))
  assert.equal((await raw.answer(4)).type, 'done')
  // Nothing is left open should the test fail.
  t.after(() => (raw.close(), server.close()))
  const local = store.lock('jobs').hold('k', () => 'ran')
  local.catch(() => {}) // answered by the trap before the test looks (toldAndClosed)
  return { store, server, raw, lease: granted.lease, local }
}

/** What the trap told the connection, and every ending it owes: each request answered, then the close. */
async function toldAndClosed({ raw, lease, local }) {
  const lost = await raw.answer(f => f.type === 'lost')
  assert.deepEqual([Buffer.from(lost.lease).equals(Buffer.from(lease)), lost.code], [true, 'closed'], 'the lease is lost: the store closed')
  const waiting = await raw.answer(3)
  assert.deepEqual([waiting.type, waiting.code], ['error', 'closed'], 'the waiting hold is answered closed')
  await assert.rejects(within(local, 'the hold waiting in this process'), e => e instanceof ClosedError && e.cause !== undefined)
  const closed = await within(raw.whenClosed, 'the connection of the trapped store closing')
  assert.equal(closed.code, 1001, 'closed by its server')
}

/** Nothing listens at `url` any more: a client cannot connect. */
async function notListening(url) {
  const client = await within(connect(url, { token: TOKEN, reconnect: false }), 'connect()').catch(error => error)
  if (!(client instanceof Error)) {
    await client.close()
    assert.fail(`connect() to ${url} succeeded: the server still listens`)
  }
  assert.ok(client instanceof ClosedError, `connect() rejects ClosedError: ${client}`)
}

test('LOCK-05/LOCK-06, a wasm trap: a store that closed itself answers its connections closed, then closes them and stops listening; close() after resolves, and again', async t => {
  const held = await servedAndHeld(t)
  const { store, server } = held
  assert.throws(() => store._trapForTest(), ClosedError)
  assert.equal(store.closed, true)
  // Before the fix: the connection stayed open, the server listening, and connect() succeeded.
  await toldAndClosed(held)
  await within(store.close(), 'close() after the trap')
  await notListening(server.url)
  await within(store.close(), 'a second close()')
  assert.equal(server.connections, 0)
})

test('LOCK-05/LOCK-06, a wasm trap inside close(): every request is answered closed (over the connection too), the connection closes and the server stops listening before close() resolves; a second close() resolves', async t => {
  const held = await servedAndHeld(t)
  const { store, server } = held
  await trapAtNext(t)
  // Before the fix: the trap answered nothing (it found the store closing), and the server was skipped.
  await within(store.close(), 'close() whose engine traps')
  assert.equal(store.closed, true)
  await notListening(server.url)
  await toldAndClosed(held)
  await within(store.close(), 'a second close()')
  await assert.rejects(async () => store.lock('jobs').hold('k', () => {}), e => e instanceof ClosedError && /internal error/.test(e.message))
})

for (const end of ['close', 'trap']) {
  test(`LOCK-06: a serve() still beginning to listen when the store ${end === 'close' ? 'is closed' : 'closes itself (a wasm trap)'} rejects ClosedError and leaves nothing listening`, async t => {
    const store = await openStore({ storage: memoryStorage(), clock: manualClock(1_000_000) })
    const socket = path.join(tempDir(t), 'holdfast.sock')
    const serving = store.serve({ path: socket, token: TOKEN })
    if (end === 'close') await within(store.close(), 'close()')
    else assert.throws(() => store._trapForTest(), ClosedError)
    const served = await within(serving, 'serve()').catch(error => error)
    // Before the fix: it resolved, listening, to a closed store.
    if (!(served instanceof Error)) t.after(() => served.close())
    assert.ok(served instanceof ClosedError, `serve() rejects ClosedError: ${served?.url ?? served}`)
    await notListening(`ws+unix://${socket}`)
    await within(store.close(), 'close() again')
  })
}

for (const end of ['close', 'trap']) {
  test(`LOCK-06: close() ${end === 'close' ? '' : 'after a wasm trap '}resolves only once a serve() still beginning to listen settled (rejected ClosedError): nothing listens by then`, async t => {
    const store = await openStore({ storage: memoryStorage(), clock: manualClock(1_000_000) })
    const socket = path.join(tempDir(t), 'holdfast.sock')
    let settled = false
    const serving = store.serve({ path: socket, token: TOKEN })
    serving.then(
      server => ((settled = true), t.after(() => server.close())),
      () => (settled = true),
    )
    if (end === 'trap') assert.throws(() => store._trapForTest(), ClosedError)
    await within(store.close(), 'close()')
    // Before the fix: close() resolved at once, the serve() still binding its socket, which then
    // listened (for a while) after the store was closed.
    assert.equal(settled, true, 'serve() settled before close() resolved')
    await assert.rejects(serving, ClosedError)
    await notListening(`ws+unix://${socket}`)
  })
}

test('LOCK-06: a serve() that fails to listen, its promise awaited by nobody, is reported as any rejection nobody handles: the store keeping it for a close() to wait for does not handle it', async t => {
  const socket = path.join(tempDir(t), 'no-such-directory', 'holdfast.sock')
  const script = fileURLToPath(new URL('./serve-unawaited.js', import.meta.url))
  const child = spawn(process.execPath, [script, socket], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', chunk => (stdout += chunk))
  child.stderr.on('data', chunk => (stderr += chunk))
  const code = await within(new Promise(resolve => child.on('close', resolve)), 'the process')
  // Before the fix: nothing reported, exit 0 (the store's own note of the serve() handled its rejection).
  assert.doesNotMatch(stdout, /nothing reported/, `stderr: ${stderr}`)
  assert.notEqual(code, 0, `stdout: ${stdout}, stderr: ${stderr}`)
})

test('LOCK-06: a server\'s second close() (its store\'s close() among them) resolves only once the first closed it: nothing listens by then', async t => {
  const store = await openStore({ storage: memoryStorage(), clock: manualClock(1_000_000) })
  const socket = path.join(tempDir(t), 'holdfast.sock')
  const server = await store.serve({ path: socket, token: TOKEN })
  let closed = false
  const first = server.close()
  first.then(() => (closed = true))
  // Before the fix: the second close() resolved at once, the listener still closing.
  await within(server.close(), 'the server\'s second close()')
  assert.equal(closed, true, 'the first close() settled before the second resolved')
  await within(first, 'the first close()')
  await notListening(`ws+unix://${socket}`)
  // And the store's close(), after a close() of its server under way.
  const other = await openStore({ storage: memoryStorage(), clock: manualClock(1_000_000) })
  const otherSocket = path.join(tempDir(t), 'other.sock')
  const served = await other.serve({ path: otherSocket, token: TOKEN })
  let serverClosed = false
  served.close().then(() => (serverClosed = true))
  await within(other.close(), 'the store\'s close()')
  assert.equal(serverClosed, true, 'its server closed before the store\'s close() resolved')
  await notListening(`ws+unix://${otherSocket}`)
})

test('POOL-02/LOCK-06, a wasm trap inside close() once the engine closed (its pools\' last write told back): the release in that write, over the connection too, is answered closed, and close() resolves', async t => {
  // A storage whose pool writes wait until let go: the releases' write is under way when close() begins.
  const values = new Map()
  let letGo
  const held = new Promise(resolve => (letGo = resolve))
  let holding = false
  const storage = {
    get: k => values.get(k),
    set: async (k, v) => {
      if (holding) await held
      values.set(k, v)
    },
  }
  const store = await openStore({ storage, clock: manualClock(1_000_000) })
  const server = await store.serve({ port: 0, token: TOKEN })
  const raw = await rawClient(server.url)
  t.after(() => (raw.close(), server.close()))
  raw.send(encode.hello3(1, TOKEN, 6))
  assert.equal((await raw.answer(1)).type, 'welcome')
  raw.send(encode.claim(2, { pool: 'seats', capacity: 4, n: 1, claim: 'theirs' }))
  assert.deepEqual([(await raw.answer(2)).type], ['claimed'])
  const pool = store.pool('seats', { capacity: 4 })
  assert.equal((await pool.claim(1, { id: 'mine' })).claimed, true)
  holding = true
  // Both releases in the write held up: the remaining's answer comes after the raw release was read.
  raw.send(encode.batch([encode.pool(3, { op: 'release', pool: 'seats', claim: 'theirs' }), encode.pool(4, { op: 'remaining', pool: 'seats' })]))
  assert.equal((await raw.answer(4)).type, 'count')
  const released = pool.release('mine')
  released.catch(() => {})
  // The engine traps when told the write's outcome, inside close().
  await trapAtNext(t, 'poolWritten')
  let trapped
  store._whenTrapped().then(closed => (trapped = closed))
  const closing = store.close()
  letGo()
  // Before the fix: the trap found the store closed and answered nothing; close() waited for good.
  await within(closing, 'close() whose engine traps on its pools\' last write')
  // Before the fix: _whenTrapped() never settled, and holdfast serve stopped as cleanly stopped.
  assert.ok(trapped instanceof ClosedError && trapped.cause instanceof WebAssembly.RuntimeError, `_whenTrapped() settled before close() resolved: ${trapped}`)
  await assert.rejects(within(released, 'the release in that write'), e => e instanceof ClosedError && /internal error/.test(e.message))
  const answer = await raw.answer(3)
  assert.deepEqual([answer.type, answer.code], ['error', 'closed'], 'the release over the connection is answered closed')
  await within(raw.whenClosed, 'the connection closing')
  await notListening(server.url)
  await within(store.close(), 'a second close()')
})

for (const when of ['before close()', "inside the engine's close", 'once close() closed the engine']) {
  test(`LOCK-06: _whenTrapped() answers a trap ${when}: its ClosedError (the internal error its cause), once the servers closed and the storage was let go, before close() resolves`, async t => {
    const storage = memoryStorage()
    const store = await openStore({ storage, clock: manualClock(1_000_000) })
    const server = await store.serve({ port: 0, token: TOKEN })
    t.after(() => server.close())
    let trapped
    store._whenTrapped().then(closed => (trapped = closed))
    if (when === 'before close()') assert.throws(() => store._trapForTest(), ClosedError)
    if (when === "inside the engine's close") await trapAtNext(t)
    const closing = store.close()
    // The close closed the engine before it first waits: the trap finds the store closed, and throws that.
    if (when === 'once close() closed the engine') assert.throws(() => store._trapForTest(), e => e instanceof ClosedError && e.cause === undefined)
    await within(closing, 'close()')
    // Before the fix: once close() closed the engine, a trap left _whenTrapped() unsettled.
    assert.ok(trapped instanceof ClosedError && trapped.cause instanceof WebAssembly.RuntimeError, `_whenTrapped() settled before close() resolved: ${trapped}`)
    assert.match(trapped.message, /^the store closed after an internal error: /)
    await notListening(server.url)
    // The storage is let go: another store opens on it.
    await (await openStore({ storage })).close()
  })
}

test('LOCK-06: nothing traps once close() resolved (the engine is freed: a call into it fails as the closed store does, no internal error), and _whenTrapped() never settles', async () => {
  const store = await openStore({ storage: memoryStorage(), clock: manualClock(1_000_000) })
  let trapped = false
  store._whenTrapped().then(() => (trapped = true))
  await store.close()
  assert.throws(() => store._trapForTest(), e => e instanceof ClosedError && e.message === 'the store is closed' && e.cause === undefined)
  await new Promise(resolve => setImmediate(resolve))
  assert.equal(trapped, false, '_whenTrapped() settled with no trap')
})

test('LOCK-06, a wasm trap inside close() once it read a first page of the engine\'s events (its close ends more than 256 requests, leases and waiters, the rest read from `drain`): every request is answered, those read before the trap closed and the rest by the trap, over the connection too; the server stops listening and the storage is let go before close() resolves; _whenTrapped() answers the trap', async t => {
  const storage = memoryStorage()
  const store = await openStore({ storage, clock: manualClock(1_000_000) })
  const server = await store.serve({ port: 0, token: TOKEN })
  t.after(() => server.close())
  // Held first, in the engine (a maxHold: not the store's own grant of a free key): the endings of
  // some are read before the trap (the close's first page), and told after it.
  const leases = []
  for (let i = 0; i < 300; i++) leases.push(await store.lock('held', { maxHold: '1h' }).acquire(`k${i}`))
  const raw = await rawClient(server.url)
  t.after(() => raw.close())
  raw.send(encode.hello3(1, TOKEN, 6))
  assert.equal((await raw.answer(1)).type, 'welcome')
  raw.send(encode.hold(2, { name: 'jobs', key: 'k' }))
  assert.equal((await raw.answer(2)).type, 'granted')
  const lock = store.lock('jobs')
  const waiters = []
  for (let i = 0; i < 300; i++) {
    const waiter = lock.acquire('k', { wait: '1h' })
    waiter.catch(() => {}) // looked at below
    waiters.push(waiter)
  }
  let told
  store._whenTrapped().then(closed => (told = closed))
  // The engine traps on reading the events past the first page of its close.
  const trapped = await trapAtNext(t, 'drain')
  // Before the fix: close() rejected the bare wasm error (no code), the waiters past the first page
  // were never answered, the server kept listening and the storage stayed held.
  await within(store.close(), 'close() whose engine traps reading its events')
  assert.ok(trapped(), 'the close read past its first page')
  for (const [i, lease] of leases.entries()) {
    assert.ok(lease.signal.aborted && lease.signal.reason instanceof ClosedError, `lease ${i} is told it ended: ${lease.signal.reason}`)
  }
  for (const [i, waiter] of waiters.entries()) {
    await assert.rejects(within(waiter, `waiter ${i}`), e => e instanceof ClosedError, `waiter ${i}`)
  }
  const lost = await raw.answer(f => f.type === 'lost')
  assert.equal(lost.code, 'closed', 'the lease over the connection is lost: the store closed')
  assert.equal((await within(raw.whenClosed, 'the connection closing')).code, 1001)
  await notListening(server.url)
  assert.ok(told instanceof ClosedError && told.cause instanceof WebAssembly.RuntimeError, `_whenTrapped() settled before close() resolved: ${told}`)
  await (await openStore({ storage })).close()
})

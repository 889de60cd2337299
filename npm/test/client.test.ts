import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks'
import { initSync } from '../wasm/holdfast_wasm.js'
import { batchOf, decodeClientAll, encodeServer } from '../src/remote/wire.js'
import { connectOn } from '../src/remote/client.js'
import { manualClock } from '../src/testing.js'
import type { ContextStorage } from '../src/handle/context.js'
import type { Lease } from '../src/handle/lease.js'
import type { Socket, Transport } from '../src/runtime/transport.js'

before(() => {
  initSync({ module: new WebAssembly.Module(readFileSync(new URL('../wasm/holdfast_wasm_bg.wasm', import.meta.url))) })
})

/** A context that can be kept (as Node 24's and Bun's): a `hold`'s fn runs as its grant is read. */
function keptContext(): ContextStorage {
  const als = new AsyncLocalStorage<Lease>()
  return {
    getStore: () => als.getStore(),
    run: (store, fn, arg) => als.run(store, fn, arg),
    enterInJob: store => als.enterWith(store),
    capture: () => new AsyncResource('test', { requireManualDestroy: true }),
  }
}

/** A server in this process: welcomes, keeps the holds it is sent, and answers only what the test says. */
function fakeServer() {
  const holds: { id: number; request: string }[] = []
  /** Every frame the client sent, as the server reads it. */
  const frames: ReturnType<typeof decodeClientAll> = []
  let socket: Socket | undefined
  const transport: Transport = {
    listen: () => Promise.reject(new Error('no')),
    async dial() {
      const s: Socket = {
        send(frame) {
          for (const f of decodeClientAll(frame)) {
            frames.push(f)
            if (f.type === 'hello')
              queueMicrotask(() => s.onMessage(encodeServer(f.id, { type: 'welcome', revision: 4, maxFrame: 65_536, connectionLimit: 100 })))
            if (f.type === 'hold') holds.push({ id: f.id, request: f.request })
            if (f.type === 'goodbye') queueMicrotask(() => s.onMessage(encodeServer(f.id, { type: 'done' })))
          }
        },
        close() {},
        onMessage: () => {},
        onClose: () => {},
      }
      socket = s
      return s
    },
  }
  return { transport, holds, frames, deliver: (message: Uint8Array) => socket!.onMessage(message) }
}

test('#17 LOCK-05: grants read in one message count from its arrival, even one read after a long fn of the grant before it', async () => {
  const clock = manualClock(0)
  const server = fakeServer()
  const remote = await connectOn(server.transport, keptContext(), 'ws://fake', { token: 't', clock })
  const lock = remote.lock('l', { ttl: '30s', wait: Infinity })
  let release!: () => void
  const second = new Promise<void>(r => (release = r))
  let lease2: Lease | undefined
  const first = lock.hold('a', () => clock.advance(5_000)) // a fn that takes 5 s, synchronously
  const held = lock.hold('b', lease => {
    lease2 = lease
    return second
  })
  await new Promise(r => setImmediate(r))
  assert.equal(server.holds.length, 2)
  const granted = server.holds.map((h, i) =>
    encodeServer(h.id, { type: 'granted', request: h.request, lease: `${i + 1}`.padStart(32, '0'), fence: i + 1, ttl: 30_000, revokeIn: 0 }),
  )
  server.deliver(batchOf(granted, true))
  await first
  assert.ok(lease2, "the second hold's fn ran")
  // Its deadline is 30 s less the margin (1 s) from the message's arrival at 0, not from 5 s.
  clock.advance(23_999)
  assert.equal(lease2.lost, false)
  clock.advance(1)
  assert.equal(lease2.lost, true, 'lost at 29 s from the arrival')
  release()
  await assert.rejects(held, { name: 'LostError' })
  await remote.close()
})

/** One message granting every hold the server has not answered yet, lease ids `${base + i}`. */
function grantAll(server: ReturnType<typeof fakeServer>, base: number): string[] {
  const leases = server.holds.map((_, i) => `${base + i}`.padStart(32, '0'))
  server.deliver(
    batchOf(
      server.holds.map((h, i) => encodeServer(h.id, { type: 'granted', request: h.request, lease: leases[i]!, fence: base + i, ttl: 30_000, revokeIn: 0 })),
      true,
    ),
  )
  server.holds.length = 0
  return leases
}

test("#17 LOCK-06: of grants read in one message, a fn that throws synchronously and one that aborts a later hold's signal: each hold settles, the later fns run, and every lease granted is released, the cancelled hold's too", {
  timeout: 10_000,
}, async () => {
  const server = fakeServer()
  const remote = await connectOn(server.transport, keptContext(), 'ws://fake', { token: 't', clock: manualClock(0) })
  const lock = remote.lock('l', { ttl: '30s', wait: Infinity })
  const boom = new Error('boom')
  const controller = new AbortController()
  const ran: string[] = []
  const holds = [
    lock.hold('a', () => {
      ran.push('a')
      throw boom
    }),
    lock.hold('b', () => {
      ran.push('b')
      controller.abort()
      return 'b'
    }),
    lock.hold('c', { signal: controller.signal }, () => ran.push('c')),
    lock.hold('d', () => (ran.push('d'), 'd')),
  ]
  await new Promise(r => setImmediate(r))
  const leases = grantAll(server, 1)
  const results = await Promise.allSettled(holds)
  assert.deepEqual(ran, ['a', 'b', 'd'], "fns run as their grants are read; the cancelled hold's does not")
  assert.equal((results[0] as PromiseRejectedResult).reason, boom)
  assert.deepEqual(results[1], { status: 'fulfilled', value: 'b' })
  assert.equal((results[2] as PromiseRejectedResult).reason?.name, 'CancelledError')
  assert.deepEqual(results[3], { status: 'fulfilled', value: 'd' })
  await new Promise(r => setImmediate(r))
  const released = server.frames.flatMap(f => (f.type === 'release' ? [f.lease] : [])).sort()
  assert.deepEqual(released, leases, 'every lease granted is released, the one granted to the cancelled hold too')
  await remote.close()
})

test('#17 LOCK-06: a fn that closes the client as its grant is read: the later grants of its message run, a hold asked meanwhile and one waiting reject ClosedError, nothing hangs', {
  timeout: 10_000,
}, async () => {
  const server = fakeServer()
  const remote = await connectOn(server.transport, keptContext(), 'ws://fake', { token: 't', clock: manualClock(0) })
  const lock = remote.lock('l', { ttl: '30s', wait: Infinity })
  let closing: Promise<void> | undefined
  let asked: Promise<unknown> | undefined
  const ran: string[] = []
  const holds = ['a', 'b', 'c'].map(key =>
    lock.hold(key, () => {
      ran.push(key)
      if (key === 'a') closing = remote.close()
      if (key === 'b') asked = lock.hold('z', () => 'z')
      return key
    }),
  )
  await new Promise(r => setImmediate(r))
  grantAll(server, 1)
  const waiting = lock.hold('w', () => 'w') // asked after the grants: never granted
  assert.ok(closing && asked)
  await closing
  const results = await Promise.allSettled([...holds, asked, waiting])
  assert.deepEqual(ran, ['a', 'b', 'c'])
  assert.deepEqual(
    results.map(r => (r.status === 'fulfilled' ? r.value : r.reason?.name)),
    ['a', 'b', 'c', 'ClosedError', 'ClosedError'],
  )
  assert.ok(
    server.frames.some(f => f.type === 'goodbye'),
    'the goodbye was sent',
  )
})

test("LOCK-05: a server's `lost` frame loses the lease it names and no other: ids that share their first word, one granted after a first `lost`, one already released, one unknown", async () => {
  const server = fakeServer()
  const remote = await connectOn(server.transport, keptContext(), 'ws://fake', { token: 't', clock: manualClock(0) })
  const lock = remote.lock('l', { ttl: '30s' })
  const lost = (lease: string, code: 'lost' | 'closed' = 'lost') => server.deliver(encodeServer(0, { type: 'lost', lease, code }))
  // Lease ids that share their first 32 bits (and their last), told apart by the words between.
  const ids = ['aaaaaaaa000000000000000000000001', 'aaaaaaaa000000010000000000000001', 'aaaaaaaa000000000000000100000001']
  const asked = ids.map((_, i) => lock.acquire(`k${i}`))
  await new Promise(r => setImmediate(r))
  server.deliver(
    batchOf(
      server.holds.map((h, i) => encodeServer(h.id, { type: 'granted', request: h.request, lease: ids[i]!, fence: i + 1, ttl: 30_000, revokeIn: 0 })),
      true,
    ),
  )
  server.holds.length = 0
  const [a, b, c] = (await Promise.all(asked)) as Lease[]
  lost(ids[1]!.toUpperCase())
  assert.deepEqual([a!.lost, b!.lost, c!.lost], [false, true, false], 'only the named lease is lost (its id read whatever its case)')
  assert.throws(() => b!.signal.throwIfAborted(), { name: 'LostError' })

  // A lease granted after that `lost` is found by the next one.
  const later = lock.acquire('k3')
  await new Promise(r => setImmediate(r))
  const [h] = server.holds.splice(0)
  server.deliver(encodeServer(h!.id, { type: 'granted', request: h!.request, lease: 'bbbbbbbb000000000000000000000000', fence: 4, ttl: 30_000, revokeIn: 0 }))
  const d = (await later) as Lease
  lost('bbbbbbbb000000000000000000000000', 'closed')
  assert.equal(d.lost, true)
  assert.throws(() => d.signal.throwIfAborted(), { name: 'ClosedError' })

  // Released since the last `lost` (still in what that frame looked it up in): nothing to lose.
  await a!.release()
  lost(ids[0]!)
  assert.equal(a!.lost, false, 'a released lease is not made lost')
  // Unknown: nothing happens, and the other lease still holds.
  lost('cccccccc000000000000000000000000')
  assert.equal(c!.lost, false)
  lost(ids[2]!)
  assert.equal(c!.lost, true)
  await remote.close()
})

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
  let socket: Socket | undefined
  const transport: Transport = {
    listen: () => Promise.reject(new Error('no')),
    async dial() {
      const s: Socket = {
        send(frame) {
          for (const f of decodeClientAll(frame)) {
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
  return { transport, holds, deliver: (message: Uint8Array) => socket!.onMessage(message) }
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

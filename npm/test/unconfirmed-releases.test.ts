/**
 * A lease's release goes with frame id 0: nothing answers it. One lost with a connection that drops
 * right after it went (or one that went half-open unseen) left the key held on the server, for
 * nobody, until its ttl: the client reconnects naming the same party, and leases held there live on
 * for the new connection. The client keeps such a release unconfirmed until the server answers a
 * frame sent after it on that connection (frames are acted on in order), pings for that answer when
 * nothing else comes, and sends it again first on the next connection (remote/client.ts
 * `#unconfirmed`).
 */

import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { initSync } from '../wasm/holdfast_wasm.js'
import { encodeServer } from '../src/remote/wire.js'
import { connectOn } from '../src/remote/client.js'
import { PING_AFTER, SILENCE_LIMIT } from '../src/remote/heartbeat.js'
import { manualClock } from '../src/testing.js'
import type { Lease } from '../src/handle/lease.js'
import { fakeServer, turns, type Connection } from './dialed.js'

before(() => {
  initSync({ module: new WebAssembly.Module(readFileSync(new URL('../wasm/holdfast_wasm_bg.wasm', import.meta.url))) })
})

const leaseOf = (n: number) => `bbbbbbbb${n.toString(16).padStart(24, '0')}`

/** Grants the last hold frame `c` got, lease `leaseOf(n)`. */
function grantLast(c: Connection, n: number): void {
  const h = c.frames.filter(f => f.type === 'hold').at(-1)!
  if (h.type !== 'hold') throw new Error('no hold')
  c.socket.onMessage(encodeServer(h.id, { type: 'granted', request: h.request, lease: leaseOf(n), fence: n, ttl: 30_000, revokeIn: 0 }))
}

/** What `c` got past its hello, as `release LEASE`, `hold`, `ping` ... */
const sent = (c: Connection) => c.frames.filter(f => f.type !== 'hello').map(f => (f.type === 'release' ? `release ${f.lease}` : f.type))

test('LOCK-05 over a connection: a release lost with a connection that drops right after it went is sent again first on the next connection; one the server answered a later frame of is not (test clock)', {
  timeout: 10_000,
}, async () => {
  const clock = manualClock(0)
  const server = fakeServer(() => false)
  const remote = await connectOn(server.transport, undefined, 'ws://fake', { token: 't', clock })
  const lock = remote.lock('l', { ttl: '30s', wait: Infinity })
  const first = server.connections[0]!

  // a, released, then a hold of b the server answers: that answer proves the release of a was read.
  const a = lock.acquire('a')
  await turns()
  grantLast(first, 1)
  await (await a)!.release()
  const b = lock.acquire('b')
  await turns()
  grantLast(first, 2)
  const leaseB = (await b) as Lease
  // c, released: nothing the server answered came after it.
  const c = lock.acquire('c')
  await turns()
  grantLast(first, 3)
  await (await c)!.release()
  await leaseB.release()
  assert.deepEqual(sent(first), ['hold', `release ${leaseOf(1)}`, 'hold', 'hold', `release ${leaseOf(3)}`, `release ${leaseOf(2)}`])

  // The connection drops: the releases of c and b may have been lost with it.
  remote._dropConnectionForTest()
  await turns()
  clock.advance(200)
  await turns()
  assert.equal(server.connections.length, 2, 'reconnected')
  const back = server.connections[1]!
  assert.deepEqual(sent(back), [`release ${leaseOf(3)}`, `release ${leaseOf(2)}`], 'the unconfirmed releases, in order; not the release of a')
  // Sent again with an id, answered: once answered, never again.
  for (const f of back.frames) if (f.type === 'release') assert.notEqual(f.id, 0, 'asked with an answer')
  for (const f of back.frames) if (f.type === 'release') back.socket.onMessage(encodeServer(f.id, { type: 'done' }))
  await turns()
  remote._dropConnectionForTest()
  await turns()
  clock.advance(200)
  await turns()
  assert.deepEqual(sent(server.connections[2]!), [])
  await remote.close()
})

test('LOCK-05 over a connection: a release on a connection gone half-open (nothing answered after it) is pinged for, the silent connection dropped, and the release sent again on the next; a ping answered confirms it (test clock)', {
  timeout: 10_000,
}, async () => {
  const clock = manualClock(0)
  const server = fakeServer(() => false)
  const remote = await connectOn(server.transport, undefined, 'ws://fake', { token: 't', clock })
  const lock = remote.lock('l', { ttl: '1h', wait: Infinity })
  const first = server.connections[0]!

  const a = lock.acquire('a')
  await turns()
  grantLast(first, 1)
  await (await a)!.release()
  // Nothing else to ask: the client pings, and the server's answer says the release was read.
  clock.advance(PING_AFTER)
  await turns()
  assert.deepEqual(sent(first), ['hold', `release ${leaseOf(1)}`, 'ping'])
  const ping = first.frames.at(-1)!
  first.socket.onMessage(encodeServer(ping.id, { type: 'done' }))
  clock.advance(SILENCE_LIMIT * 2)
  await turns()
  assert.equal(server.connections.length, 1, 'the connection kept')
  assert.deepEqual(sent(first), ['hold', `release ${leaseOf(1)}`, 'ping'], 'one ping, and then nothing: the client is idle')

  // The connection goes half-open: the next release, and the ping after it, are never read.
  const b = lock.acquire('b')
  await turns()
  grantLast(first, 2)
  await (await b)!.release()
  clock.advance(PING_AFTER)
  await turns()
  assert.deepEqual(sent(first).slice(3), ['hold', `release ${leaseOf(2)}`, 'ping'])
  clock.advance(SILENCE_LIMIT - PING_AFTER)
  await turns()
  clock.advance(200)
  await turns()
  assert.equal(server.connections.length, 2, 'the silent connection dropped, and the client reconnected')
  assert.deepEqual(sent(server.connections[1]!), [`release ${leaseOf(2)}`], 'well within the lease’s hour')
  await remote.close()
})

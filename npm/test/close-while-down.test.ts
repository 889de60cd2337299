/**
 * `close()` says goodbye, which releases the client's leases on the server at once. Called while the
 * connection is down (the client between its reconnect's dials), it said nothing: the leases held
 * from before the drop, and the releases that waited for the next connection (`#unsent`), stayed
 * held on the server, their keys held by nobody, until their ttl. With something to let go it now
 * dials at once and gives the connection a second to come back, then says goodbye there; with
 * nothing, it ends at once, as before (close-while-dialing.test.ts).
 */

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { encodeServer } from '../src/remote/wire.js'
import { connectOn } from '../src/remote/client.js'
import { manualClock } from '../src/testing.js'
import type { Lease } from '../src/handle/lease.js'
import { fakeServer, loadEngine, turns, type Connection } from './dialed.js'

loadEngine()

const leaseOf = (n: number) => `dddddddd${n.toString(16).padStart(24, '0')}`

function grantLast(c: Connection, n: number): void {
  const h = c.frames.filter(f => f.type === 'hold').at(-1)!
  if (h.type !== 'hold') throw new Error('no hold')
  c.socket.onMessage(encodeServer(h.id, { type: 'granted', request: h.request, lease: leaseOf(n), fence: n, ttl: 3_600_000, revokeIn: 0 }))
}

test('LOCK-06 over a connection: close() while the connection is down, with a lease held and a release unsent, reconnects at once and says goodbye there; its leases end with a ClosedError (test clock)', {
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
  const held = (await a) as Lease
  const b = lock.acquire('b')
  await turns()
  grantLast(first, 2)
  const released = (await b) as Lease

  remote._dropConnectionForTest()
  await turns()
  assert.equal(remote._redialingForTest, true)
  await released.release() // while down: kept for the next connection
  const closing = remote.close()
  await turns(20)
  assert.equal(server.connections.length, 2, 'dialed at once, without waiting out the backoff')
  const back = server.connections[1]!
  assert.deepEqual(
    back.frames.map(f => (f.type === 'release' ? `release ${f.lease}` : f.type)),
    ['hello', `release ${leaseOf(2)}`, 'hold', 'goodbye'],
    'the release unsent, the lease held asked again onto this connection, and the goodbye that ends it',
  )
  await closing
  assert.equal(held.lost, true)
  assert.equal(clock.pending, 0, 'no timer is left set')
})

test('LOCK-06 over a connection: close() while the connection is down and cannot come back ends within a second, leaving no timer (test clock)', {
  timeout: 10_000,
}, async () => {
  const clock = manualClock(0)
  // Every dial after the first hangs: the server is unreachable.
  const server = fakeServer(
    () => false,
    dial => dial > 0,
  )
  const remote = await connectOn(server.transport, undefined, 'ws://fake', { token: 't', clock })
  const lock = remote.lock('l', { ttl: '1h', wait: Infinity })
  const a = lock.acquire('a')
  await turns()
  grantLast(server.connections[0]!, 1)
  const held = (await a) as Lease
  remote._dropConnectionForTest()
  await turns()
  let closed = false
  const closing = remote.close().then(() => (closed = true))
  await turns()
  clock.advance(999)
  await turns()
  assert.equal(closed, false)
  clock.advance(1)
  await closing
  assert.equal(held.lost, true)
  assert.equal(server.abandoned, 1, 'the dial is abandoned')
  assert.equal(clock.pending, 0, 'no timer is left set')
})

/**
 * A lease released, and a waiting hold given up (its signal, its wait), while the client's connection
 * is down: the release and the cancel could not go, and the server would keep the lease (granted just
 * before the drop, or on a connection it had not yet seen drop) until its ttl, its key held by
 * nobody. They go first on the next connection (remote/client.ts `#unsent`).
 */

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { encodeServer } from '../src/remote/wire.js'
import { connectOn } from '../src/remote/client.js'
import { manualClock } from '../src/testing.js'
import type { Lease } from '../src/handle/lease.js'
import { fakeServer, loadEngine, turns } from './dialed.js'

loadEngine()

test('LOCK-06 over a connection: a lease released and holds given up (signal, wait) while the connection is down are released and cancelled first on the next connection; a hold never sent is not (test clock)', {
  timeout: 10_000,
}, async () => {
  const clock = manualClock(0)
  const server = fakeServer(() => false)
  const remote = await connectOn(server.transport, undefined, 'ws://fake', { token: 't', clock })
  const lock = remote.lock('l', { ttl: '30s', wait: Infinity })
  const first = server.connections[0]!

  const held = lock.acquire('a')
  const controller = new AbortController()
  const aborted = lock.acquire('b', { signal: controller.signal })
  const timed = lock.acquire('c', { wait: 2_000 })
  await turns()
  const holds = first.frames.filter(f => f.type === 'hold')
  assert.equal(holds.length, 3)
  const requestOf = (h: (typeof holds)[number]) => (h.type === 'hold' ? h.request : '')
  const lease = 'aaaaaaaa000000000000000000000001'
  first.socket.onMessage(encodeServer(holds[0]!.id, { type: 'granted', request: requestOf(holds[0]!), lease, fence: 1, ttl: 30_000, revokeIn: 0 }))
  const a = (await held) as Lease

  // The connection drops (the server granted b and c meanwhile, their grants lost with it).
  remote._dropConnectionForTest()
  await turns()
  assert.equal(remote._redialingForTest, true)
  await a.release()
  controller.abort()
  await assert.rejects(aborted, { name: 'CancelledError' })
  const neverSent = new AbortController()
  const unsent = lock.acquire('d', { signal: neverSent.signal })
  neverSent.abort()
  await assert.rejects(unsent, { name: 'CancelledError' })
  clock.advance(3_100) // c's wait and its grace pass, the connection still down; the backoff too
  await assert.rejects(timed, { name: 'ClosedError' })
  await turns()
  assert.equal(server.connections.length, 2, 'reconnected')

  const back = server.connections[1]!
  assert.deepEqual(
    back.frames.filter(f => f.type !== 'hello').map(f => (f.type === 'release' ? `release ${f.lease}` : f.type === 'cancel' ? `cancel ${f.request}` : f.type)),
    [`release ${lease}`, `cancel ${requestOf(holds[1]!)}`, `cancel ${requestOf(holds[2]!)}`],
    'the release and the cancels of the holds the server was sent go first; nothing of the hold never sent; no hold asked again',
  )
  for (const f of back.frames) if (f.id !== 0 && f.type !== 'hello') back.socket.onMessage(encodeServer(f.id, { type: 'done' }))
  await turns()

  // Sent once: a later drop and reconnect sends them no more.
  remote._dropConnectionForTest()
  await turns()
  clock.advance(200)
  await turns()
  assert.equal(server.connections.length, 3)
  assert.deepEqual(
    server.connections[2]!.frames.map(f => f.type),
    ['hello'],
  )
  await remote.close()
})

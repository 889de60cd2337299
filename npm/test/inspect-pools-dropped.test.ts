/**
 * `inspect()` over a connection that drops between its two asks (the busy keys answered, the pools
 * not yet): the pools are asked again once the client is back, within the inspection's patience, as
 * the keys are (docs/serving.md, *Silent connections*) — not refused `ClosedError` at once.
 */

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { encodeServer } from '../src/remote/wire.js'
import { connectOn } from '../src/remote/client.js'
import { manualClock } from '../src/testing.js'
import { fakeServer, loadEngine, turns } from './dialed.js'

loadEngine()

test('remote: an inspection whose connection drops after its keys were answered asks for the pools again once the client is back (test clock)', {
  timeout: 10_000,
}, async () => {
  const clock = manualClock(0)
  const server = fakeServer(() => false)
  const remote = await connectOn(server.transport, undefined, 'ws://fake', { token: 't', clock })
  const first = server.connections[0]!
  const inspected = remote.inspect()
  await turns()
  first.socket.onMessage(encodeServer(first.frames.find(f => f.type === 'inspect')!.id, { type: 'inspected', entries: [] }))
  await turns()
  assert.ok(
    first.frames.some(f => f.type === 'inspectPools'),
    'the pools were asked',
  )
  remote._dropConnectionForTest()
  await turns()
  clock.advance(100)
  await turns()
  const back = server.connections[1]
  const asked = back?.frames.find(f => f.type === 'inspectPools')
  assert.ok(asked, 'the pools are asked again on the next connection')
  const pool = { name: 'p', capacity: 3, remaining: 2, claims: 1, waiting: 0 }
  back!.socket.onMessage(encodeServer(asked.id, { type: 'pools', pools: [pool] }))
  assert.deepEqual(await inspected, [{ kind: 'pool', ...pool }])
  await remote.close()
})

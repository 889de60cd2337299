/**
 * `close()` while a reconnect's dial is not answered (an address that takes the connection and never
 * answers the upgrade): the dial is abandoned at once, and the client leaves no timer behind (LOCK-06),
 * rather than keep its 10 s patience, and the connection being dialed, after it ended.
 */

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connectOn } from '../src/remote/client.js'
import { manualClock } from '../src/testing.js'
import { fakeServer, loadEngine, turns } from './dialed.js'

loadEngine()

test('LOCK-06: a client closed while its reconnect dials an address that never answers abandons that dial at once and leaves no timer behind (test clock)', {
  timeout: 10_000,
}, async () => {
  const clock = manualClock(0)
  const server = fakeServer(
    () => false,
    dial => dial === 1,
  )
  const remote = await connectOn(server.transport, undefined, 'ws://fake', { token: 't', clock })
  remote._dropConnectionForTest()
  await turns()
  clock.advance(100) // past the first backoff: the reconnect dials, and is never answered
  await turns()
  assert.equal(remote._redialingForTest, true)
  await remote.close()
  await turns()
  assert.equal(server.abandoned, 1, 'the dial under way is abandoned')
  assert.equal(clock.pending, 0, 'no timer is left set')
  assert.equal(remote._redialingForTest, false, 'the reconnect ended')
})

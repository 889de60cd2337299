/**
 * A grant read half a ttl or more after its hold was sent is asked again before it is taken
 * (remote/client.ts `#grantAnswered`, `Pending.confirming`): the lease may have run out on the
 * server meanwhile. The answer to that ask is taken as it is. When the connection dropped before it
 * came, the hold asked again on the next connection is a new ask: a grant of it read late must be
 * asked again too, not taken as the answer to the confirmation lost with the old connection.
 */

import { test, before } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { initSync } from '../wasm/holdfast_wasm.js'
import { encodeServer } from '../src/remote/wire.js'
import { connectOn } from '../src/remote/client.js'
import { manualClock } from '../src/testing.js'
import type { Lease } from '../src/handle/lease.js'
import { fakeServer, turns, type Connection } from './dialed.js'

before(() => {
  initSync({ module: new WebAssembly.Module(readFileSync(new URL('../wasm/holdfast_wasm_bg.wasm', import.meta.url))) })
})

const lease = 'cccccccc000000000000000000000001'
const holds = (c: Connection) => c.frames.filter(f => f.type === 'hold')

/** Grants `c`'s last hold frame, `lease`, with a ttl of 3 s. */
function grantLast(c: Connection): void {
  const h = holds(c).at(-1)!
  if (h.type !== 'hold') throw new Error('no hold')
  c.socket.onMessage(encodeServer(h.id, { type: 'granted', request: h.request, lease, fence: 7, ttl: 3_000, revokeIn: 0 }))
}

test('LOCK-05 over a connection: a grant read late after a reconnect that cut the ask confirming an earlier late grant is asked again, not taken as it is and lost at once (test clock)', {
  timeout: 10_000,
}, async () => {
  const clock = manualClock(0)
  const server = fakeServer(() => false)
  const remote = await connectOn(server.transport, undefined, 'ws://fake', { token: 't', clock })
  const lock = remote.lock('l', { ttl: 3_000, wait: Infinity })
  let resolved: Lease | undefined
  const acquired = lock.acquire('k').then(l => (resolved = l as Lease))
  await turns()
  const first = server.connections[0]!

  // Granted after 2 s in line (more than half the ttl): asked again first.
  clock.advance(2_000)
  grantLast(first)
  await turns()
  assert.equal(holds(first).length, 2, 'the late grant is asked again')
  assert.equal(resolved, undefined)

  // The connection drops before that answer; the hold is asked again on the next connection.
  remote._dropConnectionForTest()
  await turns()
  clock.advance(200)
  await turns()
  assert.equal(server.connections.length, 2)
  const back = server.connections[1]!
  assert.equal(holds(back).length, 1)

  // It waits in line again, and its grant is read 2.8 s after it was sent (past ttl less its margin).
  clock.advance(2_800)
  grantLast(back)
  await turns()
  assert.equal(holds(back).length, 2, 'the late grant is asked again on this connection too')
  assert.equal(resolved, undefined, 'not taken before the answer')

  // The server answers the same lease, its ttl counted from now: a lease that holds.
  grantLast(back)
  const got = await acquired
  assert.equal(got.fence, 7)
  clock.advance(500)
  await turns()
  assert.equal(got.lost, false, 'a lease that holds, its deadline counted from the confirmation')
  await remote.close()
})

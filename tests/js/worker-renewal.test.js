// The renewal of a lease held from afar (#13 item 11): one loop (renewal.ts) for a connection's client
// and for workerStore (Workers RPC to a HoldfastObject), tested here through workerStore on a test
// clock, over objects faked in-process (tests/workerd runs the real ones in workerd). Its invariants:
// never renewed past the deadline as this side counts it — a renewal timer that runs late marks the
// lease lost instead —, a deadline timer that fires early is set again, never dropped, and a lease
// read past its deadline is lost on the read (#13 item 10).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { LostError } from 'holdfast'
import { settle, stallClock, fakeObjects, workerStoreModule } from './helpers.js'

const { workerStore } = await workerStoreModule()

/** A Workers lease of `ttl` on `clock`, and when its signal aborted (listened to, never read). */
async function workersLease(clock, objects, ttl = '3s') {
  const lease = await workerStore(objects.namespace, { clock }).lock('jobs', { ttl }).acquire('k')
  const heard = { at: undefined }
  lease.signal.addEventListener('abort', () => (heard.at = clock.now()))
  return { lease, heard }
}

test('#13 item 11: a renewal timer that runs late never renews a Workers lease past its deadline: the lease is lost instead (test clock)', async () => {
  const clock = stallClock(1_000)
  const objects = fakeObjects(clock)
  const { lease, heard } = await workersLease(clock, objects)
  clock.advance(1_000) // ttl/3: renewed, the deadline now 3 s minus the margin (600 ms) from +1 s
  await settle()
  assert.deepEqual(objects.renewals, [2_000])
  // The event loop is blocked past the deadline (at 4,400): the renewal due at 3,000 runs late, at 5,000.
  clock.stall(3_000)
  clock.advance(0)
  await settle()
  assert.deepEqual(objects.renewals, [2_000], 'no renewal asked past the deadline')
  assert.equal(heard.at, 5_000, 'lost when the late timer ran')
  assert.ok(lease.signal.reason instanceof LostError && /not renewed within its ttl/.test(lease.signal.reason.message), String(lease.signal.reason))
})

test('#13 item 11: a deadline timer that fires early is set again, not dropped: a Workers lease whose renewals fail is lost at its deadline (test clock, timers 0.5 ms early)', async () => {
  const clock = stallClock(1_000, { early: 0.5 })
  const objects = fakeObjects(clock)
  objects.renew = 'fail'
  const { lease, heard } = await workersLease(clock, objects)
  for (let i = 0; i < 50 && heard.at === undefined; i++) {
    clock.advance(100)
    await settle()
  }
  // Granted at 1,000: the deadline is 3 s minus the margin (600 ms) later. Renewals were asked (every
  // ttl/3, then ttl/10 after each failure) until then, never after.
  assert.equal(heard.at, 3_400, 'lost at its deadline')
  assert.ok(objects.renewals.length >= 3 && objects.renewals.every(t => t < 3_400), JSON.stringify(objects.renewals))
  assert.match(lease.signal.reason.message, /not renewed within its ttl/)
})

test('#13 item 11: an answer that comes back after the deadline does not bring a Workers lease back', async () => {
  const clock = stallClock(1_000)
  const objects = fakeObjects(clock)
  const { lease, heard } = await workersLease(clock, objects)
  // A renewal sent at 2,000 whose answer is read at 3,500, past the deadline (3,400) and before the
  // one the answer would set (4,400): a slow call, a blocked loop.
  clock.advance(1_000)
  clock.stall(1_500)
  await settle()
  assert.deepEqual(objects.renewals, [2_000])
  assert.equal(heard.at, 3_500, 'lost when the answer came')
  assert.equal(lease.lost, true)
})

test('#13 item 10: a Workers lease read past its deadline is lost on the read, before any timer ran; a refused renewal loses it too', async () => {
  const clock = stallClock(1_000)
  const objects = fakeObjects(clock)
  const { lease, heard } = await workersLease(clock, objects)
  const signal = lease.signal
  clock.stall(2_399)
  assert.equal(signal.aborted, false)
  clock.stall(1)
  assert.equal(signal.aborted, true, 'a signal kept from before reads aborted past the deadline')
  assert.equal(heard.at, 3_400, 'its listeners heard it within the read')
  assert.equal(lease.lost, true)
  clock.advance(0)
  await settle()
  assert.deepEqual(objects.renewals, [], 'nothing renewed after')

  objects.renew = 'lost'
  const refused = await workersLease(clock, objects)
  clock.advance(1_000)
  await settle()
  assert.equal(refused.lease.lost, true)
  assert.match(refused.lease.signal.reason.message, /renewal refused: past its ttl/)
})

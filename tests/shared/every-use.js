// Shared by the suites that check a closed store or client lets go of everything (tests/js for a
// client over a connection, tests/redis for `holdfast/redis`): one use of each kind, then its end.
import assert from 'node:assert/strict'

const closed = e => e?.code === 'closed'

/**
 * Uses `store` (a store, a client or a Redis store) every way that leaves something to let go of —
 * a hold free, holds handed over, a semaphore's, a pool claim released, and at its end a lease (its
 * first renewal ahead), a hold waiting for it and a claim waiting — then ends it with `close()` (by
 * default `store.close()`) and checks each was answered `ClosedError`. `i` names a pool and a key of
 * its own: the pool's units stay claimed after, and the key stays held after a connection dropped,
 * until its ttl.
 */
export async function useEveryWayAndEnd(store, i, close = () => store.close()) {
  await store.lock('self').hold('a', async () => {})
  const line = store.lock('line')
  await Promise.all([0, 1, 2].map(() => line.hold('k', { wait: Infinity }, async () => {})))
  await store.semaphore('permits', { limit: 2 }).hold('k', async () => {})
  const seats = store.pool(`seats-${i}`, { capacity: 3 })
  const claimed = await seats.claim(1)
  assert.equal(claimed.claimed, true)
  await claimed.claim.release()
  assert.equal((await seats.claim(3)).claimed, true)
  const lease = await store.lock('open').acquire(`k-${i}`)
  const waiting = assert.rejects(store.lock('open').hold(`k-${i}`, { wait: '30s' }, () => 'never'), closed)
  const claiming = assert.rejects(seats.claim(1, { wait: '30s' }), closed)
  await close()
  await waiting
  await claiming
  assert.ok(closed(lease.signal.reason), `the lease ended with ${lease.signal.reason}`)
}

// Shared by the suites whose holds travel (tests/js for a client over a connection, tests/redis for
// `holdfast/redis`): LOCK-06 at a grant, where two holds asked in one turn are granted in one answer.
import assert from 'node:assert/strict'
import { CancelledError } from 'holdfast'

/**
 * Asks two holds (or tries) of `lock` in one turn, the first's fn aborting the second's signal: the
 * second's lease came with the first's, its fn not started. Checks the second is answered
 * CancelledError (its signal's reason the cause), its fn not run, and its key let go: a try finds it
 * free, and `settled()` (what the store shows once the release landed) holds.
 */
export async function cancelledAtGrant(lock, form, settled) {
  const ac = new AbortController()
  const reason = new Error('gave up')
  let ran = false
  const first = lock[form](`${form}-first`, () => ac.abort(reason))
  const second = lock[form](`${form}-second`, { signal: ac.signal }, () => (ran = true))
  await assert.rejects(second, e => e instanceof CancelledError && e.code === 'cancelled' && e.cause === reason, form)
  assert.equal(ran, false, `${form}: fn did not run`)
  await first
  assert.deepEqual(await lock.tryHold(`${form}-second`, () => 'free'), { acquired: true, value: 'free' }, `${form}: the key was let go`)
  await settled(form)
}

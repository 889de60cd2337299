// LOCK-06 and POOL-04 for workerStore (Workers RPC to a HoldfastObject): a hold or claim whose signal
// aborts while its call is under way is answered CancelledError at once and its object told (cancel),
// however early the abort came; and a call that failed in a way Workers RPC marks retryable is not
// asked again once the signal aborted. The cancel found nothing on the object then (the request had
// not reached it), so a request asked after it would wait in the object's line for nobody: a place in
// line (a claim at the head blocks the smaller ones behind it), and a grant to a Worker that may be
// gone, its key kept until its ttl. Over objects faked in-process (tests/workerd runs the real ones);
// the backoff's timers on node:test's mock timers (Node; skipped where the runtime has none).
import { test, mock } from 'node:test'
import assert from 'node:assert/strict'
import { CancelledError } from 'holdfast'
import { settle, watch, workerStoreModule } from './helpers.js'

const { workerStore } = await workerStoreModule()
const skip = typeof mock?.timers?.enable !== 'function' && 'no node:test mock timers here'

/**
 * A namespace whose object answers each acquire or claim as `answers` says, in turn: `'fail'` (throws,
 * retryable: a lost connection) or `'never'` (no answer); `calls` has every call it saw, in order.
 */
function fakeObject(...answers) {
  const calls = []
  const answer = what => {
    calls.push(what)
    if (answers.shift() === 'fail') throw Object.assign(new Error('the connection to the object was lost'), { retryable: true })
    return new Promise(() => {})
  }
  const stub = {
    async acquire() {
      return answer('acquire')
    },
    async cancel() {
      calls.push('cancel')
      return { ok: true }
    },
    async poolClaim() {
      return answer('poolClaim')
    },
    async poolOp(op) {
      calls.push(op)
      return { ok: 0 }
    },
  }
  return { calls, namespace: { idFromName: name => name, get: () => stub } }
}

// After the cancel, what is asked of the object once the call it failed is not asked again: nothing
// for a hold (a lease the object kept before it failed is found by its request id, and released, by
// the cancel); for a claim whose id workerStore drew, a withdraw and, answered 0 (the object may have
// kept the claim and reset before answering: read back, nobody told), a release of that id (a327685).
const asks = [
  ['LOCK-06: a Workers hold', 'acquire', (store, signal) => store.lock('jobs', { wait: Infinity }).hold('k', { signal }, () => 'ran'), []],
  ['POOL-04: a Workers claim', 'poolClaim', (store, signal) => store.pool('seats', { capacity: 10 }).claim(1, { wait: Infinity, signal }), ['withdraw', 'release']],
]

for (const [what, call, ask, after] of asks) {
  test(`${what} whose signal aborts just after it was asked (before its call went out) is answered CancelledError at once, and its object told`, async () => {
    const objects = fakeObject('never')
    const controller = new AbortController()
    const outcome = watch(ask(workerStore(objects.namespace), controller.signal))
    controller.abort(new Error('the caller gave up'))
    const answered = await outcome()
    assert.ok(answered?.error instanceof CancelledError, `CancelledError, not ${JSON.stringify(answered)}`)
    // Not asked at all, or asked and cancelled: nothing of it waits on the object.
    assert.ok(objects.calls.length === 0 || (objects.calls.length === 2 && objects.calls[0] === call && objects.calls[1] === 'cancel'), JSON.stringify(objects.calls))
  })

  test(`${what} whose call failed retryably and whose signal aborted before it was asked again is not asked again (a drawn claim id let go)`, { skip }, async t => {
    t.mock.timers.enable({ apis: ['setTimeout'] })
    // Reset by hand: Deno's node:test keeps them enabled past the test, and the next one's enable throws.
    t.after(() => t.mock.timers.reset())
    const objects = fakeObject('fail', 'never')
    const controller = new AbortController()
    const outcome = watch(ask(workerStore(objects.namespace), controller.signal))
    await settle()
    assert.deepEqual(objects.calls, [call], 'the first call failed; the next waits for its backoff')
    controller.abort(new Error('the caller gave up'))
    const answered = await outcome()
    assert.ok(answered?.error instanceof CancelledError, `CancelledError, not ${JSON.stringify(answered)}`)
    t.mock.timers.tick(60_000)
    await settle()
    assert.deepEqual(objects.calls, [call, 'cancel', ...after], 'the call is not asked again after the cancel')
  })
}

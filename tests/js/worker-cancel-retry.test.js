// LOCK-06 and POOL-04 for workerStore (Workers RPC to a HoldfastObject): a hold or claim whose signal
// aborts while its call is under way is answered CancelledError at once and its object told (cancel),
// however early the abort came: a request left at the object would wait in its line for nobody (a
// claim at the head blocks the smaller ones behind it), and a grant to a Worker that may be gone keeps
// its key until its ttl. Over objects faked in-process (tests/workerd runs the real ones).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { CancelledError } from 'holdfast'
import { settle, workerStoreModule } from './helpers.js'

const { workerStore } = await workerStoreModule()

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

/** Watches `promise` from now: `outcome()`, after a macrotask turn, is `{ value }`, `{ error }`, or undefined (pending). */
function watch(promise) {
  let outcome
  promise.then(
    value => (outcome = { value }),
    error => (outcome = { error }),
  )
  return async () => {
    await settle()
    return outcome
  }
}

const asks = [
  ['LOCK-06: a Workers hold', 'acquire', (store, signal) => store.lock('jobs', { wait: Infinity }).hold('k', { signal }, () => 'ran')],
  ['POOL-04: a Workers claim', 'poolClaim', (store, signal) => store.pool('seats', { capacity: 10 }).claim(1, { wait: Infinity, signal })],
]

for (const [what, call, ask] of asks) {
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
}

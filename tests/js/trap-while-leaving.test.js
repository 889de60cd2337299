// LOCK-06 and POOL-04 when the engine traps (a wasm panic, as a bug would make) as a waiter leaves its
// line: its signal aborted, the cancel it asks of the engine traps. The trap answers every request it
// finds ClosedError and closes the store; the waiter that was leaving had left the store's records
// already, so it must be answered here too: once, ClosedError, never left hanging, and nothing thrown
// out of its signal's abort listener (an uncaught exception on Node).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ClosedError } from 'holdfast'
import { openTestStore, settle, watch } from './helpers.js'

// The wasm glue of the installed package: the module the store itself loaded (as tests/cli/trap-in-close.js).
const { Core } = await import(new URL('../../wasm/holdfast_wasm.js', import.meta.resolve('holdfast')).href)

/** The engine's `method` traps at its next call, a real wasm panic (`trapForTest`); then it is as before. */
function trapAtNext(method) {
  const real = Core.prototype[method]
  Core.prototype[method] = function () {
    Core.prototype[method] = real
    return this.trapForTest()
  }
  return () => (Core.prototype[method] = real)
}

test('LOCK-06: a hold whose signal aborts while it waits, the engine trapping in its cancel, is answered ClosedError (the trap its cause) and the store closes', async () => {
  const { store } = await openTestStore()
  const l = store.lock('x')
  const held = await l.acquire('k')
  const controller = new AbortController()
  const waiting = watch(l.hold('k', { wait: '1m', signal: controller.signal }, () => 'ran'))
  await settle()
  const restore = trapAtNext('cancel')
  try {
    controller.abort(new Error('gave up'))
  } finally {
    restore()
  }
  const outcome = await waiting()
  assert.ok(outcome, 'the hold was answered, not left waiting')
  assert.ok(outcome.error instanceof ClosedError, `ClosedError, not ${JSON.stringify(outcome)}`)
  assert.ok(outcome.error.cause instanceof WebAssembly.RuntimeError, `cause: ${outcome.error.cause}`)
  assert.equal(store.closed, true)
  assert.equal(held.lost, true, 'the holder lost its lease to the trap')
  await store.close()
})

test('POOL-04: a claim whose signal aborts while it waits, the engine trapping in its cancel, is answered ClosedError and the store closes', async () => {
  const { store } = await openTestStore()
  const seats = store.pool('seats', { capacity: 1 })
  await seats.claim(1)
  const controller = new AbortController()
  const waiting = watch(seats.claim(1, { wait: Infinity, signal: controller.signal }))
  await settle()
  const restore = trapAtNext('cancelClaim')
  try {
    controller.abort(new Error('gave up'))
  } finally {
    restore()
  }
  const outcome = await waiting()
  assert.ok(outcome, 'the claim was answered, not left waiting')
  assert.ok(outcome.error instanceof ClosedError, `ClosedError, not ${JSON.stringify(outcome)}`)
  assert.ok(outcome.error.cause instanceof WebAssembly.RuntimeError, `cause: ${outcome.error.cause}`)
  assert.match(outcome.error.message, /^pool seats: /)
  assert.equal(store.closed, true)
  await store.close()
})

test('POOL-04: a claim asked twice by its id, the shorter wait running out as the engine traps asking whether the claim still waits, answers both askers ClosedError, nothing thrown from the timer', async () => {
  const { store, clock } = await openTestStore()
  const seats = store.pool('seats', { capacity: 1 })
  await seats.claim(1)
  // The claim's wait is the longer one's: the shorter has a timer of its own (pool/room.ts #ask).
  const shorter = watch(seats.claim(1, { id: 'order-1', wait: '5s' }))
  const longer = watch(seats.claim(1, { id: 'order-1', wait: '1m' }))
  await settle()
  const restore = trapAtNext('claimWaits')
  try {
    clock.advance(5_000)
  } finally {
    restore()
  }
  for (const [what, waiting] of [['shorter', shorter], ['longer', longer]]) {
    const outcome = await waiting()
    assert.ok(outcome, `the ${what} was answered, not left waiting`)
    assert.ok(outcome.error instanceof ClosedError, `${what}: ClosedError, not ${JSON.stringify(outcome)}`)
  }
  assert.equal(store.closed, true)
  await store.close()
})

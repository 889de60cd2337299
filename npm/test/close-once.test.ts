import { test } from 'node:test'
import assert from 'node:assert/strict'
import { closeOnce } from '../src/util/close-once.js'

/**
 * `closeOnce` of a close the test ends (`finish()` resolves it, `fail(e)` rejects it; `runs` counts
 * its calls), and the promise of its first call. With `reenter`, the close's synchronous part (where
 * it ends leases, whose abort listeners run at once) calls it again, as such a listener would:
 * `inner` is what that call answered. Only the first run does (one after it finds no lease left).
 */
function gatedClose(reenter: boolean) {
  const gate = { runs: 0, inner: undefined as Promise<void> | undefined, finish: () => {}, fail: (_error: Error) => {} }
  const once = closeOnce(() => {
    if (gate.runs++ === 0 && reenter) gate.inner = once()
    return new Promise<void>((resolve, reject) => ((gate.finish = resolve), (gate.fail = reject)))
  })
  return { gate, once, first: once() }
}

/** Whether `p` settled, once the microtasks and callbacks queued so far ran. */
async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let settled = false
  p.then(
    () => (settled = true),
    () => (settled = true),
  )
  await new Promise(r => setImmediate(r))
  return settled
}

test("LOCK-06: a second call answers the first one's promise, settled only once the close is done; the close runs once", async () => {
  const { gate, once, first } = gatedClose(false)
  const second = once()
  assert.equal(second, first, 'one promise for every caller')
  assert.equal(gate.runs, 1)
  assert.equal(await isSettled(second), false, 'the second call waits for the first close')
  gate.finish()
  await first
  assert.equal(once(), first, 'a call after the close is done answers it still')
  assert.equal(gate.runs, 1, 'and runs nothing more')
})

test('LOCK-06: a call made synchronously inside the close (an abort listener it triggers) answers the same promise, and runs no second close', async () => {
  const { gate, once, first: outer } = gatedClose(true)
  const inner = gate.inner
  assert.ok(inner, 'the close called it')
  // With `closing ??= close()`: the inner call ran a close of its own (two runs), its own promise.
  assert.equal(inner, outer, "the call inside the close is the first call's promise")
  assert.equal(gate.runs, 1)
  assert.equal(await isSettled(inner), false, 'it waits for the close to be done')
  gate.finish()
  await inner
  assert.equal(once(), outer)
})

test('LOCK-06: a close that rejects rejects every caller with its error, the one inside it too, and is not run again', async () => {
  const { gate, once, first: outer } = gatedClose(true)
  const later = once()
  assert.equal(gate.runs, 1)
  const failure = new Error('the storage would not close')
  gate.fail(failure)
  for (const [what, p] of [
    ['the first call', outer],
    ['the call inside the close', gate.inner!],
    ['a later call', later],
    ['a call after it failed', once()],
  ] as const) {
    await assert.rejects(p, error => error === failure, what)
  }
  assert.equal(gate.runs, 1, 'a failed close is not tried again')
})

test('LOCK-06: a close that throws before it returns a promise rejects every caller with that error, the one inside it already answered too', async () => {
  const failure = new Error('thrown at once')
  let inner: Promise<void> | undefined
  let runs = 0
  const once: () => Promise<void> = closeOnce(() => {
    if (runs++ === 0) inner = once()
    throw failure
  })
  const outer = once()
  assert.equal(inner, outer)
  await assert.rejects(outer, error => error === failure, 'the first call')
  await assert.rejects(inner!, error => error === failure, 'the call inside the close: not left waiting')
  await assert.rejects(once(), error => error === failure, 'a later call')
  assert.equal(runs, 1)
})

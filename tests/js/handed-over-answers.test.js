// #17: a hold handed its key over answers with its own fn's outcome and lets its own key go, whatever
// its fn did in its async context before it returned: a nested hold, a hold that waits, the caller's
// own AsyncLocalStorage entered anew, a thenable, a rejection. In the store's own line and the
// engine's. A hand-over that answered a hold, or let a key go, through whatever the context held when
// fn's promise settled (the releaser's lease, one of fn's own holds) fails here.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import { openTestStore, gate, settle } from './helpers.js'

/** fns that do something in their context before they return, each answering a value of its own (or failing). */
function fnsFor(handle, userAls, openBusy) {
  const inner = []
  return {
    inner,
    fns: [
      // A nested hold of a free key (runs at once, and restores the context), left running.
      async lease => {
        inner.push(handle.hold('free-inner', async () => 'nested-inner'))
        return `nested ${lease.key}`
      },
      // The caller's own AsyncLocalStorage entered anew, in fn's own context.
      lease => {
        userAls.enterWith('entered by fn')
        return Promise.resolve().then(() => `entered ${lease.key}`)
      },
      // A hold that waits (in a line of its own), started and not awaited, and handed its key while
      // fn's promise is still pending.
      lease => {
        inner.push(handle.hold('busy', { wait: Infinity }, () => new Promise(resolve => setTimeout(() => resolve('waited-inner'), 20))))
        openBusy()
        return new Promise(resolve => setTimeout(() => resolve(`waiting ${lease.key}`), 5))
      },
      // A thenable that is not a promise.
      lease => ({ then: resolve => setImmediate(() => resolve(`thenable ${lease.key}`)) }),
      // A promise that rejects.
      async () => {
        await null
        throw new Error('fn failed')
      },
      // A value, at once.
      lease => `value ${lease.key}`,
    ],
  }
}

for (const kind of ['lock', 'lock with a finite wait', 'semaphore']) {
  test(`#17: a ${kind}'s holds handed the key over answer their own fn's outcome and let their own key go, whatever fn did in its context first`, async () => {
    const { store } = await openTestStore()
    const handle = kind === 'semaphore' ? store.semaphore('handed', { limit: 1 }) : store.lock('handed')
    // Without a time limit, a lock's holds wait in the store's own line; with one, in the engine's.
    const options = kind === 'lock with a finite wait' ? { wait: 60_000 } : { wait: Infinity }
    const userAls = new AsyncLocalStorage()
    const busy = gate()
    const busyHold = handle.hold('busy', () => busy.promise)
    const first = gate()
    const firstHold = handle.hold('k', () => first.promise)
    const { fns, inner } = fnsFor(handle, userAls, busy.open)
    const fences = []
    const holds = fns.map((fn, i) =>
      userAls.run(`caller ${i}`, () =>
        handle.hold('k', options, lease => {
          fences.push(lease.fence)
          assert.equal(userAls.getStore(), `caller ${i}`)
          return fn(lease)
        }),
      ),
    )
    first.open()
    await firstHold
    const answers = await Promise.allSettled(holds)
    assert.deepEqual(
      answers.map(a => (a.status === 'fulfilled' ? a.value : `rejected: ${a.reason.message}`)),
      ['nested k', 'entered k', 'waiting k', 'thenable k', 'rejected: fn failed', 'value k'],
    )
    assert.deepEqual(
      fences,
      [...fences].sort((a, b) => a - b),
      'granted in order',
    )
    assert.deepEqual(await Promise.all(inner), ['nested-inner', 'waited-inner'])
    await busyHold
    // Every hold let its own key go.
    await settle()
    assert.deepEqual(store.inspect(), [])
    assert.deepEqual(await handle.tryHold('k', () => 'free again'), { acquired: true, value: 'free again' })
    await store.close()
  })
}

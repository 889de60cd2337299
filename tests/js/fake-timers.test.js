// Code that takes holdfast locks, tested in a user's test suite with fake timers on. Jest's
// (`jest.useFakeTimers()`, by default) replace `queueMicrotask`, `setImmediate` and `process.nextTick`,
// vitest's `setImmediate` (and neither runs what was queued on them until the test advances its fake
// clock): holdfast's own work queued on them waited for good (a waiter handed the key after
// `lease.release()`, the waiter after an aborted one, a pool's claim and `close()` under jest; a
// connection's frames under vitest). Here those globals are replaced the same way, after holdfast
// loaded, as a test file's `useFakeTimers()` does; the store's deadlines, which follow a faked clock
// on purpose (README, *Testing your code with holdfast*), are not faked here.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openStore, memoryStorage, connect, CancelledError } from 'holdfast'

const TOKEN = 'test-token-0123456789'
const realSetTimeout = globalThis.setTimeout

/** Replaces `names` on globalThis with fakes that keep what is queued on them and run none of it, until `restore()`. */
function fakeGlobals(names) {
  const real = new Map(names.map(name => [name, globalThis[name]]))
  const held = []
  for (const name of names) globalThis[name] = fn => void held.push(fn)
  return {
    held,
    restore() {
      for (const [name, fn] of real) globalThis[name] = fn
    },
  }
}

/** `promise`'s value, or 'hung' if it has not settled within 2 s of real time. */
function within(promise) {
  let timer
  const lapse = new Promise(resolve => (timer = realSetTimeout(() => resolve('hung'), 2000)))
  return Promise.race([promise, lapse]).finally(() => clearTimeout(timer))
}

test('LOCK-06, POOL-02: with queueMicrotask and setImmediate faked as jest fakes them, a key handed over by lease.release() or past an aborted waiter, a pool claim and close() are all answered', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const fake = fakeGlobals(['queueMicrotask', 'setImmediate'])
  try {
    const lock = store.lock('jobs')
    const lease = await lock.acquire('k')
    const next = lock.hold('k', l => l.fence)
    await lease.release()
    assert.equal(await within(next), lease.fence + 1, 'the waiter handed the key by lease.release()')

    const held = await lock.acquire('k')
    const aborting = new AbortController()
    const aborted = lock.hold('k', { signal: aborting.signal }, () => 'ran')
    const after = lock.hold('k', l => l.fence)
    aborting.abort()
    await assert.rejects(within(aborted), CancelledError)
    await held.release()
    assert.equal(typeof (await within(after)), 'number', 'the waiter behind an aborted one')

    const claim = await within(store.pool('seats', { capacity: 2 }).claim(1, { id: 'order-1' }))
    assert.equal(claim.claimed, true, 'a pool claim, answered once its write was kept')
    assert.equal(await within(claim.claim.release()), true)
    assert.equal(await within(store.close().then(() => 'closed')), 'closed')
    assert.deepEqual(fake.held, [], 'nothing of holdfast waits on the fakes')
  } finally {
    fake.restore()
    await store.close()
  }
})

test('LOCK-05: with setImmediate faked as vitest and jest fake it, connect() and a hold over the connection are answered, and both ends close', async () => {
  const store = await openStore({ storage: memoryStorage() })
  const server = await store.serve({ port: 0, token: TOKEN })
  const fake = fakeGlobals(['setImmediate'])
  let client
  try {
    client = await within(connect(server.url, { token: TOKEN }))
    assert.notEqual(client, 'hung', 'connect()')
    assert.equal(typeof (await within(client.lock('jobs').hold('k', l => l.fence))), 'number')
    assert.equal(await within(client.close().then(() => 'closed')), 'closed')
    assert.equal(await within(store.close().then(() => 'closed')), 'closed')
    assert.deepEqual(fake.held, [], 'nothing of holdfast waits on the fake')
  } finally {
    fake.restore()
    if (typeof client === 'object') await client.close()
    await store.close()
  }
})

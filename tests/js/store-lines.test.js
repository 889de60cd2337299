// #17: holds that wait without a time limit for a key the store granted itself wait in a line the
// store keeps itself (npm/src/store/lent-fences.ts # Lines the store keeps itself): no call into wasm
// to join it or to be granted. Every guarantee must hold there as in the engine's line, and across the
// hand-over of the key and its whole line to the engine when a request the line cannot answer comes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import { CancelledError, ClosedError, InUseError, InvalidError, LimitError } from 'holdfast'
import { inOrder, isSettled, openTestStore, settle, storeOutOfFences } from './helpers.js'

/** `n` holds of `key` on `handle`, each recording its index and fence; at most one inside at a time. */
function holdsInTurn(handle, key, n, seen, options = { wait: Infinity }) {
  let inside = 0
  return Array.from({ length: n }, (_, i) =>
    handle.hold(key, options, async lease => {
      assert.equal(++inside, 1, 'one holder at a time')
      seen.push({ i, fence: lease.fence })
      await settle()
      inside--
    }),
  )
}

test('#17 LOCK-01, LOCK-02: holds waiting without a time limit for a key granted by the store itself wait in the store\'s own line (the engine never knows the key), served in order with growing fences', async () => {
  const { store } = await openTestStore()
  const l = store.lock('own')
  const held = await l.acquire('k')
  const seen = []
  const holds = holdsInTurn(l, 'k', 5, seen)
  const acquired = l.acquire('k', { wait: Infinity })
  await settle()
  assert.deepEqual(store._footprint().slice(0, 2), [0, 0], 'the engine knows neither the key nor its waiters')
  assert.deepEqual(store.inspect(), [{ kind: 'lock', name: 'own', key: 'k', holders: [{ fence: held.fence, heldMs: 0 }], waiting: 6 }])
  assert.deepEqual(await l.tryHold('k', () => 'no'), { acquired: false })
  await held.release()
  await Promise.all(holds)
  inOrder(seen, 5, held.fence)
  const last = await acquired
  assert.ok(last.fence > seen[4].fence)
  assert.deepEqual(store._footprint().slice(0, 2), [0, 0])
  await last.release()
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#17 LOCK-01: a hold with a time limit, a maxHold or over a connection behind the store\'s own line hands the engine the key and the whole line, in order', async () => {
  const { store } = await openTestStore()
  const server = await store.serve({ port: 0, token: 'store-lines-token-0123' })
  const { connect } = await import('holdfast')
  const remote = await connect(server.url, { token: 'store-lines-token-0123' })
  try {
    for (const [what, late] of [
      ['a wait with a limit', () => store.lock('mixed').hold('k', { wait: 60_000 }, lease => lease.fence)],
      ['a maxHold', () => store.lock('mixed', { maxHold: '1h', wait: Infinity }).hold('k', lease => lease.fence)],
      ['a hold over a connection', () => remote.lock('mixed', { wait: Infinity }).hold('k', lease => lease.fence)],
    ]) {
      const l = store.lock('mixed')
      const held = await l.acquire('k')
      const seen = []
      const holds = holdsInTurn(l, 'k', 3, seen)
      await settle()
      assert.equal(store._footprint()[0], 0, `${what}: the line is the store's`)
      const after = late()
      for (let i = 0; i < 200 && store._footprint()[1] < 5; i++) await settle()
      assert.deepEqual(store._footprint().slice(0, 2), [1, 5], `${what}: the engine has the key, its holder and four waiters`)
      assert.equal(store.inspect()[0].waiting, 4, what)
      await held.release()
      await Promise.all(holds)
      inOrder(seen, 3, held.fence)
      assert.ok((await after) > seen[2].fence, `${what}: served last`)
      for (let i = 0; i < 200 && store.inspect().length > 0; i++) await settle()
      assert.deepEqual(store.inspect(), [], what)
    }
  } finally {
    await remote.close()
    await store.close()
  }
})

test('#17: a waiter aborted in the store\'s own line leaves it with CancelledError; the others are served in order', async () => {
  const { store } = await openTestStore()
  const l = store.lock('abort')
  const held = await l.acquire('k')
  const order = []
  const controller = new AbortController()
  const first = l.hold('k', { wait: Infinity }, () => order.push('first'))
  const aborted = l.hold('k', { wait: Infinity, signal: controller.signal }, () => order.push('aborted'))
  const last = l.hold('k', { wait: Infinity }, () => order.push('last'))
  await settle()
  assert.equal(store.inspect()[0].waiting, 3)
  controller.abort(new Error('no longer needed'))
  await assert.rejects(aborted, e => e instanceof CancelledError && e.cause?.message === 'no longer needed')
  assert.equal(store.inspect()[0].waiting, 2)
  assert.equal(store._footprint()[0], 0)
  await held.release()
  await Promise.all([first, last])
  assert.deepEqual(order, ['first', 'last'])
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#17 LOCK-06: closing the store answers the waiters of its own line ClosedError; so does a trap', async () => {
  for (const end of ['close', 'trap']) {
    const { store } = await openTestStore()
    const l = store.lock('end')
    const held = await l.acquire('k')
    const waiting = [l.hold('k', { wait: Infinity }, () => 'no'), l.acquire('k', { wait: Infinity })]
    await settle()
    if (end === 'close') await store.close()
    else assert.throws(() => store._trapForTest(), ClosedError)
    for (const w of waiting) await assert.rejects(w, ClosedError, end)
    assert.equal(held.lost, true)
    await held.release()
    await store.close()
  }
})

test('#17 LOCK-04: a hold waiting without a time limit, inside its own hold of that key, is refused rather than put in the store\'s own line', async () => {
  const { store } = await openTestStore()
  const l = store.lock('self')
  await l.hold('k', async () => {
    await assert.rejects(l.hold('k', { wait: Infinity }, () => 1), InvalidError)
    assert.equal(store.inspect()[0].waiting, 0)
  })
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#17: the store\'s own line takes 10,000 waiters; the next goes to the engine with the line, and is a LimitError', async () => {
  const { store } = await openTestStore()
  const l = store.lock('full')
  const held = await l.acquire('k')
  const waiters = Array.from({ length: 10_000 }, () => l.acquire('k', { wait: Infinity }))
  assert.equal(store._footprint()[0], 0)
  await assert.rejects(l.acquire('k', { wait: Infinity }), e => e instanceof LimitError && /10000/.test(e.message))
  assert.equal(store.inspect()[0].waiting, 10_000)
  await held.release()
  let last = held.fence
  for (const w of waiters) {
    const lease = await w
    assert.ok(lease.fence > last)
    last = lease.fence
    await lease.release()
  }
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#17 LOCK-02: with no fence left to lend (the next ceiling not yet stored), the store hands the key and its line to the engine, which grants once storage answers', { timeout: 120_000 }, async () => {
  const { store, useUpFences, letWrite } = await storeOutOfFences()
  const l = store.lock('ceiling')
  const held = await l.acquire('k')
  const als = new AsyncLocalStorage()
  const next = als.run('caller', () => l.hold('k', { wait: Infinity }, lease => ({ fence: lease.fence, context: als.getStore() })))
  useUpFences() // every fence of the stored ceiling, by free keys; the next ceiling's write held up
  assert.equal(store._footprint()[1], 1, 'a free key waits for storage: no fence left to lend')
  await held.release()
  assert.equal(await isSettled(next), false, 'nothing granted before the ceiling is stored')
  letWrite()
  const granted = await next
  assert.ok(granted.fence > held.fence)
  assert.equal(granted.context, 'caller')
  for (let i = 0; i < 200 && store.inspect().length > 0; i++) await settle()
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#17: a hold with a finite wait behind a key granted by the store itself still times out (InUseError), and the store\'s line behind it is served', async () => {
  const { store, clock } = await openTestStore()
  const l = store.lock('timed')
  const held = await l.acquire('k')
  const order = []
  const first = l.hold('k', { wait: Infinity }, () => order.push('first'))
  const timed = l.hold('k', { wait: 100 }, () => order.push('timed'))
  const last = l.hold('k', { wait: Infinity }, () => order.push('last'))
  await settle()
  clock.advance(100)
  await assert.rejects(timed, InUseError)
  await held.release()
  await Promise.all([first, last])
  assert.deepEqual(order, ['first', 'last'])
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

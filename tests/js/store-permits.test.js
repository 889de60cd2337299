// #17: a semaphore's key, held without maxHold, is granted by the store itself permit by permit, and
// holds that wait for it without a time limit wait in a line the store keeps itself (npm/src/store/
// lent-fences.ts # Semaphores, permits.ts): no call into wasm. Every guarantee must hold there as in
// the engine, and across the hand-over of the key, every holder and the whole line to the engine.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import { CancelledError, ClosedError, InUseError, InvalidError } from 'holdfast'
import { gate, inOrder, isSettled, openTestStore, settle, storeOutOfFences } from './helpers.js'

/** `n` holds of `key` on `handle`, each recording its index and fence and how many were inside at once. */
function holdsInLine(handle, key, n, seen, options = { wait: Infinity }) {
  return Array.from({ length: n }, (_, i) =>
    handle.hold(key, options, async lease => {
      seen.inside = (seen.inside ?? 0) + 1
      seen.most = Math.max(seen.most ?? 0, seen.inside)
      seen.push({ i, fence: lease.fence })
      await settle()
      seen.inside--
    }),
  )
}

test('#17 LOCK-01, LOCK-02: a semaphore\'s key is granted by the store itself up to its limit, then holds waiting without a time limit wait in the store\'s own line (the engine never knows the key), served in order as permits free, with growing fences, never more than the limit inside', async () => {
  const { store } = await openTestStore()
  const s = store.semaphore('own', { limit: 2 })
  const a = await s.acquire('k')
  const b = await s.acquire('k')
  assert.ok(b.fence > a.fence)
  assert.deepEqual(store._footprint().slice(0, 2), [0, 0], 'the engine knows neither the key nor its holders')
  const seen = []
  const holds = holdsInLine(s, 'k', 6, seen)
  const acquired = s.acquire('k', { wait: Infinity })
  await settle()
  assert.deepEqual(store._footprint().slice(0, 2), [0, 0], 'nor its waiters')
  assert.deepEqual(store.inspect(), [
    { kind: 'semaphore', name: 'own', key: 'k', holders: [a, b].map(l => ({ fence: l.fence, heldMs: 0 })), waiting: 7 },
  ])
  assert.deepEqual(await s.tryHold('k', () => 'no'), { acquired: false }, 'every permit held')
  await assert.rejects(s.acquire('k', { wait: 0 }), InUseError)
  await a.release()
  const [info] = store.inspect()
  assert.deepEqual([info.holders.length, info.holders[0].fence, info.waiting], [2, b.fence, 6], 'a permit let go is handed to the first in line at once')
  assert.ok(info.holders[1].fence > b.fence)
  await b.release()
  await Promise.all(holds)
  inOrder(seen, 6, b.fence)
  assert.equal(seen.most, 2, 'two inside at once, never more')
  const last = await acquired
  assert.ok(last.fence > seen[5].fence)
  assert.deepEqual(store._footprint().slice(0, 2), [0, 0])
  const other = await s.acquire('k', { wait: 0 })
  assert.ok(other.fence > last.fence, 'a permit free and nobody in line: granted at once')
  await last.release()
  await other.release()
  assert.deepEqual(store.inspect(), [], 'the key is idle once its last holder let go')
  await store.close()
})

test('#17 LOCK-01: a hold with a time limit, a maxHold or over a connection behind a semaphore\'s key the store granted itself hands the engine the key, every holder and the whole line, in order', async () => {
  const { store } = await openTestStore()
  const server = await store.serve({ port: 0, token: 'store-permits-token-01' })
  const { connect } = await import('holdfast')
  const remote = await connect(server.url, { token: 'store-permits-token-01' })
  try {
    for (const [what, late] of [
      ['a wait with a limit', () => store.semaphore('mixed', { limit: 2 }).hold('k', { wait: 60_000 }, lease => lease.fence)],
      ['a maxHold', () => store.semaphore('mixed', { limit: 2, maxHold: '1h', wait: Infinity }).hold('k', lease => lease.fence)],
      ['a hold over a connection', () => remote.semaphore('mixed', { limit: 2, wait: Infinity }).hold('k', lease => lease.fence)],
    ]) {
      const s = store.semaphore('mixed', { limit: 2 })
      const held = [await s.acquire('k'), await s.acquire('k')]
      const seen = []
      const holds = holdsInLine(s, 'k', 3, seen)
      await settle()
      assert.equal(store._footprint()[0], 0, `${what}: the line is the store's`)
      const after = late()
      for (let i = 0; i < 200 && store._footprint()[1] < 6; i++) await settle()
      assert.deepEqual(store._footprint().slice(0, 2), [1, 6], `${what}: the engine has the key, its two holders and four waiters`)
      const [info] = store.inspect()
      assert.deepEqual(info.holders.map(h => h.fence), held.map(l => l.fence), `${what}: the same holders, with their fences`)
      assert.equal(info.waiting, 4, what)
      await assert.rejects(s.acquire('k', { wait: 0 }), InUseError, `${what}: still full`)
      for (const lease of held) await lease.release()
      await Promise.all(holds)
      inOrder(seen, 3, held[1].fence)
      assert.ok(seen.most <= 2, `${what}: never more than the limit inside`)
      assert.ok((await after) > seen[2].fence, `${what}: the late hold comes after the line`)
      for (let i = 0; i < 200 && store.inspect().length > 0; i++) await settle()
      assert.deepEqual(store.inspect(), [], what)
    }
  } finally {
    await remote.close()
    await store.close()
  }
})

test('#17 LOCK-04: a hold of a semaphore\'s key inside its own hold is refused though a permit is free (a try answers not acquired); another key, or after the hold, is fine', async () => {
  const { store } = await openTestStore()
  const s = store.semaphore('nested', { limit: 3 })
  const inner = await s.hold('k', async () => {
    await assert.rejects(s.hold('k', () => 'inner'), InvalidError)
    await assert.rejects(s.acquire('k'), InvalidError)
    assert.deepEqual(await s.tryHold('k', () => 'inner'), { acquired: false })
    return s.hold('other', lease => lease.key)
  })
  assert.equal(inner, 'other')
  // Beside a hold (not inside it), the key's free permits are for anyone.
  const outside = gate()
  const holding = s.hold('k', () => outside.promise)
  assert.equal(await s.hold('k', () => 'beside'), 'beside')
  outside.open()
  await holding
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#17: a waiter aborted in a semaphore\'s own line leaves it with CancelledError; the others are served in order', async () => {
  const { store } = await openTestStore()
  const s = store.semaphore('cancel', { limit: 1 })
  const held = await s.acquire('k')
  const order = []
  const ac = new AbortController()
  const first = s.hold('k', { wait: Infinity }, () => order.push('first'))
  const gone = s.hold('k', { wait: Infinity, signal: ac.signal }, () => order.push('gone'))
  const last = s.hold('k', { wait: Infinity }, () => order.push('last'))
  await settle()
  assert.equal(store.inspect()[0].waiting, 3)
  ac.abort('changed my mind')
  await assert.rejects(gone, e => e instanceof CancelledError && e.cause === 'changed my mind')
  assert.equal(store.inspect()[0].waiting, 2)
  assert.deepEqual(store._footprint().slice(0, 2), [0, 0])
  await held.release()
  await Promise.all([first, last])
  assert.deepEqual(order, ['first', 'last'])
  await store.close()
})

test('#17 LOCK-06: closing the store ends the leases of a semaphore\'s key the store granted itself (ClosedError naming it) and answers its line ClosedError; so does a trap', async () => {
  for (const end of ['close', 'trap']) {
    const { store } = await openTestStore()
    const s = store.semaphore('closing', { limit: 2 })
    const held = [await s.acquire('k'), await s.acquire('k')]
    const waiting = s.hold('k', { wait: Infinity }, () => 'never')
    await settle()
    if (end === 'close') await store.close()
    else assert.throws(() => store._trapForTest(), ClosedError)
    for (const lease of held) {
      assert.equal(lease.lost, true, end)
      assert.ok(lease.signal.reason instanceof ClosedError && /semaphore closing/.test(lease.signal.reason.message) && /"k"/.test(lease.signal.reason.message), `${end}: ${lease.signal.reason}`)
    }
    await assert.rejects(waiting, e => e instanceof ClosedError && /semaphore closing/.test(e.message), end)
    await store.close()
  }
})

test('#17: a hold with a finite wait behind a semaphore\'s key the store granted itself still times out (InUseError), and the store\'s line behind it is served', async () => {
  const { store, clock } = await openTestStore()
  const s = store.semaphore('timed', { limit: 2 })
  const held = [await s.acquire('k'), await s.acquire('k')]
  const order = []
  const first = s.hold('k', { wait: Infinity }, () => order.push('first'))
  const timed = s.hold('k', { wait: 100 }, () => order.push('timed'))
  const last = s.hold('k', { wait: Infinity }, () => order.push('last'))
  await settle()
  clock.advance(100)
  await assert.rejects(timed, InUseError)
  for (const lease of held) await lease.release()
  await Promise.all([first, last])
  assert.deepEqual(order, ['first', 'last'])
  for (let i = 0; i < 200 && store.inspect().length > 0; i++) await settle()
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('#17 LOCK-02: with no fence left to lend (the next ceiling not yet stored), a semaphore\'s key, its holders and its line go to the engine, which grants once storage answers, in the caller\'s context', { timeout: 120_000 }, async () => {
  const { store, useUpFences, letWrite } = await storeOutOfFences()
  const s = store.semaphore('ceiling', { limit: 2 })
  const held = [await s.acquire('k'), await s.acquire('k')]
  const als = new AsyncLocalStorage()
  const next = als.run('caller', () => s.hold('k', { wait: Infinity }, lease => ({ fence: lease.fence, context: als.getStore() })))
  useUpFences() // every fence of the stored ceiling, by free keys; the next ceiling's write held up
  assert.equal(store._footprint()[1], 1, 'a free key waits for storage: no fence left to lend')
  await held[0].release()
  assert.equal(await isSettled(next), false, 'nothing granted before the ceiling is stored')
  letWrite()
  const granted = await next
  assert.ok(granted.fence > held[1].fence)
  assert.equal(granted.context, 'caller')
  await held[1].release()
  for (let i = 0; i < 200 && store.inspect().length > 0; i++) await settle()
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

// Keys granted without the engine: a lock's free key, held without maxHold, is granted by the store
// with a fence the engine lent it, and handed to the engine only when somebody else asks for it (see
// npm/src/store/lent-fences.ts). Every guarantee must hold across that hand-over.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ClosedError, HoldfastError, InUseError, InvalidError, LostError } from 'holdfast'
import { openTestStore, settle } from './helpers.js'

test('LOCK-02: fences stay in grant order when keys granted by the store interleave with grants by the engine', async () => {
  const { store, clock } = await openTestStore()
  const l = store.lock('a', { wait: Infinity })
  const capped = store.lock('a', { wait: Infinity, maxHold: '1m' })
  const s = store.semaphore('s', { limit: 2, wait: Infinity })
  const grants = []
  const note = lease => grants.push(lease.fence)
  // A free key (granted by the store itself), then a waiter on it (the key goes to the engine), then more free keys
  // while the engine holds the first: each grant, whoever makes it, takes a larger fence.
  const first = await l.acquire('k1')
  note(first)
  const waiter = l.acquire('k1')
  await settle()
  note(await l.acquire('k2'))
  note(await capped.acquire('k3')) // maxHold: the engine grants it
  note(await s.acquire('k'))
  note(await l.acquire('k4'))
  await first.release()
  const second = await waiter
  note(second)
  note(await l.acquire('k5'))
  clock.advance(61_000) // k3's maxHold: the engine acts on a deadline between two grants here
  note(await capped.acquire('k3'))
  note(await l.acquire('k6'))
  await second.release()
  note(await l.acquire('k1'))
  for (let i = 1; i < grants.length; i++) assert.ok(grants[i] > grants[i - 1], `grant ${i}: fence ${grants[i]} after ${grants[i - 1]} (${grants})`)
  await store.close()
})

test('LOCK-02: across many keys granted by the store itself and many lines, every fence is larger than every earlier one', async () => {
  const { store } = await openTestStore()
  const l = store.lock('a', { wait: Infinity })
  const fences = []
  const work = []
  // 40 rounds of: some keys held alone (granted by the store itself), some contended by several holders (the engine).
  for (let round = 0; round < 40; round++) {
    for (let i = 0; i < 5; i++) {
      const key = `r${round % 3}-${i % (1 + (round % 4))}`
      work.push(l.hold(key, async lease => {
        fences.push(lease.fence)
        await settle()
      }))
    }
    if (round % 5 === 4) await Promise.all(work.splice(0))
  }
  await Promise.all(work)
  assert.equal(fences.length, 200)
  for (let i = 1; i < fences.length; i++) assert.ok(fences[i] > fences[i - 1], `fence ${fences[i]} after ${fences[i - 1]}`)
  await store.close()
})

test('LOCK-01: a key granted by the store itself, then asked for by others, serves them in the order they came, behind its holder', async () => {
  const { store } = await openTestStore()
  // Holds with a time limit to their wait: the store's own line takes only those without (#17, store-lines.test.js).
  const l = store.lock('q', { wait: '1h' })
  const held = await l.acquire('k')
  assert.equal(store._footprint()[0], 0, 'the engine does not know a key granted by the store itself')
  assert.deepEqual(store.inspect(), [{ kind: 'lock', name: 'q', key: 'k', holders: [{ fence: held.fence, heldMs: 0 }], waiting: 0 }])
  const order = []
  let inside = 0
  const holds = [0, 1, 2, 3].map(i =>
    l.hold('k', async lease => {
      assert.equal(++inside, 1)
      order.push(i)
      assert.ok(lease.fence > held.fence)
      await settle()
      inside--
    }),
  )
  await settle()
  assert.equal(store._footprint()[0], 1, 'asked for, the key is the engine\'s')
  assert.deepEqual(store.inspect(), [{ kind: 'lock', name: 'q', key: 'k', holders: [{ fence: held.fence, heldMs: 0 }], waiting: 4 }])
  assert.deepEqual(await l.tryHold('k', () => 'no'), { acquired: false })
  await assert.rejects(l.hold('k', { wait: 0 }, () => 'no'), InUseError)
  await held.release()
  await Promise.all(holds)
  assert.deepEqual(order, [0, 1, 2, 3])
  assert.deepEqual(store.inspect(), [])
  assert.deepEqual(store._footprint().slice(0, 2), [0, 0])
  await store.close()
})

test('LOCK-01: a try or a hold that would not wait leaves a key granted by the store itself as it is', async () => {
  const { store } = await openTestStore()
  const l = store.lock('q')
  const held = await l.acquire('k')
  assert.deepEqual(await l.tryHold('k', () => 'no'), { acquired: false })
  await assert.rejects(l.hold('k', { wait: 0 }, () => 'no'), InUseError)
  assert.equal(store._footprint()[0], 0, 'still granted by the store itself')
  await held.release()
  assert.deepEqual(await l.tryHold('k', lease => lease.fence > held.fence), { acquired: true, value: true })
  await store.close()
})

test('LOCK-03: a hold with maxHold waits behind a key granted by the store itself, and is revoked at its own maxHold', async () => {
  const { store, clock } = await openTestStore()
  const plain = store.lock('m', { wait: Infinity })
  const capped = store.lock('m', { wait: Infinity, maxHold: '5s' })
  const held = await plain.acquire('k')
  clock.advance(60_000) // a key granted by the store itself has no deadline: nothing happens to it
  assert.equal(held.lost, false)
  let signal
  const late = capped.hold('k', async lease => {
    signal = lease.signal
    await new Promise(resolve => lease.signal.addEventListener('abort', resolve))
  })
  await settle()
  await held.release()
  await settle()
  clock.advance(5_000)
  await assert.rejects(late, LostError)
  assert.ok(signal.aborted)
  await store.close()
})

test('LOCK-04: a hold of a key granted by the store itself, inside its own hold, is refused; after it ended, it is fine', async () => {
  const { store } = await openTestStore()
  const l = store.lock('r', { wait: Infinity })
  await l.hold('k', async () => {
    assert.equal(store._footprint()[0], 0)
    await assert.rejects(l.hold('k', () => 1), InvalidError)
    assert.deepEqual(await l.tryHold('k', () => 1), { acquired: false })
    assert.equal(store._footprint()[0], 0, 'a refused hold hands nothing to the engine')
  })
  assert.equal(await l.hold('k', () => 'again'), 'again')
  await store.close()
})

test('LOCK-06: close ends leases granted by the store itself: signal aborted with ClosedError, hold rejects ClosedError when fn settles', async () => {
  const { store } = await openTestStore()
  const l = store.lock('c')
  let seen
  const running = l.hold('k', async lease => {
    await new Promise(resolve => lease.signal.addEventListener('abort', resolve))
    seen = lease.signal.reason
    return 'finished'
  })
  const acquired = await l.acquire('other')
  await settle()
  await store.close()
  await assert.rejects(running, ClosedError)
  assert.ok(seen instanceof ClosedError)
  assert.equal(acquired.lost, true)
  assert.ok(acquired.signal.reason instanceof ClosedError)
  await acquired.release()
})

test('LOCK-06: a wasm trap ends leases granted by the store itself too, and the store closes', async () => {
  const { store } = await openTestStore()
  const l = store.lock('t')
  const held = await l.acquire('k')
  assert.throws(() => store._trapForTest(), e => e instanceof ClosedError && e.cause instanceof Error)
  assert.equal(held.lost, true)
  assert.ok(held.signal.reason instanceof ClosedError && held.signal.reason instanceof HoldfastError)
  assert.throws(() => store.inspect(), ClosedError)
  await held.release()
})

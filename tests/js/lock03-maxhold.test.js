// LOCK-03: maxHold is a hard bound from the grant: at it the lease is revoked, lease.signal aborts with
// a LostError, the key goes to the next in line at once, and hold rejects LostError when fn settles,
// even if fn succeeded. Time is a manual clock: nothing sleeps.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { LostError, HoldfastError, InUseError } from 'holdfast'
import { openTestStore, settle, gate, stallClock } from './helpers.js'

test('LOCK-03: at maxHold the lease is revoked, its signal aborts, the next holder gets the key, and hold rejects LostError', async () => {
  const { store, clock } = await openTestStore()
  const l = store.lock('summaries', { maxHold: '2s', wait: Infinity })
  const g = gate()
  let firstLease
  const first = l.hold('chat', async lease => {
    firstLease = lease
    await g.promise
    return 'done anyway'
  })
  await settle()
  let nextFence = 0
  const second = l.hold('chat', lease => (nextFence = lease.fence))
  await settle()
  const signal = firstLease.signal
  clock.advance(1_999)
  await settle()
  assert.equal(signal.aborted, false)
  assert.equal(firstLease.lost, false)
  assert.equal(nextFence, 0, 'the key is still held')
  clock.advance(1)
  assert.equal(signal.aborted, true)
  assert.ok(signal.reason instanceof LostError && signal.reason.code === 'lost')
  assert.equal(firstLease.lost, true)
  await second
  assert.ok(nextFence > firstLease.fence, 'the next in line got the key at once, with a larger fence')
  g.open()
  await assert.rejects(first, e => e instanceof LostError && e instanceof HoldfastError && /summaries/.test(e.message))
  await store.close()
})

test('LOCK-03: a signal asked for after the loss is already aborted; release after loss is harmless', async () => {
  const { store, clock } = await openTestStore()
  const l = store.lock('jobs', { maxHold: 100 })
  const lease = await l.acquire('nightly')
  clock.advance(100)
  assert.equal(lease.lost, true)
  assert.equal(lease.signal.aborted, true)
  assert.ok(lease.signal.reason instanceof LostError)
  await lease.release()
  await lease.release()
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-03: a lease never released is revoked at maxHold (acquire form) and the key is free again', async () => {
  const { store, clock } = await openTestStore()
  const l = store.lock('jobs', { maxHold: '1m' })
  const lease = await l.acquire('nightly')
  assert.equal((await l.tryHold('nightly', () => 1)).acquired, false)
  clock.advance(60_000)
  assert.equal(lease.lost, true)
  assert.equal((await l.tryHold('nightly', () => 1)).acquired, true)
  await store.close()
})

// The first holder with a maxHold of its own, and without one: then no deadline is set anywhere while
// it holds, and its release could be answered without reading the clock; the waiter's maxHold must
// still count from the time of its grant.
for (const firstCapped of [true, false]) {
  test(`LOCK-03: maxHold counts from the grant, not from the request (first holder ${firstCapped ? 'with' : 'without'} maxHold)`, async () => {
    const { store, clock } = await openTestStore()
    const l = store.lock('x', { maxHold: 1_000, wait: Infinity })
    const first = await (firstCapped ? l : store.lock('x', { wait: Infinity })).acquire('k')
    const second = l.acquire('k')
    clock.advance(600)
    await first.release()
    const lease = await second
    clock.advance(999)
    assert.equal(lease.lost, false)
    clock.advance(1)
    assert.equal(lease.lost, true)
    await store.close()
  })
}

test('LOCK-03: a hold that ran past maxHold rejects LostError even if fn threw, with fn\'s error as the cause', async () => {
  const { store, clock } = await openTestStore()
  const l = store.lock('x', { maxHold: 10 })
  const boom = new Error('fn failed')
  const held = l.hold('k', async () => {
    clock.advance(10)
    throw boom
  })
  await assert.rejects(held, e => e instanceof LostError && e.cause === boom)
  await store.close()
})

test('LOCK-03: a lease past its maxHold is lost even when the store\'s timer has not fired yet (a late timer)', async () => {
  // A clock whose timers never fire: only the calls themselves can notice a deadline.
  let now = 1_000
  const lateClock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} }
  const { store } = await openTestStore({ clock: lateClock })
  const l = store.lock('x', { maxHold: 100, wait: '1s' })
  const hold = l.hold('k', async () => {
    now += 150
    return 'fn finished'
  })
  await assert.rejects(hold, LostError)
  // A waiter whose wait ran out (at +50) before the holder's maxHold (at +100) is not granted by a
  // late release either: deadlines are acted on in their order. Then a try finds the key free.
  const held = await l.acquire('k2')
  const waiting = l.hold('k2', { wait: 50 }, () => 'granted').then(v => v, e => e)
  now += 1_000
  await held.release()
  assert.ok((await waiting) instanceof InUseError)
  assert.equal(held.lost, true, 'held past its maxHold too')
  assert.deepEqual(await l.tryHold('k2', () => 'free'), { acquired: true, value: 'free' })
  await store.close()
})

test('LOCK-03, #13 item 10: a lease read past its maxHold is lost on the read, before the store\'s timer ran (a paused process); its key goes on then', async () => {
  // The clock moves without running timers (`stall`), as for a process paused past its deadline: the
  // first thing it does on waking is to read.
  const clock = stallClock(1_000)
  const { store } = await openTestStore({ clock })
  const l = store.lock('x', { maxHold: 100, wait: '1s' })
  const lease = await l.acquire('k')
  const signal = lease.signal // kept, as code that passes it on does
  let heard = 0
  signal.addEventListener('abort', () => heard++)
  const next = l.acquire('k')
  clock.stall(99)
  assert.equal(lease.lost, false)
  clock.stall(1)
  assert.equal(signal.aborted, true, 'a signal kept from before reads aborted past the deadline')
  assert.equal(heard, 1, 'its listeners heard it within the read')
  assert.ok(signal.reason instanceof LostError && /maxHold/.test(signal.reason.message), String(signal.reason))
  assert.equal(lease.lost, true)
  const took = await next
  assert.ok(took.fence > lease.fence, 'the next in line got the key')
  // Any read checks: `lost`, `signal`, and throwIfAborted() on a kept signal.
  const second = await l.acquire('k2')
  const kept = second.signal
  clock.stall(100)
  assert.throws(() => kept.throwIfAborted(), LostError)
  assert.equal(second.lost, true)
  const third = await l.acquire('k3')
  clock.stall(100)
  assert.equal(third.lost, true)
  // A release past the deadline is the loss too: hold rejects LostError.
  await assert.rejects(
    l.hold('k4', () => clock.stall(100)),
    LostError,
  )
  await took.release()
  await store.close()
})

test('LOCK-03: a lease revoked at maxHold while the event loop was busy is told so, and the hold asked in the call that found it revoked is a lease of its own', async () => {
  // The hold of `b` makes the engine act first on `a`'s maxHold, which fell due while nothing ran
  // (`stall`): `a` is revoked, its key and request go, and `b` may take their slots in the engine.
  // Each event must reach its own record: before the fix, `a`'s revocation was told to `b`'s lease
  // (so `a` never heard it, and `b`'s key stayed held by nobody after its release).
  const clock = stallClock(1_000)
  const { store } = await openTestStore({ clock })
  const l = store.lock('x', { maxHold: 10, wait: 0 })
  const a = await l.acquire('a')
  clock.stall(20)
  const b = await l.acquire('b')
  assert.equal(a.lost, true, 'a, revoked, is told')
  assert.ok(a.signal.reason instanceof LostError && /maxHold/.test(a.signal.reason.message), String(a.signal.reason))
  assert.equal(b.lost, false, 'b holds its own lease')
  assert.ok(b.fence > a.fence)
  await b.release()
  assert.deepEqual(store.inspect(), [], 'b let go: no key is held')
  const again = await l.acquire('b')
  assert.ok(again.fence > b.fence)
  await again.release()
  await store.close()
})

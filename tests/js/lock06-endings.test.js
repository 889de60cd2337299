// LOCK-06: every way a hold can end lets the key go or leaves the line: fn returns, throws, rejects,
// or throws synchronously; the waiter's signal aborts; the wait runs out; the store closes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { InUseError, CancelledError, ClosedError, LostError, HoldfastError } from 'holdfast'
import { manualClock } from 'holdfast/testing'
import { openTestStore, settle, gate, isSettled, stallClock, storeOutOfFences } from './helpers.js'

async function assertFree(lock, key) {
  const tried = await lock.tryHold(key, () => 'free')
  assert.deepEqual(tried, { acquired: true, value: 'free' }, `${key} is free again`)
}

test('LOCK-06: fn returning, throwing, rejecting or throwing synchronously lets the key go', async () => {
  const { store } = await openTestStore()
  const l = store.lock('x')
  assert.equal(await l.hold('k', () => 42), 42)
  await assertFree(l, 'k')
  assert.equal(await l.hold('k', async () => 'async'), 'async')
  await assertFree(l, 'k')
  const sync = new Error('sync throw')
  await assert.rejects(l.hold('k', () => { throw sync }), e => e === sync)
  await assertFree(l, 'k')
  const rejected = new Error('rejected')
  await assert.rejects(l.hold('k', async () => { await settle(); throw rejected }), e => e === rejected)
  await assertFree(l, 'k')
  await assert.rejects(l.hold('k', () => Promise.reject('a string')), e => e === 'a string')
  await assertFree(l, 'k')
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-06: fn answering a thenable (not a promise) keeps the key until it settles, held at once or after a wait', async () => {
  const { store } = await openTestStore()
  const l = store.lock('x', { wait: Infinity })
  // A thenable the test settles when it says so (never a timer: the check in between must see it pending).
  const thenable = (value, fail) => {
    const g = gate()
    const t = { then: (resolve, reject) => g.promise.then(() => (fail ? reject(value) : resolve(value))), settle: g.open }
    return t
  }
  for (const waited of [false, true]) {
    const first = waited ? await l.acquire('k') : undefined
    const pending = thenable('later')
    const ok = l.hold('k', () => pending)
    await first?.release()
    await settle()
    assert.deepEqual(await l.tryHold('k', () => 'barged'), { acquired: false }, 'held while the thenable is pending')
    pending.settle()
    assert.equal(await ok, 'later')
    await assertFree(l, 'k')
    const failure = new Error('thenable rejected')
    const failing = thenable(failure, true)
    const rejected = l.hold('k', () => failing)
    await settle()
    assert.deepEqual(await l.tryHold('k', () => 'barged'), { acquired: false }, 'held while the failing thenable is pending')
    failing.settle()
    await assert.rejects(rejected, e => e === failure)
    await assertFree(l, 'k')
  }
  // Lost while a thenable is pending: the loss is the answer, fn's value notwithstanding.
  const late = thenable('too late')
  const closing = l.hold('k', () => late)
  await settle()
  await store.close()
  late.settle()
  await assert.rejects(closing, ClosedError)
})

test('LOCK-06: fn answering an object whose `then` throws when read rejects with that error and lets the key go: a free key, a key granted by the engine, one handed over, a try', async () => {
  const { store } = await openTestStore()
  const boom = new Error('then getter boom')
  const evil = () => ({
    get then() {
      throw boom
    },
  })
  for (const l of [store.lock('free'), store.lock('engine', { maxHold: '1m' })]) {
    await assert.rejects(l.hold('k', evil), e => e === boom, `${l.name}: held at once`)
    await assertFree(l, 'k')
    await assert.rejects(l.tryHold('k', evil), e => e === boom, `${l.name}: tried`)
    await assertFree(l, 'k')
    const first = await l.acquire('k')
    const waited = l.hold('k', { wait: Infinity }, evil)
    await settle()
    await first.release()
    await assert.rejects(waited, e => e === boom, `${l.name}: handed over`)
    await assertFree(l, 'k')
  }
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-06: a waiter whose signal aborts is answered CancelledError (cause: the reason) and the next in line moves up', async () => {
  const { store } = await openTestStore()
  const l = store.lock('x', { wait: Infinity })
  const held = await l.acquire('k')
  const ac = new AbortController()
  let ran = false
  const cancelled = l.hold('k', { signal: ac.signal }, () => (ran = true))
  const next = l.hold('k', lease => lease.fence)
  await settle()
  assert.equal(store.inspect()[0].waiting, 2)
  const reason = new Error('user gave up')
  ac.abort(reason)
  await assert.rejects(cancelled, e => e instanceof CancelledError && e.code === 'cancelled' && e.cause === reason)
  assert.equal(store.inspect()[0].waiting, 1)
  await held.release()
  assert.ok((await next) > held.fence)
  assert.equal(ran, false)
  await store.close()
})

/** A handle of each way a hold waits: the engine's line (a finite wait, a maxHold), the store's own line for a lock's key, a semaphore's. */
function everyLine(store) {
  return [
    store.lock('finite'),
    store.lock('own-line', { wait: Infinity }),
    store.lock('max-hold', { maxHold: '1m' }),
    store.lock('max-hold-inf', { maxHold: '1m', wait: Infinity }),
    store.semaphore('sem', { limit: 2 }),
    store.semaphore('sem-own-line', { limit: 2, wait: Infinity }),
    store.semaphore('sem-max-hold', { limit: 2, maxHold: '1m' }),
  ]
}

test('LOCK-06: in every line, a hold or an acquire whose signal aborts while it waits rejects CancelledError (cause: the reason), leaves the line, and the next is served', async () => {
  const { store } = await openTestStore()
  for (const handle of everyLine(store)) {
    for (const form of ['hold', 'acquire']) {
      const at = `${handle.name} ${form}`
      const held = []
      for (let i = 0; i < (handle.limit ?? 1); i++) held.push(await handle.acquire('k'))
      const ac = new AbortController()
      let ran = false
      const waiting = form === 'hold' ? handle.hold('k', { signal: ac.signal }, () => (ran = true)) : handle.acquire('k', { signal: ac.signal })
      const next = handle.hold('k', lease => lease.fence)
      await settle()
      assert.equal(store.inspect()[0].waiting, 2, at)
      const reason = new Error('gave up')
      ac.abort(reason)
      await assert.rejects(waiting, e => e instanceof CancelledError && e.code === 'cancelled' && e.cause === reason, at)
      assert.equal(store.inspect()[0].waiting, 1, `${at}: left the line`)
      for (const lease of held) await lease.release()
      assert.ok((await next) > held.at(-1).fence, `${at}: the next in line is served`)
      assert.equal(ran, false, at)
      assert.deepEqual(store.inspect(), [], at)
    }
  }
  await store.close()
})

test('LOCK-06: in every line, a signal that aborts as its holder lets go (an abort listener of its own releases the key) cancels the hold: CancelledError, fn not run, the next in line served', async () => {
  // One AbortController for a task's shutdown: its listener, added first, lets the task's leases go,
  // and the same signal cancels the task's holds still waiting. The release inside the abort's
  // dispatch came before the waiter's own listener, and granted it: fn ran after its signal aborted.
  const { store } = await openTestStore()
  for (const handle of everyLine(store)) {
    for (const form of ['hold', 'acquire']) {
      const at = `${handle.name} ${form}`
      const held = []
      for (let i = 0; i < (handle.limit ?? 1); i++) held.push(await handle.acquire('k'))
      const shutdown = new AbortController()
      shutdown.signal.addEventListener('abort', () => {
        for (const lease of held) lease.release()
      })
      let ran = false
      const waiting =
        form === 'hold' ? handle.hold('k', { signal: shutdown.signal }, () => (ran = true)) : handle.acquire('k', { signal: shutdown.signal })
      const next = handle.hold('k', lease => lease.fence)
      await settle()
      const reason = new Error('shutting down')
      shutdown.abort(reason)
      await assert.rejects(waiting, e => e instanceof CancelledError && e.code === 'cancelled' && e.cause === reason, at)
      assert.equal(ran, false, `${at}: fn did not run`)
      assert.ok((await next) > held.at(-1).fence, `${at}: the next in line is served`)
      assert.deepEqual(store.inspect(), [], at)
    }
  }
  await store.close()
})

test('LOCK-06: in every line, a signal that aborts after its hold was granted and before its fn started (in the call that released the key) cancels the hold, on every runtime: CancelledError, fn not run, the next in line served', async () => {
  // The grant comes in lease.release(); the caller aborts right after, in the same call. The fn of a
  // hold handed its key starts a microtask later at the earliest, so the abort came first: on Node and
  // Bun the hand-over queue cancelled it, where no context is kept (Deno, workerd) fn ran.
  const { store } = await openTestStore()
  for (const handle of everyLine(store)) {
    const at = handle.name
    const held = []
    for (let i = 0; i < (handle.limit ?? 1); i++) held.push(await handle.acquire('k'))
    const ac = new AbortController()
    let ran = false
    const waiting = handle.hold('k', { signal: ac.signal }, () => (ran = true))
    const next = handle.hold('k', lease => lease.fence)
    await settle()
    const reason = new Error('gave up')
    for (const lease of held) lease.release()
    ac.abort(reason)
    await assert.rejects(waiting, e => e instanceof CancelledError && e.code === 'cancelled' && e.cause === reason, at)
    assert.equal(ran, false, `${at}: fn did not run`)
    assert.ok((await next) > held.at(-1).fence, `${at}: the next in line is served`)
    assert.deepEqual(store.inspect(), [], at)
  }
  await store.close()
})

test('LOCK-06: a hold or a tryHold granted once storage kept the next fence ceiling, whose signal the caller of an acquire granted before it in that turn aborts, is cancelled: CancelledError, fn not run, the key free', { timeout: 120_000 }, async () => {
  // Both wait for storage (no fence left to lend); the write lands and grants both in one turn, the
  // acquire first, whose caller resumes first and aborts the second's signal, before the second's fn
  // could start. A tryHold ran its fn anyway, on every runtime; a hold did where no context is kept.
  const { store, useUpFences, letWrite } = await storeOutOfFences()
  const l = store.lock('granted-by-storage')
  useUpFences()
  for (const form of ['hold', 'tryHold']) {
    const ac = new AbortController()
    const reason = new Error('gave up')
    const first = l.acquire(`${form}-first`).then(lease => {
      ac.abort(reason)
      return lease.release()
    })
    let ran = false
    const second = l[form](`${form}-second`, { signal: ac.signal }, () => (ran = true))
    assert.equal(await isSettled(second), false, `${form}: waits for storage`)
    letWrite()
    await first
    await assert.rejects(second, e => e instanceof CancelledError && e.cause === reason, form)
    assert.equal(ran, false, `${form}: fn did not run`)
    assert.deepEqual(await l.tryHold(`${form}-second`, () => 'free'), { acquired: true, value: 'free' }, `${form}: the key is free`)
    if (form === 'hold') useUpFences()
  }
  await store.close()
})

test('LOCK-06: in every line, a signal that aborts once its hold was granted changes nothing: the lease holds, fn runs to its end, the hold answers its value', async () => {
  const { store } = await openTestStore()
  for (const handle of everyLine(store)) {
    const at = handle.name
    // Granted at once, the signal aborting while fn runs.
    const free = new AbortController()
    const value = await handle.hold('k', { signal: free.signal }, async lease => {
      free.abort(new Error('too late'))
      await settle()
      return lease.lost ? 'lost' : 'held'
    })
    assert.equal(value, 'held', `${at}: a free key`)
    // Granted after a wait, the signal aborting as the grant came.
    const held = []
    for (let i = 0; i < (handle.limit ?? 1); i++) held.push(await handle.acquire('k'))
    const waited = new AbortController()
    const acquiring = handle.acquire('k', { signal: waited.signal })
    await settle()
    for (const lease of held) await lease.release()
    const lease = await acquiring
    waited.abort(new Error('too late'))
    await settle()
    assert.equal(lease.lost, false, `${at}: the lease still holds`)
    assert.equal(lease.signal.aborted, false, `${at}: its own signal is quiet`)
    await lease.release()
    assert.deepEqual(store.inspect(), [], at)
  }
  await store.close()
})

test('LOCK-06: an already aborted signal rejects at once with CancelledError, free key or not (as Web Locks)', async () => {
  const { store } = await openTestStore()
  const l = store.lock('x')
  const signal = AbortSignal.abort('nope')
  let ran = false
  await assert.rejects(l.hold('free', { signal }, () => (ran = true)), e => e instanceof CancelledError && e.cause === 'nope')
  await assert.rejects(l.acquire('free', { signal }), CancelledError)
  await assert.rejects(l.tryHold('free', { signal }, () => (ran = true)), e => e instanceof CancelledError && e.cause === 'nope')
  const held = await l.acquire('busy')
  for (const call of [() => l.hold('busy', { signal }, () => (ran = true)), () => l.acquire('busy', { signal }), () => l.tryHold('busy', { signal }, () => (ran = true))]) {
    await assert.rejects(call(), e => e instanceof CancelledError && e.cause === 'nope', 'a busy key: cancelled, not in use')
  }
  await held.release()
  assert.equal(ran, false)
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-06: a wait that runs out rejects InUseError, fn does not run, and the line moves on', async () => {
  const { store, clock } = await openTestStore()
  const l = store.lock('x', { wait: '5s' })
  const held = await l.acquire('k')
  let ran = false
  const short = l.hold('k', () => (ran = true))
  const long = l.hold('k', { wait: '1m' }, lease => lease.fence)
  clock.advance(4_999)
  assert.equal(await isSettled(short), false)
  clock.advance(1)
  await assert.rejects(short, e => e instanceof InUseError && e.code === 'in_use' && /x: key "k"/.test(e.message))
  assert.equal(ran, false)
  await held.release()
  assert.ok((await long) > held.fence)
  await store.close()
})

test('LOCK-06: wait 0 on a held key rejects InUseError at once; tryHold answers { acquired: false }', async () => {
  const { store } = await openTestStore()
  const l = store.lock('x')
  const held = await l.acquire('k')
  await assert.rejects(l.hold('k', { wait: 0 }, () => 1), InUseError)
  assert.deepEqual(await l.tryHold('k', () => 1), { acquired: false })
  await held.release()
  await store.close()
})

test('LOCK-06: a wait counts from its own hold, even among many holds in one turn of the event loop', async () => {
  const { store, clock } = await openTestStore({ clock: manualClock(1_000_000) })
  const l = store.lock('x', { wait: '5s' })
  const other = store.lock('y', { maxHold: '1s' })
  // All in one turn: the store reads its clock once per turn unless a hold needs the time.
  const revoked = other.acquire('z')
  const held = l.acquire('k')
  const waiting = l.hold('k', () => 'ran')
  await revoked
  await held
  clock.advance(1_000) // the maxHold timer makes the engine act on its deadlines
  assert.equal(await isSettled(waiting), false, 'the 5 s wait did not run out after 1 s')
  clock.advance(3_999)
  assert.equal(await isSettled(waiting), false)
  clock.advance(1)
  await assert.rejects(waiting, InUseError)
  await store.close()
})

test('LOCK-06: the default wait is 10 s', async () => {
  const { store, clock } = await openTestStore()
  const l = store.lock('x')
  const held = await l.acquire('k')
  const waiting = l.hold('k', () => 1)
  clock.advance(9_999)
  assert.equal(await isSettled(waiting), false)
  clock.advance(1)
  await assert.rejects(waiting, InUseError)
  await held.release()
  await store.close()
})

test('LOCK-06: a close() called inside close() (the abort listener of a lease it ended) answers the first close()\'s promise: it resolves once the storage was let go', async () => {
  const values = new Map()
  let letGo
  const storage = {
    get: k => values.get(k),
    set: (k, v) => void values.set(k, v),
    close: () => new Promise(resolve => (letGo = resolve)),
  }
  const { store } = await openTestStore({ storage })
  const lease = await store.lock('x').acquire('a')
  // A common shutdown: the lease lost, close the store (and then, say, leave the process).
  let inner
  lease.signal.addEventListener('abort', () => (inner = store.close()))
  const outer = store.close()
  assert.ok(inner, 'close() was called as the close ended the lease')
  // Before the fix: a close of its own, which found the store closed and resolved at once.
  assert.equal(inner, outer, 'the close() called inside it is the first one\'s promise')
  assert.equal(await isSettled(inner), false, 'it waits for the storage to be let go')
  letGo()
  await outer
})

test('LOCK-06: in every line, a hold handed the key by lease.release() and closed by close() in the same call, before its fn started, is answered ClosedError and fn never runs', async () => {
  // lease.release() hands the key over, the next fn to start a microtask later (never inside the
  // caller's call); a close() right after ended that lease. Its fn ran all the same, on a lease lost
  // before it began, the store closed.
  for (let at = 0; at < 7; at++) {
    const { store } = await openTestStore()
    const handle = everyLine(store)[at]
    const held = []
    for (let i = 0; i < (handle.limit ?? 1); i++) held.push(await handle.acquire('k'))
    let ran = false
    const waiting = handle.hold('k', () => (ran = true))
    await settle()
    for (const lease of held) lease.release()
    const closing = store.close()
    await assert.rejects(waiting, e => e instanceof ClosedError && e.code === 'closed', handle.name)
    assert.equal(ran, false, `${handle.name}: fn did not run`)
    await closing
  }
})

test('LOCK-06: close ends every lease (signal aborts with ClosedError), answers every waiter ClosedError once, and later calls fail ClosedError', async () => {
  const { store } = await openTestStore()
  const l = store.lock('x', { wait: Infinity })
  const s = store.semaphore('s', { limit: 1, wait: Infinity })
  const g = gate()
  let running
  const runningHold = l.hold('a', lease => {
    running = lease
    return g.promise.then(() => 'fn finished')
  })
  await settle()
  const manual = await s.acquire('b')
  const waiters = [l.hold('a', () => 1), l.acquire('a'), s.hold('b', () => 1)]
  const answers = waiters.map(w => w.then(() => 'granted', e => e))
  await settle()
  const closing = store.close()
  // close() does not wait for running fns.
  await closing
  // Each answer names its own lock or semaphore and key: several end at once.
  const places = ['lock x: key "a"', 'lock x: key "a"', 'semaphore s: key "b"']
  for (const [i, answer] of (await Promise.all(answers)).entries()) {
    assert.ok(answer instanceof ClosedError && answer.message === `${places[i]}: the store is closed`, String(answer))
  }
  assert.equal(running.lost, true)
  assert.ok(running.signal.aborted && running.signal.reason instanceof ClosedError)
  assert.equal(running.signal.reason.message, 'lock x: key "a": the store is closed')
  assert.equal(manual.lost, true)
  assert.ok(manual.signal.reason instanceof ClosedError)
  assert.equal(manual.signal.reason.message, 'semaphore s: key "b": the store is closed')
  g.open()
  await assert.rejects(runningHold, e => e instanceof ClosedError && e.code === 'closed' && e.message === 'lock x: key "a": the store is closed')
  assert.throws(() => store.inspect(), ClosedError)
  await assert.rejects(l.hold('a', () => 1), ClosedError)
  await assert.rejects(l.tryHold('a', () => 1), ClosedError)
  await assert.rejects(l.acquire('a'), ClosedError)
  assert.throws(() => store.lock('y'), ClosedError)
  await manual.release() // harmless
  await store.close() // a second close is harmless too
})

test('LOCK-06: a wasm trap never leaves a waiter hanging: everyone is answered and the store closes', async () => {
  const { store } = await openTestStore()
  const l = store.lock('x', { wait: Infinity })
  const held = await l.acquire('k')
  const waiter = l.hold('k', () => 1).then(() => 'granted', e => e)
  await settle()
  assert.throws(() => store._trapForTest(), e => e instanceof ClosedError && e.cause instanceof Error)
  const answer = await waiter
  assert.ok(answer instanceof ClosedError && answer instanceof HoldfastError, String(answer))
  assert.ok(answer.cause instanceof WebAssembly.RuntimeError, `cause: ${answer.cause}`)
  assert.equal(held.lost, true)
  assert.ok(held.signal.reason instanceof ClosedError && held.signal.reason.cause instanceof WebAssembly.RuntimeError)
  assert.match(held.signal.reason.message, /^lock x: key "k": the store closed after an internal error: /)
  assert.equal(store.closed, true)
  assert.throws(() => store.inspect(), ClosedError)
  await held.release()
})

test('LOCK-06: lease.signal stays quiet when the lease is released normally', async () => {
  const { store } = await openTestStore()
  const l = store.lock('x', { maxHold: 1_000 })
  let signal
  await l.hold('k', lease => {
    signal = lease.signal
  })
  assert.equal(signal.aborted, false)
  await store.close()
  assert.equal(signal.aborted, false, 'closing later does not abort a released lease')
  assert.ok(!(signal.reason instanceof LostError))
})

/**
 * `a` holds `k`; `b` waits for it 5 ms, and its wait falls due while nothing runs (`stall`): the next
 * hold makes the engine act on it first, and that hold may take `b`'s slot in the engine.
 */
async function waitRanOutUnattended() {
  const clock = stallClock(1_000)
  const { store } = await openTestStore({ clock })
  const l = store.lock('x', { maxHold: '1m' })
  const a = await l.acquire('k')
  const b = l.hold('k', { wait: 5 }, () => 'b ran')
  clock.stall(20)
  return { store, l, a, b }
}

test('LOCK-06: a wait that ran out while the event loop was busy rejects InUseError, and the hold asked in the call that ended it gets its own answer', async () => {
  // Before the fix `b` was never answered, and its timeout went to the new hold (`c` rejected "still
  // held after waiting Infinityms", or the store closed on an internal error).
  const { store, l, a, b } = await waitRanOutUnattended()
  const c = l.hold('k', { wait: Infinity }, lease => `c ran with ${lease.fence}`)
  const d = l.hold('other', () => 'd ran')
  await assert.rejects(b, e => e instanceof InUseError && /still held after waiting 5ms/.test(e.message))
  assert.equal(await d, 'd ran', 'a hold of a free key made then is answered its own outcome')
  assert.equal(await isSettled(c), false, 'c waits for a')
  await a.release()
  assert.match(await c, /^c ran with \d+$/)
  assert.equal(store.closed, false)
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

test('LOCK-06: a waiter whose wait ran out while the event loop was busy is answered once, when a later waiter\'s signal aborts', async () => {
  const { store, l, a, b } = await waitRanOutUnattended()
  const controller = new AbortController()
  const c = l.hold('k', { wait: Infinity, signal: controller.signal }, () => 'c ran')
  controller.abort('enough')
  await assert.rejects(b, InUseError)
  await assert.rejects(c, e => e instanceof CancelledError && e.cause === 'enough')
  await a.release()
  assert.equal(store.closed, false)
  assert.deepEqual(store.inspect(), [])
  await store.close()
})

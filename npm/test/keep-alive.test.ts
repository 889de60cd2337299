// Which of a store's timers keep the process alive (store/engine-host.ts # Timers keep the process alive
// while awaited), on a manual clock whose timers say whether they were ref'd: the store's one timer is
// kept while a promise it returned waits on it — a waiter in the engine's line, a hold under a maxHold,
// a pool claim unanswered — and let go when the last of them settles, however it settles. The same
// through chained timers (clock.ts # Long timers). tests/js/keep-alive.test.js runs real processes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openStore } from '../src/entry/node.js'
import { memoryStorage } from '../src/storage/storage.js'
import { manualClock } from '../src/testing.js'
import { keepAlive, setTimer, type Clock } from '../src/util/clock.js'
import { CancelledError, ClosedError, InUseError, LostError } from '../src/errors.js'

const DAY = 86_400_000

/** A timer of `refClock`: ref'd or not, as Node's. */
interface RefTimer {
  id: unknown
  kept: boolean
  ref(): void
  unref(): void
}

/** A manual clock whose timers start unref'd (as `systemClock`'s) and keep their ref state; `kept()`: the live ones kept. */
function refClock() {
  const clock = manualClock()
  const live = new Set<RefTimer>()
  const refs: Clock & { advance(ms: number): void; kept(): number; live(): number } = {
    now: () => clock.now(),
    setTimeout(fn, ms) {
      const timer: RefTimer = {
        id: undefined,
        kept: false,
        ref: () => void (timer.kept = true),
        unref: () => void (timer.kept = false),
      }
      timer.id = clock.setTimeout(() => {
        live.delete(timer)
        fn()
      }, ms)
      live.add(timer)
      return timer
    },
    clearTimeout(handle) {
      const timer = handle as RefTimer
      live.delete(timer)
      clock.clearTimeout(timer.id)
    },
    advance: ms => clock.advance(ms),
    kept: () => [...live].filter(t => t.kept).length,
    live: () => live.size,
  }
  return refs
}

const settle = () => new Promise(resolve => setImmediate(resolve))

test('a lease acquired and forgotten, with a maxHold: its timer keeps nothing alive; a waiter behind it does, until its wait runs out', async () => {
  const clock = refClock()
  const store = await openStore({ storage: memoryStorage(), clock })
  const locks = store.lock('k', { maxHold: '1m' })
  const lease = await locks.acquire('a')
  assert.equal(clock.live(), 1, 'the maxHold timer')
  assert.equal(clock.kept(), 0, 'a forgotten lease keeps nothing alive')
  const waiting = locks.acquire('a', { wait: 500 }).catch(e => e)
  assert.equal(clock.kept(), 1, 'a waiter keeps the timer')
  clock.advance(500)
  assert.ok((await waiting) instanceof InUseError)
  assert.equal(clock.kept(), 0, 'its wait ran out: the maxHold timer keeps nothing alive again')
  assert.equal(lease.lost, false)
  await store.close()
})

test('LOCK-03: a waiter without a wait limit keeps the timer of the maxHold ahead of it; granted, it keeps nothing', async () => {
  const clock = refClock()
  const store = await openStore({ storage: memoryStorage(), clock })
  const locks = store.lock('k', { maxHold: 300 })
  await locks.acquire('a')
  const next = locks.acquire('a', { wait: Infinity })
  assert.equal(clock.kept(), 1)
  clock.advance(300)
  const lease = await next
  assert.equal(clock.kept(), 0, 'granted: its own maxHold timer is a forgotten lease')
  assert.equal(clock.live(), 1)
  lease.release()
  await store.close()
})

test('LOCK-03: a hold under a maxHold keeps the timer while fn runs, and lets it go when the hold settles', async () => {
  const clock = refClock()
  const store = await openStore({ storage: memoryStorage(), clock })
  const locks = store.lock('k', { maxHold: 300 })
  let lost!: Promise<unknown>
  const held = locks.hold('a', lease => (lost = new Promise(resolve => lease.signal.addEventListener('abort', resolve, { once: true })))).catch(e => e)
  await settle()
  assert.equal(clock.kept(), 1, 'fn runs under the maxHold')
  clock.advance(300)
  await lost
  assert.ok((await held) instanceof LostError)
  assert.equal(clock.kept(), 0)
  // A tryHold's too, and a hold that waited for its key.
  const tried = locks.tryHold('b', () => new Promise(() => {}))
  void tried
  await settle()
  assert.equal(clock.kept(), 1, 'a tryHold under a maxHold')
  await store.close()
})

test('LOCK-06: every ending of a wait lets the timer go — its signal, the close — and a trap', async () => {
  const clock = refClock()
  const store = await openStore({ storage: memoryStorage(), clock })
  const locks = store.lock('k', { maxHold: '1m' })
  await locks.acquire('a')
  const controller = new AbortController()
  const cancelled = locks.acquire('a', { wait: 500, signal: controller.signal }).catch(e => e)
  assert.equal(clock.kept(), 1)
  controller.abort()
  assert.ok((await cancelled) instanceof CancelledError)
  assert.equal(clock.kept(), 0, 'cancelled')
  const closed = locks.acquire('a', { wait: Infinity }).catch(e => e)
  assert.equal(clock.kept(), 1)
  await store.close()
  assert.ok((await closed) instanceof ClosedError)
  assert.equal(clock.live(), 0, 'closed: no timer left')
  const other = await openStore({ storage: memoryStorage(), clock })
  const bounded = other.lock('k', { maxHold: '1m' })
  await bounded.acquire('a')
  const trapped = bounded.acquire('a', { wait: 500 }).catch(e => e)
  try {
    other._trapForTest()
  } catch {
    // the trap, thrown to its caller too
  }
  assert.ok((await trapped) instanceof ClosedError)
  assert.equal(clock.live(), 0, 'trapped: no timer left')
  await other.close().catch(() => {})
})

test('POOL-04: a claim that waits keeps the timer until it is answered', async () => {
  const clock = refClock()
  const store = await openStore({ storage: memoryStorage(), clock })
  const seats = store.pool('seats', { capacity: 1 })
  await seats.claim(1, { ttl: '1h' })
  await settle()
  assert.equal(clock.kept(), 0, 'a ttl nobody waits on keeps nothing alive')
  const waiting = seats.claim(1, { wait: 500 })
  assert.equal(clock.kept(), 1)
  clock.advance(500)
  assert.equal((await waiting).claimed, false)
  await settle()
  assert.equal(clock.kept(), 0)
  await store.close()
})

test('keepAlive on a chained timer (past 2^31 − 1 ms) keeps each of its links, the one set when the last fired too', () => {
  const clock = refClock()
  const chained = setTimer(clock, () => {}, 30 * DAY)
  assert.equal(clock.kept(), 0)
  keepAlive(chained)
  assert.equal(clock.kept(), 1)
  clock.advance(2 ** 31 - 1)
  assert.equal(clock.live(), 1, 'the next link')
  assert.equal(clock.kept(), 1, 'kept too')
  keepAlive(chained, false)
  assert.equal(clock.kept(), 0)
  // A manual clock's handle is a number, never taken for a runtime's timer id: nothing to do.
  keepAlive(manualClock().setTimeout(() => {}, 5))
})

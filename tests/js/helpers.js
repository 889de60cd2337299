// Shared by the JS tests. They import the package by its name, so they run against the package as
// `npm pack` built it and a user installed it (tests/js/run.sh sets that up).
import assert from 'node:assert/strict'
import { openStore, memoryStorage } from 'holdfast'
import { manualClock } from 'holdfast/testing'

/** A store on memory storage and a manual clock: time moves only when a test says so. */
export async function openTestStore(options = {}) {
  const clock = options.clock ?? manualClock()
  const store = await openStore({ storage: options.storage ?? memoryStorage(), clock })
  return { store, clock }
}

/** Lets every pending promise reaction run (a macrotask turn). */
export function settle() {
  return new Promise(resolve => setImmediate(resolve))
}

/** Watches `promise` from now: `outcome()`, after a macrotask turn, is `{ value }`, `{ error }`, or undefined (pending). */
export function watch(promise) {
  let outcome
  promise.then(
    value => (outcome = { value }),
    error => (outcome = { error }),
  )
  return async () => {
    await settle()
    return outcome
  }
}

/** A promise and its resolve, for holders that wait for a test's say-so. */
export function gate() {
  let open
  const promise = new Promise(resolve => (open = resolve))
  return { promise, open }
}

/**
 * A store on a storage whose writes can be held up. `useUpFences()` holds free keys until every fence
 * of the stored ceiling was used, the write of the next ceiling held up: the store has no fence left to
 * lend, and a grant waits for storage. `letWrite()` lets the write through.
 */
export async function storeOutOfFences() {
  const { storage, holdUp, letGo } = heldUpStorage()
  const store = await openStore({ storage })
  return {
    store,
    useUpFences() {
      holdUp()
      const other = store.lock('other')
      for (let i = 0; i < 1_100_000 && store._footprint()[1] === 0; i++) other.hold('x', () => {})
    },
    letWrite: letGo,
  }
}

/**
 * A storage in memory whose writes can be held up: from `holdUp()`, each write waits until `letGo()`
 * (which lets every held write through; nothing waits after it until the next `holdUp()`).
 */
export function heldUpStorage() {
  const values = new Map()
  let held
  const storage = {
    get: k => values.get(k),
    set: async (k, v) => {
      if (held) await held.promise
      values.set(k, v)
    },
  }
  return {
    storage,
    holdUp: () => {
      held = gate()
    },
    letGo: () => {
      held?.open()
      held = undefined
    },
  }
}

/**
 * The holds recorded in `seen` (`{ i, fence }`, as each entered) entered in the order they asked (`i`
 * from 0 to n-1), each with a fence above the one before, the first above `after`.
 */
export function inOrder(seen, n, after) {
  assert.deepEqual(
    seen.map(s => s.i),
    Array.from({ length: n }, (_, i) => i),
  )
  let last = after
  for (const { fence } of seen) {
    assert.ok(fence > last, `fence ${fence} after ${last}`)
    last = fence
  }
}

/** Whether a promise has settled yet (after letting reactions run). */
export async function isSettled(promise) {
  let done = false
  promise.then(() => (done = true), () => (done = true))
  await settle()
  return done
}

export { STRAY, collectUntil, fullGc } from './gc.js'

/**
 * A manual clock whose time can also move without running its timers, as for a process that was
 * paused (SIGSTOP) or blocked: `stall(ms)` moves time only, and the next `advance()` runs what fell
 * due meanwhile, late, earliest first. With `early`, every timer fires that many ms (less than 1)
 * before its time, as runtimes' timers may by a monotonic clock (they count whole milliseconds).
 * `fired` counts the timer callbacks run.
 */
export function stallClock(start = 0, { early = 0 } = {}) {
  let now = start
  let seq = 0
  const timers = new Map()
  const next = limit => {
    let best
    for (const entry of timers) if (entry[1].at <= limit && (!best || entry[1].at < best[1].at)) best = entry
    return best
  }
  const clock = {
    fired: 0,
    now: () => now,
    setTimeout(fn, ms) {
      timers.set(++seq, { at: now + Math.max(0, ms - early), fn })
      return seq
    },
    clearTimeout(handle) {
      timers.delete(handle)
    },
    stall(ms) {
      now += ms
    },
    advance(ms) {
      const until = now + ms
      for (let due = next(until); due; due = next(until)) {
        timers.delete(due[0])
        now = Math.max(now, due[1].at)
        clock.fired++
        due[1].fn()
      }
      now = until
    },
  }
  return clock
}

/**
 * `workerStore` outside workerd: its module itself, from the installed package (holdfast/cloudflare
 * answers "workerd only" outside workerd), to run it on a test clock over `fakeObjects`.
 */
export function workerStoreModule() {
  return import(new URL('./node_modules/holdfast/dist/cloudflare/worker-store.js', import.meta.url).href)
}

/**
 * A Durable Object namespace for `workerStore` whose objects grant every key at once, and answer each
 * renewal at once as `objects.renew` says: `'ok'` (the lease's ttl), `'fail'` (the call throws, as a
 * dropped connection's would) or `'lost'`. `objects.renewals` has the time of each renewal asked.
 */
export function fakeObjects(clock) {
  let fence = 0
  const ttls = new Map()
  const objects = { renew: 'ok', renewals: [] }
  const stub = {
    async acquire(_kind, _name, _key, options) {
      const lease = `lease-${++fence}`
      ttls.set(lease, options.ttl)
      return { ok: { lease, fence, ttl: options.ttl, revokeIn: options.maxHold } }
    },
    async tryAcquire(kind, name, key, options) {
      return stub.acquire(kind, name, key, options)
    },
    async renew(lease) {
      objects.renewals.push(clock.now())
      if (objects.renew === 'fail') throw new Error('the call failed')
      if (objects.renew === 'lost') return { error: { code: 'lost', message: 'past its ttl' } }
      return { ok: { ttl: ttls.get(lease), revokeIn: -1 } }
    },
    async release() {
      return { ok: true }
    },
    async cancel() {
      return { ok: true }
    },
  }
  objects.namespace = { idFromName: name => name, get: () => stub }
  return objects
}

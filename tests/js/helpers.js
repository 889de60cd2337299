// Shared by the JS tests. They import the package by its name, so they run against the package as
// `npm pack` built it and a user installed it (tests/run-package-tests.sh sets that up).
import { openStore, memoryStorage } from 'holdfast'
import { manualClock } from 'holdfast/testing'
import v8 from 'node:v8'
import vm from 'node:vm'

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

/** A promise and its resolve, for holders that wait for a test's say-so. */
export function gate() {
  let open
  const promise = new Promise(resolve => (open = resolve))
  return { promise, open }
}

/** Whether a promise has settled yet (after letting reactions run). */
export async function isSettled(promise) {
  let done = false
  promise.then(() => (done = true), () => (done = true))
  await settle()
  return done
}

let collect
/**
 * A full garbage collection. Node: `gc`, exposed at run time, taken once (each `runInNewContext`
 * makes a context, which would be counted); Bun: `Bun.gc`.
 */
export function fullGc() {
  if (collect === undefined) {
    if (typeof Bun !== 'undefined') collect = () => Bun.gc(true)
    else {
      v8.setFlagsFromString('--expose-gc')
      collect = vm.runInNewContext('gc')
    }
  }
  collect()
  collect()
}

/**
 * Collects garbage and lets finalizers run (they come in a later turn) until `done()` holds, at most
 * `rounds` times; answers whether it held.
 */
export async function collectUntil(done, rounds = 50) {
  for (let i = 0; i < rounds && !done(); i++) {
    fullGc()
    await settle()
    await new Promise(resolve => setTimeout(resolve, 1))
  }
  return done()
}

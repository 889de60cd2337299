// Shared by the suites (the runners copy tests/shared/*.js into each suite's project).
import v8 from 'node:v8'
import vm from 'node:vm'

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
 * How many objects a full collection may keep only because a stale word on the native stack still
 * holds their address: JSC (Bun) scans the stack conservatively, word by word; V8 knows its roots.
 * A test that counts many objects collected allows that many stragglers under Bun, no more: a leak
 * keeps every one of them.
 */
export const STRAY = typeof Bun !== 'undefined' ? 2 : 0

/**
 * Collects garbage and lets finalizers run (they come in a later turn) until `done()` holds, at most
 * `rounds` times; answers whether it held.
 */
export async function collectUntil(done, rounds = 50) {
  for (let i = 0; i < rounds && !done(); i++) {
    fullGc()
    await new Promise(resolve => setImmediate(resolve))
    await new Promise(resolve => setTimeout(resolve, 1))
  }
  return done()
}

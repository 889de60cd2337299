/**
 * The async context the holds of a task are tracked in (LOCK-04): the part of `AsyncLocalStorage` the
 * stores use. What a context holds is a lease: that of the innermost hold the context is inside of,
 * which knows its resource and the hold around it (`_parent`) once its fn started (`Lease._enter`);
 * so entering a hold makes no object. A runtime's entry makes one (`runtime/node/runtime.ts`, the Deno
 * and workerd entries); where a runtime has none, LOCK-04 is not enforced.
 */

import type { Lease } from './lease.js'

/** The part of `AsyncLocalStorage` the store uses. */
export interface ContextStorage {
  getStore(): Lease | undefined
  /** `fn(arg)` inside `store` (as `AsyncLocalStorage.run(store, fn, arg)`: no closure per hold). */
  run<A, R>(store: Lease, fn: (arg: A) => R, arg: A): R
  /**
   * Where set (Node and Bun): `enterWith`, used only at the start of a microtask continuation (a hold
   * that waited, resuming), where the context entered ends with the job — as `run` would restore it,
   * but without making the prior context anew (Node 24's `run` copies the context twice).
   */
  readonly enterInJob?: (store: Lease) => void
  /**
   * Where set (Node and Bun, with `enterInJob`): the caller's whole async context, kept by a hold that
   * waits so that its fn can run in it when the key is handed over, from within the release that hands
   * it over (see `store/waiters.ts` # Handing a key over, and `handOverIn` in run-in-lease.ts).
   */
  readonly capture?: () => Scope
}

/**
 * An async context kept for later: an `AsyncResource` (Node), or the function
 * `AsyncLocalStorage.snapshot()` answers (Bun, where it is the cheaper of the two to make: it reads the
 * context once, where Bun's `AsyncResource` also checks its arguments and turns on the async hooks).
 */
export type Scope = KeptResource | Snapshot

/** An `AsyncResource`: runs `fn` with `thisArg` and `args` in the context it was made in. */
export interface KeptResource {
  runInAsyncScope<A extends unknown[], R>(fn: (...args: A) => R, thisArg: unknown, ...args: A): R
}

/** What `AsyncLocalStorage.snapshot()` answers: runs `fn(...args)` in the context it was made in. */
export type Snapshot = <A extends unknown[], R>(fn: (...args: A) => R, ...args: A) => R

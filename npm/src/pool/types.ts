/**
 * The types of pools (issue #16): options, what a claim answers, and what `inspect()` lists of a pool.
 * A leaf: it imports nothing of the package but the shared `Duration`.
 */

import type { Duration } from '../types.js'

export interface PoolOptions {
  /**
   * How many units the pool has (1 to 2^53−1); fixed by the pool's first use (`resize` changes it).
   * Without it (`store.pool(name)`, or `store.pool(name, {})`), the handle names a pool that exists, at
   * whatever capacity it has now; one that does not is an `InvalidError` ("no such pool"): at once in
   * process, at the handle's first call over a connection, from a Worker or on Redis. Optional, so that
   * code that may or may not know the capacity passes its options as they are, on every store.
   */
  capacity?: number
}

export interface ClaimOptions {
  /**
   * The claim's id (1 to 128 bytes): asked again, it answers the first claim's outcome and never takes
   * units twice, for 24 hours after the claim (POOL-03). Without one, the store draws one nobody can ask
   * again with, carried only by the answer (`claim.id`): a claim kept whose answer was lost (the process
   * killed mid-write, a wasm trap) cannot be released, and holds its units until its `ttl`, or for good.
   */
  id?: string
  /** How long to wait in line for units released meanwhile (default 0: answer at once; Infinity: no limit). */
  wait?: Duration
  /** Aborting it ends the wait with a `CancelledError` (and gives back units taken but not yet answered). */
  signal?: AbortSignal
  /**
   * The units come back by themselves this long after the claim unless `claim.confirm()` comes first
   * (more than 0, up to 30 days).
   */
  ttl?: Duration
}

/** A pool as `inspect()` lists it, beside the busy keys. */
export interface PoolInfo {
  kind: 'pool'
  name: string
  capacity: number
  remaining: number
  /** Open claims (holding units). */
  claims: number
  /** Claims waiting in line. */
  waiting: number
}

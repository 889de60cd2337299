/**
 * The capacity a pool handle's frames carry, for the stores that send it to someone who keeps the
 * pool (over a connection, `pool/client.ts`; in Worker code, `cloudflare/worker-pools.ts`).
 *
 * A handle's frames carry its capacity until one of them was answered: the keeper makes the pool with
 * it, or refuses another than the pool's, as `store.pool()` does. Then they carry 0 (the pool as it
 * is), so that a resize by anyone does not make the handle's later frames invalid. A handle made
 * without a capacity (an existing pool, by name) carries 0 from the start.
 */

import type { Pool } from './pool.js'

export class HandleCapacities {
  /** Per handle: the capacity it was made with, and whether a frame of it was answered. */
  readonly #of = new WeakMap<Pool, { capacity: number; checked: boolean }>()

  /** `pool` was made with `capacity` (0: none, an existing pool). */
  made(pool: Pool, capacity: number): void {
    this.#of.set(pool, { capacity, checked: capacity === 0 })
  }

  /** The capacity a frame of `pool` carries now. */
  carried(pool: Pool): number {
    const c = this.#of.get(pool)
    return c && !c.checked ? c.capacity : 0
  }

  /** A frame of `pool` was answered: the keeper has the pool, with that capacity. */
  answered(pool: Pool): void {
    const c = this.#of.get(pool)
    if (c) c.checked = true
  }
}

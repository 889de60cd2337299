/**
 * The permits of a semaphore's key the store granted itself (lent-fences.ts # Semaphores): the leases
 * holding it and the line the store keeps for it. It stands for the key in `Resource.keys` as a lock's
 * key stands there as its lease.
 *
 * Invariants:
 * - `holders` are the leases holding the key, in grant order (so in fence order), never more than
 *   the semaphore's limit, never none: a key whose last holder lets go with nobody in line is idle,
 *   and forgotten.
 * - Nobody waits while a permit is free: `line` is empty unless every permit is held (a release with
 *   a line hands its permit to the first in it, within the release).
 */

import type { Lease } from '../handle/lease.js'
import { Line } from '../util/line.js'

export class Permits {
  /** The leases holding the key, in grant order (a `Set` keeps the order things were added in). */
  readonly holders = new Set<Lease>()
  /** The holds waiting for a permit without a time limit (made at the first). */
  line: Line<unknown> | undefined = undefined

  /** The line, made if it was not yet. */
  lineUp(): Line<unknown> {
    return (this.line ??= new Line<unknown>())
  }
}

/**
 * Keys the store grants itself, from fences the engine lent it: no call into wasm.
 *
 * # Keys the store grants itself
 * A lock's free key, held without `maxHold`, is granted on this side: its fence the next of a block
 * the engine lent (`core.lend`, in the buffer at `FENCE_NEXT`..`FENCE_END`), its record the lease
 * itself in `Resource.keys` in place of a key id, its release a delete. Its request id is negative,
 * `SELF_GRANTED - the place of its resource id` (the engine's ids are not), so that its release finds
 * its resource without a lookup. The engine takes the block back at the start of its next call, from
 * the first fence not taken, so fences stay in grant order whoever granted them (calling rule 3).
 *
 * The first request the key's holder does not answer alone (a hold that would wait, a hold over a
 * connection) hands the holding to the engine first (`EngineHost.adopt`: a busy key with this lease
 * as its holder), and everything after goes the engine's way until the key is idle again. A key the
 * store granted itself is never known to the engine, so nothing there can be due for it: only a
 * maxHold or a ttl sets a deadline, and those holds go to the engine.
 *
 * These leases answer to this part (`LeaseOwner`): a release is one call from `Lease._end`, a delete,
 * or, once adopted, the host's release.
 */

import type { ClosedError } from '../errors.js'
import { Lease, type LeaseOwner } from '../handle/lease.js'
import type { Lock } from '../handle/lock.js'
import { FENCE_END, FENCE_NEXT } from './abi.js'
import type { EngineHost, SelfGrants } from './engine-host.js'
import type { Resource } from './key-ids.js'

/** How many fences to borrow at once: one call into wasm per this many keys granted. */
const LEND = 4096
/** The request id of a lease the store granted itself: `SELF_GRANTED - the place of its resource id`. */
const SELF_GRANTED = -1

export class LentFences implements SelfGrants, LeaseOwner {
  readonly #host: EngineHost
  /** The names in use by the place of their ids (`Names.byId`). */
  readonly #byId: (Resource | undefined)[]

  constructor(host: EngineHost) {
    this.#host = host
    this.#byId = host.names.byId
  }

  /**
   * Grants a free key with the next lent fence, borrowing a block when none is left; `undefined` when
   * the engine has no fence to lend (its grant waits for storage).
   */
  grant(handle: Lock, resource: Resource, key: string): Lease | undefined {
    let buf: Float64Array | undefined = this.#host.view()
    let fence = buf[FENCE_NEXT]!
    if (!(fence < buf[FENCE_END]!)) {
      buf = this.#borrow()
      if (buf === undefined) return undefined
      fence = buf[FENCE_NEXT]!
    }
    buf[FENCE_NEXT] = fence + 1
    const lease = new Lease(this, handle, key, fence, SELF_GRANTED - (resource.id >>> 0))
    lease._since = this.#host.turnStamp()
    resource.keys.set(key, lease)
    return lease
  }

  /** Borrows the next block of fences: the buffer, or `undefined` when the engine lends none. */
  #borrow(): Float64Array | undefined {
    let lent: number
    try {
      lent = this.#host.core.lend(LEND)
    } catch (error) {
      throw this.#host.trap(error)
    }
    return lent > 0 ? this.#host.view() : undefined
  }

  /**
   * @internal Lets a lease's key go (called by `Lease`, once). Never adopted (`req` < 0), nobody waits for it
   * and the engine never knew it: a delete. Adopted, the engine's release.
   */
  _release(req: number, lease: Lease, fromHold: boolean): void {
    if (req >= 0) return this.#host._release(req, lease, fromHold)
    const resource = this.#byId[SELF_GRANTED - req]!
    const keys = resource.keys
    if (keys.get(lease.key) === lease) {
      keys.delete(lease.key)
      // A lease that outlived its handles: its name may be unused now (see names.ts).
      if (resource.pin === undefined) this.#host.names.forgetIfUnused(resource)
    }
  }

  /** @internal The clock (a lease the store granted itself has no deadline; once adopted, none either: no maxHold). */
  _now(): number {
    return this.#host.clock.now()
  }

  /** @internal */
  _overdue(): void {
    this.#host._overdue()
  }

  /** The leases of the keys the store granted itself, resource by resource. */
  *leases(): IterableIterator<Lease> {
    for (const resource of this.#byId) {
      if (!resource) continue
      for (const record of resource.keys.values()) if (typeof record !== 'number') yield record
    }
  }

  loseAll(reason: ClosedError): void {
    const lost = [...this.leases()]
    // Forgotten first: a listener of a lease's signal may ask about its key.
    for (const lease of lost) this.#byId[SELF_GRANTED - lease._req]!.keys.delete(lease.key)
    for (const lease of lost) lease._lose(reason)
  }
}

/**
 * The names a store has in use, and forgetting those nobody uses.
 *
 * A name costs an entry here (`byId`: its `Resource`, with its busy keys) and in the engine only while
 * something refers to it: a busy key (in the engine, or granted by the store itself: both are in
 * `Resource.keys`, and a waiter or a request over a connection is on a busy key) or a live handle.
 * Then the store forgets it (`forgetIfUnused`, `core.forget`); asked for again, the name is
 * registered anew. Two `Resource`s of one name never exist at once, or a key the store granted itself
 * could be granted twice: a name is forgotten only when none of its keys is busy and no handle of it
 * can be reached.
 *
 * Handles are the user's, so the store cannot see them go: every handle of a name holds the name's
 * *pin* (one object), which the store watches through a `WeakRef` and a `FinalizationRegistry`.
 * `Resource.pin` is `undefined` once the pin was collected (or for a name only the server asked for:
 * its handles, one per hold over a connection, pin nothing). A name is forgotten where it may have
 * become unused, never on the hot path of a name in use: when the pin is collected (idle names), and
 * when a key goes idle while the name is not pinned (a lease outliving its handles). Without
 * `FinalizationRegistry` a pinned name is kept, as every name was before.
 */

import type { ClosedError } from '../errors.js'
import type { Kind } from '../types.js'
import { type Resource, SlotKeyIds } from './key-ids.js'

/**
 * What forgetting a name asks of the engine's host (engine-host.ts), declared here, by the side that
 * calls, so that this module imports nothing of the host's.
 */
export interface Forgetting {
  /** Set once the store closed: nothing is forgotten any more (the engine is gone). */
  readonly closed: ClosedError | undefined
  /** Forgets the engine's resource `id`. */
  forget(id: number): void
}

export class Names {
  /** Every name in use by the place of its resource id (its low 32 bits: dense, reused once forgotten). */
  readonly byId: (Resource | undefined)[] = []
  readonly #engine: Forgetting
  /** Watches the pins of handles; `undefined` where the runtime has no `FinalizationRegistry`. */
  readonly #pins =
    typeof FinalizationRegistry === 'function' && typeof WeakRef === 'function'
      ? new FinalizationRegistry<Resource>(resource => this.#unpinned(resource))
      : undefined

  constructor(engine: Forgetting) {
    this.#engine = engine
  }

  /** The record of the engine's resource `id`: the one in use, or a new one. */
  named(id: number, kind: Kind, name: string, limit: number): Resource {
    const index = id >>> 0
    let resource = this.byId[index]
    if (!resource) {
      resource = { id, kind, name, limit, keys: new SlotKeyIds() }
      this.byId[index] = resource
    }
    return resource
  }

  /** The pin of `resource`'s handles: the one alive, or a new one, watched. */
  pin(resource: Resource): object {
    let pin = resource.pin?.deref()
    if (pin === undefined) {
      const made = (pin = {})
      if (this.#pins === undefined) resource.pin = { deref: () => made }
      else {
        resource.pin = new WeakRef(made)
        this.#pins.register(made, resource)
      }
    }
    return pin
  }

  /** A pin of `resource` was collected: unless a newer one lives, no handle of it is left. */
  #unpinned(resource: Resource): void {
    if (resource.pin === undefined || resource.pin.deref() !== undefined) return
    resource.pin = undefined
    this.forgetIfUnused(resource)
  }

  /** Forgets a name nothing refers to any more: no busy key, no handle. */
  forgetIfUnused(resource: Resource): void {
    if (this.#engine.closed || resource.keys.size !== 0 || resource.pin?.deref() !== undefined) return
    const index = resource.id >>> 0
    if (this.byId[index] !== resource) return // forgotten already
    this.byId[index] = undefined
    this.#engine.forget(resource.id)
  }

  /** How many names are in use (for `_footprint`). */
  count(): number {
    let names = 0
    for (const resource of this.byId) if (resource) names++
    return names
  }
}

/**
 * The names a store's client has handles of (a `RemoteStore`, a `WorkerStore`): one `Resource` per
 * lock or semaphore name, which every handle of the name shares. There it is an identity, for
 * LOCK-04's check of a hold inside its own hold (the resource of a lease the context is inside of, against
 * the handle's), and the limit every handle of a semaphore held here must agree on, as in process; the
 * server keeps the keys. So it is kept only while something holds it — a handle, or a
 * lease (its `_resource`) — and a
 * name no longer used costs nothing (#13 item 5): a name asked for after its `Resource` was collected
 * gets a new one, which nothing can confuse with the old (nothing refers to the old).
 */

import { InvalidError } from '../errors.js'
import type { Lease } from './lease.js'
import type { Resource as SharedResource } from '../types.js'

/** A resource as this package's stores keep it: a key granted without the engine stands as its lease. */
type Resource = SharedResource<Lease>

export class ResourceNames {
  /** By `kind name`; weakly where the runtime can (strongly, as before, where it cannot). */
  readonly #byName = new Map<string, { deref(): Resource | undefined }>()
  /** Takes out the entry of a collected resource, unless a newer one of the name took its place. */
  readonly #gone =
    typeof FinalizationRegistry === 'function' && typeof WeakRef === 'function'
      ? new FinalizationRegistry<string>(id => {
          if (this.#byName.get(id)?.deref() === undefined) this.#byName.delete(id)
        })
      : undefined

  /**
   * The resource of `name`, made if none is held. A semaphore held here with another limit is an
   * `InvalidError`, worded as the engine words it in process: the server (or Redis, or the object)
   * judges the limit only while a key of the name is busy, or not at all once it forgot an idle name,
   * so without this check a second handle would be taken while the first lives, and the first's holds
   * refused later.
   */
  get(kind: 'lock' | 'semaphore', name: string, limit: number): Resource {
    const id = `${kind} ${name}`
    let resource = this.#byName.get(id)?.deref()
    if (resource !== undefined && resource.limit !== limit) {
      throw new InvalidError(`${id}: limit ${limit} differs from its limit ${resource.limit}`)
    }
    if (resource === undefined) {
      const made: Resource = (resource = { id: -1, kind, name, limit, keys: new Map() })
      if (this.#gone === undefined) this.#byName.set(id, { deref: () => made })
      else {
        this.#byName.set(id, new WeakRef(made))
        this.#gone.register(made, id)
      }
    }
    return resource
  }

  /** How many names have an entry (for tests). */
  get size(): number {
    return this.#byName.size
  }
}

/**
 * A store's record of a resource's busy keys: each key string to the engine's id of the key, or to the
 * lease of a key the store granted itself (see lent-fences.ts). A key is in it exactly while it is busy;
 * the engine says when a key went idle, and the store forgets it then (see engine-host.ts `idle`).
 */

import type { Lease } from '../handle/lease.js'
import type { KeyIds as SharedKeyIds, Resource as SharedResource } from '../types.js'

/** A resource as the store keeps it: a key the store granted itself stands as its lease. */
export type Resource = SharedResource<Lease>
export type KeyIds = SharedKeyIds<Lease>

/**
 * A store's busy keys of one resource: the first in a slot of its own, any others in a `Map`. A key
 * that is held, let go and held again (or many keys, one after another) then costs no `Map` insert
 * and delete per hold, which on V8 rehash the table every few operations.
 */
export class SlotKeyIds implements KeyIds {
  #key: string | undefined = undefined
  #id: number | Lease = 0
  readonly #more = new Map<string, number | Lease>()

  get size(): number {
    return (this.#key === undefined ? 0 : 1) + this.#more.size
  }

  get(key: string): number | Lease | undefined {
    if (key === this.#key) return this.#id
    return this.#more.size === 0 ? undefined : this.#more.get(key)
  }

  has(key: string): boolean {
    return key === this.#key || (this.#more.size !== 0 && this.#more.has(key))
  }

  set(key: string, id: number | Lease): this {
    // `size` first: a `Map` lookup hashes the key string (flattening it, if it was built by
    // concatenation), which on Node 26 cost a quarter of a hold of a new key (W2).
    if (key === this.#key || (this.#key === undefined && (this.#more.size === 0 || !this.#more.has(key)))) {
      this.#key = key
      this.#id = id
    } else this.#more.set(key, id)
    return this
  }

  delete(key: string): boolean {
    if (key === this.#key) {
      this.#key = undefined
      this.#id = 0
      return true
    }
    return this.#more.delete(key)
  }

  clear(): void {
    this.#key = undefined
    this.#id = 0
    this.#more.clear()
  }

  *values(): IterableIterator<number | Lease> {
    if (this.#key !== undefined) yield this.#id
    yield* this.#more.values()
  }
}

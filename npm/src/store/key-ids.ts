/**
 * A store's record of a resource's busy keys: each key string to the engine's id of the key, or to the
 * lease of a lock's key the store granted itself, or to the permits of a semaphore's key the store
 * granted itself (see lent-fences.ts, permits.ts). A key is in it exactly while it is busy;
 * the engine says when a key went idle, and the store forgets it then (see engine-host.ts `idle`).
 */

import type { Lease } from '../handle/lease.js'
import type { KeyIds as SharedKeyIds, Resource as SharedResource } from '../types.js'
import { type HashTable, stringTable } from '../util/hash-table.js'
import type { Permits } from './permits.js'

/**
 * What stands for a key the store granted itself: a lock's key its lease, a semaphore's its permits
 * (only a resource of a limit above 1 has those).
 */
export type SelfHeld = Lease | Permits
/** A resource as the store keeps it. */
export type Resource = SharedResource<SelfHeld>
export type KeyIds = SharedKeyIds<SelfHeld>

/**
 * A store's busy keys of one resource: the first in a slot of its own, any others in a string `HashTable`
 * (made at the first). A key that is held, let go and held again (or many keys, one after another)
 * then costs no table work at all; and keys that go busy and idle beside others (many workers on a
 * few keys) cost no `Map` insert and delete, which on V8 rebuild its table every few operations and
 * leave the scavenges a chain of old tables to keep (see util/hash-table.ts). `values()` lists the slot's
 * key first, then the others in the table's order.
 */
export class SlotKeyIds implements KeyIds {
  #key: string | undefined = undefined
  #id: number | SelfHeld = 0
  #more: HashTable<string, number | SelfHeld> | undefined = undefined

  get size(): number {
    return (this.#key === undefined ? 0 : 1) + (this.#more?.size ?? 0)
  }

  get(key: string): number | SelfHeld | undefined {
    if (key === this.#key) return this.#id
    return this.#more?.get(key)
  }

  has(key: string): boolean {
    return key === this.#key || this.#more?.has(key) === true
  }

  set(key: string, id: number | SelfHeld): this {
    // The table's `has` looks at its size first: hashing the key string (flattening it, if it was
    // built by concatenation) cost a quarter of a hold of a new key on Node 26 (W2).
    if (key === this.#key || (this.#key === undefined && (this.#more === undefined || !this.#more.has(key)))) {
      this.#key = key
      this.#id = id
    } else (this.#more ??= stringTable()).set(key, id)
    return this
  }

  delete(key: string): boolean {
    if (key === this.#key) {
      this.#key = undefined
      this.#id = 0
      return true
    }
    return this.#more?.delete(key) === true
  }

  clear(): void {
    this.#key = undefined
    this.#id = 0
    this.#more?.clear()
  }

  *values(): IterableIterator<number | SelfHeld> {
    if (this.#key !== undefined) yield this.#id
    if (this.#more !== undefined) yield* this.#more.values()
  }
}

/**
 * A table of values by id (32 hex digits, as request and lease ids are), for the served store's
 * records of live holds, which gain and lose an entry on every hold over a connection.
 *
 * Why not a `Map`: on V8 a `Map` with an entry added and one deleted on every operation rehashes its
 * table every few dozen of them, and each table it leaves points to the next (for iterators under
 * way). Once a table lived long enough to be in the old generation (every mark-compact puts it there),
 * the scavenger keeps whatever that dead old table reaches: every later table, and the entries each
 * held, survive and are promoted until the next mark-compact. A served store's server (R3 of the
 * benchmark, Node 24) then promoted megabytes per scavenge: scavenges 5-20 times longer, a heap growing
 * to 40 MB between mark-compacts, and fresh pages faulted in for it. The arrays here leave no such link:
 * a table outgrown is garbage like any other.
 *
 * Invariants:
 * - Linear probing in a power-of-two table at most half full; a deletion shifts the entries after it
 *   back (no tombstones), so a lookup stops at the first empty slot.
 * - The slot of an id comes from its 128 bits mixed with a seed drawn at random per table: ids a
 *   client chooses (request ids) cannot be picked to fall into one run of slots.
 * - Only 32-hex-digit ids are kept (either case, compared as given); any other string is never found
 *   and cannot be set.
 */

import { hexDigit } from '../remote/request.js'

const MIN = 16

export class IdTable<V> {
  #keys: (string | undefined)[]
  #values: (V | undefined)[]
  #homes: Int32Array
  #mask: number
  #size = 0
  readonly #seed: Int32Array

  constructor() {
    this.#seed = crypto.getRandomValues(new Int32Array(4))
    this.#keys = new Array<string | undefined>(MIN).fill(undefined)
    this.#values = new Array<V | undefined>(MIN).fill(undefined)
    this.#homes = new Int32Array(MIN)
    this.#mask = MIN - 1
  }

  get size(): number {
    return this.#size
  }

  get(id: string): V | undefined {
    const at = this.#find(id)
    return at < 0 ? undefined : this.#values[at]
  }

  has(id: string): boolean {
    return this.#find(id) >= 0
  }

  /** Sets `id`'s value; false (and nothing set) when `id` is not 32 hex digits. */
  set(id: string, value: V): boolean {
    const h = this.#hash(id)
    if (h < 0) return false
    const keys = this.#keys
    const mask = this.#mask
    let i = h & mask
    for (let k = keys[i]; k !== undefined; k = keys[i]) {
      if (k === id) {
        this.#values[i] = value
        return true
      }
      i = (i + 1) & mask
    }
    keys[i] = id
    this.#values[i] = value
    this.#homes[i] = h
    if (++this.#size * 2 > keys.length) this.#resize(keys.length * 2)
    return true
  }

  delete(id: string): boolean {
    let i = this.#find(id)
    if (i < 0) return false
    const keys = this.#keys
    const values = this.#values
    const homes = this.#homes
    const mask = this.#mask
    // Shift back each entry after it that would no longer be found past the emptied slot.
    for (let j = (i + 1) & mask; keys[j] !== undefined; j = (j + 1) & mask) {
      const home = homes[j]! & mask
      // The entry at j stays when its home lies cyclically in (i, j].
      if (i <= j ? i < home && home <= j : i < home || home <= j) continue
      keys[i] = keys[j]
      values[i] = values[j]
      homes[i] = homes[j]!
      i = j
    }
    keys[i] = undefined
    values[i] = undefined
    this.#size--
    if (keys.length > MIN && this.#size * 8 < keys.length) this.#resize(keys.length / 2)
    return true
  }

  /** The slot holding `id`, or -1. */
  #find(id: string): number {
    if (this.#size === 0) return -1
    const h = this.#hash(id)
    if (h < 0) return -1
    const keys = this.#keys
    const mask = this.#mask
    let i = h & mask
    for (let k = keys[i]; k !== undefined; k = keys[i]) {
      if (k === id) return i
      i = (i + 1) & mask
    }
    return -1
  }

  /** `id`'s hash (31 bits), or -1 when it is not 32 hex digits. */
  #hash(id: string): number {
    if (id.length !== 32) return -1
    const seed = this.#seed
    let h = 0
    for (let w = 0; w < 4; w++) {
      let word = 0
      for (let i = 8 * w; i < 8 * w + 8; i++) {
        const d = hexDigit(id, i)
        if (d < 0) return -1
        word = (word << 4) | d
      }
      // murmur3's mixing of a block, over each word with its share of the seed.
      let k = Math.imul(word ^ seed[w]!, 0xcc9e2d51)
      k = Math.imul((k << 15) | (k >>> 17), 0x1b873593)
      h ^= k
      h = Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64
    }
    h ^= h >>> 16
    h = Math.imul(h, 0x85ebca6b)
    h ^= h >>> 13
    h = Math.imul(h, 0xc2b2ae35)
    h ^= h >>> 16
    return h & 0x7fffffff
  }

  #resize(capacity: number): void {
    const keys = this.#keys
    const values = this.#values
    const homes = this.#homes
    this.#keys = new Array<string | undefined>(capacity).fill(undefined)
    this.#values = new Array<V | undefined>(capacity).fill(undefined)
    this.#homes = new Int32Array(capacity)
    this.#mask = capacity - 1
    const mask = this.#mask
    for (let j = 0; j < keys.length; j++) {
      const k = keys[j]
      if (k === undefined) continue
      let i = homes[j]! & mask
      while (this.#keys[i] !== undefined) i = (i + 1) & mask
      this.#keys[i] = k
      this.#values[i] = values[j]
      this.#homes[i] = homes[j]!
    }
  }
}

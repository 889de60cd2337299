/**
 * A hash table for entries that come and go on every operation: a client's frames awaiting their
 * answer, its holds and its leases (by integer id, remote/client.ts), and a resource's busy keys (by
 * key string, store/key-ids.ts). Open addressing with linear probing, and no tombstones: a delete
 * shifts back the entries after it that probed past it, so a set after a delete reuses the slot.
 *
 * Why not a `Map`: on V8, a `Map` that gains and loses an entry on every operation rehashes into a new
 * table every few operations and leaves the old ones chained to it (for iterators that may still walk
 * them); after each mark-compact the scavenges keep that chain alive and promote it (megabytes per
 * scavenge, scavenges of 4-24 ms instead of ~1 ms, on a served store's client and server: #17). Here
 * the arrays are made only when the table grows, or shrinks after most of its entries left, and a
 * delete writes nothing but slots.
 *
 * The two kinds differ only in their hash, chosen when the table is made (`intTable`, `stringTable`);
 * keys are compared with `===`. One class serves both, so its code has one shape per process that
 * uses one kind (a client or a server), and is written once.
 *
 * Invariants:
 * - The capacity is a power of two, at least the table's least capacity (8 or more).
 * - A slot is full iff its value is not `undefined` (no value stored is `undefined`); `keys[i]` and
 *   `hashes[i]` are meaningful only for a full slot.
 * - Every entry is found from its home slot (`hash & mask`) by walking full slots forward (wrapping):
 *   no empty slot lies between an entry's home slot and its slot. Backward shift keeps this.
 * - At most half the slots are full (the table doubles before that). It shrinks when at most an eighth
 *   are, to a quarter full at most, down to its least capacity: a burst leaves no large table behind,
 *   and a size near a bound does not make it grow and shrink in turn.
 * - The order of `values()` and `drain()` is slot order, not insertion order.
 */

export type Hash<K> = (key: K, seed: number) => number

export class HashTable<K, V> {
  #keys: (K | undefined)[]
  #values: (V | undefined)[]
  // Each entry's hash, kept so that a shift or a resize never hashes a key (a string) again.
  #hashes: Int32Array
  #mask: number
  #size = 0
  readonly #least: number
  readonly #hash: Hash<K>
  readonly #seed: number

  /** Prefer `intTable()` and `stringTable()`. `capacity`: the least number of slots (a power of two, 8 or more). */
  constructor(hash: Hash<K>, seed: number, capacity: number) {
    this.#hash = hash
    this.#seed = seed
    this.#least = fit(capacity, 8)
    this.#keys = emptySlots<K>(this.#least)
    this.#values = emptySlots<V>(this.#least)
    this.#hashes = new Int32Array(this.#least)
    this.#mask = this.#least - 1
  }

  get size(): number {
    return this.#size
  }

  /** @internal The number of slots (for tests of growth and shrinking). */
  get capacity(): number {
    return this.#mask + 1
  }

  get(key: K): V | undefined {
    // The size first: an empty table answers without hashing (flattening a key string built by
    // concatenation cost a quarter of a hold of a new key on Node 26, W2).
    if (this.#size === 0) return undefined
    const i = this.#find(key, this.#hash(key, this.#seed))
    return i < 0 ? undefined : this.#values[i]
  }

  has(key: K): boolean {
    return this.#size !== 0 && this.#find(key, this.#hash(key, this.#seed)) >= 0
  }

  /** Keeps `value` (never `undefined`) under `key`, in place of the value it had. */
  set(key: K, value: V): void {
    const h = this.#hash(key, this.#seed)
    const keys = this.#keys
    const values = this.#values
    const mask = this.#mask
    let i = h & mask
    for (; values[i] !== undefined; i = (i + 1) & mask) {
      if (keys[i] === key) {
        values[i] = value
        return
      }
    }
    keys[i] = key
    values[i] = value
    this.#hashes[i] = h
    if (++this.#size * 2 > mask + 1) this.#resize((mask + 1) * 2)
  }

  /** Forgets `key`; answers its value, or `undefined` when it had none. */
  take(key: K): V | undefined {
    if (this.#size === 0) return undefined
    let i = this.#find(key, this.#hash(key, this.#seed))
    if (i < 0) return undefined
    const keys = this.#keys
    const values = this.#values
    const hashes = this.#hashes
    const mask = this.#mask
    const value = values[i]
    // Backward shift: walk the run after the hole; an entry whose home slot is not in (hole, j]
    // (cyclically) probed past the hole, so it moves into it and its own slot becomes the hole.
    for (let j = (i + 1) & mask; values[j] !== undefined; j = (j + 1) & mask) {
      const home = hashes[j]! & mask
      if (((j - home) & mask) >= ((j - i) & mask)) {
        keys[i] = keys[j]
        values[i] = values[j]
        hashes[i] = hashes[j]!
        i = j
      }
    }
    // The key too, so that a key string is not kept alive by an empty slot.
    keys[i] = undefined
    values[i] = undefined
    this.#size--
    if (this.#size * 8 <= mask + 1 && mask + 1 > this.#least) this.#resize(fit(this.#size * 4, this.#least))
    return value
  }

  /** Forgets `key`; answers whether it had a value. */
  delete(key: K): boolean {
    return this.take(key) !== undefined
  }

  clear(): void {
    if (this.#size !== 0) this.drain()
  }

  /** Every key and its value, and the table emptied (`keys[i]` is `values[i]`'s). */
  drain(): { keys: K[]; values: V[] } {
    const keys: K[] = []
    const values: V[] = []
    for (let i = 0; i < this.#values.length; i++) {
      const value = this.#values[i]
      if (value === undefined) continue
      keys.push(this.#keys[i]!)
      values.push(value)
    }
    this.#keys = emptySlots<K>(this.#least)
    this.#values = emptySlots<V>(this.#least)
    this.#hashes = new Int32Array(this.#least)
    this.#mask = this.#least - 1
    this.#size = 0
    return { keys, values }
  }

  /** Every value (a copy: the table may change while it is read). */
  values(): V[] {
    const values: V[] = []
    for (const value of this.#values) if (value !== undefined) values.push(value)
    return values
  }

  /** The slot of `key`, or -1. */
  #find(key: K, h: number): number {
    const keys = this.#keys
    const values = this.#values
    const mask = this.#mask
    for (let i = h & mask; values[i] !== undefined; i = (i + 1) & mask) if (keys[i] === key) return i
    return -1
  }

  /** Into fresh arrays of `capacity` slots (a power of two, at least twice the size). */
  #resize(capacity: number): void {
    const keys = this.#keys
    const values = this.#values
    const hashes = this.#hashes
    const mask = capacity - 1
    this.#keys = emptySlots<K>(capacity)
    this.#values = emptySlots<V>(capacity)
    this.#hashes = new Int32Array(capacity)
    this.#mask = mask
    for (let i = 0; i < values.length; i++) {
      if (values[i] === undefined) continue
      let j = hashes[i]! & mask
      while (this.#values[j] !== undefined) j = (j + 1) & mask
      this.#keys[j] = keys[i]
      this.#values[j] = values[i]
      this.#hashes[j] = hashes[i]!
    }
  }
}

/**
 * A table by integer key (a safe integer). A key's home slot is its low bits: sequential keys (frame
 * ids, holds) fill the table in order, random ones (lease words) spread.
 */
export function intTable<V>(capacity = 16): HashTable<number, V> {
  return new HashTable<number, V>(intHash, 0, capacity)
}

/**
 * A table by string key, hashed from a random start of its own: keys come from clients over a
 * connection, and keys made to share a home slot under a hash known in advance would make every probe
 * walk them. The start is drawn when the table is made, not at module load (workerd refuses random
 * values outside a request).
 */
export function stringTable<V>(capacity = 8): HashTable<string, V> {
  return new HashTable<string, V>(stringHash, (Math.random() * 2 ** 32) | 0, capacity)
}

function intHash(key: number): number {
  return key | 0
}

/** FNV-1a over the UTF-16 code units from `seed`, then a final mix so nearby keys ("k1", "k2") spread over the low bits. */
function stringHash(key: string, seed: number): number {
  let h = seed
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  return h ^ (h >>> 13)
}

/** The least power of two ≥ `n` and ≥ `least`. */
function fit(n: number, least: number): number {
  let capacity = least
  while (capacity < n) capacity *= 2
  return capacity
}

/** `n` empty slots, in an array that holds any value (not only the small integers of a new one). */
function emptySlots<T>(n: number): (T | undefined)[] {
  const slots = new Array<T | undefined>(n)
  slots.fill(undefined)
  return slots
}

/**
 * A hash table from strings to values that keeps its arrays while entries come and go: open
 * addressing, linear probing, and deletion by backward shift (the entries after a deleted one that
 * probed past it move back), so a delete leaves no tombstone and a set after a delete reuses the slot.
 *
 * Why not a `Map`: on V8 a `Map` that gains and loses an entry per operation rebuilds its table every
 * few operations, and each old table keeps a link to the next. Once an old table is promoted, the
 * young-generation scavenges keep the chain after it alive until the next full GC (MBs promoted,
 * scavenges of 4-24 ms instead of ~1 ms). Here the arrays are replaced only when the table grows,
 * or shrinks after most of its entries left.
 *
 * Invariants: the capacity is a power of two, at least `MIN_CAPACITY`; an entry is present at slot `i`
 * exactly when `keys[i] !== undefined`; `size * 2 <= capacity` after every `set`; every entry lies
 * on the unbroken run of present slots from its home slot (`hash & mask`) on, which backward shift
 * keeps. Iteration order is slot order, not insertion order.
 */

const MIN_CAPACITY = 8

/**
 * FNV-1a over the UTF-16 code units from a table's own random start, then a final mix so nearby keys
 * ("k1", "k2") spread over the low bits. The random start: keys come from clients over a connection,
 * and keys made to share a home slot under a hash known in advance would make every probe walk them.
 */
function hashOf(key: string, seed: number): number {
  let h = seed
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  return h ^ (h >>> 13)
}

export class StringTable<V> {
  #keys: (string | undefined)[]
  #values: (V | undefined)[]
  #hashes: Int32Array
  #mask: number
  #size = 0
  // Drawn when the table is made (not at module load: workerd refuses random values outside a request).
  readonly #seed = (Math.random() * 2 ** 32) | 0

  constructor(capacity = MIN_CAPACITY) {
    const n = StringTable.#fit(capacity)
    this.#keys = new Array<string | undefined>(n).fill(undefined)
    this.#values = new Array<V | undefined>(n).fill(undefined)
    this.#hashes = new Int32Array(n)
    this.#mask = n - 1
  }

  get size(): number {
    return this.#size
  }

  /** @internal The number of slots (for tests of growth and shrinking). */
  get capacity(): number {
    return this.#mask + 1
  }

  get(key: string): V | undefined {
    if (this.#size === 0) return undefined
    const i = this.#find(key, hashOf(key, this.#seed))
    return i < 0 ? undefined : this.#values[i]
  }

  has(key: string): boolean {
    return this.#size !== 0 && this.#find(key, hashOf(key, this.#seed)) >= 0
  }

  set(key: string, value: V): this {
    const h = hashOf(key, this.#seed)
    const keys = this.#keys
    const mask = this.#mask
    let i = h & mask
    for (let k = keys[i]; k !== undefined; k = keys[i]) {
      if (k === key) {
        this.#values[i] = value
        return this
      }
      i = (i + 1) & mask
    }
    keys[i] = key
    this.#values[i] = value
    this.#hashes[i] = h
    if (++this.#size * 2 > mask + 1) this.#resize((mask + 1) * 2)
    return this
  }

  delete(key: string): boolean {
    if (this.#size === 0) return false
    let i = this.#find(key, hashOf(key, this.#seed))
    if (i < 0) return false
    const keys = this.#keys
    const values = this.#values
    const hashes = this.#hashes
    const mask = this.#mask
    // Backward shift: walk the run after the hole; an entry whose home slot is not in (hole, j]
    // cyclically probed past the hole, so it moves into it and its own slot becomes the hole.
    for (let j = (i + 1) & mask; keys[j] !== undefined; j = (j + 1) & mask) {
      const home = hashes[j]! & mask
      if (((j - home) & mask) >= ((j - i) & mask)) {
        keys[i] = keys[j]
        values[i] = values[j]
        hashes[i] = hashes[j]!
        i = j
      }
    }
    keys[i] = undefined
    values[i] = undefined
    this.#size--
    // Shrink only far below the growth point, so a size that swings does not resize back and forth.
    if (mask + 1 > 8 * MIN_CAPACITY && this.#size * 16 < mask + 1) this.#resize(StringTable.#fit(this.#size * 4))
    return true
  }

  clear(): void {
    if (this.#size === 0) return
    if (this.#mask + 1 > 8 * MIN_CAPACITY) this.#resize(MIN_CAPACITY)
    else {
      this.#keys.fill(undefined)
      this.#values.fill(undefined)
      this.#size = 0
    }
  }

  *values(): IterableIterator<V> {
    const keys = this.#keys
    const values = this.#values
    for (let i = 0; i < keys.length; i++) if (keys[i] !== undefined) yield values[i] as V
  }

  *entries(): IterableIterator<[string, V]> {
    const keys = this.#keys
    const values = this.#values
    for (let i = 0; i < keys.length; i++) if (keys[i] !== undefined) yield [keys[i]!, values[i] as V]
  }

  #find(key: string, h: number): number {
    const keys = this.#keys
    const mask = this.#mask
    let i = h & mask
    for (let k = keys[i]; k !== undefined; k = keys[i]) {
      if (k === key) return i
      i = (i + 1) & mask
    }
    return -1
  }

  /** Into fresh arrays of `capacity` slots (a power of two, above twice the size). */
  #resize(capacity: number): void {
    const keys = this.#keys
    const values = this.#values
    const hashes = this.#hashes
    this.#keys = new Array<string | undefined>(capacity).fill(undefined)
    this.#values = new Array<V | undefined>(capacity).fill(undefined)
    this.#hashes = new Int32Array(capacity)
    this.#mask = capacity - 1
    this.#size = 0
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]
      if (key === undefined) continue
      let j = hashes[i]! & this.#mask
      while (this.#keys[j] !== undefined) j = (j + 1) & this.#mask
      this.#keys[j] = key
      this.#values[j] = values[i]
      this.#hashes[j] = hashes[i]!
      this.#size++
    }
  }

  static #fit(n: number): number {
    let capacity = MIN_CAPACITY
    while (capacity < n) capacity *= 2
    return capacity
  }
}

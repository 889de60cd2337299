/**
 * A table of values by integer key (a safe integer), for keys that come and go on every operation: a
 * client's frames awaiting their answer, its holds, its leases (remote/client.ts). Open addressing
 * with linear probing, a key's home slot its low bits (sequential keys fill the table in order, random
 * ones spread), no tombstones: a delete shifts the entries after it back.
 *
 * Why not a `Map`: on V8, a `Map` that gains and loses an entry on every operation rehashes into a new
 * table now and then and leaves the old ones chained to it (for iterators that may still walk them);
 * after each mark-compact the scavenges keep that chain alive and promote it (megabytes per scavenge on
 * a served store's client and server: #17). This table's two arrays are made only when it grows or
 * shrinks, and a delete writes nothing but slots.
 *
 * Invariants:
 * - A slot is empty iff its value is `undefined` (no value stored is `undefined`); `keys[i]` is
 *   meaningful only for a full slot.
 * - Every key is found from its home slot (`key & mask`) by walking full slots forward (wrapping):
 *   no empty slot lies between a key's home slot and its slot.
 * - At most half the slots are full (the table doubles before that); it halves when at most an eighth
 *   would be, down to its first capacity, so that a burst leaves no large table behind and a size near a
 *   bound does not make it grow and shrink in turn.
 */

export class IntTable<V> {
  readonly #least: number
  #keys: Float64Array
  #values: (V | undefined)[]
  #mask: number
  #size = 0

  /** `capacity`: the least number of slots (rounded up to a power of two, at least 8). */
  constructor(capacity = 16) {
    let c = 8
    while (c < capacity) c *= 2
    this.#least = c
    this.#keys = new Float64Array(c)
    this.#values = emptySlots<V>(c)
    this.#mask = c - 1
  }

  get size(): number {
    return this.#size
  }

  /** The slot of `key`, or -1. */
  #find(key: number): number {
    const keys = this.#keys
    const values = this.#values
    const mask = this.#mask
    for (let i = key & mask; ; i = (i + 1) & mask) {
      if (values[i] === undefined) return -1
      if (keys[i] === key) return i
    }
  }

  get(key: number): V | undefined {
    const i = this.#find(key)
    return i < 0 ? undefined : this.#values[i]
  }

  has(key: number): boolean {
    return this.#find(key) >= 0
  }

  /** Keeps `value` (never `undefined`) under `key`, in place of the value it had. */
  set(key: number, value: V): void {
    const i = this.#find(key)
    if (i >= 0) {
      this.#values[i] = value
      return
    }
    if ((this.#size + 1) * 2 > this.#values.length) this.#resize(this.#values.length * 2)
    this.#put(key, value)
    this.#size++
  }

  /** Forgets `key`; answers its value, or `undefined` when it had none. */
  take(key: number): V | undefined {
    let i = this.#find(key)
    if (i < 0) return undefined
    const keys = this.#keys
    const values = this.#values
    const mask = this.#mask
    const value = values[i]
    // Shift back every entry after it that may take its slot (its home slot is not between i and it).
    for (let j = (i + 1) & mask; values[j] !== undefined; j = (j + 1) & mask) {
      const home = keys[j]! & mask
      if (((j - home) & mask) >= ((j - i) & mask)) {
        keys[i] = keys[j]!
        values[i] = values[j]
        i = j
      }
    }
    values[i] = undefined
    this.#size--
    if (this.#size * 8 <= values.length && values.length > this.#least) this.#resize(values.length / 2)
    return value
  }

  /** Forgets `key`; answers whether it had a value. */
  delete(key: number): boolean {
    return this.take(key) !== undefined
  }

  /** Every key and its value, in no particular order, and the table emptied (`keys[i]` is `values[i]`'s). */
  drain(): { keys: number[]; values: V[] } {
    const keys: number[] = []
    const values: V[] = []
    for (let i = 0; i < this.#values.length; i++) {
      const value = this.#values[i]
      if (value === undefined) continue
      keys.push(this.#keys[i]!)
      values.push(value)
    }
    this.#keys = new Float64Array(this.#least)
    this.#values = emptySlots<V>(this.#least)
    this.#mask = this.#least - 1
    this.#size = 0
    return { keys, values }
  }

  /** Every value, in no particular order (a copy: the table may change while it is read). */
  values(): V[] {
    const values: V[] = []
    for (const value of this.#values) if (value !== undefined) values.push(value)
    return values
  }

  /** Puts a key not in the table into its first empty slot from its home. */
  #put(key: number, value: V): void {
    const mask = this.#mask
    let i = key & mask
    while (this.#values[i] !== undefined) i = (i + 1) & mask
    this.#keys[i] = key
    this.#values[i] = value
  }

  #resize(capacity: number): void {
    const keys = this.#keys
    const values = this.#values
    this.#keys = new Float64Array(capacity)
    this.#values = emptySlots<V>(capacity)
    this.#mask = capacity - 1
    for (let i = 0; i < values.length; i++) if (values[i] !== undefined) this.#put(keys[i]!, values[i]!)
  }
}

/** `n` empty slots, in an array that holds any value (not only the small integers of a new one). */
function emptySlots<V>(n: number): (V | undefined)[] {
  const slots = new Array<V | undefined>(n)
  slots.fill(undefined)
  return slots
}

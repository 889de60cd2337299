/**
 * Storage: where a store keeps what must outlive it, which is only its fence ceiling (see the engine's
 * `fence.rs`). A storage is any object with `get` and `set` over string keys and values; either may
 * return a promise. `get` answers `undefined` (or `null`, as Redis's GET and `localStorage` do) for a
 * key never set. A store hands out no fence that a
 * value `set` has not covered, so a storage that acknowledges a write must have made it durable.
 *
 * One storage serves one open store at a time: two stores counting fences from one stored value would
 * hand out the same fences.
 */

import { StorageError } from '../errors.js'
import { checkNoMore } from '../util/options.js'

/**
 * The storages that serve an open store (or one opening), so that a second `openStore` on one of them
 * is refused: a `fileStorage` object claims its directory once and lends that claim to every store it
 * is given, and a `memoryStorage()` or a custom storage has no claim at all.
 */
const serving = new WeakSet<Storage>()

/** Marks `storage` as serving a store; throws `StorageError` if one already does. */
export function claimStorage(storage: Storage, place: string): void {
  if (serving.has(storage)) {
    throw new StorageError(
      `${place}: this storage serves an open store already (one storage serves one open store at a time: close that store first, or give this one a storage of its own)`,
    )
  }
  serving.add(storage)
}

/** `storage` serves no store any more (its store closed, or did not open). */
export function releaseStorage(storage: Storage): void {
  serving.delete(storage)
}

export interface Storage {
  /** The value last set at `key`; `undefined` or `null` for a key never set. */
  get(key: string): string | null | undefined | Promise<string | null | undefined>
  set(key: string, value: string): void | Promise<void>
  /** Called once when the store closes; lets a storage release what it holds (a directory lock). */
  close?(): void | Promise<void>
}

/** A storage that keeps nothing beyond the process: fences start again from 1 in the next one. */
export function memoryStorage(): Storage
export function memoryStorage(...extra: unknown[]): Storage {
  checkNoMore(extra, 'memoryStorage', '')
  const values = new Map<string, string>()
  return {
    get: key => values.get(key),
    set: (key, value) => {
      values.set(key, value)
    },
  }
}

export function isStorage(value: unknown): value is Storage {
  const s = value as Storage | null
  return typeof s === 'object' && s !== null && typeof s.get === 'function' && typeof s.set === 'function'
}

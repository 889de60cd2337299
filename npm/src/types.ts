/**
 * The types several rooms of the package share: options, what `inspect()` answers, and the record of a
 * lock or semaphore of one name that its handles, leases and store share. A leaf: it imports nothing of
 * the package, so that any file may import it without making a circle.
 */

/** A duration: milliseconds, or text such as `'30s'` (see `util/duration.ts`). */
export type Duration = number | string

/** A lock (one holder a key) or a semaphore (up to its limit). */
export type Kind = 'lock' | 'semaphore'

export interface LockOptions {
  /** How long a lease over a connection lasts from its last renewal (1 s to 1 h; default 30 s). */
  ttl?: Duration
  /** A hard bound from the grant: at it the lease is revoked (more than 0, up to 30 days). */
  maxHold?: Duration
  /** The default wait of this handle's holds (default 10 s; 0: only if free; Infinity: no limit). */
  wait?: Duration
}

export interface SemaphoreOptions extends LockOptions {
  /** How many may hold a key at once (1 to 10,000). */
  limit: number
}

export interface HoldOptions {
  /** How long to wait for the key (default: the handle's, else 10 s). */
  wait?: Duration
  /** Aborting it ends the wait with a `CancelledError`. */
  signal?: AbortSignal
}

export interface TryHoldOptions {
  signal?: AbortSignal
}

export type TryHoldResult<T> = { acquired: false } | { acquired: true; value: T }

export interface HolderInfo {
  fence: number
  heldMs: number
}

export interface KeyInfo {
  kind: Kind
  name: string
  key: string
  holders: HolderInfo[]
  waiting: number
}

/**
 * @internal A lock or semaphore of one name, shared by its handles. `Held` is what stands for a key
 * granted without the engine (a store's `Lease`).
 */
export interface Resource<Held = unknown> {
  id: number
  kind: Kind
  name: string
  limit: number
  /** Busy keys: key string to the engine's key id, or to the lease of a key the store granted itself. */
  keys: KeyIds<Held>
  /** Whether holds over a connection have used it. */
  remote?: boolean
  /** The pin of its handles, if one may be alive (see store/names.ts). */
  pin?: { deref(): object | undefined }
}

/** The part of a `Map` from key strings to key ids that a resource's users call. */
export interface KeyIds<Held = unknown> {
  readonly size: number
  get(key: string): number | Held | undefined
  has(key: string): boolean
  set(key: string, id: number | Held): unknown
  delete(key: string): boolean
  clear(): void
  values(): IterableIterator<number | Held>
}

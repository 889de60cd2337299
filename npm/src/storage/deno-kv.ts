/**
 * `denoKvStorage(kv, { prefix })`: a storage over Deno KV (`await Deno.openKv()`; on Deno 2 outside
 * Deno Deploy, run with `--unstable-kv`).
 *
 * - Values are strings at the KV key `[...prefix, key]` (default prefix `['holdfast']`).
 * - A write is acknowledged only once its commit resolved with `ok: true`, so no fence is handed out
 *   that KV has not committed (LOCK-02).
 * - Every write is conditional on the versionstamp this storage last read or wrote (an atomic
 *   `check`), so a second store counting fences from the same KV key, in this process or another,
 *   makes the next reservation of the first fail with a `StorageError` instead of repeating fences. In
 *   one process, a second open store on the same `kv` and prefix is refused at once.
 * - Every write is also conditional on the versionstamp of the first key the storage read (a store
 *   reads its fence ceiling first, and every store writes it as it opens): a write of a key it never
 *   read (the pools' slots past the last one there at open) checks nothing of its own, and would land
 *   over a second store's (through another handle, as from another process) unseen, both granting
 *   the same units. So once a second store opened on the prefix, every write of the first fails.
 * - A write refused at once by SQLite's lock ("database is locked" within `BUSY_AGAIN` of its try: a
 *   handle on the same file, in this process or another, opening or writing just then; seen in about
 *   one write in thirty made while a second handle opens) committed nothing, and is tried again after
 *   a short wait, for up to `BUSY_AGAIN` in all. One refused after Deno's own wait for the lock (5 s)
 *   is not: the file is held, and the write fails.
 * - `kv` stays the caller's: closing the store does not close it. The storage may serve another store
 *   once that one closed: it then checks against what it reads and writes from then on.
 */

import { InvalidError, StorageError } from '../errors.js'
import { checkOptions } from '../util/options.js'
import type { Storage } from './storage.js'

/** A part of a Deno KV key. */
export type DenoKvKeyPart = string | number | bigint | boolean | Uint8Array

/** The part of `Deno.Kv` the storage uses (a `Deno.Kv` fits it). */
export interface DenoKvLike {
  get(key: readonly DenoKvKeyPart[]): Promise<{ value: unknown; versionstamp: string | null }>
  atomic(): DenoKvAtomicLike
}

/** The part of `Deno.AtomicOperation` the storage uses. */
export interface DenoKvAtomicLike {
  check(...checks: { key: readonly DenoKvKeyPart[]; versionstamp: string | null }[]): DenoKvAtomicLike
  set(key: readonly DenoKvKeyPart[], value: unknown): DenoKvAtomicLike
  commit(): Promise<{ ok: boolean; versionstamp?: string }>
}

export interface DenoKvStorageOptions {
  /** The KV key prefix under which the store's values are kept (default `['holdfast']`). */
  prefix?: readonly DenoKvKeyPart[]
}

/** SQLite's `SQLITE_BUSY`, as Deno's KV reports it. */
const BUSY = /database is locked/
/** How long after its first try a write refused `BUSY` is tried again (waiting 10 ms, then twice that, ...). */
const BUSY_AGAIN = 1_000

/** Prefixes of each `kv` that an open store of this process uses. */
const inUse = new WeakMap<object, Set<string>>()

export function denoKvStorage(kv: DenoKvLike, options?: DenoKvStorageOptions): Storage {
  const k = kv as Partial<DenoKvLike> | null
  if (typeof k !== 'object' || k === null || typeof k.get !== 'function' || typeof k.atomic !== 'function') {
    throw new InvalidError('denoKvStorage: kv must be a Deno.Kv (from Deno.openKv())')
  }
  const o = checkOptions(options, 'denoKvStorage', ['prefix'])
  const prefix = (o.prefix ?? ['holdfast']) as readonly DenoKvKeyPart[]
  if (!Array.isArray(prefix) || !prefix.every(isKeyPart)) {
    throw new InvalidError('denoKvStorage: option prefix must be an array of KV key parts (strings, numbers, bigints, booleans, Uint8Arrays)')
  }
  const prefixId = prefix.map(describe).join(', ')
  const place = `denoKvStorage [${prefixId}]`
  /** The versionstamp of each value as this storage last read or wrote it (`null`: absent), while it
   * serves a store: forgotten at close, as another storage of the prefix may write meanwhile. */
  const stamps = new Map<string, string | null>()
  /** The first key read while it serves a store (its fence ceiling), which every write checks too. */
  let anchor: string | undefined
  /** The write under way (settled: none). */
  let queue: Promise<unknown> = Promise.resolve()
  let claimed = false

  const claim = () => {
    if (claimed) return
    let prefixes = inUse.get(kv)
    if (!prefixes) inUse.set(kv, (prefixes = new Set()))
    if (prefixes.has(prefixId)) {
      throw new StorageError(
        `${place}: this KV prefix is in use by another open store of this process; one storage serves one store at a time (pass another prefix)`,
      )
    }
    prefixes.add(prefixId)
    claimed = true
  }

  async function write(key: string, value: string): Promise<void> {
    const kvKey = [...prefix, key]
    let result: { ok: boolean; versionstamp?: string }
    const started = performance.now()
    for (let pause = 10; ; pause *= 2) {
      let op = kv.atomic()
      // Unless this storage read the key first, the write cannot know what it replaces.
      if (stamps.has(key)) op = op.check({ key: kvKey, versionstamp: stamps.get(key)! })
      if (anchor !== undefined && anchor !== key && stamps.has(anchor)) op = op.check({ key: [...prefix, anchor], versionstamp: stamps.get(anchor)! })
      try {
        result = await op.set(kvKey, value).commit()
        break
      } catch (error) {
        const message = (error as Error)?.message ?? String(error)
        // The file was locked: nothing committed, and the same write (its check too) is tried again.
        if (BUSY.test(message) && performance.now() - started < BUSY_AGAIN) {
          await new Promise(resolve => setTimeout(resolve, pause))
          continue
        }
        // Whether it committed is unknown. The next write still checks the old versionstamp: if this
        // one did commit, that check fails, and the store reserves nothing more rather than guess.
        throw new StorageError(`${place}: writing ${JSON.stringify(key)} failed: ${message}`, { cause: error })
      }
    }
    if (result?.ok !== true) {
      throw new StorageError(
        `${place}: the value of ${JSON.stringify(key)}${anchor !== undefined && anchor !== key ? ` or ${JSON.stringify(anchor)}` : ''} changed since this store read it: another store keeps fences under this KV prefix; one storage serves one store at a time`,
      )
    }
    if (typeof result.versionstamp === 'string') stamps.set(key, result.versionstamp)
    else stamps.delete(key)
  }

  return {
    async get(key) {
      claim()
      let entry: { value: unknown; versionstamp: string | null }
      try {
        entry = await kv.get([...prefix, key])
      } catch (error) {
        throw new StorageError(`${place}: reading ${JSON.stringify(key)} failed: ${(error as Error)?.message ?? String(error)}`, { cause: error })
      }
      anchor ??= key
      if (entry.value === null || entry.value === undefined) {
        stamps.set(key, null)
        return undefined
      }
      if (typeof entry.value !== 'string') {
        throw new StorageError(`${place}: the value of ${JSON.stringify(key)} is a ${typeof entry.value}, not a string: it was not written by holdfast`)
      }
      stamps.set(key, entry.versionstamp)
      return entry.value
    },
    async set(key, value) {
      claim()
      // One commit at a time, each checking the stamps the one before left: the store's fence writes
      // and its pools' run side by side, and a pool write checking the fence ceiling's stamp while
      // the store itself rewrote it would fail as if another store had.
      const turn = queue.then(() => write(key, value))
      queue = turn.catch(() => {})
      await turn
    },
    close() {
      if (!claimed) return
      claimed = false
      // Kept, they would fail the next store's writes of keys its open does not read (the pools' slots
      // after their log), which another store of the prefix wrote meanwhile, as if it still ran.
      stamps.clear()
      anchor = undefined
      inUse.get(kv)?.delete(prefixId)
    },
  }
}

function isKeyPart(part: unknown): part is DenoKvKeyPart {
  return ['string', 'number', 'bigint', 'boolean'].includes(typeof part) || part instanceof Uint8Array
}

function describe(part: DenoKvKeyPart): string {
  if (part instanceof Uint8Array) return `Uint8Array(${Array.from(part).join(' ')})`
  if (typeof part === 'string') return JSON.stringify(part)
  return typeof part === 'bigint' ? `${part}n` : String(part)
}

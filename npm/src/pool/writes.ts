/**
 * The pools' storage, done here in TypeScript (#14: the bindings do no storage I/O): reading the pools
 * back when a store opens (`readPools`), and their writes, grouped (`PoolWrites`).
 *
 * # Group commit
 * A call that changes a pool leaves a write wanted in the engine (`core.poolWriteWanted()`). `poke()`
 * then schedules one *flush* (a microtask, which runs after the synchronous code that called, so every
 * change made in that code goes in the same write); the flush takes the write (`core.takePoolWrite()`)
 * and sets its keys in the storage, in order. Its outcome goes back to the engine with the time
 * (`core.poolWritten(seq, ok, now)`), whose events answer the requests it kept: a claim is never
 * answered before its write is acknowledged (POOL-02), and a failed write gives its claims' units back.
 *
 * # Invariants
 * - At most one flush is scheduled and at most one write is under way; changes made meanwhile wait for
 *   the next write, poked when this one settles. So a turn of calls costs one write, however many
 *   claims it made.
 * - Every outcome of a write taken is told to the engine exactly once, unless the engine trapped
 *   (`stop()`): then nothing more is asked of it.
 * - `stored()` resolves only when no `set` of a write is under way, also once `stop()` let go of the
 *   write (a trap): a store lets its storage go only then, so that no write of it lands after the
 *   next store on the storage opened.
 * - `landed()` resolves only when no flush is scheduled and no write is under way: a store closes its
 *   storage after the pools' last write (the engine's close leaves what changed before it to write, and
 *   the undos of the claims it answered `ClosedError` before their writes were acknowledged: that write
 *   follows the one under way, so storage ends agreeing that they took nothing). The releases, confirms
 *   and resizes those writes carry are answered by their outcome before `landed()` resolves (the
 *   close does not end them: engine pool/write.rs), so `close()` resolves after them.
 * - A failed write is followed by the next (a snapshot: the failed one may or may not have landed)
 *   only after a wait on the store's clock, doubling from `FIRST_RETRY` to `LAST_RETRY` while writes
 *   keep failing, and back to none after one succeeds. Without it a storage that always fails (a full
 *   disk, a refused value) would be written to again at once, forever: a loop of microtasks when it
 *   fails synchronously or from a resolved promise, which starves every timer of the process. Changes
 *   made during the wait go in that next write. Once the store closes (`landed()`), the write that
 *   follows a failed one is made at once (a pending retry, or the next after a write under way at the
 *   close fails: it carries the undos of the claims the close ended), and a write taken during the
 *   close that fails is not followed by another: close waits on a broken storage for one write at most
 *   beyond the one under way.
 * - That wait's timer keeps the process alive (`keepAlive`) once a request's answer waits for the
 *   write it comes before (`core.poolWriteAwaited()`: a claim that took its units, a release, a
 *   confirm, a resize made since the failure): holdfast's own work owes it an answer, at most
 *   `LAST_RETRY` away, kept or failed (a claim that waits keeps the store's timer, not this one:
 *   engine-host.ts # Timers keep the process alive while awaited). Before, on Node, a process with nothing else
 *   alive ended there, the claim unanswered (exit 13). A snapshot owed alone keeps nothing alive: a
 *   storage that keeps failing never keeps an idle process from ending.
 *
 * Who pokes: the pool calls (room.ts), and the host after its timer, its fence writes and its close.
 * A hold that acts on a pool's deadline (a ttl running out, a waiting claim then taking its units)
 * does not poke: the store's timer for that deadline still runs, at once, and pokes then.
 */

import { type Core, PoolReader } from '../../wasm/holdfast_wasm.js'
import { StorageError, fromEngine } from '../errors.js'
import type { Storage } from '../storage/storage.js'
import { type Clock, keepAlive } from '../util/clock.js'
import { soon } from '../util/soon.js'

/** The wait before the write that follows a failed one (ms), doubled while writes keep failing. */
export const FIRST_RETRY = 10
/** The longest such wait (ms). */
export const LAST_RETRY = 5_000

/** Reads the pools back from `storage` into `core`, before any pool is named (the store's open). */
export async function readPools(core: Core, storage: Storage, clock: Clock): Promise<void> {
  const reader = new PoolReader()
  try {
    for (let key = reader.nextKey(); key !== undefined; key = reader.nextKey()) {
      let value: unknown
      try {
        value = await storage.get(key)
      } catch (error) {
        throw new StorageError(`openStore: storage.get(${JSON.stringify(key)}) failed: ${(error as Error)?.message ?? String(error)}`, { cause: error })
      }
      try {
        reader.feed(value)
      } catch (error) {
        throw fromEngine(error, 'openStore')
      }
    }
    try {
      core.openPools(reader, clock.now(), Date.now())
    } catch (error) {
      throw fromEngine(error, 'openStore')
    }
  } finally {
    reader.free()
  }
}

/** What the writes need of the store's engine host. */
export interface PoolWritesHost {
  readonly core: Core
  readonly clock: Clock
  /** Answers `n` events the last call wrote. */
  drain(n: number, now: number): void
  /** The engine trapped: the store closes. */
  trap(error: unknown): unknown
}

/** The outcome of a write: what the write was, and whether storage kept every key of it. */
interface PoolWrite {
  seq: number
  keys: string[]
  values: string[]
}

export class PoolWrites {
  readonly #host: PoolWritesHost
  readonly #storage: Storage
  #scheduled = false
  #inFlight = false
  #stopped = false
  /** What the storage threw or rejected with, the last time a write failed. */
  #error: unknown = undefined
  /** Who waits for the writes to land (`landed`). */
  #landed: (() => void)[] = []
  /** The timer of the write that follows a failed one, and the wait it had (see # Invariants). */
  #retryTimer: unknown = undefined
  #retryWait = 0
  /** That timer keeps the process alive: a request's answer waits for the write it comes before. */
  #retryKept = false
  /** The store is closing (`landed()` was called). */
  #closing = false
  /** A write was taken since the store began closing: if it fails, none follows it. */
  #closeWrite = false
  /** The storage's part of the write under way (its `set`s), until they settle: `stop()` ends the
   * write's part in the engine, not the storage's (see `stored`). */
  #storing: Promise<boolean> | undefined = undefined

  constructor(host: PoolWritesHost, storage: Storage) {
    this.#host = host
    this.#storage = storage
  }

  /** After a call that may have changed a pool: schedules the flush if a write is wanted. */
  poke(): void {
    if (this.#retryTimer !== undefined) return this.#keepRetry()
    if (this.#scheduled || this.#inFlight || this.#stopped) return
    if (!this.#asks(core => core.poolWriteWanted())) return
    this.#scheduled = true
    soon(this.#flush)
  }

  /**
   * Whether a change of the pools may not be in storage yet: a write wanted, scheduled, under way, or
   * waiting to follow a failed one. Once false after a write failed, a write taken since landed: a
   * snapshot, so every change made before it is kept (a withdraw answered `StorageError` too).
   */
  owed(): boolean {
    if (this.#stopped) return false
    return this.#scheduled || this.#inFlight || this.#retryTimer !== undefined || this.#asks(core => core.poolWriteWanted())
  }

  /** What the storage failed with, the last time a pools' write failed (the cause of their `StorageError`). */
  storageError(): unknown {
    return this.#error
  }

  /** Resolves once no write is scheduled or under way. */
  async landed(): Promise<void> {
    this.#closing = true
    if (this.#retryTimer !== undefined) {
      this.#host.clock.clearTimeout(this.#retryTimer)
      this.#retryTimer = undefined
      this.poke()
    }
    while (this.#scheduled || this.#inFlight) await new Promise<void>(resolve => this.#landed.push(resolve))
  }

  /**
   * Resolves once no `set` of the pools is under way: after `stop()` too, whose write may still be in
   * storage's hands. A store lets its storage go only then: the next store on it reads the pools
   * without that write and numbers its own first write as it (log.rs), which the late one would then
   * overwrite (POOL-02).
   */
  async stored(): Promise<void> {
    while (this.#storing !== undefined) await this.#storing
  }

  /** The engine trapped: nothing more is asked of it, and whoever waits for the writes is let go. */
  stop(): void {
    if (this.#retryTimer !== undefined) this.#host.clock.clearTimeout(this.#retryTimer)
    this.#retryTimer = undefined
    this.#stopped = true
    this.#scheduled = false
    this.#inFlight = false
    this.#wakeLanded()
  }

  readonly #flush = (): void => {
    this.#scheduled = false
    if (this.#stopped) return
    let write: PoolWrite | undefined
    try {
      // Taken now, a microtask after the call that scheduled it: every change of that code is in it.
      write = this.#host.core.takePoolWrite() as PoolWrite | undefined
    } catch (error) {
      this.#host.trap(error)
      return
    }
    if (write === undefined) return this.#wakeLanded()
    if (this.#closing) this.#closeWrite = true
    this.#inFlight = true
    const storing = this.#set(write)
    this.#storing = storing
    void storing.then(ok => {
      if (this.#storing === storing) this.#storing = undefined
      this.#settled(write, ok)
    })
  }

  async #set(write: PoolWrite): Promise<boolean> {
    try {
      for (let i = 0; i < write.keys.length; i++) {
        // Stopped by a trap: the keys not set yet stay unset (any prefix of a write reads back as
        // the writes before it: log.rs), and the storage can be let go sooner.
        if (this.#stopped) return false
        await this.#storage.set(write.keys[i]!, write.values[i]!)
      }
      return true
    } catch (error) {
      this.#error = error
      return false
    }
  }

  #settled(write: PoolWrite, ok: boolean): void {
    if (this.#stopped) return
    this.#inFlight = false
    const now = this.#host.clock.now()
    let n: number
    try {
      n = this.#host.core.poolWritten(write.seq, ok, now)
    } catch (error) {
      this.#host.trap(error)
      return
    }
    this.#host.drain(n, now)
    if (!ok) {
      if (this.#closing) {
        // Taken before the close, it may have landed with a claim the close then undid and answered
        // ClosedError: the next write (a snapshot, the undo in it) is made at once, or storage could
        // keep units nobody holds. Taken during the close, it is the last try.
        if (!this.#closeWrite) this.poke()
        return this.#wakeLanded()
      }
      this.#retryWait = Math.min(this.#retryWait === 0 ? FIRST_RETRY : this.#retryWait * 2, LAST_RETRY)
      this.#retryTimer = this.#host.clock.setTimeout(() => {
        this.#retryTimer = undefined
        this.poke()
      }, this.#retryWait)
      this.#retryKept = false
      // A waiting claim served from the units the failed write gave back waits for the retry already.
      this.#keepRetry()
      return this.#wakeLanded()
    }
    this.#retryWait = 0
    // The changes made while it was under way go in the next write.
    this.poke()
    if (!this.#scheduled && !this.#inFlight) this.#wakeLanded()
  }

  /** During the wait before a retry: its timer keeps the process alive once a request awaits the retry (see # Invariants). */
  #keepRetry(): void {
    if (this.#retryKept) return
    if (!this.#asks(core => core.poolWriteAwaited())) return
    this.#retryKept = true
    keepAlive(this.#retryTimer)
  }

  /** Asks the engine a yes-or-no question of its pools' writes; a trap closes the store (the host's `trap`) and answers no. */
  #asks(question: (core: Core) => boolean): boolean {
    try {
      return question(this.#host.core)
    } catch (error) {
      this.#host.trap(error)
      return false
    }
  }

  #wakeLanded(): void {
    for (const resolve of this.#landed.splice(0)) resolve()
  }
}

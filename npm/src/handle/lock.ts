/**
 * The handles users hold: `store.lock(name, options)` and `store.semaphore(name, options)`. A handle
 * keeps its options (`ttl`, `maxHold`, `wait`); handles of one name share the keys, whatever their
 * options (only a semaphore's `limit` must agree).
 */

import { InvalidError, heldByAnother } from '../errors.js'
import { afterFn, afterOptions, holdOptions, placeOf, plainWait, tryHoldSignal } from './travelling.js'
import { toMs } from '../util/duration.js'
import { toKey } from '../util/key.js'
import { checkOptions } from '../util/options.js'
import { shown } from '../util/shown.js'
import { Lease } from './lease.js'
import type { SelfHeld } from '../store/key-ids.js'
import type { HoldOptions, Resource as SharedResource, TryHoldOptions, TryHoldResult } from '../types.js'

/**
 * A resource as this package's stores keep it: a key granted without the engine stands as its lease,
 * or (a semaphore's, in the in-process store) as its permits.
 */
type Resource = SharedResource<SelfHeld>

type Key = string | number

/**
 * What a handle asks of its store (the in-process `Store` is the one): the handle is the
 * public face of a hold, the store does the holding. Declared here, by the side that calls, so that the
 * handle needs nothing of the store's module.
 */
export interface LockStore {
  readonly closed: boolean
  /** @internal Holds `key` and runs fn in its lease; `undefined` when the key is busy and `wait` is 0. */
  _hold<T>(handle: Lock, key: string, wait: number, signal: AbortSignal | undefined, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>> | undefined
  /** @internal Takes `key`: the lease, a promise of it (or of fn's value, with fn), or `undefined` when busy with `wait` 0. */
  _take(
    handle: Lock,
    key: string,
    wait: number,
    signal: AbortSignal | undefined,
    isTry: boolean,
    fn?: (lease: Lease) => unknown,
  ): Lease | Promise<unknown> | undefined
  /**
   * @internal Runs fn in a lease taken by `_take`, letting the key go when fn settles; a waiter's
   * only if `signal` did not abort before fn could start (else `CancelledError`, the key let go).
   */
  _run<T>(handle: Lock, taken: Lease | Promise<Lease>, fn: (lease: Lease) => T | PromiseLike<T>, signal?: AbortSignal): Promise<Awaited<T>>
}

/** A handle's `#lastKey` before it held any key: no key a caller passes is this. */
const NO_KEY: unique symbol = Symbol('no key held yet')

const NOT_ACQUIRED: { acquired: false } = Object.freeze({ acquired: false })
const NOT_ACQUIRED_PROMISE: Promise<{ acquired: false }> = Promise.resolve(NOT_ACQUIRED)

export class Lock {
  readonly kind: 'lock' | 'semaphore'
  readonly name: string
  /** @internal */ readonly _store: LockStore
  /** @internal */ readonly _resource: Resource
  /** @internal maxHold in ms, 0 for none. */ readonly _maxHold: number
  /** @internal the default wait in ms. */ readonly _wait: number
  /** The lease ttl in ms (used by leases over a connection). */
  readonly ttl: number
  /**
   * @internal The pin of its name, shared by the name's handles: while a handle lives, the store keeps
   * the name (see store/names.ts). `undefined` for the server's handles.
   */
  readonly _pin: object | undefined
  /**
   * The last key string held through this handle as it was given (see `#key`); before any, a value no
   * caller can pass (as `undefined` was, a fresh handle took `hold(undefined, fn)` as checked).
   */
  #lastKey: string | typeof NO_KEY = NO_KEY

  /** Locks and semaphores are made by a store's `lock()` and `semaphore()`, never by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[store, resource, ttl, maxHold, wait, pin]: LockArgs) {
    this._store = store
    this._resource = resource
    this._pin = pin
    this.kind = resource.kind
    this.name = resource.name
    this.ttl = ttl
    this._maxHold = maxHold
    this._wait = wait
  }

  /**
   * Waits for `key`, runs `fn(lease)`, lets the key go when fn settles, and resolves to fn's result.
   * Rejects `InUseError` if the key is still held after the wait (fn does not run), `CancelledError`
   * if the signal aborts first, `LostError` if the lease was revoked at `maxHold` (even if fn succeeded).
   */
  hold<T>(key: Key, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>>
  hold<T>(key: Key, options: HoldOptions, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>>
  hold<T>(key: Key, a: HoldOptions | ((lease: Lease) => T | PromiseLike<T>), b?: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>> {
    // Not an async function: a free key is held, run and released without a promise of its own. Every
    // error still comes as a rejection.
    try {
      let fn = b
      let wait = this._wait
      let signal: AbortSignal | undefined
      const k = key === this.#lastKey ? key : this.#key(key)
      if (typeof a === 'function') {
        fn = a
        if (b !== undefined) throw afterFn(this.#place(k), 'hold')
      } else if ((wait = plainWait(a, wait)) !== wait) ({ wait, signal } = this.#holdOptions(a, k))
      if (typeof fn !== 'function') throw new InvalidError(`${this.#place(k)}: hold needs a function to run`)
      const held = this._store._hold(this, k, wait, signal, fn)
      if (held === undefined) throw heldByAnother(this.#place(k), wait)
      return held
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /** Takes `key` only if it is free and nobody waits; then runs fn as `hold` does. Never waits for another holder. */
  tryHold<T>(key: Key, fn: (lease: Lease) => T | PromiseLike<T>): Promise<TryHoldResult<Awaited<T>>>
  tryHold<T>(key: Key, options: TryHoldOptions, fn: (lease: Lease) => T | PromiseLike<T>): Promise<TryHoldResult<Awaited<T>>>
  tryHold<T>(
    key: Key,
    a: TryHoldOptions | ((lease: Lease) => T | PromiseLike<T>),
    b?: (lease: Lease) => T | PromiseLike<T>,
  ): Promise<TryHoldResult<Awaited<T>>> {
    // The commonest try, one that fails on a lock's key held on this side (see below), with a key
    // held through this handle before: answered in a few bytes of code. V8 and JSC tier a function
    // up after a number of runs scaled by its whole size, so an answer taken early in a large one
    // stays in the slow tiers for many more calls (W5 times 100,000 of them).
    const r = this._resource
    if (key === this.#lastKey && typeof a === 'function' && b === undefined && r.limit === 1 && !r.remote && r.keys.has(key) && !this._store.closed) {
      return NOT_ACQUIRED_PROMISE
    }
    return this.#tryHold(key, a, b)
  }

  #tryHold<T>(
    key: Key,
    a: TryHoldOptions | ((lease: Lease) => T | PromiseLike<T>),
    b?: (lease: Lease) => T | PromiseLike<T>,
  ): Promise<TryHoldResult<Awaited<T>>> {
    try {
      let fn = b
      let signal: AbortSignal | undefined
      const k = key === this.#lastKey ? key : this.#key(key)
      if (typeof a === 'function') {
        fn = a
        if (b !== undefined) throw afterFn(this.#place(k), 'tryHold')
      } else {
        signal = tryHoldSignal(a, () => this.#place(k))
      }
      if (typeof fn !== 'function') throw new InvalidError(`${this.#place(k)}: tryHold needs a function to run`)
      // A lock's key is busy on this side exactly while the engine has a holder or a waiter for it,
      // and either makes a try fail: answer without crossing into wasm. (Not once holds came over a
      // connection: a waiter whose connection dropped keeps a key busy without making it held.)
      const r = this._resource
      if (r.limit === 1 && !r.remote && r.keys.has(k) && !this._store.closed) return NOT_ACQUIRED_PROMISE
      const taken = this._store._take(this, k, 0, signal, true)
      if (taken === undefined) return NOT_ACQUIRED_PROMISE
      return this.#tried(taken as Lease | Promise<Lease>, fn, signal)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  async #tried<T>(
    taken: Lease | Promise<Lease>,
    fn: (lease: Lease) => T | PromiseLike<T>,
    signal: AbortSignal | undefined,
  ): Promise<TryHoldResult<Awaited<T>>> {
    // A try that waits for storage (no fence left to lend) may see its signal abort once granted.
    const value = await this._store._run(this, taken, fn, signal)
    return { acquired: true, value }
  }

  /** Waits for `key` and resolves to its lease; release it with `lease.release()` or `await using`. */
  acquire(key: Key, options?: HoldOptions): Promise<Lease>
  acquire(key: Key, options?: HoldOptions, more?: unknown): Promise<Lease> {
    try {
      const k = toKey(key, this.#place())
      if (more !== undefined) throw afterOptions(this.#place(k))
      const { wait, signal } = options === undefined ? { wait: this._wait, signal: undefined } : this.#holdOptions(options, k)
      const taken = this._store._take(this, k, wait, signal, false)
      if (taken === undefined) throw heldByAnother(this.#place(k), wait)
      return taken instanceof Lease ? Promise.resolve(taken) : (taken as Promise<Lease>)
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * `key` checked (util/key.ts), as a string; a string that passes as it is is kept as `#lastKey`, so
   * that the next hold of the same key (a string is immutable) skips the check, `isWellFormed` a call
   * out of optimized code each time.
   */
  #key(key: Key): string {
    if (typeof key === 'string' && key.length !== 0 && key.length <= 341 && key.isWellFormed()) return (this.#lastKey = key)
    return toKey(key, this.#place())
  }

  #holdOptions(options: unknown, key: string): { wait: number; signal: AbortSignal | undefined } {
    return holdOptions(options, () => this.#place(key), this._wait)
  }

  #place(key?: string): string {
    return placeOf(this.kind, this.name, key)
  }
}

export class Semaphore extends Lock {
  /** How many may hold a key at once. */
  get limit(): number {
    return this._resource.limit
  }
}

/** The parameters of the constructor `Lock` hides, and `Semaphore` inherits (see Lease's constructor). */
type LockArgs = [store: LockStore, resource: Resource, ttl: number, maxHold: number, wait: number, pin: object | undefined]

/** @internal Makes a lock: `Lock` itself, typed with the constructor its published type hides. */
export const MadeLock = Lock as unknown as new (...args: LockArgs) => Lock
/** @internal Makes a semaphore: `Semaphore` itself, typed with the constructor its published type hides (`Lock`'s). */
export const MadeSemaphore = Semaphore as unknown as new (...args: LockArgs) => Semaphore

/** A lease's ttl (ms): 1 s to 1 h, as the engine bounds it (bounds.rs). */
const TTL_MS = [1_000, 3_600_000] as const
/** A lease's maxHold (ms): at most 30 days. */
const MAX_HOLD_MS = 30 * 24 * 3_600_000

/**
 * A handle's `ttl` and `maxHold` (ms, from `handleOptions`) for a store whose engine is not in this
 * process (Redis, the Workers' store), judged as a local store's engine judges them: in whole
 * milliseconds (a maxHold of 0.5 ms is none, a ttl of 1 h and half a millisecond is 1 h), and named
 * as given when refused. Answers them in whole ms.
 */
export function leaseBounds(o: { ttl: number; maxHold: number; hasMaxHold: boolean }, place: string): { ttl: number; maxHold: number } {
  const ttl = Math.trunc(o.ttl)
  const maxHold = Math.trunc(o.maxHold)
  if (!(ttl >= TTL_MS[0] && ttl <= TTL_MS[1])) throw new InvalidError(`${place}: ttl ${o.ttl}ms must be 1s to 1h`)
  if (o.hasMaxHold && !(maxHold >= 1 && maxHold <= MAX_HOLD_MS)) throw new InvalidError(`${place}: maxHold ${o.maxHold}ms must be 1ms to 30 days`)
  return { ttl, maxHold }
}

/** Parses a handle's options; throws `InvalidError` naming the bad one. */
export function handleOptions(options: unknown, place: string, semaphore: boolean) {
  const o = checkOptions(options, place, semaphore ? ['ttl', 'maxHold', 'wait', 'limit'] : ['ttl', 'maxHold', 'wait'])
  const ttl = o.ttl === undefined ? 30_000 : toMs(o.ttl, `${place}: ttl`)
  const maxHold = o.maxHold === undefined ? 0 : toMs(o.maxHold, `${place}: maxHold`)
  const wait = o.wait === undefined ? 10_000 : toMs(o.wait, `${place}: wait`, true)
  let limit = 1
  if (semaphore) {
    if (o.limit === undefined) throw new InvalidError(`${place}: option limit is required (1 to 10000)`)
    if (typeof o.limit !== 'number' || !Number.isInteger(o.limit) || o.limit < 1 || o.limit > 10_000) {
      throw new InvalidError(`${place}: limit ${shown(o.limit)} must be a whole number from 1 to 10000`)
    }
    limit = o.limit
  }
  return { ttl, maxHold, wait, limit, hasMaxHold: o.maxHold !== undefined }
}

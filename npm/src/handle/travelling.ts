/**
 * What every handle (`Lock`, `RemoteLock`, `WorkerLock`) does the same way before a hold reaches its
 * store: naming the place in errors, and reading the options of `hold`, `acquire` and `tryHold`. A
 * signal that already aborted is refused before anything is asked.
 *
 * `TravellingHandle` is the whole of `hold` / `tryHold` / `acquire` for the handles whose holds travel
 * (over a connection, Workers RPC, or Redis): their store answers `_take` with a promise of the lease
 * (or `undefined` when the key was busy and the hold would not wait), and runs fn with `_run`, a job
 * after the lease came: a signal that aborted between the two cancels the hold there
 * (`cancelledAtGrant`). The in-process `Lock` has its own, which takes a free key without a promise.
 */

import { CancelledError, InvalidError, heldByAnother } from '../errors.js'
import { toMs } from '../util/duration.js'
import { toKey } from '../util/key.js'
import { checkOptions, checkSignal } from '../util/options.js'
import type { Lease } from './lease.js'
import type { HoldOptions, Resource as SharedResource, TryHoldOptions, TryHoldResult } from '../types.js'

/** A resource as this package's stores keep it: a key granted without the engine stands as its lease. */
type Resource = SharedResource<Lease>

type Key = string | number

/** `lock NAME`, or `lock NAME: key "KEY"`: where an error happened. */
export function placeOf(kind: string, name: string, key?: string): string {
  return key === undefined ? `${kind} ${name}` : `${kind} ${name}: key ${JSON.stringify(key)}`
}

/**
 * `hold(key, fn, options)`: options after fn (the order of some other libraries) would be dropped
 * silently, their signal and wait unheard, so they are refused, as an unknown option name is.
 */
export function afterFn(place: string, what: 'hold' | 'tryHold'): InvalidError {
  return new InvalidError(`${place}: ${what} takes (key, [options], fn): nothing after fn`)
}

/**
 * `acquire(key, options, fn)`: a fn after the options (`hold`'s order, meant as a hold) would never
 * run, and its lease never be released, so anything past the options is refused. One left `undefined`
 * (a wrapper passing its own along) is none.
 */
export function afterOptions(place: string): InvalidError {
  return new InvalidError(`${place}: acquire takes (key, [options]): nothing after options`)
}

/**
 * The options of `hold` and `acquire`: `wait` (the handle's unless given) and `signal`. `place` is
 * asked only for an error: the common options (`{ wait }` with a number, `{ signal }`) are read
 * without building it (a JSON of the key).
 */
export function holdOptions(options: unknown, place: () => string, defaultWait: number): { wait: number; signal: AbortSignal | undefined } {
  const o = options as { wait?: unknown; signal?: unknown } | null
  if (typeof o === 'object' && o !== null && !Array.isArray(o) && hasOnly(o)) {
    const w = o.wait
    if (w === undefined || (typeof w === 'number' && (w === Infinity || (Number.isFinite(w) && w >= 0)))) {
      return { wait: w ?? defaultWait, signal: o.signal === undefined ? undefined : liveSignal(o.signal, place) }
    }
  }
  const at = place()
  const checked = checkOptions(options, at, ['wait', 'signal'])
  const wait = checked.wait === undefined ? defaultWait : toMs(checked.wait, `${at}: wait`, true)
  return { wait, signal: liveSignal(checked.signal, place) }
}

/**
 * The wait of the commonest options, read with nothing made (no object, no closure): `{ wait }` with
 * a valid number, and no signal. `NaN` for anything else, which `holdOptions` reads (and checks).
 */
export function plainWait(options: unknown, defaultWait: number): number {
  const o = options as { wait?: unknown; signal?: unknown } | null
  if (typeof o !== 'object' || o === null || o.signal !== undefined || Array.isArray(o)) return Number.NaN
  // hasOnly, written out: one call less on every hold that passes options.
  for (const name in o) if (name !== 'wait' && name !== 'signal') return Number.NaN
  const w = o.wait
  if (w === undefined) return defaultWait
  return typeof w === 'number' && (w === Infinity || (Number.isFinite(w) && w >= 0)) ? w : Number.NaN
}

/** The options of `tryHold`: only `signal`. */
export function tryHoldSignal(options: unknown, place: () => string): AbortSignal | undefined {
  return liveSignal(checkOptions(options, `${place()}: tryHold`, ['signal']).signal, place)
}

/** Whether an options object names nothing but `wait` and `signal` (else `checkOptions` names the stranger). */
function hasOnly(o: object): boolean {
  for (const name in o) if (name !== 'wait' && name !== 'signal') return false
  return true
}

function liveSignal(value: unknown, place: () => string): AbortSignal | undefined {
  if (value === undefined) return undefined
  const signal = checkSignal(value, place())
  if (signal?.aborted) throw new CancelledError(`${place()}: cancelled before it began`, { cause: signal.reason })
  return signal
}

/**
 * A hold or a try whose lease came, and whose signal aborted before the job that would run its fn
 * (what ran first in that turn aborted it: the fn of a hold granted in the same message, or code after
 * whatever resolved the lease). Its store's abort listener no longer cancels a hold once granted, so
 * it is cancelled here, as in process (handle/run-in-lease.ts `runWhenGranted`): the lease let go (a
 * workerStore's release awaited, as a hold's end is), `CancelledError` with the reason as its cause.
 * So fn never starts once its signal aborted, whichever store and runtime.
 */
async function cancelledAtGrant(lease: Lease, signal: AbortSignal): Promise<never> {
  try {
    await lease.release()
  } catch {
    // the lease ends at its ttl; this hold is answered below all the same
  }
  throw new CancelledError(`${placeOf(lease.kind, lease.name, lease.key)}: cancelled while waiting`, { cause: signal.reason })
}

/** The store side of a travelling handle. */
export interface TravellingStore<H, L extends Lease> {
  /** @internal */
  _take(handle: H, key: string, wait: number, signal: AbortSignal | undefined, isTry: boolean): Promise<L | undefined>
  /** @internal */
  _run<T>(handle: H, lease: L, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>>
  /**
   * @internal Where set: the whole of a `hold` (its arguments checked), the store running fn itself when
   * the key comes, with no promise of the lease (a connection's, where a context can be kept).
   */
  readonly _hold?: <T>(handle: H, key: string, wait: number, signal: AbortSignal | undefined, fn: (lease: Lease) => T | PromiseLike<T>) => Promise<Awaited<T>>
}

/** The parameters of the constructor `TravellingHandle` hides, its subclasses' `super` (see Lease's constructor). */
type HandleArgs = [resource: Resource, limit: number, ttl: number, maxHold: number, wait: number]

/** `hold`, `tryHold` and `acquire` of a handle whose holds travel; see the module doc. */
export abstract class TravellingHandle<L extends Lease> {
  /** @internal */ readonly _resource: Resource
  /** @internal maxHold in ms, 0 for none. */ readonly _maxHold: number
  /** @internal the default wait in ms. */ readonly _wait: number
  readonly kind: 'lock' | 'semaphore'
  readonly name: string
  /** How many may hold a key at once (1 for a lock). */
  readonly limit: number
  /** The lease ttl in ms: a lease lasts this long from its last renewal. */
  readonly ttl: number

  /** Locks and semaphores are made by a store's `lock()` and `semaphore()`, never by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  /** @internal Its subclasses'. */
  protected constructor(...args: HandleArgs)
  protected constructor(...[resource, limit, ttl, maxHold, wait]: HandleArgs) {
    this._resource = resource
    this.kind = resource.kind
    this.name = resource.name
    this.limit = limit
    this.ttl = ttl
    this._maxHold = maxHold
    this._wait = wait
  }

  /** @internal The store the holds go to. */
  protected abstract get _to(): TravellingStore<this, L>

  /**
   * Waits for `key`, runs `fn(lease)` (renewing the lease meanwhile), lets the key go when fn settles,
   * and resolves to fn's result; rejects as `Lock.hold` does.
   */
  hold<T>(key: Key, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>>
  hold<T>(key: Key, options: HoldOptions, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>>
  hold<T>(key: Key, a: HoldOptions | ((lease: Lease) => T | PromiseLike<T>), b?: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>> {
    // Not an async function: the lease's promise goes straight on to fn (one reaction, no frame to
    // resume). Its callback runs in the caller's async context, as an await would.
    let fn: ((lease: Lease) => T | PromiseLike<T>) | undefined
    let k: string
    let taken: Promise<L | undefined>
    let wait: number
    let signal: AbortSignal | undefined
    try {
      // The checks in the in-process `Lock.hold`'s order (the key, what follows fn, the options, fn),
      // so that a call with two faults is refused for the same one by every store.
      k = toKey(key, placeOf(this.kind, this.name))
      if (typeof a === 'function') {
        fn = a
        if (b !== undefined) throw afterFn(placeOf(this.kind, this.name, k), 'hold')
        wait = this._wait
      } else {
        fn = b
        ;({ wait, signal } = holdOptions(a, () => placeOf(this.kind, this.name, k), this._wait))
      }
      if (typeof fn !== 'function') throw new InvalidError(`${placeOf(this.kind, this.name, k)}: hold needs a function to run`)
      const to = this._to
      if (to._hold !== undefined) return to._hold(this, k, wait, signal, fn)
      taken = to._take(this, k, wait, signal, false)
    } catch (error) {
      return Promise.reject(error)
    }
    return taken.then(lease => {
      if (!lease) throw heldByAnother(placeOf(this.kind, this.name, k), wait)
      if (signal?.aborted) return cancelledAtGrant(lease, signal)
      return this._to._run(this, lease, fn)
    })
  }

  /** Takes `key` only if it is free and nobody waits; then runs fn as `hold` does. */
  tryHold<T>(key: Key, fn: (lease: Lease) => T | PromiseLike<T>): Promise<TryHoldResult<Awaited<T>>>
  tryHold<T>(key: Key, options: TryHoldOptions, fn: (lease: Lease) => T | PromiseLike<T>): Promise<TryHoldResult<Awaited<T>>>
  async tryHold<T>(
    key: Key,
    a: TryHoldOptions | ((lease: Lease) => T | PromiseLike<T>),
    b?: (lease: Lease) => T | PromiseLike<T>,
  ): Promise<TryHoldResult<Awaited<T>>> {
    // In the in-process `Lock.tryHold`'s order, as `hold` above.
    const k = toKey(key, placeOf(this.kind, this.name))
    if (typeof a === 'function' && b !== undefined) throw afterFn(placeOf(this.kind, this.name, k), 'tryHold')
    const signal = typeof a === 'function' ? undefined : tryHoldSignal(a, () => placeOf(this.kind, this.name, k))
    const fn = typeof a === 'function' ? a : b
    if (typeof fn !== 'function') throw new InvalidError(`${placeOf(this.kind, this.name, k)}: tryHold needs a function to run`)
    const lease = await this._to._take(this, k, 0, signal, true)
    if (!lease) return { acquired: false }
    if (signal?.aborted) return cancelledAtGrant(lease, signal)
    return { acquired: true, value: await this._to._run(this, lease, fn) }
  }

  /**
   * Waits for `key` and resolves to its lease, renewed until you release it (`await lease.release()`
   * or `await using`). Not released, it ends at maxHold, or after its ttl once this process is gone.
   */
  acquire(key: Key, options?: HoldOptions): Promise<L>
  async acquire(key: Key, options?: HoldOptions, more?: unknown): Promise<L> {
    const k = toKey(key, placeOf(this.kind, this.name))
    if (more !== undefined) throw afterOptions(placeOf(this.kind, this.name, k))
    const { wait, signal } =
      options === undefined ? { wait: this._wait, signal: undefined } : holdOptions(options, () => placeOf(this.kind, this.name, k), this._wait)
    const lease = await this._to._take(this, k, wait, signal, false)
    if (!lease) throw heldByAnother(placeOf(this.kind, this.name, k), wait)
    return lease
  }
}

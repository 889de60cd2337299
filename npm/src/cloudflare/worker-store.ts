/**
 * `workerStore(env.HOLDFAST, { shard })`: the lock and semaphore API of a store, in Worker code, over
 * Workers RPC to `HoldfastObject`s; and its pools (`pool(name, { capacity })`, worker-pools.ts).
 *
 * # Which object
 * Holds go to the object named by the lock's name (`idFromName(name)`): one object per lock or
 * semaphore name, which serves every key of it. With `shard: N`, the keys of a name are spread over N
 * objects (`idFromName(name + '/' + i)`, i the FNV-1a hash of the key's UTF-8 bytes modulo N), for
 * names whose traffic one object cannot carry: an object serves its requests one at a time, about
 * 1,000 requests a second at most (Cloudflare's soft limit per object), and each hold costs an
 * acquire, a release, and a renewal every ttl/3. **N must never change for a live name**: two values
 * of N send one key to two objects, which would both grant it. Lines and fences are per object.
 *
 * # Leases
 * A lease lasts its `ttl` from its grant and from each renewal (LOCK-05). While fn runs, it is renewed
 * every ttl/3, by the loop a connection's client uses too (renewal.ts): this side counts its own
 * deadline from when each renewal was sent, minus a margin, so that it gives up before the object
 * does: when the deadline passes with no answered renewal, when a renewal answers lost, or at maxHold,
 * `lease.signal` aborts with a `LostError`, and `hold` rejects `LostError` after fn settles. It never
 * renews past that deadline. A Worker that dies mid-hold stops renewing: its key is free after its
 * ttl. `hold` and `lease.release()` wait for the object to take the release. Time is `Date.now()`,
 * which in workerd moves only between I/O.
 *
 * # Failures
 * An `acquire` whose call failed in a way Workers RPC marks retryable (the object restarted, a
 * connection was lost) is asked again with the same request id, a few times within its wait: it is
 * never granted twice (a grant that was made answers again with the same lease and fence). An
 * overloaded object is a `LimitError`; any other failure of the call a `ClosedError` with the call's
 * error as its `cause`.
 */

import { CancelledError, ClosedError, InvalidError, LimitError, type LostError, errorOf } from '../errors.js'
import { toKey } from '../util/key.js'
import { checkOptions } from '../util/options.js'
import { Lease, type LeaseOwner } from '../handle/lease.js'
import { handleOptions, leaseBounds } from '../handle/lock.js'
import type { LockOptions, Resource as SharedResource, SemaphoreOptions } from '../types.js'
import { randomId } from '../util/random.js'
import type { ContextStorage } from '../handle/context.js'
import { findAsyncLocalStorage } from './context.js'
import type { AcquireOptions, DurableObjectNamespaceLike, HoldfastObjectRpc, LeaseGrant } from './types.js'
import { runInLease } from '../handle/run-in-lease.js'
import { TravellingHandle } from '../handle/travelling.js'
import { ResourceNames } from '../handle/resource-names.js'
import { isClock, pause, type Clock } from '../util/clock.js'
import { Renewal, type Renewed } from '../remote/renewal.js'
import type { Pool } from '../pool/pool.js'
import type { PoolOptions } from '../pool/types.js'
import { WorkerPools } from './worker-pools.js'
import { cancellable } from './cancellable.js'
import { background } from './background.js'
import { checkName } from '../util/name.js'
import { shown } from '../util/shown.js'

/** A resource as this package's stores keep it: a key granted without the engine stands as its lease. */
type Resource = SharedResource<Lease>

export interface WorkerStoreOptions {
  /**
   * Spread each name's keys over this many objects (1 to 1,000; default: one object per name). Never
   * change it for a name that is in use.
   */
  shard?: number
  /** @internal for tests: the clock of leases' deadlines and renewals, and of the waits before a failed call is asked again (default: `Date.now()`, real timers). */
  clock?: Clock
}

/** `Date.now()` and real timers: in workerd, `performance.now()` is no better (both move between I/O). */
const workersClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: handle => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

/** How many times a failed call is asked again, at most. */
const RETRIES = 3

/** 32-bit FNV-1a of a string's UTF-8 bytes. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash >>> 0
}

/**
 * The name of the object that serves `key` of the lock or semaphore `name` (what `idFromName` is
 * given): `name`, or with `shard: N`, `name/i` for i = fnv1a(key) mod N.
 */
export function objectName(name: string, key: string | number, options?: WorkerStoreOptions): string {
  // Checked as workerStore's (the same options may be passed to both): a misspelt shard would name
  // the unsharded object, where the Worker's holds of the key do not go.
  const place = `objectName ${String(name)}`
  const shard = checkShard(checkOptions(options, place, ['shard', 'clock']).shard, place)
  const k = toKey(key, `objectName ${name}`)
  return shard === undefined ? name : `${name}/${fnv1a(k) % shard}`
}

function checkShard(shard: unknown, place: string): number | undefined {
  if (shard === undefined) return undefined
  if (typeof shard !== 'number' || !Number.isInteger(shard) || shard < 1 || shard > 1_000) {
    throw new InvalidError(`${place}: shard ${shown(shard)} must be a whole number from 1 to 1000`)
  }
  return shard
}

/** A lease of a `workerStore`: `release()` resolves once the object took the release. */
export class WorkerLease extends Lease {
  readonly #store: WorkerStore

  /** Leases are granted by holds (`hold`, `tryHold`, `acquire`), never made by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[store, handle, key, fence, local]: WorkerLeaseArgs) {
    super(store, handle, key, fence, local)
    this.#store = store
  }

  override async release(): Promise<void> {
    this._end()
    await this.#store._released(this._req)
  }
}

/** A granted lease, as this side tracks it. */
class Held {
  renewal: Renewal | undefined

  constructor(
    readonly lease: WorkerLease,
    readonly leaseId: string,
    /** The name of the object that holds it (a stub is got anew for each call: see `#stubOf`). */
    readonly object: string,
  ) {}
}

export class WorkerStore implements LeaseOwner {
  readonly #namespace: DurableObjectNamespaceLike
  readonly #shard: number | undefined
  #context: ContextStorage | undefined
  #looked = false
  #nextLocal = 1
  /** Granted leases by local number. */
  readonly #held = new Map<number, Held>()
  /** Releases under way, by local number. */
  readonly #releases = new Map<number, Promise<void>>()
  readonly #resources = new ResourceNames()
  readonly #clock: Clock
  readonly #pools = new WorkerPools({
    stub: name => this.#stubOf(name),
    call: (place, object, call, wait, signal) => this.#call(place, object, call, wait, signal),
    pause: ms => pause(this.#clock, ms),
  })

  /** Worker stores are opened by `workerStore()`, never made by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[namespace, shard, clock = workersClock]: WorkerStoreArgs) {
    this.#namespace = namespace
    this.#shard = shard
    this.#clock = clock
  }

  /** A lock: one holder of a key at a time. */
  lock(name: string, options?: LockOptions): WorkerLock {
    return this.#handle('lock', name, options)
  }

  /** A semaphore: up to `limit` holders of a key at a time. */
  semaphore(name: string, options: SemaphoreOptions): WorkerLock {
    return this.#handle('semaphore', name, options)
  }

  /**
   * A pool (issue #16): `capacity` units, claimed `n` at a time, kept by the object named `name`
   * (see worker-pools.ts); claim, release, confirm, remaining and resize as on an in-process store.
   * Without a capacity, a pool the object has (its calls are refused when it has none).
   */
  pool(name: string, options?: PoolOptions): Pool {
    return this.#pools.pool(name, options)
  }

  #handle(kind: 'lock' | 'semaphore', name: unknown, options: unknown): WorkerLock {
    checkName(kind, name)
    const place = `${kind} ${name}`
    const o = handleOptions(options, place, kind === 'semaphore')
    // The object checks them too; checking here answers before anything is sent.
    const { ttl, maxHold } = leaseBounds(o, place)
    const resource = this.#resources.get(kind, name, o.limit)
    return new MadeWorkerLock(this, resource, o.limit, ttl, maxHold, o.wait)
  }

  /** The name of the object that keeps `key` of the lock or semaphore `name` (one of its shards). */
  #objectOf(name: string, key: string): string {
    return this.#shard === undefined ? name : `${name}/${fnv1a(key) % this.#shard}`
  }

  /**
   * A stub of the object named `object`, got anew for each call: once a call through a stub fails
   * with the object's reset, every later call through that stub fails the same way, while a new stub
   * reaches the object's next instance (which restored its leases). Getting one sends nothing.
   */
  #stubOf(object: string): HoldfastObjectRpc {
    return this.#namespace.get(this.#namespace.idFromName(object) as never) as HoldfastObjectRpc
  }

  // ---- holds ----

  /** @internal Asks for a key; resolves to the lease, or `undefined` when busy and `wait` is 0 (or, for a try, held by the caller's own context). */
  async _take(handle: WorkerLock, key: string, wait: number, signal: AbortSignal | undefined, isTry: boolean): Promise<WorkerLease | undefined> {
    const place = `${handle.kind} ${handle.name}: key ${JSON.stringify(key)}`
    if (!this.#looked) {
      const Als = await findAsyncLocalStorage()
      if (!this.#looked && Als) this.#context = new Als()
      this.#looked = true
    }
    if (this.#context && this.#heldByCaller(handle, key)) {
      if (isTry) return undefined
      throw new InvalidError(`${place}: held by this very hold (a hold inside its own hold would wait for itself)`)
    }
    // Aborted while this looked for AsyncLocalStorage: nothing is asked.
    if (signal?.aborted) throw new CancelledError(`${place}: cancelled before it began`, { cause: signal.reason })
    const object = this.#objectOf(handle.name, key)
    const request = randomId()
    const answering = this.#call(
      place,
      object,
      (stub, left) => {
        // Asked again, with what is left of the wait (not the whole of it each time).
        const options: AcquireOptions = { limit: handle.limit, ttl: handle.ttl, maxHold: handle._maxHold, wait: left === Infinity ? null : left, request }
        return isTry ? stub.tryAcquire(handle.kind, handle.name, key, options) : stub.acquire(handle.kind, handle.name, key, options)
      },
      wait,
      signal,
    )
    const answer = await cancellable(
      place,
      signal,
      answering,
      // Asked again of the next instance if the object reset first (`#call`): one granted before the
      // reset, its answer lost with it, was taken back there, and is found by its request id.
      () => this.#call(place, object, stub => stub.cancel(request), 0),
      // A grant that raced the cancel is let go, asked again as any release is (`#releaseOf`), beyond
      // the request if need be: its caller, told CancelledError, may have answered already.
      answer => {
        if ('ok' in answer && answer.ok) background(this.#releaseOf(place, object, answer.ok.lease))
      },
    )
    if ('error' in answer) throw errorOf(answer.error.code, answer.error.message)
    if (answer.ok === null) return undefined
    return this.#granted(handle, key, object, answer.ok)
  }

  /**
   * Calls the object named `object`, asking again (the call's own arguments: the same request id)
   * after a retryable failure, within `wait`: each time through a new stub (see `#stubOf`), given
   * what is left of the wait. Never again once `signal` aborted: its cancel, sent then, found nothing
   * on the object, and a request asked after it would wait there for nobody.
   */
  async #call<T>(place: string, object: string, call: (stub: HoldfastObjectRpc, left: number) => Promise<T>, wait: number, signal?: AbortSignal): Promise<T> {
    const started = this.#clock.now()
    for (let attempt = 0; ; attempt++) {
      try {
        return await call(this.#stubOf(object), wait === Infinity ? Infinity : Math.max(0, wait - (this.#clock.now() - started)))
      } catch (error) {
        const e = error as { retryable?: unknown; overloaded?: unknown; durableObjectReset?: unknown; message?: unknown } | null
        if (e?.overloaded === true) throw new LimitError(`${place}: the Durable Object is overloaded`, { cause: error })
        const retryable = e?.retryable === true || e?.durableObjectReset === true
        const backoff = 50 * 2 ** attempt
        if (!retryable || attempt >= RETRIES || this.#clock.now() - started + backoff > Math.max(wait, 1_000)) {
          throw new ClosedError(`${place}: the call to its Durable Object failed: ${String(e?.message ?? error)}`, { cause: error })
        }
        if (!signal?.aborted) await pause(this.#clock, backoff)
        if (signal?.aborted) throw new CancelledError(`${place}: cancelled while waiting`, { cause: signal.reason })
      }
    }
  }

  #granted(handle: WorkerLock, key: string, object: string, grant: LeaseGrant): WorkerLease {
    const local = this.#nextLocal++
    const lease = new MadeWorkerLease(this, handle, key, grant.fence, local)
    const held = new Held(lease, grant.lease, object)
    this.#held.set(local, held)
    // The first deadline counts from the grant's arrival (as over a connection); the margin covers the
    // time the answer took to come.
    held.renewal = new Renewal(
      this.#clock,
      { renew: () => this.#renewOf(held), lose: reason => this.#lose(held, reason) },
      lease,
      handle.ttl,
      grant.ttl,
      grant.revokeIn,
    )
    return lease
  }

  /** Asks the object to renew a lease (see renewal.ts): no answer when the call failed. */
  async #renewOf(held: Held): Promise<Renewed> {
    const answer = await this.#stubOf(held.object).renew(held.leaseId)
    if ('ok' in answer) return { ttl: answer.ok.ttl }
    if (answer.error.code === 'lost') return { refused: answer.error.message }
    return undefined
  }

  #lose(held: Held, reason: LostError): void {
    this.#forget(held)
    held.lease._lose(reason)
  }

  #forget(held: Held): void {
    this.#held.delete(held.lease._req)
    held.renewal?.stop()
  }

  /** @internal The clock a lease's deadline is counted on. */
  _now(): number {
    return this.#clock.now()
  }

  /** @internal A lease read past its deadline (see lease.ts # Reading checks the clock). */
  _overdue(lease: Lease): void {
    const held = this.#held.get(lease._req)
    if (held?.lease === lease) held.renewal?.overdue()
  }

  /** @internal Called by a `Lease` once: lets the key go on the object. */
  _release(local: number): void {
    const held = this.#held.get(local)
    if (!held) return
    this.#forget(held)
    const place = `${held.lease.kind} ${held.lease.name}: key ${JSON.stringify(held.lease.key)}`
    const releasing = this.#releaseOf(place, held.object, held.leaseId).then(
      () => {},
      () => {}, // the lease ends at its ttl
    )
    this.#releases.set(local, releasing)
    // Awaited by hold and release(); a lease let go otherwise (its release() not awaited) is released all the same.
    background(releasing)
    void releasing.then(() => this.#releases.delete(local))
  }

  /**
   * Asks the object to release a lease; again, at most RETRIES more times, while it answers `storage`:
   * its storage did not delete the kept lease, so it let nothing go (a restart would take the lease
   * back: object.ts `#unkeep`). A call that failed in a way Workers RPC marks retryable (the object
   * reset, as at a deploy, its delete not done) is asked again of the next instance, which took the
   * lease back (`#call`): a release is the same when asked again. A release never taken ends at the
   * lease's ttl.
   */
  async #releaseOf(place: string, object: string, lease: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const answer = await this.#call(place, object, stub => stub.release(lease), 0)
      if (!('error' in answer) || answer.error.code !== 'storage' || attempt >= RETRIES) return
      await pause(this.#clock, 50 * 2 ** attempt)
    }
  }

  /** @internal Waits for the release of a lease (if one is under way). */
  async _released(local: number): Promise<void> {
    await this.#releases.get(local)
  }

  /** @internal Runs fn inside the lease, lets the key go when fn settles (waiting for the object to take it), and answers as `hold` does. */
  _run<T>(handle: WorkerLock, lease: WorkerLease, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>> {
    return runInLease(this.#context, handle._resource, lease, fn, async l => {
      const released = l._end()
      await this._released(l._req)
      return released
    })
  }

  #heldByCaller(handle: WorkerLock, key: string): boolean {
    for (let held: Lease | undefined = this.#context!.getStore(); held; held = held._parent) {
      if (held._resource === handle._resource && held.key === key && !held.lost && this.#held.get(held._req)?.lease === held) return true
    }
    return false
  }
}

/** A lock or semaphore of a `workerStore`: the API of `Lock`, over Workers RPC. */
export class WorkerLock extends TravellingHandle<WorkerLease> {
  readonly store: WorkerStore

  /** Locks and semaphores are made by a store's `lock()` and `semaphore()`, never by hand. */
  protected constructor(...internal: never)
  // The published types keep the overload above alone (see Lease's constructor).
  protected constructor(...[store, resource, limit, ttl, maxHold, wait]: WorkerLockArgs) {
    super(resource, limit, ttl, maxHold, wait)
    this.store = store
  }

  /** @internal */
  protected get _to(): WorkerStore {
    return this.store
  }
}

/** The parameters of the constructor `WorkerStore` hides (see Lease's constructor); a clock left out is `workersClock`. */
type WorkerStoreArgs = [namespace: DurableObjectNamespaceLike, shard: number | undefined, clock?: Clock]
/** The parameters of the constructor `WorkerLock` hides. */
type WorkerLockArgs = [store: WorkerStore, resource: Resource, limit: number, ttl: number, maxHold: number, wait: number]
/** The parameters of the constructor `WorkerLease` hides. */
type WorkerLeaseArgs = [store: WorkerStore, handle: { kind: 'lock' | 'semaphore'; name: string }, key: string, fence: number, local: number]

/** Makes a Worker store: `WorkerStore` itself, typed with the constructor its published type hides. */
const MadeWorkerStore = WorkerStore as unknown as new (...args: WorkerStoreArgs) => WorkerStore
/** Makes a Worker store's lock or semaphore: `WorkerLock` itself, typed with the constructor its published type hides. */
const MadeWorkerLock = WorkerLock as unknown as new (...args: WorkerLockArgs) => WorkerLock
/** Makes a Worker store's lease: `WorkerLease` itself, typed with the constructor its published type hides. */
const MadeWorkerLease = WorkerLease as unknown as new (...args: WorkerLeaseArgs) => WorkerLease

/**
 * A store for Worker code whose holds go to `HoldfastObject`s of `namespace` (the binding, such as
 * `env.HOLDFAST`): `lock`, `semaphore`, and their `hold`, `tryHold` and `acquire`, as in-process.
 */
export function workerStore(namespace: DurableObjectNamespaceLike, options?: WorkerStoreOptions): WorkerStore {
  const o = checkOptions(options, 'workerStore', ['shard', 'clock'])
  const ns = namespace as Partial<DurableObjectNamespaceLike> | null
  if (typeof ns !== 'object' || ns === null || typeof ns.idFromName !== 'function' || typeof ns.get !== 'function') {
    throw new InvalidError('workerStore: namespace must be a Durable Object namespace binding (env.HOLDFAST), bound to HoldfastObject')
  }
  if (o.clock !== undefined && !isClock(o.clock))
    throw new InvalidError('workerStore: option clock must have now(), setTimeout(fn, ms) and clearTimeout(handle)')
  return new MadeWorkerStore(namespace, checkShard(o.shard, 'workerStore'), o.clock as Clock | undefined)
}

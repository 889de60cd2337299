/**
 * The store: one engine (in wasm) and everything the engine leaves to its host — promises, timers,
 * `AbortSignal`s, the map from key strings to the engine's key ids, and the storage callback.
 *
 * # How a hold crosses into wasm
 * A hold of a lock's free key without maxHold does not (see # Keys granted here). Any other hold is
 * one call (`core.hold`) that answers its fence; its release is one more, whose events (the next
 * holder's grant, or the key going idle) the store reads from a buffer shared with the engine. Key
 * strings stay on this side: the engine names a busy key by an id, which `Resource.keys` maps to
 * while the key is busy and forgets when the engine says the key went idle. So idle keys cost nothing
 * on either side.
 *
 * # Handing a key over
 * A `hold` that waits keeps its fn and its caller's async context (`ContextStorage.capture`). When the
 * engine grants it — within the release of the holder before — the store runs its fn inside that
 * context, once the events of the call were all read: no promise of the lease and no async frame to
 * resume. When the release is a hold's own, after its fn settled, fn runs right there, so the next
 * holder starts in the same microtask as the last one ended, as in a plain JS queue; any other
 * release (`lease.release()`, a timer, a waiter's abort) is a caller's call, and the fns run in a
 * microtask after it, so that nobody's fn starts inside somebody else's call. Grants that come while
 * fns are being handed keys (a fn that answered at once, releasing again) join the queue `#handOver`,
 * run by the outermost loop in grant order: the stack stays flat, and the order is the engine's
 * (LOCK-01). Where no context can be kept (no `capture`), the waiter's promise
 * resolves to the lease and fn runs in the job that resumes it.
 *
 * # Keys granted here
 * A lock's free key, held without `maxHold`, is granted on this side: no call into wasm, its fence
 * the next of a block the engine lent (`core.lend`, in the buffer at `FENCE_NEXT`..`FENCE_END`), its
 * record the lease itself in `Resource.keys` in place of a key id, its release a delete. The engine
 * takes the block back at the start of its next call, from the first fence not taken, so fences stay
 * in grant order whoever granted them. The first request the key's holder does not answer alone (a
 * hold that would wait, a hold over a connection) hands the holding to the engine first
 * (`core.adopt`: a busy key with this lease as its holder), and everything after goes the engine's
 * way until the key is idle again. A key granted here is never known to the engine, so nothing there
 * can be due for it: only a maxHold or a ttl sets a deadline, and those holds go to the engine.
 *
 * # Names nobody uses
 * A name costs an entry here (`#byId`: its `Resource`, with its busy keys) and in the engine only while
 * something refers to it: a busy key (in the engine, or granted here: both are in `Resource.keys`,
 * and a waiter or a request over a connection is on a busy key) or a live handle. Then the store
 * forgets it (`#forgetIfUnused`, `core.forget`); asked for again, the name is registered anew. Two
 * `Resource`s of one name never exist at once, or a key granted here could be granted twice: a name
 * is forgotten only when none of its keys is busy and no handle of it can be reached. Handles are
 * the user's, so the store cannot see them go: every handle of a name holds the name's *pin* (one
 * object), which the store watches through a `WeakRef` and a `FinalizationRegistry`. `Resource.pin`
 * is `undefined` once the pin was collected (or for a name only the server asked for: its handles,
 * one per hold over a connection, pin nothing). A name is forgotten where it may have become unused,
 * never on the hot path of a name in use: when the pin is collected (idle names), and when a key goes
 * idle while the name is not pinned (a lease outliving its handles). Without `FinalizationRegistry`
 * a pinned name is kept, as every name was before.
 *
 * # Answering everyone
 * Every request the engine knows is recorded in `#reqs` (by the index of its id) as a `Waiter` or a
 * `Lease`, so that every event finds whom to answer, and so that if the engine ever traps, the store
 * can still answer every waiter and end every lease before it closes.
 */

import { type Core, openCore, checkTtl, checkMaxHold, checkName } from '../../wasm/holdfast_wasm.js'
import { RemoteRequest } from '../remote/request.js'
import { runHandedOver, runInLease } from '../handle/run-in-lease.js'
import { ClosedError, CancelledError, InUseError, InvalidError, LimitError, LostError, StorageError, fromEngine } from '../errors.js'
import { Lease, type LeaseOwner } from '../handle/lease.js'
import { Lock, Semaphore, handleOptions, type LockStore } from '../handle/lock.js'
import type { ContextStorage, Scope } from '../handle/context.js'
import type { ServedStore } from '../remote/host.js'
import type { KeyIds as SharedKeyIds, KeyInfo, LockOptions, Resource as SharedResource, SemaphoreOptions } from '../types.js'
import { checkOptions } from '../util/options.js'
import { isStorage, type Storage } from '../storage/storage.js'
import { clearTimer, isClock, setTimer, systemClock, type Clock } from '../util/clock.js'
import { serveOn, type HoldfastServer, type ServeOptions, type Server } from '../remote/server.js'
import type { Transport } from '../runtime/transport.js'
import {
  BUSY,
  ENDED,
  EVENT_SIZE,
  EVENT_SLOTS,
  EVENTS,
  EXPIRED,
  FAILED,
  FENCE_END,
  FENCE_NEXT,
  GRANTED,
  HOLD_EVENTS,
  IDLE_BASE,
  INVALID,
  KEY,
  KEY_IDLE,
  LIMIT,
  NEED_TIME,
  REQ,
  RESUMED,
  RESUMED_FENCE,
  REVOKE_IN,
  REVOKED,
  TIMED_OUT,
} from './abi.js'

/** A resource as the store keeps it: a key granted here stands as its lease. */
type Resource = SharedResource<Lease>
type KeyIds = SharedKeyIds<Lease>

/** How many fences to borrow at once: one call into wasm per this many keys granted here. */
const LEND = 4096
/** The request id of a lease granted here: `HERE - the place of its resource id` (negative; the engine's ids are not). */
const HERE = -1

/** What a runtime's entry gives the store. */
export interface Platform {
  /** Instantiates the wasm once (synchronously) and answers its memory. */
  init(): WebAssembly.Memory
  /** Tracks the holds an async context is inside of, to refuse a hold of a key inside its own hold. */
  context?: ContextStorage
  /** The storage of `openStore()` without one. */
  defaultStorage(): Storage
  /** How servers listen and clients connect (`ws` on Node and Bun). */
  transport?: Transport
}

export interface StoreOptions {
  /** Where fences are kept (default on Node and Bun: `fileStorage('./.holdfast')`). */
  storage?: Storage
  /** The clock (default: `performance.now()` and real timers; tests pass `manualClock()`). */
  clock?: Clock
}

/**
 * A store's busy keys of one resource: the first in a slot of its own, any others in a `Map`. A key
 * that is held, let go and held again (or many keys, one after another) then costs no `Map` insert
 * and delete per hold, which on V8 rehash the table every few operations.
 */
export class SlotKeyIds implements KeyIds {
  #key: string | undefined = undefined
  #id: number | Lease = 0
  readonly #more = new Map<string, number | Lease>()

  get size(): number {
    return (this.#key === undefined ? 0 : 1) + this.#more.size
  }

  get(key: string): number | Lease | undefined {
    if (key === this.#key) return this.#id
    return this.#more.size === 0 ? undefined : this.#more.get(key)
  }

  has(key: string): boolean {
    return key === this.#key || (this.#more.size !== 0 && this.#more.has(key))
  }

  set(key: string, id: number | Lease): this {
    if (key === this.#key || (this.#key === undefined && !this.#more.has(key))) {
      this.#key = key
      this.#id = id
    } else this.#more.set(key, id)
    return this
  }

  delete(key: string): boolean {
    if (key === this.#key) {
      this.#key = undefined
      this.#id = 0
      return true
    }
    return this.#more.delete(key)
  }

  clear(): void {
    this.#key = undefined
    this.#id = 0
    this.#more.clear()
  }

  *values(): IterableIterator<number | Lease> {
    if (this.#key !== undefined) yield this.#id
    yield* this.#more.values()
  }
}

/** A hold of a key inside its own hold, which would wait for itself (LOCK-04). */
function selfHoldError(handle: Lock, key: string): InvalidError {
  return new InvalidError(
    `${handle.kind} ${handle.name}: key ${JSON.stringify(key)}: held by this very hold (a hold inside its own hold would wait for itself)`,
  )
}

/**
 * A hold waiting in line. Without `fn`, its promise resolves to the lease; with one (a `hold` handed its
 * key directly, in `scope`), to what the hold answers.
 */
class Waiter {
  readonly handle: Lock
  readonly key: string
  readonly req: number
  readonly wait: number
  readonly signal: AbortSignal | undefined
  readonly fn: ((lease: Lease) => unknown) | undefined
  readonly scope: Scope | undefined
  readonly promise: Promise<unknown>
  resolve!: (value: unknown) => void
  reject!: (error: unknown) => void
  onAbort: (() => void) | undefined

  constructor(
    handle: Lock,
    key: string,
    req: number,
    wait: number,
    signal: AbortSignal | undefined,
    fn: ((lease: Lease) => unknown) | undefined,
    scope: Scope | undefined,
  ) {
    this.handle = handle
    this.key = key
    this.req = req
    this.wait = wait
    this.signal = signal
    this.fn = fn
    this.scope = scope
    this.promise = new Promise<unknown>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }

  place(): string {
    return `${this.handle.kind} ${this.handle.name}: key ${JSON.stringify(this.key)}`
  }

  /** Stops listening to the signal: the waiter was answered. */
  settled(): void {
    if (this.onAbort) this.signal!.removeEventListener('abort', this.onAbort)
  }
}

export class Store implements LeaseOwner, LockStore, ServedStore {
  readonly #core: Core
  readonly #memory: WebAssembly.Memory
  readonly #ptr: number
  #buf: Float64Array
  readonly #bufLen: number
  readonly #clock: Clock
  readonly #storage: Storage
  readonly #context: ContextStorage | undefined
  /** Every live request by the index of its id. */
  readonly #reqs: (Waiter | Lease | RemoteRequest | undefined)[] = []
  /** Every busy key's string and resource, by the index of its id. */
  readonly #keyName: (string | undefined)[] = []
  readonly #keyResource: (Resource | undefined)[] = []
  /** Every name in use by the place of its resource id (see # Names nobody uses). */
  readonly #byId: (Resource | undefined)[] = []
  /** Watches the pins of handles (see # Names nobody uses); `undefined` where the runtime has none. */
  readonly #pins =
    typeof FinalizationRegistry === 'function' && typeof WeakRef === 'function'
      ? new FinalizationRegistry<Resource>(resource => this.#unpinned(resource))
      : undefined
  #closed: ClosedError | undefined
  #timer: unknown
  #timerAt = Infinity
  /** Requests over connections by request id (see `_remoteHold`). */
  readonly #remotes = new Map<string, RemoteRequest>()
  readonly #remoteLeases = new Map<string, RemoteRequest>()
  /** The most requests over connections at once, leases and waiting holds (`serve({ maxHolds })`). */
  #maxRemote = 100_000
  /** Whether the clock was read in this turn of the event loop (see `#turnNow`), and what it said. */
  #turnRead = false
  #turnTime = 0
  /**
   * Waiters granted and their leases, in pairs, whose fns are still to run (see # Handing a key over):
   * the first `#handOverEnd` entries. The array keeps its size once emptied (emptied by `length = 0`,
   * V8 would free its backing store and allocate it anew at the next hand-over).
   */
  readonly #handOver: (Waiter | Lease | undefined)[] = []
  #handOverEnd = 0
  /** Whether `#handOver` is being run (a grant meanwhile only joins it). */
  #handing = false
  /**
   * Whether the drain under way may run `#handOver` at once: only within the release of a hold whose
   * fn settled, from the hold's own callback. Anywhere else — `lease.release()`, an aborted waiter, a
   * timer, a manual clock's `advance()` — the caller's code is on the stack and would find another's
   * fn started inside its call: the queue runs in a microtask (`#handSoon`: one is queued).
   */
  #handNow = false
  #handSoon = false
  /** Who waits for the fence write under way to settle (`close()`). */
  #written: (() => void)[] = []

  readonly #transport: Transport | undefined
  readonly #servers = new Set<HoldfastServer>()

  /** @internal Use `openStore()`. */
  constructor(core: Core, memory: WebAssembly.Memory, storage: Storage, clock: Clock, context: ContextStorage | undefined, transport?: Transport) {
    this.#transport = transport
    this.#core = core
    this.#memory = memory
    this.#ptr = core.bufferPtr()
    this.#bufLen = core.bufferLen()
    this.#buf = new Float64Array(memory.buffer, this.#ptr, this.#bufLen)
    this.#storage = storage
    this.#clock = clock
    this.#context = context
  }

  /** A lock: one holder of a key at a time. */
  lock(name: string, options?: LockOptions): Lock {
    const o = handleOptions(options, `lock ${String(name)}`, false)
    const resource = this.#resource('lock', name, 1, o.ttl, o.hasMaxHold ? o.maxHold : undefined)
    return new Lock(this, resource, o.ttl, o.maxHold, o.wait, this.#pin(resource))
  }

  /** A semaphore: up to `limit` holders of a key at a time. */
  semaphore(name: string, options: SemaphoreOptions): Semaphore {
    const o = handleOptions(options, `semaphore ${String(name)}`, true)
    const resource = this.#resource('semaphore', name, o.limit, o.ttl, o.hasMaxHold ? o.maxHold : undefined)
    return new Semaphore(this, resource, o.ttl, o.maxHold, o.wait, this.#pin(resource))
  }

  /**
   * @internal A handle for holds over a connection (the server's, one per hold): checked as `lock`
   * and `semaphore` check theirs, but it pins nothing, so that a name only clients use is forgotten
   * as soon as it is idle. The caller hands it to `_letGo` once the hold was asked.
   */
  _serverHandle(kind: 'lock' | 'semaphore', name: string, limit: number): Lock {
    const semaphore = kind === 'semaphore'
    const o = handleOptions(semaphore ? { limit } : undefined, `${kind} ${String(name)}`, semaphore)
    const resource = this.#resource(kind, name, o.limit, o.ttl, undefined)
    return new (semaphore ? Semaphore : Lock)(this, resource, o.ttl, o.maxHold, o.wait, undefined)
  }

  /** @internal The server's handle was used (see `_serverHandle`): its name is forgotten if nothing else uses it. */
  _letGo(handle: Lock): void {
    if (handle._resource.pin === undefined) this.#forgetIfUnused(handle._resource)
  }

  #resource(kind: 'lock' | 'semaphore', name: unknown, limit: number, ttl: number, maxHold: number | undefined): Resource {
    const place = `${kind} ${String(name)}`
    this.#checkOpen(place)
    if (typeof name !== 'string') throw new InvalidError(`${kind}: name must be a string, not ${typeof name}`)
    this.#call(place, () => {
      checkName(name)
      checkTtl(ttl)
      if (maxHold !== undefined) checkMaxHold(maxHold)
    })
    const id = this.#call(place, () => this.#core.resource(kind === 'lock' ? 0 : 1, name, limit))
    // The place of the id (its low 32 bits): dense, and reused once a name is forgotten.
    const index = id >>> 0
    let resource = this.#byId[index]
    if (!resource) {
      resource = { id, kind, name, limit, keys: new SlotKeyIds() }
      this.#byId[index] = resource
    }
    return resource
  }

  /** The pin of `resource`'s handles (see # Names nobody uses): the one alive, or a new one, watched. */
  #pin(resource: Resource): object {
    let pin = resource.pin?.deref()
    if (pin === undefined) {
      const made = (pin = {})
      if (this.#pins === undefined) resource.pin = { deref: () => made }
      else {
        resource.pin = new WeakRef(made)
        this.#pins.register(made, resource)
      }
    }
    return pin
  }

  /** A pin of `resource` was collected: unless a newer one lives, no handle of it is left. */
  #unpinned(resource: Resource): void {
    if (resource.pin === undefined || resource.pin.deref() !== undefined) return
    resource.pin = undefined
    this.#forgetIfUnused(resource)
  }

  /** Forgets a name nothing refers to any more: no busy key, no handle (see # Names nobody uses). */
  #forgetIfUnused(resource: Resource): void {
    if (this.#closed || resource.keys.size !== 0 || resource.pin?.deref() !== undefined) return
    const index = resource.id >>> 0
    if (this.#byId[index] !== resource) return // forgotten already
    this.#byId[index] = undefined
    try {
      this.#core.forget(resource.id)
    } catch (error) {
      this.#trap(error)
    }
  }

  /**
   * Serves this store to other processes over WebSocket: `{ port, host, token }` (host defaults to
   * 127.0.0.1) or `{ path, token }` for a Unix socket. Clients `connect()` with the same token.
   */
  async serve(options: ServeOptions): Promise<Server> {
    this.#checkOpen('serve')
    const server = await serveOn(this, this.#transport, options, this.#clock)
    this.#servers.add(server)
    return server
  }

  /**
   * Every busy key with its holders and how many wait, as a snapshot. Idle keys are not listed.
   */
  inspect(): KeyInfo[] {
    this.#checkOpen('inspect')
    const now = this.#clock.now()
    const raw = this.#call('inspect', () => this.#core.inspect(now)) as {
      resource: number
      key: number
      holders: { fence: number; heldMs: number }[]
      waiting: number
    }[]
    const busy: KeyInfo[] = raw.map(view => {
      const resource = this.#byId[view.resource >>> 0]!
      return {
        kind: resource.kind,
        name: resource.name,
        key: this.#keyName[view.key >>> 0]!,
        holders: view.holders.map(h => ({ fence: h.fence, heldMs: h.heldMs })),
        waiting: view.waiting,
      }
    })
    // And the keys granted here, which the engine does not know.
    for (const lease of this.#leasesHere()) {
      busy.push({ kind: lease.kind, name: lease.name, key: lease.key, holders: [{ fence: lease.fence, heldMs: Math.max(0, now - lease._since) }], waiting: 0 })
    }
    return busy
  }

  /**
   * Closes the store: every lease ends (its signal aborts with a `ClosedError`), every waiter is
   * answered `ClosedError`, and later calls fail `ClosedError`. Does not wait for running fns; a hold
   * whose fn is still running rejects `ClosedError` when fn settles.
   */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = new ClosedError('the store is closed')
    this.#clearTimer()
    let n: number
    try {
      n = this.#core.close()
    } catch (error) {
      this.#trap(error)
      return this.#closeStorage()
    }
    this.#drain(n, this.#clock.now())
    this.#loseHere(this.#closed)
    // Remote holders and waiters were answered by the drain; now their connections can go.
    await Promise.all([...this.#servers].map(server => server.close().catch(() => {})))
    // A fence write still under way must land before the storage is let go: landing later, it could
    // overwrite a larger ceiling written by the next store to open on the same storage.
    if (this.#core.writing()) await new Promise<void>(resolve => this.#written.push(resolve))
    return this.#closeStorage()
  }

  async #closeStorage(): Promise<void> {
    try {
      await this.#storage.close?.()
    } catch (error) {
      throw new StorageError(`close: storage.close failed: ${(error as Error)?.message}`, { cause: error })
    }
  }

  /** Whether the store was closed (by `close()`, or after an internal error). */
  get closed(): boolean {
    return this.#closed !== undefined
  }

  // ---- what handles and leases call ----

  /**
   * @internal Asks for a key: answers the lease when granted at once, the waiter's promise when it
   * waits, or `undefined` when it would wait and `wait` is 0 (or, for a try, when the key is held in
   * this very context). With `fn` (and a context to keep), a waiter runs fn when handed the key and
   * its promise is the hold's answer.
   */
  _take(
    handle: Lock,
    key: string,
    wait: number,
    signal: AbortSignal | undefined,
    isTry: boolean,
    fn?: (lease: Lease) => unknown,
  ): Lease | Promise<unknown> | undefined {
    if (this.#closed) throw this.#closedError(handle, key)
    const resource = handle._resource
    const known = resource.keys.get(key)
    if (known === undefined && resource.limit === 1 && handle._maxHold === 0) {
      const lease = this.#grantHere(handle, resource, key)
      if (lease !== undefined) return lease
    }
    return this.#takeInEngine(handle, resource, key, known, wait, signal, isTry, fn)
  }

  /**
   * `_take` of any hold but a free key granted here. Kept out of `_take`, whose hot path is then a
   * few dozen bytes of bytecode: V8 and JSC tier a function up after a number of runs scaled by its
   * whole size, so a small hot path reached through a large function stays in the slow tiers for
   * tens of thousands of holds.
   */
  #takeInEngine(
    handle: Lock,
    resource: Resource,
    key: string,
    known: number | Lease | undefined,
    wait: number,
    signal: AbortSignal | undefined,
    isTry: boolean,
    fn: ((lease: Lease) => unknown) | undefined,
  ): Lease | Promise<unknown> | undefined {
    if (known !== undefined) {
      // Only a busy key can be held in this very context (a free key is in no hold): the async context
      // is looked at only then.
      if (this.#context !== undefined && this.#heldHere(resource, key)) {
        if (isTry) return undefined
        throw selfHoldError(handle, key)
      }
      if (typeof known !== 'number') {
        // Granted here: a request that would not wait changes nothing; one that waits goes in line
        // behind the holder, in the engine.
        if (isTry || wait === 0) return undefined
        known = this.#adopt(resource, key, known)
      }
    }
    const waitMs = wait === Infinity ? -1 : wait
    // The clock is read only when the engine needs the time (see `#turnNow`): a maxHold always, a wait
    // with a limit on a busy key always; any hold of a busy key while a deadline is set anywhere (the
    // engine answers NEED_TIME then).
    let now = handle._maxHold > 0 || (known !== undefined && wait !== Infinity && wait > 0) ? this.#clock.now() : this.#turnNow()
    let answer: number
    try {
      answer = this.#core.hold(resource.id, known ?? -1, waitMs, handle._maxHold, now)
      if (answer === NEED_TIME) answer = this.#core.hold(resource.id, known ?? -1, waitMs, handle._maxHold, (now = this.#clock.now()))
    } catch (error) {
      throw this.#trap(error)
    }
    // Deadlines that fell due were acted on first by the engine: their events come before this
    // hold's own, and are answered once this hold is recorded.
    if (answer === 0) return this.#queued(handle, resource, key, known, wait, signal, fn, now)
    if (answer > 0) return this.#granted(handle, resource, key, known, answer, now)
    const events = this.#view()[HOLD_EVENTS]!
    if (events > 0) this.#drain(events, now)
    if (answer === BUSY) return undefined
    const message = `${handle.kind} ${handle.name}: key ${JSON.stringify(key)}: ${this.#core.lastError()}`
    if (answer === INVALID) throw new InvalidError(message)
    if (answer === LIMIT) throw new LimitError(message)
    throw this.#closedError(handle, key)
  }

  /** The engine granted a hold at once, with `fence`: its lease. */
  #granted(handle: Lock, resource: Resource, key: string, known: number | undefined, fence: number, now: number): Lease {
    const buf = this.#view()
    const events = buf[HOLD_EVENTS]!
    const req = buf[REQ]!
    if (buf[KEY] !== known) this.#newKey(resource, key, buf[KEY]!)
    const lease = new Lease(this, handle, key, fence, req)
    this.#reqs[req >>> 0] = lease
    if (handle._maxHold > 0) this.#schedule((lease._deadline = now + handle._maxHold))
    if (events > 0) this.#drain(events, now)
    return lease
  }

  /** The engine put a hold in line: its waiter's promise. */
  #queued(
    handle: Lock,
    resource: Resource,
    key: string,
    known: number | undefined,
    wait: number,
    signal: AbortSignal | undefined,
    fn: ((lease: Lease) => unknown) | undefined,
    now: number,
  ): Promise<unknown> {
    const buf = this.#view()
    const events = buf[HOLD_EVENTS]!
    const req = buf[REQ]!
    if (buf[KEY] !== known) this.#newKey(resource, key, buf[KEY]!)
    const waiter = new Waiter(handle, key, req, wait, signal, fn, fn === undefined ? undefined : this.#context!.capture!())
    this.#reqs[req >>> 0] = waiter
    if (wait !== Infinity && wait > 0) this.#schedule(now + wait)
    if (signal) {
      waiter.onAbort = () => this.#cancel(waiter)
      signal.addEventListener('abort', waiter.onAbort, { once: true })
    }
    if (events > 0) this.#drain(events, now)
    return waiter.promise
  }

  /**
   * @internal Runs fn inside the lease (once granted, for a waiter's promise), lets the key go when fn
   * settles, and answers as `hold` does: fn's value, fn's error, or the loss of the lease (even if fn
   * succeeded).
   */
  _run<T>(handle: Lock, taken: Lease | Promise<Lease>, fn: (lease: Lease) => T | PromiseLike<T>): Promise<Awaited<T>> {
    return runInLease(this.#context, handle._resource, taken, fn)
  }

  /**
   * @internal `hold`: takes the key and runs fn in its lease, as `_take` and `_run`; a waiter is handed
   * the key directly where the context can be kept. `undefined` when the key is busy and wait is 0.
   */
  _hold<T>(
    handle: Lock,
    key: string,
    wait: number,
    signal: AbortSignal | undefined,
    fn: (lease: Lease) => T | PromiseLike<T>,
  ): Promise<Awaited<T>> | undefined {
    const direct = this.#context?.capture !== undefined
    const taken = this._take(handle, key, wait, signal, false, direct ? fn : undefined)
    if (taken === undefined) return undefined
    if (taken instanceof Lease || !direct) return runInLease(this.#context, handle._resource, taken as Lease | Promise<Lease>, fn)
    return taken as Promise<Awaited<T>>
  }

  /**
   * @internal Lets a lease's key go (called by `Lease`, once). A waiter it grants is handed the key
   * here only `fromHold` (see # Handing a key over); otherwise in a microtask.
   */
  _release(req: number, lease: Lease, fromHold = false): void {
    if (req < 0) {
      // Granted here and never adopted: nobody waits for it, and the engine never knew it.
      const resource = this.#byId[HERE - req]!
      const keys = resource.keys
      if (keys.get(lease.key) === lease) {
        keys.delete(lease.key)
        // A lease that outlived its handles: its name may be unused now (see # Names nobody uses).
        if (resource.pin === undefined) this.#forgetIfUnused(resource)
      }
    } else this.#releaseInEngine(req, lease, fromHold)
  }

  /** `_release` of a request the engine knows (kept apart for the reason `#takeInEngine` is). */
  #releaseInEngine(req: number, lease: Lease, fromHold: boolean): void {
    if (this.#closed) return
    let n: number
    // Untimed but for the first call of a turn (see `#turnNow`); the engine asks for the time when a
    // deadline needs it.
    let now = this.#turnNow()
    try {
      n = this.#core.release(req, now)
      if (n === NEED_TIME) n = this.#core.release(req, (now = this.#clock.now()))
    } catch (error) {
      throw this.#trap(error)
    }
    if (n <= IDLE_BASE) {
      this.#reqs[req >>> 0] = undefined
      this.#idle(IDLE_BASE - n)
      return
    }
    // Events first: a lease found past its maxHold is revoked by this very release (its record
    // must still be there for the drain to find it lost).
    if (n > 0) {
      this.#handNow = fromHold
      this.#drain(n, now)
      this.#handNow = false
    }
    if (this.#reqs[req >>> 0] === lease) this.#reqs[req >>> 0] = undefined
  }

  /**
   * The time for a hold or release that may not need it: read once per turn of the event loop, and
   * -1 (not read) for the calls after it in the same turn. The engine asks for the real time whenever a
   * hold sets a deadline; an untimed grant is stamped with the turn's time, which only `inspect`
   * reads (so `heldMs` is off by at most the length of a turn). A clock read costs as much as the
   * rest of an uncontended hold on some machines.
   */
  #turnNow(): number {
    if (this.#turnRead) return -1
    this.#turnRead = true
    this.#clock.setTimeout(this.#endTurn, 0)
    return (this.#turnTime = this.#clock.now())
  }

  /** The time of this turn (read now if not yet): the stamp of a key granted here, as the engine's untimed grants. */
  #turnStamp(): number {
    this.#turnNow()
    return this.#turnTime
  }

  readonly #endTurn = (): void => {
    this.#turnRead = false
  }

  /**
   * A key went idle: forget its string — unless the string already names a newer key (a hold made
   * it anew in the same call that let the old one go; see `Engine::hold`). `id` is the key's whole
   * id (generation included), or undefined from a release's fast answer, which is never stale.
   */
  #idle(index: number, id?: number): void {
    const resource = this.#keyResource[index]
    if (!resource) return
    const name = this.#keyName[index]!
    if (id !== undefined && resource.keys.get(name) !== id) return
    resource.keys.delete(name)
    this.#keyName[index] = undefined
    this.#keyResource[index] = undefined
    // Its name may be unused now (see # Names nobody uses).
    if (resource.pin === undefined) this.#forgetIfUnused(resource)
  }

  /**
   * @internal For tests: how much the engine keeps (`[keys, requests, key places, request places,
   * timers, resources]`), and the names the store keeps.
   */
  _footprint(): number[] {
    let names = 0
    for (const resource of this.#byId) if (resource) names++
    return [...this.#core.footprint(), names]
  }

  /** @internal For tests: the size of wasm memory in bytes. */
  _memoryBytes(): number {
    return this.#memory.buffer.byteLength
  }

  /** @internal For tests: makes the engine trap, as a bug would. */
  _trapForTest(): void {
    try {
      this.#core.trapForTest()
    } catch (error) {
      throw this.#trap(error)
    }
  }

  /** @internal Called by the bindings when a fence write settled. */
  _wake(): void {
    for (const resolve of this.#written.splice(0)) resolve()
    if (this.#closed) return
    const now = this.#clock.now()
    let n: number
    try {
      n = this.#core.settle(now)
    } catch (error) {
      this.#trap(error)
      return
    }
    this.#drain(n, now)
  }

  // ---- internals ----

  /**
   * Grants a free key here (see # Keys granted here) with the next lent fence, borrowing a block
   * when none is left; `undefined` when the engine has no fence to lend (its grant waits for storage).
   */
  #grantHere(handle: Lock, resource: Resource, key: string): Lease | undefined {
    let buf: Float64Array | undefined = this.#view()
    let fence = buf[FENCE_NEXT]!
    if (!(fence < buf[FENCE_END]!)) {
      buf = this.#borrow()
      if (buf === undefined) return undefined
      fence = buf[FENCE_NEXT]!
    }
    buf[FENCE_NEXT] = fence + 1
    const lease = new Lease(this, handle, key, fence, HERE - (resource.id >>> 0))
    lease._since = this.#turnStamp()
    resource.keys.set(key, lease)
    return lease
  }

  /** Borrows the next block of fences (see # Keys granted here): the buffer, or `undefined` when the engine lends none. */
  #borrow(): Float64Array | undefined {
    let lent: number
    try {
      lent = this.#core.lend(LEND)
    } catch (error) {
      throw this.#trap(error)
    }
    return lent > 0 ? this.#view() : undefined
  }

  /** Hands the holding of a key granted here to the engine, which now knows the key: answers its id. */
  #adopt(resource: Resource, key: string, lease: Lease): number {
    let answer: number
    try {
      answer = this.#core.adopt(resource.id, lease.fence, lease._since)
    } catch (error) {
      throw this.#trap(error)
    }
    if (!(answer > 0)) throw this.#trap(new Error(`the engine refused a key granted here: ${this.#core.lastError()}`))
    const buf = this.#view()
    const req = buf[REQ]!
    const id = buf[KEY]!
    this.#newKey(resource, key, id)
    this.#reqs[req >>> 0] = lease
    lease._adopted(req)
    return id
  }

  /** Ends every lease granted here, as the store closes (the engine ends its own). */
  #loseHere(reason: ClosedError): void {
    const lost = [...this.#leasesHere()]
    // Forgotten first: a listener of a lease's signal may ask about its key.
    for (const lease of lost) this.#byId[HERE - lease._req]!.keys.delete(lease.key)
    for (const lease of lost) lease._lose(reason)
  }

  /** The leases of keys granted here (see # Keys granted here), resource by resource. */
  *#leasesHere(): IterableIterator<Lease> {
    for (const resource of this.#byId) {
      if (!resource) continue
      for (const record of resource.keys.values()) if (typeof record !== 'number') yield record
    }
  }

  #newKey(resource: Resource, key: string, id: number): void {
    resource.keys.set(key, id)
    const index = id >>> 0
    this.#keyName[index] = key
    this.#keyResource[index] = resource
  }

  #heldHere(resource: Resource, key: string): boolean {
    for (let frame = this.#context!.getStore(); frame; frame = frame._parent) {
      // Still holding: a released or lost lease is no longer the record of its request (or, granted
      // here, of its key).
      if (frame._resource !== resource || frame.key !== key) continue
      const req = frame._req
      if (req < 0 ? resource.keys.get(key) === frame : this.#reqs[req >>> 0] === frame) return true
    }
    return false
  }

  #cancel(waiter: Waiter): void {
    if (this.#reqs[waiter.req >>> 0] !== waiter || this.#closed) return
    this.#reqs[waiter.req >>> 0] = undefined
    const now = this.#clock.now()
    let n: number
    try {
      n = this.#core.cancel(waiter.req, now)
    } catch (error) {
      this.#trap(error)
      return
    }
    waiter.reject(new CancelledError(`${waiter.place()}: cancelled while waiting`, { cause: waiter.signal!.reason }))
    if (n > 0) this.#drain(n, now)
  }

  /**
   * Reads `n` events from the buffer (and more while the engine has them) and answers each. `now` is
   * -1 after an untimed call: the clock is read only if an event needs the time (it never does then:
   * the engine asks for the time before a grant that starts a deadline).
   */
  #drain(n: number, now: number): void {
    // Aborting a lease's signal runs user listeners at once, and they may call into the store, which
    // would overwrite the buffer: abort only after the whole drain.
    let lost: [Lease, LostError | ClosedError][] | undefined
    for (;;) {
      const buf = this.#view()
      for (let i = 0; i < n; i++) {
        const at = EVENTS + i * EVENT_SIZE
        const kind = buf[at]!
        const id = buf[at + 1]!
        const record = kind === KEY_IDLE ? undefined : this.#reqs[id >>> 0]
        if (kind === GRANTED && record instanceof Waiter) {
          // The common event, answered here; every other in `#event` (kept apart for the reason
          // `#takeInEngine` is).
          const handle = record.handle
          const lease = new Lease(this, handle, record.key, buf[at + 2]!, id)
          this.#reqs[id >>> 0] = lease
          record.settled()
          if (handle._maxHold > 0) this.#schedule((lease._deadline = (now < 0 ? (now = this.#clock.now()) : now) + handle._maxHold))
          if (record.fn === undefined) record.resolve(lease)
          else {
            this.#handOver[this.#handOverEnd++] = record
            this.#handOver[this.#handOverEnd++] = lease
          }
        } else {
          if (now < 0 && record instanceof RemoteRequest) now = this.#clock.now()
          const ended = this.#event(kind, id, record, buf[at + 2]!, now)
          if (ended !== undefined) (lost ??= []).push(ended)
        }
      }
      if (n < EVENT_SLOTS) break
      n = this.#core.drain()
      if (n === 0) break
    }
    if (lost) for (const [lease, reason] of lost) lease._lose(reason)
    if (this.#handOverEnd !== 0 && !this.#handing) {
      if (this.#handNow) this.#handOverAll()
      else if (!this.#handSoon) {
        this.#handSoon = true
        queueMicrotask(this.#handOverLater)
      }
    }
  }

  /**
   * Answers one event of `#drain` but a waiter's grant: a key gone idle, a request over a connection,
   * a waiter that timed out, failed or ended. A lease that ended is not told here: it is answered
   * with its reason, for the drain to tell it once every event was read.
   */
  #event(kind: number, id: number, record: Waiter | Lease | RemoteRequest | undefined, a: number, now: number): [Lease, LostError | ClosedError] | undefined {
    const index = id >>> 0
    if (kind === KEY_IDLE) {
      this.#idle(index, id)
      return undefined
    }
    if (record instanceof RemoteRequest) {
      this.#remoteEvent(record, index, kind, a, now)
      return undefined
    }
    if (kind === GRANTED) throw this.#trap(new Error(`the engine granted request ${id}, which does not wait on this side`))
    this.#reqs[index] = undefined
    if (record instanceof Lease) {
      const reason =
        kind === REVOKED ? new LostError(`${this.#leasePlace(record)}: lease revoked at maxHold`) : (this.#closed ?? new ClosedError('the store is closed'))
      return [record, reason]
    }
    const waiter = record as Waiter
    waiter.settled()
    if (kind === TIMED_OUT) {
      waiter.reject(new InUseError(`${waiter.place()}: still held after waiting ${waiter.wait}ms`))
    } else if (kind === FAILED) {
      waiter.reject(
        a === 1
          ? new StorageError(`${waiter.place()}: storage failed to keep the fence ceiling; nothing was granted`, { cause: this.#core.storageError() })
          : new LimitError(`${waiter.place()}: every fence below 2^53 was handed out`),
      )
    } else if (kind === ENDED) {
      waiter.reject(this.#closedError(waiter.handle, waiter.key))
    }
    return undefined
  }

  readonly #handOverLater = (): void => {
    this.#handSoon = false
    if (this.#handOverEnd !== 0 && !this.#handing) this.#handOverAll()
  }

  /**
   * Runs the fns of the waiters granted, each in its own async context, in grant order; grants made
   * meanwhile (by these fns' releases) join the queue and run here too, never deeper in the stack.
   * `runHandedOver` throws nothing: each fn's outcome goes to its hold's promise.
   */
  #handOverAll(): void {
    const queue = this.#handOver
    const context = this.#context!
    this.#handing = true
    for (let i = 0; i < this.#handOverEnd; i += 2) {
      const waiter = queue[i] as Waiter
      const lease = queue[i + 1] as Lease
      queue[i] = queue[i + 1] = undefined
      waiter.scope!.runInAsyncScope(runHandedOver, undefined, context, waiter.handle._resource, lease, waiter.fn!, waiter.resolve, waiter.reject)
    }
    this.#handOverEnd = 0
    this.#handing = false
  }

  /** An event for a request over a connection: answered through its connection's sink. */
  #remoteEvent(record: RemoteRequest, index: number, kind: number, a: number, now: number): void {
    if (kind === GRANTED) {
      record.holding = true
      this.#schedule(now + record.ttl)
      if (record.maxHold > 0) this.#schedule(now + record.maxHold)
      record.sink.granted(record, a, record.maxHold)
      return
    }
    this.#reqs[index] = undefined
    this.#remotes.delete(record.request)
    this.#remoteLeases.delete(record.lease)
    if (kind === TIMED_OUT) record.sink.failed(record, 'in_use', `${record.place()}: still held after waiting`)
    else if (kind === FAILED)
      record.sink.failed(record, a === 1 ? 'storage' : 'limit', `${record.place()}: ${a === 1 ? 'storage failed to keep the fence ceiling' : 'fences used up'}`)
    else if (kind === REVOKED) record.sink.lost(record, 'lost')
    else if (kind === EXPIRED) record.sink.lost(record, 'lost')
    else if (kind === ENDED && this.#closed) {
      if (record.holding) record.sink.lost(record, 'closed')
      else record.sink.failed(record, 'closed', `${record.place()}: the store is closed`)
    }
    // ENDED while open: its connection ended; nobody is left to answer.
  }

  // ---- what the server calls (see server.ts) ----

  /**
   * @internal A hold over a connection. Answers through `record.sink` — at once (granted, busy,
   * an error) or when the engine grants it — and records it so that events find it.
   */
  _remoteHold(handle: Lock, record: RemoteRequest, wait: number): void {
    if (this.#closed) return record.sink.failed(record, 'closed', `${record.place()}: the store is closed`)
    // The bound of the whole store: a request asked again is not a new one. Dropped connections'
    // requests stay in #remotes until they end, so reconnecting frees nothing.
    if (this.#remotes.size >= this.#maxRemote && !this.#remotes.has(record.request)) {
      return record.sink.failed(
        record,
        'limit',
        `${record.place()}: the store has ${this.#maxRemote} leases and waiting holds over connections, the most it takes (serve option maxHolds)`,
      )
    }
    const resource = handle._resource
    resource.remote = true
    let known = resource.keys.get(record.key)
    if (known !== undefined && typeof known !== 'number') known = this.#adopt(resource, record.key, known)
    const now = this.#clock.now()
    let answer: number
    try {
      answer = this.#core.holdRemote(
        resource.id,
        known ?? -1,
        wait === Infinity ? -1 : wait,
        record.maxHold,
        record.conn,
        record.request,
        record.lease,
        record.ttl,
        now,
      )
    } catch (error) {
      const e = error as { code?: unknown; message?: unknown }
      if (typeof e?.code === 'string') return record.sink.failed(record, 'invalid', `${record.place()}: ${String(e.message)}`)
      throw this.#trap(error)
    }
    const buf = this.#view()
    if (answer === RESUMED) {
      const existing = this.#reqs[buf[REQ]! >>> 0]
      if (!(existing instanceof RemoteRequest)) throw this.#trap(new Error('a resumed request has no record'))
      existing.conn = record.conn
      existing.frame = record.frame
      existing.sink = record.sink
      if (existing.holding) {
        // The fence it holds; its ttl now counts from this answer.
        existing.sink.granted(existing, buf[RESUMED_FENCE]!, Math.max(0, this.#core.revokeIn(buf[REQ]!, now)))
        this.#schedule(now + existing.ttl)
      }
      // A waiter back from away may have been granted at once.
      const events = buf[HOLD_EVENTS]!
      if (events > 0) this.#drain(events, now)
      return
    }
    if (answer >= 0) {
      const req = buf[REQ]!
      if (buf[KEY] !== known) this.#newKey(resource, record.key, buf[KEY]!)
      record.req = req
      this.#reqs[req >>> 0] = record
      this.#remotes.set(record.request, record)
      this.#remoteLeases.set(record.lease, record)
      if (answer > 0) {
        record.holding = true
        if (record.maxHold > 0) this.#schedule(now + record.maxHold)
      }
      this.#schedule(now + (answer > 0 ? record.ttl : wait === Infinity ? Infinity : wait))
      if (answer > 0) record.sink.granted(record, answer, record.maxHold)
      const events = buf[HOLD_EVENTS]!
      if (events > 0) this.#drain(events, now)
      return
    }
    const events = buf[HOLD_EVENTS]!
    if (events > 0) this.#drain(events, now)
    if (answer === BUSY) return record.sink.busy(record)
    const message = `${record.place()}: ${this.#core.lastError()}`
    record.sink.failed(record, answer === LIMIT ? 'limit' : answer === INVALID ? 'invalid' : 'closed', message)
  }

  /** @internal Renews a lease over a connection: its ttl and maxHold remaining, or `undefined` if lost. */
  _renew(lease: string): { ttl: number; revokeIn: number } | undefined {
    if (this.#closed) return undefined
    const now = this.#clock.now()
    let ttl: number
    try {
      ttl = this.#core.renew(lease, now)
    } catch (error) {
      throw this.#trap(error)
    }
    const buf = this.#view()
    const revokeIn = buf[REVOKE_IN]!
    const events = buf[HOLD_EVENTS]!
    if (events > 0) this.#drain(events, now)
    if (ttl <= 0) return undefined
    this.#schedule(now + ttl)
    return { ttl, revokeIn }
  }

  /** @internal Releases (or, if still waiting, cancels) the request of a connection named by `id`. */
  _endRemote(record: RemoteRequest): void {
    if (this.#closed || this.#reqs[record.req >>> 0] !== record) return
    this.#reqs[record.req >>> 0] = undefined
    this.#remotes.delete(record.request)
    this.#remoteLeases.delete(record.lease)
    const now = this.#clock.now()
    let n: number
    try {
      n = this.#core.cancel(record.req, now)
    } catch (error) {
      throw this.#trap(error)
    }
    if (n > 0) this.#drain(n, now)
  }

  /** @internal The live request of a connection with this request id. */
  _remoteRequest(request: string): RemoteRequest | undefined {
    return this.#remotes.get(request)
  }

  /** @internal The live request of a connection with this lease id. */
  _remoteLease(lease: string): RemoteRequest | undefined {
    return this.#remoteLeases.get(lease)
  }

  /** @internal A connection ended: its waiters leave their lines; with `goodbye`, its leases end too. */
  _connectionEnded(conn: number, goodbye: boolean): void {
    if (this.#closed) return
    const now = this.#clock.now()
    let n: number
    let next: number
    try {
      n = this.#core.connectionEnded(conn, goodbye, now)
      if (n > 0) this.#drain(n, now)
      // Its waiters are away until their ttl: the engine acts on that deadline.
      next = this.#core.nextDeadline()
    } catch (error) {
      throw this.#trap(error)
    }
    if (next >= 0) this.#schedule(next)
  }

  /** @internal How many requests one connection may have. */
  _setConnectionLimit(limit: number): void {
    this.#core.setConnectionLimit(limit)
  }

  /** @internal How many requests over connections the whole store may have. */
  _setMaxHolds(limit: number): void {
    this.#maxRemote = limit
  }

  #leasePlace(lease: Lease): string {
    return `${lease.kind} ${lease.name}: key ${JSON.stringify(lease.key)}`
  }

  /** The buffer, made anew when wasm memory grew (which detaches the old view). */
  #view(): Float64Array {
    if (this.#buf.length === 0) this.#buf = new Float64Array(this.#memory.buffer, this.#ptr, this.#bufLen)
    return this.#buf
  }

  #schedule(at: number): void {
    if (at >= this.#timerAt) return
    if (this.#timer !== undefined) clearTimer(this.#clock, this.#timer)
    this.#timerAt = at
    // Chained past 2^31−1 ms (a maxHold of 30 days, a wait of 25): see clock.ts # Long timers.
    this.#timer = setTimer(this.#clock, this.#onTimer, Math.max(0, at - this.#clock.now()))
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimer(this.#clock, this.#timer)
    this.#timer = undefined
    this.#timerAt = Infinity
  }

  /** @internal The store's clock, for its leases' deadlines (see `Lease` # Reading checks the clock). */
  _now(): number {
    return this.#clock.now()
  }

  /**
   * @internal A lease was read past its maxHold before the timer ran: act on every deadline due now,
   * as the timer would (the engine revokes the lease, and its key goes on).
   */
  _overdue(): void {
    // Read from anywhere (an abort listener of this very drain, say): its grants are handed over in
    // a microtask, as a timer's are, never inside the reader's call.
    const handNow = this.#handNow
    this.#handNow = false
    this.#clearTimer()
    this.#onTimer()
    this.#handNow = handNow
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined
    this.#timerAt = Infinity
    if (this.#closed) return
    const now = this.#clock.now()
    let n: number
    let next: number
    try {
      n = this.#core.advance(now)
      this.#drain(n, now)
      next = this.#core.nextDeadline()
    } catch (error) {
      this.#trap(error)
      return
    }
    if (next >= 0) this.#schedule(next)
  }

  #checkOpen(place: string): void {
    if (this.#closed) throw new ClosedError(`${place}: ${this.#closed.message}`, this.#closed.cause === undefined ? undefined : { cause: this.#closed.cause })
  }

  #closedError(handle: Lock, key: string): ClosedError {
    const closed = this.#closed ?? new ClosedError('the store is closed')
    return new ClosedError(
      `${handle.kind} ${handle.name}: key ${JSON.stringify(key)}: ${closed.message}`,
      closed.cause === undefined ? undefined : { cause: closed.cause },
    )
  }

  /** Runs a call into wasm that may throw an engine error (rethrown as its class) or trap. */
  #call<T>(place: string, fn: () => T): T {
    try {
      return fn()
    } catch (error) {
      const e = error as { code?: unknown }
      if (e && typeof e.code === 'string') throw fromEngine(error, place)
      throw this.#trap(error)
    }
  }

  /**
   * The engine trapped (a Rust panic) or failed in a way it never should: its state can no longer be
   * trusted. Answer every waiter and end every lease with a `ClosedError` whose cause is the trap, and
   * close. Answers the error for the caller to throw.
   */
  #trap(error: unknown): ClosedError {
    if (this.#closed) return this.#closed
    const closed = new ClosedError(`the store closed after an internal error: ${(error as Error)?.message ?? String(error)}`, { cause: error })
    this.#closed = closed
    this.#clearTimer()
    for (let i = 0; i < this.#reqs.length; i++) {
      const record = this.#reqs[i]
      this.#reqs[i] = undefined
      if (record instanceof Lease) record._lose(closed)
      else if (record instanceof RemoteRequest) {
        if (record.holding) record.sink.lost(record, 'closed')
        else record.sink.failed(record, 'closed', `${record.place()}: ${closed.message}`)
      } else if (record) {
        record.settled()
        record.reject(this.#closedError(record.handle, record.key))
      }
    }
    this.#loseHere(closed)
    for (const resource of this.#byId) resource?.keys.clear()
    void this.#closeStorage().catch(() => {})
    return closed
  }
}

/** Opens a store on `platform`; the entry of each runtime calls this. */
export async function openStoreOn(platform: Platform, options?: StoreOptions): Promise<Store> {
  const o = checkOptions(options, 'openStore', ['storage', 'clock'])
  if (o.storage !== undefined && !isStorage(o.storage)) {
    throw new InvalidError('openStore: option storage must be an object with get(key) and set(key, value)')
  }
  if (o.clock !== undefined && !isClock(o.clock)) {
    throw new InvalidError('openStore: option clock must have now(), setTimeout(fn, ms) and clearTimeout(handle)')
  }
  const storage = (o.storage as Storage | undefined) ?? platform.defaultStorage()
  const clock = (o.clock as Clock | undefined) ?? systemClock
  const memory = platform.init()
  let store: Store | undefined
  let core: Core
  try {
    core = await openCore(storage, () => store?._wake())
  } catch (error) {
    try {
      await storage.close?.()
    } catch {
      // the open's own error says more
    }
    throw fromEngine(error, 'openStore')
  }
  store = new Store(core, memory, storage, clock, platform.context, platform.transport)
  return store
}

/**
 * The host of the engine: the one place that calls into wasm, reads what the engine answers, and keeps
 * what the engine leaves to its host (docs/architecture.md, the calling rules) — time, timers, the key
 * strings, the storage callback, and one record per request.
 *
 * # Calls and their answers
 * A call on the hot path takes and answers numbers; its details (ids, fences) and its events are in a
 * buffer shared with the engine (`view()`, the slots of abi.ts). A hold is one call (`core.hold`) that
 * answers its fence, 0 (in line) or a negative status; its release is one more, whose events (the next
 * holder's grant, the key going idle) `drain` reads and answers. Untimed calls may answer `NEED_TIME`:
 * they are made again at once with the time (calling rule 1). A free key of a lock is not held through
 * here at all (lent-fences.ts), until a request the store cannot answer alone needs it (`adopt`).
 *
 * # Key strings stay on this side
 * The engine names a busy key by an id, which `Resource.keys` maps to while the key is busy and
 * forgets when the engine says the key went idle (`idle`). So idle keys cost nothing on either side.
 *
 * # Answering everyone
 * Every request the engine knows is recorded in `reqs` (by the index of its id) as a `Waiter`, a
 * `Lease` or a `RemoteRequest`, so that every event finds whom to answer, and so that if the engine
 * ever traps, the host can still answer every waiter and end every lease before the store closes
 * (`trap`). Requests over a connection and keys the store granted itself are answered through the parts
 * built on the host (`attach`: remote-holds.ts, lent-fences.ts).
 *
 * # Timers keep the process alive while awaited
 * The one timer, for the engine's next deadline, keeps the process alive while a promise the store
 * returned is pending that a deadline may settle: a waiter in the engine's line (its wait's end, or
 * the `maxHold` of a lease ahead of it), a hold whose lease has a `maxHold` (its fn may await
 * `lease.signal`), a pool claim unanswered (its wait, a claim's ttl ahead of it). Otherwise — a lease
 * acquired and forgotten, a store merely open, the deadlines of holds over a connection (whose
 * sockets keep the server alive) — it keeps nothing alive, so that a script that forgot a lease ends
 * rather than live to its `maxHold`. Counted (`#awaiting`), not judged per deadline: while anything
 * waits, the timer keeps the process alive whatever deadline it is set for.
 *
 * # Leases answer to who granted them
 * The host is the `LeaseOwner` of the leases the engine grants: their release comes here directly
 * (`_release`), one call from `Lease._end`, not through the store.
 */

import { type Core, checkTtl, checkMaxHold, checkName } from '../../wasm/holdfast_wasm.js'
import { RemoteRequest } from '../remote/request.js'
import { CancelledError, ClosedError, InUseError, InvalidError, LimitError, LostError, StorageError, fromEngine } from '../errors.js'
import { GrantedLease, Lease, type LeaseOwner } from '../handle/lease.js'
import type { Lock } from '../handle/lock.js'
import type { ContextStorage } from '../handle/context.js'
import type { Kind, KeyInfo } from '../types.js'
import { releaseStorage, type Storage } from '../storage/storage.js'
import type { FenceWrites } from './fence-writes.js'
import { clearTimer, keepAlive, setTimer, type Clock } from '../util/clock.js'
import {
  BUSY,
  CLAIMED,
  ENDED,
  EVENT_SIZE,
  EVENT_SLOTS,
  EVENTS,
  FAILED,
  GRANTED,
  HOLD_EVENTS,
  IDLE_BASE,
  INVALID,
  KEY,
  KEY_IDLE,
  LIMIT,
  NEED_TIME,
  REQ,
  REVOKED,
  TIMED_OUT,
} from './abi.js'
import type { Resource, SelfHeld } from './key-ids.js'
import { Names } from './names.js'
import { Permits } from './permits.js'
import type { Line } from '../util/line.js'
import { HandOvers, Waiter } from './waiters.js'

/** The leases a drain found ended, with their reasons, to be told once it read every event. */
type Lost = [Lease, LostError | ClosedError][]

/** What the host's drain answers a request over a connection through (remote-holds.ts). */
export interface RemoteEvents {
  event(record: RemoteRequest, kind: number, a: number, now: number): void
  /** A key of `resource`, a name no handle pins, went idle: the name is forgotten if unused (or kept to the end of the turn). */
  idled(resource: Resource): void
}

/** What the host's drain, timer, close and trap tell the pools (pool/room.ts, pool/writes.ts). */
export interface PoolEvents {
  /** A pool event (kinds from `CLAIMED` on). */
  event(kind: number, id: number, a: number): void
  /** A call may have changed a pool (a ttl run out, the close): their write is scheduled if wanted. */
  poke(): void
  /** The engine trapped: every pool request is answered `closed`, and no write is asked for again. */
  trap(closed: ClosedError): void
  /** Resolves once no pools' write is in storage's hands (a trap stops the writes, not a `set` under way). */
  stored(): Promise<void>
}

/** What the host's trap asks of the keys the store granted itself (lent-fences.ts). */
export interface SelfGrants {
  /** Ends every lease the store granted itself, as the store closes (the engine ends its own), and answers their lines. */
  loseAll(): void
}

/** A hold of a key inside its own hold, which would wait for itself (LOCK-04). */
function selfHoldError(handle: Lock, key: string): InvalidError {
  return new InvalidError(
    `${handle.kind} ${handle.name}: key ${JSON.stringify(key)}: held by this very hold (a hold inside its own hold would wait for itself)`,
  )
}

/** The error a trap answers (`EngineHost.trap`): the store closed, its cause the trap. */
function closedBy(error: unknown): ClosedError {
  return new ClosedError(`the store closed after an internal error: ${(error as Error)?.message ?? String(error)}`, { cause: error })
}

export class EngineHost implements LeaseOwner {
  readonly core: Core
  readonly clock: Clock
  /** Set once the store closed (by `close()`, or after a trap): the reason later calls fail with. */
  closed: ClosedError | undefined = undefined
  /**
   * Set by a trap once `close()` closed the engine, while it waits for what it closes (before it frees
   * the engine: after, a call into it fails with no trap): the trap's error, for the store to tell.
   */
  trappedClosing: ClosedError | undefined = undefined
  /** Every live request by the index of its id. */
  readonly reqs: (Waiter | Lease | RemoteRequest | undefined)[] = []
  /** The names in use. */
  readonly names: Names
  /** The waiters granted whose fns are still to run. */
  readonly handOvers: HandOvers
  readonly #memory: WebAssembly.Memory
  readonly #ptr: number
  #buf: Float64Array
  readonly #bufLen: number
  readonly #storage: Storage
  readonly #context: ContextStorage | undefined
  /** Every busy key's string and resource, by the index of its id. */
  readonly #keyName: (string | undefined)[] = []
  readonly #keyResource: (Resource | undefined)[] = []
  #timer: unknown
  #timerAt = Infinity
  /**
   * How many promises the store returned wait on its timer (see # Timers keep the process alive while
   * awaited): the waiters in the engine's line, the holds under a `maxHold` and the pool claims
   * unanswered (`awaits`). The timer keeps the process alive while it is over 0.
   */
  #awaiting = 0
  /** Whether the clock was read in this turn of the event loop (see `turnNow`), and what it said. */
  #turnRead = false
  #turnTime = 0
  readonly #writes: FenceWrites
  #remote!: RemoteEvents
  #selfGrants!: SelfGrants
  #pools!: PoolEvents
  #trapped!: (closed: ClosedError, storageClosed: Promise<void>) => void
  /** The engine trapped (`trap`): its state cannot be trusted, and it is never freed (left to the finalizer). */
  #coreTrapped = false
  /** `free()` freed the engine: a call into it throws, and that is no trap of its own. */
  #freed = false

  constructor(core: Core, memory: WebAssembly.Memory, storage: Storage, writes: FenceWrites, clock: Clock, context: ContextStorage | undefined) {
    this.core = core
    this.#writes = writes
    writes.answerTo(this)
    this.#memory = memory
    this.#ptr = core.bufferPtr()
    this.#bufLen = core.bufferLen()
    this.#buf = new Float64Array(memory.buffer, this.#ptr, this.#bufLen)
    this.#storage = storage
    this.clock = clock
    this.#context = context
    this.names = new Names(this)
    this.handOvers = new HandOvers(context)
  }

  /**
   * The parts built on the host, which its drain and trap answer through; and what the trap tells the
   * store once it answered every request: its error, and the closing of the storage it let go (never
   * rejects).
   */
  attach(selfGrants: SelfGrants, remote: RemoteEvents, pools: PoolEvents, trapped: (closed: ClosedError, storageClosed: Promise<void>) => void): void {
    this.#selfGrants = selfGrants
    this.#remote = remote
    this.#pools = pools
    this.#trapped = trapped
  }

  // ---- names ----

  /** The record of a name, registered in the engine if new (checked as the engine checks it). */
  resource(kind: Kind, name: unknown, limit: number, ttl: number, maxHold: number | undefined): Resource {
    const place = `${kind} ${String(name)}`
    this.checkOpen(place)
    if (typeof name !== 'string') throw new InvalidError(`${kind}: name must be a string, not ${typeof name}`)
    this.call(place, () => {
      checkName(name)
      checkTtl(ttl)
      if (maxHold !== undefined) checkMaxHold(maxHold)
    })
    const id = this.call(place, () => this.core.resource(kind === 'lock' ? 0 : 1, name, limit))
    return this.names.named(id, kind, name, limit)
  }

  /** Forgets the engine's resource `id` (see names.ts). */
  forget(id: number): void {
    try {
      this.core.forget(id)
    } catch (error) {
      this.trap(error)
    }
  }

  // ---- local holds through the engine ----

  /**
   * A hold of any key but a free one the store grants itself (lent-fences.ts): `known` is the key's
   * id if busy (or its lease, granted by the store itself). Answers the lease when granted at once, the
   * waiter's promise when it waits, or `undefined` when it would wait and `wait` is 0 (or, for a try,
   * when the key is held by the caller's own context).
   */
  take(
    handle: Lock,
    resource: Resource,
    key: string,
    known: number | SelfHeld | undefined,
    wait: number,
    signal: AbortSignal | undefined,
    isTry: boolean,
    fn: ((lease: Lease) => unknown) | undefined,
  ): Lease | Promise<unknown> | undefined {
    if (known !== undefined) {
      // Only a busy key can be held in the caller's context (a free key is in no hold): the async
      // context is looked at only then.
      if (this.#context !== undefined && this.#heldByCaller(resource, key)) {
        if (isTry) return undefined
        throw selfHoldError(handle, key)
      }
      if (typeof known !== 'number') {
        // Granted by the store itself: a request that would not wait changes nothing while no permit is
        // free (a lock's key has one); one that waits goes in line behind the holders (and the line the
        // store kept for the key: lent-fences.ts), in the engine. (A semaphore's with a permit free
        // comes here only when no fence was left to lend: the engine grants it once it may.)
        if ((isTry || wait === 0) && !(known instanceof Permits && known.holders.size < resource.limit)) return undefined
        known = this.adopt(resource, key, known)
      }
    }
    const waitMs = wait === Infinity ? -1 : wait
    // The clock is read only when the engine needs the time (see `turnNow`): a maxHold always, a wait
    // with a limit on a busy key always; any hold of a busy key while a deadline is set anywhere (the
    // engine answers NEED_TIME then).
    let now = handle._maxHold > 0 || (known !== undefined && wait !== Infinity && wait > 0) ? this.clock.now() : this.turnNow()
    let answer: number
    try {
      answer = this.core.hold(resource.id, known ?? -1, waitMs, handle._maxHold, now)
      if (answer === NEED_TIME) answer = this.core.hold(resource.id, known ?? -1, waitMs, handle._maxHold, (now = this.clock.now()))
    } catch (error) {
      throw this.trap(error)
    }
    // Deadlines that fell due were acted on first by the engine: their events come before this
    // hold's own, and are answered before this hold is recorded (see `#granted`).
    if (answer === 0) return this.#queued(handle, resource, key, known, wait, signal, fn, now)
    if (answer > 0) return this.#granted(handle, resource, key, known, answer, now)
    const events = this.view()[HOLD_EVENTS]!
    if (events > 0) this.drain(events, now)
    if (answer === BUSY) return undefined
    const message = `${handle.kind} ${handle.name}: key ${JSON.stringify(key)}: ${this.core.lastError()}`
    if (answer === INVALID) throw new InvalidError(message)
    if (answer === LIMIT) throw new LimitError(message)
    throw this.closedError(handle, key)
  }

  /**
   * Refuses a hold of `key` asked inside the hold `inner` (the caller's context's lease) when `inner`
   * or a hold around it still holds that key (LOCK-04), as `take` refuses it: for the line the store
   * keeps itself (`LentFences.waitBehind`).
   */
  refuseSelfHold(handle: Lock, resource: Resource, key: string, inner: Lease): void {
    if (this.#heldByCaller(resource, key, inner)) throw selfHoldError(handle, key)
  }

  /** Whether the hold `inner` (the caller's context's lease) or a hold around it still holds `key` (see `#heldByCaller`). */
  heldByCaller(resource: Resource, key: string, inner: Lease): boolean {
    return this.#heldByCaller(resource, key, inner)
  }

  /**
   * The engine granted a hold at once, with `fence`: its lease. The events of the deadlines the
   * engine acted on first are answered before the lease is recorded: a request that ended then (a
   * waiter whose wait ran out while the event loop was busy) freed its slot, which this request may
   * have taken, and its event must find its own record there. The leases they ended are told after
   * (their signals' listeners may call the store, which must know this key and request by then).
   */
  #granted(handle: Lock, resource: Resource, key: string, known: number | undefined, fence: number, now: number): Lease {
    const buf = this.view()
    const events = buf[HOLD_EVENTS]!
    const req = buf[REQ]!
    const keyId = buf[KEY]!
    const lost = events > 0 ? this.answer(events, now) : undefined
    if (keyId !== known) this.newKey(resource, key, keyId)
    const lease = new GrantedLease(this, handle, key, fence, req)
    this.reqs[req >>> 0] = lease
    if (handle._maxHold > 0) this.schedule((lease._deadline = now + handle._maxHold))
    if (events > 0) this.settle(lost)
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
    const buf = this.view()
    const events = buf[HOLD_EVENTS]!
    const req = buf[REQ]!
    const keyId = buf[KEY]!
    const lost = events > 0 ? this.answer(events, now) : undefined
    if (keyId !== known) this.newKey(resource, key, keyId)
    // With fn, a context to keep (see `Store._hold`): fn runs in it, inside the hold the caller is in.
    const context = fn === undefined ? undefined : this.#context
    const waiter = new Waiter(handle, key, req, wait, signal, fn, context?.capture?.(), context?.getStore())
    this.#recordWaiter(waiter, req)
    if (wait !== Infinity && wait > 0) this.schedule(now + wait)
    if (events > 0) this.settle(lost)
    return waiter.promise
  }

  /** A waiter in the engine's line as request `req`: recorded, and cancelled by its signal. */
  #recordWaiter(waiter: Waiter, req: number): void {
    waiter.req = req
    this.reqs[req >>> 0] = waiter
    if (this.#awaiting++ === 0) this.#keepTimer(true)
    if (waiter.signal) {
      waiter.onAbort = () => this.#cancel(waiter)
      waiter.signal.addEventListener('abort', waiter.onAbort, { once: true })
    }
  }

  /**
   * Whether the caller's async context is inside a hold of this key that still holds it (LOCK-04): a
   * released or lost lease is no longer the record of its request (or, granted by the store itself,
   * of its key).
   */
  #heldByCaller(resource: Resource, key: string, inner: Lease | undefined = this.#context!.getStore()): boolean {
    for (let held = inner; held; held = held._parent) {
      if (held._resource !== resource || held.key !== key) continue
      const req = held._req
      if (req >= 0 ? this.reqs[req >>> 0] === held : isSelfHeldBy(resource.keys.get(key), held)) return true
    }
    return false
  }

  /**
   * A waiter's signal aborted: it leaves the line, answered `CancelledError`. Runs as the signal's
   * abort listener, so it throws nothing (on Node, an uncaught exception): a trap of the cancel, or of
   * the drain after it, closes the store, which answers every request it finds.
   */
  #cancel(waiter: Waiter): void {
    if (this.reqs[waiter.req >>> 0] !== waiter || this.closed) return
    const now = this.clock.now()
    let n: number
    try {
      n = this.core.cancel(waiter.req, now)
    } catch (error) {
      // Still recorded: the trap answers it with the others, ClosedError.
      this.trap(error)
      return
    }
    this.reqs[waiter.req >>> 0] = undefined
    this.#awaited()
    waiter.reject(new CancelledError(`${waiter.place()}: cancelled while waiting`, { cause: waiter.signal!.reason }))
    if (n === 0) return
    try {
      this.drain(n, now)
    } catch (error) {
      this.trap(error)
    }
  }

  /**
   * @internal Lets the key of a lease the engine granted go (called by `Lease`, once). A waiter it grants is
   * handed the key within this call only `fromHold` (see waiters.ts # Handing a key over); otherwise in
   * a microtask.
   */
  _release(req: number, lease: Lease, fromHold: boolean): void {
    if (this.closed) return
    let n: number
    // Untimed but for the first call of a turn (see `turnNow`); the engine asks for the time when a
    // deadline needs it.
    let now = this.turnNow()
    try {
      n = this.core.release(req, now)
      if (n === NEED_TIME) n = this.core.release(req, (now = this.clock.now()))
    } catch (error) {
      throw this.trap(error)
    }
    if (n <= IDLE_BASE) {
      this.reqs[req >>> 0] = undefined
      this.idle(IDLE_BASE - n)
      return
    }
    // Events first: a lease found past its maxHold is revoked by this very release (its record
    // must still be there for the drain to find it lost).
    if (n > 0) {
      this.handOvers.now = fromHold
      this.drain(n, now)
      this.handOvers.now = false
    }
    if (this.reqs[req >>> 0] === lease) this.reqs[req >>> 0] = undefined
  }

  /**
   * Hands the holding of a key the store granted itself to the engine, which now knows the key (a busy
   * key with this lease as its holder; see lent-fences.ts), and then its line, waiter by waiter in
   * order, each as if it had joined the engine's line (lent-fences.ts # Lines the store keeps itself):
   * answers the key's id.
   */
  adopt(resource: Resource, key: string, held: SelfHeld): number {
    let line: Line<unknown> | undefined
    let id = -1
    if (held instanceof Permits) {
      // A semaphore's: every holder, in grant order, into the one key, before any waiter. The key is
      // known by its id only once all are the engine's: until then a trap finds them all here.
      for (const lease of held.holders) id = this.#adopt(resource, id, lease)
      held.holders.clear()
      line = held.line
      held.line = undefined
    } else {
      id = this.#adopt(resource, id, held)
      line = held._line
      held._line = undefined
    }
    this.newKey(resource, key, id)
    if (line === undefined) return id
    const waiting = line.drain() as Waiter[]
    let i = 0
    try {
      for (; i < waiting.length; i++) this.#lineUp(resource, id, waiting[i]!)
    } finally {
      // After a trap, the waiters not yet in the engine's line are answered here (the trap answered the others).
      for (; i < waiting.length; i++) waiting[i]!.reject(this.closedError(waiting[i]!.handle, waiting[i]!.key))
    }
    return id
  }

  /** `lease` is the engine's now, into key `id` (or a new key, for -1): answers the key's id. */
  #adopt(resource: Resource, id: number, lease: Lease): number {
    let answer: number
    try {
      answer = id < 0 ? this.core.adopt(resource.id, lease.fence, lease._since) : this.core.adoptInto(id, lease.fence, lease._since)
    } catch (error) {
      throw this.trap(error)
    }
    if (!(answer > 0)) throw this.trap(new Error(`the engine refused a key the store granted itself: ${this.core.lastError()}`))
    const buf = this.view()
    const req = buf[REQ]!
    this.reqs[req >>> 0] = lease
    lease._adopted(req)
    return buf[KEY]!
  }

  /** A waiter of the store's own line joins the engine's line of key `id` (see `adopt`), without a time limit. */
  #lineUp(resource: Resource, id: number, waiter: Waiter): void {
    waiter.unlisten()
    let now = this.turnNow()
    let answer: number
    try {
      answer = this.core.hold(resource.id, id, -1, 0, now)
      if (answer === NEED_TIME) answer = this.core.hold(resource.id, id, -1, 0, (now = this.clock.now()))
    } catch (error) {
      throw this.trap(error)
    }
    const buf = this.view()
    const events = buf[HOLD_EVENTS]!
    const req = buf[REQ]!
    const lost = events > 0 ? this.answer(events, now) : undefined
    if (answer === 0) this.#recordWaiter(waiter, req)
    else if (answer > 0) throw this.trap(new Error(`the engine granted a held key to request ${req}`))
    else {
      const message = `${waiter.place()}: ${this.core.lastError()}`
      waiter.reject(answer === LIMIT ? new LimitError(message) : answer === INVALID ? new InvalidError(message) : this.closedError(waiter.handle, waiter.key))
    }
    if (events > 0) this.settle(lost)
  }

  /** The busy keys the engine knows, with their holders and how many wait (`inspect`). */
  busyKeys(now: number): KeyInfo[] {
    const raw = this.call('inspect', () => this.core.inspect(now)) as {
      resource: number
      key: number
      holders: { fence: number; heldMs: number }[]
      waiting: number
    }[]
    return raw.map(view => {
      const resource = this.names.byId[view.resource >>> 0]!
      return {
        kind: resource.kind,
        name: resource.name,
        key: this.#keyName[view.key >>> 0]!,
        holders: view.holders.map(h => ({ fence: h.fence, heldMs: h.heldMs })),
        waiting: view.waiting,
      }
    })
  }

  // ---- keys ----

  /** The engine made a key busy under `id`: its string and resource are kept until it goes idle. */
  newKey(resource: Resource, key: string, id: number): void {
    resource.keys.set(key, id)
    const index = id >>> 0
    this.#keyName[index] = key
    this.#keyResource[index] = resource
  }

  /**
   * A key went idle: forget its string — unless the string already names a newer key (a hold made
   * it anew in the same call that let the old one go; see `Engine::hold`). `id` is the key's whole
   * id (generation included), or undefined from a release's fast answer, which is never stale.
   */
  idle(index: number, id?: number): void {
    const resource = this.#keyResource[index]
    if (!resource) return
    const name = this.#keyName[index]!
    if (id !== undefined && resource.keys.get(name) !== id) return
    resource.keys.delete(name)
    this.#keyName[index] = undefined
    this.#keyResource[index] = undefined
    // Its name may be unused now (see names.ts); the server may keep the name it serves to the end of
    // the turn (remote-holds.ts `#keep`).
    if (resource.pin === undefined) this.#remote.idled(resource)
  }

  // ---- time ----

  /**
   * The time for a hold or release that may not need it: read once per turn of the event loop, and
   * -1 (not read) for the calls after it in the same turn. The engine asks for the real time whenever a
   * hold sets a deadline; an untimed grant is stamped with the turn's time, which only `inspect`
   * reads (so `heldMs` is off by at most the length of a turn). A clock read costs as much as the
   * rest of an uncontended hold on some machines.
   */
  turnNow(): number {
    if (this.#turnRead) return -1
    this.#turnRead = true
    this.clock.setTimeout(this.#endTurn, 0)
    return (this.#turnTime = this.clock.now())
  }

  /** The time of this turn (read now if not yet): the stamp of a key the store granted itself, as the engine's untimed grants. */
  turnStamp(): number {
    this.turnNow()
    return this.#turnTime
  }

  readonly #endTurn = (): void => {
    this.#turnRead = false
  }

  /** Makes sure the timer runs at `at` at the latest. */
  schedule(at: number): void {
    if (at >= this.#timerAt) return
    if (this.#timer !== undefined) clearTimer(this.clock, this.#timer)
    this.#timerAt = at
    // Chained past 2^31−1 ms (a maxHold of 30 days, a wait of 25): see clock.ts # Long timers.
    this.#timer = setTimer(this.clock, this.#onTimer, Math.max(0, at - this.clock.now()))
    if (this.#awaiting > 0) keepAlive(this.#timer)
  }

  /**
   * A promise the store returned waits on its timer until it settles (a hold under a `maxHold`, a pool
   * claim): the timer keeps the process alive meanwhile (see # Timers keep the process alive while awaited).
   */
  awaits(promise: Promise<unknown>): void {
    if (this.#awaiting++ === 0) this.#keepTimer(true)
    promise.then(this.#awaited, this.#awaited)
  }

  /** A promise counted by `awaits` settled, or a waiter left the engine's line (answered, or cancelled). */
  readonly #awaited = (): void => {
    if (--this.#awaiting === 0) this.#keepTimer(false)
  }

  /** The timer, if set, keeps the process alive (`keep`) or not: something began, or ceased, to wait on it. */
  #keepTimer(keep: boolean): void {
    if (this.#timer !== undefined) keepAlive(this.#timer, keep)
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimer(this.clock, this.#timer)
    this.#timer = undefined
    this.#timerAt = Infinity
  }

  /** @internal The clock the leases' deadlines are counted on (see `Lease` # Reading checks the clock). */
  _now(): number {
    return this.clock.now()
  }

  /**
   * @internal A lease was read past its maxHold before the timer ran: act on every deadline due now, as
   * the timer would (the engine revokes the lease, and its key goes on).
   */
  _overdue(): void {
    // Read from anywhere (an abort listener of this very drain, say): its grants are handed over in
    // a microtask, as a timer's are, never inside the reader's call.
    const handNow = this.handOvers.now
    this.handOvers.now = false
    this.#clearTimer()
    this.#onTimer()
    this.handOvers.now = handNow
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined
    this.#timerAt = Infinity
    if (this.closed) return
    const now = this.clock.now()
    let n: number
    let next: number
    try {
      n = this.core.advance(now)
      this.drain(n, now)
      next = this.core.nextDeadline()
    } catch (error) {
      this.trap(error)
      return
    }
    // A ttl that ran out changed its pool (whichever call acted on it first, this timer was set for it).
    this.#pools.poke()
    if (next >= 0) this.schedule(next)
  }

  // ---- events ----

  /** The buffer, made anew when wasm memory grew (which detaches the old view). */
  view(): Float64Array {
    if (this.#buf.length === 0) this.#buf = new Float64Array(this.#memory.buffer, this.#ptr, this.#bufLen)
    return this.#buf
  }

  /**
   * Reads `n` events from the buffer (and more while the engine has them) and answers each. `now` is
   * -1 after an untimed call: the clock is read only if an event needs the time (it never does then:
   * the engine asks for the time before a grant that starts a deadline).
   */
  drain(n: number, now: number): void {
    this.settle(this.answer(n, now))
  }

  /**
   * `drain` but for what may run the program's code at once (a lost lease's signal listeners, the
   * fns handed their keys): answers `n` events and more, and answers the leases they ended, for
   * `settle`. A call that made a request reads its events with this *before* it records the request
   * (see `#granted`), then settles them.
   */
  answer(n: number, now: number, lost?: Lost): Lost | undefined {
    // Aborting a lease's signal runs user listeners at once, and they may call into the store, which
    // would overwrite the buffer: abort only after the whole drain. (`lost`, given: where they go, so
    // that the close still has those read before a trap: `close`.)
    const handOvers = this.handOvers
    for (;;) {
      const buf = this.view()
      for (let i = 0; i < n; i++) {
        const at = EVENTS + i * EVENT_SIZE
        const kind = buf[at]!
        const id = buf[at + 1]!
        const record = kind === KEY_IDLE ? undefined : this.reqs[id >>> 0]
        if (kind === GRANTED && record instanceof Waiter) {
          // The common event, answered here; every other in `#event` (kept apart so that this loop
          // stays small: V8 and JSC tier a function up after a number of runs scaled by its size).
          const handle = record.handle
          const lease = new GrantedLease(this, handle, record.key, buf[at + 2]!, id)
          this.reqs[id >>> 0] = lease
          this.#awaited()
          record.unlisten()
          if (handle._maxHold > 0) this.schedule((lease._deadline = (now < 0 ? (now = this.clock.now()) : now) + handle._maxHold))
          // An aborted signal: cancelled once the drain is over (waiters.ts # Aborted at the grant).
          if (record.fn === undefined && record.signal?.aborted !== true) record.resolve(lease)
          else {
            handOvers.queue[handOvers.end++] = record
            handOvers.queue[handOvers.end++] = lease
          }
        } else {
          if (now < 0 && record instanceof RemoteRequest) now = this.clock.now()
          const ended = this.#event(kind, id, record, buf[at + 2]!, now)
          if (ended !== undefined) (lost ??= []).push(ended)
        }
      }
      if (n < EVENT_SLOTS) break
      n = this.core.drain()
      if (n === 0) break
    }
    return lost
  }

  /** Tells the leases `answer` found ended, and hands the keys it granted over (now or soon, see waiters.ts). */
  settle(lost: Lost | undefined): void {
    if (lost) for (const [lease, reason] of lost) lease._lose(reason)
    const handOvers = this.handOvers
    if (handOvers.end !== 0 && !handOvers.running) handOvers.start()
  }

  /**
   * Answers one event of `drain` but a waiter's grant: a key gone idle, a request over a connection,
   * a waiter that timed out, failed or ended. A lease that ended is not told here: it is answered
   * with its reason, for the drain to tell it once every event was read.
   */
  #event(kind: number, id: number, record: Waiter | Lease | RemoteRequest | undefined, a: number, now: number): [Lease, LostError | ClosedError] | undefined {
    if (kind >= CLAIMED) return void this.#pools.event(kind, id, a)
    const index = id >>> 0
    if (kind === KEY_IDLE) {
      this.idle(index, id)
      return undefined
    }
    if (record instanceof RemoteRequest) {
      this.#remote.event(record, kind, a, now)
      return undefined
    }
    if (kind === GRANTED) throw this.trap(new Error(`the engine granted request ${id}, which does not wait on this side`))
    this.reqs[index] = undefined
    if (record instanceof Lease) {
      const reason =
        kind === REVOKED
          ? new LostError(`${record.kind} ${record.name}: key ${JSON.stringify(record.key)}: lease revoked at maxHold`)
          : this.closedError(record, record.key)
      return [record, reason]
    }
    const waiter = record as Waiter
    this.#awaited()
    waiter.unlisten()
    if (kind === TIMED_OUT) {
      waiter.reject(new InUseError(`${waiter.place()}: still held after waiting ${waiter.wait}ms`))
    } else if (kind === FAILED) {
      waiter.reject(
        a === 1
          ? new StorageError(`${waiter.place()}: storage failed to keep the fence ceiling; nothing was granted`, { cause: this.#writes.lastError })
          : new LimitError(`${waiter.place()}: every fence below 2^53 was handed out`),
      )
    } else if (kind === ENDED) {
      waiter.reject(this.closedError(waiter.handle, waiter.key))
    }
    return undefined
  }

  // ---- storage ----

  /** A fence write settled, and the engine applies it (answering whom it held up). */
  ceilingWritten(ceiling: number, ok: boolean): void {
    if (this.closed) return
    const now = this.clock.now()
    let n: number
    try {
      n = this.core.ceilingWritten(ceiling, ok, now)
    } catch (error) {
      this.trap(error)
      return
    }
    this.drain(n, now)
  }

  /**
   * Resolves once no fence write is under way, nor a pools' write in storage's hands. A write landing
   * after the storage was let go could overwrite a larger ceiling written by the next store to open on
   * the same storage (LOCK-02), or that store's pools with a segment of the same number (POOL-02: the
   * claims it confirmed lost). A trap (before `close()` or inside it) stops the pools' writes without
   * waiting for them: this waits.
   */
  async writesLanded(): Promise<void> {
    await Promise.all([this.#writes.landed(), this.#pools.stored()])
  }

  /**
   * Frees the engine's memory, once the store closed and nothing it started is under way (its fence and
   * pool writes landed, its servers closed). Without it the core's memory went back only when the
   * store was collected (fence-writes.ts # Held weakly). A call into the freed core throws (wasm-bindgen: a null
   * pointer), which every call site takes as it takes a trap — after the close, as `ClosedError`; and
   * the buffer this host reads and writes is from then on a copy of its own, so that nothing touches
   * the memory a core opened later is given. Called once, by the close that closed the engine; a core
   * that trapped (before, or during that close) is not freed: it is left to the finalizer (a panic
   * may leave it borrowed, and freeing it would throw).
   */
  free(): void {
    this.#buf = new Float64Array(this.#bufLen)
    this.#freed = true
    if (!this.#coreTrapped) this.core.free()
  }

  async closeStorage(): Promise<void> {
    try {
      await this.#storage.close?.()
    } catch (error) {
      throw new StorageError(`close: storage.close failed: ${(error as Error)?.message}`, { cause: error })
    } finally {
      releaseStorage(this.#storage)
    }
  }

  // ---- closing, errors, traps ----

  /**
   * Closes the engine: every request it knows is answered by the drain of its events (leases end,
   * waiters are answered `ClosedError`). Answers false when the engine trapped instead, in its close
   * or as its events were read: then the trap answered them (those not read yet), as any trap does
   * (`trap`).
   */
  close(): boolean {
    this.closed = new ClosedError('the store is closed')
    this.#clearTimer()
    let n: number
    try {
      n = this.core.close()
    } catch (error) {
      // The engine answered nothing: the trap answers every request, and ends what the store started
      // (it does nothing on a store it finds closed).
      this.closed = undefined
      this.trap(error)
      return false
    }
    // More events than a page are read from `core.drain()`, which may trap too (or a call an event
    // makes: it finds the store closed, and throws that). Then the trap answers what was not read yet.
    const lost: Lost = []
    try {
      this.answer(n, this.clock.now(), lost)
    } catch (error) {
      this.#trapReadingClose(error, lost)
      return false
    }
    this.settle(lost.length === 0 ? undefined : lost)
    // What the pools changed before the close is still written, and so are the undos of the claims
    // the close ended while their writes were under way (they took nothing: engine pool/write.rs).
    // A release, confirm or resize in those writes is answered by them (the close did not end it).
    this.#pools.poke()
    return true
  }

  /**
   * The engine trapped while `close` read the events of its close: the requests it ended that were
   * read are answered as closed (`lost`: the leases among them, told now); every other is answered by
   * the trap, which ends what the store started (its servers, its storage), as one in `core.close()`
   * does. Without it the requests not read were never answered, and `close()` rejected the bare wasm
   * error, its servers listening and its storage held.
   */
  #trapReadingClose(error: unknown, lost: Lost): void {
    // A call an event made met the trap first (`trap` found the store closed): its error is the cause.
    const cause = this.trappedClosing?.cause ?? error
    this.trappedClosing = undefined
    this.closed = undefined
    this.trap(cause)
    this.settle(lost.length === 0 ? undefined : lost)
  }

  checkOpen(place: string): void {
    if (this.closed) throw new ClosedError(`${place}: ${this.closed.message}`, this.closed.cause === undefined ? undefined : { cause: this.closed.cause })
  }

  /** The store's closing, as the answer of `key` of a lock or semaphore (a waiter's, a lease's). */
  closedError(of: { readonly kind: string; readonly name: string }, key: string): ClosedError {
    const closed = this.closed ?? new ClosedError('the store is closed')
    return new ClosedError(
      `${of.kind} ${of.name}: key ${JSON.stringify(key)}: ${closed.message}`,
      closed.cause === undefined ? undefined : { cause: closed.cause },
    )
  }

  /** Runs a call into wasm that may throw an engine error (rethrown as its class) or trap. */
  call<T>(place: string, fn: () => T): T {
    try {
      return fn()
    } catch (error) {
      const e = error as { code?: unknown }
      if (e && typeof e.code === 'string') throw fromEngine(error, place)
      throw this.trap(error)
    }
  }

  /**
   * The engine trapped (a Rust panic) or failed in a way it never should: its state can no longer be
   * trusted. Answer every waiter and end every lease with a `ClosedError` whose cause is the trap, and
   * close: the storage is let go, and the store told (`attach`'s `trapped`: its servers close). Answers
   * the error for the caller to throw.
   */
  trap(error: unknown): ClosedError {
    if (this.closed) {
      // Closed by close(), which still waits for its pools' last writes: the engine trapped taking
      // one, or told its outcome, and answers none of them now. Their requests are answered here and
      // the writes stop, else close() (and a release, confirm or resize in them) waited for good.
      if (!this.#coreTrapped && !this.#freed) {
        this.#coreTrapped = true
        this.trappedClosing = closedBy(error)
        this.#pools.trap(this.trappedClosing)
      }
      return this.closed
    }
    const closed = closedBy(error)
    this.closed = closed
    this.#coreTrapped = true
    this.#clearTimer()
    for (let i = 0; i < this.reqs.length; i++) {
      const record = this.reqs[i]
      this.reqs[i] = undefined
      if (record instanceof Lease) record._lose(this.closedError(record, record.key))
      else if (record instanceof RemoteRequest) {
        if (record.holding) record.sink.lost(record, 'closed')
        else record.sink.failed(record, 'closed', `${record.place()}: ${closed.message}`)
      } else if (record) {
        this.#awaited()
        record.unlisten()
        record.reject(this.closedError(record.handle, record.key))
      }
    }
    this.#selfGrants.loseAll()
    this.#pools.trap(closed)
    for (const resource of this.names.byId) resource?.keys.clear()
    // The storage goes only once the writes under way landed (fence-writes.ts: a late write must never
    // land over a larger ceiling kept by the next store on the same storage, LOCK-02; nor over its
    // pools, POOL-02).
    this.#trapped(
      closed,
      this.writesLanded()
        .then(() => this.closeStorage())
        .catch(() => {}),
    )
    return closed
  }

  // ---- for tests ----

  /** How much the engine keeps (`[keys, requests, key places, request places, timers, resources]`), and the names the store keeps. */
  footprint(): number[] {
    this.checkOpen('_footprint')
    return [...this.core.footprint(), this.names.count()]
  }

  /** The size of wasm memory in bytes. */
  memoryBytes(): number {
    return this.#memory.buffer.byteLength
  }

  /** Makes the engine trap, as a bug would. */
  trapForTest(): void {
    try {
      this.core.trapForTest()
    } catch (error) {
      throw this.trap(error)
    }
  }
}

/** Whether `held` (a lease of a key the store granted itself) still holds the key whose record is `record`. */
function isSelfHeldBy(record: number | SelfHeld | undefined, held: Lease): boolean {
  return record === held || (record instanceof Permits && record.holders.has(held))
}

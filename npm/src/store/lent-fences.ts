/**
 * Keys the store grants itself, from fences the engine lent it: no call into wasm.
 *
 * # Keys the store grants itself
 * A lock's free key, held without `maxHold`, is granted on this side: its fence the next of a block
 * the engine lent (`core.lend`, in the buffer at `FENCE_NEXT`..`FENCE_END`), its record the lease
 * itself in `Resource.keys` in place of a key id, its release a delete. Its request id is negative,
 * `SELF_GRANTED - the place of its resource id` (the engine's ids are not), so that its release finds
 * its resource without a lookup. The engine takes the block back at the start of its next call, from
 * the first fence not taken, so fences stay in grant order whoever granted them (calling rule 3).
 *
 * The first request the key's holder does not answer alone (a hold that would wait, a hold over a
 * connection) hands the holding to the engine first (`EngineHost.adopt`: a busy key with this lease
 * as its holder), and everything after goes the engine's way until the key is idle again. A key the
 * store granted itself is never known to the engine, so nothing there can be due for it: only a
 * maxHold or a ttl sets a deadline, and those holds go to the engine.
 *
 * These leases answer to this part (`LeaseOwner`): a release is one call from `Lease._end`, a delete,
 * or, once adopted, the host's release.
 *
 * # Lines the store keeps itself
 * A hold that would wait for such a key *without a time limit* (`wait: Infinity`, from a handle without
 * maxHold) waits in a line this part keeps, the key's, on its holder's lease (`Lease._line`, passed
 * on to each next holder): no call into wasm to join it, none to be granted. When the holder lets go,
 * the first in line is granted right there with the next lent fence, and its fn runs as a waiter the
 * engine granted would (waiters.ts # Handing a key over: within the release when it is a hold's own,
 * else a microtask after it). So the line keeps the engine's rules: FIFO (LOCK-01), fences in grant
 * order (calling rule 3), at most `MAX_WAITERS` in line, the holder of the key held by the caller
 * refused (LOCK-04, checked by the host before).
 *
 * Whatever the line cannot answer alone goes to the engine, with the key: a hold with a time limit or
 * a maxHold, a hold over a connection, a line full, no fence left to lend. `EngineHost.adopt` then
 * hands it the holder and then every waiter of the line, in order (each as the engine's request, as if
 * it had joined the engine's line), before the new request. A waiter's signal takes it out of this
 * line (`CancelledError`); closing the store answers every waiter here `ClosedError`.
 *
 * # Semaphores
 * A semaphore's key without maxHold is granted here too, permit by permit: its record is its `Permits`
 * (permits.ts), the leases holding it and its line. A hold finds a permit free (granted with the next
 * lent fence), or every permit held: then, waiting without a time limit, it joins the line, and each
 * release hands its permit to the first in line, as a lock's key is handed over; a try or a hold that
 * would not wait is answered busy. A hold inside a hold of the key in its caller's context is refused
 * (LOCK-04) whether or not a permit is free, as the engine's way refuses it. Whatever the permits
 * cannot answer alone goes to the engine as a lock's key does: `EngineHost.adopt` hands it every
 * holder, in grant order, then the line.
 */

import { CancelledError } from '../errors.js'
import { GrantedLease, type Lease, type LeaseOwner } from '../handle/lease.js'
import type { Lock } from '../handle/lock.js'
import { Line } from '../util/line.js'
import { FENCE_END, FENCE_NEXT } from './abi.js'
import type { ContextStorage } from '../handle/context.js'
import type { EngineHost, SelfGrants } from './engine-host.js'
import type { Resource, SelfHeld } from './key-ids.js'
import { Permits } from './permits.js'
import type { KeyInfo } from '../types.js'
import { Waiter } from './waiters.js'
import { runHandedOver } from '../handle/run-in-lease.js'

/** How many fences to borrow at once: one call into wasm per this many keys granted. */
const LEND = 4096
/**
 * The first borrow's size, doubled at each borrow up to `LEND`: the first grants borrow often, so that
 * V8 has seen the borrow run by the time it optimizes a grant (see `#fence`).
 */
const FIRST_LEND = 16
/** The request id of a lease the store granted itself: `SELF_GRANTED - the place of its resource id`. */
const SELF_GRANTED = -1
/** The most holds one key may have waiting (the engine's `bounds::MAX_WAITERS`): past it, the engine's line answers. */
export const MAX_WAITERS = 10_000
/** What `permit` answers when the engine must answer the hold (`EngineHost.take`, which adopts the key). */
export const TO_ENGINE = Symbol('to the engine')

export class LentFences implements SelfGrants, LeaseOwner {
  readonly #host: EngineHost
  /** The names in use by the place of their ids (`Names.byId`). */
  readonly #byId: (Resource | undefined)[]
  readonly #context: ContextStorage | undefined
  /** How many fences the next borrow asks for (see `FIRST_LEND`). */
  #lend = FIRST_LEND

  constructor(host: EngineHost, context: ContextStorage | undefined) {
    this.#host = host
    this.#byId = host.names.byId
    this.#context = context
  }

  /**
   * Grants a free key with the next lent fence, borrowing a block when none is left; `undefined` when
   * the engine has no fence to lend (its grant waits for storage).
   */
  grant(handle: Lock, resource: Resource, key: string): Lease | undefined {
    const fence = this.#fence()
    if (fence < 0) return undefined
    const lease = new GrantedLease(this, handle, key, fence, SELF_GRANTED - (resource.id >>> 0))
    lease._since = this.#host.turnStamp()
    resource.keys.set(key, lease)
    return lease
  }

  /**
   * The next lent fence, taken; a block borrowed when none is left; -1 when the engine lends none. One
   * function for every grant, whose first borrows come within its first hundred calls (`FIRST_LEND`):
   * so V8 has seen the borrow run before it optimizes a grant, and a grant's optimized code, into which
   * this is inlined, never meets a path it has not seen run (at the first borrow after 4,096 grants it
   * did: that deoptimizes a function, to be optimized again thousands of calls later).
   */
  #fence(): number {
    const buf = this.#host.view()
    const fence = buf[FENCE_NEXT]!
    if (!(fence < buf[FENCE_END]!)) return this.#borrowOne()
    buf[FENCE_NEXT] = fence + 1
    return fence
  }

  /** Borrows the next block of fences and takes its first: the fence, or -1 when the engine lends none. */
  #borrowOne(): number {
    let lent: number
    try {
      lent = this.#host.core.lend(this.#lend)
      if (this.#lend < LEND) this.#lend *= 2
    } catch (error) {
      throw this.#host.trap(error)
    }
    if (!(lent > 0)) return -1
    const buf = this.#host.view()
    const fence = buf[FENCE_NEXT]!
    buf[FENCE_NEXT] = fence + 1
    return fence
  }

  /**
   * A hold that waits without a time limit, from a handle without maxHold, for a lock's key the store
   * granted itself (`holder`): joins its line (see # Lines the store keeps itself) and answers the
   * waiter's promise; with fn (where the context can be kept), the waiter keeps its caller's context
   * and runs fn in it when granted. `undefined` when the line is full (then the engine takes the key,
   * its line and this hold: `EngineHost.take`). Refused inside its own hold (LOCK-04), as the engine's
   * way refuses it. The contended hand-over's hold, in one function (the store calls it directly).
   */
  waitBehind(
    handle: Lock,
    resource: Resource,
    key: string,
    holder: Lease,
    signal: AbortSignal | undefined,
    fn: ((lease: Lease) => unknown) | undefined,
  ): Promise<unknown> | undefined {
    // `#join`'s work, written out here: the contended hand-over's hold stays one function, as it was
    // before semaphores shared the line (W3; see the commit that wrote this for the A/B).
    const context = this.#context
    const parent = context?.getStore()
    if (parent !== undefined) this.#host.refuseSelfHold(handle, resource, key, parent)
    const line = (holder._line ??= new Line<unknown>())
    if (line.size >= MAX_WAITERS) return undefined
    const waiter = new Waiter(handle, key, -1, Infinity, signal, fn, fn === undefined ? undefined : context!.capture!(), parent)
    line.push(waiter)
    if (signal) {
      waiter.onAbort = () => this.#cancel(waiter)
      signal.addEventListener('abort', waiter.onAbort, { once: true })
    }
    return waiter.promise
  }

  /** A waiter joins `line` (see `waitBehind`); `undefined` when the line is full. */
  #join(
    line: Line<unknown>,
    handle: Lock,
    key: string,
    signal: AbortSignal | undefined,
    fn: ((lease: Lease) => unknown) | undefined,
    parent: Lease | undefined,
  ): Promise<unknown> | undefined {
    if (line.size >= MAX_WAITERS) return undefined
    const waiter = new Waiter(handle, key, -1, Infinity, signal, fn, fn === undefined ? undefined : this.#context!.capture!(), parent)
    line.push(waiter)
    if (signal) {
      waiter.onAbort = () => this.#cancel(waiter)
      signal.addEventListener('abort', waiter.onAbort, { once: true })
    }
    return waiter.promise
  }

  /**
   * A hold of a semaphore's key from a handle without maxHold (see # Semaphores), `known` its record:
   * the lease, granted with a permit free; the waiter's promise, in the permits' line (with fn: as
   * `waitBehind`); `undefined` when every permit is held and it would not wait (a try, or wait 0) or
   * when a try is inside a hold of the key; or `TO_ENGINE` when the engine must answer it (a key the
   * engine knows, a wait with a time limit, a line full, no fence to lend). Throws `InvalidError` for
   * a hold inside a hold of the key (LOCK-04).
   */
  permit(
    handle: Lock,
    resource: Resource,
    key: string,
    known: number | SelfHeld | undefined,
    wait: number,
    signal: AbortSignal | undefined,
    isTry: boolean,
    fn: ((lease: Lease) => unknown) | undefined,
  ): Lease | Promise<unknown> | undefined | typeof TO_ENGINE {
    if (known === undefined) return this.#grantPermit(handle, resource, key, undefined) ?? TO_ENGINE
    if (!(known instanceof Permits)) return TO_ENGINE
    // Only a busy key can be held in the caller's context: the context is looked at only now.
    const parent = this.#context?.getStore()
    if (parent !== undefined && this.#host.heldByCaller(resource, key, parent)) {
      if (isTry) return undefined
      this.#host.refuseSelfHold(handle, resource, key, parent)
    }
    if (known.holders.size < resource.limit) return this.#grantPermit(handle, resource, key, known) ?? TO_ENGINE
    if (isTry || wait === 0) return undefined
    if (wait !== Infinity) return TO_ENGINE
    return this.#join(known.lineUp(), handle, key, signal, fn, parent) ?? TO_ENGINE
  }

  /**
   * A permit of a semaphore's key granted with the next lent fence: the key's first (its permits made)
   * or one more of `permits`. `undefined` when the engine has no fence to lend.
   */
  #grantPermit(handle: Lock, resource: Resource, key: string, permits: Permits | undefined): Lease | undefined {
    const fence = this.#fence()
    if (fence < 0) return undefined
    const lease = new GrantedLease(this, handle, key, fence, SELF_GRANTED - (resource.id >>> 0))
    lease._since = this.#host.turnStamp()
    if (permits === undefined) resource.keys.set(key, (permits = new Permits()))
    permits.holders.add(lease)
    return lease
  }

  /** A waiter's signal aborted while in this part's line: it leaves the line, answered `CancelledError`. */
  #cancel(waiter: Waiter): void {
    const held = waiter.handle._resource.keys.get(waiter.key)
    const line = typeof held === 'object' ? lineOf(held) : undefined
    if (line?.remove(waiter) !== true) return
    waiter.reject(new CancelledError(`${waiter.place()}: cancelled while waiting`, { cause: waiter.signal!.reason }))
  }

  /**
   * @internal Lets a lease's key go (called by `Lease`, once). Never adopted (`req` < 0) and the engine
   * never knew it: a delete, or the first in its line granted (see # Lines the store keeps itself).
   * Adopted, the engine's release.
   */
  _release(req: number, lease: Lease, fromHold: boolean): void {
    if (req >= 0) return this.#host._release(req, lease, fromHold)
    const resource = this.#byId[SELF_GRANTED - req]!
    const keys = resource.keys
    const held = keys.get(lease.key)
    if (held === lease) {
      const line = lease._line
      if (line !== undefined && line.size !== 0) return this.#handOver(resource, lease, line, fromHold)
      this.#idle(resource, lease.key)
    } else if (held instanceof Permits && held.holders.has(lease)) this.#releasePermit(resource, held, lease, fromHold)
  }

  /** A key the store granted itself went idle: forgotten. */
  #idle(resource: Resource, key: string): void {
    resource.keys.delete(key)
    // A lease that outlived its handles: its name may be unused now (see names.ts).
    if (resource.pin === undefined) this.#host.names.forgetIfUnused(resource)
  }

  /** `lease` lets its permit go: to the first in line, with the next lent fence, if anyone waits. */
  #releasePermit(resource: Resource, permits: Permits, lease: Lease, fromHold: boolean): void {
    const line = permits.line
    if (line === undefined || line.size === 0) {
      permits.holders.delete(lease)
      if (permits.holders.size === 0) this.#idle(resource, lease.key)
      return
    }
    const fence = this.#fence()
    if (fence < 0) {
      // No fence to lend: the engine takes the key, this holder among the others, and its line.
      this.#host.adopt(resource, lease.key, permits)
      this.#host._release(lease._req, lease, fromHold)
      return
    }
    permits.holders.delete(lease)
    const waiter = line.shift() as Waiter
    const next = new GrantedLease(this, waiter.handle, lease.key, fence, lease._req)
    next._since = this.#host.turnStamp()
    permits.holders.add(next)
    this.#start(waiter, next, fromHold)
  }

  /** `lease` lets its key go to the first in its line, with the next lent fence. */
  #handOver(resource: Resource, lease: Lease, line: Line<unknown>, fromHold: boolean): void {
    const host = this.#host
    const fence = this.#fence()
    if (fence < 0) {
      // No fence to lend (the engine waits for storage): the engine takes the key and its line, and
      // grants the next once it may.
      host.adopt(resource, lease.key, lease)
      host._release(lease._req, lease, fromHold)
      return
    }
    const waiter = line.shift() as Waiter
    lease._line = undefined
    const next = new GrantedLease(this, waiter.handle, lease.key, fence, lease._req)
    next._since = host.turnStamp()
    if (line.size !== 0) next._line = line
    resource.keys.set(lease.key, next)
    // `#start`'s work, written out here, and `HandOvers.runNow`'s and `handOverIn`'s: the contended
    // hand-over's release stays one function (W3: each function on this path is one more for the JIT
    // to run unoptimized and then compile, in the first thousands of hand-overs).
    const onAbort = waiter.onAbort
    if (onAbort !== undefined) {
      const signal = waiter.signal!
      signal.removeEventListener('abort', onAbort)
      // Aborted inside this release (waiters.ts # Aborted at the grant): through the queue. Out of
      // the way of a waiter without a signal, which pays one check for it, as before.
      if (signal.aborted) return this.#enqueue(waiter, next, fromHold)
    }
    if (waiter.fn === undefined) return waiter.resolve(next)
    const handOvers = host.handOvers
    if (fromHold && handOvers.end === 0 && !handOvers.running) {
      handOvers.running = true
      const scope = waiter.scope!
      if (typeof scope === 'function') scope(runHandedOver, waiter, next, this.#context!)
      else scope.runInAsyncScope(runHandedOver, undefined, waiter, next, this.#context!)
      if (handOvers.end !== 0) handOvers.runAll()
      handOvers.running = false
      return
    }
    handOvers.queue[handOvers.end++] = waiter
    handOvers.queue[handOvers.end++] = next
    if (handOvers.running) return
    handOvers.now = fromHold
    handOvers.start()
    handOvers.now = false
  }

  /**
   * `waiter`, out of its line, was granted `next`: answered with it, or its fn run in it (waiters.ts
   * # Handing a key over: within the release when it is a hold's own, else a microtask after it).
   */
  #start(waiter: Waiter, next: Lease, fromHold: boolean): void {
    waiter.unlisten()
    // A signal aborted inside this release (waiters.ts # Aborted at the grant) goes through the queue.
    const aborted = waiter.signal?.aborted === true
    if (waiter.fn === undefined && !aborted) return waiter.resolve(next)
    const handOvers = this.#host.handOvers
    if (fromHold && handOvers.end === 0 && !handOvers.running && !aborted) return handOvers.runNow(waiter, next)
    this.#enqueue(waiter, next, fromHold)
  }

  /** `waiter`, granted `next`, joins the hand-over queue, which runs now unless it is running already. */
  #enqueue(waiter: Waiter, next: Lease, fromHold: boolean): void {
    const handOvers = this.#host.handOvers
    handOvers.queue[handOvers.end++] = waiter
    handOvers.queue[handOvers.end++] = next
    if (handOvers.running) return
    handOvers.now = fromHold
    handOvers.start()
    handOvers.now = false
  }

  /** @internal The clock (a lease the store granted itself has no deadline; once adopted, none either: no maxHold). */
  _now(): number {
    return this.#host.clock.now()
  }

  /** @internal */
  _overdue(): void {
    this.#host._overdue()
  }

  /** The keys the store granted itself, resource by resource: each with its resource and record. */
  *#held(): IterableIterator<[Resource, SelfHeld]> {
    for (const resource of this.#byId) {
      if (!resource) continue
      for (const record of resource.keys.values()) if (typeof record !== 'number') yield [resource, record]
    }
  }

  /** The keys the store granted itself, as `inspect` lists them: their holders (in grant order) and how many wait. */
  busyKeys(now: number): KeyInfo[] {
    const busy: KeyInfo[] = []
    for (const [resource, record] of this.#held()) {
      const holders = record instanceof Permits ? [...record.holders] : [record]
      busy.push({
        kind: resource.kind,
        name: resource.name,
        key: holders[0]!.key,
        holders: holders.map(lease => ({ fence: lease.fence, heldMs: Math.max(0, now - lease._since) })),
        waiting: lineOf(record)?.size ?? 0,
      })
    }
    return busy
  }

  /** Every lease the store granted itself is lost to the store's closing, named by its place; their lines are answered. */
  loseAll(): void {
    const held = [...this.#held()]
    // Forgotten first: a listener of a lease's signal may ask about its key.
    for (const [resource, record] of held) resource.keys.delete(record instanceof Permits ? record.holders.values().next().value!.key : record.key)
    for (const [, record] of held) {
      const waiting = lineOf(record)?.drain() as Waiter[] | undefined
      if (record instanceof Permits) {
        record.line = undefined
        for (const lease of record.holders) lease._lose(this.#host.closedError(lease, lease.key))
      } else {
        record._line = undefined
        record._lose(this.#host.closedError(record, record.key))
      }
      if (waiting)
        for (const waiter of waiting) {
          waiter.unlisten()
          waiter.reject(this.#host.closedError(waiter.handle, waiter.key))
        }
    }
  }
}

/** The line the store keeps for a key it granted itself, if made. */
function lineOf(record: SelfHeld): Line<unknown> | undefined {
  return record instanceof Permits ? record.line : record._line
}

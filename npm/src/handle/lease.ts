/**
 * A lease: the holding of one key (or one permit of a semaphore), with its fence.
 *
 * Its `signal` is made only when someone asks for it, so that a hold that never looks costs no
 * `AbortController`; one asked for after the lease was lost is already aborted.
 *
 * # Reading checks the clock
 * A lease with a deadline — a maxHold, or a ttl over a connection or Workers RPC — knows it as its
 * holder counts it (`_deadline`, on its owner's clock). Reading `lost` or `signal`, and reading
 * `aborted` or `reason` or calling `throwIfAborted()` on that signal, first compares the clock with the
 * deadline: past it, the owner makes the lease lost right then (`_overdue`), as its timer would have —
 * so a holder that was paused (SIGSTOP, a long GC, a blocked event loop) reads `lost` true on its first
 * tick back, before any timer ran. Then the signal aborts, and its `abort` listeners run, within that
 * read. What is not checked on read: the signal's listeners and whatever holds the signal inside the
 * runtime (`fetch`, streams) hear of the loss when a timer or a read finds it, not before. A lease
 * without a deadline (a local one without maxHold) reads no clock.
 */

import type { LostError, ClosedError } from '../errors.js'
import type { Resource } from '../types.js'
import type { Line } from '../util/line.js'
import { asyncDispose } from '../util/async-dispose.js'
import { keepShapes } from '../util/shapes.js'

/**
 * What a lease needs of whoever granted it: a store, or in the in-process store the part that granted
 * it (store/engine-host.ts for the engine's grants, store/lent-fences.ts for the keys it grants itself).
 */
export interface LeaseOwner {
  /** @internal `fromHold`: the hold that ran fn lets its key go, fn having settled (see `Lease._end`). */
  _release(req: number, lease: Lease, fromHold: boolean): void
  /** @internal The time on the clock the owner counts its leases' deadlines on. */
  _now(): number
  /**
   * @internal `lease` was read past its deadline (see # Reading checks the clock): make it lost now (through
   * `_lose`), as the timer of that deadline would have.
   */
  _overdue(lease: Lease): void
}

const HOLDING = 0
const RELEASED = 1
const LOST = 2

export class Lease {
  // Every field is declared only (`declare`) and set by the constructor, and the internal ones are
  // plain properties (hidden from the published types) rather than `#private` fields: a class with
  // fields of its own, or private methods, initializes them in a function of their own, and defining
  // private fields one by one is slow before V8 optimizes it: a cost in every hand-over of a
  // contended key.

  /** Larger than every earlier lease's fence from this store, across restarts. */
  declare readonly fence: number
  /** Whether it holds a key of a lock or a permit of a semaphore. */
  declare readonly kind: 'lock' | 'semaphore'
  /** The lock's or semaphore's name. */
  declare readonly name: string
  /** The key, always as a string. */
  declare readonly key: string
  /** @internal Whoever granted it, and lets its key go. */
  declare readonly _owner: LeaseOwner
  /**
   * @internal The engine's request id, or (negative) a key the store granted itself (see
   * store/lent-fences.ts); changed only by `_adopted`.
   */
  declare _req: number
  /** @internal HOLDING, RELEASED or LOST; changed only by `_end` and `_lose`. */
  declare _state: number
  /** @internal Why it was lost. */
  declare _reason: LostError | ClosedError | undefined
  /** @internal Made when `signal` is first asked for. */
  declare _controller: AbortController | undefined
  /** @internal When a lease the store granted itself was granted (its turn's time), for `inspect` and `adopt`. */
  declare _since: number
  /**
   * @internal When the lease is lost as its holder counts it, on its owner's clock; `undefined`: never
   * by time. Set by the owner, moved by renewals. (Not a number then: V8 would box a number field in
   * every lease, the hot path's included.)
   */
  declare _deadline: number | undefined
  /**
   * @internal What the async context holds while fn runs is the lease (see handle/context.ts): its
   * resource, and the hold its fn started inside of. Set once, as fn starts (`_enter`).
   */
  declare _resource: Resource | undefined
  /** @internal See `_resource`. */
  declare _parent: Lease | undefined
  /**
   * @internal The holds waiting for its key, in the line the store keeps itself for a key it granted
   * itself (store/lent-fences.ts # Lines the store keeps itself); passed on to the next holder.
   */
  declare _line: Line<unknown> | undefined

  // How the package's classes keep their constructor from users (Lease, Lock, Store, Pool and every
  // other a user only gets from the package): the published types keep the first overload alone, the
  // others being internal (stripInternal). With none left, a class would show TypeScript's implicit
  // public `new X()`, which compiles and then throws, or half-works, at run time. Protected, so that
  // neither `new Lease(...)` nor a user's subclass of it constructs one; its `never` takes no argument
  // (`super()` included) and lets the implementation keep its parameters required. The package makes
  // one through a constant typed with the hidden constructor (`GrantedLease`): the class itself, so
  // that `instanceof` holds and a grant costs no call more. TypeScript reads no protected
  // constructor's signature, so nothing would hold such a constant to the parameters it stands for:
  // both take them from one labelled tuple (`LeaseArgs`), which the implementation destructures (an
  // array more per object made, some nanoseconds, no call). A class whose subclass calls `super` has
  // an internal overload with that tuple too; the others need none. Lease alone keeps its parameters
  // plain, checked against the tuple's overload (an arity or a type the tuple does not take fails):
  // one is made for every hold, where the array would cost Bun 5-8 ns a hold. (A comment here must not name
  // the tag itself: stripInternal drops a member when any comment before it does.)
  /** Leases are granted by holds (`hold`, `tryHold`, `acquire`), never made by hand. */
  protected constructor(...internal: never)
  /** @internal The store's, through `GrantedLease`, and `WorkerLease`'s. */
  protected constructor(...args: LeaseArgs)
  protected constructor(owner: LeaseOwner, handle: LeaseHandle, key: string, fence: number, req: number) {
    this._owner = owner
    this.kind = handle.kind
    this.name = handle.name
    this.key = key
    this.fence = fence
    this._req = req
    this._state = HOLDING
    this._reason = undefined
    this._controller = undefined
    this._since = 0
    this._deadline = undefined
    this._resource = undefined
    this._parent = undefined
    this._line = undefined
  }

  /**
   * Aborts when the lease is lost: revoked at `maxHold` or past its ttl (reason a `LostError`), or the
   * store closed (a `ClosedError`). Reading it, and reading its `aborted`, checks the clock (see
   * # Reading checks the clock).
   */
  get signal(): AbortSignal {
    if (this._deadline !== undefined) check(this)
    if (!this._controller) {
      this._controller = new AbortController()
      if (this._state === LOST) this._controller.abort(this._reason)
      else if (this._deadline !== undefined && this._state === HOLDING) watch(this, this._controller.signal)
    }
    return this._controller.signal
  }

  /**
   * Whether the lease was lost (revoked, past its deadline, or its store closed) before it was
   * released. Past its deadline it is true when read, whether or not a timer ran yet.
   */
  get lost(): boolean {
    if (this._deadline !== undefined) check(this)
    return this._state === LOST
  }

  /**
   * Lets the key go. A second release, or one after the lease was lost, does nothing. The next waiter's
   * fn never starts within this call: at the earliest in a microtask after it.
   */
  release(): Promise<void> {
    this._end()
    return Promise.resolve()
  }

  [asyncDispose](): Promise<void> {
    return this.release()
  }

  /**
   * What `JSON.stringify` (and `console.log`, below) shows of a lease: what it holds and whether it was
   * lost. Without it a log line showed the store's bookkeeping fields too, and the store the lease
   * came from (over a connection, the client and its server's URL).
   */
  toJSON(): { kind: 'lock' | 'semaphore'; name: string; key: string; fence: number; lost: boolean } {
    return { kind: this.kind, name: this.name, key: this.key, fence: this.fence, lost: this.lost }
  }

  /**
   * @internal Lets the key go if still held; answers whether it was. `fromHold`: called by the hold
   * whose fn settled, from its own callback, where the next waiter's fn may start at once (no caller's
   * code is on the stack to be interleaved with it).
   */
  _end(fromHold = false): boolean {
    // A lease past its deadline is lost, not released, even before its timer ran.
    if (this._deadline !== undefined) check(this)
    if (this._state !== HOLDING) return false
    // The release may find the lease past its deadline (the store's timer had not fired yet): then
    // it is lost, not released, and `_lose` runs within this call.
    this._owner._release(this._req, this, fromHold)
    if (this._state !== HOLDING) return false
    this._state = RELEASED
    return true
  }

  /** @internal The store revoked the lease or closed: mark it lost and abort its signal. */
  _lose(reason: LostError | ClosedError): void {
    if (this._state !== HOLDING) return
    this._state = LOST
    this._reason = reason
    this._controller?.abort(reason)
  }

  /** @internal Its fn starts, in `resource`'s hold, inside the hold `parent` (if any): see `_resource`. */
  _enter(resource: Resource, parent: Lease | undefined): void {
    this._resource = resource
    this._parent = parent
  }

  /** @internal The engine took over a holding the store granted itself: from now on it is request `req`. */
  _adopted(req: number): void {
    this._req = req
  }
}

/** Past its deadline, a lease still held is made lost now (see # Reading checks the clock). */
function check(lease: Lease): void {
  if (lease._state === HOLDING && lease._owner._now() >= lease._deadline!) lease._owner._overdue(lease)
}

/**
 * Makes reads of `signal`'s state check the clock first: own properties over the prototype's
 * `aborted`, `reason` and `throwIfAborted` (a native getter cannot be told to). Where the runtime
 * refuses (a property not configurable), only reads through `lease.signal` check.
 */
function watch(lease: Lease, signal: AbortSignal): void {
  const checkIt = () => check(lease)
  for (const name of ['aborted', 'reason', 'throwIfAborted'] as const) {
    const inherited = describe(signal, name)
    if (!inherited?.configurable) continue
    try {
      if (inherited.get) {
        const get = inherited.get
        Object.defineProperty(signal, name, { configurable: true, enumerable: inherited.enumerable, get: () => (checkIt(), get.call(signal)) })
      } else if (typeof inherited.value === 'function') {
        const method = inherited.value as () => void
        Object.defineProperty(signal, name, {
          configurable: true,
          enumerable: inherited.enumerable,
          writable: true,
          value: () => (checkIt(), method.call(signal)),
        })
      }
    } catch {
      // the runtime keeps its own: reads through `lease.signal` still check
    }
  }
}

// `console.log(lease)` and `util.inspect` (Node, Bun, Deno): `Lease { kind, name, key, fence, lost }`, as
// `toJSON` gives. Set on the prototype outside the class, so that the published type stays as it is.
Object.defineProperty(Lease.prototype, Symbol.for('nodejs.util.inspect.custom'), {
  value(this: Lease, _depth: number, options: unknown, inspect?: (value: unknown, options: unknown) => string) {
    const view = this.toJSON()
    return typeof inspect === 'function' ? `Lease ${inspect(view, options)}` : view
  },
})

/** @internal What a lease names of the lock or semaphore it is of. */
export interface LeaseHandle {
  readonly kind: 'lock' | 'semaphore'
  readonly name: string
}

/** A lease's hidden constructor's parameters, and so `GrantedLease`'s (see the constructor). */
type LeaseArgs = [owner: LeaseOwner, handle: LeaseHandle, key: string, fence: number, req: number]

/**
 * @internal Makes a lease: `Lease` itself, typed with the constructor its published type hides (no user
 * makes one). The same function at run time, so a grant costs no call more.
 */
export const GrantedLease = Lease as unknown as new (...args: LeaseArgs) => Lease

// A lease's shape, kept (util/shapes.ts): granted by the store itself (a negative request id, a double
// fence and grant time), inside a hold, with a line. Moved along where a client's leases end (remote/
// client.ts `#forget`), whose fields take values of other kinds (a deadline).
const shaped = new GrantedLease({ _release() {}, _now: () => 0, _overdue() {} }, { kind: 'lock', name: '' }, '', 0.5, -1)
shaped._since = 0.5
shaped._enter({} as Resource, shaped)
export const followLeaseShape = keepShapes([shaped], lease => {
  lease._since = 0.5
})

/** The property `name` of `object` where it is found: on the object, or up its prototype chain. */
function describe(object: object, name: string): PropertyDescriptor | undefined {
  for (let o: object | null = object; o !== null; o = Object.getPrototypeOf(o) as object | null) {
    const found = Object.getOwnPropertyDescriptor(o, name)
    if (found) return found
  }
  return undefined
}

/**
 * A lease: the holding of one key (or one permit of a semaphore), with its fence.
 *
 * Its `signal` is made only when someone asks for it, so that a hold that never looks costs no
 * `AbortController`; one asked for after the lease was lost is already aborted.
 */

import type { LostError, ClosedError } from './errors.js'
import type { Resource } from './store.js'

/** What a lease needs of its store. */
export interface LeaseOwner {
  /** @internal `fromHold`: the hold that ran fn lets its key go, fn having settled (see `Lease._end`). */
  _release(req: number, lease: Lease, fromHold: boolean): void
}

const HOLDING = 0
const RELEASED = 1
const LOST = 2

const asyncDispose: typeof Symbol.asyncDispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')

export class Lease {
  /** Larger than every earlier lease's fence from this store, across restarts. */
  readonly fence: number
  /** Whether it holds a key of a lock or a permit of a semaphore. */
  readonly kind: 'lock' | 'semaphore'
  /** The lock's or semaphore's name. */
  readonly name: string
  /** The key, always as a string. */
  readonly key: string
  readonly #owner: LeaseOwner
  /** The engine's request id, or (negative) a key granted on the store's side (see `Store` # Keys granted here). */
  #req: number
  #state = HOLDING
  #reason: LostError | ClosedError | undefined
  #controller: AbortController | undefined
  /** When a lease the store granted itself was granted (its turn's time), for `inspect` and `adopt`. */
  #since = 0
  /**
   * @internal The lease is the frame of its hold in the async context (see `Frame` in store.ts): its
   * resource, and the hold its fn started inside of. Set once, as fn starts (`_enter`).
   */
  _resource: Resource | undefined = undefined
  /** @internal See `_resource`. */
  _parent: Lease | undefined = undefined

  /** @internal */
  constructor(owner: LeaseOwner, handle: { kind: 'lock' | 'semaphore'; name: string }, key: string, fence: number, req: number) {
    this.#owner = owner
    this.kind = handle.kind
    this.name = handle.name
    this.key = key
    this.fence = fence
    this.#req = req
  }

  /** Aborts when the lease is lost: revoked at `maxHold` (reason a `LostError`), or the store closed (a `ClosedError`). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController()
      if (this.#state === LOST) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  /** Whether the lease was lost (revoked or its store closed) before it was released. */
  get lost(): boolean {
    return this.#state === LOST
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
   * @internal Lets the key go if still held; answers whether it was. `fromHold`: called by the hold
   * whose fn settled, from its own callback, where the next waiter's fn may start at once (no caller's
   * code is on the stack to be interleaved with it).
   */
  _end(fromHold = false): boolean {
    if (this.#state !== HOLDING) return false
    // The release may find the lease past its deadline (the store's timer had not fired yet): then
    // it is lost, not released, and `_lose` runs within this call.
    this.#owner._release(this.#req, this, fromHold)
    if (this.#state !== HOLDING) return false
    this.#state = RELEASED
    return true
  }

  /** @internal The store revoked the lease or closed: mark it lost and abort its signal. */
  _lose(reason: LostError | ClosedError): void {
    if (this.#state !== HOLDING) return
    this.#state = LOST
    this.#reason = reason
    this.#controller?.abort(reason)
  }

  /** @internal Its fn starts, in `resource`'s hold, inside the hold `parent` (if any): see `_resource`. */
  _enter(resource: Resource, parent: Lease | undefined): void {
    this._resource = resource
    this._parent = parent
  }

  /** @internal Why it was lost. */
  get _reason(): LostError | ClosedError | undefined {
    return this.#reason
  }

  /** @internal */
  get _req(): number {
    return this.#req
  }

  /** @internal When the store granted it itself (see `#since`). */
  get _since(): number {
    return this.#since
  }

  set _since(at: number) {
    this.#since = at
  }

  /** @internal The engine took over a holding the store granted itself: from now on it is request `req`. */
  _adopted(req: number): void {
    this.#req = req
  }
}

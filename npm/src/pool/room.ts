/**
 * The pools of an in-process store (issue #16): the bridge from the handles (`pool.ts`) to the engine
 * in wasm, and the records of the pool requests the engine has not answered yet.
 *
 * # How a claim crosses into wasm
 * One call (`core.claim`) answers at once (refused, or the first outcome of its id), or names a pool
 * request that an event answers later: `CLAIMED` once storage kept it (no claim is answered before the
 * write that keeps it is acknowledged: POOL-02), `NOT_CLAIMED` when its wait ran out, `POOL_FAILED`
 * when the write failed, `POOL_ENDED` when the store closed (a claim that took its units and was not
 * yet answered is undone by the engine then: it took nothing, and the store's last write says so). The
 * engine's writes are grouped here in TypeScript (one under way, taken a microtask after the turn's
 * calls: writes.ts), poked after every call (`#after`); their outcome goes back to the engine, and the
 * host's drain hands the pool events it answers here (`event`).
 *
 * # Invariants
 * - Every pool request the engine named is in `#records` until one event (or a cancel) answers it;
 *   then it is answered exactly once. A claim asked again with the id of a request still unanswered
 *   joins that record (`CLAIM_JOINED`): both callers get its answer.
 * - A waiting claim's signal cancels it in the engine (`cancelClaim`), which takes it out of the line,
 *   or gives back the units it took before its write was acknowledged (POOL-04, as LOCK-06 for holds).
 * - If the engine traps, every record is answered with the store's `ClosedError` (`trap`).
 *
 * Pools' deadlines (waits, ttls, the 24 hours of an id) are the engine's: after each call the store's
 * timer is set for the next one (`schedule`).
 */

import type { Core } from '../../wasm/holdfast_wasm.js'
import { CancelledError, ClosedError, InvalidError, LimitError, LostError, StorageError, fromEngine, placed } from '../errors.js'
import {
  CLAIM_JOINED,
  CLAIM_KNOWN,
  CLAIM_QUEUED,
  CLAIM_REFUSED,
  CLAIM_REMAINING,
  CLAIM_WRITING,
  CLAIMED,
  DURABLE,
  HOLD_EVENTS,
  INVALID,
  LIMIT,
  NOT_CLAIMED,
  POOL_ENDED,
  POOL_FAILED,
  REQ,
} from '../store/abi.js'
import { randomId } from '../util/random.js'
import { checkOptions } from '../util/options.js'
import { Claim, Pool, checkUnits, type ClaimRequest, type ClaimResult, type PoolStore } from './pool.js'
import type { PoolInfo } from './types.js'

/** What the room needs of its store. */
export interface PoolHost {
  readonly core: Core
  /** The shared buffer (made anew when wasm memory grew). */
  view(): Float64Array
  now(): number
  /** Answers `n` events the last call wrote (pool events come back to `event`). */
  drain(n: number, now: number): void
  /** Sets the store's timer for `at`, if it is earlier than the one set. */
  schedule(at: number): void
  /** The store's `ClosedError` for `place`, if it is closed. */
  closed(place: string): ClosedError | undefined
  /** The engine trapped: the store closes; answers the error to throw. */
  trap(error: unknown): ClosedError
  /** A call may have changed a pool: the pools' write is scheduled if one is wanted (writes.ts). */
  poke(): void
  /** What the storage failed with, the last time a pools' write failed. */
  storageError(): unknown
}

/** A pool request the engine has not answered yet: a claim (waiting, or being written) or a barrier. */
class Pending {
  readonly place: string
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
  readonly promise: Promise<unknown>
  readonly pool: Pool
  readonly claim: { id: string; n: number } | undefined
  signal: AbortSignal | undefined
  onAbort: (() => void) | undefined

  constructor(pool: Pool, place: string, claim: { id: string; n: number } | undefined) {
    this.pool = pool
    this.place = place
    this.claim = claim
    let resolve!: (value: unknown) => void
    let reject!: (error: unknown) => void
    this.promise = new Promise((res, rej) => {
      resolve = res
      reject = rej
    })
    this.resolve = resolve
    this.reject = reject
  }

  /** Stops listening to the signal: the request was answered. */
  settled(): void {
    if (this.onAbort) this.signal!.removeEventListener('abort', this.onAbort)
  }
}

export class PoolRoom implements PoolStore {
  readonly #host: PoolHost
  /** Pool requests by their engine id. */
  readonly #records = new Map<number, Pending>()

  constructor(host: PoolHost) {
    this.#host = host
    // Pools read back may have deadlines (a ttl, the 24 hours of an id).
    this.#scheduleNext()
  }

  /** `store.pool(name, { capacity })`. */
  pool(name: unknown, options: unknown): Pool {
    const place = `pool ${String(name)}`
    this.#checkOpen(place)
    if (typeof name !== 'string') throw new InvalidError(`pool: name must be a string, not ${typeof name}`)
    const o = checkOptions(options, place, ['capacity'])
    if (o.capacity === undefined) throw new InvalidError(`${place}: option capacity is required (1 to 2^53-1)`)
    const capacity = checkUnits(o.capacity, `${place}: capacity`)
    let id: number
    try {
      id = this.#host.core.pool(name, capacity)
    } catch (error) {
      const e = error as { code?: unknown }
      if (e && typeof e.code === 'string') throw fromEngine(error)
      throw this.#host.trap(error)
    }
    // A pool made is written (its capacity), as any change.
    this.#host.poke()
    return new Pool(this, name, id)
  }

  /**
   * @internal A pool for a client's frame (see remote/session.ts): made with `capacity` if new, as
   * `pool()` does; with `capacity` 0, the pool as it is (it must exist).
   */
  servedPool(name: string, capacity: number): Pool {
    if (capacity !== 0) return this.pool(name, { capacity })
    const place = `pool ${name}`
    this.#checkOpen(place)
    const id = this.#call(() => this.#host.core.findPool(name))
    if (id < 0) throw new InvalidError(`${place}: no such pool (its first use names its capacity)`)
    return new Pool(this, name, id)
  }

  /** Every pool, as `inspect()` lists them. */
  inspect(): PoolInfo[] {
    const raw = this.#call(() => this.#host.core.inspectPools()) as Omit<PoolInfo, 'kind'>[]
    return raw.map(p => ({ kind: 'pool', ...p }))
  }

  /** @internal */
  _claim(pool: Pool, request: ClaimRequest): Promise<ClaimResult> {
    const place = `pool ${pool.name}`
    const closed = this.#host.closed(place)
    if (closed) return Promise.reject(closed)
    const remember = request.id !== undefined
    const id = request.id ?? randomId()
    const now = this.#host.now()
    const answer = this.#call(() => this.#host.core.claim(pool._id, request.n, id, remember, request.wait === Infinity ? -1 : request.wait, request.ttl, now))
    const buf = this.#host.view()
    let result: Promise<unknown>
    if (answer === CLAIM_WRITING || answer === CLAIM_QUEUED) {
      const record = new Pending(pool, remember ? `${place}: claim ${JSON.stringify(id)}` : place, { id, n: request.n })
      this.#records.set(buf[REQ]!, record)
      this.#listen(record, buf[REQ]!, request.signal)
      result = record.promise
    } else if (answer === CLAIM_JOINED) {
      const record = this.#records.get(buf[REQ]!)
      if (!record) throw this.#host.trap(new Error(`the engine joined a claim to request ${buf[REQ]}, which this side does not know`))
      result = request.signal ? untilAborted(record.promise, request.signal, record.place) : record.promise
    } else if (answer === CLAIM_REFUSED) {
      result = Promise.resolve({ claimed: false, remaining: buf[CLAIM_REMAINING]! })
    } else if (answer === CLAIM_KNOWN) {
      result = Promise.resolve({ claimed: true, remaining: buf[CLAIM_REMAINING]!, claim: new Claim(pool, id, request.n) })
    } else result = Promise.reject(this.#refusal(answer, place))
    this.#after(buf, now)
    return result as Promise<ClaimResult>
  }

  /** @internal `true` once storage kept the release; `false` at once when the claim held nothing. */
  _releaseClaim(pool: Pool, id: string): Promise<boolean> {
    const place = `pool ${pool.name}: claim ${JSON.stringify(id)}`
    let released = false
    return this.#barrier(
      pool,
      place,
      now => {
        const answer = this.#host.core.releaseClaim(pool._id, id, now)
        released = answer === 1
        return answer
      },
      () => undefined,
    ).then(() => released)
  }

  /** @internal */
  _remaining(pool: Pool): Promise<number> {
    return this.#simple(pool, now => this.#host.core.poolRemaining(pool._id, now))
  }

  /** @internal */
  _confirmClaim(pool: Pool, id: string): Promise<void> {
    const place = `pool ${pool.name}: claim ${JSON.stringify(id)}`
    return this.#barrier(
      pool,
      place,
      now => this.#host.core.confirmClaim(pool._id, id, now),
      answer => (answer === 3 ? new LostError(`${place}: holds no units to confirm (released, or its ttl ran out)`) : undefined),
    )
  }

  /** @internal */
  _resize(pool: Pool, capacity: number): Promise<void> {
    return this.#barrier(
      pool,
      `pool ${pool.name}`,
      now => this.#host.core.resizePool(pool._id, capacity, now),
      () => undefined,
    )
  }

  /**
   * A call that changes something the engine then writes (a release, a confirm, a resize): answered
   * once storage kept it (1: a request the `DURABLE` event answers), at once when there was nothing to
   * write, or with `refuse`'s error (else the status's).
   */
  #barrier(pool: Pool, place: string, call: (now: number) => number, refuse: (answer: number) => Error | undefined): Promise<void> {
    const closed = this.#host.closed(place)
    if (closed) return Promise.reject(closed)
    const now = this.#host.now()
    const answer = this.#call(() => call(now))
    const buf = this.#host.view()
    let result: Promise<unknown>
    if (answer === 1) {
      const record = new Pending(pool, place, undefined)
      this.#records.set(buf[REQ]!, record)
      result = record.promise
    } else if (answer < 0) result = Promise.reject(this.#refusal(answer, place))
    else {
      const refused = refuse(answer)
      result = refused ? Promise.reject(refused) : Promise.resolve()
    }
    this.#after(buf, now)
    return result as Promise<void>
  }

  /** A call answered at once with a number (0 or more), or a negative status. */
  #simple(pool: Pool, call: (now: number) => number): Promise<number> {
    const place = `pool ${pool.name}`
    const closed = this.#host.closed(place)
    if (closed) return Promise.reject(closed)
    const now = this.#host.now()
    const answer = this.#call(() => call(now))
    const buf = this.#host.view()
    const result = answer < 0 ? Promise.reject(this.#refusal(answer, place)) : Promise.resolve(answer)
    this.#after(buf, now)
    return result
  }

  /** After a call: the events it wrote (deadlines acted on first), and the timer for the next deadline. */
  #after(buf: Float64Array, now: number): void {
    const events = buf[HOLD_EVENTS]!
    if (events > 0) this.#host.drain(events, now)
    this.#host.poke()
    this.#scheduleNext()
  }

  #scheduleNext(): void {
    const next = this.#call(() => this.#host.core.nextDeadline())
    if (next >= 0) this.#host.schedule(next)
  }

  #refusal(answer: number, place: string): Error {
    const message = placed(place, this.#host.core.lastError())
    if (answer === INVALID) return new InvalidError(message)
    if (answer === LIMIT) return new LimitError(message)
    return this.#host.closed(place) ?? new ClosedError(`${place}: the store is closed`)
  }

  /** A claim's signal, while it waits: aborting it cancels the claim. */
  #listen(record: Pending, req: number, signal: AbortSignal | undefined): void {
    if (!signal) return
    record.signal = signal
    record.onAbort = () => {
      if (this.#records.get(req) !== record || this.#host.closed(record.place)) return
      this.#records.delete(req)
      const now = this.#host.now()
      this.#call(() => this.#host.core.cancelClaim(req, now))
      record.reject(new CancelledError(`${record.place}: cancelled while waiting`, { cause: signal.reason }))
      this.#after(this.#host.view(), now)
    }
    signal.addEventListener('abort', record.onAbort, { once: true })
  }

  /** A pool event, from the store's drain. */
  event(kind: number, id: number, a: number): void {
    const record = this.#records.get(id)
    if (!record) return
    this.#records.delete(id)
    record.settled()
    if (kind === CLAIMED) {
      const { id: claimId, n } = record.claim!
      record.resolve({ claimed: true, remaining: a, claim: new Claim(record.pool, claimId, n) })
    } else if (kind === NOT_CLAIMED) record.resolve({ claimed: false, remaining: a })
    else if (kind === DURABLE) record.resolve(undefined)
    else if (kind === POOL_FAILED)
      record.reject(new StorageError(`${record.place}: storage failed to keep it; it took nothing`, { cause: this.#host.storageError() }))
    else if (kind === POOL_ENDED) record.reject(this.#host.closed(record.place) ?? new ClosedError(`${record.place}: the store is closed`))
  }

  /** The engine trapped: every request still unanswered gets the store's error. */
  trap(closed: ClosedError): void {
    const records = [...this.#records.values()]
    this.#records.clear()
    for (const record of records) {
      record.settled()
      record.reject(new ClosedError(`${record.place}: ${closed.message}`, { cause: closed.cause }))
    }
  }

  #checkOpen(place: string): void {
    const closed = this.#host.closed(place)
    if (closed) throw closed
  }

  /** A call into wasm that may trap. */
  #call<T>(fn: () => T): T {
    try {
      return fn()
    } catch (error) {
      throw this.#host.trap(error)
    }
  }
}

/**
 * The answer of an ask joined to a claim under way, or `CancelledError` once the ask's own signal
 * aborts (POOL-04: every ending of a wait leaves the line): the claim goes on for whoever asked first.
 */
function untilAborted<T>(answer: Promise<T>, signal: AbortSignal, place: string): Promise<T> {
  if (signal.aborted) return Promise.reject(new CancelledError(`${place}: cancelled while waiting`, { cause: signal.reason }))
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new CancelledError(`${place}: cancelled while waiting`, { cause: signal.reason }))
    signal.addEventListener('abort', onAbort, { once: true })
    answer.then(
      value => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      error => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

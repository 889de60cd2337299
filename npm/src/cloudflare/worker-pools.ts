/**
 * Pools in Worker code (`workerStore(env.HOLDFAST).pool(name, [{ capacity }])`, issue #16): the same
 * `Pool` and `Claim` handles as in process, whose operations are Workers RPC calls to the
 * `HoldfastObject` named by the pool's name (`idFromName(name)`, as a lock of that name; `shard` does
 * not apply: a pool is one count, in one object). The object's store keeps the pool in the object's
 * storage and answers a claim only once that storage kept it (POOL-02).
 *
 * # Claims and failed calls
 * Every claim travels with a claim id, the caller's or one drawn here, which the object remembers
 * (POOL-03). A call that failed in a way Workers RPC marks retryable (the object restarted) is asked
 * again with the same id: a claim that was kept before the failure answers its first outcome, one that
 * was not is claimed anew. Never units nobody was told of, never twice. A claim whose signal aborts is
 * cancelled on the object, this call's wait only (its `asker` id: another caller of the same claim id
 * keeps waiting, the claim its place in line); a `claimed` answer that raced the cancel is withdrawn at
 * once, as over a connection (revision 6): the object undoes the claim as if it never was only if it
 * answered `claimed` to no other asker of its id (another caller, joined to it or asking it since, or a
 * WebSocket client), whom it stays with; this caller forgets it either way — unless its id was drawn
 * here, which no other caller can have been told: one the object kept (it restarted since, and knows
 * nobody it told) is released then (`#withdraw`). So is a claim whose call failed once its signal
 * aborted (the object kept it, then reset before answering; not asked again): its cancel finds no
 * call on the next instance, which read the claim back. A withdraw the object's storage failed to write is
 * asked again until the object says it is kept, for a few seconds at most (an object that resets
 * before writing it again reads the claim back). An object of an older holdfast, which knows no
 * withdraw, is asked to release it. A release asked again after a failed call (the object kept it,
 * then reset before answering) finds the claim's units given back before: the object answers 2, and
 * `release()` resolves `true` (see `_releaseClaim`).
 *
 * # Capacity
 * A handle's calls carry its capacity until one was answered (the object makes the pool with it, or
 * refuses another than the pool's, as `store.pool()` does), then 0 (the pool as it is), so that a
 * resize by anyone does not make the handle's calls invalid. A handle made without a capacity
 * (`pool(name)`, as on every store) carries 0 from the start: the object answers its calls for the pool
 * it has, or `InvalidError` ("no such pool") when it has none.
 */

import { errorOf } from '../errors.js'
import { HandleCapacities } from '../pool/capacities.js'
import { MadeClaim, MadePool, checkUnits, type Pool, type ClaimRequest, type ClaimResult, type PoolStore } from '../pool/pool.js'
import { checkOptions } from '../util/options.js'
import { randomId } from '../util/random.js'
import { WORKER_WITHDRAW_TRIES, withdrawAgainIn } from '../pool/withdraw-retry.js'
import { cancellable } from './cancellable.js'
import { background } from './background.js'
import type { ErrorAnswer, HoldfastObjectRpc, PoolOp } from './types.js'
import { checkName } from '../util/name.js'

/** What the pools need of their `WorkerStore`. */
export interface PoolCaller {
  /** A stub of the object of pool `name` (a new one: see worker-store.ts `#stubOf`). */
  stub(name: string): HoldfastObjectRpc
  /**
   * Calls the object named `object`, asking again (the same arguments, through a new stub, with
   * what is left of `wait` ms) after a retryable failure within `wait`, unless `signal` aborted.
   */
  call<T>(place: string, object: string, call: (stub: HoldfastObjectRpc, left: number) => Promise<T>, wait: number, signal?: AbortSignal): Promise<T>
  /** Resolves after `ms` on the store's clock (a test's, in tests). */
  pause(ms: number): Promise<void>
}

function ok<T>(answer: { ok: T } | ErrorAnswer): T {
  if ('error' in answer) throw errorOf(answer.error.code, answer.error.message)
  return answer.ok
}

export class WorkerPools implements PoolStore {
  readonly #caller: PoolCaller
  /** Per handle: the capacity its calls carry until one was answered. */
  readonly #capacities = new HandleCapacities()

  constructor(caller: PoolCaller) {
    this.#caller = caller
  }

  /** `workerStore(...).pool(name, { capacity })`; without a capacity, a pool the object has (its calls are refused when it has none). */
  pool(name: unknown, options?: unknown): Pool {
    checkName('pool', name)
    const place = `pool ${name}`
    const o = checkOptions(options, place, ['capacity'])
    const pool = new MadePool(this, name, 0)
    this.#capacities.made(pool, o.capacity === undefined ? 0 : checkUnits(o.capacity, `${place}: capacity`))
    return pool
  }

  /** @internal */
  async _claim(pool: Pool, request: ClaimRequest): Promise<ClaimResult> {
    const id = request.id ?? randomId()
    // This call's own: its cancel ends its wait only, not that of another caller of the same id.
    const asker = randomId()
    // A drawn id is named by no message, as in process: nobody but this claim's answer knows it.
    const drawn = request.id === undefined
    const place = drawn ? `pool ${pool.name}` : `pool ${pool.name}: claim ${JSON.stringify(id)}`
    const answering = this.#caller.call(
      place,
      pool.name,
      // Asked again with its claim id (POOL-03: never taken twice) and what is left of its wait.
      (stub, left) =>
        stub.poolClaim(pool.name, this.#capacities.carried(pool), request.n, { id, wait: left === Infinity ? null : left, ttl: request.ttl, asker }),
      request.wait,
      request.signal,
    )
    const answered = await cancellable(
      place,
      request.signal,
      answering,
      () => this.#caller.stub(pool.name).poolOp('cancel', pool.name, 0, id, 0, asker),
      // A claim that raced the cancel is withdrawn: undone only if no other caller was told it (POOL-01);
      // beyond the request if need be (background.ts): its caller, told CancelledError, may have answered.
      answer => {
        if ('ok' in answer && answer.ok.claimed) background(this.#withdraw(pool, id, asker, drawn))
      },
      // The call failed once its signal aborted (not asked again): the object may have kept the claim
      // before it reset, which its cancel does not undo on the next instance (no call of it there).
      () => background(this.#withdraw(pool, id, asker, drawn)),
    )
    // The object names every claim by the id it was sent: a drawn one is left out, as in process.
    if (drawn && 'error' in answered) {
      const message = answered.error.message.replace(`pool ${pool.name}: claim ${JSON.stringify(id)}: `, `pool ${pool.name}: `)
      throw errorOf(answered.error.code, message)
    }
    const answer = ok(answered)
    this.#capacities.answered(pool)
    return answer.claimed
      ? { claimed: true, remaining: answer.remaining, claim: new MadeClaim(pool, id, request.n) }
      : { claimed: false, remaining: answer.remaining }
  }

  /**
   * Withdraws claim `id`, whose `claimed` answer to `asker` crossed its cancel (see # Claims and failed
   * calls). Asked again after a retryable failure: an object that restarted meanwhile no longer knows
   * whom it told, and keeps the claim (as it keeps any claim it read back), which holds its units until
   * released or its ttl: never an oversell. But an id `drawn` here is nobody else's (no other caller
   * can ask it), so a withdraw that undid nothing — the claim kept so, or told to this caller twice,
   * its call asked again — is followed by a release: else it would hold its units until its ttl, or
   * for good, with nobody to release it. Answered `storage`, it is asked again, for a few seconds at
   * most (pool/withdraw-retry.ts); the object restarted meanwhile answers as after any restart (0,
   * then a release of a drawn id).
   */
  async #withdraw(pool: Pool, id: string, asker: string, drawn: boolean): Promise<void> {
    const place = `pool ${pool.name}: claim ${JSON.stringify(id)}`
    const withdraw = () => this.#caller.call(place, pool.name, stub => stub.poolOp('withdraw', pool.name, 0, id, 0, asker), 0)
    let answer = await withdraw()
    for (let tried = 1; 'error' in answer && answer.error.code === 'storage' && tried < WORKER_WITHDRAW_TRIES; tried++) {
      await this.#caller.pause(withdrawAgainIn(tried))
      answer = await withdraw()
    }
    // An older object (no withdraw: `invalid`, naming the ops it knows) can only release it, as before.
    const older = 'error' in answer && answer.error.code === 'invalid' && /must be release, confirm, remaining, resize or cancel$/.test(answer.error.message)
    if (older || (drawn && 'ok' in answer && answer.ok === 0)) await this.#caller.call(place, pool.name, stub => stub.poolOp('release', pool.name, 0, id, 0), 0)
  }

  /** `asked`: called as each call is made (the first, and each asked again). */
  async #op(pool: Pool, op: PoolOp, claim: string, value: number, asked?: () => void): Promise<number> {
    const place = claim ? `pool ${pool.name}: claim ${JSON.stringify(claim)}` : `pool ${pool.name}`
    // Each is the same when asked again: a second release finds nothing to release, as the first left it.
    const answer = ok(
      await this.#caller.call(
        place,
        pool.name,
        stub => {
          asked?.()
          return stub.poolOp(op, pool.name, this.#capacities.carried(pool), claim, value)
        },
        0,
      ),
    )
    this.#capacities.answered(pool)
    return answer
  }

  /** @internal */
  async _releaseClaim(pool: Pool, id: string): Promise<boolean> {
    // 2: it held nothing, having given its units back before (an object of this version). Asked again
    // after a failed call, that is most likely this release's own first call, kept with its answer
    // lost (the object reset): the units are back (by it, or just before it), so `true`; asked once,
    // `false` (released before), as over a connection (pool/client.ts). An older object answers 0.
    let calls = 0
    const answer = await this.#op(pool, 'release', id, 0, () => calls++)
    return answer === 1 || (calls > 1 && answer === 2)
  }

  /** @internal */
  async _confirmClaim(pool: Pool, id: string): Promise<void> {
    await this.#op(pool, 'confirm', id, 0)
  }

  /** @internal */
  _remaining(pool: Pool): Promise<number> {
    return this.#op(pool, 'remaining', '', 0)
  }

  /** @internal */
  async _resize(pool: Pool, capacity: number): Promise<void> {
    await this.#op(pool, 'resize', '', capacity)
  }
}

/**
 * Running fn inside a lease, the same for a local store, a connection and a Durable Object: the hold
 * is tracked in the async context (LOCK-04), the key is let go when fn settles, however it settles,
 * and the answer is fn's value, fn's error, or — when the lease was lost meanwhile — the loss, even
 * if fn succeeded (LOCK-03, LOCK-05).
 */

import { CancelledError, ClosedError, LostError } from '../errors.js'
import { Lease } from './lease.js'
import type { Lock } from './lock.js'
import type { ContextStorage, Scope } from './context.js'
import type { Resource as SharedResource } from '../types.js'

/** A resource of any of this package's stores: what runs a lease reads nothing of its keys. */
type Resource = SharedResource

/** Lets a lease's key go; answers whether it still held it (false: lost, or released before). */
type End = (lease: Lease) => boolean | Promise<boolean>

const endLease: End = lease => lease._end(true)

/**
 * `taken` is the lease, or the promise of a waiter that resolves to it. A lease (a free key) runs fn
 * at once, inside hold(), and answers through one `then` on fn's promise — no async function, whose
 * promise and await cost more (most on Node 20, where every promise runs the async hooks). A waiter
 * waits and runs fn in one async function, so a hold that waited costs no promise between the two.
 * fn answering a value (not a promise) lets the key go at once. An `end` that answers a boolean is
 * not awaited. `signal`, the hold's own, is read once a waiter's lease came: see `runWhenGranted`.
 */
export function runInLease<T>(
  context: ContextStorage | undefined,
  resource: Resource,
  taken: Lease | Promise<Lease>,
  fn: (lease: Lease) => T | PromiseLike<T>,
  end: End = endLease,
  signal?: AbortSignal,
): Promise<Awaited<T>> {
  if (!(taken instanceof Lease)) return runWhenGranted(context, resource, taken, fn, end, signal)
  const lease = taken
  let result: T | PromiseLike<T>
  let thenable: boolean
  try {
    result = start(context, resource, lease, fn)
    // Inside the try: a `then` that throws when read is fn's error, and the key still goes.
    thenable = isThenable(result)
  } catch (error) {
    return endAndAnswerAsPromise(lease, end, true, error)
  }
  if (thenable) {
    return Promise.resolve(result).then(
      value => endAndAnswer(lease, end, false, value),
      error => endAndAnswer(lease, end, true, error),
    ) as Promise<Awaited<T>>
  }
  return endAndAnswerAsPromise(lease, end, false, result)
}

/**
 * `runInLease` for a lease granted at once whose key is let go by `Lease._end` (which answers a
 * boolean: nothing to await), as the in-process store grants them: the uncontended hold's path (W1),
 * called by the store straight from its grant. Small and of one shape, so that it is optimized early
 * (see store/store.ts # The path of a hold).
 */
export function runLease<T>(
  context: ContextStorage | undefined,
  resource: Resource,
  lease: Lease,
  fn: (lease: Lease) => T | PromiseLike<T>,
): Promise<Awaited<T>> {
  let result: T | PromiseLike<T>
  let thenable: boolean
  try {
    result = start(context, resource, lease, fn)
    thenable = isThenable(result)
  } catch (error) {
    return answerAsPromise(lease, true, error)
  }
  if (thenable) {
    return Promise.resolve(result).then(
      value => answerEnded(lease, false, value),
      error => answerEnded(lease, true, error),
    ) as Promise<Awaited<T>>
  }
  return answerAsPromise(lease, false, result)
}

/** Lets the key go (`Lease._end`) once fn settled, then answers as `hold` does: `endAndAnswer` with `endLease`. */
function answerEnded(lease: Lease, failed: boolean, outcome: unknown): unknown {
  return answer(lease, lease._end(true), failed, outcome)
}

/** Runs fn in `lease` (tracked in the async context, LOCK-04): what it answers, or throws. */
function start<T>(context: ContextStorage | undefined, resource: Resource, lease: Lease, fn: (lease: Lease) => T | PromiseLike<T>): T | PromiseLike<T> {
  if (context === undefined) return fn(lease)
  lease._enter(resource, context.getStore())
  return context.run(lease, fn, lease)
}

/** `answerEnded` as a promise. */
function answerAsPromise<T>(lease: Lease, failed: boolean, outcome: unknown): Promise<T> {
  try {
    return Promise.resolve(answerEnded(lease, failed, outcome)) as Promise<T>
  } catch (error) {
    return Promise.reject(error)
  }
}

/**
 * A waiter's fn, run in the job that resumes it once its lease came. Its `signal` may abort between
 * the grant and this job (a caller's `lease.release()` granted it, then the caller aborted, in one
 * call): the hold is cancelled then, as the store's hand-over queue cancels one where fn is handed
 * the key directly (store/waiters.ts # Aborted at the grant), so that fn never starts once its signal
 * aborted, whichever way a runtime runs it.
 */
async function runWhenGranted<T>(
  context: ContextStorage | undefined,
  resource: Resource,
  waiting: Promise<Lease>,
  fn: (lease: Lease) => T | PromiseLike<T>,
  end: End,
  signal: AbortSignal | undefined,
): Promise<Awaited<T>> {
  const lease = await waiting
  // Lost before fn started (the store closed between the grant and now): answered so, fn not run.
  if (lease._reason !== undefined) throw lease._reason
  if (signal?.aborted) {
    try {
      await end(lease)
    } catch {
      // a trap: it answered every other request and closed the store; this hold is answered below
    }
    throw new CancelledError(`${lease.kind} ${lease.name}: key ${JSON.stringify(lease.key)}: cancelled while waiting`, { cause: signal.reason })
  }
  let value: Awaited<T>
  try {
    if (context === undefined) value = await fn(lease)
    else {
      lease._enter(resource, context.getStore())
      if (context.enterInJob === undefined) value = await context.run(lease, fn, lease)
      else {
        // This continuation runs as a job of its own: a context entered now ends with it.
        context.enterInJob(lease)
        value = await fn(lease)
      }
    }
  } catch (error) {
    return endAndAnswer(lease, end, true, error) as Awaited<T>
  }
  return endAndAnswer(lease, end, false, value) as Awaited<T>
}

/** What `runHandedOver` reads of a waiter (store/waiters.ts), declared here by the side that reads it. */
export interface HandedOver {
  readonly handle: Pick<Lock, '_resource'>
  readonly fn: ((lease: Lease) => unknown) | undefined
  /** The hold its caller was inside of (the context it runs in holds it already: no lookup). */
  readonly parent: Lease | undefined
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
}

/**
 * Runs the fn of `waiter`, handed `lease`, inside the waiter's kept context (`scope`, see
 * handle/context.ts): `runHandedOver` there. Throws nothing.
 */
export function handOverIn(scope: Scope, waiter: HandedOver, lease: Lease, context: ContextStorage): void {
  if (typeof scope === 'function') scope(runHandedOver, waiter, lease, context)
  else scope.runInAsyncScope(runHandedOver, undefined, waiter, lease, context)
}

/**
 * The fn of `waiter` handed its key (see store/waiters.ts # Handing a key over), called inside the
 * waiter's own async context (`handOverIn`): enters its lease there (the scope ends it), runs fn, lets
 * the key go when fn settles and answers the hold through `resolve` / `reject` — the waiter's own
 * promise, so the hold costs no promise of the lease and no async function. Throws nothing. One
 * function for a snapshot (Bun) and an `AsyncResource` (Node), called straight by either: on the
 * contended hand-over's path (W3) each call more is a function more for the JIT to warm up.
 */
export function runHandedOver(waiter: HandedOver, lease: Lease, context: ContextStorage): void {
  const resolve = waiter.resolve
  const reject = waiter.reject
  let result: unknown
  let thenable: boolean
  try {
    // `Lease._enter`, written out (one call less on the hand-over's path).
    lease._resource = waiter.handle._resource
    lease._parent = waiter.parent
    context.enterInJob!(lease)
    result = waiter.fn!(lease)
    thenable = isThenable(result)
  } catch (error) {
    return answerInto(lease, true, error, resolve, reject)
  }
  if (thenable) {
    Promise.resolve(result).then(
      value => answerInto(lease, false, value, resolve, reject),
      error => answerInto(lease, true, error, resolve, reject),
    )
    return
  }
  answerInto(lease, false, result, resolve, reject)
}

/** `endAndAnswer` with `endLease`, in one call (a hand-over's end: the hot path of a contended key). */
function answerInto(lease: Lease, failed: boolean, outcome: unknown, resolve: (value: unknown) => void, reject: (error: unknown) => void): void {
  try {
    if (!lease._end(true) && lease.lost) reject(lostAnswer(lease, failed ? outcome : undefined))
    else if (failed) reject(outcome)
    else resolve(outcome)
  } catch (error) {
    reject(error)
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as PromiseLike<unknown>).then === 'function'
}

/** `endAndAnswer` as a promise. */
function endAndAnswerAsPromise<T>(lease: Lease, end: End, failed: boolean, outcome: unknown): Promise<T> {
  try {
    return Promise.resolve(endAndAnswer(lease, end, failed, outcome)) as Promise<T>
  } catch (error) {
    return Promise.reject(error)
  }
}

/** Lets the key go once fn settled (`failed`: it threw `outcome`), then answers as `hold` does. */
function endAndAnswer(lease: Lease, end: End, failed: boolean, outcome: unknown): unknown {
  const ended = end(lease)
  if (typeof ended !== 'boolean') return ended.then(held => answer(lease, held, failed, outcome))
  return answer(lease, ended, failed, outcome)
}

function answer(lease: Lease, held: boolean, failed: boolean, outcome: unknown): unknown {
  if (!held && lease.lost) throw lostAnswer(lease, failed ? outcome : undefined)
  if (failed) throw outcome
  return outcome
}

/** The answer of a hold whose lease was lost: its reason, with fn's error (if any) as the cause. */
export function lostAnswer(lease: Lease, fnError: unknown): Error {
  const reason = lease._reason!
  if (fnError === undefined) return reason
  return reason instanceof ClosedError ? new ClosedError(reason.message, { cause: fnError }) : new LostError(reason.message, { cause: fnError })
}

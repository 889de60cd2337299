/**
 * Running fn inside a lease, the same for a local store, a connection and a Durable Object: the hold
 * is tracked in the async context (LOCK-04), the key is let go when fn settles, however it settles,
 * and the answer is fn's value, fn's error, or — when the lease was lost meanwhile — the loss, even
 * if fn succeeded (LOCK-03, LOCK-05).
 */

import { ClosedError, LostError } from './errors.js'
import { Lease } from './lease.js'
import type { ContextStorage, Frame, Resource } from './store.js'

/** Lets a lease's key go; answers whether it still held it (false: lost, or released before). */
type End = (lease: Lease) => boolean | Promise<boolean>

const endLease: End = lease => lease._end()

/**
 * `taken` is the lease, or the promise of a waiter that resolves to it: one async function waits for
 * the grant and runs fn, so a hold that waited costs no promise between the two. An `end` that answers
 * a boolean is not awaited (a microtask less per hold).
 */
export async function runInLease<T>(
  context: ContextStorage | undefined,
  resource: Resource,
  taken: Lease | Promise<Lease>,
  fn: (lease: Lease) => T | PromiseLike<T>,
  end: End = endLease,
): Promise<Awaited<T>> {
  let lease: Lease
  let enter: ((store: Frame) => void) | undefined
  if (taken instanceof Lease) lease = taken
  else {
    lease = await taken
    // This continuation runs as a job of its own: a context entered now ends with it (see `enterInJob`).
    enter = context?.enterInJob
  }
  let value: Awaited<T>
  try {
    if (context === undefined) value = await fn(lease)
    else if (enter === undefined) value = await context.run({ lease, resource, parent: context.getStore() }, () => fn(lease))
    else {
      enter({ lease, resource, parent: context.getStore() })
      value = await fn(lease)
    }
  } catch (error) {
    let ended = end(lease)
    if (typeof ended !== 'boolean') ended = await ended
    if (!ended && lease.lost) throw lostAnswer(lease, error)
    throw error
  }
  let ended = end(lease)
  if (typeof ended !== 'boolean') ended = await ended
  if (!ended && lease.lost) throw lostAnswer(lease, undefined)
  return value
}

/** The answer of a hold whose lease was lost: its reason, with fn's error (if any) as the cause. */
export function lostAnswer(lease: Lease, fnError: unknown): Error {
  const reason = lease._reason!
  if (fnError === undefined) return reason
  return reason instanceof ClosedError ? new ClosedError(reason.message, { cause: fnError }) : new LostError(reason.message, { cause: fnError })
}

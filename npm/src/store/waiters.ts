/**
 * Holds waiting in line, and handing their keys over.
 *
 * # Waiters
 * A hold the engine put in line is a `Waiter`, recorded by its request id (engine-host.ts) until the
 * engine answers it: granted, timed out, failed or ended, or cancelled by its signal. Without `fn` its
 * promise resolves to the lease; with one, to what the hold answers. A hold that waits without a time
 * limit for a key the store granted itself waits in a line the store keeps itself, the key's
 * (lent-fences.ts # Lines the store keeps itself), with no request id, until the store grants it or
 * hands the key and its line to the engine.
 *
 * # Handing a key over
 * A `hold` that waits keeps its fn and its caller's async context (`ContextStorage.capture`). When the
 * engine grants it — within the release of the holder before — the store runs its fn inside that
 * context, once the events of the call were all read: no promise of the lease and no async frame to
 * resume. When the release is a hold's own, after its fn settled, fn runs right there (`now`), so the
 * next holder starts in the same microtask as the last one ended, as in a plain JS queue; any other
 * release (`lease.release()`, a timer, a waiter's abort) is a caller's call, and the fns run in a
 * microtask after it, so that nobody's fn starts inside somebody else's call. Grants that come while
 * fns are being handed keys (a fn that answered at once, releasing again) join the queue, run by the
 * outermost loop in grant order: the stack stays flat, and the order is the engine's (LOCK-01). Where
 * no context can be kept (no `capture`), the waiter's promise resolves to the lease and fn runs in the
 * job that resumes it.
 *
 * The drain (engine-host.ts) writes the queue's fields directly: a waiter's grant joins the queue
 * without a call, and the queue is started (`start`) once per drain. A grant from a line the store
 * keeps itself (lent-fences.ts) joins it the same way, with the same rule for `now`.
 *
 * # Aborted at the grant
 * A waiter's signal may abort inside a call that grants it: a listener of the signal added before
 * the hold's own (one AbortController for a task's shutdown, which lets the task's leases go) releases
 * the key, and the grant comes before the hold's listener runs, which the grant then takes away. Such
 * a waiter, or one whose signal aborts after its grant and before its fn runs (a microtask later), is
 * not answered its lease nor run: it joins the queue (one without fn too), and when the queue runs it
 * lets the key go to the next in line and rejects `CancelledError`, as if the abort had come first. So
 * a hold's fn never starts once its signal aborted, whichever listener ran first. Where no context is
 * kept (a hold's waiter resolves to its lease), the job that resumes the hold reads its signal before
 * fn, and cancels it the same way (handle/run-in-lease.ts `runWhenGranted`). Nor once its lease
 * was lost: a `close()` (or a trap) between the grant and the queue's run ends the lease, and the
 * hold is answered its `ClosedError` without fn.
 */

import { CancelledError } from '../errors.js'
import type { Lease } from '../handle/lease.js'
import type { Lock } from '../handle/lock.js'
import type { ContextStorage, Scope } from '../handle/context.js'
import { handOverIn } from '../handle/run-in-lease.js'
import { keepShape } from '../util/shapes.js'
import { keepSettlers, settlers } from '../util/settlers.js'
import { soon } from '../util/soon.js'

/**
 * A hold waiting in line. Without `fn`, its promise resolves to the lease; with one (a `hold` handed its
 * key directly, in `scope`), to what the hold answers.
 */
export class Waiter {
  // Its fields are class fields (defined as undefined before the constructor sets them), not
  // `declare`d ones: declared only (b9f61d4), a semaphore's contended line (W4) ran 0.88-0.92x on
  // Node 26, measured (the likely why: a field defined as undefined first stays a tagged value in V8,
  // where one first set to -1 or Infinity is kept as a small integer or a boxed double).
  readonly handle: Lock
  readonly key: string
  /** The engine's request id; -1 while it waits in a line the store keeps itself (lent-fences.ts). */
  req: number
  readonly wait: number
  readonly signal: AbortSignal | undefined
  readonly fn: ((lease: Lease) => unknown) | undefined
  readonly scope: Scope | undefined
  /**
   * The hold the caller was inside of when it asked (its context's lease, read once as it joined the
   * line): what its own lease's `_parent` will be, its fn running in that same context.
   */
  readonly parent: Lease | undefined
  readonly promise: Promise<unknown>
  readonly resolve: (value: unknown) => void
  readonly reject: (error: unknown) => void
  onAbort: (() => void) | undefined

  constructor(
    handle: Lock,
    key: string,
    req: number,
    wait: number,
    signal: AbortSignal | undefined,
    fn: ((lease: Lease) => unknown) | undefined,
    scope: Scope | undefined,
    parent: Lease | undefined,
  ) {
    this.handle = handle
    this.key = key
    this.req = req
    this.wait = wait
    this.signal = signal
    this.fn = fn
    this.scope = scope
    this.parent = parent
    this.promise = new Promise<unknown>(keepSettlers)
    this.resolve = settlers.resolve!
    this.reject = settlers.reject!
    settlers.resolve = settlers.reject = undefined
  }

  place(): string {
    return `${this.handle.kind} ${this.handle.name}: key ${JSON.stringify(this.key)}`
  }

  /** Stops listening to the signal: the waiter was answered. */
  unlisten(): void {
    if (this.onAbort) this.signal!.removeEventListener('abort', this.onAbort)
  }
}

// A waiter's shape, kept (util/shapes.ts): one of the store's own line (no request id yet, no time limit).
keepShape(new Waiter({} as Lock, '', -1, Infinity, undefined, undefined, undefined, undefined))

/**
 * A waiter granted `lease` whose signal aborted before its fn started (or, without fn, before it was
 * answered): cancelled after all, as if the abort had come first (see # Aborted at the grant). The
 * key goes on to the next in line, who joins the queue being run. Throws nothing.
 */
function cancelGranted(waiter: Waiter, lease: Lease): void {
  try {
    lease._end()
  } catch {
    // a trap: it answered every other request and closed the store; this one is answered below
  }
  waiter.reject(new CancelledError(`${waiter.place()}: cancelled while waiting`, { cause: waiter.signal!.reason }))
}

/** The waiters granted whose fns are still to run (see # Handing a key over). */
export class HandOvers {
  /**
   * Waiters granted and their leases, in pairs: the first `end` entries. The array keeps its size once
   * emptied (emptied by `length = 0`, V8 would free its backing store and allocate it anew at the next
   * hand-over).
   */
  readonly queue: (Waiter | Lease | undefined)[] = []
  end = 0
  /** Whether the queue is being run (a grant meanwhile only joins it). */
  running = false
  /**
   * Whether the drain under way may run the queue at once: only within the release of a hold whose fn
   * settled, from the hold's own callback. Anywhere else — `lease.release()`, an aborted waiter, a
   * timer, a manual clock's `advance()` — the caller's code is on the stack and would find another's
   * fn started inside its call: the queue runs in a microtask (`#soon`: one is queued).
   */
  now = false
  #soon = false
  readonly #context: ContextStorage | undefined

  constructor(context: ContextStorage | undefined) {
    this.#context = context
  }

  /** After a drain that granted waiters with fns, while the queue is not running: runs it now or soon (see `now`). */
  start(): void {
    if (this.now) this.runAll()
    else if (!this.#soon) {
      this.#soon = true
      soon(this.#later)
    }
  }

  /**
   * A grant within the release of a hold whose fn settled (`now`), while the queue is empty and not
   * running: runs its fn at once, then whatever joined the queue meanwhile, without going through the
   * queue's array. Called for a semaphore's permit handed over (lent-fences.ts `#start`); a lock's key
   * handed over on its line, the commonest hand-over (W3), does the same written out (`#handOver`).
   */
  runNow(waiter: Waiter, lease: Lease): void {
    this.running = true
    handOverIn(waiter.scope!, waiter, lease, this.#context!)
    if (this.end !== 0) this.runAll()
    this.running = false
  }

  readonly #later = (): void => {
    this.#soon = false
    if (this.end !== 0 && !this.running) this.runAll()
  }

  /**
   * Runs the fns of the waiters granted, each in its own async context, in grant order; grants made
   * meanwhile (by these fns' releases) join the queue and run here too, never deeper in the stack.
   * `runHandedOver` throws nothing: each fn's outcome goes to its hold's promise.
   */
  runAll(): void {
    const queue = this.queue
    const context = this.#context!
    this.running = true
    for (let i = 0; i < this.end; i += 2) {
      const waiter = queue[i] as Waiter
      const lease = queue[i + 1] as Lease
      queue[i] = queue[i + 1] = undefined
      if (waiter.signal?.aborted) cancelGranted(waiter, lease)
      // Lost before its fn started (the store closed, or trapped, since the grant): answered so, fn not run.
      else if (lease._reason !== undefined) waiter.reject(lease._reason)
      else handOverIn(waiter.scope!, waiter, lease, context)
    }
    this.end = 0
    this.running = false
  }
}

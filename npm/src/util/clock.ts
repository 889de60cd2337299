/**
 * The clock a store runs on: monotonic milliseconds, and one-shot timers. The engine reads no clock;
 * the store passes it `now()` and sets one timer for the engine's next deadline. Tests pass a manual
 * clock (`holdfast/testing`) so that waits and `maxHold` are exercised without sleeping.
 *
 * # Long timers
 * Every runtime holdfast runs on keeps a timer's delay in a signed 32-bit integer: a delay over
 * `LONGEST_TIMER` (2^31−1 ms, about 24.8 days) fires after 1 ms instead, with a
 * `TimeoutOverflowWarning` (Node, Bun, Deno alike). A deadline set again when such a timer fires early
 * would fire again 1 ms later, for as long as it lasts. So every timer holdfast sets on a deadline goes
 * through `setTimer`, which chains timers of at most `LONGEST_TIMER` up to a longer delay (two timer
 * callbacks for a deadline of 30 days), whatever the clock, a caller's included; the manual clock
 * fires an over-long timer after 1 ms as the runtimes do, so that tests see what they would.
 */

export interface Clock {
  /**
   * Monotonic milliseconds, from 0 up (any origin at or after 0: the engine counts whole ms from 0,
   * and a store refuses a clock whose time is not a number from 0 to 2^53 - 1 at open).
   */
  now(): number
  /** A one-shot timer; a delay over `LONGEST_TIMER` may fire at once (holdfast never asks for one). */
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

/** The longest delay a runtime's `setTimeout` keeps: 2^31−1 ms (about 24.8 days). */
export const LONGEST_TIMER = 2 ** 31 - 1

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => {
    const id = setTimeout(fn, ms) as unknown
    const handle = typeof id === 'number' ? new NumberedTimer(id) : id
    // A deadline alone keeps no process alive: a store refs its timer while a promise it returned waits
    // on it (`keepAlive`), and work that waits on anything else keeps its own handles.
    refTimer(handle, false)
    return handle
  },
  clearTimeout: handle => clearTimeout((handle instanceof NumberedTimer ? handle.id : handle) as ReturnType<typeof setTimeout>),
}

/**
 * A timer of a runtime whose `setTimeout` answers a number (a Deno older than 2.9's, which answers an
 * object as Node does): refs and unrefs it through `Deno.refTimer` / `Deno.unrefTimer`. Only
 * `systemClock` makes one, so that a number another clock answers (the manual clock's) is never taken
 * for a runtime's timer id.
 */
class NumberedTimer {
  readonly id: number
  constructor(id: number) {
    this.id = id
  }
  ref(): void {
    denoTimers()?.refTimer?.(this.id)
  }
  unref(): void {
    denoTimers()?.unrefTimer?.(this.id)
  }
}

function denoTimers(): { refTimer?: (id: number) => void; unrefTimer?: (id: number) => void } | undefined {
  return (globalThis as { Deno?: { refTimer?: (id: number) => void; unrefTimer?: (id: number) => void } }).Deno
}

/**
 * Makes timer `handle` of a clock (one `setTimer` answered too) keep the process alive (`keep`, the
 * default) or not, as Node's `ref()` and `unref()`: `systemClock`'s keep none until told. For a timer
 * whose end settles a promise holdfast returned that the caller awaits — a wait in line, a hold's
 * `maxHold`, a pool claim's wait — or one holdfast's own work still owes an answer (the retry of a
 * failed pools' write, writes.ts); a deadline nobody awaits (a lease acquired and forgotten) keeps
 * nothing alive. Node and Bun answer a `Timeout` with `ref`/`unref`, and so does Deno (seen on 2.9:
 * its `setTimeout` answers an object with both, and an unref'd one keeps neither a script nor
 * `deno test` alive). A handle with neither (a test's clock, workerd's) is left as it is.
 */
export function keepAlive(handle: unknown, keep = true): void {
  if (handle instanceof ChainedTimer) handle.keep(keep)
  else refTimer(handle, keep)
}

/** `keepAlive` for one timer of a clock. */
function refTimer(handle: unknown, keep: boolean): void {
  const timer = handle as { ref?: () => void; unref?: () => void } | null
  if (typeof timer !== 'object' || timer === null) return
  if (keep) timer.ref?.()
  else timer.unref?.()
}

/**
 * Calls `fn` after `ms` on `clock`, however long `ms` is (see # Long timers); a delay up to
 * `LONGEST_TIMER` is one timer of the clock's, as before. Cancel it with `clearTimer`.
 */
export function setTimer(clock: Clock, fn: () => void, ms: number): unknown {
  return ms > LONGEST_TIMER ? new ChainedTimer(clock, fn, clock.now() + ms) : clock.setTimeout(fn, ms)
}

/**
 * Resolves after `ms` on `clock` (a retry's wait), however long `ms` is; `keep`: its timer keeps the
 * process alive meanwhile (`keepAlive`), for a wait nothing else of it keeps alive that must end.
 */
export function pause(clock: Clock, ms: number, keep = false): Promise<void> {
  return new Promise(resolve => {
    const timer = setTimer(clock, resolve, ms)
    if (keep) keepAlive(timer)
  })
}

/** Cancels a timer set by `setTimer` (nothing if it already fired). */
export function clearTimer(clock: Clock, handle: unknown): void {
  if (handle instanceof ChainedTimer) handle.clear()
  else clock.clearTimeout(handle)
}

/**
 * A timer longer than `LONGEST_TIMER`: links of at most that long, each set when the one before
 * fires, the last for what is left by the clock. Only the link under way is ever set.
 */
class ChainedTimer {
  readonly #clock: Clock
  readonly #fn: () => void
  readonly #at: number
  #link: unknown
  /** Whether its links keep the process alive (`keepAlive`): each link set is told so. */
  #keep = false

  constructor(clock: Clock, fn: () => void, at: number) {
    this.#clock = clock
    this.#fn = fn
    this.#at = at
    this.#arm()
  }

  readonly #arm = (): void => {
    const rest = this.#at - this.#clock.now()
    this.#link = rest > LONGEST_TIMER ? this.#clock.setTimeout(this.#arm, LONGEST_TIMER) : this.#clock.setTimeout(this.#fn, Math.max(0, rest))
    if (this.#keep) refTimer(this.#link, true)
  }

  keep(keep: boolean): void {
    this.#keep = keep
    refTimer(this.#link, keep)
  }

  clear(): void {
    this.#clock.clearTimeout(this.#link)
  }
}

/**
 * Resolves as `promise` does, or after `ms` on `clock` if that comes first; the timer is cleared once
 * either happened, so that it keeps nothing alive (a closed client) for the rest of `ms`. `keep`: the
 * timer keeps the process alive meanwhile (`keepAlive`), for a wait whose answer a caller awaits of
 * holdfast's own work, with nothing else of it alive (a client's `close()` while its connection is down).
 */
export function settledWithin<T>(clock: Clock, promise: Promise<T>, ms: number, keep = false): Promise<T | undefined> {
  let timer: unknown
  const lapse = new Promise<undefined>(resolve => {
    timer = setTimer(clock, () => resolve(undefined), Math.max(0, ms))
    if (keep) keepAlive(timer)
  })
  return Promise.race([promise, lapse]).finally(() => clearTimer(clock, timer))
}

export function isClock(value: unknown): value is Clock {
  const c = value as Clock | null
  return typeof c === 'object' && c !== null && typeof c.now === 'function' && typeof c.setTimeout === 'function' && typeof c.clearTimeout === 'function'
}

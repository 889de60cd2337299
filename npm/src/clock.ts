/**
 * The clock a store runs on: monotonic milliseconds, and one-shot timers. The engine reads no clock;
 * the store passes it `now()` and sets one timer for the engine's next deadline. Tests pass a manual
 * clock (`holdfast/testing`) so that waits and `maxHold` are exercised without sleeping.
 */

export interface Clock {
  /** Monotonic milliseconds (any origin). */
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => {
    const handle = setTimeout(fn, ms) as unknown as { unref?: () => void }
    // A deadline alone must not keep a process alive: work that waits on it keeps its own handles.
    handle.unref?.()
    return handle
  },
  clearTimeout: handle => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

export function isClock(value: unknown): value is Clock {
  const c = value as Clock | null
  return typeof c === 'object' && c !== null && typeof c.now === 'function' && typeof c.setTimeout === 'function' && typeof c.clearTimeout === 'function'
}

/**
 * Test helpers: a manual clock, so that tests of waits and `maxHold` advance time instead of sleeping.
 *
 * ```ts
 * import { manualClock } from 'holdfast/testing'
 * const clock = manualClock()
 * const store = await openStore({ storage: memoryStorage(), clock })
 * clock.advance(1_000)   // runs every timer due by then, in order
 * ```
 *
 * A timer set for more than 2^31−1 ms (about 24.8 days) is due after 1 ms, as on every runtime
 * holdfast runs on (see `LONGEST_TIMER` in clock.ts): code that sets one spins here as it would there.
 *
 * Its time is a number of milliseconds from 0 to 2^53 − 1 that only grows, as a clock's must: a
 * `start` or an `advance` that would make it anything else is an `InvalidError`, the clock unmoved.
 * Taken as they were, NaN left every wait and maxHold unended, text was concatenated ('5' + 100), and
 * a negative time made a store that read it close itself (its engine reads a time below 0 as none).
 */

import { InvalidError } from './errors.js'
import { LONGEST_TIMER, type Clock } from './util/clock.js'

export interface ManualClock extends Clock {
  /** Moves time forward by `ms` (0 or more), running each timer that falls due, earliest first. */
  advance(ms: number): void
  /** How many timers are set. */
  readonly pending: number
}

/** `value` as an error shows it: text quoted, anything else as `String` writes it. */
function shown(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value)
}

/** Whether `value` is a time the clock may read: a number of ms from 0 to 2^53 − 1 (exact in a double). */
function isTime(value: unknown): value is number {
  return typeof value === 'number' && value >= 0 && value <= Number.MAX_SAFE_INTEGER
}

export function manualClock(start = 0): ManualClock {
  if (!isTime(start)) throw new InvalidError(`manualClock: start ${shown(start)} must be a number of ms from 0 to 2^53 - 1`)
  let now = start
  let seq = 0
  const timers = new Map<number, { at: number; fn: () => void }>()
  const next = (limit: number) => {
    let best: [number, { at: number; fn: () => void }] | undefined
    for (const entry of timers) if (entry[1].at <= limit && (!best || entry[1].at < best[1].at)) best = entry
    return best
  }
  return {
    now: () => now,
    setTimeout(fn, ms) {
      const id = ++seq
      // As the runtimes do (Node and Bun warn): an over-long delay does not fit their timers.
      timers.set(id, { at: now + (ms > LONGEST_TIMER ? 1 : Math.max(0, ms)), fn })
      return id
    },
    clearTimeout(handle) {
      timers.delete(handle as number)
    },
    advance(ms) {
      if (typeof ms !== 'number' || !(ms >= 0) || !isTime(now + ms)) {
        throw new InvalidError(`manualClock: advance ${shown(ms)} must be a number of ms, 0 or more, that keeps the clock within 2^53 - 1 (it reads ${now})`)
      }
      const until = now + ms
      for (let due = next(until); due; due = next(until)) {
        timers.delete(due[0])
        now = Math.max(now, due[1].at)
        due[1].fn()
      }
      now = until
    },
    get pending() {
      return timers.size
    },
  }
}

/**
 * Things each due a fixed interval after its own start, with one timer for them all: a client's
 * leases waiting for their first renewal (`client.ts`: most are let go before it, so they cost no
 * timer of their own), and its holds waiting for the server's answer past their wait. Adding and
 * removing one is a `Set` operation; nothing is kept for a thing removed.
 *
 * Invariants:
 * - A thing is in the line of its interval, in the order it was added: each line is an
 *   insertion-ordered `Set` whose things started in that order (the caller adds a thing when it
 *   starts), so the first of a line is its next due.
 * - The one timer is set for the earliest first thing's due time or earlier, never later: a thing is
 *   never late for want of a timer. One set for a thing removed since fires for nothing and is set
 *   again; one that fires early by the clock is set again for the rest. Delays go through `setTimer`
 *   (a wait of 25 days is longer than a runtime's timer: clock.ts # Long timers).
 * - `due(thing)` is called once, after the thing left its line, in due order within a line.
 */

import { clearTimer, setTimer, type Clock } from './clock.js'

export class Dues<T> {
  readonly #clock: Clock
  readonly #start: (thing: T) => number
  readonly #due: (thing: T) => void
  /** Per interval (ms), the things in it, in the order they started. */
  readonly #lines = new Map<number, Set<T>>()
  #timer: unknown = undefined
  #timerAt = Infinity

  /** `start(thing)`: when it started, on `clock`; `due(thing)`: its interval passed since. */
  constructor(clock: Clock, start: (thing: T) => number, due: (thing: T) => void) {
    this.#clock = clock
    this.#start = start
    this.#due = due
  }

  /** Keeps `thing`, which started now (or at `start(thing)`, no earlier than the things added before it), due `every` ms after. */
  add(thing: T, every: number): void {
    let line = this.#lines.get(every)
    if (line === undefined) this.#lines.set(every, (line = new Set()))
    line.add(thing)
    const at = this.#start(thing) + every
    if (at < this.#timerAt) this.#arm(at)
  }

  /** Forgets `thing`; answers whether it was kept. */
  delete(thing: T, every: number): boolean {
    return this.#lines.get(every)?.delete(thing) ?? false
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) clearTimer(this.#clock, this.#timer)
    this.#timerAt = at
    this.#timer = setTimer(this.#clock, this.#fire, Math.max(0, Math.ceil(at - this.#clock.now())))
  }

  readonly #fire = (): void => {
    this.#timer = undefined
    this.#timerAt = Infinity
    const now = this.#clock.now()
    let next = Infinity
    for (const [every, line] of this.#lines) {
      for (const thing of line) {
        const at = this.#start(thing) + every
        if (at > now) {
          next = Math.min(next, at)
          break
        }
        line.delete(thing)
        this.#due(thing)
      }
      if (line.size === 0) this.#lines.delete(every)
    }
    // `due` may have added things, and set the timer for them.
    if (next < this.#timerAt) this.#arm(next)
  }
}

/**
 * Things each due a fixed interval after its own start, with one timer for them all, for things that
 * come and go on every operation: a client's leases waiting for their first renewal, and its holds
 * waiting for the server's answer past their wait (remote/client.ts); the leases of `holdfast/redis`
 * waiting for their first renewal (redis/store.ts). Most are removed before they are due, so they
 * cost no timer of their own. A line is a list linked through the things themselves (`Due`), so that
 * adding and removing one writes a few fields and makes nothing: on V8 a `Set` (as these lines once
 * were) that gains and loses an entry on every hold leaves a chain of its old tables that the
 * scavenges keep alive (#17; see util/hash-table.ts).
 *
 * Invariants:
 * - A thing is in at most one `DueLines` at a time, and then in the line of its interval, in the order
 *   it was added (the caller adds a thing when it starts, no earlier than the things added before it),
 *   so the first of a line is its next due. `thing.dueLine` is its line while it is in one, else
 *   `undefined`, and so are its links.
 * - The one timer is set for the earliest first thing's due time or earlier, never later: a thing is
 *   never late for want of a timer. One set for a thing removed since fires for nothing and is set
 *   again; one that fires early by the clock is set again for the rest. Delays go through `setTimer`
 *   (clock.ts # Long timers).
 * - `due(thing)` is called once, after the thing left its line, in due order within a line.
 */

import { clearTimer, setTimer, type Clock } from './clock.js'

/** The fields a thing kept in `DueLines` carries for it (nobody else writes them). */
export interface Due<T> {
  dueLine: DueLine<T> | undefined
  duePrev: T | undefined
  dueNext: T | undefined
}

/** The things of one interval, first to last. */
export interface DueLine<T> {
  readonly every: number
  first: T | undefined
  last: T | undefined
}

export class DueLines<T extends Due<T>> {
  readonly #clock: Clock
  readonly #start: (thing: T) => number
  readonly #due: (thing: T) => void
  /** Per interval (ms), its line (looked up, not made, on every add: lines go only when the timer fires). */
  readonly #lines = new Map<number, DueLine<T>>()
  #timer: unknown = undefined
  #timerAt = Infinity

  /** `start(thing)`: when it started, on `clock`; `due(thing)`: its interval passed since. */
  constructor(clock: Clock, start: (thing: T) => number, due: (thing: T) => void) {
    this.#clock = clock
    this.#start = start
    this.#due = due
  }

  /** Keeps `thing` (in no line), which started now (or at `start(thing)`, no earlier than the things added before it), due `every` ms after. */
  add(thing: T, every: number): void {
    let line = this.#lines.get(every)
    if (line === undefined) this.#lines.set(every, (line = { every, first: undefined, last: undefined }))
    thing.dueLine = line
    thing.duePrev = line.last
    thing.dueNext = undefined
    if (line.last === undefined) line.first = thing
    else line.last.dueNext = thing
    line.last = thing
    const at = this.#start(thing) + every
    if (at < this.#timerAt) this.#arm(at)
  }

  /** Forgets `thing`; answers whether it was kept (here, or in another `DueLines`: see # Invariants). */
  delete(thing: T): boolean {
    const line = thing.dueLine
    if (line === undefined) return false
    const prev = thing.duePrev
    const next = thing.dueNext
    if (prev === undefined) line.first = next
    else prev.dueNext = next
    if (next === undefined) line.last = prev
    else next.duePrev = prev
    thing.dueLine = thing.duePrev = thing.dueNext = undefined
    return true
  }

  /**
   * Forgets every thing and clears the timer: for a closing owner, whose things were all answered
   * already. A timer left set would keep the owner (its `due`) alive until it fired, up to a hold's
   * wait after its close.
   */
  clear(): void {
    for (const line of this.#lines.values()) while (line.first !== undefined) this.delete(line.first)
    this.#lines.clear()
    if (this.#timer !== undefined) clearTimer(this.#clock, this.#timer)
    this.#timer = undefined
    this.#timerAt = Infinity
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
      for (let thing = line.first; thing !== undefined; thing = line.first) {
        const at = this.#start(thing) + every
        if (at > now) {
          next = Math.min(next, at)
          break
        }
        this.delete(thing)
        this.#due(thing)
      }
      if (line.first === undefined) this.#lines.delete(every)
    }
    // `due` may have added things, and set the timer for them.
    if (next < this.#timerAt) this.#arm(next)
  }
}

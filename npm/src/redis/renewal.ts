/**
 * Keeping one lease alive from this side (LOCK-05): a renewal every ttl/3 while it is held, and a
 * deadline of its own, counted from when each answered renewal was *sent* (from the grant's arrival,
 * for the first) minus a margin, so that this side always gives up before Redis would. When the
 * deadline passes unrenewed, or a renewal answers that the lease is no longer held, `lose` is called
 * once. A renewal that could not reach Redis is tried again every ttl/10 until the deadline. Nothing
 * here throws into the program.
 *
 * Self-contained on purpose (two timers, one callback to renew, one to lose): the shape of the one
 * shared renewal loop that other stores use, so that it can be swapped for that one.
 */

import type { Clock } from '../clock.js'

/** What a renewal answered: held for `leaseMs` more, not held (`why`), or nothing (Redis unreachable). */
export type RenewAnswer = { held: true; leaseMs: number } | { held: false; why: string } | undefined

/** How much earlier than Redis this side gives up a lease. */
export function margin(ttl: number): number {
  return Math.min(1_000, Math.floor(ttl / 5))
}

export class Renewal {
  #deadline = 0
  #renewTimer: unknown
  #deadlineTimer: unknown
  #stopped = false

  constructor(
    private readonly clock: Clock,
    private readonly ttl: number,
    private readonly renew: () => Promise<RenewAnswer>,
    private readonly lose: (why: 'expired' | string) => void,
  ) {}

  /**
   * The lease is held for `leaseMs` from `from` (this clock's ms). While the next renewal is due before
   * the deadline, it is the lease's one timer (a short hold sets and clears one, not two): `#renew`
   * checks the deadline first, and arms the deadline's own timer while a renewal is out.
   */
  extend(from: number, leaseMs: number): void {
    if (this.#stopped) return
    const deadline = from + leaseMs - margin(this.ttl)
    if (deadline > this.#deadline) this.#deadline = deadline
    const renewIn = Math.max(1, Math.floor(this.ttl / 3))
    if (this.clock.now() + renewIn < this.#deadline) {
      if (this.#deadlineTimer !== undefined) this.clock.clearTimeout(this.#deadlineTimer)
      this.#deadlineTimer = undefined
    } else this.#armDeadline() // a late answer: the deadline comes before the next renewal would
    this.#schedule(renewIn)
  }

  stop(): void {
    this.#stopped = true
    if (this.#renewTimer !== undefined) this.clock.clearTimeout(this.#renewTimer)
    if (this.#deadlineTimer !== undefined) this.clock.clearTimeout(this.#deadlineTimer)
    this.#renewTimer = this.#deadlineTimer = undefined
  }

  #schedule(ms: number): void {
    if (this.#renewTimer !== undefined) this.clock.clearTimeout(this.#renewTimer)
    this.#renewTimer = this.clock.setTimeout(() => void this.#renew(), ms)
  }

  /**
   * Timers may fire a little early by this clock (they count whole milliseconds): one that does is set
   * again for the rest, never dropped — a lease whose deadline passed unrenewed must be lost.
   */
  #armDeadline(): void {
    if (this.#deadlineTimer !== undefined) this.clock.clearTimeout(this.#deadlineTimer)
    this.#deadlineTimer = this.clock.setTimeout(
      () => {
        this.#deadlineTimer = undefined
        if (this.#stopped) return
        if (this.clock.now() >= this.#deadline) this.#end('expired')
        else this.#armDeadline()
      },
      Math.max(0, Math.ceil(this.#deadline - this.clock.now())),
    )
  }

  async #renew(): Promise<void> {
    this.#renewTimer = undefined
    if (this.#stopped) return
    const sentAt = this.clock.now()
    // A timer that ran late (a blocked event loop) may find the deadline past: never renew then.
    if (sentAt >= this.#deadline) return this.#end('expired')
    if (this.#deadlineTimer === undefined) this.#armDeadline()
    let answer: RenewAnswer
    try {
      answer = await this.renew()
    } catch {
      answer = undefined
    }
    if (this.#stopped) return
    if (answer?.held) return this.extend(sentAt, answer.leaseMs)
    if (answer) return this.#end(answer.why)
    this.#schedule(Math.max(50, Math.floor(this.ttl / 10)))
  }

  #end(why: string): void {
    if (this.#stopped) return
    this.stop()
    this.lose(why)
  }
}

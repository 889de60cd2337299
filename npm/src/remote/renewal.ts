/**
 * The renewal of a lease held from afar: one loop for a connection's client (`client.ts`) and for
 * Worker code over Workers RPC (`cloudflare/worker-store.ts`), which differ only in how a renewal is
 * asked (`RenewalHost.renew`).
 *
 * A lease lasts its ttl from its grant and from each renewal (LOCK-05). While it is held, it is renewed
 * every ttl/3; a renewal that gets no answer (the call failed, the connection is down) is asked again
 * every ttl/10 (at least 50 ms).
 *
 * # Invariants
 * - **The deadline is counted on this side**, from when each renewal was *sent* (from when the grant
 *   arrived, for the first) plus the ttl the other side answered, minus a margin: the other side counts
 *   from when it received them, so this side always gives up first. It only ever moves later.
 * - **Never renewed past the deadline.** A renewal timer that runs late (a blocked event loop, a paused
 *   process) finds the deadline past and marks the lease lost instead of asking; an answer that comes
 *   back after the deadline passed does not bring the lease back: it is lost. Once past its deadline,
 *   a lease is lost whatever happens next.
 * - **A deadline timer is never dropped.** Timers count whole milliseconds and may fire a little before
 *   the deadline by this clock: one that does is set again for the rest.
 * - **maxHold ends it.** At `revokeIn` from the grant's arrival the lease is lost, renewed or not.
 * - **The lease knows its end.** `Lease._deadline` is the earlier of the two, so that reading
 *   `lease.lost` past it finds the lease lost before any timer ran (lease.ts # Reading checks the
 *   clock), through `overdue()`.
 * - Nothing here throws into the program; every timer goes through `setTimer` (clock.ts: a maxHold of
 *   30 days is longer than a runtime's timer).
 *
 * While the next renewal is due before the deadline, it is the lease's one timer (a short hold sets and
 * clears one, not two): the deadline's timer is set when a renewal is sent, or when the deadline comes
 * first.
 */

import { clearTimer, setTimer, type Clock } from '../util/clock.js'
import { LostError } from '../errors.js'
import { placeOf } from '../handle/travelling.js'
import type { Lease } from '../handle/lease.js'

/** The answer to a renewal: its ttl, refused (the lease is lost there), or none (ask again). */
export type Renewed = { ttl: number } | { refused: string } | undefined

/** What a renewal needs from the store whose lease it renews. */
export interface RenewalHost {
  /** Asks the other side to renew the lease. May reject: taken as no answer. */
  renew(): Promise<Renewed>
  /** The lease is lost: forget it (`Renewal.stop()`), then `lease._lose(reason)`. */
  lose(reason: LostError): void
}

/** The margin by which this side gives up before the other side would. */
export function margin(ttl: number): number {
  return Math.min(1_000, Math.floor(ttl / 5))
}

export class Renewal {
  readonly #clock: Clock
  readonly #host: RenewalHost
  readonly #lease: Lease
  /** How long after an unanswered renewal to ask again. */
  readonly #retry: number
  #deadline = -Infinity
  /** When maxHold ends the lease (Infinity: none). */
  readonly #revokeAt: number
  /**
   * Kept only when asked (`recall` ms): each deadline an answer set, with when it came, the last one
   * older than `recall` included: what `distrust` goes back to.
   */
  readonly #recall: number
  #answers: { at: number; deadline: number }[] | undefined
  /** Why the deadline in force was moved back (`distrust`), until an answer moves it on: the lease's loss says so. */
  #distrusted: string | undefined
  #renewTimer: unknown = undefined
  /** The timer for `#end()`, set only when it comes before the next renewal or a renewal is out. */
  #endTimer: unknown = undefined
  #stopped = false

  /**
   * Starts renewing `lease`, granted (its answer arriving at `grantedAt`, now unless given) with `ttl`,
   * and `revokeIn` ms to its maxHold (0: none). `handleTtl`: the ttl asked for, which paces retries.
   * Started late by `FirstRenewals` (its first renewal due), it is as if started at the grant: the
   * deadline counts from `grantedAt`, and `renewNow()` sends the renewal that was due. `recall`: how
   * far back `distrust` may reach (0: it is never called).
   */
  constructor(clock: Clock, host: RenewalHost, lease: Lease, handleTtl: number, ttl: number, revokeIn: number, grantedAt = clock.now(), recall = 0) {
    this.#clock = clock
    this.#host = host
    this.#lease = lease
    this.#retry = Math.max(50, Math.floor(handleTtl / 10))
    this.#revokeAt = revokeIn > 0 ? grantedAt + revokeIn : Infinity
    this.#recall = recall
    this.#move(clock.now(), grantedAt, ttl)
    if (recall > 0) this.#answers = [{ at: grantedAt, deadline: this.#deadline }]
  }

  /** Renews now rather than at the timer's time (the first renewal of a lease `FirstRenewals` kept). */
  renewNow(): void {
    if (this.#renewTimer !== undefined) clearTimer(this.#clock, this.#renewTimer)
    void this.#renew()
  }

  /**
   * A renewal sent at `from` (or a hold asked again after a reconnect) was answered `ttl`: moves the
   * deadline to `from + ttl - margin`, unless the lease is already past its deadline (then it is lost).
   */
  extend(from: number, ttl: number): void {
    if (this.#stopped) return
    const now = this.#clock.now()
    if (this.#overdue(now)) return
    this.#move(now, from, ttl)
    const answers = this.#answers
    if (!answers) return
    answers.push({ at: now, deadline: this.#deadline })
    while (answers.length > 1 && answers[1]!.at <= now - this.#recall) answers.shift()
  }

  /**
   * The renewals answered at `since` or later may not be the lease's truth (they came from a node that
   * was no longer the primary): the deadline goes back to the one the answers before set, the grant's
   * at the earliest (a grant is as any write a failover may lose: its holder learns it at its next
   * renewal), and the lease is lost now if that passed. `since` no further back than `recall`.
   */
  distrust(since: number, why: string): void {
    const answers = this.#answers
    if (this.#stopped || !answers) return
    // The first is the grant's, or (once older than `recall`) a renewal's from before any `since`.
    while (answers.length > 1 && answers[answers.length - 1]!.at >= since) answers.pop()
    const deadline = answers[answers.length - 1]!.deadline
    if (deadline >= this.#deadline) return
    this.#deadline = deadline
    this.#distrusted = why
    this.#lease._deadline = this.#end()
    if (!this.#overdue(this.#clock.now())) this.#armEnd()
  }

  /** Stops every timer: the lease was released or lost. */
  stop(): void {
    this.#stopped = true
    if (this.#renewTimer !== undefined) clearTimer(this.#clock, this.#renewTimer)
    if (this.#endTimer !== undefined) clearTimer(this.#clock, this.#endTimer)
    this.#renewTimer = this.#endTimer = undefined
  }

  /** The lease was read past its deadline (see `LeaseOwner._overdue`): lost now, if it is. */
  overdue(): void {
    if (!this.#stopped) this.#overdue(this.#clock.now())
  }

  /** The earlier of the deadline and maxHold. */
  #end(): number {
    return Math.min(this.#deadline, this.#revokeAt)
  }

  #move(now: number, from: number, ttl: number): void {
    const deadline = from + ttl - margin(ttl)
    if (deadline > this.#deadline) {
      this.#deadline = deadline
      this.#distrusted = undefined
      this.#lease._deadline = this.#end()
    } else if (this.#renewTimer !== undefined) return // an answer that moves nothing, with a renewal set
    const renewIn = renewInterval(ttl)
    if (now + renewIn < this.#end()) {
      if (this.#endTimer !== undefined) clearTimer(this.#clock, this.#endTimer)
      this.#endTimer = undefined
    } else this.#armEnd() // a late answer, or maxHold near: the end comes before the next renewal would
    if (this.#renewTimer !== undefined) clearTimer(this.#clock, this.#renewTimer)
    this.#renewTimer = setTimer(this.#clock, this.#renewSoon, renewIn)
  }

  /** Past the deadline or maxHold at `now`: the lease is lost (answers true). */
  #overdue(now: number): boolean {
    if (now < this.#end()) return false
    const place = placeOf(this.#lease.kind, this.#lease.name, this.#lease.key)
    this.#lose(
      new LostError(now >= this.#revokeAt ? `${place}: lease revoked at maxHold` : `${place}: ${this.#distrusted ?? 'lease not renewed within its ttl'}`),
    )
    return true
  }

  #lose(reason: LostError): void {
    this.stop()
    this.#host.lose(reason)
  }

  #armEnd(): void {
    if (this.#endTimer !== undefined) clearTimer(this.#clock, this.#endTimer)
    this.#endTimer = setTimer(this.#clock, this.#onEnd, Math.max(0, Math.ceil(this.#end() - this.#clock.now())))
  }

  readonly #onEnd = (): void => {
    this.#endTimer = undefined
    // Fired early by this clock: set again for the rest, never dropped.
    if (!this.#stopped && !this.#overdue(this.#clock.now())) this.#armEnd()
  }

  readonly #renewSoon = (): void => {
    void this.#renew()
  }

  async #renew(): Promise<void> {
    this.#renewTimer = undefined
    if (this.#stopped) return
    const sentAt = this.#clock.now()
    // A timer that ran late may find the deadline past: never renew then.
    if (this.#overdue(sentAt)) return
    if (this.#endTimer === undefined) this.#armEnd()
    let answer: Renewed
    try {
      answer = await this.#host.renew()
    } catch {
      answer = undefined
    }
    if (this.#stopped) return
    if (answer !== undefined && 'ttl' in answer) return this.extend(sentAt, answer.ttl)
    if (answer !== undefined)
      return this.#lose(new LostError(`${placeOf(this.#lease.kind, this.#lease.name, this.#lease.key)}: renewal refused: ${answer.refused}`))
    // (A renewal may be set already: a hold asked again after a reconnect was answered meanwhile.)
    if (!this.#overdue(this.#clock.now()) && this.#renewTimer === undefined) this.#renewTimer = setTimer(this.#clock, this.#renewSoon, this.#retry)
  }
}

/** How long after its grant a lease is first renewed. */
export function renewInterval(ttl: number): number {
  return Math.max(1, Math.floor(ttl / 3))
}

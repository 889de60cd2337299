/**
 * The client's heartbeat (protocol revision 5): while the client awaits an answer on a connection
 * that has carried nothing from the server for `PING_AFTER`, it pings (`ping`, answered `done`); a
 * connection silent for `SILENCE_LIMIT` is dropped as a connection that ends is, so that what was
 * awaited on it is asked again on a new one, or given up within its own patience.
 *
 * Why: a server that stops while its connections stay open (`SIGSTOP`, a deadlock, a host frozen),
 * or a connection that dies without a close (a host gone, a NAT or balancer that forgot it), leaves
 * the client's socket open and quiet. Without a heartbeat an answer awaited there — an inspection, a
 * pool's release, a waiting hold's grant — waits until the connection ends, which may be never.
 *
 * Invariants:
 * - It beats only while an answer is awaited (`HeartbeatHost.awaiting`; for the client, a release
 *   not yet known read counts: see unconfirmed-releases.ts): an idle client sends nothing, but the
 *   one ping that confirms its last release, so that it does not wake a server that sleeps (a
 *   Durable Object), and its timer ends at the first beat that finds nothing awaited (at most 15 s
 *   on; at once when the client ends or its connection drops: `stop`).
 * - Silence counts from the later of the last message heard and the moment the heartbeat began: an
 *   answer asked of a connection idle for an hour is given `PING_AFTER` like any other.
 * - One ping per silence: another only once something was heard since. A beat falls 5 s into a
 *   silence, then every 5 s at most until its drop (a message heard since makes it find a shorter
 *   silence, and set itself again): so each silence is pinged 5 s into it, or within 5 s after that,
 *   and always at least 5 s before the drop; a client waiting on a live server sends something at
 *   least every 5 s and a round trip. (Beats 15 s after the last message left 10 s between pings:
 *   a Durable Object may hibernate after 10 s without an event, and its lines live in memory.)
 * - One timer, set when an answer begins to be awaited and moved along by the beat itself: a frame
 *   sent while it beats reads one field (`awaited`), and a message read touches nothing of it, so
 *   that a hold's path pays nothing more.
 */

import type { Clock } from '../util/clock.js'

/** Quiet for this long while an answer is awaited, the client pings. */
export const PING_AFTER = 5_000
/** Silent for this long while an answer is awaited (the ping unanswered for 10 s), the connection is dropped. */
export const SILENCE_LIMIT = 15_000

/** What the heartbeat asks of its client. */
export interface HeartbeatHost {
  /** When the last message from the server arrived (on the client's clock). */
  heard(): number
  /** Whether an answer is awaited on a welcomed connection whose server answers pings. */
  awaiting(): boolean
  /** Sends a ping; its answer is heard as any message is. */
  ping(): void
  /** Drops the connection: nothing was heard for `SILENCE_LIMIT`. */
  silent(): void
}

export class Heartbeat {
  readonly #clock: Clock
  readonly #host: HeartbeatHost
  #timer: unknown = undefined
  /** When it began beating (silence counts from here, if nothing was heard since). */
  #since = 0
  /** When the last ping went out: a silence that began before it was pinged. */
  #pingedAt = Number.NEGATIVE_INFINITY
  readonly #beat = (): void => this.#onBeat()

  constructor(clock: Clock, host: HeartbeatHost) {
    this.#clock = clock
    this.#host = host
  }

  /** An answer is awaited: begins beating, if it does not already. */
  awaited(): void {
    if (this.#timer === undefined) {
      this.#since = this.#clock.now()
      this.#pingedAt = Number.NEGATIVE_INFINITY
      this.#timer = this.#clock.setTimeout(this.#beat, PING_AFTER)
    }
  }

  /** Stops beating: the connection dropped (a new one's silence counts from its own start), or the client ended. */
  stop(): void {
    if (this.#timer === undefined) return
    this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #onBeat(): void {
    const host = this.#host
    if (!host.awaiting()) {
      this.#timer = undefined
      return
    }
    const now = this.#clock.now()
    const silentSince = Math.max(this.#since, host.heard())
    const quiet = now - silentSince
    if (quiet >= SILENCE_LIMIT) {
      this.#timer = undefined
      return host.silent()
    }
    if (quiet >= PING_AFTER && this.#pingedAt < silentSince) {
      this.#pingedAt = now
      // `#timer` still holds the handle that fired: the ping's own `awaited` leaves the beat as it is.
      host.ping()
    }
    // Past PING_AFTER, every PING_AFTER until the drop: the silence that begins with a ping's answer is
    // found 5 s into it, not at the end of the one before (which left 10 s between pings).
    this.#timer = this.#clock.setTimeout(this.#beat, quiet < PING_AFTER ? PING_AFTER - quiet : Math.min(PING_AFTER, SILENCE_LIMIT - quiet))
  }
}

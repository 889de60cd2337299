/**
 * The server's side of the heartbeat (protocol revision 5): a client gone silent with holds in line
 * is dropped, so that its holds stand aside instead of being granted in turn to nobody.
 *
 * Why: a client whose host vanished without a close (power lost, a partition, a frozen machine)
 * leaves its connection open on the server for as long as TCP does not notice, which, with nothing
 * to send it, may be never. Its session lives on, and so do its holds in line: each that reaches the
 * head of its line is granted to a holder that will never use the key nor let it go, and the key
 * waits out the lease's ttl while everyone behind it waits too.
 *
 * A client of revision 5 or more pings while it awaits an answer and hears nothing (heartbeat.ts),
 * and a hold in line awaits its grant: such a client sends something at least every 15 s while it
 * has a hold in line. So the server sweeps its sessions every `SWEEP` (see below for the Durable
 * Object's, which sweeps as events come): one heard from since the last
 * sweep is marked unheard; one still unheard `SILENT_SWEEPS` sweeps in a row (silent for 30 to 40 s)
 * that has a hold in line or a claim unanswered is dropped — closed with `CLOSE_SILENT` and ended as
 * a connection that dropped (LOCK-05): its holds in line step aside (away, keeping their place for
 * their ttl), its unanswered claims are cancelled, its leases live until their ttl. A client that was
 * only slow reconnects, asks again, and is back in its place.
 *
 * Invariants:
 * - Nothing on a hold's path: a message read marks its session heard (one field); the engine is asked
 *   who waits on a connection (`_connectionWaiting`, a walk of that connection's requests) only for a
 *   session silent for 30 s.
 * - A session of a revision below 5 is never dropped for silence: its client does not ping.
 * - An idle session (nothing in line, no claim awaited) is never dropped, however long it is silent:
 *   its client awaits nothing, so it pings nothing; its leases are renewed on their own schedule.
 * - `serve()` sweeps on a timer of its own (`watch`), set only while it has sessions past hello. The
 *   Durable Object host sets none (a pending timer keeps an object from hibernating, and bills it):
 *   it sweeps when an event comes at least `SWEEP` after the last sweep (`poke`). While a client has
 *   a hold in line the object's events come at least every 15 s (that client's pings), so the silent
 *   one goes after 30 s and some. An object quiet for about 10 s leaves memory, and on its return
 *   closes every client that had holds in line (1012, cloudflare/object.ts), the silent one with them.
 */

import type { Clock } from '../util/clock.js'
import type { ServedStore } from './host.js'
import type { Protocol, Session } from './session.js'
import { HEARTBEAT } from './wire.js'

/** How often the server looks for silent sessions. */
export const SWEEP = 10_000
/** Unheard at this many sweeps in a row (silent 30 to 40 s), a session with holds in line is dropped. */
export const SILENT_SWEEPS = 3
/** The close code of a session dropped for its silence. */
export const CLOSE_SILENT = 4408

export class SilentClients {
  #timer: unknown = undefined
  /** When the last sweep ran (`poke`). */
  #swept: number

  constructor(
    readonly clock: Clock,
    /** The sessions past hello. */
    readonly sessions: () => Iterable<Session>,
    readonly protocol: Protocol,
    readonly store: () => ServedStore,
  ) {
    this.#swept = clock.now()
  }

  /** A session was welcomed: the sweep runs, on a timer, while the server has any. */
  watch(): void {
    if (this.#timer === undefined) this.#timer = this.clock.setTimeout(this.#sweep, SWEEP)
  }

  /** An event came to a host without a timer of this: sweeps if the last sweep was `SWEEP` ago or more. */
  poke(): void {
    const now = this.clock.now()
    if (now - this.#swept < SWEEP) return
    this.#swept = now
    this.#sweepOnce()
  }

  /** The server closes: no more sweeps. */
  stop(): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  readonly #sweep = (): void => {
    this.#timer = undefined
    if (this.#sweepOnce() > 0) this.watch()
  }

  /** Answers how many sessions were left (not dropped). */
  #sweepOnce(): number {
    // Dropping a session takes it out of `sessions` (its `closed` hook): walk a copy.
    const sessions = [...this.sessions()]
    let left = sessions.length
    for (const session of sessions) {
      if (session.revision < HEARTBEAT || session.ended) continue
      if (session.heard) {
        session.heard = false
        session.unheard = 0
        continue
      }
      if (++session.unheard < SILENT_SWEEPS) continue
      if (session.claims.size === 0 && !this.#waitsOn(session)) continue
      const seconds = (SILENT_SWEEPS * SWEEP) / 1000
      left--
      this.protocol.dropped(session)
      session.closing = true
      try {
        session.socket.close(CLOSE_SILENT, `server: silent for ${seconds} s with a hold in line or a claim awaited`)
      } catch {
        // the socket went away meanwhile
      }
    }
    return left
  }

  #waitsOn(session: Session): boolean {
    try {
      return this.store()._connectionWaiting(session.conn) > 0
    } catch {
      // A store that failed (its engine trapped) has answered its waiters already: none waits here.
      return false
    }
  }
}

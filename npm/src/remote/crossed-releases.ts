/**
 * The releases of a client of protocol revision 5 or older that the server reads as withdraws
 * (POOL-01, POOL-03): one per connection of such a client (`Session.crossed`).
 *
 * A client whose `claimed` answer crossed its caller's cancel lets that claim go. From revision 6 it
 * says `withdraw`, and the server undoes the claim only if nobody but that client was answered
 * `claimed` for it (room.ts # Withdrawn claims). A client of revision 5 or older has no withdraw: it
 * sends `release`, which would give back units that another connection, or a caller in the server's
 * process, was told it holds — sold again to the next buyer. So the server reads such a release as
 * the connection's withdraw when the connection cancelled the claim after it had been answered
 * `claimed` for it:
 *
 * - per claim id, it counts the `claimed` answers it sent the connection since the connection last
 *   cancelled or released that id (`told`);
 * - a cancel of the id turns them into as many releases to read as withdraws (`due`): such a client
 *   sends one release for each `claimed` answer it reads after its cancel;
 * - a release of the id while one is due is read as a withdraw (undone only if the client alone was
 *   told; else kept, and answered 0); any other is a release, and the count starts again;
 * - the id asked again clears what is due: the new ask is answered the same open claim, and its
 *   caller holds it (holdfast's client lets a crossed answer go only while no ask of its id is
 *   pending), so its release is a release.
 *
 * The count can be wrong both ways, and the server cannot tell which frames the client read before
 * it sent its cancel. A client older than holdfast 81cba16 (every client of revision 5) let a crossed
 * answer go even when its caller had asked the id again meanwhile: that release, after the new ask,
 * is a release, as it was. And what is due may outnumber the client's releases: its caller read a
 * `claimed` answer of the id before the cancel of a later ask (the client lets nothing go then), or
 * its ask was given up by the client's own timer and answered `claimed` before the cancel's answer
 * (its caller holds it). That caller's release is then read as a withdraw: undone when the client
 * alone was told once (its units back, as a release gives them, its id forgotten), kept when others
 * were told (they hold it: it comes back at their release, or at its ttl). Revision 7's named
 * withdraws (a withdraw names the claim frame whose answer it takes back) cannot help here: such a
 * client sends a release, which names no frame, and its cancel is the same frame whether its signal
 * or its own timer sent it; a client of revision 6 or later never has its releases read so.
 *
 * Entries whose claim is no longer open are swept once their number doubled since the last sweep: a
 * claim that ended holds nothing a release could give back, and its id is remembered, so no other
 * claim of it comes while that connection lives.
 */

/** A claim id of one pool, as the connection named it: `told` answers not yet let go, `due` releases to read as withdraws. */
interface Entry {
  readonly pool: string
  readonly id: string
  told: number
  due: number
}

/** Entries are swept of claims no longer open at this many, or twice their number after the last sweep. */
const SWEEP_AT = 1024

export class CrossedReleases {
  readonly #entries = new Map<string, Entry>()
  #sweepAt = SWEEP_AT

  /** `open(pool, id)`: whether the claim is open (what the store knows: `ServedStore._claimOpen`). */
  constructor(readonly open: (pool: string, id: string) => boolean) {}

  /** The connection was sent `claimed` for claim `id` of `pool`. */
  told(pool: string, id: string): void {
    const key = `${pool}\0${id}`
    const entry = this.#entries.get(key)
    if (entry) {
      entry.told++
      return
    }
    this.#entries.set(key, { pool, id, told: 1, due: 0 })
    if (this.#entries.size >= this.#sweepAt) this.#sweep()
  }

  /** The connection cancelled claim `id` of `pool`: each `claimed` answer it was sent since is a release to come, read as a withdraw. */
  cancelled(pool: string, id: string): void {
    const entry = this.#entries.get(`${pool}\0${id}`)
    if (!entry) return
    entry.due += entry.told
    entry.told = 0
  }

  /** The connection asked claim `id` of `pool` again: what was due is not (its caller will hold the claim). */
  asked(pool: string, id: string): void {
    const entry = this.#entries.get(`${pool}\0${id}`)
    if (entry) entry.due = 0
  }

  /** The connection releases claim `id` of `pool`: `true` to read it as its withdraw. */
  released(pool: string, id: string): boolean {
    const key = `${pool}\0${id}`
    const entry = this.#entries.get(key)
    if (!entry) return false
    if (entry.due === 0) {
      this.#entries.delete(key)
      return false
    }
    entry.due--
    if (entry.due === 0 && entry.told === 0) this.#entries.delete(key)
    return true
  }

  #sweep(): void {
    for (const [key, entry] of this.#entries) if (!this.open(entry.pool, entry.id)) this.#entries.delete(key)
    this.#sweepAt = Math.max(SWEEP_AT, 2 * this.#entries.size)
  }
}

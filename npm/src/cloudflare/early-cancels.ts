/**
 * Cancels that came before their request: a `HoldfastObject.cancel` of a request id the object does
 * not know. A Worker's acquire and its cancel travel on different stubs, with no order between them
 * (worker-store.ts, cancellable.ts), so the acquire may come after its cancel: remembered here, the
 * object answers it `cancelled` at once, rather than let it wait in line for a caller that gave up
 * (a place that holds up those behind it) and be granted to nobody (its key kept until the Worker's
 * letGo released it, or until its ttl if that Worker is gone).
 *
 * A request id is drawn anew for each acquire, and asked again only after a failed call, never once
 * its signal aborted (worker-store.ts `#call`): remembering a cancelled one refuses nothing else.
 * Bounded: the last `max` ids, each for `keepMs` — an acquire that crossed its cancel is in flight
 * about as long as the cancel was, no more. The object keeps each in its storage too, and puts them
 * back here when it (re)starts (`restore`): restarted between the two (evicted, reset, a deploy), it
 * would otherwise grant the acquire to nobody, its key held until its ttl. `add` and `restore` answer
 * the ids they forgot, for the object to delete what it kept of them.
 *
 * A pool claim's call and its `poolOp('cancel')` cross the same way (worker-pools.ts): the object
 * keeps those in another of these, by pool, claim id and asker. A claim id is the caller's and may be
 * asked again by anyone; an asker is one `claim()` call's, asked again only after a failed call and
 * never once its signal aborted: remembering it refuses no other caller of the claim id.
 */
export class EarlyCancels {
  /** When each was cancelled, oldest first (a Map keeps its order of insertion). */
  readonly #at = new Map<string, number>()

  constructor(
    readonly now: () => number,
    readonly max = 10_000,
    readonly keepMs = 60_000,
  ) {}

  /** A cancel of `request` found nothing. Answers the ids forgotten to make room (or past `keepMs`). */
  add(request: string): string[] {
    this.#at.delete(request)
    this.#at.set(request, this.now())
    return this.#trim()
  }

  /**
   * A cancel kept from before a restart, made at `at`: remembered as if added then, unless it is
   * remembered already (an object reopened after an internal error keeps its memory). Given oldest
   * first, so that the oldest are forgotten first. Answers the ids forgotten (this one, if too old).
   */
  restore(request: string, at: number): string[] {
    if (!this.#at.has(request)) this.#at.set(request, at)
    return this.#trim()
  }

  /** Forgets the oldest past `max`, and those past `keepMs`. */
  #trim(): string[] {
    const now = this.now()
    const forgotten: string[] = []
    for (const [id, at] of this.#at) {
      if (this.#at.size <= this.max && now - at <= this.keepMs) break
      this.#at.delete(id)
      forgotten.push(id)
    }
    return forgotten
  }

  /** Whether `request` was cancelled before it came (within `keepMs`). */
  has(request: string): boolean {
    const at = this.#at.get(request)
    return at !== undefined && this.now() - at <= this.keepMs
  }

  /** How many are remembered (for tests). */
  get size(): number {
    return this.#at.size
  }
}

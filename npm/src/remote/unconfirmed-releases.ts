/**
 * The releases a client sent on its connection that the server is not yet known to have read.
 *
 * A lease's release goes with frame id 0, unanswered (a hold's release need not cost the server a
 * second frame). So a release lost with a connection that drops right after it went, or one that
 * went half-open unseen, was lost for good: the server kept the lease, its key held by nobody, until
 * its ttl (the client reconnects naming the same party, and leases held there live on for the new
 * connection). The server acts on a connection's frames in order, so its answer to any frame sent
 * after a release proves that the release was read: until then the release is kept here, and a
 * connection that drops hands back those it kept, for the client to send again first on the next
 * one (remote/client.ts `#unsent`). Sent again, a release names a lease id (128 random bits the
 * server drew): it ends that lease if it still lives, and nothing else, whoever holds the key now.
 *
 * Invariants:
 * - A release is kept with its mark: the frame id the next frame sent after it got. An answer to
 *   frame `id` confirms every release whose mark `id` was sent at or after (frame ids count up,
 *   wrapping past `last`; fewer than `last` are ever awaited, so the order is never ambiguous).
 * - Releases are kept in the order sent, so marks never go back: an answer confirms a prefix, taken
 *   off the front. A hold's path pays a length check per answer, and one comparison per release.
 * - Kept as numbers, five to a release, no object and no hex made: a client holding keys in turn
 *   sends a release every other frame.
 */

export class UnconfirmedReleases {
  /** Per release: its mark, then its lease id's four words (most significant first). */
  readonly #kept: number[] = []
  /** Where the first release still kept starts in `#kept`. */
  #head = 0
  /** The last frame id (ids count 1 to `last`, then 1 again). */
  readonly #last: number

  constructor(last: number) {
    this.#last = last
  }

  /** Whether any release is kept. */
  get any(): boolean {
    return this.#head < this.#kept.length
  }

  /** The release of lease `l0`-`l3` went, before the frame that will have id `mark`. */
  sent(mark: number, l0: number, l1: number, l2: number, l3: number): void {
    this.#kept.push(mark, l0, l1, l2, l3)
  }

  /**
   * The server answered frame `id`, `next` being the id the next frame will get: every release sent
   * before frame `id` was read.
   */
  answered(id: number, next: number): void {
    const kept = this.#kept
    const last = this.#last
    let head = this.#head
    // Frames sent since a mark lie `0 .. since - 1` past it: `id` among them confirms it.
    while (head < kept.length) {
      const mark = kept[head]!
      if ((id - mark + last) % last >= (next - mark + last) % last) break
      head += 5
    }
    if (head === kept.length) kept.length = this.#head = 0
    else this.#head = head
  }

  /** Takes every release kept, in the order sent (their connection dropped): each as its lease's words. */
  take(each: (l0: number, l1: number, l2: number, l3: number) => void): void {
    const kept = this.#kept
    for (let i = this.#head; i < kept.length; i += 5) each(kept[i + 1]!, kept[i + 2]!, kept[i + 3]!, kept[i + 4]!)
    this.clear()
  }

  /** Forgets every release kept (the client ended). */
  clear(): void {
    this.#kept.length = this.#head = 0
  }
}

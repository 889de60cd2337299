/**
 * One retry policy for work asked again after a failure (a command refused while a client was offline,
 * a subscription dropped, an inspect cut mid-answer): tried, then again `first` ms after its failure,
 * then twice as long after each next one (at most `most`), until it succeeds or the caller stops it.
 *
 * The caller owns the two things that differ between them: whether a failure is tried again (`check`
 * throws what the retry rejects with; it is asked both before the wait and after it, so that what
 * changed meanwhile, a close or a subscription given up, is not tried once more), and the wait itself
 * (`wait`): real time for a client's I/O, the store's clock and its close for what a store asked.
 */

export interface Backoff {
  /** The wait after the first failure, in ms. */
  first: number
  /** The longest wait, in ms: each failure doubles the one before up to it. */
  most: number
}

/**
 * `attempt` until it succeeds (see the module docs). `check(error, ms)` returns to try again `ms` on
 * and throws to stop; after the wait it is asked again with 0.
 */
export async function retried<T>(
  attempt: () => Promise<T>,
  backoff: Backoff,
  check: (error: unknown, ms: number) => void,
  wait: (ms: number) => Promise<unknown>,
): Promise<T> {
  for (let ms = backoff.first; ; ms = Math.min(ms * 2, backoff.most)) {
    try {
      return await attempt()
    } catch (error) {
      check(error, ms)
      await wait(ms)
      check(error, 0)
    }
  }
}

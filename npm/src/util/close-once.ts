/**
 * A close that runs once, whoever calls it and from where: `closeOnce(close)` answers a function
 * whose first call keeps a promise, then calls `close`, and answers that promise; every later call
 * answers the same promise, without calling `close` again. The promise settles as `close()`'s does:
 * its error (thrown or rejected) rejects every caller alike. Used by every `close()` of the package
 * (the store, the Redis store, a server of `serve()`, a `connect()` client), so that a second caller
 * (two shutdown hooks, say) goes on only once the first close is done, not at once.
 *
 * Invariant: the promise is kept *before* `close` is called. A close's synchronous part can call
 * user code — the abort listener of a lease it ends, which closes the same thing (a common
 * shutdown: the lease lost, close the store and leave) — and that re-entrant call must answer the
 * promise too. With `closing ??= close()` it found nothing kept yet: it ran the close a second time
 * (over what the first had yet to end) or, finding the thing closed, resolved at once, before the
 * first close was done (its storage not let go, its releases not sent); and the outer call then kept
 * its own promise over the inner one.
 */
export function closeOnce(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined
  return () => {
    if (closing === undefined) {
      let settle!: (closed: Promise<void>) => void
      closing = new Promise<void>(resolve => (settle = resolve))
      try {
        settle(close())
      } catch (error) {
        // A close that throws before its first await (one not written `async`): every caller, the
        // re-entrant ones already answered among them, is rejected alike, none left waiting.
        settle(Promise.reject(error))
      }
    }
    return closing
  }
}

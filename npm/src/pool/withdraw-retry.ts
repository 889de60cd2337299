/**
 * How a withdraw answered `storage` is asked again: over a connection (pool/client.ts `#letGo`) and in
 * Worker code (cloudflare/worker-pools.ts `#withdraw`). The server (or object) undid the claim in
 * memory all the same and writes it again, but a restart before that write lands reads the claim
 * back; asked again, it answers `storage` while that write is owed, 1 once it landed
 * (remote/unkept-withdraws.ts), and restarted meanwhile, 0 as for any claim read back (a drawn id's
 * claim is then released by its asker).
 *
 * The waits double from 50 ms up to `LONGEST_WAIT`, the pools' write's own longest wait after a failed
 * one (pool/writes.ts): asking more often would find the same write owed. A client asks for as long as
 * it is open, however long the storage stays down: a withdraw given up, then a restart before the
 * storage came back, kept a drawn id's claim, whose units nobody else could release. A Worker asks
 * `WORKER_WITHDRAW_TRIES` times, 6.35 s of waits: its work lives as long as its request does (and its
 * `waitUntil`, cloudflare/background.ts), not for good.
 */

/** The longest wait between two asks. */
const LONGEST_WAIT = 5_000

/** How many times a Worker asks a withdraw while it is answered `storage`, the first ask included. */
export const WORKER_WITHDRAW_TRIES = 8

/** The wait before asking again a withdraw asked `tried` times, each answered `storage`. */
export function withdrawAgainIn(tried: number): number {
  return Math.min(50 * 2 ** (tried - 1), LONGEST_WAIT)
}

/**
 * How a withdraw answered `storage` is asked again: over a connection (pool/client.ts `#letGo`) and in
 * Worker code (cloudflare/worker-pools.ts `#withdraw`), alike. The server (or object) undid the claim
 * in memory all the same and writes it again, but a restart before that write lands reads the claim
 * back; asked again, it answers `storage` while that write is owed, and 1 once it landed
 * (remote/unkept-withdraws.ts).
 *
 * The waits double from 50 ms, `WITHDRAW_TRIES` asks in all: 6.35 s of waiting, within which the
 * pools' write after a failed one comes (its own wait doubles to 5 s: pool/writes.ts), unless the
 * storage stays down. Past them the withdraw is let go: the claim then holds its units until its ttl,
 * or until released.
 */

/** How many times a withdraw is asked while it is answered `storage`, the first ask included. */
const WITHDRAW_TRIES = 8

/** The wait before asking again a withdraw asked `tried` times, each answered `storage`; `undefined` once it was asked `WITHDRAW_TRIES` times. */
export function withdrawAgainIn(tried: number): number | undefined {
  return tried < WITHDRAW_TRIES ? 50 * 2 ** (tried - 1) : undefined
}

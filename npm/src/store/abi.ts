/**
 * The ABI shared with the wasm bindings: the slots of the shared buffer, the event kinds and the
 * statuses, as crate/wasm/src/lib.rs defines them (modules `buffer`, `event`, `status`). One
 * `export const NAME = <number>` a line, a plain number: crate/wasm/tests/abi.rs reads this file and
 * fails if a name here is missing in Rust or has another value there. Each meaning has its own
 * name, even where two share a slot (RESUMED_FENCE and REVOKE_IN).
 */

// The buffer (indices of f64s).
/** The id of the request a hold made. */
export const REQ = 0
/** releaseRemote: the id of the request it ended, or -1 when no live request had that lease. Shares slot 0 with REQ. */
export const RELEASED = 0
/** The id of the key it holds or waits for. */
export const KEY = 1
/** How many events a hold, holdRemote or renew wrote. */
export const HOLD_EVENTS = 2
/** holdRemote answering RESUMED: the fence of the request (0 while it waits). Shares slot 3 with REVOKE_IN. */
export const RESUMED_FENCE = 3
/** renew: how long until maxHold revokes the lease, or -1. Shares slot 3 with RESUMED_FENCE. */
export const REVOKE_IN = 3
/** Where events start: EVENT_SIZE numbers each, [kind, id, a, 0]. */
export const EVENTS = 4
export const EVENT_SIZE = 4
/** How many events one call writes at most; drain() writes the rest. */
export const EVENT_SLOTS = 256
/** The next fence of the block lent to the host (EVENTS + EVENT_SIZE * EVENT_SLOTS). */
export const FENCE_NEXT = 1028
/** The end (exclusive) of the block lent to the host; 0 while nothing is lent. */
export const FENCE_END = 1029
/** claim answering CLAIM_REFUSED or CLAIM_KNOWN: the units remaining. Shares slot 3 with RESUMED_FENCE and REVOKE_IN. */
export const CLAIM_REMAINING = 3
/** claim answering CLAIM_KNOWN: 1 if the claim still holds its units. Shares slot 1 with KEY. */
export const CLAIM_OPEN = 1

// Event kinds: the first number of an event.
export const GRANTED = 1
export const TIMED_OUT = 2
export const REVOKED = 3
export const FAILED = 4
export const ENDED = 5
export const KEY_IDLE = 6
export const EXPIRED = 7
/** A pool request's claim is kept by storage; a: the units remaining right after it. */
export const CLAIMED = 8
/** A waiting claim left its line without units; a: remaining. */
export const NOT_CLAIMED = 9
/** A confirm or resize is kept by storage. */
export const DURABLE = 10
/** The write a pool request waited for failed. */
export const POOL_FAILED = 11
/** A pool request ended by closing. */
export const POOL_ENDED = 12
/** A release or confirm whose claim was undone before it was answered: it acted on no claim. */
export const NO_CLAIM = 13

// Answers of claim (crate/wasm/src/pool.rs, module `claim`).
export const CLAIM_WRITING = 1
export const CLAIM_QUEUED = 2
export const CLAIM_JOINED = 3
export const CLAIM_REFUSED = 4
export const CLAIM_KNOWN = 5

// Statuses: negative answers of hold and friends.
export const BUSY = -1
export const INVALID = -2
export const LIMIT = -3
export const NEED_TIME = -5
export const RESUMED = -6
/** release answers IDLE_BASE - the key's index when its only outcome is that the key went idle. */
export const IDLE_BASE = -16

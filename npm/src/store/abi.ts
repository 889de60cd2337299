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

// Event kinds: the first number of an event.
export const GRANTED = 1
export const TIMED_OUT = 2
export const REVOKED = 3
export const FAILED = 4
export const ENDED = 5
export const KEY_IDLE = 6
export const EXPIRED = 7

// Statuses: negative answers of hold and friends.
export const BUSY = -1
export const INVALID = -2
export const LIMIT = -3
export const NEED_TIME = -5
export const RESUMED = -6
/** release answers IDLE_BASE - the key's index when its only outcome is that the key went idle. */
export const IDLE_BASE = -16

//! What the engine tells its host to do, besides the answers of its calls.

use crate::slab::Id;

/// Why a waiting request was answered with a failure other than its wait running out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Storage failed to keep the fence ceiling this grant needed: nothing was granted that a later
    /// store might repeat. The host answers `storage`.
    Storage,
    /// Every fence below 2^53 was handed out. The host answers `limit`.
    FencesUsedUp,
}

/// An event the host must act on, drained with [`crate::Engine::poll_event`] after every call but the
/// reads (calling rule 4 in the crate's docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A waiting request now holds its key, with this fence.
    Granted { req: Id, fence: u64 },
    /// A waiting request's wait ran out; it left the line. The host answers `in_use`.
    TimedOut { req: Id },
    /// A lease reached its `maxHold` and was revoked; its key went on to the next in line. The host
    /// aborts the lease's signal and answers `lost`.
    Revoked { req: Id },
    /// A lease over a connection was not renewed within its ttl and ended; its key went on to the
    /// next in line (LOCK-05). The host tells its client, if it is still connected, that it is lost.
    Expired { req: Id },
    /// A waiting request could not be granted; it left the line.
    Failed { req: Id, why: Failure },
    /// The store closed, or the request's connection ended: this request, `held` or waiting, has
    /// ended. The host answers `closed` (or, for a connection's, drops it).
    Ended { req: Id, held: bool },
    /// A key has no holder and no waiter left, and the engine forgot it. Its id is dead; the host drops
    /// whatever it kept for the key.
    KeyIdle { key: Id },
    /// A claim of a pool took its units and storage acknowledged the write that keeps it (POOL-02):
    /// the host answers `claimed: true` with `remaining` (what was left right after it). `req` is a
    /// pool request's id: pools name their requests apart from holds (see `pool/`).
    Claimed { req: Id, remaining: u64 },
    /// A waiting claim left its pool's line without units: its wait ran out, or a resize left it
    /// more than the pool's capacity. The host answers `claimed: false` with `remaining`.
    NotClaimed { req: Id, remaining: u64 },
    /// A release, confirm or resize is kept by storage: the host answers it done (also after the
    /// close, which waits for that write).
    Durable { req: Id },
    /// The write a pool request waited for failed: a claim gave its units back (it took nothing);
    /// a release, confirm or resize stands in memory, and is written again with the next write. The
    /// host answers `storage`.
    PoolFailed { req: Id, why: Failure },
    /// A release or confirm acted on a claim that was then undone before it was answered (its
    /// write failed, its caller cancelled it, or the store closed): the claim took nothing, so
    /// neither did this request. The host answers as for an id no open claim has: a release
    /// `false`, a confirm `lost`.
    NoClaim { req: Id },
    /// The store closed while a claim waited (in line, or for its write: undone then, it took
    /// nothing). The host answers `closed`. A release, confirm or resize waiting for its write is
    /// not ended by the close: its write's outcome answers it (`Durable`, `PoolFailed`).
    PoolEnded { req: Id },
}

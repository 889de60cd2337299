//! Coverage marks: the hard corners a run must prove it reached.
//!
//! Random operations that never reach a corner prove nothing about it. Each mark is counted when the
//! driver sees its corner happen (not when it drew an operation meant for it), and the runner fails a
//! run of many seeds in which any mark was reached by fewer than 1% of them, so that a change to the
//! generator, the mix or the engine that quietly stops reaching a corner is caught.
//! (As in FoundationDB's `TEST()` macros and TigerBeetle's "sometimes" assertions.)

/// A hard corner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// A cancel reached a request the engine had granted in an event the host had not acted on: the
    /// grant raced the cancel, and the key went on to the next.
    GrantRacedCancel,
    /// A fence write failed while requests waited for the fences it would have covered.
    WriteFailedWhileWaitersQueue,
    /// A semaphore key whose permits were all held had a line, and a newcomer queued behind its head.
    SemaphoreHeadWaits,
    /// A semaphore key had room but its head waited for a fence: a newcomer did not barge past it.
    SemaphoreNoBargePastStalledHead,
    /// A release or cancel came at the very instant a deadline of the same key was acted on.
    ExpiryAndReleaseInOneInstant,
    /// The store closed with requests waiting on three keys or more.
    CloseWithWaitersOnManyKeys,
    /// A lease revoked at `maxHold` handed its key to the next in line.
    RevokeHandsKeyOn,
    /// A wait ran out in a line.
    WaitRanOut,
    /// The head of a line was cancelled.
    CancelOfHead,
    /// A try found its key held.
    TryRefused,
    /// The next fence ceiling was asked for while fences were still covered (half a block used).
    ReservationAskedEarly,
    /// A hold waited for fences because a process's block ran out (not at its start).
    BlockRanOut,
    /// A write failed, but reached the disk: the next process starts above it.
    UnknownWriteOutcome,
    /// The process died with a fence write in flight.
    CrashWithWriteInFlight,
    /// Every fence below 2^53 was handed out: a request was answered `Failed` (fences used up).
    FencesUsedUp,
    /// An operation came after a deadline, before the late timer fired (late-timer runs only).
    OverdueDeadline,
    /// A lease over a connection reached its ttl unrenewed and its key went on to the next in line.
    LeaseExpiryHandsKeyOn,
    /// A lease over a connection was renewed.
    LeaseRenewed,
    /// A renewal came for a lease that had ended (ran out, revoked, released): refused.
    RenewOfLostLease,
    /// A client asked again with the request id of a lease it holds: same lease, same fence.
    AskAgainResumesLease,
    /// A client asked again with the request id of a request that waits: same place in line.
    AskAgainKeepsPlace,
    /// A client asked again with the request id of a request that ended: a new request.
    AskedAfresh,
    /// A connection dropped while holding a lease, which lived on.
    DropKeepsLease,
    /// A connection said goodbye holding a lease, which ended and handed its key on.
    GoodbyeHandsKeyOn,
    /// A connection had its limit of requests: one more was refused.
    ConnectionLimit,
    /// A hold or release took the fast path and the engine asked for the time.
    UntimedNeedsTime,
    /// A connection dropped with requests waiting: they went away, and the line moved past them.
    DropPutsWaitersAway,
    /// A waiter away asked again in time: back in its place.
    AwayBackInPlace,
    /// A waiter away was not asked again within its ttl: ended.
    AwayRunsOut,
    /// A key the host granted itself (with a lent fence) was wanted by another request: the host
    /// handed it over to the engine (adopt), and the request held as usual.
    LocalAdopted,
    /// A semaphore's key the host granted itself to several holders was adopted: each holder after
    /// the first went into the key `adopt` made (`adopt_into`).
    LocalAdoptedInto,
    /// The host granted itself another permit of a semaphore's key it holds already.
    LocalPermit,
    /// A block of fences lent to the host was given back partly used: the engine went on from the
    /// first fence the host had not used.
    LentPartlyReclaimed,
    /// A name nothing referred to was forgotten; an id kept past it names nothing.
    NameForgotten,
    /// Forgetting a name was refused: the engine had a busy key of it.
    ForgetRefused,
    /// A forgotten name was registered again, under a new id, and held.
    NameRegisteredAgain,
    /// A claim waited in its pool's line and took its units when they came back (POOL-04).
    PoolWaiterServed,
    /// A claim that would have fit waited behind a head that did not (head-of-line, POOL-04).
    PoolHeadOfLine,
    /// A claim's wait ran out in its pool's line.
    PoolWaitRanOut,
    /// A claim id asked again answered the first outcome (POOL-03).
    PoolIdKnown,
    /// A claim id asked again while its claim waited or was written joined it (POOL-03).
    PoolIdJoined,
    /// A ttl claim was not confirmed in time: its units came back.
    PoolTtlCameBack,
    /// A pools' write answered two claims or more (group commit, POOL-02).
    PoolGroupCommit,
    /// A pools' write failed: its claims gave their units back.
    PoolWriteFailedTookBack,
    /// A process read back open claims after a restart (POOL-02).
    PoolReadBack,
    /// A remembered claim id was forgotten 24 hours after its claim.
    PoolTombstoneForgotten,
    /// A pools' snapshot did not fit one value and was written in chunks.
    PoolSnapshotInChunks,
    /// The process died after some of a snapshot's chunks were set, before its head.
    PoolCrashMidChunks,
    /// The store closed while a claim that took its units waited for its write: it was undone.
    PoolCloseUndidClaim,
    /// A release or confirm of a claim being written found it undone: it acted on nothing.
    PoolNoClaim,
}

pub const MARKS: [Mark; 50] = [
    Mark::GrantRacedCancel,
    Mark::WriteFailedWhileWaitersQueue,
    Mark::SemaphoreHeadWaits,
    Mark::SemaphoreNoBargePastStalledHead,
    Mark::ExpiryAndReleaseInOneInstant,
    Mark::CloseWithWaitersOnManyKeys,
    Mark::RevokeHandsKeyOn,
    Mark::WaitRanOut,
    Mark::CancelOfHead,
    Mark::TryRefused,
    Mark::ReservationAskedEarly,
    Mark::BlockRanOut,
    Mark::UnknownWriteOutcome,
    Mark::CrashWithWriteInFlight,
    Mark::FencesUsedUp,
    Mark::OverdueDeadline,
    Mark::LeaseExpiryHandsKeyOn,
    Mark::LeaseRenewed,
    Mark::RenewOfLostLease,
    Mark::AskAgainResumesLease,
    Mark::AskAgainKeepsPlace,
    Mark::AskedAfresh,
    Mark::DropKeepsLease,
    Mark::GoodbyeHandsKeyOn,
    Mark::ConnectionLimit,
    Mark::UntimedNeedsTime,
    Mark::DropPutsWaitersAway,
    Mark::AwayBackInPlace,
    Mark::AwayRunsOut,
    Mark::LocalAdopted,
    Mark::LocalAdoptedInto,
    Mark::LocalPermit,
    Mark::LentPartlyReclaimed,
    Mark::NameForgotten,
    Mark::ForgetRefused,
    Mark::NameRegisteredAgain,
    Mark::PoolWaiterServed,
    Mark::PoolHeadOfLine,
    Mark::PoolWaitRanOut,
    Mark::PoolIdKnown,
    Mark::PoolIdJoined,
    Mark::PoolTtlCameBack,
    Mark::PoolGroupCommit,
    Mark::PoolWriteFailedTookBack,
    Mark::PoolReadBack,
    Mark::PoolTombstoneForgotten,
    Mark::PoolSnapshotInChunks,
    Mark::PoolCrashMidChunks,
    Mark::PoolCloseUndidClaim,
    Mark::PoolNoClaim,
];

impl Mark {
    pub fn name(self) -> &'static str {
        match self {
            Mark::GrantRacedCancel => "grant raced a cancel",
            Mark::WriteFailedWhileWaitersQueue => "storage write failed while waiters queue",
            Mark::SemaphoreHeadWaits => "semaphore head does not fit, newcomer queues",
            Mark::SemaphoreNoBargePastStalledHead => "semaphore room, head waits for a fence",
            Mark::ExpiryAndReleaseInOneInstant => "expiry and release in one instant",
            Mark::CloseWithWaitersOnManyKeys => "close with waiters on >= 3 keys",
            Mark::RevokeHandsKeyOn => "maxHold revoke hands the key on",
            Mark::WaitRanOut => "a wait ran out in line",
            Mark::CancelOfHead => "cancel of the head of a line",
            Mark::TryRefused => "try refused: key held",
            Mark::ReservationAskedEarly => "next ceiling asked at half a block",
            Mark::BlockRanOut => "a block ran out: holds wait for storage",
            Mark::UnknownWriteOutcome => "write failed but landed",
            Mark::CrashWithWriteInFlight => "crash with a write in flight",
            Mark::FencesUsedUp => "fences used up below 2^53",
            Mark::OverdueDeadline => "operation past a deadline, timer late",
            Mark::LeaseExpiryHandsKeyOn => "lease ttl runs out, key goes on",
            Mark::LeaseRenewed => "lease renewed",
            Mark::RenewOfLostLease => "renewal of a lost lease refused",
            Mark::AskAgainResumesLease => "asked again: same lease and fence",
            Mark::AskAgainKeepsPlace => "asked again: same place in line",
            Mark::AskedAfresh => "asked again after it ended: afresh",
            Mark::DropKeepsLease => "connection dropped, its lease lives",
            Mark::GoodbyeHandsKeyOn => "goodbye ends a lease, key goes on",
            Mark::ConnectionLimit => "connection limit refuses one more",
            Mark::UntimedNeedsTime => "fast path asks for the time",
            Mark::DropPutsWaitersAway => "connection dropped, its waiters away",
            Mark::AwayBackInPlace => "waiter away asks again: back in place",
            Mark::AwayRunsOut => "waiter away past its ttl: ended",
            Mark::LocalAdopted => "key granted by the host adopted: another asked",
            Mark::LocalAdoptedInto => "semaphore's permits adopted holder by holder",
            Mark::LocalPermit => "host granted itself another permit of a key",
            Mark::LentPartlyReclaimed => "lent block given back partly used",
            Mark::NameForgotten => "idle name forgotten, its old id dead",
            Mark::ForgetRefused => "forget refused: a key is busy",
            Mark::NameRegisteredAgain => "forgotten name registered again",
            Mark::PoolWaiterServed => "pool: a waiting claim took its units",
            Mark::PoolHeadOfLine => "pool: a claim that fits waits behind its head",
            Mark::PoolWaitRanOut => "pool: a claim's wait ran out",
            Mark::PoolIdKnown => "pool: an id asked again answers the first outcome",
            Mark::PoolIdJoined => "pool: an id asked again joins its claim",
            Mark::PoolTtlCameBack => "pool: a ttl claim's units came back",
            Mark::PoolGroupCommit => "pool: one write answered several claims",
            Mark::PoolWriteFailedTookBack => "pool: a failed write took its claims back",
            Mark::PoolReadBack => "pool: open claims read back after a restart",
            Mark::PoolTombstoneForgotten => "pool: an id forgotten after 24 hours",
            Mark::PoolSnapshotInChunks => "pool: a snapshot written in chunks",
            Mark::PoolCrashMidChunks => "pool: a crash between a snapshot's chunks",
            Mark::PoolCloseUndidClaim => "pool: the close undid a claim being written",
            Mark::PoolNoClaim => {
                "pool: a release or confirm of a claim then undone acted on nothing"
            }
        }
    }

    /// Whether a run must reach it: the late-timer corner only where some seeds' timers may be late.
    pub fn required(self, late_seeds: bool) -> bool {
        self != Mark::OverdueDeadline || late_seeds
    }
}

/// How often each mark was reached in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marks(pub [u64; MARKS.len()]);

// (Not derived: arrays of more than 32 have no `Default`.)
impl Default for Marks {
    fn default() -> Self {
        Marks([0; MARKS.len()])
    }
}

impl Marks {
    pub fn hit(&mut self, mark: Mark) {
        self.0[mark as usize] += 1;
    }

    pub fn count(&self, mark: Mark) -> u64 {
        self.0[mark as usize]
    }
}

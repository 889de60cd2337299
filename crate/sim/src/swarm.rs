//! The mix of a seed: the world a run happens in and how often each operation comes.
//!
//! Swarm testing (Groce et al., 2012; TigerBeetle's VOPR and wasmtime's `api_calls` do the same): rather
//! than one fixed mix for every run, each seed draws its own: how many locks and semaphores, their limits
//! and keys, the weight of every kind of operation (some left out altogether), how often storage fails
//! and how late it answers, how long waits and `maxHold`s are, where fences start. A run where cancels
//! are common and storage is slow reaches corners that an even mix dilutes away.
//!
//! # Invariant
//! The mix is a function of the seed alone: a failing seed replays with the same world, and a shrunk
//! sequence of operations (which names resources and keys by number) means the same thing again.

use holdfast_engine::fence::MAX_FENCE;
use holdfast_engine::Kind;

use crate::rng::Rng;

/// One lock or semaphore of the run.
#[derive(Clone, Debug)]
pub struct ResSpec {
    pub kind: Kind,
    pub name: String,
    /// 1 for a lock.
    pub limit: u32,
    /// How many distinct keys the run's holds use.
    pub keys: u8,
}

/// The kinds of operation, as the generator weighs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draw {
    Hold,
    Try,
    Release,
    CancelWaiting,
    CancelHolding,
    CancelGranted,
    CancelEnded,
    Again,
    TickSmall,
    TickBig,
    Deadline,
    WriteOk,
    WriteFail,
    Crash,
    Close,
    Burst,
    Bad,
    Late,
    Fire,
    Remote,
    AskAgain,
    Renew,
    ReleaseLease,
    CancelRequest,
    Drop,
    Goodbye,
    Local,
    LocalRelease,
    Forget,
    Claim,
    ClaimId,
    PoolRelease,
    PoolReleaseId,
    Confirm,
    PoolCancel,
    Resize,
    PoolWriteOk,
    PoolWriteFail,
}

pub const DRAWS: [Draw; 38] = [
    Draw::Hold,
    Draw::Try,
    Draw::Release,
    Draw::CancelWaiting,
    Draw::CancelHolding,
    Draw::CancelGranted,
    Draw::CancelEnded,
    Draw::Again,
    Draw::TickSmall,
    Draw::TickBig,
    Draw::Deadline,
    Draw::WriteOk,
    Draw::WriteFail,
    Draw::Crash,
    Draw::Close,
    Draw::Burst,
    Draw::Bad,
    Draw::Late,
    Draw::Fire,
    Draw::Remote,
    Draw::AskAgain,
    Draw::Renew,
    Draw::ReleaseLease,
    Draw::CancelRequest,
    Draw::Drop,
    Draw::Goodbye,
    Draw::Local,
    Draw::LocalRelease,
    Draw::Forget,
    Draw::Claim,
    Draw::ClaimId,
    Draw::PoolRelease,
    Draw::PoolReleaseId,
    Draw::Confirm,
    Draw::PoolCancel,
    Draw::Resize,
    Draw::PoolWriteOk,
    Draw::PoolWriteFail,
];

/// The pool draws, weighed only in runs that have pools (drawn last: see `Mix::draw`).
const POOL_DRAWS: [(Draw, u32); 9] = [
    (Draw::Claim, 12),
    (Draw::ClaimId, 12),
    (Draw::PoolRelease, 10),
    (Draw::PoolReleaseId, 3),
    (Draw::Confirm, 4),
    (Draw::PoolCancel, 3),
    (Draw::Resize, 2),
    (Draw::PoolWriteOk, 10),
    (Draw::PoolWriteFail, 2),
];

/// One pool of the run (issue #16).
#[derive(Clone, Debug)]
pub struct PoolSpec {
    pub name: String,
    pub capacity: u64,
}

/// The name of the lock that bursts use, registered after the mix's resources; no other operation
/// touches it.
pub const BURST_NAME: &str = "burst";

/// Everything a seed decides before its first operation.
#[derive(Clone, Debug)]
pub struct Mix {
    pub resources: Vec<ResSpec>,
    /// The fence ceiling storage holds when the run starts (`None`: a new store).
    pub stored: Option<u64>,
    /// Where the first process's clock starts.
    pub clock: u64,
    /// The weight of each of [`DRAWS`].
    pub weights: [u32; DRAWS.len()],
    /// Weights of a hold's wait: without limit, short, medium, long (a try is [`Draw::Try`]).
    pub waits: [u32; 4],
    /// Weights of a hold's maxHold: none, short, medium, long, exactly 30 days.
    pub max_holds: [u32; 5],
    /// Above this many live requests, no new hold is drawn (so that every step stays cheap).
    pub cap: usize,
    /// Whether the host's timer may be late: operations then come at a time past a deadline before
    /// the timer fires ([`Draw::Late`], [`Draw::Fire`]).
    pub late_timers: bool,
    /// How often (per mille) a hold or release takes the host's fast path (the untimed calls).
    pub fast: u64,
    /// Connections of clients in other processes (LOCK-05), numbered from 0.
    pub conns: u8,
    /// How many requests one connection may have (`Engine::set_connection_limit`).
    pub connection_limit: usize,
    /// Weights of a lease's ttl: the shortest (1 s), short, long.
    pub ttls: [u32; 3],
    /// The run's pools (none in about half the runs).
    pub pools: Vec<PoolSpec>,
    /// How many claim ids callers use (`i0`, `i1`, ...): few, so that they are asked again.
    pub claim_ids: u8,
    /// Weights of a claim's ttl: none, short, long.
    pub claim_ttls: [u32; 3],
}

impl Mix {
    pub fn draw(rng: &mut Rng, late_timers: bool) -> Mix {
        let locks = rng.range(1, 3);
        let semaphores = rng.range(0, 2);
        let mut resources = Vec::new();
        for i in 0..locks + semaphores {
            let kind = if i < locks {
                Kind::Lock
            } else {
                Kind::Semaphore
            };
            let limit = match kind {
                Kind::Lock => 1,
                Kind::Semaphore => [1, 2, 3, 4, 8][rng.below(5) as usize],
            };
            resources.push(ResSpec {
                kind,
                name: format!("r{i}"),
                limit,
                keys: rng.range(1, 6) as u8,
            });
        }
        let stored = match rng.below(100) {
            // Near the last fence: fences run out, and the store cannot open again.
            0..=9 => Some(MAX_FENCE - rng.range(1, 40)),
            10..=29 => Some(rng.below(1 << 40)),
            _ => None,
        };
        let mut weights = [0u32; DRAWS.len()];
        for (w, draw) in weights.iter_mut().zip(DRAWS) {
            let (base, optional) = match draw {
                // Drawn last (below), so that every other part of a seed's mix stays as it was
                // before they came: sequences shrunk from older runs mean the same thing.
                Draw::Local | Draw::LocalRelease | Draw::Forget => continue,
                Draw::Claim
                | Draw::ClaimId
                | Draw::PoolRelease
                | Draw::PoolReleaseId
                | Draw::Confirm
                | Draw::PoolCancel
                | Draw::Resize
                | Draw::PoolWriteOk
                | Draw::PoolWriteFail => continue,
                Draw::Hold => (40, false),
                Draw::Try => (10, true),
                Draw::Release => (30, false),
                Draw::CancelWaiting => (8, true),
                Draw::CancelHolding => (3, true),
                Draw::CancelGranted => (6, true),
                Draw::CancelEnded => (2, true),
                Draw::Again => (2, true),
                Draw::TickSmall => (15, false),
                Draw::TickBig => (2, true),
                Draw::Deadline => (6, true),
                Draw::WriteOk => (4, false),
                Draw::WriteFail => (2, true),
                Draw::Crash => (1, true),
                Draw::Close => (1, true),
                Draw::Burst => (1, true),
                Draw::Bad => (2, true),
                Draw::Late | Draw::Fire => (if late_timers { 8 } else { 0 }, false),
                Draw::Remote => (12, true),
                Draw::AskAgain => (5, true),
                Draw::Renew => (10, true),
                Draw::ReleaseLease => (6, true),
                Draw::CancelRequest => (3, true),
                Draw::Drop => (1, true),
                Draw::Goodbye => (1, true),
            };
            // Each kind comes 0 to 3 times as often as its base, and an optional one is left out of
            // a fifth of the runs.
            *w = if optional && rng.chance(200) {
                0
            } else {
                (base * rng.range(1, 12) as u32).div_ceil(4)
            };
        }
        // A third of the runs have no client over a connection at all.
        if rng.chance(333) {
            for d in [
                Draw::Remote,
                Draw::AskAgain,
                Draw::Renew,
                Draw::ReleaseLease,
                Draw::CancelRequest,
                Draw::Drop,
                Draw::Goodbye,
            ] {
                weights[d as usize] = 0;
            }
        }
        // Bursts cost up to a million grants each: a tenth of the runs make them.
        weights[Draw::Burst as usize] = u32::from(rng.chance(100));
        // Most runs answer storage writes promptly; some leave them waiting for hundreds of steps.
        if rng.chance(250) {
            weights[Draw::WriteOk as usize] = 1;
            weights[Draw::WriteFail as usize] = weights[Draw::WriteFail as usize].min(1);
        }
        let mut waits = [0u32; 4];
        let mut max_holds = [0u32; 5];
        for w in waits.iter_mut().chain(max_holds.iter_mut()) {
            *w = if rng.chance(250) {
                0
            } else {
                rng.range(1, 10) as u32
            };
        }
        waits[0] = waits[0].max(1);
        max_holds[0] = max_holds[0].max(1);
        let mut mix = Mix {
            resources,
            stored,
            clock: rng.below(1 << 40),
            weights,
            waits,
            max_holds,
            cap: rng.range(4, 48) as usize,
            late_timers,
            fast: [0, 500, 1000][rng.below(3) as usize],
            conns: rng.range(1, 4) as u8,
            connection_limit: if rng.chance(300) {
                rng.range(1, 6) as usize
            } else {
                holdfast_engine::CONNECTION_LIMIT
            },
            ttls: [
                rng.range(0, 3) as u32,
                rng.range(1, 10) as u32,
                rng.range(0, 3) as u32,
            ],
            pools: Vec::new(),
            claim_ids: 0,
            claim_ttls: [1, 0, 0],
        };
        // The host's own grants from lent fences, in four runs of five; drawn after everything else.
        for (draw, base) in [(Draw::Local, 12), (Draw::LocalRelease, 8)] {
            mix.weights[draw as usize] = if rng.chance(200) {
                0
            } else {
                (base * rng.range(1, 12) as u32).div_ceil(4)
            };
        }
        // Names forgotten and registered again, in four runs of five; drawn after the rest.
        mix.weights[Draw::Forget as usize] = if rng.chance(200) {
            0
        } else {
            (4 * rng.range(1, 12) as u32).div_ceil(4)
        };
        // Pools (issue #16), in about half the runs; drawn after everything else, so that the rest of
        // a seed's mix is what it was before them.
        if rng.chance(500) {
            for i in 0..rng.range(1, 2) {
                mix.pools.push(PoolSpec {
                    name: format!("p{i}"),
                    capacity: rng.range(1, 12),
                });
            }
            mix.claim_ids = rng.range(1, 8) as u8;
            mix.claim_ttls = [
                rng.range(1, 6) as u32,
                rng.range(0, 3) as u32,
                rng.range(0, 2) as u32,
            ];
            for (draw, base) in POOL_DRAWS {
                mix.weights[draw as usize] = if draw != Draw::PoolWriteOk && rng.chance(150) {
                    0
                } else {
                    (base * rng.range(1, 12) as u32).div_ceil(4)
                };
            }
        }
        mix
    }
}

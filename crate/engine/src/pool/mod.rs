//! Pools: finite counts of units, claimed `n` at a time and never below zero (issue #16).
//!
//! A *pool* is a name with a capacity, fixed by its first use ([`Pools::pool`]; asked again with
//! another capacity it is `invalid`, naming both; [`Pools::resize`] changes it, never below what is
//! claimed). A *claim* takes 1 to capacity units under a claim id of the host's (the user's, or one
//! the host drew), and holds them until it is released (once), or until its `ttl` runs out unless
//! it was confirmed first. Pools and their claims are durable: every change is written to storage
//! (`log.rs`), and a store that opens again reads them back.
//!
//! # The rules
//! - **POOL-01**: `0 <= remaining <= capacity`, where `remaining = capacity - claimed` and `claimed`
//!   is the sum of the open claims' units. A claim takes units only if they are there; a release
//!   gives back exactly what its claim took, once; a resize never goes below `claimed`.
//! - **POOL-02, storage before answers**: a claim that took units is answered ([`crate::Event::Claimed`])
//!   only once storage acknowledged the write that keeps it; so is a release, a confirm or a resize
//!   ([`crate::Event::Durable`]). Writes are grouped: at most one is under way, and it carries every change
//!   made before the host took it ([`Pools::poll_write`]), however many claims those were; the host
//!   takes the next one when it likes (once a turn of its event loop). A failed write answers its
//!   claims [`crate::Event::PoolFailed`] and gives their units back; the next write is then a snapshot
//!   of everything (see `log.rs`), so storage never keeps a chain with an unknown link. A release is
//!   answered once written too (so that a release answered is never undone by a crash); expiries
//!   answer nobody (one lost with a crash comes again at the next open: its ttl has passed).
//! - **POOL-03, ids**: a claim id asked again in its pool answers the first claim: while it waits or
//!   is being written, the host's request joins the first ([`Claim::Joined`]); once answered, the
//!   first outcome ([`Claim::Known`]: its `remaining`, and whether it still holds its units), for as
//!   long as the claim is open and, if its id is *remembered*, for 24 hours after it took its units
//!   (a tombstone, with a deadline). A claim that took nothing (refused, or its wait ran out) leaves
//!   nothing behind: asked again, it is a new claim. Asked again with another `n`, `invalid`.
//!   The first ask's `ttl` stands; a waiting claim waits as long as the longest wait of its asks
//!   (the host answers each ask by its own wait and signal, and cancels the claim once none wants it).
//! - **POOL-04, the line**: a claim that does not fit (or finds others waiting: nobody barges) waits
//!   in its pool's line, if its `wait` allows, FIFO with head-of-line blocking: the head takes its
//!   units as soon as they are there, and nobody behind it goes first, even one that would fit. A
//!   waiting claim leaves the line when its wait runs out ([`crate::Event::NotClaimed`]), when the host
//!   cancels it, when a resize makes it larger than the pool, or when the store closes.
//! - **Only a claim answered as taken holds units**: one answered anything else (refused, its wait
//!   run out, cancelled, its write failed, the store closed) took nothing: in memory at once, and in
//!   storage once the next write lands (an undo after its claim's record, or, after a failed write,
//!   a snapshot). A claim that took its units and whose write is not yet answered when the host
//!   cancels it or the store closes is undone ([`Pools::cancel`], [`Pools::close`]).
//! - **A release or confirm acts on a claim, not on an id**: one of a claim still being written is
//!   tied to it; if that claim is then undone (its write failed, it was cancelled, the store
//!   closed), it took nothing, and the release or confirm is answered as one of an id no open claim
//!   has ([`crate::Event::NoClaim`]: a release `false`, a confirm `lost`), never as done: else a
//!   confirm of a claim that took nothing was answered kept, and another process believing it
//!   thought it held units that were back in the pool.
//! - **A release, confirm or resize is answered what happened**: one whose write is under way (or
//!   waits for the next) when the store closes is not ended by the close; the host's writes after
//!   the close keep it, and their outcome answers it ([`Pools::close`]).
//! - Deadlines (waits, ttls, tombstones) are acted on first by every call that takes `now`, as the
//!   engine's are (calling rule 1), at their instant.
//!
//! Pool requests (a waiting claim, a claim or confirm or resize waiting for its write) are named by
//! ids of their own slab: the host keeps them apart from holds. Claims are named by their pool and
//! claim id. Pools are never forgotten: their capacity is part of what storage keeps.

mod claim;
mod log;
mod write;

pub use log::{
    chunk_key, head_key, slot_key, PoolLoad, MAX_VALUE_BYTES, MIN_VALUE_BYTES, SLOTS, SNAPSHOT_KEY,
};

use std::collections::HashMap;

use crate::bounds;
use crate::error::Error;
use crate::line::Line;
use crate::slab::{Id, Slab};
use crate::timers::{Due, Entry, Timers};
use log::{Clock, Record};

/// How long a remembered claim id is kept after its claim took its units.
pub const TOMBSTONE_MS: u64 = 24 * 3_600_000;

/// A pool, as [`Pools::pool`] named it: its place (pools are never forgotten).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolId(u32);

impl PoolId {
    pub fn to_u64(self) -> u64 {
        u64::from(self.0)
    }

    /// The id an earlier [`PoolId::to_u64`] gave, or `None` when `raw` cannot be one.
    pub fn from_u64(raw: u64) -> Option<PoolId> {
        u32::try_from(raw).ok().map(PoolId)
    }
}

/// The answer of [`Pools::claim`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// It took its units; [`crate::Event::Claimed`] answers it once storage kept it.
    Writing { req: Id },
    /// It waits in line; an event answers it.
    Queued { req: Id },
    /// Its id is a claim that still waits, in line or for its write: the host answers this ask
    /// with that request's answer.
    Joined { req: Id },
    /// It does not fit (or others wait) and it would not wait: nothing changed.
    Refused { remaining: u64 },
    /// Its id took units before (POOL-03): the first outcome, and whether it still holds them.
    Known { remaining: u64, open: bool },
}

/// The answer of [`Pools::confirm`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Confirm {
    /// Its ttl is gone; [`crate::Event::Durable`] answers once storage kept that.
    Writing { req: Id },
    /// It had no ttl: nothing to do.
    Done,
    /// No open claim has that id (released, expired, never claimed): the host answers `lost`.
    Gone,
}

/// One pool, as [`Pools::views`] sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolView {
    pub pool: PoolId,
    pub name: String,
    pub capacity: u64,
    pub remaining: u64,
    /// Open claims (holding units).
    pub claims: u32,
    /// Claims waiting in line.
    pub waiting: u32,
}

/// One write of pools to storage: set each key of `sets` to its value, in order (each set after
/// the one before it was done), then answer [`Pools::written`] or [`Pools::write_failed`] with
/// `seq`. No value is longer than [`MAX_VALUE_BYTES`]. A crash after any prefix of the sets, or a
/// failure, loses no change acknowledged before (`log.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolWrite {
    pub seq: u64,
    /// A snapshot (its chunks, then its head), or else one segment.
    pub snapshot: bool,
    /// `(key, value)`, to set in order.
    pub sets: Vec<(String, String)>,
}

#[derive(Debug)]
struct Pool {
    name: String,
    capacity: u64,
    /// The units of its open claims.
    claimed: u64,
    /// Its claims, open and tombstones, by claim id.
    ids: HashMap<String, Id>,
    /// Its waiting claims by claim id.
    waiting: HashMap<String, Id>,
    line: Line,
}

#[derive(Debug)]
struct ClaimRec {
    pool: u32,
    id: String,
    n: u64,
    /// When it took its units, on the wall clock (as storage keeps it).
    at_wall: u64,
    /// When its tombstone is forgotten: 24 hours after it took its units.
    forget: u64,
    /// When its units come back unless confirmed.
    ttl: Option<u64>,
    remember: bool,
    /// What was left right after it took its units.
    first: u64,
    /// Holding its units; else a tombstone (until `at + TOMBSTONE_MS`).
    open: bool,
    /// The request that waits for the write of this claim, until it is answered.
    writing: Option<Id>,
}

#[derive(Debug)]
enum PoolReq {
    Waiting {
        pool: u32,
        n: u64,
        id: String,
        remember: bool,
        ttl: Option<u64>,
        deadline: Option<u64>,
    },
    /// Took its units; answered when the write that keeps them is acknowledged.
    Claiming { claim: Id, first: u64 },
    /// A confirm or resize, answered when its write is acknowledged.
    Barrier,
}

/// The write under way.
#[derive(Debug)]
struct Inflight {
    seq: u64,
    /// The generation of its snapshot (`None`: a segment).
    gen: Option<u8>,
    records: u64,
    /// The requests it answers.
    reqs: Vec<Id>,
}

/// What is written, and what waits for it (group commit).
#[derive(Debug, Default)]
struct Writer {
    /// Changes since the last write was taken.
    pending: Vec<Record>,
    /// Whether there is something to write: changes, or a snapshot owed after a failure.
    dirty: bool,
    /// The next write must be a snapshot (no snapshot yet, or the last write failed).
    snapshot_due: bool,
    /// The number of the last write taken (or read back).
    seq: u64,
    /// The generation of the last snapshot acknowledged (or read back): never written over until
    /// another is acknowledged (`log.rs`).
    acked_gen: Option<u8>,
    /// Segments and changes written since the last snapshot.
    segments: u64,
    records: u64,
    inflight: Option<Inflight>,
    /// Requests answered by the next write.
    next: Vec<Id>,
}

/// Every pool of a store, its claims, its lines and its writes.
pub struct Pools {
    pools: Vec<Pool>,
    by_name: HashMap<String, u32>,
    claims: Slab<ClaimRec>,
    reqs: Slab<PoolReq>,
    timers: Timers,
    writer: Writer,
    /// The releases and confirms made of a claim still being written, by that claim's request: if
    /// the claim is undone they acted on nothing ([`crate::Event::NoClaim`]); once it is answered
    /// taken, they are as any other.
    ties: HashMap<Id, Vec<Id>>,
    clock: Clock,
    /// Whether [`Pools::open`] may still read storage back (only before any pool is named).
    fresh: bool,
    /// The longest value a write hands the host ([`MAX_VALUE_BYTES`] unless a test lowered it).
    value_limit: usize,
}

impl Default for Pools {
    fn default() -> Self {
        Pools {
            pools: Vec::new(),
            by_name: HashMap::new(),
            claims: Slab::default(),
            reqs: Slab::default(),
            timers: Timers::default(),
            writer: Writer {
                snapshot_due: true,
                ..Writer::default()
            },
            ties: HashMap::new(),
            clock: Clock::default(),
            fresh: true,
            value_limit: MAX_VALUE_BYTES,
        }
    }
}

fn is_waiting(reqs: &Slab<PoolReq>, id: Id) -> bool {
    matches!(reqs.get(id), Some(PoolReq::Waiting { .. }))
}

fn timer_is_live(reqs: &Slab<PoolReq>, claims: &Slab<ClaimRec>, entry: &Entry) -> bool {
    match entry.due() {
        Due::Wait => matches!(
            reqs.get(entry.req()),
            Some(PoolReq::Waiting { deadline: Some(at), .. }) if *at == entry.at()
        ),
        Due::Expire => matches!(
            claims.get(entry.req()),
            Some(ClaimRec { open: true, ttl: Some(at), .. }) if *at == entry.at()
        ),
        Due::Forget => matches!(
            claims.get(entry.req()),
            Some(c) if !c.open && c.forget == entry.at()
        ),
        _ => false,
    }
}

impl Pool {
    fn remaining(&self) -> u64 {
        self.capacity - self.claimed
    }

    fn place(&self) -> String {
        format!("pool {}", self.name)
    }
}

/// Names and reads.
impl Pools {
    /// Names (or makes) the pool `name` of `capacity` units. Asked again with another capacity,
    /// `invalid` naming both (use [`Pools::resize`]).
    pub fn pool(&mut self, name: &str, capacity: u64) -> Result<PoolId, Error> {
        bounds::check_name(name)?;
        bounds::check_capacity(&format!("pool {name}"), capacity)?;
        self.fresh = false;
        if let Some(&p) = self.by_name.get(name) {
            let had = self.pools[p as usize].capacity;
            if had != capacity {
                return Err(Error::invalid(format!(
                    "pool {name}: capacity {capacity} differs from its capacity {had} (resize changes it)"
                )));
            }
            return Ok(PoolId(p));
        }
        if self.pools.len() >= bounds::MAX_POOLS {
            return Err(Error::limit(format!(
                "pool {name}: {} pools is the most one store keeps",
                bounds::MAX_POOLS
            )));
        }
        let p = self.add_pool(name, capacity);
        self.log(Record::Pool {
            pool: name.to_owned(),
            capacity,
        });
        Ok(PoolId(p))
    }

    /// The pool of this name, if one was made.
    pub fn find(&self, name: &str) -> Option<PoolId> {
        self.by_name.get(name).map(|&p| PoolId(p))
    }

    fn add_pool(&mut self, name: &str, capacity: u64) -> u32 {
        let p = u32::try_from(self.pools.len()).expect("fewer than 2^32 pools");
        self.pools.push(Pool {
            name: name.to_owned(),
            capacity,
            claimed: 0,
            ids: HashMap::new(),
            waiting: HashMap::new(),
            line: Line::default(),
        });
        self.by_name.insert(name.to_owned(), p);
        p
    }

    fn index(&self, pool: PoolId) -> Result<usize, Error> {
        let p = pool.0 as usize;
        if p < self.pools.len() {
            Ok(p)
        } else {
            Err(Error::invalid(format!("unknown pool {}", pool.0)))
        }
    }

    /// The name, capacity and remaining units of a pool.
    pub fn info(&self, pool: PoolId) -> Option<(&str, u64, u64)> {
        let p = self.pools.get(pool.0 as usize)?;
        Some((&p.name, p.capacity, p.remaining()))
    }

    /// Whether pool request `req` is a claim waiting in line (not one that took its units, nor ended).
    pub fn waits(&self, req: Id) -> bool {
        matches!(self.reqs.get(req), Some(PoolReq::Waiting { .. }))
    }

    /// Whether `id` names a claim of `pool` that took its units and gave them back (released, or its
    /// ttl ran out), its id still remembered (a tombstone).
    pub fn handed_back(&self, pool: PoolId, id: &str) -> bool {
        self.kept_open(pool, id) == Some(false)
    }

    /// Whether `id` names an open claim of `pool`: one that holds its units (a read: a ttl run out
    /// but not yet acted on still holds them).
    pub fn is_open(&self, pool: PoolId, id: &str) -> bool {
        self.kept_open(pool, id) == Some(true)
    }

    /// Whether the claim `id` of `pool` is open, if it is kept (open, or a tombstone).
    fn kept_open(&self, pool: PoolId, id: &str) -> Option<bool> {
        let &cid = self.pools[self.index(pool).ok()?].ids.get(id)?;
        Some(self.claims.get(cid).expect("kept").open)
    }

    /// Units left in a pool.
    pub fn remaining(&self, pool: PoolId) -> Result<u64, Error> {
        Ok(self.pools[self.index(pool)?].remaining())
    }

    /// Every pool, in the order they were made.
    pub fn views(&self) -> Vec<PoolView> {
        let mut open = vec![0u32; self.pools.len()];
        for (_, c) in self.claims.iter() {
            if c.open {
                open[c.pool as usize] += 1;
            }
        }
        self.pools
            .iter()
            .enumerate()
            .map(|(p, pool)| PoolView {
                pool: PoolId(p as u32),
                name: pool.name.clone(),
                capacity: pool.capacity,
                remaining: pool.remaining(),
                claims: open[p],
                waiting: pool.line.active(),
            })
            .collect()
    }

    /// Claims kept (open and tombstones) and pool requests live: for tests of memory bounds.
    pub fn counts(&self) -> (usize, usize) {
        (self.claims.len(), self.reqs.len())
    }

    fn log(&mut self, record: Record) {
        self.writer.pending.push(record);
        self.writer.dirty = true;
    }
}

impl Pools {
    /// Checks the invariants of the module docs (POOL-01 first); panics naming the first broken
    /// one. For tests and the simulation; O(everything).
    pub fn check(&self) {
        let mut claimed = vec![0u64; self.pools.len()];
        let mut kept = vec![0usize; self.pools.len()];
        for (cid, c) in self.claims.iter() {
            let p = c.pool as usize;
            kept[p] += 1;
            assert_eq!(
                self.pools[p].ids.get(&c.id),
                Some(&cid),
                "a claim is found by its id"
            );
            assert!(c.n >= 1, "a claim of no units");
            if c.open {
                claimed[p] += c.n;
            } else {
                assert!(c.ttl.is_none(), "a tombstone with a ttl");
            }
            if let Some(req) = c.writing {
                assert!(
                    matches!(self.reqs.get(req), Some(PoolReq::Claiming { claim, .. }) if *claim == cid),
                    "a claim being written has its request"
                );
            }
        }
        for (p, pool) in self.pools.iter().enumerate() {
            assert_eq!(
                pool.claimed, claimed[p],
                "pool {}: units claimed",
                pool.name
            );
            assert!(
                pool.claimed <= pool.capacity,
                "POOL-01: pool {}: remaining below zero ({} claimed of {})",
                pool.name,
                pool.claimed,
                pool.capacity
            );
            assert_eq!(pool.ids.len(), kept[p], "pool {}: claims by id", pool.name);
            assert_eq!(
                pool.line.waiting() as usize,
                pool.waiting.len(),
                "pool {}: waiting claims",
                pool.name
            );
            assert_eq!(pool.line.active(), pool.line.waiting(), "nobody is away");
            for (id, &req) in &pool.waiting {
                assert!(
                    matches!(self.reqs.get(req), Some(PoolReq::Waiting { pool: q, id: i, .. }) if *q as usize == p && i == id),
                    "pool {}: a waiting claim by its id",
                    pool.name
                );
            }
            // POOL-04: a head that fits has taken its units (work-conserving).
            let head = pool.line.ids().find_map(|r| match self.reqs.get(r) {
                Some(PoolReq::Waiting { n, .. }) => Some(*n),
                _ => None,
            });
            if let Some(n) = head {
                assert!(
                    n > pool.remaining(),
                    "pool {}: its head fits and waits",
                    pool.name
                );
            }
        }
        let waiting = self
            .reqs
            .iter()
            .filter(|(_, r)| matches!(r, PoolReq::Waiting { .. }))
            .count();
        let lines: usize = self.pools.iter().map(|p| p.waiting.len()).sum();
        assert_eq!(waiting, lines, "every waiting claim is in its line");
        for req in self.ties.keys() {
            assert!(
                matches!(self.reqs.get(*req), Some(PoolReq::Claiming { .. })),
                "a release or confirm is tied only to a claim being written"
            );
        }
    }
}

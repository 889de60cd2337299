//! Pools (issue #16), as plainly as they can be said: a `Vec` of claims per pool, found by looking
//! at every one, a `VecDeque` line, and what storage keeps as a copy of the whole state taken when a
//! write was taken.
//!
//! # The rules it states
//! - POOL-01: `remaining = capacity - (units of the open claims)`, never below zero: a claim takes
//!   units only when its pool's line is empty and they are there; a release gives back exactly its
//!   claim's units, once; a resize never goes below what is claimed.
//! - POOL-02: a claim that took units is answered (`Claimed`) only when the write taken after it is
//!   acknowledged; so are a release, a confirm and a resize (`Durable`). One write is under way at a
//!   time and carries everything changed before it was taken. A failed write answers its requests
//!   `PoolFailed`; its claims are taken back as if they never were; the rest stands. What a new
//!   process reads back is the state as it was when the last write that reached the disk was taken
//!   (acknowledged or not): nothing of a write that did not land, everything of one that did.
//! - POOL-03: a claim id asked again answers its claim: joined while it waits or is written, else its
//!   first outcome, while open and, remembered, until 24 hours after it took its units (by the wall
//!   clock, across restarts: a tombstone from before the process began ends no earlier than the
//!   process's start). Another `n` is `invalid`. An id that took nothing is kept nowhere.
//! - POOL-04: waiting claims are served from the head, in order; the head blocks those behind it;
//!   nobody barges (a claim finds the line empty or waits). A wait that runs out leaves
//!   (`NotClaimed`); a resize below a waiter's `n` sends it away (`NotClaimed`), in line order. A
//!   claim cancelled after it took its units but before it was answered is undone as if it never was
//!   (no tombstone: asked again, it is a new claim).
//! - Deadlines, instant by instant: at one instant the waits that ran out leave (in id order), the
//!   ttls give their units back, each pool's line takes what fits (in pool order), and tombstones are
//!   forgotten.
//! - A release or confirm acts on a claim: one made while its claim is being written is tied to it,
//!   and if that claim is then undone (its write failed, a cancel, the close) it acted on nothing:
//!   answered `NoClaim` at once (right after its claim's `PoolFailed`), never by a write.
//! - `close` ends every claim waiting or being written (`PoolEnded`, in id order); one that took its
//!   units and was not yet answered is undone as a cancel undoes it (its caller is told `closed`: it
//!   holds nothing); what changed is still written, and a release, confirm or resize waiting for its
//!   write is answered by it (`Durable`, `PoolFailed`), as before the close.

use std::collections::{BTreeMap, VecDeque};

use holdfast_engine::bounds::{MAX_CAPACITY, MAX_CLAIM_ID_BYTES, MAX_HOLD_MS, MAX_WAITERS};
use holdfast_engine::pool::TOMBSTONE_MS;
use holdfast_engine::{Cancelled, Claim, Confirm, Error, Event, Failure, Id, PoolId, PoolView};

use super::{refuse, same};

/// A claim, open or a tombstone.
#[derive(Clone, Debug)]
pub struct MClaim {
    pub id: String,
    pub n: u64,
    pub at_wall: u64,
    /// When its tombstone is forgotten (this process's clock).
    pub forget: u64,
    /// When its units come back (this process's clock).
    pub ttl: Option<u64>,
    pub remember: bool,
    pub first: u64,
    pub open: bool,
    pub writing: Option<Id>,
}

#[derive(Clone, Debug)]
pub struct MPool {
    pub name: String,
    pub capacity: u64,
    pub claims: Vec<MClaim>,
    pub line: VecDeque<Id>,
}

impl MPool {
    pub fn claimed(&self) -> u64 {
        self.claims.iter().filter(|c| c.open).map(|c| c.n).sum()
    }

    pub fn remaining(&self) -> u64 {
        self.capacity - self.claimed()
    }

    fn find(&self, id: &str) -> Option<usize> {
        self.claims.iter().position(|c| c.id == id)
    }
}

/// A claim as storage keeps it: times on the wall clock.
#[derive(Clone, Debug)]
pub struct DClaim {
    pub id: String,
    pub n: u64,
    pub at_wall: u64,
    pub ttl_wall: Option<u64>,
    pub remember: bool,
    pub first: u64,
    pub open: bool,
}

/// A pool as storage keeps it.
#[derive(Clone, Debug)]
pub struct DPool {
    pub name: String,
    pub capacity: u64,
    pub claims: Vec<DClaim>,
}

#[derive(Clone, Debug)]
pub enum MReq {
    Waiting {
        pool: usize,
        n: u64,
        id: String,
        remember: bool,
        ttl: Option<u64>,
        deadline: Option<u64>,
    },
    Claiming {
        pool: usize,
        id: String,
        first: u64,
        /// The releases and confirms made of its claim while it was being written.
        tied: Vec<Id>,
    },
    Barrier,
}

/// The pools of one process.
#[derive(Clone, Debug, Default)]
pub struct PoolModel {
    pub pools: Vec<MPool>,
    pub reqs: BTreeMap<Id, MReq>,
    /// Requests the next write answers.
    next: Vec<Id>,
    /// The write under way: the requests it answers, and the state storage keeps once it lands.
    pub inflight: Option<(Vec<Id>, Vec<DPool>)>,
    dirty: bool,
    /// `wall = now + offset`.
    offset: i128,
}

fn mono(offset: i128, wall: u64) -> u64 {
    (i128::from(wall) - offset).clamp(0, i128::from(u64::MAX)) as u64
}

impl PoolModel {
    /// A process's pools, read back from what storage keeps (`durable`), at `now` on its clock with
    /// `wall = now + offset`: tombstones past their 24 hours are not read back.
    pub fn open(durable: &[DPool], now: u64, offset: i128) -> PoolModel {
        let wall = (i128::from(now) + offset) as u64;
        let pools = durable
            .iter()
            .map(|d| MPool {
                name: d.name.clone(),
                capacity: d.capacity,
                claims: d
                    .claims
                    .iter()
                    .filter(|c| c.open || c.at_wall.saturating_add(TOMBSTONE_MS) > wall)
                    .map(|c| MClaim {
                        id: c.id.clone(),
                        n: c.n,
                        at_wall: c.at_wall,
                        forget: mono(offset, c.at_wall.saturating_add(TOMBSTONE_MS)),
                        ttl: if c.open {
                            c.ttl_wall.map(|w| mono(offset, w))
                        } else {
                            None
                        },
                        remember: c.remember,
                        first: c.first,
                        open: c.open,
                        writing: None,
                    })
                    .collect(),
                line: VecDeque::new(),
            })
            .collect();
        PoolModel {
            pools,
            offset,
            ..PoolModel::default()
        }
    }

    fn wall(&self, now: u64) -> u64 {
        (i128::from(now) + self.offset).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The state storage keeps, as of now.
    fn durable(&self) -> Vec<DPool> {
        self.pools
            .iter()
            .map(|p| DPool {
                name: p.name.clone(),
                capacity: p.capacity,
                claims: p
                    .claims
                    .iter()
                    .map(|c| DClaim {
                        id: c.id.clone(),
                        n: c.n,
                        at_wall: c.at_wall,
                        ttl_wall: c.ttl.map(|t| self.wall(t)),
                        remember: c.remember,
                        first: c.first,
                        open: c.open,
                    })
                    .collect(),
            })
            .collect()
    }

    /// `Engine::pool`: the pool of `name`, made if new.
    pub fn pool(
        &mut self,
        name: &str,
        capacity: u64,
        got: &Result<PoolId, Error>,
    ) -> Result<usize, String> {
        if let Some(p) = self.pools.iter().position(|p| p.name == name) {
            if self.pools[p].capacity != capacity {
                refuse("invalid", got)?;
                return Ok(p);
            }
            same("pool", PoolId::from_u64(p as u64).unwrap(), got)?;
            return Ok(p);
        }
        let p = self.pools.len();
        same("pool", PoolId::from_u64(p as u64).unwrap(), got)?;
        self.pools.push(MPool {
            name: name.to_owned(),
            capacity,
            claims: Vec::new(),
            line: VecDeque::new(),
        });
        self.dirty = true;
        Ok(p)
    }

    /// `Engine::claim` (deadlines already acted on by the caller).
    #[allow(clippy::too_many_arguments)]
    pub fn claim(
        &mut self,
        p: usize,
        n: u64,
        id: &str,
        remember: bool,
        wait: Option<u64>,
        ttl: Option<u64>,
        now: u64,
        got: &Result<Claim, Error>,
    ) -> Result<(), String> {
        let pool = &self.pools[p];
        if id.is_empty()
            || id.len() > MAX_CLAIM_ID_BYTES
            || ttl.is_some_and(|t| !(1..=MAX_HOLD_MS).contains(&t))
            || n == 0
        {
            return refuse("invalid", got);
        }
        if let Some(c) = pool.find(id).map(|i| &pool.claims[i]) {
            if c.n != n {
                return refuse("invalid", got);
            }
            let want = match c.writing {
                Some(req) => Claim::Joined { req },
                None => Claim::Known {
                    remaining: c.first,
                    open: c.open,
                },
            };
            return same("claim asked again", want, got);
        }
        let waiting = pool
            .line
            .iter()
            .copied()
            .find(|r| matches!(&self.reqs[r], MReq::Waiting { id: i, .. } if i == id));
        if let Some(req) = waiting {
            let Some(MReq::Waiting {
                n: had, deadline, ..
            }) = self.reqs.get_mut(&req)
            else {
                unreachable!()
            };
            if *had != n {
                return refuse("invalid", got);
            }
            // Joined, it waits as long as the longest of its asks.
            let wanted = wait.map(|w| now.saturating_add(w));
            if deadline.is_some_and(|at| wanted.is_none_or(|w| w > at)) {
                *deadline = wanted;
            }
            return same(
                "claim asked again while waiting",
                Claim::Joined { req },
                got,
            );
        }
        // Only a new claim is held to the capacity: an id asked again answers its first outcome,
        // also after a resize below what it took (POOL-03).
        if n > pool.capacity {
            return refuse("invalid", got);
        }
        if pool.line.is_empty() && n <= pool.remaining() {
            let req = match got {
                Ok(Claim::Writing { req }) => *req,
                other => {
                    return Err(format!(
                        "claim: the model takes {n} units at once, the engine answered {other:?}"
                    ))
                }
            };
            self.fresh(req)?;
            self.reqs.insert(req, MReq::Barrier);
            self.take(p, req, n, id.to_owned(), remember, ttl, now);
            return Ok(());
        }
        if wait == Some(0) {
            return same(
                "claim that would not wait",
                Claim::Refused {
                    remaining: pool.remaining(),
                },
                got,
            );
        }
        if pool.line.len() >= MAX_WAITERS as usize {
            return refuse("limit", got);
        }
        let req = match got {
            Ok(Claim::Queued { req }) => *req,
            other => {
                return Err(format!(
                    "claim: the model queues it, the engine answered {other:?}"
                ))
            }
        };
        self.fresh(req)?;
        self.reqs.insert(
            req,
            MReq::Waiting {
                pool: p,
                n,
                id: id.to_owned(),
                remember,
                ttl,
                deadline: wait.map(|w| now.saturating_add(w)),
            },
        );
        self.pools[p].line.push_back(req);
        Ok(())
    }

    /// The request the engine named for a change the model writes (a release, confirm or resize):
    /// `req`, read from its answer `got`, new.
    fn written_by<T: std::fmt::Debug>(
        &self,
        what: &str,
        req: Option<Id>,
        got: &Result<T, Error>,
    ) -> Result<Id, String> {
        let req =
            req.ok_or_else(|| format!("{what}: the model writes it, the engine answered {got:?}"))?;
        self.fresh(req)?;
        Ok(req)
    }

    fn fresh(&self, req: Id) -> Result<(), String> {
        if self.reqs.contains_key(&req) {
            return Err(format!(
                "pool request id {req:?} handed out again while live"
            ));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn take(
        &mut self,
        p: usize,
        req: Id,
        n: u64,
        id: String,
        remember: bool,
        ttl: Option<u64>,
        now: u64,
    ) {
        let at_wall = self.wall(now);
        let pool = &mut self.pools[p];
        let first = pool.remaining() - n;
        pool.claims.push(MClaim {
            id: id.clone(),
            n,
            at_wall,
            forget: now.saturating_add(TOMBSTONE_MS),
            ttl: ttl.map(|t| now.saturating_add(t)),
            remember,
            first,
            open: true,
            writing: Some(req),
        });
        self.reqs.insert(
            req,
            MReq::Claiming {
                pool: p,
                id,
                first,
                tied: Vec::new(),
            },
        );
        self.next.push(req);
        self.dirty = true;
    }

    /// An open claim gives its units back; kept as a tombstone while remembered.
    fn give_back(&mut self, p: usize, i: usize, now: u64) {
        let c = &mut self.pools[p].claims[i];
        c.open = false;
        c.ttl = None;
        if !(c.remember && c.forget > now) {
            self.pools[p].claims.remove(i);
        }
        self.dirty = true;
    }

    /// `Engine::release_claim`.
    pub fn release(
        &mut self,
        p: usize,
        id: &str,
        now: u64,
        got: &Result<Option<Id>, Error>,
    ) -> Result<(), String> {
        let Some(i) = self.pools[p]
            .find(id)
            .filter(|&i| self.pools[p].claims[i].open)
        else {
            return same("release_claim", None, got);
        };
        let req = self.written_by("release_claim", got.as_ref().ok().copied().flatten(), got)?;
        let writing = self.pools[p].claims[i].writing;
        self.give_back(p, i, now);
        self.pump(p, now);
        self.reqs.insert(req, MReq::Barrier);
        self.next.push(req);
        self.tie(writing, req);
        Ok(())
    }

    /// A release or confirm `req` of a claim still written by request `writing`.
    fn tie(&mut self, writing: Option<Id>, req: Id) {
        if let Some(Some(MReq::Claiming { tied, .. })) = writing.map(|w| self.reqs.get_mut(&w)) {
            tied.push(req);
        }
    }

    /// The claim of request `tied`'s releases and confirms took nothing: they acted on nothing.
    fn untie(&mut self, tied: Vec<Id>, events: &mut Vec<Event>) {
        for req in tied {
            if matches!(self.reqs.get(&req), Some(MReq::Barrier)) {
                self.reqs.remove(&req);
                events.push(Event::NoClaim { req });
            }
        }
    }

    /// `Engine::confirm_claim`.
    pub fn confirm(
        &mut self,
        p: usize,
        id: &str,
        got: &Result<Confirm, Error>,
    ) -> Result<(), String> {
        let pool = &mut self.pools[p];
        let Some(c) = pool
            .find(id)
            .map(|i| &mut pool.claims[i])
            .filter(|c| c.open)
        else {
            return same("confirm", Confirm::Gone, got);
        };
        if c.ttl.take().is_none() {
            return same("confirm", Confirm::Done, got);
        }
        let writing = c.writing;
        let req = match got {
            Ok(Confirm::Writing { req }) => Some(*req),
            _ => None,
        };
        let req = self.written_by("confirm", req, got)?;
        self.reqs.insert(req, MReq::Barrier);
        self.next.push(req);
        self.tie(writing, req);
        self.dirty = true;
        Ok(())
    }

    /// `Engine::resize_pool`.
    pub fn resize(
        &mut self,
        p: usize,
        capacity: u64,
        now: u64,
        got: &Result<Option<Id>, Error>,
        events: &mut Vec<Event>,
    ) -> Result<(), String> {
        let pool = &self.pools[p];
        if capacity == 0 || capacity > MAX_CAPACITY || capacity < pool.claimed() {
            return refuse("invalid", got);
        }
        if capacity == pool.capacity {
            return same("resize to the same", None, got);
        }
        let req = self.written_by("resize", got.as_ref().ok().copied().flatten(), got)?;
        self.pools[p].capacity = capacity;
        self.dirty = true;
        let too_large: Vec<Id> = self.pools[p]
            .line
            .iter()
            .copied()
            .filter(|r| matches!(self.reqs[r], MReq::Waiting { n, .. } if n > capacity))
            .collect();
        for r in too_large {
            self.leave(p, r);
            events.push(Event::NotClaimed {
                req: r,
                remaining: self.pools[p].remaining(),
            });
        }
        self.pump(p, now);
        self.reqs.insert(req, MReq::Barrier);
        self.next.push(req);
        Ok(())
    }

    fn leave(&mut self, p: usize, req: Id) {
        self.reqs.remove(&req);
        self.pools[p].line.retain(|&r| r != req);
    }

    /// `Engine::cancel_claim`.
    pub fn cancel(&mut self, req: Id, now: u64, events: &mut Vec<Event>) -> Cancelled {
        match self.reqs.get(&req).cloned() {
            None => Cancelled::Unknown,
            Some(MReq::Waiting { pool, .. }) => {
                self.leave(pool, req);
                self.pump(pool, now);
                Cancelled::Left
            }
            Some(MReq::Claiming { pool, id, tied, .. }) => {
                self.reqs.remove(&req);
                if self.withdraw(pool, &id, req) {
                    self.pump(pool, now);
                }
                self.untie(tied, events);
                Cancelled::Released
            }
            Some(MReq::Barrier) => {
                self.reqs.remove(&req);
                Cancelled::Left
            }
        }
    }

    /// A claim request `req` took, whose caller is never told it took anything (a cancel, the
    /// close): undone as if it never was (no tombstone), in storage too. Answers whether it was there.
    fn withdraw(&mut self, pool: usize, id: &str, req: Id) -> bool {
        let claims = &mut self.pools[pool].claims;
        let Some(i) = claims
            .iter()
            .position(|c| c.id == id && c.writing == Some(req))
        else {
            return false;
        };
        claims.remove(i);
        self.dirty = true;
        true
    }

    /// The head of pool `p`'s line takes its units while they are there.
    fn pump(&mut self, p: usize, now: u64) {
        while let Some(&head) = self.pools[p].line.front() {
            let MReq::Waiting {
                n,
                id,
                remember,
                ttl,
                ..
            } = self.reqs[&head].clone()
            else {
                unreachable!("the head waits")
            };
            if n > self.pools[p].remaining() {
                return;
            }
            self.pools[p].line.pop_front();
            self.take(p, head, n, id, remember, ttl, now);
        }
    }

    /// Every deadline: (at, kind: 0 a wait, 1 a ttl, 2 a tombstone).
    pub fn next_deadline(&self) -> Option<u64> {
        let waits = self.reqs.values().filter_map(|r| match r {
            MReq::Waiting { deadline, .. } => *deadline,
            _ => None,
        });
        let claims = self.pools.iter().flat_map(|p| {
            p.claims
                .iter()
                .map(|c| if c.open { c.ttl } else { Some(c.forget) })
        });
        waits.chain(claims.flatten()).min()
    }

    /// Acts on every deadline at or before `now`, instant by instant.
    pub fn advance(&mut self, now: u64, events: &mut Vec<Event>) -> Vec<&'static str> {
        let mut acted = Vec::new();
        while let Some(at) = self.next_deadline().filter(|&at| at <= now) {
            let waits: Vec<(Id, usize)> = self
                .reqs
                .iter()
                .filter_map(|(&r, m)| match m {
                    MReq::Waiting {
                        pool,
                        deadline: Some(d),
                        ..
                    } if *d == at => Some((r, *pool)),
                    _ => None,
                })
                .collect();
            let mut touched = Vec::new();
            for (r, p) in waits {
                self.leave(p, r);
                events.push(Event::NotClaimed {
                    req: r,
                    remaining: self.pools[p].remaining(),
                });
                touched.push(p);
                acted.push("wait");
            }
            for p in 0..self.pools.len() {
                while let Some(i) = self.pools[p]
                    .claims
                    .iter()
                    .position(|c| c.open && c.ttl == Some(at))
                {
                    self.give_back(p, i, at);
                    touched.push(p);
                    acted.push("ttl");
                }
            }
            touched.sort_unstable();
            touched.dedup();
            for p in touched {
                self.pump(p, at);
            }
            for p in &mut self.pools {
                let before = p.claims.len();
                p.claims.retain(|c| c.open || c.forget != at);
                if p.claims.len() != before {
                    acted.push("forget");
                }
            }
        }
        acted
    }

    /// Whether a write is wanted: something changed, nothing under way.
    pub fn write_wanted(&self) -> bool {
        self.dirty && self.inflight.is_none()
    }

    /// The host takes the write: every request waiting for the next write waits for this one.
    pub fn poll_write(&mut self) {
        assert!(self.write_wanted());
        self.inflight = Some((std::mem::take(&mut self.next), self.durable()));
        self.dirty = false;
    }

    /// The write under way was acknowledged: its requests are answered, in order. Answers how many
    /// claims it answered.
    pub fn written(&mut self, events: &mut Vec<Event>) -> usize {
        let (reqs, _) = self.inflight.take().expect("a write under way");
        let mut claims = 0;
        for req in reqs {
            match self.reqs.get(&req).cloned() {
                Some(MReq::Claiming {
                    pool, id, first, ..
                }) => {
                    self.reqs.remove(&req);
                    if let Some(c) = self.pools[pool]
                        .claims
                        .iter_mut()
                        .find(|c| c.id == id && c.writing == Some(req))
                    {
                        c.writing = None;
                    }
                    events.push(Event::Claimed {
                        req,
                        remaining: first,
                    });
                    claims += 1;
                }
                Some(MReq::Barrier) => {
                    self.reqs.remove(&req);
                    events.push(Event::Durable { req });
                }
                _ => {}
            }
        }
        claims
    }

    /// The write under way failed: its claims are taken back, its requests answered. Answers how
    /// many claims gave units back.
    pub fn write_failed(&mut self, now: u64, events: &mut Vec<Event>) -> usize {
        let (reqs, _) = self.inflight.take().expect("a write under way");
        self.dirty = true;
        let mut touched = Vec::new();
        for req in reqs {
            let tied = match self.reqs.get(&req).cloned() {
                Some(MReq::Claiming { pool, id, tied, .. }) => {
                    self.reqs.remove(&req);
                    let claims = &mut self.pools[pool].claims;
                    if let Some(i) = claims
                        .iter()
                        .position(|c| c.id == id && c.writing == Some(req))
                    {
                        if claims.remove(i).open {
                            touched.push(pool);
                        }
                    }
                    tied
                }
                Some(MReq::Barrier) => {
                    self.reqs.remove(&req);
                    Vec::new()
                }
                _ => continue,
            };
            events.push(Event::PoolFailed {
                req,
                why: Failure::Storage,
            });
            self.untie(tied, events);
        }
        let undone = touched.len();
        touched.sort_unstable();
        touched.dedup();
        for p in touched {
            self.pump(p, now);
        }
        undone
    }

    /// The store closes: every claim waiting or being written ends, in id order; one not yet answered
    /// is undone. A barrier (release, confirm, resize) waits for its write still.
    pub fn close(&mut self, events: &mut Vec<Event>) {
        let claiming: Vec<(Id, usize, String, Vec<Id>)> = self
            .reqs
            .iter()
            .filter_map(|(&req, r)| match r {
                MReq::Claiming { pool, id, tied, .. } => {
                    Some((req, *pool, id.clone(), tied.clone()))
                }
                _ => None,
            })
            .collect();
        for (req, pool, id, tied) in claiming {
            self.withdraw(pool, &id, req);
            self.untie(tied, events);
        }
        self.reqs.retain(|&req, r| {
            let ends = !matches!(r, MReq::Barrier);
            if ends {
                events.push(Event::PoolEnded { req });
            }
            !ends
        });
        let reqs = &self.reqs;
        self.next.retain(|req| reqs.contains_key(req));
        if let Some((inflight, _)) = &mut self.inflight {
            inflight.retain(|req| reqs.contains_key(req));
        }
        for p in &mut self.pools {
            p.line.clear();
            for c in &mut p.claims {
                c.writing = None;
            }
        }
    }

    /// What `Engine::inspect_pools` must answer.
    pub fn views(&self) -> Vec<PoolView> {
        self.pools
            .iter()
            .enumerate()
            .map(|(p, pool)| PoolView {
                pool: PoolId::from_u64(p as u64).unwrap(),
                name: pool.name.clone(),
                capacity: pool.capacity,
                remaining: pool.remaining(),
                claims: pool.claims.iter().filter(|c| c.open).count() as u32,
                waiting: pool.line.len() as u32,
            })
            .collect()
    }

    /// The pool requests live, oldest id first (how operations pick them).
    pub fn live(&self) -> Vec<Id> {
        self.reqs.keys().copied().collect()
    }

    /// Every open claim, `(pool, id)`, pool by pool in the order they were made.
    pub fn open_claims(&self) -> Vec<(usize, String)> {
        self.pools
            .iter()
            .enumerate()
            .flat_map(|(p, pool)| {
                pool.claims
                    .iter()
                    .filter(|c| c.open)
                    .map(move |c| (p, c.id.clone()))
            })
            .collect()
    }

    /// POOL-01 and the line's rules, stated apart from the rules that should imply them.
    pub fn check(&self) -> Result<(), String> {
        for pool in &self.pools {
            let claimed = pool.claimed();
            if claimed > pool.capacity {
                return Err(format!(
                    "POOL-01: pool {}: {claimed} claimed of {}",
                    pool.name, pool.capacity
                ));
            }
            if let Some(MReq::Waiting { n, .. }) = pool.line.front().map(|r| &self.reqs[r]) {
                if *n <= pool.remaining() {
                    return Err(format!(
                        "POOL-04: pool {}: its head fits and waits",
                        pool.name
                    ));
                }
            }
            let mut ids: Vec<&str> = pool.claims.iter().map(|c| c.id.as_str()).collect();
            ids.sort_unstable();
            if ids.windows(2).any(|w| w[0] == w[1]) {
                return Err(format!("POOL-03: pool {}: a claim id twice", pool.name));
            }
        }
        Ok(())
    }
}

/// The pools' calls on the model: closed refused, deadlines first (as every timed call of the
/// engine acts on them), then the pools' rule.
impl super::Model {
    fn pool_call<T: std::fmt::Debug>(
        &mut self,
        now: u64,
        got: &Result<T, Error>,
    ) -> Option<Result<(), String>> {
        if self.closed {
            return Some(refuse("closed", got));
        }
        self.advance(now);
        None
    }

    /// `Engine::claim`.
    #[allow(clippy::too_many_arguments)]
    pub fn claim(
        &mut self,
        p: usize,
        n: u64,
        id: &str,
        remember: bool,
        wait: Option<u64>,
        ttl: Option<u64>,
        now: u64,
        got: &Result<Claim, Error>,
    ) -> Result<(), String> {
        if let Some(done) = self.pool_call(now, got) {
            return done;
        }
        self.pools.claim(p, n, id, remember, wait, ttl, now, got)
    }

    /// `Engine::release_claim`.
    pub fn release_claim(
        &mut self,
        p: usize,
        id: &str,
        now: u64,
        got: &Result<Option<Id>, Error>,
    ) -> Result<(), String> {
        if let Some(done) = self.pool_call(now, got) {
            return done;
        }
        self.pools.release(p, id, now, got)
    }

    /// `Engine::confirm_claim`.
    pub fn confirm_claim(
        &mut self,
        p: usize,
        id: &str,
        now: u64,
        got: &Result<Confirm, Error>,
    ) -> Result<(), String> {
        if let Some(done) = self.pool_call(now, got) {
            return done;
        }
        self.pools.confirm(p, id, got)
    }

    /// `Engine::resize_pool`.
    pub fn resize_pool(
        &mut self,
        p: usize,
        capacity: u64,
        now: u64,
        got: &Result<Option<Id>, Error>,
    ) -> Result<(), String> {
        if let Some(done) = self.pool_call(now, got) {
            return done;
        }
        self.pools.resize(p, capacity, now, got, &mut self.events)
    }

    /// `Engine::cancel_claim`.
    pub fn cancel_claim(
        &mut self,
        req: Id,
        now: u64,
        got: &Result<Cancelled, Error>,
    ) -> Result<(), String> {
        if let Some(done) = self.pool_call(now, got) {
            return done;
        }
        let want = self.pools.cancel(req, now, &mut self.events);
        same("cancel_claim", want, got)
    }

    /// `Engine::pool_remaining`.
    pub fn pool_remaining(
        &mut self,
        p: usize,
        now: u64,
        got: &Result<u64, Error>,
    ) -> Result<(), String> {
        if let Some(done) = self.pool_call(now, got) {
            return done;
        }
        same("pool_remaining", self.pools.pools[p].remaining(), got)
    }

    /// `Engine::pool_written`: answers how many claims it answered.
    pub fn pool_written(&mut self, now: u64) -> usize {
        self.advance(now);
        self.pools.written(&mut self.events)
    }

    /// `Engine::pool_write_failed`: answers how many claims gave their units back.
    pub fn pool_write_failed(&mut self, now: u64) -> usize {
        self.advance(now);
        self.pools.write_failed(now, &mut self.events)
    }
}

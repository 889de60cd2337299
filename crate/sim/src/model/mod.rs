//! The reference model: what the engine must answer, written as plainly as it can be.
//!
//! The engine keeps a slab of keys, lines with dead ids left behind, a heap of timers with lazy
//! deletion, hash indexes of requests over connections, and a fence book that reserves in blocks. The
//! model keeps a `Vec` of holders and a `VecDeque` line per key, a map of requests, and the fences as
//! two numbers; it finds deadlines, request ids, lease ids and connections by looking at every
//! request. It predicts every answer and every event of every call, and the driver compares them with
//! the engine's, exactly (values and order).
//!
//! # The rules it states
//! - A key has at most its limit of holders. A new request is granted at once only when the key has
//!   room, nobody waits, and a fence is covered; otherwise it joins the back of the line (or, for a
//!   try, is refused `Busy`, except on a free key whose only wait is for a fence write).
//! - When a holder leaves, the head of the line gets the key in the same call: FIFO, no barging, the
//!   head of a semaphore's line first.
//! - Fences: the next fence is the one after the last, starting above the stored ceiling; none is
//!   handed out above the highest ceiling storage acknowledged. A write that fails answers `Failed`
//!   (storage) to the heads that were waiting for a fence, as many as their key had room for. When no
//!   fence is left below 2^53, the heads are answered `Failed` (fences used up).
//! - Deadlines (a wait that runs out, a lease at `maxHold`, a lease over a connection at its ttl) are
//!   acted on by `advance`, earliest first; deadlines of one instant in the order of their request ids
//!   (`Id: Ord` is the engine's API), and for one request a wait, then a revoke, then an expiry.
//! - Leases over a connection (LOCK-05) last their ttl from their grant and from each renewal; a
//!   renewal at or past the deadline (or `maxHold`) ends the lease instead. Asked again with a live
//!   request id, a request goes on as it was (`Resumed`), its ttl counted from the answer and its
//!   connection the new one. A connection that drops puts its waiters *away*: the line moves past
//!   them (they are never granted and block nobody: a key whose only waiters are away is free), but
//!   each keeps its place for its ttl, back in it if asked again in time, else ended (`Ended`).
//!   Goodbye ends the connection's leases and waiters at once.
//! - Grants that waited for fences go ahead, when storage acknowledges, in the order their keys began to
//!   wait (a key keeps its place while it stays on the list, as the engine documents).
//! - A key with no holder and no waiter is forgotten in the same call, with `KeyIdle`.
//! - `close` ends every live request, in id order, with `Ended`; every later call is refused `closed`.
//! - Pools (issue #16) are `pool.rs`'s, with their own rules; their deadlines are acted on by
//!   `advance` after the keys' (nothing of one depends on the other).
//! - Untimed calls (the host's fast path) answer "needs the time" exactly when a deadline or a grant
//!   to a waiter depends on it, and otherwise act at the latest time the engine was given.
//! - Lending: a block of up to `max` covered fences goes to the host when a fence is covered and no
//!   block is lent; until it is given back the whole block counts as handed out, and the engine
//!   grants nothing (the host gives it back before every call). Given back, fences go on from the
//!   first the host did not use. A key the host granted itself and hands over (adopt) becomes busy
//!   with that one holder, its fence and its time as the host says, and an empty line.
//!
//! Every rule the issue lists as an invariant follows from these, and is also checked on its own by
//! [`Model::check`] and by the driver, so that a model and an engine wrong in the same way are caught.
//!
//! The rules are stated here together, as the model's specification; the code is split by concern as
//! the engine's is: `hold.rs` (holds, releases, cancels, and the grant loop), `deadlines.rs`,
//! `fences.rs` (fences, storage's answers, lent blocks, adopt), `remote.rs` (requests over a
//! connection). This file keeps the state, the lookups, closing, `views` and `check`.

mod deadlines;
mod fences;
mod hold;
mod pool;
mod remote;

use std::collections::{BTreeMap, VecDeque};

use holdfast_engine::fence::MAX_FENCE;
use holdfast_engine::{Error, Event, HolderView, Id, KeyView, Remote, ResourceId};

pub use deadlines::Acted;
pub use pool::{DClaim, DPool, MReq, PoolModel};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Waiting {
        deadline: Option<u64>,
        max_hold: Option<u64>,
        /// Away (its connection dropped) until then, keeping its place.
        away: Option<u64>,
    },
    Holding {
        fence: u64,
        since: u64,
        revoke_at: Option<u64>,
        /// For a lease over a connection: when it ends unless renewed.
        expires_at: Option<u64>,
    },
}

#[derive(Clone, Debug)]
pub struct Request {
    pub res: usize,
    pub key: usize,
    pub state: State,
    pub remote: Option<Remote>,
}

#[derive(Clone, Debug)]
pub struct Key {
    pub id: Id,
    pub holders: Vec<Id>,
    /// Every waiter, in the order they came, away ones included.
    pub line: VecDeque<Id>,
    stalled: bool,
}

/// Where a hold goes: a resource the engine knows (by its index in the mix) or not, the key by its
/// number, and the key id the host passes (`None` for a key it does not know to be busy).
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub res: Option<usize>,
    pub key: usize,
    pub arg: Option<Id>,
}

pub struct Model {
    pub closed: bool,
    rids: Vec<ResourceId>,
    limits: Vec<u32>,
    keys: Vec<Vec<Option<Key>>>,
    pub reqs: BTreeMap<Id, Request>,
    /// Live requests, oldest first: how operations pick their target.
    pub order: Vec<Id>,
    /// Keys whose head waits for a fence, in the order they began to wait.
    stalled: Vec<(usize, usize)>,
    /// The next fence to hand out.
    pub next: u64,
    /// The highest ceiling storage acknowledged to this process (the stored one at first).
    pub covered: u64,
    /// The latest time the engine was given (untimed calls act at it).
    pub last_now: u64,
    /// The block of fences lent to the host, `(first, end)`, until it gives it back.
    pub lent: Option<(u64, u64)>,
    /// How many requests one connection may have.
    pub connection_limit: usize,
    /// The events the current call must produce, in order.
    pub events: Vec<Event>,
    /// A grant the model made, as the engine does, to a request whose wait had run out before `now`
    /// (possible only when the host's timer is late): the driver reports it.
    pub overdue: Option<String>,
    /// The pools (see `pool.rs`).
    pub pools: PoolModel,
    /// What the pools' deadlines did in the last `advance` (for coverage marks).
    pub pool_acted: Vec<&'static str>,
}

fn refuse<T: std::fmt::Debug>(code: &str, got: &Result<T, Error>) -> Result<(), String> {
    match got {
        Err(e) if e.code() == code => Ok(()),
        other => Err(format!(
            "expected a {code} error, the engine answered {other:?}"
        )),
    }
}

fn same<T: PartialEq + std::fmt::Debug>(
    what: &str,
    want: T,
    got: &Result<T, Error>,
) -> Result<(), String> {
    match got {
        Ok(g) if *g == want => Ok(()),
        other => Err(format!(
            "{what}: the model answers {want:?}, the engine {other:?}"
        )),
    }
}

impl Model {
    /// Resource `r` was registered again (its name had been forgotten), as `rid`.
    pub fn set_rid(&mut self, r: usize, rid: ResourceId) {
        self.rids[r] = rid;
    }

    /// The model of a store whose storage holds `stored`; `None` when the engine must refuse to open.
    /// `keys[r]` is how many keys resource `r` has; `rids[r]` the id the engine gave it.
    pub fn open(
        stored: Option<u64>,
        rids: Vec<ResourceId>,
        limits: Vec<u32>,
        keys: &[u8],
        connection_limit: usize,
        pools: PoolModel,
    ) -> Option<Model> {
        let stored = stored.unwrap_or(0);
        if stored >= MAX_FENCE {
            return None;
        }
        Some(Model {
            closed: false,
            rids,
            limits,
            keys: keys.iter().map(|&n| vec![None; n as usize]).collect(),
            reqs: BTreeMap::new(),
            order: Vec::new(),
            stalled: Vec::new(),
            next: stored + 1,
            covered: stored,
            last_now: 0,
            lent: None,
            connection_limit,
            events: Vec::new(),
            overdue: None,
            pools,
            pool_acted: Vec::new(),
        })
    }

    pub fn key(&self, res: usize, key: usize) -> Option<&Key> {
        self.keys[res][key].as_ref()
    }

    /// Every busy key, with its resource and number.
    pub fn busy_keys(&self) -> impl Iterator<Item = (usize, usize, &Key)> {
        self.keys.iter().enumerate().flat_map(|(r, ks)| {
            ks.iter()
                .enumerate()
                .filter_map(move |(k, key)| key.as_ref().map(|key| (r, k, key)))
        })
    }

    pub fn limit(&self, res: usize) -> u32 {
        self.limits[res]
    }

    /// Whether `req` waits and is away.
    pub fn is_away(&self, req: Id) -> bool {
        matches!(
            self.reqs.get(&req),
            Some(Request {
                state: State::Waiting { away: Some(_), .. },
                ..
            })
        )
    }

    /// The waiters of a key that count: not away.
    pub fn active(&self, key: &Key) -> usize {
        key.line.iter().filter(|&&w| !self.is_away(w)).count()
    }

    /// The head of a key's line: its first waiter that is not away, with its place.
    pub fn head(&self, key: &Key) -> Option<(usize, Id)> {
        key.line
            .iter()
            .enumerate()
            .find(|&(_, &w)| !self.is_away(w))
            .map(|(at, &w)| (at, w))
    }

    pub fn holds(&self, req: Id) -> bool {
        matches!(
            self.reqs.get(&req),
            Some(Request {
                state: State::Holding { .. },
                ..
            })
        )
    }

    fn find_key(&self, res: usize, id: Id) -> Option<usize> {
        self.keys[res]
            .iter()
            .position(|k| k.as_ref().is_some_and(|k| k.id == id))
    }

    fn key_id_is_busy(&self, id: Id) -> bool {
        self.busy_keys().any(|(_, _, k)| k.id == id)
    }

    fn add(&mut self, req: Id, r: Request) -> Result<(), String> {
        if self.reqs.contains_key(&req) {
            return Err(format!("request id {req:?} handed out again while live"));
        }
        self.reqs.insert(req, r);
        self.order.push(req);
        Ok(())
    }

    fn remove(&mut self, req: Id) -> Request {
        self.order.retain(|&r| r != req);
        self.reqs.remove(&req).expect("a live request")
    }

    /// Closes: every live request ends, in id order.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        for (&req, r) in &self.reqs {
            let held = matches!(r.state, State::Holding { .. });
            self.events.push(Event::Ended { req, held });
        }
        self.reqs.clear();
        self.order.clear();
        self.stalled.clear();
        for ks in &mut self.keys {
            ks.iter_mut().for_each(|k| *k = None);
        }
        self.pools.close(&mut self.events);
    }

    /// What `Engine::inspect(now)` must answer, in key id order.
    pub fn views(&self, now: u64) -> Vec<KeyView> {
        let mut views: Vec<KeyView> = self
            .busy_keys()
            .map(|(r, _, k)| {
                let mut holders: Vec<HolderView> = k
                    .holders
                    .iter()
                    .map(|&req| {
                        let State::Holding { fence, since, .. } = self.reqs[&req].state else {
                            unreachable!("holders hold")
                        };
                        HolderView {
                            req,
                            fence,
                            held_ms: now.saturating_sub(since),
                        }
                    })
                    .collect();
                holders.sort_by_key(|h| h.fence);
                KeyView {
                    resource: self.rids[r],
                    key: k.id,
                    holders,
                    waiting: self.active(k) as u32,
                }
            })
            .collect();
        views.sort_by_key(|v| v.key.index());
        views
    }

    /// The model's own invariants, each stated apart from the rules that should imply it. `on_time`:
    /// the host's timer fired at every deadline up to `now`.
    pub fn check(&self, now: u64, on_time: bool) -> Result<(), String> {
        let mut counted = 0;
        for (r, k, key) in self.busy_keys() {
            let limit = self.limits[r] as usize;
            if key.holders.len() > limit {
                return Err(format!(
                    "key r{r}/{k}: {} holders, limit {limit}",
                    key.holders.len()
                ));
            }
            if key.holders.is_empty() && key.line.is_empty() {
                return Err(format!("key r{r}/{k}: idle but kept"));
            }
            // Work-conserving: a key with room and a line (of waiters not away) waits only for a
            // fence.
            if self.active(key) > 0 && key.holders.len() < limit && self.available() {
                return Err(format!(
                    "key r{r}/{k}: room and waiters, and a fence is covered"
                ));
            }
            counted += key.holders.len() + key.line.len();
        }
        self.pools.check()?;
        if counted != self.reqs.len() || self.order.len() != self.reqs.len() {
            return Err("requests and keys disagree".into());
        }
        if self.next > self.covered.saturating_add(1) {
            return Err(format!(
                "fence {} handed out above the ceiling {}",
                self.next - 1,
                self.covered
            ));
        }
        if on_time {
            if let Some(at) = self.next_deadline().filter(|&at| at <= now) {
                return Err(format!(
                    "a deadline at {at} still pending at {now}, after the timer fired"
                ));
            }
        }
        Ok(())
    }
}

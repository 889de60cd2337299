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

use std::collections::{BTreeMap, VecDeque};

use holdfast_engine::bounds::{MAX_HOLD_MS, MAX_WAITERS, TTL_MS};
use holdfast_engine::fence::MAX_FENCE;
use holdfast_engine::{
    Cancelled, Error, Event, Failure, Hold, HolderView, Id, KeyView, Remote, RemoteView, Renewal,
    ResourceId,
};

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

#[derive(Debug)]
enum Predict {
    Grant { fence: u64 },
    Busy,
    Queue { deadline: Option<u64> },
}

/// A deadline [`Model::advance`] acted on.
#[derive(Clone, Copy, Debug)]
pub struct Acted {
    pub res: usize,
    pub key: usize,
    /// 0: a wait ran out; 1: a revoke at `maxHold`; 2: a lease over a connection expired; 3: a
    /// waiter away for its ttl was ended.
    pub due: u8,
    /// Whether the key went on to the next in line in the same step.
    pub handed_on: bool,
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
        })
    }

    pub fn available(&self) -> bool {
        self.next <= self.covered
    }

    pub fn exhausted(&self) -> bool {
        self.next > MAX_FENCE
    }

    /// The fence the engine hands out next (a burst takes them without the model's bookkeeping).
    pub fn take(&mut self) -> u64 {
        assert!(self.available(), "the model took an uncovered fence");
        assert!(
            self.lent.is_none(),
            "the model took a fence while a block is lent"
        );
        self.next += 1;
        self.next - 1
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

    /// Whether any key's head waits for a fence.
    pub fn head_waits_for_fence(&self) -> bool {
        self.busy_keys()
            .any(|(r, _, k)| self.head(k).is_some() && k.holders.len() < self.limits[r] as usize)
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

    /// The live request with this request id (over a connection).
    pub fn by_request(&self, request: u128) -> Option<Id> {
        self.reqs
            .iter()
            .find(|(_, r)| r.remote.is_some_and(|x| x.request == request))
            .map(|(&id, _)| id)
    }

    /// The live request with this lease id.
    pub fn by_lease(&self, lease: u128) -> Option<Id> {
        self.reqs
            .iter()
            .find(|(_, r)| r.remote.is_some_and(|x| x.lease == lease))
            .map(|(&id, _)| id)
    }

    /// How many live requests a connection has.
    pub fn on_connection(&self, conn: u32) -> usize {
        self.reqs
            .values()
            .filter(|r| r.remote.is_some_and(|x| x.conn == conn))
            .count()
    }

    /// What `Engine::remote_of(req)` must answer.
    pub fn remote_view(&self, req: Id) -> Option<RemoteView> {
        let r = self.reqs.get(&req)?;
        let remote = r.remote?;
        Some(match r.state {
            State::Holding {
                fence,
                revoke_at,
                expires_at,
                ..
            } => RemoteView {
                remote,
                fence: Some(fence),
                expires_at,
                revoke_at,
            },
            State::Waiting { .. } => RemoteView {
                remote,
                fence: None,
                expires_at: None,
                revoke_at: None,
            },
        })
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

    /// A hold, timed (`now`) or untimed (`None`), over a connection (`remote`) or not: checks the
    /// engine's answer `got` against the prediction and applies it.
    pub fn hold(
        &mut self,
        t: Target,
        wait: Option<u64>,
        max_hold: Option<u64>,
        now: Option<u64>,
        remote: Option<Remote>,
        got: &Result<Option<Hold>, Error>,
    ) -> Result<(), String> {
        if self.closed {
            return refuse("closed", got);
        }
        match now {
            // Deadlines that fell due are acted on first (the host's timer may be late).
            Some(now) => {
                self.advance(now);
            }
            // An untimed hold of a busy key needs the time while any deadline is set: it may have
            // fallen due.
            None if t.arg.is_some() && self.next_deadline().is_some() => {
                return same("untimed hold of a busy key", None, got)
            }
            None => {}
        }
        let Some(res) = t.res else {
            return refuse("invalid", got);
        };
        if max_hold.is_some_and(|ms| !(1..=MAX_HOLD_MS).contains(&ms)) {
            return refuse("invalid", got);
        }
        let key = match t.arg {
            Some(id) => match self.find_key(res, id) {
                Some(k) => k,
                // A busy key of another resource.
                None if self.key_id_is_busy(id) => return refuse("invalid", got),
                // The key went idle (by the deadlines just acted on) before the host heard: the
                // engine makes it anew, as it would for no id.
                None if self.keys[res][t.key].is_none() => t.key,
                None => return Err("the host passed a dead id for a key busy under another".into()),
            },
            None if self.keys[res][t.key].is_some() => {
                return Err("the host passed no id for a busy key".into())
            }
            None => t.key,
        };
        let limit = self.limits[res] as usize;
        let (held, waiting, active) = self.keys[res][key].as_ref().map_or((0, 0, 0), |k| {
            (k.holders.len(), k.line.len(), self.active(k))
        });
        // Waiters away are passed over: a key whose only waiters are away is free.
        let free = held < limit && active == 0;
        let granted = free && self.available();
        let needs_time = if granted {
            max_hold.is_some() || remote.is_some()
        } else {
            !(free && wait == Some(0)) && wait.is_some_and(|ms| ms > 0 || free)
        };
        let now = match now {
            Some(now) => now,
            None if needs_time => {
                return match got {
                    Ok(None) => Ok(()),
                    other => Err(format!(
                        "untimed hold: the model needs the time, the engine answered {other:?}"
                    )),
                }
            }
            None => self.last_now,
        };
        let predict = if granted {
            Predict::Grant { fence: self.next }
        } else if !free && wait == Some(0) {
            Predict::Busy
        } else if waiting >= MAX_WAITERS as usize {
            return refuse("limit", got);
        } else {
            // A free key whose grant waits only for storage: a try waits for the write, unbounded.
            let deadline = match (free, wait) {
                (true, Some(0)) => None,
                (_, wait) => wait.map(|ms| now.saturating_add(ms)),
            };
            Predict::Queue { deadline }
        };
        let key_id = match (&predict, got) {
            (Predict::Grant { .. }, Ok(Some(Hold::Granted { key, .. })))
            | (Predict::Busy, Ok(Some(Hold::Busy { key })))
            | (Predict::Queue { .. }, Ok(Some(Hold::Queued { key, .. }))) => *key,
            (predict, got) => {
                return Err(format!(
                    "hold: the model predicts {predict:?}, the engine answered {got:?}"
                ))
            }
        };
        match &self.keys[res][key] {
            Some(k) if k.id != key_id => {
                return Err(format!(
                    "hold: answered key id {key_id:?} for the busy key {:?}",
                    k.id
                ))
            }
            Some(_) => {}
            None => {
                if self.key_id_is_busy(key_id) {
                    return Err(format!(
                        "hold: a new key got the id {key_id:?} of a busy key"
                    ));
                }
                self.keys[res][key] = Some(Key {
                    id: key_id,
                    holders: Vec::new(),
                    line: VecDeque::new(),
                    stalled: false,
                });
            }
        }
        match (predict, got) {
            (Predict::Grant { fence }, Ok(Some(Hold::Granted { req, fence: f, .. }))) => {
                if *f != fence {
                    return Err(format!(
                        "hold: granted fence {f}, the model's next is {fence}"
                    ));
                }
                let state = State::Holding {
                    fence,
                    since: now,
                    revoke_at: max_hold.map(|ms| now.saturating_add(ms)),
                    expires_at: remote.map(|r| now.saturating_add(r.ttl)),
                };
                self.add(
                    *req,
                    Request {
                        res,
                        key,
                        state,
                        remote,
                    },
                )?;
                self.take();
                self.keys[res][key].as_mut().unwrap().holders.push(*req);
            }
            (Predict::Queue { deadline }, Ok(Some(Hold::Queued { req, .. }))) => {
                let state = State::Waiting {
                    deadline,
                    max_hold,
                    away: None,
                };
                self.add(
                    *req,
                    Request {
                        res,
                        key,
                        state,
                        remote,
                    },
                )?;
                self.keys[res][key].as_mut().unwrap().line.push_back(*req);
                if free {
                    self.pump(res, key, now);
                }
            }
            _ => {} // Busy: nothing changes
        }
        Ok(())
    }

    /// `Engine::lend_fences(max)`: the block lent, if any.
    pub fn lend(&mut self, max: u64) -> Option<(u64, u64)> {
        if self.closed || !self.available() || self.lent.is_some() || max == 0 {
            return None;
        }
        let end = (self.next + max).min(self.covered + 1);
        let block = (self.next, end);
        self.next = end;
        self.lent = Some(block);
        Some(block)
    }

    /// `Engine::reclaim_fences(unused)`: the host gives its block back.
    pub fn reclaim(&mut self, unused: u64) -> Result<(), String> {
        match self.lent.take() {
            Some((first, end)) if (first..=end).contains(&unused) => {
                self.next = unused;
                Ok(())
            }
            other => Err(format!(
                "the host gave back its block at {unused}, the model's block is {other:?}"
            )),
        }
    }

    /// `Engine::adopt`: the host hands over key `key` of resource `res`, which it granted itself with
    /// `fence` at `since`.
    pub fn adopt(
        &mut self,
        res: usize,
        key: usize,
        fence: u64,
        since: u64,
        got: &Result<Hold, Error>,
    ) -> Result<(), String> {
        if self.closed {
            return refuse("closed", got);
        }
        if fence == 0 || fence >= self.next {
            return refuse("invalid", got);
        }
        if self.keys[res][key].is_some() {
            return Err("the host adopted a key busy in the engine".into());
        }
        let (req, key_id) = match got {
            Ok(Hold::Granted {
                req,
                key: key_id,
                fence: f,
            }) if *f == fence => (*req, *key_id),
            other => {
                return Err(format!(
                    "adopt: the model grants fence {fence}, the engine answered {other:?}"
                ))
            }
        };
        if self.key_id_is_busy(key_id) {
            return Err(format!(
                "adopt: a new key got the id {key_id:?} of a busy key"
            ));
        }
        self.keys[res][key] = Some(Key {
            id: key_id,
            holders: vec![req],
            line: VecDeque::new(),
            stalled: false,
        });
        let state = State::Holding {
            fence,
            since,
            revoke_at: None,
            expires_at: None,
        };
        self.add(
            req,
            Request {
                res,
                key,
                state,
                remote: None,
            },
        )
    }

    /// A timed hold (`Engine::hold`).
    pub fn hold_timed(
        &mut self,
        t: Target,
        wait: Option<u64>,
        max_hold: Option<u64>,
        now: u64,
        got: &Result<Hold, Error>,
    ) -> Result<(), String> {
        self.last_now = self.last_now.max(now);
        self.hold(t, wait, max_hold, Some(now), None, &got.clone().map(Some))
    }

    /// A hold over a connection (`Engine::hold_remote`).
    pub fn hold_remote(
        &mut self,
        t: Target,
        wait: Option<u64>,
        max_hold: Option<u64>,
        remote: Remote,
        now: u64,
        got: &Result<Hold, Error>,
    ) -> Result<(), String> {
        if self.closed {
            return refuse("closed", got);
        }
        self.advance(now);
        if !(TTL_MS.0..=TTL_MS.1).contains(&remote.ttl) {
            return refuse("invalid", got);
        }
        if let Some(req) = self.by_request(remote.request) {
            let r = self.reqs.get_mut(&req).unwrap();
            let mine = r.remote.as_mut().unwrap();
            mine.conn = remote.conn;
            let ttl = mine.ttl;
            let (res, k) = (r.res, r.key);
            let mut back = false;
            let fence = match &mut r.state {
                State::Holding {
                    fence, expires_at, ..
                } => {
                    *expires_at = Some(now.saturating_add(ttl));
                    Some(*fence)
                }
                State::Waiting { away, .. } => {
                    // Back in its place: it counts again, and may be the head now.
                    back = away.take().is_some();
                    None
                }
            };
            let key = self.keys[res][k].as_ref().unwrap().id;
            same("ask again", Hold::Resumed { req, key, fence }, got)?;
            if back {
                self.pump(res, k, now);
            }
            return Ok(());
        }
        if !self.closed && self.on_connection(remote.conn) >= self.connection_limit {
            return refuse("limit", got);
        }
        if self.by_lease(remote.lease).is_some() {
            return refuse("invalid", got);
        }
        self.hold(
            t,
            wait,
            max_hold,
            Some(now),
            Some(remote),
            &got.clone().map(Some),
        )
    }

    pub fn release(&mut self, req: Id, now: u64, got: &Result<bool, Error>) -> Result<(), String> {
        if self.closed {
            return refuse("closed", got);
        }
        self.advance(now);
        let holds = self.holds(req);
        same("release", holds, got)?;
        if holds {
            self.end_holder(req, now);
        }
        Ok(())
    }

    /// `Engine::release_untimed`: needs the time when the lease has a deadline or the release would
    /// hand the key to a waiter.
    pub fn release_untimed(
        &mut self,
        req: Id,
        got: &Result<Option<bool>, Error>,
    ) -> Result<(), String> {
        if self.closed {
            return refuse("closed", got);
        }
        if !self.holds(req) {
            return same("untimed release", Some(false), got);
        }
        let r = &self.reqs[&req];
        // A lease with a deadline (it may have fallen due), or a key going on to a waiter: the time.
        let deadline = matches!(
            r.state,
            State::Holding {
                revoke_at: Some(_),
                ..
            } | State::Holding {
                expires_at: Some(_),
                ..
            }
        );
        // A waiter is granted without the time only while no deadline is set anywhere and its grant
        // starts none.
        let key = self.keys[r.res][r.key].as_ref().unwrap();
        let to_waiter = self.active(key) > 0
            && (self.next_deadline().is_some()
                || self.head(key).is_some_and(|(_, head)| {
                    !matches!(
                        self.reqs[&head],
                        Request {
                            state: State::Waiting { max_hold: None, .. },
                            remote: None,
                            ..
                        }
                    )
                }));
        if deadline || to_waiter {
            return same("untimed release", None, got);
        }
        same("untimed release", Some(true), got)?;
        self.end_holder(req, self.last_now);
        Ok(())
    }

    fn end_holder(&mut self, req: Id, now: u64) {
        let r = self.remove(req);
        let k = self.keys[r.res][r.key].as_mut().unwrap();
        k.holders.retain(|&h| h != req);
        self.pump(r.res, r.key, now);
    }

    fn end_waiter(&mut self, req: Id) -> (usize, usize) {
        let r = self.remove(req);
        let k = self.keys[r.res][r.key].as_mut().unwrap();
        k.line.retain(|&w| w != req);
        (r.res, r.key)
    }

    pub fn cancel(
        &mut self,
        req: Id,
        now: u64,
        got: &Result<Cancelled, Error>,
    ) -> Result<(), String> {
        if self.closed {
            return refuse("closed", got);
        }
        self.advance(now);
        let expect = match self.reqs.get(&req).map(|r| r.state) {
            None => Cancelled::Unknown,
            Some(State::Holding { .. }) => Cancelled::Released,
            Some(State::Waiting { .. }) => Cancelled::Left,
        };
        same("cancel", expect, got)?;
        match expect {
            Cancelled::Released => {
                self.last_now = self.last_now.max(now);
                self.end_holder(req, now);
            }
            Cancelled::Left => {
                self.last_now = self.last_now.max(now);
                let (res, key) = self.end_waiter(req);
                self.pump(res, key, now);
            }
            Cancelled::Unknown => {}
        }
        Ok(())
    }

    /// `Engine::renew`: a lease over a connection lasts its ttl from now, unless it is at or past its
    /// deadline or its `maxHold`, when it ends now instead.
    pub fn renew(
        &mut self,
        lease: u128,
        now: u64,
        got: &Result<Renewal, Error>,
    ) -> Result<(), String> {
        if self.closed {
            return refuse("closed", got);
        }
        self.advance(now);
        let Some(req) = self.by_lease(lease) else {
            return same("renew", Renewal::Lost, got);
        };
        let r = self.reqs.get_mut(&req).unwrap();
        let ttl = r.remote.unwrap().ttl;
        let State::Holding {
            revoke_at,
            expires_at,
            ..
        } = &mut r.state
        else {
            return same("renew of a waiting request", Renewal::Lost, got);
        };
        let revoked = revoke_at.is_some_and(|at| at <= now);
        if expires_at.is_some_and(|at| at <= now) || revoked {
            same("renew past the deadline", Renewal::Lost, got)?;
            self.end_holder_with(
                req,
                now,
                if revoked {
                    Event::Revoked { req }
                } else {
                    Event::Expired { req }
                },
            );
            return Ok(());
        }
        *expires_at = Some(now.saturating_add(ttl));
        let revoke_in = revoke_at.map(|at| at - now);
        same("renew", Renewal::Renewed { ttl, revoke_in }, got)
    }

    fn end_holder_with(&mut self, req: Id, now: u64, event: Event) {
        let r = self.remove(req);
        self.keys[r.res][r.key]
            .as_mut()
            .unwrap()
            .holders
            .retain(|&h| h != req);
        self.events.push(event);
        self.pump(r.res, r.key, now);
    }

    /// `Engine::release_lease`: a release named by lease id. (A closed engine knows no lease.)
    pub fn release_lease(
        &mut self,
        lease: u128,
        now: u64,
        got: &Result<bool, Error>,
    ) -> Result<(), String> {
        match self.by_lease(lease) {
            Some(req) => self.release(req, now, got),
            None => same("release by lease id", false, got),
        }
    }

    /// `Engine::cancel_request`: a cancel named by request id.
    pub fn cancel_request(
        &mut self,
        request: u128,
        now: u64,
        got: &Result<Cancelled, Error>,
    ) -> Result<(), String> {
        match self.by_request(request) {
            Some(req) => self.cancel(req, now, got),
            None => same("cancel by request id", Cancelled::Unknown, got),
        }
    }

    /// A connection dropped: its waiters that were not yet away go away for their ttl, in id order,
    /// each key going on at once (past them).
    pub fn drop_connection(&mut self, conn: u32, now: u64, got: &[Id]) -> Result<(), String> {
        let mut away = Vec::new();
        if !self.closed {
            self.advance(now);
            let ids: Vec<Id> = self
                .reqs
                .iter()
                .filter(|(_, r)| {
                    r.remote.is_some_and(|x| x.conn == conn)
                        && matches!(r.state, State::Waiting { away: None, .. })
                })
                .map(|(&id, _)| id)
                .collect();
            for req in ids {
                let r = self.reqs.get_mut(&req).unwrap();
                let until = now.saturating_add(r.remote.unwrap().ttl);
                let (res, key) = (r.res, r.key);
                if let State::Waiting { away, .. } = &mut r.state {
                    *away = Some(until);
                }
                self.pump(res, key, now);
                away.push(req);
            }
        }
        if got != away {
            return Err(format!(
                "drop of connection {conn}: the engine put {got:?} away, the model {away:?}"
            ));
        }
        Ok(())
    }

    /// A connection said goodbye: its requests end, leases and waiters, in id order, each with
    /// `Ended`, each key going on at once.
    pub fn goodbye(&mut self, conn: u32, now: u64, got: &[Id]) -> Result<(), String> {
        let mut ended = Vec::new();
        if !self.closed {
            self.advance(now);
            let mut ids: Vec<Id> = self
                .reqs
                .iter()
                .filter(|(_, r)| r.remote.is_some_and(|x| x.conn == conn))
                .map(|(&id, _)| id)
                .collect();
            // Its waiters leave first (in id order), then its leases go.
            ids.sort_by_key(|&req| (self.holds(req), req));
            for req in ids {
                // A request an earlier step of this loop ended (a key it pumped failed its head
                // for want of fences) is gone already: it was answered `Failed`, not `Ended`, and
                // the engine does not list it among the ones its goodbye ended.
                if !self.reqs.contains_key(&req) {
                    continue;
                }
                ended.push(req);
                let held = self.holds(req);
                self.events.push(Event::Ended { req, held });
                if held {
                    let r = self.remove(req);
                    self.keys[r.res][r.key]
                        .as_mut()
                        .unwrap()
                        .holders
                        .retain(|&h| h != req);
                    self.pump(r.res, r.key, now);
                } else {
                    let (res, key) = self.end_waiter(req);
                    self.pump(res, key, now);
                }
            }
        }
        if got != ended {
            return Err(format!(
                "goodbye of connection {conn}: the engine ended {got:?}, the model {ended:?}"
            ));
        }
        Ok(())
    }

    /// Every live deadline: (at, request, 0 for a wait, 1 for a revoke, 2 for an expiry, 3 for the
    /// end of an absence).
    fn deadlines(&self) -> Vec<(u64, Id, u8)> {
        let mut all = Vec::new();
        for (&id, r) in &self.reqs {
            match r.state {
                State::Waiting { deadline, away, .. } => {
                    if let Some(at) = deadline {
                        all.push((at, id, 0));
                    }
                    if let Some(at) = away {
                        all.push((at, id, 3));
                    }
                }
                State::Holding {
                    revoke_at,
                    expires_at,
                    ..
                } => {
                    if let Some(at) = revoke_at {
                        all.push((at, id, 1));
                    }
                    if let Some(at) = expires_at {
                        all.push((at, id, 2));
                    }
                }
            }
        }
        all.sort_unstable();
        all
    }

    pub fn next_deadline(&self) -> Option<u64> {
        self.reqs
            .values()
            .flat_map(|r| match r.state {
                State::Waiting { deadline, away, .. } => [deadline, away],
                State::Holding {
                    revoke_at,
                    expires_at,
                    ..
                } => [revoke_at, expires_at],
            })
            .flatten()
            .min()
    }

    /// Acts on every deadline at or before `now`. Answers what it acted on, for coverage marks.
    pub fn advance(&mut self, now: u64) -> Vec<Acted> {
        let mut acted = Vec::new();
        if self.closed {
            return acted;
        }
        self.last_now = self.last_now.max(now);
        // Acting on a deadline may make another at or before `now` (a grant at the deadline's instant
        // starts its own maxHold and ttl): the earliest is found again after each.
        while let Some((at, id, due)) = self.deadlines().into_iter().next().filter(|d| d.0 <= now) {
            let Some(r) = self.reqs.get(&id) else {
                continue;
            };
            let (res, key) = (r.res, r.key);
            let live = match (r.state, due) {
                (State::Waiting { deadline, .. }, 0) => deadline == Some(at),
                (State::Waiting { away, .. }, 3) => away == Some(at),
                (State::Holding { revoke_at, .. }, 1) => revoke_at == Some(at),
                (State::Holding { expires_at, .. }, 2) => expires_at == Some(at),
                _ => false,
            };
            if !live {
                continue;
            }
            let r = self.remove(id);
            let k = self.keys[res][key].as_mut().unwrap();
            match r.state {
                State::Waiting { .. } => k.line.retain(|&w| w != id),
                State::Holding { .. } => k.holders.retain(|&h| h != id),
            }
            self.events.push(match due {
                0 => Event::TimedOut { req: id },
                1 => Event::Revoked { req: id },
                2 => Event::Expired { req: id },
                _ => Event::Ended {
                    req: id,
                    held: false,
                },
            });
            let before = self.events.len();
            self.pump(res, key, at);
            let handed_on = self.events[before..]
                .iter()
                .any(|e| matches!(e, Event::Granted { .. }));
            acted.push(Acted {
                res,
                key,
                due,
                handed_on,
            });
        }
        acted
    }

    /// Hands the key to the head of its line while it has room and a fence is covered; forgets it
    /// when it is idle.
    fn pump(&mut self, res: usize, key: usize, now: u64) {
        let limit = self.limits[res] as usize;
        loop {
            let k = self.keys[res][key].as_ref().unwrap();
            if k.holders.len() >= limit {
                break;
            }
            let Some((at, head)) = self.head(k) else {
                break;
            };
            let k = self.keys[res][key].as_mut().unwrap();
            if self.next > self.covered {
                if !k.stalled {
                    k.stalled = true;
                    self.stalled.push((res, key));
                }
                if self.next > MAX_FENCE {
                    k.line.remove(at);
                    self.remove(head);
                    self.events.push(Event::Failed {
                        req: head,
                        why: Failure::FencesUsedUp,
                    });
                    continue;
                }
                break;
            }
            k.line.remove(at);
            k.holders.push(head);
            let fence = self.take();
            let r = self.reqs.get_mut(&head).unwrap();
            let State::Waiting {
                max_hold, deadline, ..
            } = r.state
            else {
                unreachable!("a line holds waiting requests")
            };
            if let Some(d) = deadline.filter(|&d| d < now) {
                self.overdue.get_or_insert(format!(
                    "request {head:?} granted at {now}, after its wait ran out at {d}"
                ));
            }
            r.state = State::Holding {
                fence,
                since: now,
                revoke_at: max_hold.map(|ms| now.saturating_add(ms)),
                expires_at: r.remote.map(|x| now.saturating_add(x.ttl)),
            };
            self.events.push(Event::Granted { req: head, fence });
        }
        let k = self.keys[res][key].as_ref().unwrap();
        if k.holders.is_empty() && k.line.is_empty() {
            let id = k.id;
            self.stalled.retain(|&s| s != (res, key));
            self.keys[res][key] = None;
            self.events.push(Event::KeyIdle { key: id });
        }
    }

    /// Storage acknowledged `ceiling`.
    pub fn persisted(&mut self, ceiling: u64, now: u64) {
        if self.closed {
            return;
        }
        self.advance(now);
        self.covered = self.covered.max(ceiling);
        for (res, key) in std::mem::take(&mut self.stalled) {
            if let Some(k) = self.keys[res][key].as_mut() {
                k.stalled = false;
                self.pump(res, key, now);
            }
        }
    }

    /// Storage failed to keep its ceiling: the heads that waited for a fence, as many as their key
    /// has room for, are answered `Failed`.
    pub fn persist_failed(&mut self, now: u64) {
        if self.closed {
            return;
        }
        self.advance(now);
        if self.available() {
            return;
        }
        for (res, key) in std::mem::take(&mut self.stalled) {
            let Some(k) = self.keys[res][key].as_mut() else {
                continue;
            };
            k.stalled = false;
            let room = self.limits[res] as usize - k.holders.len();
            for _ in 0..room {
                let Some((at, head)) = self.head(self.keys[res][key].as_ref().unwrap()) else {
                    break;
                };
                self.keys[res][key].as_mut().unwrap().line.remove(at);
                self.remove(head);
                self.events.push(Event::Failed {
                    req: head,
                    why: Failure::Storage,
                });
            }
            self.pump(res, key, now);
        }
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

//! The engine: every key's holders and line, every request's state, and the deadlines that end them.
//!
//! How the host drives it is in the crate's docs (the calling rules) and on [`Engine`] (its methods,
//! by kind); this is how it works inside.
//!
//! # Implementation details
//! The host names a *resource* (a lock or a semaphore of one name, see `resource.rs`) once, and then
//! a key of it by the id the engine gave the key when it became busy (calling rule 5). So a hold of
//! a free key costs one call and copies no string, and an idle key costs nothing on either side.
//!
//! A *request* is one hold: first waiting in its key's line (perhaps not at all), then holding, then
//! gone. Its id names it in both states, so the host keeps one record per hold.
//!
//! One concern a file, each adding its methods to [`Engine`]: `request.rs` (the request record and
//! its states; the one place a request ends), `resource.rs` (names registered and forgotten),
//! `hold.rs` (holding, releasing, cancelling, and the grant loop), `deadlines.rs` (the timers, acted
//! on), `fences.rs` (storage of the fence ceiling; fences lent to the host, reclaimed, and the keys it
//! granted itself adopted), `remote.rs` (leases over a connection, LOCK-05). This file keeps the state
//! they share, the events, closing, and what the host can read.
//!
//! # Invariants (checked by [`Engine::check`] in tests)
//! - A key has at most its resource's `limit` holders, and has waiters only while it is full or while
//!   its head waits for a fence (no barging; see `line.rs`).
//! - Every key in the slab has a holder or a waiter; one that has neither is removed in the same call.
//! - Every key's resource is registered, and counts the key among its `busy` keys; `by_name` names
//!   exactly the registered resources.
//! - Fences grow with every grant and never exceed what storage acknowledged (see `fence.rs`); this
//!   holds across the host's own grants from lent fences, if it keeps calling rule 3. Holders have
//!   distinct fences.
//! - Every request is answered once (calling rule 4).
//! - Pools: POOL-01 and the rest of `pool/`'s invariants (checked by its own `check`).

mod deadlines;
mod fences;
mod hold;
mod id_hash;
mod pool;
mod remote;
mod request;
mod resource;

use std::collections::{HashMap, VecDeque};

use crate::error::Error;
use crate::event::Event;
use crate::fence::FenceBook;
use crate::line::Line;
use crate::pool::Pools;
use crate::slab::{Id, Slab};
use crate::timers::Timers;

pub use hold::{Cancelled, Hold};
pub use remote::{Remote, RemoteView, Renewal, CONNECTION_LIMIT};
pub use resource::{Kind, ResourceId};

use remote::Remotes;
use request::{Request, State};
use resource::Resource;

/// A busy key: one with a holder or a waiter.
#[derive(Debug)]
struct Key {
    /// The place of its resource (a busy key's resource cannot be forgotten, see `resource.rs`).
    res: u32,
    held: u32,
    /// Whether the key is on the engine's list of keys whose head waits for a fence.
    stalled: bool,
    line: Line,
}

/// One busy key, as [`Engine::inspect`] sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyView {
    pub resource: ResourceId,
    pub key: Id,
    /// The holders, oldest grant first.
    pub holders: Vec<HolderView>,
    /// Waiters that count (not away: see `line.rs`).
    pub waiting: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HolderView {
    pub req: Id,
    pub fence: u64,
    pub held_ms: u64,
}

/// Counts of what the engine keeps, for tests of its memory bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Registered resources (names the host has not forgotten).
    pub resources: usize,
    pub keys: usize,
    pub requests: usize,
    pub key_places: usize,
    pub request_places: usize,
    pub timers: usize,
    /// Claims pools keep (open, and tombstones of ids) and pool requests live.
    pub claims: usize,
    pub pool_requests: usize,
}

/// The lock engine of one store.
///
/// `Engine` has four kinds of methods, as quinn-proto's `Connection` has; the host keeps the
/// [calling rules](crate#calling-rules) through all of them.
///
/// # Commands
/// What the host's callers ask for; each changes the state and may queue events.
/// - Names: [`resource`](Engine::resource), [`forget`](Engine::forget).
/// - Holds: [`hold`](Engine::hold) and [`hold_untimed`](Engine::hold_untimed),
///   [`release`](Engine::release) and [`release_untimed`](Engine::release_untimed),
///   [`cancel`](Engine::cancel).
/// - The host's own grants: [`lend_fences`](Engine::lend_fences),
///   [`reclaim_fences`](Engine::reclaim_fences), [`adopt`](Engine::adopt).
/// - Leases over a connection (LOCK-05): [`hold_remote`](Engine::hold_remote),
///   [`renew`](Engine::renew), [`release_lease`](Engine::release_lease),
///   [`cancel_request`](Engine::cancel_request), [`connection_closed`](Engine::connection_closed),
///   [`goodbye`](Engine::goodbye), [`set_connection_limit`](Engine::set_connection_limit).
/// - Pools (issue #16, see `pool/`): [`pool`](Engine::pool), [`claim`](Engine::claim),
///   [`release_claim`](Engine::release_claim), [`confirm_claim`](Engine::confirm_claim),
///   [`resize_pool`](Engine::resize_pool), [`cancel_claim`](Engine::cancel_claim),
///   [`pool_remaining`](Engine::pool_remaining), [`open_pools`](Engine::open_pools).
/// - [`close`](Engine::close).
///
/// # Handlers
/// What the host's world answers: its timer fired ([`advance`](Engine::advance)), or storage
/// answered a write ([`persisted`](Engine::persisted), [`persist_failed`](Engine::persist_failed),
/// [`pool_written`](Engine::pool_written), [`pool_write_failed`](Engine::pool_write_failed)).
///
/// # Polls
/// What the host must do next, asked after every command and handler: answer requests
/// ([`poll_event`](Engine::poll_event), with [`peek_event`](Engine::peek_event) and
/// [`pending_events`](Engine::pending_events)), write a fence ceiling
/// ([`poll_persist`](Engine::poll_persist)) and the pools' changes
/// ([`poll_pool_write`](Engine::poll_pool_write), once a turn), and arm its timer
/// ([`next_deadline`](Engine::next_deadline)).
///
/// # Reads
/// Taking `&self`, changing nothing: [`inspect`](Engine::inspect),
/// [`resource_info`](Engine::resource_info), [`fence_of`](Engine::fence_of),
/// [`remote_of`](Engine::remote_of), [`connection_requests`](Engine::connection_requests),
/// [`remote_request`](Engine::remote_request), [`remote_lease`](Engine::remote_lease),
/// [`last_fence`](Engine::last_fence), [`fences_lent`](Engine::fences_lent),
/// [`persist_pending`](Engine::persist_pending), [`is_closed`](Engine::is_closed),
/// [`footprint`](Engine::footprint), and [`check`](Engine::check) for tests.
///
/// # Example
/// ```
/// use holdfast_engine::{Engine, Hold, Kind, Event};
/// let mut engine = Engine::open(None).unwrap();
/// let ceiling = engine.poll_persist().unwrap();   // the host writes it to storage, then:
/// engine.persisted(ceiling, 0);
/// let summaries = engine.resource(Kind::Lock, "summaries", 1).unwrap();
/// let Hold::Granted { req, key, fence } = engine.hold(summaries, None, Some(10_000), None, 0).unwrap()
///     else { unreachable!() };
/// assert_eq!(fence, 1);
/// let Hold::Queued { req: next, .. } = engine.hold(summaries, Some(key), Some(10_000), None, 5).unwrap()
///     else { unreachable!() };
/// engine.release(req, 7).unwrap();
/// assert_eq!(engine.poll_event(), Some(Event::Granted { req: next, fence: 2 }));
/// ```
pub struct Engine {
    resources: Slab<Resource>,
    by_name: HashMap<(Kind, String), ResourceId>,
    keys: Slab<Key>,
    reqs: Slab<Request>,
    timers: Timers,
    fences: FenceBook,
    /// Keys whose head waits for a fence, in the order they began to wait.
    stalled: Vec<Id>,
    /// The latest time the host gave; stamps grants made by the untimed calls.
    last_now: u64,
    events: VecDeque<Event>,
    closed: bool,
    /// Requests over connections by request id, by lease id, and by connection (see `remote.rs`).
    remotes: Remotes,
    /// The pools, their claims, lines and writes (see `pool/` and `pool.rs`).
    pools: Pools,
}

/// The limit of a busy key's resource.
fn limit_of(resources: &Slab<Resource>, key: &Key) -> u32 {
    resources
        .get_at(key.res)
        .expect("a busy key's resource is registered")
        .limit
}

/// Opening and closing, events, and what the host can read.
impl Engine {
    /// An engine whose storage holds `stored`, the last fence ceiling it acknowledged (`None` for a
    /// new store). It grants nothing until the host has written the ceiling from
    /// [`Engine::poll_persist`] and called [`Engine::persisted`].
    pub fn open(stored: Option<u64>) -> Result<Engine, Error> {
        let fences = FenceBook::open(stored).map_err(Error::Invalid)?;
        Ok(Engine {
            resources: Slab::default(),
            by_name: HashMap::new(),
            keys: Slab::default(),
            reqs: Slab::default(),
            timers: Timers::default(),
            fences,
            stalled: Vec::new(),
            last_now: 0,
            events: VecDeque::new(),
            closed: false,
            remotes: Remotes::default(),
            pools: Pools::default(),
        })
    }

    /// Closes the engine: every request ends with [`Event::Ended`], every key is forgotten, and every
    /// later call answers `closed`.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        for (req, request) in self.reqs.iter() {
            let held = matches!(request.state, State::Holding { .. });
            self.events.push_back(Event::Ended { req, held });
        }
        self.reqs.clear();
        self.keys.clear();
        for resource in self.resources.iter_mut() {
            resource.busy = 0;
        }
        self.timers.clear();
        self.stalled.clear();
        self.remotes = Remotes::default();
        self.pools.close(&mut self.events);
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    fn check_open(&self) -> Result<(), Error> {
        if self.closed {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    /// The next event for the host, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next event, left in place.
    pub fn peek_event(&self) -> Option<&Event> {
        self.events.front()
    }

    /// How many events wait to be polled.
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// A new busy key of `res`, with `held` holders and an empty line.
    fn new_key(&mut self, res: ResourceId, held: u32) -> Id {
        self.resources
            .get_mut(res.0)
            .expect("a known resource")
            .busy += 1;
        self.keys.insert(Key {
            res: res.index(),
            held,
            stalled: false,
            line: Line::default(),
        })
    }

    /// Every busy key with its holders and the number waiting, in key order.
    pub fn inspect(&self, now: u64) -> Result<Vec<KeyView>, Error> {
        self.check_open()?;
        let mut views: Vec<KeyView> = self
            .keys
            .iter()
            .map(|(key, k)| KeyView {
                resource: ResourceId(self.resources.id_at(k.res).expect("a busy key's resource")),
                key,
                holders: Vec::new(),
                waiting: k.line.active(),
            })
            .collect();
        let at: HashMap<Id, usize> = views.iter().enumerate().map(|(i, v)| (v.key, i)).collect();
        for (req, request) in self.reqs.iter() {
            if let State::Holding { fence, since, .. } = request.state {
                let view = &mut views[at[&request.key]];
                view.holders.push(HolderView {
                    req,
                    fence: fence.get(),
                    held_ms: now.saturating_sub(since.get()),
                });
            }
        }
        for view in &mut views {
            view.holders.sort_by_key(|h| h.fence);
        }
        Ok(views)
    }

    /// Counts of what the engine keeps.
    pub fn footprint(&self) -> Footprint {
        Footprint {
            resources: self.resources.len(),
            keys: self.keys.len(),
            requests: self.reqs.len(),
            key_places: self.keys.capacity(),
            request_places: self.reqs.capacity(),
            timers: self.timers.len(),
            claims: self.pools.counts().0,
            pool_requests: self.pools.counts().1,
        }
    }

    /// Checks every invariant of the module docs; panics naming the first broken one. For tests and
    /// the simulation; O(everything).
    pub fn check(&self) {
        let mut held: HashMap<Id, u32> = HashMap::new();
        let mut waiting: HashMap<Id, u32> = HashMap::new();
        let mut fences: HashMap<u64, Id> = HashMap::new();
        let mut away_count: HashMap<Id, u32> = HashMap::new();
        for (_, request) in self.reqs.iter() {
            assert!(
                self.keys.get(request.key).is_some(),
                "a request's key is busy"
            );
            match request.state {
                State::Holding { fence, .. } => {
                    let fence = fence.get();
                    assert!(
                        fence >= 1 && fence <= self.fences.last(),
                        "fence {fence} above the last handed out"
                    );
                    assert!(
                        fences.insert(fence, request.key).is_none(),
                        "fence {fence} held twice"
                    );
                    *held.entry(request.key).or_default() += 1;
                }
                State::Waiting { away, .. } => {
                    *waiting.entry(request.key).or_default() += 1;
                    if away.is_some() {
                        *away_count.entry(request.key).or_default() += 1;
                    }
                }
            }
        }
        let mut busy: HashMap<u32, u32> = HashMap::new();
        for (id, key) in self.keys.iter() {
            let limit = limit_of(&self.resources, key);
            *busy.entry(key.res).or_default() += 1;
            let h = held.get(&id).copied().unwrap_or(0);
            let w = waiting.get(&id).copied().unwrap_or(0);
            assert_eq!(key.held, h, "a key's count of holders");
            assert_eq!(key.line.waiting(), w, "a key's count of waiters");
            assert!(h <= limit, "more holders than the limit");
            assert!(h + w > 0, "an idle key is kept");
            assert!(
                key.line.kept() <= 2 * w as usize + 33,
                "a line keeps too many dead ids"
            );
            let a = away_count.get(&id).copied().unwrap_or(0);
            assert_eq!(key.line.active(), w - a, "a key's count of waiters away");
            if w > a && h < limit {
                assert!(
                    key.stalled && !self.fences.available(),
                    "a waiter while the key has room"
                );
            }
        }
        assert_eq!(
            self.by_name.len(),
            self.resources.len(),
            "by_name names every resource"
        );
        for (id, resource) in self.resources.iter() {
            assert_eq!(
                self.by_name.get(&(resource.kind, resource.name.clone())),
                Some(&ResourceId(id)),
                "by_name names every resource by its id"
            );
            assert_eq!(
                resource.busy,
                busy.get(&id.index()).copied().unwrap_or(0),
                "a resource's count of busy keys"
            );
        }
        self.pools.check();
    }
}

//! The engine: every key's holders and line, every request's state, and the deadlines that end them.
//!
//! # Implementation details
//! The host names a *resource* (a lock or a semaphore of one name) once, and then a key of it by the id
//! the engine gave the key when it became busy. The engine never sees key strings: the host maps its key
//! to the id while the key is busy and forgets it when the engine says [`Event::KeyIdle`]. So a hold of
//! a free key costs one call and copies no string, and an idle key costs nothing on either side.
//!
//! # Resources, and forgetting them
//! A resource lives from [`Engine::resource`] until the host forgets it ([`Engine::forget`]), so that
//! a name nobody uses costs nothing either: the host forgets a name once nothing of its own refers to
//! it (no handle, no key it granted itself, no request in flight), and registers it again when it is
//! next asked for. Forgetting is refused while the engine has a busy key of the resource. Ids are
//! generational (see `slab.rs`): a place freed by forgetting is reused by the next name, under
//! another generation, so an id the host kept past forgetting names no resource at all (`invalid`),
//! never another name's. A key keeps only the place of its resource, which cannot be forgotten
//! while the key is busy. The places a forgotten name leaves (in the slab, in `by_name`'s table)
//! serve the names after it, as a key's do: what names cost is that of the most in use at once.
//!
//! A *request* is one hold: first waiting in its key's line (perhaps not at all), then holding, then
//! gone. Its id names it in both states, so the host keeps one record per hold.
//!
//! # Fences lent to the host, and keys it granted itself
//! The host may grant an uncontended key without calling in at all: it borrows a block of fences
//! ([`Engine::lend_fences`]), takes the next of them for each lease it grants itself, and gives back
//! what it did not use ([`Engine::reclaim_fences`]) before it makes any other call — so that the
//! engine's own grants come after, and fences stay increasing in grant order. The engine knows
//! nothing of those leases until another request wants such a key: the host then hands the key over
//! ([`Engine::adopt`]), and the lease goes on as a holder of the engine's like any other.
//!
//! # Invariants (checked by [`Engine::check`] in tests)
//! - A key has at most its resource's `limit` holders, and has waiters only while it is full or while
//!   its head waits for a fence (no barging; see `line.rs`).
//! - Every key in the slab has a holder or a waiter; one that has neither is removed in the same call.
//! - Every key's resource is registered, and counts the key among its `busy` keys; `by_name` names
//!   exactly the registered resources.
//! - Fences grow with every grant and never exceed what storage acknowledged (see `fence.rs`); this
//!   holds across the host's own grants from lent fences, provided it reclaims them before every call
//!   that may grant. Holders have distinct fences.
//! - Every request is answered exactly once: granted then released, revoked or ended; or timed out,
//!   failed, cancelled or ended while waiting.

use std::collections::{HashMap, VecDeque};

use crate::bounds::{self, MAX_WAITERS};
use crate::error::Error;
use crate::event::{Event, Failure};
use crate::fence::FenceBook;
use crate::line::Line;
use crate::packed::Packed64;
use crate::remote::{Remote, Remotes};
use crate::slab::{Id, Slab};
use crate::timers::{Due, Entry, Timers};

/// A lock (one holder a key) or a semaphore (up to its limit). A lock and a semaphore of one name are
/// different things.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Lock,
    Semaphore,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Lock => "lock",
            Kind::Semaphore => "semaphore",
        }
    }
}

/// A lock or a semaphore of one name, as [`Engine::resource`] registered it: its place and the
/// generation of the place (see the module docs), which fit a JavaScript number as an [`Id`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ResourceId(Id);

impl ResourceId {
    /// The id as one integer below 2^53.
    pub fn to_u64(self) -> u64 {
        self.0.to_u64()
    }

    /// The id an earlier [`ResourceId::to_u64`] gave, or `None` when `raw` cannot be one. (Any other
    /// value that can be one names an unknown resource, which the engine refuses as `invalid`.)
    pub fn from_u64(raw: u64) -> Option<ResourceId> {
        Id::from_u64(raw).map(ResourceId)
    }

    /// The place: dense, and reused once the resource is forgotten.
    pub fn index(self) -> u32 {
        self.0.index()
    }
}

#[derive(Debug)]
struct Resource {
    kind: Kind,
    name: String,
    limit: u32,
    /// How many of its keys are busy (in `Engine::keys`): it is forgotten only at 0.
    busy: u32,
}

#[derive(Debug)]
pub(crate) struct Key {
    /// The place of its resource (see the module docs).
    res: u32,
    held: u32,
    /// Whether the key is on the engine's list of keys whose head waits for a fence.
    stalled: bool,
    pub(crate) line: Line,
}

/// What a request is doing. Its times and fence are [`Packed64`]s (aligned to 4), so that a request's
/// record has no padding: on wasm32 a [`Request`] takes 52 bytes and its slab place 56, where `u64`s
/// made them 72 and 80 (see `packed.rs`). One is kept for every held key.
#[derive(Clone, Copy, Debug)]
pub(crate) enum State {
    Waiting {
        deadline: Option<Packed64>,
        max_hold: Option<Packed64>,
        /// Away (its connection dropped) until then: passed over, keeping its place (see `line.rs`).
        away: Option<Packed64>,
    },
    Holding {
        fence: Packed64,
        since: Packed64,
        revoke_at: Option<Packed64>,
        /// For a lease over a connection: when it ends unless renewed (LOCK-05).
        expires_at: Option<Packed64>,
    },
}

impl State {
    /// How many timer entries stand for a request in this state.
    fn timers(&self) -> usize {
        match *self {
            State::Waiting { deadline, away, .. } => {
                deadline.is_some() as usize + away.is_some() as usize
            }
            State::Holding {
                revoke_at,
                expires_at,
                ..
            } => revoke_at.is_some() as usize + expires_at.is_some() as usize,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) key: Id,
    pub(crate) state: State,
    /// What a request made over a connection carries (see `remote.rs`).
    pub(crate) remote: Option<Box<Remote>>,
}

/// The answer of [`Engine::hold`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    /// The key was free and nobody waited: the request holds it now.
    Granted { req: Id, key: Id, fence: u64 },
    /// The request waits in line; an [`Event`] answers it later.
    Queued { req: Id, key: Id },
    /// The request would have to wait and its wait is 0; nothing changed.
    Busy { key: Id },
    /// A request over a connection asked again (same request id): it goes on as it was — holding,
    /// with the same lease and fence and its ttl counted from now, or waiting in its place.
    Resumed {
        req: Id,
        key: Id,
        fence: Option<u64>,
    },
}

/// How a request ended when the host cancelled it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancelled {
    /// It was waiting and left the line.
    Left,
    /// It had been granted (the grant raced the cancel): the lease was released and the key went on.
    Released,
    /// It had already ended.
    Unknown,
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
}

/// The lock engine of one store. See the module docs.
///
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
    pub(crate) keys: Slab<Key>,
    pub(crate) reqs: Slab<Request>,
    pub(crate) timers: Timers,
    fences: FenceBook,
    /// Keys whose head waits for a fence, in the order they began to wait.
    stalled: Vec<Id>,
    /// The latest time the host gave; stamps grants made by the untimed calls.
    pub(crate) last_now: u64,
    pub(crate) events: VecDeque<Event>,
    closed: bool,
    /// Requests over connections by request id, by lease id, and by connection (see `remote.rs`).
    pub(crate) remotes: Remotes,
}

/// The limit of a busy key's resource.
fn limit_of(resources: &Slab<Resource>, key: &Key) -> u32 {
    resources
        .get_at(key.res)
        .expect("a busy key's resource is registered")
        .limit
}

fn unknown(res: ResourceId) -> Error {
    Error::invalid(format!("unknown resource {}", res.to_u64()))
}

fn is_waiting(reqs: &Slab<Request>, id: Id) -> bool {
    matches!(
        reqs.get(id),
        Some(Request {
            state: State::Waiting { .. },
            ..
        })
    )
}

fn is_away(reqs: &Slab<Request>, id: Id) -> bool {
    matches!(
        reqs.get(id),
        Some(Request {
            state: State::Waiting { away: Some(_), .. },
            ..
        })
    )
}

pub(crate) fn timer_is_live(reqs: &Slab<Request>, entry: &Entry) -> bool {
    match (reqs.get(entry.req()).map(|r| r.state), entry.due()) {
        (Some(State::Waiting { away: Some(at), .. }), Due::Away) => at.get() == entry.at(),
        (
            Some(State::Waiting {
                deadline: Some(at), ..
            }),
            Due::Wait,
        ) => at.get() == entry.at(),
        (
            Some(State::Holding {
                revoke_at: Some(at),
                ..
            }),
            Due::Revoke,
        ) => at.get() == entry.at(),
        (
            Some(State::Holding {
                expires_at: Some(at),
                ..
            }),
            Due::Expire,
        ) => at.get() == entry.at(),
        _ => false,
    }
}

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
        })
    }

    /// Registers (or finds) the lock or semaphore `name`. A lock's limit is 1. Asking for a semaphore
    /// again with another limit is `invalid`, until it is forgotten.
    pub fn resource(&mut self, kind: Kind, name: &str, limit: u32) -> Result<ResourceId, Error> {
        self.check_open()?;
        bounds::check_name(name)?;
        let limit = match kind {
            Kind::Lock => 1,
            Kind::Semaphore => {
                bounds::check_limit(limit)?;
                limit
            }
        };
        if let Some(&id) = self.by_name.get(&(kind, name.to_owned())) {
            let had = self.resources.get(id.0).expect("a named resource").limit;
            if had != limit {
                return Err(Error::invalid(format!(
                    "semaphore {name}: limit {limit} differs from its limit {had}"
                )));
            }
            return Ok(id);
        }
        let id = ResourceId(self.resources.insert(Resource {
            kind,
            name: name.to_owned(),
            limit,
            busy: 0,
        }));
        self.by_name.insert((kind, name.to_owned()), id);
        Ok(id)
    }

    /// The kind, name and limit of a resource.
    pub fn resource_info(&self, id: ResourceId) -> Option<(Kind, &str, u32)> {
        self.resources
            .get(id.0)
            .map(|r| (r.kind, r.name.as_str(), r.limit))
    }

    /// Forgets a resource the host no longer refers to (see the module docs): its name and place go,
    /// and `id` names nothing from now on (the name registered again gets another id). Refused
    /// (`invalid`, changing nothing) while the engine has a busy key of it: a holder or a waiter, or
    /// a key handed over by [`Engine::adopt`]. The engine does not know the keys the host granted
    /// itself: the host must not forget a resource while it keeps one of them (it could not hand it
    /// over). `invalid` for an unknown resource; `closed` when closed.
    pub fn forget(&mut self, id: ResourceId) -> Result<(), Error> {
        self.check_open()?;
        let Some(resource) = self.resources.get(id.0) else {
            return Err(unknown(id));
        };
        if resource.busy > 0 {
            return Err(Error::invalid(format!(
                "{} {}: {} busy keys; a resource is forgotten only once idle",
                resource.kind.as_str(),
                resource.name,
                resource.busy
            )));
        }
        let resource = self.resources.remove(id.0).expect("just found");
        self.by_name.remove(&(resource.kind, resource.name));
        Ok(())
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

    /// Asks for a key of `res`: `key` is `None` for a key the host does not know to be busy (the engine
    /// makes it one), or the id the engine gave it while it is busy; an id that died meanwhile is taken
    /// as `None`, so the host must use the key id of the answer, and must forget a key on
    /// [`Event::KeyIdle`] only if it still maps the key to that very id. `wait` is how long the request may
    /// wait (`None`: without limit; `Some(0)`: only if the key is free); `max_hold` revokes the lease
    /// that long after its grant. Time is the host's monotonic clock in milliseconds.
    pub fn hold(
        &mut self,
        res: ResourceId,
        key: Option<Id>,
        wait: Option<u64>,
        max_hold: Option<u64>,
        now: u64,
    ) -> Result<Hold, Error> {
        self.check_open()?;
        // Deadlines that fell due before this call are acted on first: a holder past its maxHold no
        // longer counts, a waiter past its wait is no longer in line (the host's timer may be late).
        self.advance(now);
        self.hold_at(res, key, wait, max_hold, Some(now), None)
            .map(|hold| hold.expect("a timed hold always answers"))
    }

    /// [`Engine::hold`] for a host that has not read its clock: answers `Ok(None)`, changing nothing,
    /// when the hold needs the time — a key already busy while any deadline is set (its holders' and
    /// waiters' deadlines may have fallen due), or a hold that would wait with a deadline or be
    /// granted with a `max_hold`; the host then reads its clock and calls [`Engine::hold`]. A grant
    /// that needs no deadline is stamped with the latest time the engine was given, which only
    /// `inspect` reads. Reading a clock costs more than the rest of an uncontended hold on some hosts:
    /// this skips it, and so does a hold that joins a line without a deadline while no deadline is
    /// set anywhere (nothing can have fallen due).
    pub fn hold_untimed(
        &mut self,
        res: ResourceId,
        key: Option<Id>,
        wait: Option<u64>,
        max_hold: Option<u64>,
    ) -> Result<Option<Hold>, Error> {
        if key.is_some() && self.next_deadline().is_some() {
            return Ok(None);
        }
        self.hold_at(res, key, wait, max_hold, None, None)
    }

    pub(crate) fn hold_at(
        &mut self,
        res: ResourceId,
        key: Option<Id>,
        wait: Option<u64>,
        max_hold: Option<u64>,
        now: Option<u64>,
        remote: Option<Remote>,
    ) -> Result<Option<Hold>, Error> {
        self.check_open()?;
        let limit = match self.resources.get(res.0) {
            Some(r) => r.limit,
            None => return Err(unknown(res)),
        };
        if let Some(ms) = max_hold {
            bounds::check_max_hold(ms)?;
        }
        // A key id that died (the key went idle, perhaps by the deadlines this very call acted on, before
        // the host heard of it) names a free key: it is made anew, and the answer carries its new id.
        let key = key.filter(|&id| self.keys.get(id).is_some());
        let free = match key {
            Some(id) => match self.keys.get(id) {
                Some(k) if k.res == res.index() => k.held < limit && k.line.active() == 0,
                _ => {
                    return Err(Error::invalid(format!(
                        "key id {} is a busy key of another resource",
                        id.to_u64()
                    )))
                }
            },
            None => true,
        };
        let granted = free && self.fences.available();
        let needs_time = if granted {
            max_hold.is_some() || remote.is_some()
        } else {
            // It waits, with a deadline unless its wait has no limit (or it only waits for storage).
            !(free && wait == Some(0)) && wait.is_some_and(|ms| ms > 0 || free)
        };
        let now = match now {
            Some(now) => now,
            None if needs_time => return Ok(None),
            None => self.last_now,
        };
        if !free && wait == Some(0) {
            // Busy, and it would not wait: nothing changes.
            return Ok(Some(Hold::Busy {
                key: key.expect("only a known key is busy"),
            }));
        }
        if !granted {
            if let Some(waiting) = key
                .and_then(|id| self.keys.get(id))
                .map(|k| k.line.waiting())
            {
                if waiting >= MAX_WAITERS {
                    return Err(Error::limit(format!(
                        "{MAX_WAITERS} waiters on one key is the most"
                    )));
                }
            }
        }
        let key_id = match key {
            Some(id) => id,
            None => self.new_key(res, 0),
        };
        let remote = remote.map(Box::new);
        if granted {
            self.keys.get_mut(key_id).expect("key just found").held += 1;
            let fence = self.fences.take();
            let revoke_at = max_hold.map(|ms| now.saturating_add(ms).into());
            let expires_at = remote.as_ref().map(|r| now.saturating_add(r.ttl).into());
            let req = self.reqs.insert(Request {
                key: key_id,
                state: State::Holding {
                    fence: fence.into(),
                    since: now.into(),
                    revoke_at,
                    expires_at,
                },
                remote,
            });
            self.arm(req);
            self.index_remote(req);
            return Ok(Some(Hold::Granted {
                req,
                key: key_id,
                fence,
            }));
        }
        // A free key whose grant only waits for storage to acknowledge fences: a request that would not
        // wait for other holders waits for the write, which is not waiting for the key.
        let deadline = match (free, wait) {
            (true, Some(0)) => None,
            (_, wait) => wait.map(|ms| now.saturating_add(ms).into()),
        };
        let req = self.reqs.insert(Request {
            key: key_id,
            state: State::Waiting {
                deadline,
                max_hold: max_hold.map(Packed64::from),
                away: None,
            },
            remote,
        });
        self.keys
            .get_mut(key_id)
            .expect("key just found")
            .line
            .push(req);
        self.arm(req);
        self.index_remote(req);
        if free {
            self.pump(key_id, now);
        }
        Ok(Some(Hold::Queued { req, key: key_id }))
    }

    /// Pushes a timer entry for each deadline of a request's state.
    pub(crate) fn arm(&mut self, req: Id) {
        let state = self.reqs.get(req).expect("a request").state;
        match state {
            State::Waiting { deadline, away, .. } => {
                if let Some(at) = deadline {
                    self.timers.push(Entry::new(at.get(), req, Due::Wait));
                }
                if let Some(at) = away {
                    self.timers.push(Entry::new(at.get(), req, Due::Away));
                }
            }
            State::Holding {
                revoke_at,
                expires_at,
                ..
            } => {
                if let Some(at) = revoke_at {
                    self.timers.push(Entry::new(at.get(), req, Due::Revoke));
                }
                if let Some(at) = expires_at {
                    self.timers.push(Entry::new(at.get(), req, Due::Expire));
                }
            }
        }
    }

    /// Ends a request: the one place requests leave the slab. Forgets its timer entries and its
    /// remote ids, takes it off its key (a holder) or its line (a waiter), and answers it with the
    /// key it was on. The caller then pumps the key.
    pub(crate) fn end_request(&mut self, req: Id) -> Request {
        let request = self.reqs.remove(req).expect("a live request");
        self.timers
            .forget(request.state.timers(), |e| timer_is_live(&self.reqs, e));
        if let Some(remote) = &request.remote {
            self.remotes.unindex(req, remote);
        }
        let key = self
            .keys
            .get_mut(request.key)
            .expect("a request's key is busy");
        match request.state {
            State::Holding { .. } => key.held -= 1,
            State::Waiting { away, .. } => {
                if away.is_some() {
                    key.line.set_away(-1);
                }
                let reqs = &self.reqs;
                key.line.left(|id| is_waiting(reqs, id));
            }
        }
        request
    }

    /// Lets a held lease go; the key goes to the next in line in this same call. Answers `false` when
    /// the request holds nothing (released before, revoked, or never granted), which is harmless.
    pub fn release(&mut self, req: Id, now: u64) -> Result<bool, Error> {
        self.check_open()?;
        // A lease past its maxHold or ttl is revoked first: its release then holds nothing.
        self.advance(now);
        if !matches!(
            self.reqs.get(req),
            Some(Request {
                state: State::Holding { .. },
                ..
            })
        ) {
            return Ok(false);
        }
        let key = self.end_request(req).key;
        self.pump(key, now);
        Ok(true)
    }

    /// [`Engine::release`] for a host that has not read its clock: answers `Ok(None)`, changing
    /// nothing, when the release needs the time: the lease has a deadline (it may have fallen due),
    /// or the key goes on to a waiter while any deadline is set (it may have fallen due) or whose
    /// grant starts one (a `max_hold`, or a lease over a connection). A waiter granted without the
    /// time is stamped with the latest time the engine was given, as an untimed grant is.
    pub fn release_untimed(&mut self, req: Id) -> Result<Option<bool>, Error> {
        self.check_open()?;
        let key = match self.reqs.get(req) {
            Some(Request {
                key,
                state:
                    State::Holding {
                        revoke_at: None,
                        expires_at: None,
                        ..
                    },
                ..
            }) => *key,
            Some(Request {
                state: State::Holding { .. },
                ..
            }) => return Ok(None),
            _ => return Ok(Some(false)),
        };
        if self.keys.get(key).is_some_and(|k| k.line.active() > 0) && !self.grant_untimed(key) {
            return Ok(None);
        }
        self.release(req, self.last_now).map(Some)
    }

    /// Whether the head of `key`'s line may be granted without the time: no deadline is set anywhere
    /// (none can have fallen due) and its grant starts none.
    fn grant_untimed(&mut self, key: Id) -> bool {
        if self.next_deadline().is_some() {
            return false;
        }
        let reqs = &self.reqs;
        let Some((_, head)) = self.keys.get_mut(key).and_then(|k| {
            k.line
                .head(|id| is_waiting(reqs, id), |id| is_away(reqs, id))
        }) else {
            return true;
        };
        matches!(
            self.reqs.get(head),
            Some(Request {
                state: State::Waiting { max_hold: None, .. },
                remote: None,
                ..
            })
        )
    }

    /// Ends a request the host no longer wants (its signal aborted, its caller went away). A waiting
    /// request leaves the line; one whose grant raced the cancel is released, and its key goes on.
    pub fn cancel(&mut self, req: Id, now: u64) -> Result<Cancelled, Error> {
        self.check_open()?;
        self.advance(now);
        match self.reqs.get(req).map(|r| r.state) {
            None => Ok(Cancelled::Unknown),
            Some(State::Holding { .. }) => {
                self.release(req, now)?;
                Ok(Cancelled::Released)
            }
            Some(State::Waiting { .. }) => {
                self.last_now = self.last_now.max(now);
                let key = self.end_request(req).key;
                self.pump(key, now);
                Ok(Cancelled::Left)
            }
        }
    }

    /// The earliest time at which [`Engine::advance`] has something to do.
    pub fn next_deadline(&mut self) -> Option<u64> {
        while let Some(entry) = self.timers.peek() {
            if timer_is_live(&self.reqs, &entry) {
                return Some(entry.at());
            }
            self.timers.pop();
        }
        None
    }

    /// Acts on every deadline at or before `now`, earliest first: waits that ran out leave their line,
    /// leases at `maxHold` are revoked, leases over a connection past their ttl end, and their keys
    /// go on.
    pub fn advance(&mut self, now: u64) {
        if self.closed {
            return;
        }
        self.last_now = self.last_now.max(now);
        while let Some(entry) = self.timers.peek() {
            if entry.at() > now {
                break;
            }
            let live = timer_is_live(&self.reqs, &entry);
            self.timers.pop();
            if !live {
                continue;
            }
            let key = self.end_request(entry.req()).key;
            self.events.push_back(match entry.due() {
                Due::Wait => Event::TimedOut { req: entry.req() },
                Due::Revoke => Event::Revoked { req: entry.req() },
                Due::Expire => Event::Expired { req: entry.req() },
                Due::Away => Event::Ended {
                    req: entry.req(),
                    held: false,
                },
            });
            // The key went on at the deadline, not at `now` (later, when the host's timer is late):
            // its next holder's grant is stamped then, and a waiter whose wait ran out between the
            // two instants was still in line at the deadline.
            self.pump(key, entry.at());
        }
    }

    /// Grants the key to the head of its line while it has room, or forgets it when it is idle.
    pub(crate) fn pump(&mut self, key_id: Id, now: u64) {
        loop {
            let Some(key) = self.keys.get_mut(key_id) else {
                return;
            };
            let res = key.res;
            let limit = limit_of(&self.resources, key);
            let reqs = &self.reqs;
            let head = if key.held < limit {
                key.line
                    .head(|id| is_waiting(reqs, id), |id| is_away(reqs, id))
            } else {
                None
            };
            let Some((at, head)) = head else {
                if key.held == 0 && key.line.is_empty() {
                    key.stalled = false;
                    self.stalled.retain(|&k| k != key_id);
                    self.keys.remove(key_id);
                    let id = self.resources.id_at(res).expect("a busy key's resource");
                    self.resources.get_mut(id).expect("registered").busy -= 1;
                    self.events.push_back(Event::KeyIdle { key: key_id });
                }
                return;
            };
            if !self.fences.available() {
                if !key.stalled {
                    key.stalled = true;
                    self.stalled.push(key_id);
                }
                if !self.fences.exhausted() {
                    self.fences.retry();
                    return;
                }
                // No fence is left to wait for: answer the head instead of stalling forever.
                self.end_request(head);
                self.events.push_back(Event::Failed {
                    req: head,
                    why: Failure::FencesUsedUp,
                });
                continue;
            }
            key.line.take(at);
            key.held += 1;
            let fence = self.fences.take();
            let request = self.reqs.get_mut(head).expect("head waits");
            let State::Waiting {
                deadline, max_hold, ..
            } = request.state
            else {
                unreachable!("the head of a line waits")
            };
            request.state = State::Holding {
                fence: fence.into(),
                since: now.into(),
                revoke_at: max_hold.map(|ms| now.saturating_add(ms.get()).into()),
                expires_at: (request.remote.as_ref()).map(|r| now.saturating_add(r.ttl).into()),
            };
            self.timers.forget(deadline.is_some() as usize, |e| {
                timer_is_live(&self.reqs, e)
            });
            self.arm(head);
            self.events.push_back(Event::Granted { req: head, fence });
        }
    }

    /// The fence ceiling the host must write to storage now, if any. The host writes it (as a decimal
    /// string) and then calls [`Engine::persisted`] or [`Engine::persist_failed`] with it.
    pub fn poll_persist(&mut self) -> Option<u64> {
        if self.closed {
            return None;
        }
        self.fences.poll_persist()
    }

    /// Whether a ceiling was handed to the host to write and is not yet answered. A host that closes
    /// waits for it before it lets the storage go, so that a late write never lands after another
    /// store opened on the same storage.
    pub fn persist_pending(&self) -> bool {
        self.fences.pending().is_some()
    }

    /// Storage acknowledged `ceiling`: grants that waited for fences go ahead, in the order they stalled.
    pub fn persisted(&mut self, ceiling: u64, now: u64) {
        if self.closed {
            self.fences.persisted(ceiling); // nothing is granted, but nothing stays pending either
            return;
        }
        // Deadlines that fell due before the write was answered are acted on first, as they were.
        self.advance(now);
        self.fences.persisted(ceiling);
        for key in std::mem::take(&mut self.stalled) {
            if let Some(k) = self.keys.get_mut(key) {
                k.stalled = false;
                self.pump(key, now);
            }
        }
    }

    /// Storage failed to keep `ceiling`: every request that was about to be granted with a fence it
    /// would have covered is answered [`Failure::Storage`] and leaves its line, rather than be granted a
    /// fence a later store might hand out again. Requests behind them that become due ask again.
    pub fn persist_failed(&mut self, ceiling: u64, now: u64) {
        if self.closed {
            self.fences.failed(ceiling);
            return;
        }
        self.advance(now);
        self.fences.failed(ceiling);
        if self.fences.available() {
            return; // an earlier ceiling still covers them
        }
        for key_id in std::mem::take(&mut self.stalled) {
            let Some(key) = self.keys.get_mut(key_id) else {
                continue;
            };
            key.stalled = false;
            let room = limit_of(&self.resources, key) - key.held;
            for _ in 0..room {
                let reqs = &self.reqs;
                let Some(head) = self.keys.get_mut(key_id).and_then(|k| {
                    k.line
                        .head(|id| is_waiting(reqs, id), |id| is_away(reqs, id))
                }) else {
                    break;
                };
                let head = head.1;
                self.end_request(head);
                self.events.push_back(Event::Failed {
                    req: head,
                    why: Failure::Storage,
                });
            }
            self.pump(key_id, now);
        }
    }

    /// Lends the host a block of up to `max` fences, `(first, end)` with `end` exclusive, for the
    /// leases it grants itself (see the module docs): it hands them out in order, from `first`, and
    /// calls [`Engine::reclaim_fences`] with the first one it did not use before any other call that
    /// may grant (any call but this one's and the ones that only read). `None` when the store is
    /// closed, no fence is covered now (storage has not acknowledged the ceiling; grants wait for
    /// it), a block is lent already, or `max` is 0. Lending may ask for the next ceiling: the host
    /// polls [`Engine::poll_persist`] after it, as after a grant.
    pub fn lend_fences(&mut self, max: u64) -> Option<(u64, u64)> {
        if self.closed {
            return None;
        }
        self.fences.lend(max)
    }

    /// The host gives back the block [`Engine::lend_fences`] lent: `unused` is the first fence of it
    /// the host did not hand out (`end` if it used them all). The engine's grants go on from it.
    ///
    /// # Panics
    /// When no block is lent or `unused` is outside it: the host broke the order of fences.
    pub fn reclaim_fences(&mut self, unused: u64) {
        self.fences.reclaim(unused);
    }

    /// Whether a block of fences is lent to the host.
    pub fn fences_lent(&self) -> bool {
        self.fences.lent().is_some()
    }

    /// The host granted a free key of `res` itself, with `fence` (from a block it was lent) at its
    /// time `since`, and now another request wants the key: the engine takes the holding over. It
    /// makes the key busy with that one holder (answered as [`Hold::Granted`], with its request and
    /// key ids) and an empty line; the host then asks for the other request with [`Engine::hold`] on
    /// that key id, and releases the adopted lease with [`Engine::release`] like any other. It takes
    /// no fence, sets no deadline and queues no event; `since` (which may be older than the latest
    /// time the engine was given) only stamps the holder for [`Engine::inspect`].
    ///
    /// The host must adopt only a key the engine does not know to be busy (one it has no key id for):
    /// the engine cannot tell one key of a resource from another, so it cannot check that. Errors
    /// (`invalid`): an unknown resource, or a fence the engine never handed out (0, or above
    /// [`Engine::last_fence`]: the host reclaims its block first); `closed` when closed.
    pub fn adopt(&mut self, res: ResourceId, fence: u64, since: u64) -> Result<Hold, Error> {
        self.check_open()?;
        if self.resources.get(res.0).is_none() {
            return Err(unknown(res));
        }
        if fence == 0 || fence > self.fences.last() {
            return Err(Error::invalid(format!(
                "fence {fence} to adopt was never handed out (the last is {})",
                self.fences.last()
            )));
        }
        let key = self.new_key(res, 1);
        let req = self.reqs.insert(Request {
            key,
            state: State::Holding {
                fence: fence.into(),
                since: since.into(),
                revoke_at: None,
                expires_at: None,
            },
            remote: None,
        });
        Ok(Hold::Granted { req, key, fence })
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
    }

    pub fn is_closed(&self) -> bool {
        self.closed
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

    /// The fence of a held request, if it holds.
    pub fn fence_of(&self, req: Id) -> Option<u64> {
        match self.reqs.get(req)?.state {
            State::Holding { fence, .. } => Some(fence.get()),
            State::Waiting { .. } => None,
        }
    }

    /// The last fence handed out (0 before the first). While a block is lent to the host, the last
    /// of the block, used or not (the engine does not know how far the host got).
    pub fn last_fence(&self) -> u64 {
        self.fences.last()
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
        }
    }

    pub(crate) fn check_open(&self) -> Result<(), Error> {
        if self.closed {
            Err(Error::Closed)
        } else {
            Ok(())
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    /// What a held key costs is mostly its request's record: these sizes are the ones measured.
    #[test]
    fn a_request_record_has_no_padding() {
        assert_eq!((size_of::<State>(), align_of::<State>()), (40, 4));
        #[cfg(target_pointer_width = "32")]
        assert_eq!(size_of::<Request>(), 52);
        #[cfg(target_pointer_width = "64")]
        assert_eq!(size_of::<Request>(), 56);
    }
}

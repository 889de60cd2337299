//! Leases over a connection (LOCK-05): what a request made by another process carries, and the
//! operations that only such requests have.
//!
//! # The rules
//! - A lease over a connection lasts its `ttl` from its grant and from each renewal. One that ran out
//!   is never renewed (the renewal answers [`Renewal::Lost`]), and its key goes to the next in line at
//!   its deadline even if nobody else ever asks for the key.
//! - Each request carries a request id of the client's (16 random bytes). Asked again with the same
//!   id — after a dropped connection, say — it goes on as it was: holding, with the same lease and
//!   fence and its ttl counted from this answer, or waiting in its place in line. Never a second
//!   grant for one request. An id whose request ended is new again.
//! - A lease is named by a lease id (16 random bytes from the host's cryptographic source) that only
//!   its holder learns; renewing and releasing need it. The fence is public and proves nothing.
//! - A connection that ends without goodbye takes its waiting requests out of the line's way at once:
//!   they are *away* (see `line.rs`) — passed over, never granted, waited for by nobody — but keep
//!   their place for their ttl, so that a client that reconnects in time and asks again is back in
//!   its place; not asked again by then, they are cancelled. Its leases live until their ttl, so
//!   that a client that reconnects in time keeps them. A connection that says goodbye ends its
//!   requests, leases and waiting, at once. Each connection may have at most `connection_limit`
//!   requests, leases and waiting.

use std::collections::{HashMap, HashSet};

use super::deadlines::timer_is_live;
use super::hold::{Cancelled, Hold};
use super::id_hash::BuildIdHasher;
use super::request::{Request, State};
use super::resource::ResourceId;
use super::Engine;
use crate::bounds;
use crate::error::Error;
use crate::event::Event;
use crate::packed::Packed64;
use crate::slab::Id;
use crate::timers::{Due, Entry};

/// The default of [`Engine::set_connection_limit`].
pub const CONNECTION_LIMIT: usize = 10_000;

/// What a request over a connection carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// The host's number for the connection the request was last asked on.
    pub conn: u32,
    /// The client's id of the request.
    pub request: u128,
    /// The lease's secret id, drawn by the host.
    pub lease: u128,
    /// How long the lease lasts from its grant and each renewal, in ms (1 s to 1 h).
    pub ttl: u64,
}

/// The answer of [`Engine::renew`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// The lease lasts `ttl` ms more from now; `revoke_in` is how long until its `maxHold`, if any.
    Renewed { ttl: u64, revoke_in: Option<u64> },
    /// No such lease holds: it ran out, was revoked, released, or never was.
    Lost,
}

/// The indexes of requests over connections, hashed by `id_hash.rs` (their keys are random ids and
/// the host's numbers).
#[derive(Debug)]
pub(super) struct Remotes {
    by_request: HashMap<u128, Id, BuildIdHasher>,
    by_lease: HashMap<u128, Id, BuildIdHasher>,
    by_conn: HashMap<u32, HashSet<Id, BuildIdHasher>, BuildIdHasher>,
    limit: usize,
}

impl Default for Remotes {
    fn default() -> Self {
        Remotes {
            by_request: HashMap::default(),
            by_lease: HashMap::default(),
            by_conn: HashMap::default(),
            limit: CONNECTION_LIMIT,
        }
    }
}

impl Remotes {
    fn index(&mut self, req: Id, remote: &Remote) {
        self.by_request.insert(remote.request, req);
        self.by_lease.insert(remote.lease, req);
        self.by_conn.entry(remote.conn).or_default().insert(req);
    }

    pub(super) fn unindex(&mut self, req: Id, remote: &Remote) {
        self.by_request.remove(&remote.request);
        self.by_lease.remove(&remote.lease);
        if let Some(set) = self.by_conn.get_mut(&remote.conn) {
            set.remove(&req);
            if set.is_empty() {
                self.by_conn.remove(&remote.conn);
            }
        }
    }

    fn count(&self, conn: u32) -> usize {
        self.by_conn.get(&conn).map_or(0, HashSet::len)
    }
}

/// A view of a request over a connection, for the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteView {
    pub remote: Remote,
    /// The fence, if it holds.
    pub fence: Option<u64>,
    /// When it ends unless renewed, if it holds.
    pub expires_at: Option<u64>,
    /// When `maxHold` revokes it, if it holds and has one.
    pub revoke_at: Option<u64>,
}

/// Leases over a connection (LOCK-05).
impl Engine {
    /// Indexes a just-made request that carries a remote part.
    pub(super) fn index_remote(&mut self, req: Id) {
        if let Some(remote) = self
            .reqs
            .get(req)
            .and_then(|r| r.remote.as_deref())
            .copied()
        {
            self.remotes.index(req, &remote);
        }
    }

    /// How many requests one connection may have, leases and waiting together.
    pub fn set_connection_limit(&mut self, limit: usize) {
        self.remotes.limit = limit;
    }

    /// A hold over a connection: as [`Engine::hold`], for a lease that lasts `remote.ttl` from its
    /// grant and each renewal. Asked again with a request id that is still live, it answers
    /// [`Hold::Resumed`] (and moves the request to `remote.conn`); the new `wait`, `max_hold` and
    /// lease id are then ignored.
    pub fn hold_remote(
        &mut self,
        res: ResourceId,
        key: Option<Id>,
        wait: Option<u64>,
        max_hold: Option<u64>,
        remote: Remote,
        now: u64,
    ) -> Result<Hold, Error> {
        self.check_open()?;
        // A lease past its ttl or maxHold, or a waiter away past its ttl, ends before it is asked
        // again: asked again after that, its request is new.
        self.advance(now);
        bounds::check_ttl(remote.ttl)?;
        if let Some(&req) = self.remotes.by_request.get(&remote.request) {
            // Asked again, a request names the key it was asked for: under another key (or
            // resource) the id is a client's mistake, and answering the lease of the first key would
            // tell it that it holds the second.
            let asked = self.reqs.get(req).expect("an indexed request").key;
            if key != Some(asked) || self.keys.get(asked).is_none_or(|k| k.res != res.index()) {
                return Err(Error::invalid(
                    "request id already names a hold of another key: draw it again",
                ));
            }
            return Ok(self.resume(req, remote.conn, now));
        }
        if self.remotes.count(remote.conn) >= self.remotes.limit {
            return Err(Error::limit(format!(
                "one connection may have at most {} {}",
                self.remotes.limit,
                if self.remotes.limit == 1 {
                    "lease or waiting hold"
                } else {
                    "leases and waiting holds"
                }
            )));
        }
        if self.remotes.by_lease.contains_key(&remote.lease) {
            return Err(Error::invalid("lease id already in use: draw it again"));
        }
        self.hold_at(res, key, wait, max_hold, Some(now), Some(remote))
            .map(|hold| hold.expect("a timed hold always answers"))
    }

    fn resume(&mut self, req: Id, conn: u32, now: u64) -> Hold {
        let request = self.reqs.get_mut(req).expect("an indexed request");
        let remote = request
            .remote
            .as_deref_mut()
            .expect("an indexed request is remote");
        let old = *remote;
        remote.conn = conn;
        let (key, new) = (request.key, *remote);
        self.remotes.unindex(req, &old);
        self.remotes.index(req, &new);
        match self.reqs.get(req).expect("live").state {
            State::Holding { fence, .. } => {
                self.extend(req, now);
                Hold::Resumed {
                    req,
                    key,
                    fence: Some(fence.get()),
                }
            }
            State::Waiting { away, .. } => {
                if away.is_some() {
                    // Back in its place: it counts again, and may be the head now.
                    if let Some(State::Waiting { away, .. }) =
                        self.reqs.get_mut(req).map(|r| &mut r.state)
                    {
                        *away = None;
                    }
                    self.timers.forget(1, |e| timer_is_live(&self.reqs, e));
                    self.keys.get_mut(key).expect("busy").line.set_away(-1);
                    self.pump(key, now);
                }
                Hold::Resumed {
                    req,
                    key,
                    fence: None,
                }
            }
        }
    }

    /// Counts a holding lease's ttl again from `now`.
    fn extend(&mut self, req: Id, now: u64) {
        let request = self.reqs.get_mut(req).expect("a live request");
        let at = now.saturating_add(request.remote.as_ref().expect("remote").ttl);
        let State::Holding { expires_at, .. } = &mut request.state else {
            unreachable!("only a holder is extended")
        };
        if *expires_at == Some(at.into()) {
            return; // its entry still stands
        }
        *expires_at = Some(at.into());
        // The old expiry entry is dead now that its time no longer matches.
        self.timers.forget(1, |e| timer_is_live(&self.reqs, e));
        self.timers.push(Entry::new(at, req, Due::Expire));
    }

    /// Renews a lease over a connection for its ttl from `now`. A lease past its deadline is never
    /// renewed, even if the host has not yet called [`Engine::advance`]: it ends now instead.
    pub fn renew(&mut self, lease: u128, now: u64) -> Result<Renewal, Error> {
        self.check_open()?;
        self.advance(now);
        let Some(&req) = self.remotes.by_lease.get(&lease) else {
            return Ok(Renewal::Lost);
        };
        let request = self.reqs.get(req).expect("an indexed request");
        let ttl = request.remote.as_ref().expect("remote").ttl;
        match request.state {
            State::Holding {
                expires_at: Some(at),
                revoke_at,
                ..
            } => {
                let revoke_at = revoke_at.map(Packed64::get);
                let revoked = revoke_at.is_some_and(|r| r <= now);
                if at.get() <= now || revoked {
                    let key = self.end_request(req).key;
                    self.events.push_back(if revoked {
                        Event::Revoked { req }
                    } else {
                        Event::Expired { req }
                    });
                    self.pump(key, now);
                    return Ok(Renewal::Lost);
                }
                self.extend(req, now);
                Ok(Renewal::Renewed {
                    ttl,
                    revoke_in: revoke_at.map(|r| r - now),
                })
            }
            // Still waiting: nothing to renew, and nothing lost.
            _ => Ok(Renewal::Lost),
        }
    }

    /// Lets a lease over a connection go, named by its lease id.
    pub fn release_lease(&mut self, lease: u128, now: u64) -> Result<bool, Error> {
        match self.remotes.by_lease.get(&lease) {
            Some(&req) => self.release(req, now),
            None => Ok(false),
        }
    }

    /// Cancels a request over a connection, named by its request id (see [`Engine::cancel`]).
    pub fn cancel_request(&mut self, request: u128, now: u64) -> Result<Cancelled, Error> {
        match self.remotes.by_request.get(&request) {
            Some(&req) => self.cancel(req, now),
            None => Ok(Cancelled::Unknown),
        }
    }

    /// A connection ended without goodbye: its waiting requests go away at once (passed over,
    /// keeping their place for their ttl; cancelled with an [`Event::Ended`] if not asked again by
    /// then); its leases live until their ttl. Answers the requests that went away.
    pub fn connection_closed(&mut self, conn: u32, now: u64) -> Vec<Id> {
        if self.is_closed() {
            return Vec::new();
        }
        self.advance(now);
        let mut ids = self.connection_ids(conn);
        ids.retain(|&req| {
            matches!(
                self.reqs.get(req).map(|r| r.state),
                Some(State::Waiting { away: None, .. })
            )
        });
        for &req in &ids {
            let request = self.reqs.get_mut(req).expect("live");
            let until = now.saturating_add(request.remote.as_ref().expect("remote").ttl);
            let key = request.key;
            if let State::Waiting { away, .. } = &mut request.state {
                *away = Some(until.into());
            }
            self.timers.push(Entry::new(until, req, Due::Away));
            self.keys.get_mut(key).expect("busy").line.set_away(1);
            self.pump(key, now);
        }
        ids
    }

    fn connection_ids(&self, conn: u32) -> Vec<Id> {
        let mut ids: Vec<Id> = self
            .remotes
            .by_conn
            .get(&conn)
            .map(|set| set.iter().copied().collect())
            .unwrap_or_default();
        ids.sort(); // the order of a hash set is not the same from run to run: keep replays exact
        ids
    }

    /// A connection said goodbye: its waiting requests leave their lines, then its leases are
    /// released, each with an [`Event::Ended`]. Answers every request it ended so, waiters first.
    /// (A request that a pump ended meanwhile, failed for want of fences, had its [`Event::Failed`]
    /// instead and is not listed.)
    pub fn goodbye(&mut self, conn: u32, now: u64) -> Vec<Id> {
        if self.is_closed() {
            return Vec::new();
        }
        self.advance(now);
        let mut ended = Vec::new();
        // Its waiters leave first, so that releasing its leases never hands a key to one of them.
        let mut ids = self.connection_ids(conn);
        ids.sort_by_key(|&req| {
            matches!(
                self.reqs.get(req).map(|r| r.state),
                Some(State::Holding { .. })
            )
        });
        for req in ids {
            // A release's pump may have ended a later one of them (failed for want of fences).
            if self.reqs.get(req).is_none() {
                continue;
            }
            ended.push(req);
            let holding = matches!(
                self.reqs.get(req).map(|r| r.state),
                Some(State::Holding { .. })
            );
            let key = self.end_request(req).key;
            self.events.push_back(Event::Ended { req, held: holding });
            self.pump(key, now);
        }
        ended
    }

    /// The remote part of a request, if it has one.
    pub fn remote_of(&self, req: Id) -> Option<RemoteView> {
        let request: &Request = self.reqs.get(req)?;
        let remote = *request.remote.as_deref()?;
        Some(match request.state {
            State::Holding {
                fence,
                expires_at,
                revoke_at,
                ..
            } => RemoteView {
                remote,
                fence: Some(fence.get()),
                expires_at: expires_at.map(Packed64::get),
                revoke_at: revoke_at.map(Packed64::get),
            },
            State::Waiting { .. } => RemoteView {
                remote,
                fence: None,
                expires_at: None,
                revoke_at: None,
            },
        })
    }

    /// How many requests a connection has.
    pub fn connection_requests(&self, conn: u32) -> usize {
        self.remotes.count(conn)
    }

    /// How many of a connection's requests wait in line (not away): what a host asks of a connection
    /// that has gone silent, to know whether anyone waits on it. It walks that connection's requests
    /// only, so it costs nothing on a hold's path.
    pub fn connection_waiting(&self, conn: u32) -> usize {
        self.remotes.by_conn.get(&conn).map_or(0, |set| {
            set.iter()
                .filter(|&&req| {
                    matches!(
                        self.reqs.get(req).map(|r| r.state),
                        Some(State::Waiting { away: None, .. })
                    )
                })
                .count()
        })
    }

    /// The live request over a connection with this request id (the client's), if any: waiting,
    /// holding, or away after its connection dropped.
    pub fn remote_request(&self, request: u128) -> Option<Id> {
        self.remotes.by_request.get(&request).copied()
    }

    /// The live request over a connection that holds (or waits for) this lease id, if any.
    pub fn remote_lease(&self, lease: u128) -> Option<Id> {
        self.remotes.by_lease.get(&lease).copied()
    }
}

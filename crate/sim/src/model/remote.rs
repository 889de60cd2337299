//! Requests over a connection (LOCK-05), found by looking at every request: by request id, by lease
//! id, by connection.

use holdfast_engine::bounds::TTL_MS;
use holdfast_engine::{Cancelled, Error, Event, Hold, Id, Remote, RemoteView, Renewal};

use super::{refuse, same, Model, State, Target};

impl Model {
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

    /// What `Engine::connection_waiting(conn)` must answer: its requests in line, not away.
    pub fn waiting_on_connection(&self, conn: u32) -> usize {
        self.reqs
            .values()
            .filter(|r| {
                r.remote.is_some_and(|x| x.conn == conn)
                    && matches!(r.state, State::Waiting { away: None, .. })
            })
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
            let r = &self.reqs[&req];
            let asked = self.keys[r.res][r.key].as_ref().unwrap().id;
            if t.res != Some(r.res) || t.arg != Some(asked) {
                return refuse("invalid", got);
            }
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
}

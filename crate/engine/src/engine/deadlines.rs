//! Deadlines, acted on: waits that run out, leases revoked at `maxHold`, leases over a connection
//! past their ttl, and waiters away past theirs.
//!
//! Each deadline of a request's state has an entry in the timers (`timers.rs`, lazily deleted): an
//! entry is live while its request is still in the state that set it, at the same instant
//! ([`timer_is_live`]). [`Engine::advance`] acts on the live ones in the order they fell due: each key
//! goes on to whoever was first in its line at the deadline, and the grant is stamped with the time
//! the host acted (`now`, perhaps later than the deadline), so that no lease is handed out already
//! past its ttl or maxHold.

use super::request::{Request, State};
use super::Engine;
use crate::event::Event;
use crate::slab::{Id, Slab};
use crate::timers::{Due, Entry};

pub(super) fn timer_is_live(reqs: &Slab<Request>, entry: &Entry) -> bool {
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

/// Deadlines: the timer the host arms, and what happens when it fires.
impl Engine {
    /// The earliest time at which [`Engine::advance`] has something to do.
    pub fn next_deadline(&mut self) -> Option<u64> {
        match (self.lock_deadline(), self.pools.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest deadline of a hold or lease: what the untimed calls look at (a pool's deadline
    /// changes nothing of a key's).
    pub(super) fn lock_deadline(&mut self) -> Option<u64> {
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
    /// go on. Then the pools' deadlines, earliest first (see `pool/`): nothing of a pool depends on
    /// a key or the other way round, so each kind in its own order is every deadline in order.
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
                Due::Forget => unreachable!("tombstones are the pools' timers' (never live here)"),
            });
            // The key goes on to whoever was first in line at the deadline: a waiter whose wait ran
            // out between the deadline and `now` (later, when the host's timer is late) still gets
            // it, as entries are acted on in the order they fell due. But its grant is stamped
            // `now`: stamped at the deadline, a lease granted after a stall (a blocked event loop, a
            // paused server, a late alarm) would start its ttl and maxHold in the past — handed out
            // already lost, or told a full ttl by the grant while it had less here, so that a client
            // counting its deadline from the grant's arrival would give up *after* this side did.
            self.pump(key, now);
        }
        self.pools.advance(now, &mut self.events);
    }

    /// Pushes a timer entry for each deadline of a request's state.
    pub(super) fn arm(&mut self, req: Id) {
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
}

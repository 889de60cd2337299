//! Holding, releasing and cancelling: a request joins its key's line or is granted at once, and
//! every way a holder or a waiter leaves hands the key on in the same call ([`Engine::pump`]).
//!
//! The rules of the line (FIFO, no barging, a semaphore's head first) are `line.rs`'s; this file
//! applies them: a new request is granted at once only when its key is free (room, and nobody in
//! line) and a fence is covered, and a key that has room goes to the head of its line before the
//! call returns. A key with neither holder nor waiter is forgotten in the same step
//! ([`Event::KeyIdle`]).

use super::deadlines::timer_is_live;
use super::remote::Remote;
use super::request::{is_away, is_waiting, Request, State};
use super::resource::{unknown, ResourceId};
use super::{limit_of, Engine};
use crate::bounds::{self, MAX_WAITERS};
use crate::error::Error;
use crate::event::{Event, Failure};
use crate::packed::Packed64;
use crate::slab::Id;

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

/// Holds: asking for a key, letting it go, and cancelling.
impl Engine {
    /// Asks for a key of `res`: `key` is `None` for a key the host does not know to be busy (the engine
    /// makes it one), or the id the engine gave it while it is busy (calling rule 5: an id that died
    /// meanwhile is taken as `None`). `wait` is how long the request may wait (`None`: without limit;
    /// `Some(0)`: only if the key is free); `max_hold` revokes the lease that long after its grant.
    pub fn hold(
        &mut self,
        res: ResourceId,
        key: Option<Id>,
        wait: Option<u64>,
        max_hold: Option<u64>,
        now: u64,
    ) -> Result<Hold, Error> {
        self.check_open()?;
        // Calling rule 1: a holder past its maxHold no longer counts, a waiter past its wait is no
        // longer in line, though the host's timer may not have fired yet.
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
    ///
    /// A twin rather than a `now: Option<u64>` on [`Engine::hold`] (weighed in #14): one method would
    /// cost nothing (63 ns a contended hold and release natively, either way), but every timed caller
    /// would unwrap a `None` it can never get. [`Engine::release_untimed`] is the same.
    pub fn hold_untimed(
        &mut self,
        res: ResourceId,
        key: Option<Id>,
        wait: Option<u64>,
        max_hold: Option<u64>,
    ) -> Result<Option<Hold>, Error> {
        if key.is_some() && self.lock_deadline().is_some() {
            return Ok(None);
        }
        self.hold_at(res, key, wait, max_hold, None, None)
    }

    pub(super) fn hold_at(
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
        if self.lock_deadline().is_some() {
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

    /// Grants the key to the head of its line while it has room, or forgets it when it is idle.
    pub(super) fn pump(&mut self, key_id: Id, now: u64) {
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
}

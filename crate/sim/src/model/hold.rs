//! Holds, releases and cancels, and the grant loop (`pump`) they share with every other way a key
//! comes free.

use std::collections::VecDeque;

use holdfast_engine::bounds::{MAX_HOLD_MS, MAX_WAITERS};
use holdfast_engine::fence::MAX_FENCE;
use holdfast_engine::{Cancelled, Error, Event, Failure, Hold, Id, Remote};

use super::{refuse, same, Key, Model, Request, State, Target};

#[derive(Debug)]
enum Predict {
    Grant { fence: u64 },
    Busy,
    Queue { deadline: Option<u64> },
}

impl Model {
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
            None if t.arg.is_some() && self.lock_deadline().is_some() => {
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
            && (self.lock_deadline().is_some()
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

    pub(super) fn end_waiter(&mut self, req: Id) -> (usize, usize) {
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

    /// Hands the key to the head of its line while it has room and a fence is covered; forgets it
    /// when it is idle.
    pub(super) fn pump(&mut self, res: usize, key: usize, now: u64) {
        self.pump_at(res, key, now, now)
    }

    /// `pump` for a key that went on at `at` (a deadline), acted on at `now` (perhaps later): the
    /// head of its line at `at` is granted, stamped `now`. A grant to a waiter whose wait ran out
    /// before the key went on is overdue (a broken rule 1 of the engine's calling rules).
    pub(super) fn pump_at(&mut self, res: usize, key: usize, at: u64, now: u64) {
        let went_on = at;
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
            if let Some(d) = deadline.filter(|&d| d < went_on) {
                self.overdue.get_or_insert(format!(
                    "request {head:?} granted as of {went_on}, after its wait ran out at {d}"
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
}

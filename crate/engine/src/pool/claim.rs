//! Claims of a pool: taking units at once or in line, giving them back, confirming a ttl,
//! cancelling; resizing; and the line's head taking its units as soon as they are there (the rules
//! are in `mod.rs`).

use std::collections::VecDeque;

use super::log::{Record, Stored};
use super::{
    is_waiting, timer_is_live, Claim, ClaimRec, Confirm, PoolId, PoolReq, Pools, TOMBSTONE_MS,
};
use crate::bounds::{self, MAX_POOL_CLAIMS, MAX_WAITERS};
use crate::error::Error;
use crate::event::Event;
use crate::slab::Id;
use crate::timers::{Due, Entry};

/// Claims: taking, releasing, confirming, cancelling; resizing; the line.
impl Pools {
    /// Claims `n` units of `pool` under claim `id` (see the module docs). `remember`: keep the id for
    /// 24 hours after the claim (for ids a caller may ask again with; not for ids the host drew for a
    /// caller who cannot). `wait`: how long it may wait in line (`None`: without limit; `Some(0)`:
    /// not at all). `ttl`: its units come back that long after they were taken unless confirmed.
    #[allow(clippy::too_many_arguments)]
    pub fn claim(
        &mut self,
        pool: PoolId,
        n: u64,
        id: &str,
        remember: bool,
        wait: Option<u64>,
        ttl: Option<u64>,
        now: u64,
    ) -> Result<Claim, Error> {
        let p = self.index(pool)?;
        let place = self.pools[p].place();
        bounds::check_claim_id(id).map_err(|e| Error::invalid(format!("{place}: {e}")))?;
        if let Some(ms) = ttl {
            bounds::check_claim_ttl(ms).map_err(|e| Error::invalid(format!("{place}: {e}")))?;
        }
        let pl = &self.pools[p];
        let capacity = pl.capacity;
        let beyond = || {
            Error::invalid(format!(
                "{place}: a claim takes 1 to {capacity} units (its capacity), not {n}"
            ))
        };
        if n == 0 {
            return Err(beyond());
        }
        let again = |had: u64| {
            Error::invalid(format!(
                "{place}: claim id {id:?} took {had} units; asked again for {n}"
            ))
        };
        if let Some(&cid) = pl.ids.get(id) {
            let c = self.claims.get(cid).expect("a pool's claim is kept");
            if c.n != n {
                return Err(again(c.n));
            }
            return Ok(match c.writing {
                Some(req) => Claim::Joined { req },
                None => Claim::Known {
                    remaining: c.first,
                    open: c.open,
                },
            });
        }
        if let Some(&req) = pl.waiting.get(id) {
            let Some(PoolReq::Waiting {
                n: had, deadline, ..
            }) = self.reqs.get_mut(req)
            else {
                unreachable!("a pool's waiting claim waits")
            };
            if *had != n {
                return Err(again(*had));
            }
            // Each ask is answered by its own wait (the host answers an ask whose wait ran out
            // alone): the claim waits as long as the longest, so that a later ask willing to wait
            // longer is not answered "not claimed" at the first ask's deadline.
            if let Some(at) = *deadline {
                let wanted = wait.map(|ms| now.saturating_add(ms));
                if wanted.is_none_or(|w| w > at) {
                    *deadline = wanted;
                    // The old entry is now stale (`timer_is_live` checks the deadline).
                    if let Some(w) = wanted {
                        self.timers.push(Entry::new(w, req, Due::Wait));
                    }
                }
            }
            return Ok(Claim::Joined { req });
        }
        // Checked only for a new claim: an id asked again answers its first outcome (POOL-03), also
        // after a resize below what it took (a claim waiting in line is never larger than the pool:
        // a resize below it ends its wait).
        if n > pl.capacity {
            return Err(beyond());
        }
        if pl.ids.len() >= MAX_POOL_CLAIMS {
            return Err(Error::limit(format!(
                "{place}: {MAX_POOL_CLAIMS} claims (open, and ids kept for 24 hours) is the most one pool keeps"
            )));
        }
        if pl.line.active() == 0 && n <= pl.remaining() {
            let req = self.reqs.insert(PoolReq::Barrier);
            self.take(p, req, n, id.to_owned(), remember, ttl, now);
            return Ok(Claim::Writing { req });
        }
        if wait == Some(0) {
            return Ok(Claim::Refused {
                remaining: pl.remaining(),
            });
        }
        if pl.line.waiting() >= MAX_WAITERS {
            return Err(Error::limit(format!(
                "{place}: {MAX_WAITERS} waiting claims on one pool is the most"
            )));
        }
        let deadline = wait.map(|ms| now.saturating_add(ms));
        let req = self.reqs.insert(PoolReq::Waiting {
            pool: p as u32,
            n,
            id: id.to_owned(),
            remember,
            ttl,
            deadline,
        });
        let pl = &mut self.pools[p];
        pl.line.push(req);
        pl.waiting.insert(id.to_owned(), req);
        if let Some(at) = deadline {
            self.timers.push(Entry::new(at, req, Due::Wait));
        }
        Ok(Claim::Queued { req })
    }

    /// Request `req` takes `n` units of pool `p` now, as claim `id`: it waits for the next write.
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
        let pl = &mut self.pools[p];
        pl.claimed += n;
        let first = pl.remaining();
        let ttl = ttl.map(|ms| now.saturating_add(ms));
        let at_wall = self.clock.wall(now);
        let stored = Stored {
            id: id.clone(),
            n,
            at: at_wall,
            ttl: ttl.map(|at| self.clock.wall(at)),
            remember,
            first,
            open: true,
        };
        let cid = self.claims.insert(ClaimRec {
            pool: p as u32,
            id: id.clone(),
            n,
            at_wall,
            forget: now.saturating_add(TOMBSTONE_MS),
            ttl,
            remember,
            first,
            open: true,
            writing: Some(req),
        });
        self.pools[p].ids.insert(id, cid);
        if let Some(at) = ttl {
            self.timers.push(Entry::new(at, cid, Due::Expire));
        }
        *self.reqs.get_mut(req).expect("a live request") = PoolReq::Claiming { claim: cid, first };
        self.writer.next.push(req);
        let pool = self.pools[p].name.clone();
        self.log(Record::Claim {
            pool,
            claim: stored,
        });
    }

    /// Gives back the units of the claim `id` of `pool`: the request [`Event::Durable`] answers
    /// once storage kept the release (so that a release answered is never undone by a crash), or
    /// `None` when no open claim has that id (released before, expired, never claimed). Waiting
    /// claims that now fit take their units in this same call. A release of a claim still being
    /// written is answered [`Event::NoClaim`] if that claim is undone (see the module docs).
    pub fn release(&mut self, pool: PoolId, id: &str, now: u64) -> Result<Option<Id>, Error> {
        let p = self.index(pool)?;
        let Some(&cid) = self.pools[p].ids.get(id) else {
            return Ok(None);
        };
        let c = self.claims.get(cid).expect("kept");
        if !c.open {
            return Ok(None);
        }
        let writing = c.writing;
        self.give_back(cid, now);
        self.pump(p, now);
        let req = self.reqs.insert(PoolReq::Barrier);
        self.writer.next.push(req);
        self.tie(writing, req);
        Ok(Some(req))
    }

    /// Ties release or confirm `req` to the request still writing its claim, if there is one (see
    /// `ties`).
    fn tie(&mut self, writing: Option<Id>, req: Id) {
        if let Some(claiming) = writing {
            self.ties.entry(claiming).or_default().push(req);
        }
    }

    /// The claim request `claiming` took nothing (undone): the releases and confirms tied to it
    /// acted on no claim, and are answered so now ([`Event::NoClaim`]), not by their writes.
    pub(super) fn untie(&mut self, claiming: Id, events: &mut VecDeque<Event>) {
        for req in self.ties.remove(&claiming).unwrap_or_default() {
            // Cancelled by its host meanwhile: answered then.
            if matches!(self.reqs.get(req), Some(PoolReq::Barrier)) {
                self.reqs.remove(req);
                events.push_back(Event::NoClaim { req });
            }
        }
    }

    /// Undoes the open claim `id` of `pool` whose `claimed` answer reached nobody who still wanted it
    /// (over a connection, it crossed its asker's cancel): its units come back and its record goes,
    /// tombstone too, in storage as well (`Record::Undo`), as a claim cancelled before its answer is
    /// ([`Pools::cancel`]): asked again, its id is a new claim. Answered once storage kept it (a
    /// request); `None` when no open claim has that id, or it is still being written (its cancel
    /// undoes that one).
    pub fn withdraw(&mut self, pool: PoolId, id: &str, now: u64) -> Result<Option<Id>, Error> {
        let p = self.index(pool)?;
        let Some(&cid) = self.pools[p].ids.get(id) else {
            return Ok(None);
        };
        let c = self.claims.get(cid).expect("kept");
        if !c.open || c.writing.is_some() {
            return Ok(None);
        }
        let (n, had_ttl) = (c.n, c.ttl.is_some());
        self.drop_claim(cid);
        if had_ttl {
            self.forget_timer();
        }
        self.pools[p].claimed -= n;
        let name = self.pools[p].name.clone();
        self.log(Record::Undo {
            pool: name,
            id: id.to_owned(),
        });
        self.pump(p, now);
        let req = self.reqs.insert(PoolReq::Barrier);
        self.writer.next.push(req);
        Ok(Some(req))
    }

    /// An open claim gives its units back (released, or its ttl ran out), and is kept as a
    /// tombstone while its id is remembered. The caller pumps its pool.
    fn give_back(&mut self, cid: Id, now: u64) {
        let c = self.claims.get_mut(cid).expect("an open claim");
        debug_assert!(c.open);
        c.open = false;
        let had_ttl = c.ttl.take().is_some();
        let (p, n, forget_at, remember) = (c.pool as usize, c.n, c.forget, c.remember);
        let id = c.id.clone();
        if had_ttl {
            self.forget_timer();
        }
        let pl = &mut self.pools[p];
        pl.claimed -= n;
        if remember && forget_at > now {
            self.timers.push(Entry::new(forget_at, cid, Due::Forget));
        } else {
            self.drop_claim(cid);
        }
        let pool = self.pools[p].name.clone();
        self.log(Record::Release { pool, id });
    }

    /// Takes back a claim that request `req` took and nobody was answered of (a failed write, a
    /// cancel): its units return, and its record goes, tombstone too. Answers its pool and id, if it
    /// was still there.
    pub(super) fn undo(&mut self, claim: Id, req: Id) -> Option<(usize, String)> {
        let c = self.claims.get(claim)?;
        if c.writing != Some(req) {
            return None;
        }
        // A ttl, or a tombstone's end (a tombstone is kept only with one: see `give_back`).
        let (p, open, n, has_timer) = (c.pool as usize, c.open, c.n, c.ttl.is_some() || !c.open);
        let id = c.id.clone();
        self.drop_claim(claim);
        if has_timer {
            self.forget_timer();
        }
        if open {
            self.pools[p].claimed -= n;
        }
        Some((p, id))
    }

    /// Undoes the claim that request `req` took and that its caller will not be told of as taken (a
    /// cancel, the close): as if it never was, its units back and its id not remembered (asked
    /// again, it is a new claim), in storage too: an undo follows its claim record, which may be in
    /// the write under way. Answers its pool (the caller pumps it, if its line still runs).
    pub(super) fn undo_unanswered(&mut self, claim: Id, req: Id) -> Option<usize> {
        let (p, id) = self.undo(claim, req)?;
        let pool = self.pools[p].name.clone();
        self.log(Record::Undo { pool, id });
        Some(p)
    }

    /// Forgets a claim record (its live timer, if any, already forgotten by the caller).
    pub(super) fn drop_claim(&mut self, cid: Id) {
        let c = self.claims.remove(cid).expect("a kept claim");
        self.pools[c.pool as usize].ids.remove(&c.id);
    }

    pub(super) fn forget_timer(&mut self) {
        let (reqs, claims) = (&self.reqs, &self.claims);
        self.timers.forget(1, |e| timer_is_live(reqs, claims, e));
    }

    /// Confirms the open claim `id` of `pool`: its ttl is gone, and it keeps its units until released.
    /// A confirm of a claim still being written is answered [`Event::NoClaim`] if that claim is
    /// undone (see the module docs).
    pub fn confirm(&mut self, pool: PoolId, id: &str) -> Result<Confirm, Error> {
        let p = self.index(pool)?;
        let Some(&cid) = self.pools[p].ids.get(id) else {
            return Ok(Confirm::Gone);
        };
        let c = self.claims.get_mut(cid).expect("kept");
        if !c.open {
            return Ok(Confirm::Gone);
        }
        if c.ttl.take().is_none() {
            return Ok(Confirm::Done);
        }
        let writing = c.writing;
        self.forget_timer();
        let pool = self.pools[p].name.clone();
        self.log(Record::Confirm {
            pool,
            id: id.to_owned(),
        });
        let req = self.reqs.insert(PoolReq::Barrier);
        self.writer.next.push(req);
        self.tie(writing, req);
        Ok(Confirm::Writing { req })
    }

    /// Changes a pool's capacity: never below what its open claims hold (`invalid`, naming both).
    /// `None` when it is the capacity already; else the request [`Event::Durable`] answers once
    /// storage kept it. Waiting claims larger than the new capacity leave the line
    /// ([`Event::NotClaimed`]); others that now fit take their units.
    pub fn resize(
        &mut self,
        pool: PoolId,
        capacity: u64,
        now: u64,
        events: &mut VecDeque<Event>,
    ) -> Result<Option<Id>, Error> {
        let p = self.index(pool)?;
        let place = self.pools[p].place();
        bounds::check_capacity(&place, capacity)?;
        let pl = &mut self.pools[p];
        if capacity < pl.claimed {
            return Err(Error::invalid(format!(
                "{place}: capacity {capacity} is below the {} units claimed",
                pl.claimed
            )));
        }
        if capacity == pl.capacity {
            return Ok(None);
        }
        pl.capacity = capacity;
        let name = pl.name.clone();
        self.log(Record::Pool {
            pool: name,
            capacity,
        });
        let too_large: Vec<Id> = self.pools[p]
            .line
            .ids()
            .filter(|&id| matches!(self.reqs.get(id), Some(PoolReq::Waiting { n, .. }) if *n > capacity))
            .collect();
        for req in too_large {
            self.leave_line(req);
            let remaining = self.pools[p].remaining();
            events.push_back(Event::NotClaimed { req, remaining });
        }
        self.pump(p, now);
        let req = self.reqs.insert(PoolReq::Barrier);
        self.writer.next.push(req);
        Ok(Some(req))
    }

    /// A waiting request leaves its line (answered by the caller).
    fn leave_line(&mut self, req: Id) {
        let Some(PoolReq::Waiting {
            pool, id, deadline, ..
        }) = self.reqs.remove(req)
        else {
            unreachable!("a waiting request")
        };
        if deadline.is_some() {
            self.forget_timer();
        }
        let reqs = &self.reqs;
        let pl = &mut self.pools[pool as usize];
        pl.waiting.remove(&id);
        pl.line.left(|r| is_waiting(reqs, r));
    }

    /// Ends a request the host no longer wants: a waiting claim leaves its line (`Left`); one that
    /// took its units (its write not yet answered) is undone (`Released`): its units come back and its
    /// id is not remembered, since no caller was told of it; a release, confirm or resize stands,
    /// unanswered (`Left`). Releases and confirms tied to a claim undone are answered
    /// [`Event::NoClaim`].
    pub fn cancel(&mut self, req: Id, now: u64, events: &mut VecDeque<Event>) -> crate::Cancelled {
        match self.reqs.get(req) {
            None => crate::Cancelled::Unknown,
            Some(PoolReq::Waiting { pool, .. }) => {
                let p = *pool as usize;
                self.leave_line(req);
                self.pump(p, now);
                crate::Cancelled::Left
            }
            Some(&PoolReq::Claiming { claim, .. }) => {
                self.reqs.remove(req);
                if let Some(p) = self.undo_unanswered(claim, req) {
                    self.pump(p, now);
                }
                self.untie(req, events);
                crate::Cancelled::Released
            }
            Some(PoolReq::Barrier) => {
                self.reqs.remove(req);
                crate::Cancelled::Left
            }
        }
    }

    /// The head of pool `p`'s line takes its units while they are there (head-of-line: one that
    /// does not fit stops the line).
    pub(super) fn pump(&mut self, p: usize, now: u64) {
        loop {
            let reqs = &self.reqs;
            let pl = &mut self.pools[p];
            let Some((at, head)) = pl.line.head(|r| is_waiting(reqs, r), |_| false) else {
                return;
            };
            let Some(PoolReq::Waiting { n, .. }) = reqs.get(head) else {
                unreachable!("the head of a line waits")
            };
            if *n > pl.remaining() {
                return;
            }
            pl.line.take(at);
            let PoolReq::Waiting {
                n,
                id,
                remember,
                ttl,
                deadline,
                ..
            } = std::mem::replace(self.reqs.get_mut(head).expect("the head"), PoolReq::Barrier)
            else {
                unreachable!("the head waits")
            };
            self.pools[p].waiting.remove(&id);
            if deadline.is_some() {
                self.forget_timer();
            }
            self.take(p, head, n, id, remember, ttl, now);
        }
    }
}

/// Deadlines: waits that run out, ttls, and tombstones at the end of their 24 hours.
impl Pools {
    /// The earliest deadline of a pool, if any.
    pub fn next_deadline(&mut self) -> Option<u64> {
        while let Some(entry) = self.timers.peek() {
            if timer_is_live(&self.reqs, &self.claims, &entry) {
                return Some(entry.at());
            }
            self.timers.pop();
        }
        None
    }

    /// Acts on every deadline at or before `now`, instant by instant, earliest first. At one
    /// instant: the waiting claims whose wait ran out leave their lines ([`Event::NotClaimed`], in
    /// the order of their ids), the claims past their ttl give their units back, then each pool's
    /// line takes what fits, then tombstones are forgotten. So what happens at an instant depends on
    /// the deadlines that fall due then, never on their order among themselves: a wait that runs out
    /// as units come back has run out.
    pub fn advance(&mut self, now: u64, events: &mut VecDeque<Event>) {
        while let Some(at) = self.next_deadline().filter(|&at| at <= now) {
            let (mut waits, mut expiries, mut forgets) = (Vec::new(), Vec::new(), Vec::new());
            while let Some(entry) = self.timers.peek().filter(|e| e.at() == at) {
                let live = timer_is_live(&self.reqs, &self.claims, &entry);
                self.timers.pop();
                // Popped live, it still counts among the live entries until the state that set it
                // changes and forgets it (see `timers.rs`): `leave_line`, `give_back` and the
                // forgetting below do.
                if live {
                    match entry.due() {
                        Due::Wait => waits.push(entry.req()),
                        Due::Expire => expiries.push(entry.req()),
                        Due::Forget => forgets.push(entry.req()),
                        _ => unreachable!("no other deadline is a pool's"),
                    }
                }
            }
            waits.sort_unstable();
            let mut touched = Vec::new();
            for req in waits {
                let Some(PoolReq::Waiting { pool, .. }) = self.reqs.get(req) else {
                    unreachable!("a live wait")
                };
                let p = *pool as usize;
                self.leave_line(req);
                let remaining = self.pools[p].remaining();
                events.push_back(Event::NotClaimed { req, remaining });
                touched.push(p);
            }
            for cid in expiries {
                touched.push(self.claims.get(cid).expect("a live ttl").pool as usize);
                self.give_back(cid, at);
            }
            touched.sort_unstable();
            touched.dedup();
            for p in touched {
                self.pump(p, at);
            }
            for cid in forgets {
                self.drop_claim(cid);
                self.forget_timer();
            }
        }
    }
}

//! Pools and storage: the group commit (one write under way, carrying every change made before it
//! was taken, answering the requests that waited for it), a failed write, reading pools back when
//! a store opens, and closing. The stored form is `log.rs`'s.
//!
//! A host turn may answer many claims with one write: the host takes the write
//! ([`Pools::poll_write`]) once a turn, not once a call, and while one is under way the changes
//! pile up for the next. No request is answered before the write that keeps it is acknowledged.

use std::collections::VecDeque;

use super::log::{
    encode_segment, encode_snapshot, slot_key, Clock, PoolLoad, Stored, StoredPool,
    MAX_VALUE_BYTES, MIN_VALUE_BYTES, SLOTS,
};
use super::{ClaimRec, Inflight, PoolReq, PoolWrite, Pools, TOMBSTONE_MS};
use crate::error::Error;
use crate::event::{Event, Failure};
use crate::slab::Id;
use crate::timers::{Due, Entry};

/// Past this many changes more than twice the claims kept, the next write is a snapshot (it is
/// then smaller than reading the log back would be).
const COMPACT_SLACK: u64 = 256;

impl Pools {
    /// Whether a write is wanted now: something changed and no write is under way.
    pub fn write_wanted(&self) -> bool {
        self.writer.dirty && self.writer.inflight.is_none()
    }

    /// Whether a request's answer waits for the next write (a claim that took its units, a
    /// release, a confirm, a resize): that write answers it, kept or failed.
    pub fn write_awaited(&self) -> bool {
        self.writer
            .next
            .iter()
            .any(|&req| self.reqs.get(req).is_some())
    }

    /// Whether a write was taken and not yet answered.
    pub fn write_pending(&self) -> bool {
        self.writer.inflight.is_some()
    }

    /// The write to make now, if one is wanted: a segment of the changes since the last write, or a
    /// snapshot of everything (the first write of a store, after a failed write, when the log
    /// since the last snapshot grew long, or when the segment would be longer than a value may be:
    /// see `log.rs`), into the generation the last acknowledged snapshot is not in. Every request
    /// waiting for the next write now waits for this one.
    pub fn poll_write(&mut self) -> Option<PoolWrite> {
        if !self.write_wanted() {
            return None;
        }
        let w = &mut self.writer;
        w.seq += 1;
        let seq = w.seq;
        let records = w.pending.len() as u64;
        let mut snapshot = w.snapshot_due
            || w.segments + 1 >= SLOTS
            || w.records + records > 2 * self.claims.len() as u64 + COMPACT_SLACK;
        let mut sets = Vec::new();
        if !snapshot {
            let value = encode_segment(seq, &w.pending);
            // A busy turn's changes may not fit one value: a snapshot (in chunks) keeps them.
            snapshot = value.len() > self.value_limit;
            if !snapshot {
                sets.push((slot_key(seq), value));
            }
        }
        let gen = snapshot.then(|| self.writer.acked_gen.map_or(0, |g| 1 - g));
        if let Some(gen) = gen {
            sets = encode_snapshot(seq, gen, &self.stored(), self.value_limit);
        }
        let w = &mut self.writer;
        w.pending.clear();
        w.dirty = false;
        w.snapshot_due = false;
        w.inflight = Some(Inflight {
            seq,
            gen,
            records,
            reqs: std::mem::take(&mut w.next),
        });
        Some(PoolWrite {
            seq,
            snapshot,
            sets,
        })
    }

    /// See [`crate::Engine::set_pool_value_limit`].
    pub fn set_value_limit(&mut self, bytes: usize) -> Result<(), Error> {
        if !(MIN_VALUE_BYTES..=MAX_VALUE_BYTES).contains(&bytes) {
            return Err(Error::invalid(format!(
                "a pools' value limit of {bytes} bytes must be {MIN_VALUE_BYTES} to {MAX_VALUE_BYTES}"
            )));
        }
        self.value_limit = bytes;
        Ok(())
    }

    /// Every pool and its claims, as a snapshot keeps them: pools in the order they were made,
    /// claims in the order of their places (deterministic, whatever the hash maps' order).
    fn stored(&self) -> Vec<StoredPool> {
        let mut pools: Vec<StoredPool> = self
            .pools
            .iter()
            .map(|p| StoredPool {
                name: p.name.clone(),
                capacity: p.capacity,
                claims: Vec::new(),
            })
            .collect();
        for (_, c) in self.claims.iter() {
            pools[c.pool as usize].claims.push(Stored {
                id: c.id.clone(),
                n: c.n,
                at: c.at_wall,
                ttl: c.ttl.map(|at| self.clock.wall(at)),
                remember: c.remember,
                first: c.first,
                open: c.open,
            });
        }
        pools
    }

    /// Storage acknowledged write `seq`: the requests that waited for it are answered
    /// ([`Event::Claimed`], [`Event::Durable`]), in the order they came to wait.
    pub fn written(&mut self, seq: u64, events: &mut VecDeque<Event>) {
        let Some(done) = self.take_inflight(seq) else {
            return;
        };
        let w = &mut self.writer;
        if let Some(gen) = done.gen {
            w.acked_gen = Some(gen);
            w.segments = 0;
            w.records = 0;
        } else {
            w.segments += 1;
            w.records += done.records;
        }
        for req in done.reqs {
            match self.reqs.get(req) {
                Some(&PoolReq::Claiming { claim, first }) => {
                    self.reqs.remove(req);
                    // Taken: its releases and confirms are answered by their own writes.
                    self.ties.remove(&req);
                    if let Some(c) = self.claims.get_mut(claim) {
                        if c.writing == Some(req) {
                            c.writing = None;
                        }
                    }
                    events.push_back(Event::Claimed {
                        req,
                        remaining: first,
                    });
                }
                Some(PoolReq::Barrier) => {
                    self.reqs.remove(req);
                    events.push_back(Event::Durable { req });
                }
                // Cancelled meanwhile (answered then), or a waiting request in a place reused.
                _ => {}
            }
        }
    }

    /// Storage failed to keep write `seq` (it may or may not have landed). Its claims give their
    /// units back, and they and its releases, confirms and resizes are answered
    /// [`Event::PoolFailed`]; a release, confirm or resize stands in memory (an unknown outcome, as a
    /// timeout's), but one of a claim this write undoes acted on nothing ([`Event::NoClaim`], after
    /// its claim's answer). The next write is a snapshot of what memory holds.
    pub fn write_failed(&mut self, seq: u64, now: u64, events: &mut VecDeque<Event>) {
        let Some(failed) = self.take_inflight(seq) else {
            return;
        };
        self.writer.snapshot_due = true;
        self.writer.dirty = true;
        let mut touched = Vec::new();
        for req in failed.reqs {
            let claiming = match self.reqs.get(req) {
                Some(&PoolReq::Claiming { claim, .. }) => {
                    self.reqs.remove(req);
                    // No record of it: the next write is a snapshot of what memory holds.
                    if let Some((p, _)) = self.undo(claim, req) {
                        touched.push(p);
                    }
                    true
                }
                Some(PoolReq::Barrier) => {
                    self.reqs.remove(req);
                    false
                }
                _ => continue,
            };
            events.push_back(Event::PoolFailed {
                req,
                why: Failure::Storage,
            });
            if claiming {
                // It took nothing: its releases and confirms, in this write or the next, acted on
                // nothing either (the next write, a snapshot, keeps neither).
                self.untie(req, events);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for p in touched {
            self.pump(p, now);
        }
    }

    fn take_inflight(&mut self, seq: u64) -> Option<Inflight> {
        match &self.writer.inflight {
            Some(f) if f.seq == seq => self.writer.inflight.take(),
            _ => None,
        }
    }

    /// Reads pools back from what storage holds (`load`, read to its end), before any pool is
    /// named; `now` and `wall` are the same instant on the engine's clock and the wall clock (stored
    /// times are wall clock). Deadlines that passed while the store was down are due at once;
    /// tombstones past their 24 hours are not read back.
    /// `invalid` when called late, or when what storage holds breaks POOL-01 (damaged).
    pub fn open(&mut self, load: PoolLoad, now: u64, wall: u64) -> Result<(), Error> {
        if !self.fresh {
            return Err(Error::invalid(
                "pools are read back from storage only before any is named",
            ));
        }
        if load.next_key().is_some() {
            return Err(Error::invalid(
                "pools read back before the last key was read",
            ));
        }
        self.fresh = false;
        self.clock = Clock {
            offset: i128::from(wall) - i128::from(now),
        };
        let w = &mut self.writer;
        // Numbered above every write seen (`log.rs`); past the log read, only a snapshot follows.
        w.seq = load.seq.max(load.highest);
        w.segments = load.segments;
        w.records = load.records;
        w.snapshot_due = load.gen.is_none() || load.highest > load.seq;
        w.acked_gen = load.gen;
        let clock = self.clock;
        for stored in load.finish() {
            let damaged = |what: &str| {
                Error::invalid(format!(
                    "pool {} as storage keeps it: {what} (damaged?)",
                    stored.name
                ))
            };
            if self.by_name.contains_key(&stored.name) {
                return Err(damaged("named twice"));
            }
            crate::bounds::check_capacity(&stored.name, stored.capacity)
                .map_err(|_| damaged("a capacity out of bounds"))?;
            let p = self.add_pool(&stored.name, stored.capacity);
            for c in stored.claims {
                // A tombstone whose 24 hours are over is gone (a log replays a release of a claim
                // whose tombstone was forgotten before the restart).
                if !c.open && c.at.saturating_add(TOMBSTONE_MS) <= wall {
                    continue;
                }
                if c.n == 0 || self.pools[p as usize].ids.contains_key(&c.id) {
                    return Err(damaged("a claim of no units, or an id twice"));
                }
                // A tombstone's 24 hours by the wall clock: from before this process began, its
                // end is converted, never its start (which would keep it longer).
                let forget = clock.mono(c.at.saturating_add(TOMBSTONE_MS));
                let ttl = c.ttl.map(|t| clock.mono(t));
                if c.open {
                    let pl = &mut self.pools[p as usize];
                    pl.claimed = pl.claimed.saturating_add(c.n);
                    if pl.claimed > pl.capacity {
                        return Err(damaged("more units claimed than its capacity"));
                    }
                }
                let cid = self.claims.insert(ClaimRec {
                    pool: p,
                    id: c.id.clone(),
                    n: c.n,
                    at_wall: c.at,
                    forget,
                    ttl: if c.open { ttl } else { None },
                    remember: c.remember,
                    first: c.first,
                    open: c.open,
                    writing: None,
                });
                self.pools[p as usize].ids.insert(c.id, cid);
                match (c.open, ttl) {
                    (true, Some(at)) => self.timers.push(Entry::new(at, cid, Due::Expire)),
                    (true, None) => {}
                    (false, _) => self.timers.push(Entry::new(forget, cid, Due::Forget)),
                }
            }
        }
        Ok(())
    }

    /// The store closes: every waiting claim and every claim still being written ends
    /// ([`Event::PoolEnded`], in id order). A claim still being written took its units but nobody was
    /// told so, and its caller is now answered `closed`: it is undone as a cancel undoes it (its units
    /// come back, its id is not kept), and the undo is logged, so that storage agrees once the host's
    /// last write lands — the write under way may carry the claim itself, and the undo follows it.
    /// Else the units of a claim answered `closed` stayed taken in memory and, read back, in storage:
    /// capacity nobody held. Open claims stay as they are, and what changed is still written (the host
    /// takes one last write).
    ///
    /// A release, confirm or resize waiting for its write is not ended: its change is made in memory
    /// and in that write (the one under way, or the host's last), which the host waits for before its
    /// storage goes, so it happens; answered `closed`, its caller was told it failed when it had not
    /// (and asked again after a reopen, a release found no claim). It is answered by that write's
    /// outcome, as before the close ([`Pools::written`], [`Pools::write_failed`]). Undoing it instead
    /// would give back a release its caller asked for: units held by nobody who wants them. But a
    /// release or confirm of a claim the close undoes acted on nothing: answered [`Event::NoClaim`].
    pub fn close(&mut self, events: &mut VecDeque<Event>) {
        let claiming: Vec<(Id, Id)> = self
            .reqs
            .iter()
            .filter_map(|(req, r)| match r {
                PoolReq::Claiming { claim, .. } => Some((req, *claim)),
                _ => None,
            })
            .collect();
        for (req, claim) in claiming {
            self.undo_unanswered(claim, req);
            self.untie(req, events);
        }
        let ended: Vec<Id> = self
            .reqs
            .iter()
            .filter(|(_, r)| !matches!(r, PoolReq::Barrier))
            .map(|(req, _)| req)
            .collect();
        for req in ended {
            self.reqs.remove(req);
            events.push_back(Event::PoolEnded { req });
        }
        for pool in &mut self.pools {
            pool.waiting.clear();
            pool.line = Default::default();
        }
        for c in self.claims.iter_mut() {
            c.writing = None;
        }
        // The barriers are what is left of the requests: they wait for their writes still.
        let reqs = &self.reqs;
        self.writer.next.retain(|&req| reqs.get(req).is_some());
        if let Some(f) = &mut self.writer.inflight {
            f.reqs.retain(|&req| reqs.get(req).is_some());
        }
        self.timers.clear();
    }
}

//! Pools (issue #16), as the host drives them: claims (with a caller's id, remembered, or one the
//! host draws), releases by claim and by id, confirms, cancels, resizes; the pools' write taken once
//! a turn (after each operation) and answered by the storage; reading pools back when a process
//! opens. Each call's answer and events against the model's, and after every operation the pools'
//! whole state (`inspect_pools`, what the engine keeps).
//!
//! # Invariants checked here
//! - POOL-01 (the engine's `check` and the model's), and the engine's pools equal to the model's.
//! - POOL-02: at most one write under way (`PoolDisk::ask`), taken once a turn, carrying every claim
//!   made before it: no claim answered before its write is acknowledged (the model answers a claim
//!   only then, and events are compared exactly). A new process reads back exactly the state of a
//!   write that landed whole, no older than the last acknowledged (`PoolDisk::read_back`), also
//!   after a crash in the middle of a snapshot's chunks; no value is over the storage's limit.
//! - POOL-03 and POOL-04: the model's answers, compared exactly.

use holdfast_engine::{Claim, Engine, PoolId, PoolLoad};

use super::words::{claim_words, code};
use super::Host;
use crate::marks::Mark;
use crate::model::{MReq, PoolModel};
use crate::op::{Op, Outcome};

/// The wall clock of the first process's start (any time after 1970 will do).
pub(super) const WALL0: u64 = 1_700_000_000_000;

/// The longest value the simulated storage takes: the least the engine allows, so that snapshots of
/// a few claims already take chunks (and crashes cut them), as 20,000 claims do under the real bound.
pub(super) const VALUE_LIMIT: usize = holdfast_engine::pool::MIN_VALUE_BYTES;

/// A claim id of 100 characters (ids may have 128 bytes), so that a snapshot of a few claims
/// outgrows [`VALUE_LIMIT`] and is written in chunks.
fn claim_id(kind: char, k: u64) -> String {
    format!("{kind}{k:0>99}")
}

impl Host {
    fn pool_place(&self, pool: u8) -> (usize, PoolId) {
        let p = pool as usize % self.mix.pools.len();
        (p, self.pool_ids[p])
    }

    fn wall(&self) -> u64 {
        (i128::from(self.now) + self.wall_offset) as u64
    }

    /// A process opens its pools: reads them back, then names the mix's pools (made if new).
    pub(super) fn open_pools(&mut self, engine: &mut Engine) -> Result<PoolModel, String> {
        engine
            .set_pool_value_limit(VALUE_LIMIT)
            .map_err(|e| format!("open: pools: {e}"))?;
        let mut load = PoolLoad::new();
        while let Some(key) = load.next_key() {
            load.feed(self.pool_disk.values.get(&key).map(String::as_str))
                .map_err(|e| format!("open: pools: {e}"))?;
        }
        let wall = self.wall();
        let read = self.pool_disk.read_back(load.seq())?.to_vec();
        engine
            .open_pools(load, self.now, wall)
            .map_err(|e| format!("open: pools: {e}"))?;
        let mut model = PoolModel::open(&read, self.now, self.wall_offset);
        if model.pools.iter().any(|p| p.claims.iter().any(|c| c.open)) {
            self.marks.hit(Mark::PoolReadBack);
        }
        self.pool_ids.clear();
        for spec in &self.mix.pools {
            let got = match engine.find_pool(&spec.name) {
                Some(id) => Ok(id),
                None => engine.pool(&spec.name, spec.capacity),
            };
            let capacity = match model.pools.iter().find(|p| p.name == spec.name) {
                Some(p) => p.capacity,
                None => spec.capacity,
            };
            model.pool(&spec.name, capacity, &got)?;
            self.pool_ids
                .push(got.map_err(|e| format!("open: pool {}: {e}", spec.name))?);
        }
        Ok(model)
    }

    /// The host's turn ends: it takes the pools' write, if one is wanted (group commit).
    pub(super) fn take_pool_write(&mut self, engine: &mut Engine) -> Result<(), String> {
        let m = &self.model.as_ref().unwrap().pools;
        let (wanted, want) = (engine.pool_write_wanted(), m.write_wanted());
        if wanted != want {
            return Err(format!(
                "pool_write_wanted: the engine's {wanted}, the model's {want}"
            ));
        }
        if engine.pool_write_pending() != m.inflight.is_some() {
            return Err("pool_write_pending: the engine and the model disagree".into());
        }
        if !wanted {
            return Ok(());
        }
        let w = engine
            .poll_pool_write()
            .ok_or("the engine wanted a pools' write and gave none")?;
        let len: usize = w.sets.iter().map(|(_, v)| v.len()).sum();
        self.trace.words(&[0xB00, w.seq, len as u64]);
        if w.sets.len() > 1 {
            self.marks.hit(Mark::PoolSnapshotInChunks);
        }
        self.log(|| {
            let keys: Vec<_> = w.sets.iter().map(|(k, _)| k.as_str()).collect();
            format!("pools' write {} to {}", w.seq, keys.join(" "))
        });
        let m = &mut self.model().pools;
        m.poll_write();
        let state = m.inflight.as_ref().unwrap().1.clone();
        self.pool_disk.ask(w, state)
    }

    /// The pool operations.
    pub(super) fn step_pool(
        &mut self,
        engine: &mut Engine,
        op: Op,
        now: u64,
    ) -> Result<(), String> {
        match op {
            Op::Claim {
                pool,
                n,
                id,
                wait,
                ttl,
            } => {
                let (p, pid) = self.pool_place(pool);
                let (id, remember) = match id {
                    Some(k) => (claim_id('i', u64::from(k)), true),
                    None => {
                        self.next_claim += 1;
                        (claim_id('h', self.next_claim), false)
                    }
                };
                let m = &self.model.as_ref().unwrap().pools;
                let pl = &m.pools[p];
                let head_blocks = !pl.line.is_empty() && u64::from(n) <= pl.remaining();
                let got = engine.claim(pid, u64::from(n), &id, remember, wait, ttl, now);
                self.trace.words(&claim_words(&got));
                self.log(|| format!("claim {p} {n} {id} -> {got:?}"));
                self.model()
                    .claim(p, u64::from(n), &id, remember, wait, ttl, now, &got)
                    .map_err(|e| format!("claim: {e}"))?;
                match got {
                    Ok(Claim::Known { .. }) => self.marks.hit(Mark::PoolIdKnown),
                    Ok(Claim::Joined { .. }) => self.marks.hit(Mark::PoolIdJoined),
                    Ok(Claim::Queued { req }) => {
                        if head_blocks && wait != Some(0) {
                            self.marks.hit(Mark::PoolHeadOfLine);
                        }
                        self.pool_queued.push(req);
                    }
                    _ => {}
                }
                self.after_call(engine, "claim")
            }
            Op::PoolRelease { pick } | Op::Confirm { pick } => {
                let open = self.model.as_ref().unwrap().pools.open_claims();
                if open.is_empty() {
                    return Ok(());
                }
                let (p, id) = open[pick as usize % open.len()].clone();
                let pid = self.pool_ids[p];
                if matches!(op, Op::Confirm { .. }) {
                    let got = engine.confirm_claim(pid, &id, now);
                    self.trace.word(got.as_ref().map_or_else(code, |c| match c {
                        holdfast_engine::Confirm::Writing { req } => req.to_u64(),
                        holdfast_engine::Confirm::Done => 0xD0,
                        holdfast_engine::Confirm::Gone => 0xD1,
                    }));
                    self.log(|| format!("confirm {p} {id} -> {got:?}"));
                    self.model()
                        .confirm_claim(p, &id, now, &got)
                        .map_err(|e| format!("confirm: {e}"))?;
                    return self.after_call(engine, "confirm");
                }
                self.release_claim(engine, p, &id, now)
            }
            Op::PoolReleaseId { pool, id } => {
                let (p, _) = self.pool_place(pool);
                self.release_claim(engine, p, &claim_id('i', u64::from(id)), now)
            }
            Op::PoolCancel { pick } => {
                let live = self.model.as_ref().unwrap().pools.live();
                if live.is_empty() {
                    return Ok(());
                }
                let req = live[pick as usize % live.len()];
                let got = engine.cancel_claim(req, now);
                self.trace
                    .word(got.as_ref().map_or_else(code, |c| *c as u64));
                self.log(|| format!("cancel_claim {req:?} -> {got:?}"));
                self.model()
                    .cancel_claim(req, now, &got)
                    .map_err(|e| format!("cancel_claim: {e}"))?;
                self.after_call(engine, "cancel_claim")
            }
            Op::Resize { pool, capacity } => {
                let (p, pid) = self.pool_place(pool);
                let got = engine.resize_pool(pid, u64::from(capacity), now);
                self.trace.word(
                    got.as_ref()
                        .map_or_else(code, |r| r.map_or(0, |r| r.to_u64())),
                );
                self.log(|| format!("resize {p} {capacity} -> {got:?}"));
                self.model()
                    .resize_pool(p, u64::from(capacity), now, &got)
                    .map_err(|e| format!("resize: {e}"))?;
                self.after_call(engine, "resize")
            }
            Op::PoolWrite(outcome) => {
                let Some(seq) = self.pool_disk.settle(outcome) else {
                    return Ok(());
                };
                if outcome == Outcome::Ok {
                    engine.pool_written(seq, now);
                    if self.model().pool_written(now) >= 2 {
                        self.marks.hit(Mark::PoolGroupCommit);
                    }
                } else {
                    engine.pool_write_failed(seq, now);
                    if self.model().pool_write_failed(now) > 0 {
                        self.marks.hit(Mark::PoolWriteFailedTookBack);
                    }
                }
                self.after_call(engine, "pools' write answered")
            }
            _ => unreachable!("{op} is not a pool's"),
        }
    }

    fn release_claim(
        &mut self,
        engine: &mut Engine,
        p: usize,
        id: &str,
        now: u64,
    ) -> Result<(), String> {
        let pid = self.pool_ids[p];
        let got = engine.release_claim(pid, id, now);
        self.trace.word(
            got.as_ref()
                .map_or_else(code, |r| r.map_or(0, |r| r.to_u64())),
        );
        self.log(|| format!("release_claim {p} {id} -> {got:?}"));
        self.model()
            .release_claim(p, id, now, &got)
            .map_err(|e| format!("release_claim: {e}"))?;
        self.after_call(engine, "release_claim")
    }

    /// After every operation: the engine's pools against the model's, and a read of every pool's
    /// remaining units (which acts on deadlines first, as any timed call).
    pub(super) fn check_pools(&mut self, engine: &mut Engine) -> Result<(), String> {
        let m = self.model.as_ref().unwrap();
        let fp = engine.footprint();
        let claims: usize = m.pools.pools.iter().map(|p| p.claims.len()).sum();
        if (fp.claims, fp.pool_requests) != (claims, m.pools.reqs.len()) {
            return Err(format!(
                "footprint: the engine keeps {} claims and {} pool requests, the model {claims} and {}",
                fp.claims,
                fp.pool_requests,
                m.pools.reqs.len()
            ));
        }
        if m.closed {
            return Ok(());
        }
        let views = engine
            .inspect_pools()
            .map_err(|e| format!("inspect_pools: {e}"))?;
        let want = m.pools.views();
        if views != want {
            return Err(format!(
                "inspect_pools: the engine's {views:?}, the model's {want:?}"
            ));
        }
        for v in &views {
            self.trace
                .words(&[v.remaining, u64::from(v.claims), u64::from(v.waiting)]);
        }
        Ok(())
    }

    /// Coverage marks of the pools' events and deadlines, after a call.
    pub(super) fn pool_marks(&mut self, events: &[holdfast_engine::Event]) {
        use holdfast_engine::Event;
        for ev in events {
            if let Event::NoClaim { .. } = ev {
                self.marks.hit(Mark::PoolNoClaim);
            }
            if let Event::Claimed { req, .. } = ev {
                if let Some(at) = self.pool_queued.iter().position(|r| r == req) {
                    self.pool_queued.swap_remove(at);
                    self.marks.hit(Mark::PoolWaiterServed);
                }
            }
        }
        let m = self.model.as_mut().unwrap();
        for acted in std::mem::take(&mut m.pool_acted) {
            match acted {
                "wait" => self.marks.hit(Mark::PoolWaitRanOut),
                "ttl" => self.marks.hit(Mark::PoolTtlCameBack),
                _ => self.marks.hit(Mark::PoolTombstoneForgotten),
            }
        }
        // Requests that ended do not stay among those watched.
        let live = &self.model.as_ref().unwrap().pools.reqs;
        self.pool_queued.retain(|r| {
            matches!(
                live.get(r),
                Some(MReq::Waiting { .. } | MReq::Claiming { .. })
            )
        });
    }
}

//! Fences, as the host sees them: the ceiling it writes (and the storage that may fail, lose or
//! land the write), every fence handed out checked against ghost state kept across restarts, the
//! blocks it is lent for the keys it grants itself, and the bursts that use a block up.

use holdfast_engine::fence::{BLOCK, MAX_FENCE};
use holdfast_engine::{Engine, Event, Hold};

use super::words::hold_words;
use super::{Host, HostFault};
use crate::gen::LOW_WATER;
use crate::marks::Mark;
use crate::model::Target;
use crate::op::{Op, Outcome};

/// Most grants a run's bursts may make (a block and a bit).
pub(super) const BURST_BUDGET: u64 = 1_200_000;

/// A lease the host granted itself from a lent fence, which the engine does not know of.
#[derive(Clone, Copy, Debug)]
pub(super) struct Local {
    pub(super) res: usize,
    pub(super) key: usize,
    pub(super) fence: u64,
    pub(super) since: u64,
}

impl Host {
    /// `Op::Write`, `Op::Local`, `Op::LocalRelease` and `Op::Burst`.
    pub(super) fn step_fences(
        &mut self,
        engine: &mut Engine,
        op: Op,
        now: u64,
    ) -> Result<(), String> {
        match op {
            Op::Write(outcome) => {
                let waiters = self.model.as_ref().unwrap().head_waits_for_fence();
                let lie =
                    outcome == Outcome::FailLost && self.fault == Some(HostFault::AckWithoutWrite);
                let Some(ceiling) = self.storage.settle(outcome) else {
                    return Ok(());
                };
                self.log(|| format!("write {ceiling}: {outcome:?}"));
                if outcome == Outcome::Ok || lie {
                    self.storage.acked = self.storage.acked.max(ceiling);
                    engine.persisted(ceiling, now);
                    self.model().persisted(ceiling, now);
                } else {
                    if outcome == Outcome::FailLanded {
                        self.marks.hit(Mark::UnknownWriteOutcome);
                    }
                    if waiters && !self.model.as_ref().unwrap().closed {
                        self.marks.hit(Mark::WriteFailedWhileWaitersQueue);
                    }
                    engine.persist_failed(ceiling, now);
                    self.model().persist_failed(now);
                }
                self.after_call(engine, "write")?;
            }
            Op::Local {
                res,
                key,
                wait,
                max,
            } => {
                let (r, k) = self.place(res, key);
                // The host has a handle of the name: registered (again, if it was forgotten).
                self.registered(engine, r)?;
                // A key the engine does not know, with a permit the host has not granted itself
                // (a lock's key has one; a semaphore's its limit, as npm/src/store/permits.ts keeps them).
                let here = self
                    .locals
                    .iter()
                    .filter(|l| (l.res, l.key) == (r, k))
                    .count();
                let room = self.model.as_ref().unwrap().key(r, k).is_none()
                    && here < self.model.as_ref().unwrap().limit(r) as usize;
                if room {
                    if let Some(fence) = self.local_fence(engine, u64::from(max))? {
                        self.grant(fence)?;
                        self.trace.words(&[0x10CA1, fence]);
                        self.log(|| format!("granted r{r}/{k} itself, fence {fence}"));
                        self.locals.push(Local {
                            res: r,
                            key: k,
                            fence,
                            since: now,
                        });
                        if here > 0 {
                            self.marks.hit(Mark::LocalPermit);
                        }
                        return Ok(());
                    }
                }
                // Held as usual: a key the engine knows busy, one the host granted itself with no
                // permit left (adopted first), or no fence to lend (adopted first, if granted here).
                self.adopt_if_local(engine, r, k)?;
                self.reclaim(engine)?;
                let t = Target {
                    res: Some(r),
                    key: k,
                    arg: self.model.as_ref().unwrap().key(r, k).map(|k| k.id),
                };
                self.hold(engine, t, wait, None, true, None)?;
            }
            Op::LocalRelease { pick } => {
                if self.locals.is_empty() {
                    return Ok(());
                }
                let l = self.locals.remove(pick as usize % self.locals.len());
                self.trace.words(&[0x10CA2, l.fence]);
                self.log(|| format!("released r{}/{} itself, fence {}", l.res, l.key, l.fence));
            }
            Op::Burst { leave } => self.burst(engine, leave)?,
            _ => unreachable!("{op} is not a fence's"),
        }
        Ok(())
    }

    /// A fence handed out: the durability invariants, against ghost state.
    pub(super) fn grant(&mut self, fence: u64) -> Result<(), String> {
        if fence == 0 || fence > MAX_FENCE {
            return Err(format!("fence {fence} is not a safe integer from 1"));
        }
        if fence <= self.max_fence {
            return Err(format!(
                "fence {fence} is not above {} handed out before (across restarts)",
                self.max_fence
            ));
        }
        if fence > self.storage.acked {
            return Err(format!(
                "fence {fence} above the ceiling {} acknowledged to this process",
                self.storage.acked
            ));
        }
        if self.storage.durable.is_none_or(|d| fence > d) {
            return Err(format!(
                "fence {fence} above what the disk holds ({:?}): a crash would repeat it",
                self.storage.durable
            ));
        }
        self.max_fence = fence;
        self.stats.grants += 1;
        Ok(())
    }

    /// The engine asks for `ceiling` to be written.
    pub(super) fn ask(&mut self, ceiling: u64, label: &str) -> Result<(), String> {
        let m = self.model.as_ref().unwrap();
        let last = m.next - 1;
        let base = m.covered.max(last);
        if ceiling <= last || ceiling > MAX_FENCE || ceiling > base + BLOCK {
            return Err(format!(
                "{label}: asked to write the ceiling {ceiling}, with {last} handed out and {} covered",
                m.covered
            ));
        }
        // One write per block: only once fewer than half a block of covered fences is left.
        if m.covered.saturating_sub(last) >= LOW_WATER {
            return Err(format!(
                "{label}: asked to write {ceiling} with {} fences still covered",
                m.covered - last
            ));
        }
        if m.available() && label != "open" {
            self.marks.hit(Mark::ReservationAskedEarly);
        }
        self.storage
            .ask(ceiling)
            .map_err(|e| format!("{label}: {e}"))
    }

    /// The next fence of the host's block for a grant it makes itself, borrowing a block of up to
    /// `max` when it has none left (giving back the used-up one first, as the wasm `lend` does).
    /// `None` when the engine lends none.
    fn local_fence(&mut self, engine: &mut Engine, max: u64) -> Result<Option<u64>, String> {
        if let Some((_, next, end)) = &mut self.block {
            if *next < *end {
                *next += 1;
                return Ok(Some(*next - 1));
            }
        }
        self.reclaim(engine)?;
        let got = engine.lend_fences(max);
        let want = self.model().lend(max);
        let (first, end) = got.unwrap_or((0, 0));
        self.trace.words(&[0x1E4D, first, end]);
        self.log(|| format!("lend_fences({max}) -> {got:?}"));
        if got != want {
            return Err(format!("lend: the engine lent {got:?}, the model {want:?}"));
        }
        if got.is_some_and(|(first, end)| first >= end) {
            return Err(format!("lend: an empty block {got:?}"));
        }
        // Lending may ask for the next ceiling, as a grant may: checked as after every call.
        self.after_call(engine, "lend")?;
        if got.is_none() {
            return Ok(None);
        }
        self.block = Some((first, first + 1, end));
        Ok(Some(first))
    }

    /// Gives back the host's block of lent fences, if it has one: the start of every engine call.
    pub(super) fn reclaim(&mut self, engine: &mut Engine) -> Result<(), String> {
        let Some((first, next, end)) = self.block.take() else {
            return Ok(());
        };
        if first < next && next < end {
            self.marks.hit(Mark::LentPartlyReclaimed);
        }
        engine.reclaim_fences(next);
        self.trace.words(&[0x8EC1, next]);
        self.log(|| format!("reclaim_fences({next}) of [{first}, {end})"));
        self.model()
            .reclaim(next)
            .map_err(|e| format!("reclaim: {e}"))?;
        if engine.fences_lent() {
            return Err("reclaim: the engine still lends fences".into());
        }
        Ok(())
    }

    /// Another request wants key `k` of resource `r`: if the host granted it itself, it hands the key
    /// over to the engine first, every holder in grant order (a semaphore's: the first by `adopt`, the
    /// others by `adopt_into`). Answers whether it did.
    pub(super) fn adopt_if_local(
        &mut self,
        engine: &mut Engine,
        r: usize,
        k: usize,
    ) -> Result<bool, String> {
        let (here, others): (Vec<Local>, Vec<Local>) = std::mem::take(&mut self.locals)
            .into_iter()
            .partition(|l| (l.res, l.key) == (r, k));
        self.locals = others;
        if here.is_empty() {
            return Ok(false);
        }
        self.reclaim(engine)?;
        let mut into = None;
        for local in here {
            let got = match into {
                None => engine.adopt(self.rids[r], local.fence, local.since),
                Some(key) => engine.adopt_into(key, local.fence, local.since),
            };
            self.trace.words(&hold_words(&got));
            self.log(|| {
                format!(
                    "adopt r{r}/{k} fence {} since {} into {into:?} -> {got:?}",
                    local.fence, local.since
                )
            });
            let model = self.model();
            match into {
                None => model.adopt(r, k, local.fence, local.since, &got),
                Some(_) => model.adopt_into(r, k, local.fence, local.since, &got),
            }
            .map_err(|e| format!("adopt: {e}"))?;
            if let Ok(Hold::Granted { key, .. }) = got {
                self.marks.hit(if into.is_none() {
                    Mark::LocalAdopted
                } else {
                    Mark::LocalAdoptedInto
                });
                into = Some(key);
            }
            self.after_call(engine, "adopt")?;
        }
        Ok(true)
    }

    /// Grants and releases on the burst key until `leave` covered fences are left.
    fn burst(&mut self, engine: &mut Engine, leave: u64) -> Result<(), String> {
        let now = self.now;
        if self.model.as_ref().unwrap().closed {
            return Ok(());
        }
        // The burst's own calls act on deadlines that fell due (a late timer's): do that first, on
        // both sides and checked, so that the burst itself meets nothing due.
        engine.advance(now);
        self.model().advance(now);
        self.after_call(engine, "burst: deadlines first")?;
        let m = self.model.as_ref().unwrap();
        if m.closed || !m.available() {
            return Ok(());
        }
        let left = m.covered + 1 - m.next;
        let n = left.saturating_sub(leave).min(self.burst_budget);
        self.burst_budget -= n;
        for _ in 0..n {
            let fence = self.model.as_ref().unwrap().next;
            let (req, key) = match engine.hold(self.burst, None, Some(0), None, now) {
                Ok(Hold::Granted { req, key, fence: f }) if f == fence => (req, key),
                other => {
                    return Err(format!(
                        "burst: hold of a free key with fence {fence} covered answered {other:?}"
                    ))
                }
            };
            self.model().take();
            self.grant(fence)?;
            match engine.release(req, now) {
                Ok(true) => {}
                other => return Err(format!("burst: release answered {other:?}")),
            }
            match (engine.poll_event(), engine.poll_event()) {
                (Some(Event::KeyIdle { key: k }), None) if k == key => {}
                other => return Err(format!("burst: events after a release {other:?}")),
            }
            if let Some(ceiling) = engine.poll_persist() {
                self.trace.words(&[0xC0FFEE, ceiling, fence]);
                self.ask(ceiling, "burst")?;
            }
        }
        // The burst's holds were timed: the engine's latest time is now.
        self.model().last_now = self.model.as_ref().unwrap().last_now.max(now);
        self.stats.calls += 2 * n;
        self.trace.words(&[n, self.model.as_ref().unwrap().next]);
        self.log(|| format!("burst of {n} grants"));
        if n > 0 && !self.model.as_ref().unwrap().available() {
            // The next hold waits for the next ceiling: a block ran out in the middle of a process.
            self.marks.hit(Mark::BlockRanOut);
        }
        Ok(())
    }
}

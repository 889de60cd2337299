//! Deadlines: the host's timer, punctual or late. A late timer lets operations come at a time past
//! a deadline the engine has not yet acted on; the checks here say what must not happen then
//! (`overdue`).

use holdfast_engine::{Engine, Id};

use super::Host;
use crate::marks::Mark;
use crate::model::{State, Target};
use crate::op::Op;

impl Host {
    /// `Op::Tick`, `Op::ToDeadline`, `Op::Late` and `Op::Fire`.
    pub(super) fn step_deadlines(
        &mut self,
        engine: &mut Engine,
        op: Op,
        now: u64,
    ) -> Result<(), String> {
        match op {
            Op::Tick { ms } => {
                let target = now.saturating_add(ms);
                while let Some(at) = self.next_deadline(engine)?.filter(|&at| at <= target) {
                    let at = at.max(self.now);
                    self.fire(engine, at)?;
                }
                self.now = target;
            }
            Op::ToDeadline => {
                if let Some(at) = self.next_deadline(engine)? {
                    self.fire(engine, at.max(now))?;
                }
            }
            Op::Late { ms } => self.now = now.saturating_add(ms),
            Op::Fire => self.fire(engine, now)?,
            _ => unreachable!("{op} is not a timer's"),
        }
        Ok(())
    }

    pub(super) fn fire(&mut self, engine: &mut Engine, at: u64) -> Result<(), String> {
        self.now = at;
        engine.advance(at);
        let acted = self.model().advance(at);
        for a in &acted {
            match (a.due, a.handed_on) {
                (0, _) => self.marks.hit(Mark::WaitRanOut),
                (1, true) => self.marks.hit(Mark::RevokeHandsKeyOn),
                (2, true) => self.marks.hit(Mark::LeaseExpiryHandsKeyOn),
                (3, _) => self.marks.hit(Mark::AwayRunsOut),
                _ => {}
            }
        }
        let keys = acted.iter().map(|a| (a.res, a.key)).collect();
        self.expired = (at, keys);
        self.after_call(engine, "advance")
    }

    pub(super) fn next_deadline(&mut self, engine: &mut Engine) -> Result<Option<u64>, String> {
        let e = engine.next_deadline();
        let m = self.model.as_ref().unwrap();
        let want = if m.closed { None } else { m.next_deadline() };
        if e != want {
            return Err(format!(
                "next_deadline: the engine's {e:?}, the model's {want:?}"
            ));
        }
        Ok(e)
    }

    pub(super) fn expiry_mark(&mut self, req: Id) {
        let Some(r) = self.model.as_ref().and_then(|m| m.reqs.get(&req)) else {
            return;
        };
        if self.expired.0 == self.now && self.expired.1.contains(&(r.res, r.key)) {
            self.marks.hit(Mark::ExpiryAndReleaseInOneInstant);
        }
    }

    /// Whether `req` holds a lease whose `maxHold` (or ttl) fell due before `now` (at or before, with
    /// `inclusive`), though the late timer has not acted on it.
    pub(super) fn overdue_holder(&self, req: Id, inclusive: bool) -> bool {
        let now = self.now;
        let past = |at: u64| at < now || (inclusive && at == now);
        self.model
            .as_ref()
            .and_then(|m| m.reqs.get(&req))
            .is_some_and(|r| match r.state {
                State::Holding {
                    revoke_at,
                    expires_at,
                    ..
                } => revoke_at.is_some_and(past) || expires_at.is_some_and(past),
                State::Waiting { .. } => false,
            })
    }

    /// Whether the key a hold goes to is held or waited for only by requests whose deadline passed
    /// before now, and so, had the late timer fired, would have been granted at once.
    pub(super) fn blocked_only_by_the_overdue(&self, t: &Target) -> bool {
        let now = self.now;
        let Some(r) = t.res else { return false };
        let m = self.model.as_ref().unwrap();
        m.key(r, t.key).is_some_and(|k| {
            let alive = |req: &Id| match m.reqs[req].state {
                State::Holding {
                    revoke_at,
                    expires_at,
                    ..
                } => revoke_at.is_none_or(|at| at >= now) && expires_at.is_none_or(|at| at >= now),
                State::Waiting { deadline, .. } => deadline.is_none_or(|at| at >= now),
            };
            // Waiters away block nobody: only the active ones count.
            let active: Vec<Id> = k.line.iter().copied().filter(|&w| !m.is_away(w)).collect();
            let holders = k.holders.iter().filter(|r| alive(r)).count();
            let waiting = active.iter().filter(|r| alive(r)).count();
            m.available()
                && holders < m.limit(r) as usize
                && waiting == 0
                && holders + waiting < k.holders.len() + active.len()
        })
    }
}

//! Holds, as the host makes them: through the fast path first when the operation says so, then
//! timed; releases, late ones included (`Op::Again`); and cancels, of waiters, holders, grants that
//! raced the cancel, and requests already ended.

use holdfast_engine::{Cancelled, Engine, Error, Hold, Id, Kind, Remote, ResourceId};

use super::words::{code, hold_words};
use super::{overdue, Host};
use crate::marks::Mark;
use crate::model::Target;
use crate::op::{Op, Whom};

impl Host {
    /// `Op::Hold`, `Op::Release`, `Op::Again` and `Op::Cancel`.
    pub(super) fn step_hold(
        &mut self,
        engine: &mut Engine,
        op: Op,
        now: u64,
    ) -> Result<(), String> {
        match op {
            Op::Hold {
                res,
                key,
                wait,
                max_hold,
                fast,
            } => {
                let (r, k) = self.place(res, key);
                self.adopt_if_local(engine, r, k)?;
                let m = self.model.as_ref().unwrap();
                let arg = m.key(r, k).map(|k| k.id);
                if let Some(key) = m.key(r, k) {
                    if self.mix.resources[r].kind == Kind::Semaphore && m.active(key) > 0 {
                        if key.holders.len() == m.limit(r) as usize {
                            self.marks.hit(Mark::SemaphoreHeadWaits);
                        } else {
                            self.marks.hit(Mark::SemaphoreNoBargePastStalledHead);
                        }
                    }
                    if wait == Some(0) && key.holders.len() == m.limit(r) as usize {
                        self.marks.hit(Mark::TryRefused);
                    }
                }
                let t = Target {
                    res: Some(r),
                    key: k,
                    arg,
                };
                self.hold(engine, t, wait, max_hold, fast, None)?;
            }
            Op::Release { pick, fast } => {
                let Some(req) = self.nth(true, pick) else {
                    return Ok(());
                };
                if fast {
                    let got = engine.release_untimed(req);
                    self.trace.word(match &got {
                        Ok(None) => 0xF1,
                        Ok(Some(b)) => u64::from(*b),
                        Err(e) => 0xE0 | code(e),
                    });
                    self.log(|| format!("release_untimed {req:?} -> {got:?}"));
                    let overdue = self.overdue_holder(req, false);
                    self.model()
                        .release_untimed(req, &got)
                        .map_err(|e| format!("untimed release: {e}"))?;
                    match got {
                        Ok(None) => self.marks.hit(Mark::UntimedNeedsTime),
                        other => {
                            if overdue && other == Ok(Some(true)) {
                                self.overdue(
                                    overdue::RELEASE,
                                    "untimed release",
                                    format!(
                                        "a lease past its deadline was released as held at {now}"
                                    ),
                                )?;
                            }
                            return self.after_call(engine, "untimed release");
                        }
                    }
                }
                self.release(engine, req)?;
            }
            Op::Again { pick } => {
                if self.ended.is_empty() {
                    return Ok(());
                }
                let req = self.ended[pick as usize % self.ended.len()];
                self.release(engine, req)?;
            }
            Op::Cancel { whom, pick } => {
                let m = self.model.as_ref().unwrap();
                let req = match whom {
                    Whom::Waiting => self.nth(false, pick),
                    Whom::Holding => self.nth(true, pick),
                    Whom::Granted => {
                        let of: Vec<Id> = self
                            .granted
                            .iter()
                            .copied()
                            .filter(|&r| m.holds(r))
                            .collect();
                        (!of.is_empty()).then(|| of[pick as usize % of.len()])
                    }
                    Whom::Ended => (!self.ended.is_empty())
                        .then(|| self.ended[pick as usize % self.ended.len()]),
                };
                let Some(req) = req else {
                    return Ok(());
                };
                if let Some(r) = m.reqs.get(&req) {
                    let head = m.key(r.res, r.key).and_then(|k| m.head(k));
                    if head.map(|(_, h)| h) == Some(req) {
                        self.marks.hit(Mark::CancelOfHead);
                    }
                }
                self.expiry_mark(req);
                let got = engine.cancel(req, now);
                self.cancelled(&got, req.to_u64());
                self.model()
                    .cancel(req, now, &got)
                    .map_err(|e| format!("cancel: {e}"))?;
                if whom == Whom::Granted && got == Ok(Cancelled::Released) {
                    self.marks.hit(Mark::GrantRacedCancel);
                }
                self.after_call(engine, "cancel")?;
            }
            _ => unreachable!("{op} is not a hold's"),
        }
        Ok(())
    }

    /// A hold through the engine and the model: the fast path first if `fast`, over a connection if
    /// `remote`; then the late-timer check.
    pub(super) fn hold(
        &mut self,
        engine: &mut Engine,
        t: Target,
        wait: Option<u64>,
        max_hold: Option<u64>,
        fast: bool,
        remote: Option<Remote>,
    ) -> Result<Option<Hold>, String> {
        let now = self.now;
        let rid = match t.res {
            Some(r) => self.registered(engine, r)?,
            None => ResourceId::from_u64(250).expect("an id"),
        };
        let blocked = self.blocked_only_by_the_overdue(&t);
        if fast && remote.is_none() {
            let got = engine.hold_untimed(rid, t.arg, wait, max_hold);
            self.trace.word(match &got {
                Ok(None) => 0xF1,
                Ok(Some(h)) => hold_words(&Ok(*h))[0] | 0xF0,
                Err(e) => 0xE0 | code(e),
            });
            self.log(|| format!("hold_untimed -> {got:?}"));
            self.model()
                .hold(t, wait, max_hold, None, None, &got)
                .map_err(|e| format!("untimed hold: {e}"))?;
            match got {
                Ok(None) => self.marks.hit(Mark::UntimedNeedsTime),
                other => {
                    self.after_call(engine, "untimed hold")?;
                    return Ok(other.ok().flatten());
                }
            }
        }
        let got = match remote {
            Some(remote) => engine.hold_remote(rid, t.arg, wait, max_hold, remote, now),
            None => engine.hold(rid, t.arg, wait, max_hold, now),
        };
        self.trace.words(&hold_words(&got));
        self.log(|| format!("hold -> {got:?}"));
        let checked = match remote {
            Some(remote) => self
                .model()
                .hold_remote(t, wait, max_hold, remote, now, &got),
            None => self.model().hold_timed(t, wait, max_hold, now, &got),
        };
        checked.map_err(|e| format!("hold: {e}"))?;
        // (Whether the key was held only by requests past their deadlines is the model's to say: it
        // acts on them first, in their order, as the engine must. A waiter may have been handed the
        // key at a holder's deadline, before its own wait ran out, and hold it still: `blocked`
        // alone, taken before the call, cannot tell.)
        let _ = blocked;
        self.after_call(engine, "hold")?;
        Ok(got.ok())
    }

    pub(super) fn release(&mut self, engine: &mut Engine, req: Id) -> Result<(), String> {
        let now = self.now;
        let overdue = self.overdue_holder(req, false);
        self.expiry_mark(req);
        let got = engine.release(req, now);
        self.trace.words(&[
            match got {
                Ok(b) => b.into(),
                Err(ref e) => 2 + code(e),
            },
            req.to_u64(),
        ]);
        self.log(|| format!("release {req:?} -> {got:?}"));
        self.model()
            .release(req, now, &got)
            .map_err(|e| format!("release: {e}"))?;
        if overdue && got == Ok(true) {
            self.overdue(
                overdue::RELEASE,
                "release",
                format!("a lease past its deadline was released as held at {now} (its hold resolves instead of rejecting LostError)"),
            )?;
        }
        self.after_call(engine, "release")
    }

    pub(super) fn cancelled(&mut self, got: &Result<Cancelled, Error>, name: u64) {
        self.trace.words(&[
            match got {
                Ok(Cancelled::Left) => 1,
                Ok(Cancelled::Released) => 2,
                Ok(Cancelled::Unknown) => 3,
                Err(e) => 4 + code(e),
            },
            name,
        ]);
        self.log(|| format!("cancel {name:x} -> {got:?}"));
    }
}

//! Names, as the host keeps them: forgotten once nothing of the host's refers to them (#13 item 5),
//! and registered again, under a new id, when next held.

use holdfast_engine::{Engine, ResourceId};

use super::words::code;
use super::Host;
use crate::marks::Mark;

impl Host {
    /// The host forgets resource `r`'s name (see `Op::Forget`); the engine must agree exactly when the
    /// model has no busy key of it, and an id kept past it must name nothing.
    pub(super) fn forget(&mut self, engine: &mut Engine, res: u8) -> Result<(), String> {
        let r = res as usize % self.mix.resources.len();
        // Nothing to forget; or a key the host granted itself refers to it (it could not be handed
        // over: the host never forgets such a name).
        if self.forgotten[r] || self.locals.iter().any(|l| l.res == r) {
            return Ok(());
        }
        let m = self.model.as_ref().unwrap();
        let busy = m.busy_keys().any(|(kr, _, _)| kr == r);
        let closed = m.closed;
        let rid = self.rids[r];
        let got = engine.forget(rid);
        self.trace
            .word(got.as_ref().map_or_else(|e| 0xE0 | code(e), |_| 0xF0));
        self.log(|| format!("forget r{r} {rid:?} -> {got:?}"));
        let want = if closed {
            Some("closed")
        } else if busy {
            Some("invalid")
        } else {
            None
        };
        match (&got, want) {
            (Ok(()), None) => {
                self.forgotten[r] = true;
                self.marks.hit(Mark::NameForgotten);
                // The old id names nothing now: refused, changing nothing (the full check after
                // the operation proves it).
                let held = engine.hold_untimed(rid, None, Some(0), None);
                let adopted = engine.adopt(rid, 1, self.now);
                if engine.resource_info(rid).is_some()
                    || !matches!(&held, Err(e) if e.code() == "invalid")
                    || !matches!(&adopted, Err(e) if e.code() == "invalid")
                {
                    return Err(format!(
                        "forget: the forgotten id {rid:?} still names a resource: hold {held:?}, adopt {adopted:?}"
                    ));
                }
            }
            (Err(e), Some(code)) if e.code() == code => {
                if busy && !closed {
                    self.marks.hit(Mark::ForgetRefused);
                }
            }
            _ => {
                return Err(format!(
                    "forget: the engine answered {got:?}; the model has busy keys of r{r}: {busy}, closed: {closed}"
                ))
            }
        }
        self.after_call(engine, "forget")
    }

    /// The id of resource `r`, registering its name again if the host forgot it: a new id, never
    /// one in use nor the dead one.
    pub(super) fn registered(
        &mut self,
        engine: &mut Engine,
        r: usize,
    ) -> Result<ResourceId, String> {
        if !self.forgotten[r] {
            return Ok(self.rids[r]);
        }
        let old = self.rids[r];
        let spec = &self.mix.resources[r];
        let got = engine.resource(spec.kind, &spec.name, spec.limit);
        self.trace.word(
            got.as_ref()
                .map_or_else(|e| 0xE0 | code(e), |id| id.to_u64()),
        );
        self.log(|| format!("resource r{r} again -> {got:?}"));
        let closed = self.model.as_ref().unwrap().closed;
        match got {
            Ok(rid) if !closed => {
                if rid == old || self.rids.contains(&rid) || rid == self.burst {
                    return Err(format!(
                        "resource: forgotten r{r} came back as {rid:?}, an id dead or in use ({:?})",
                        self.rids
                    ));
                }
                if engine.resource_info(old).is_some() {
                    return Err(format!("resource: the dead id {old:?} names a resource"));
                }
                self.rids[r] = rid;
                self.model().set_rid(r, rid);
                self.forgotten[r] = false;
                self.marks.hit(Mark::NameRegisteredAgain);
                Ok(rid)
            }
            Err(e) if closed && e.code() == "closed" => Ok(old),
            other => Err(format!(
                "resource: registering forgotten r{r} again answered {other:?} (closed: {closed})"
            )),
        }
    }
}

//! Fences as two numbers (the next to hand out, and the highest ceiling storage acknowledged), the
//! block lent to the host, and the keys it granted itself and hands over.

use std::collections::VecDeque;

use holdfast_engine::fence::MAX_FENCE;
use holdfast_engine::{Error, Event, Failure, Hold, Id};

use super::{refuse, Key, Model, Request, State};

impl Model {
    pub fn available(&self) -> bool {
        self.next <= self.covered
    }

    pub fn exhausted(&self) -> bool {
        self.next > MAX_FENCE
    }

    /// The fence the engine hands out next (a burst takes them without the model's bookkeeping).
    pub fn take(&mut self) -> u64 {
        assert!(self.available(), "the model took an uncovered fence");
        assert!(
            self.lent.is_none(),
            "the model took a fence while a block is lent"
        );
        self.next += 1;
        self.next - 1
    }

    /// Whether any key's head waits for a fence.
    pub fn head_waits_for_fence(&self) -> bool {
        self.busy_keys()
            .any(|(r, _, k)| self.head(k).is_some() && k.holders.len() < self.limits[r] as usize)
    }

    /// `Engine::lend_fences(max)`: the block lent, if any.
    pub fn lend(&mut self, max: u64) -> Option<(u64, u64)> {
        if self.closed || !self.available() || self.lent.is_some() || max == 0 {
            return None;
        }
        let end = (self.next + max).min(self.covered + 1);
        let block = (self.next, end);
        self.next = end;
        self.lent = Some(block);
        Some(block)
    }

    /// `Engine::reclaim_fences(unused)`: the host gives its block back.
    pub fn reclaim(&mut self, unused: u64) -> Result<(), String> {
        match self.lent.take() {
            Some((first, end)) if (first..=end).contains(&unused) => {
                self.next = unused;
                Ok(())
            }
            other => Err(format!(
                "the host gave back its block at {unused}, the model's block is {other:?}"
            )),
        }
    }

    /// `Engine::adopt`: the host hands over key `key` of resource `res`, which it granted itself with
    /// `fence` at `since`.
    pub fn adopt(
        &mut self,
        res: usize,
        key: usize,
        fence: u64,
        since: u64,
        got: &Result<Hold, Error>,
    ) -> Result<(), String> {
        if let Some(refused) = self.adopt_refused(fence, got) {
            return refused;
        }
        if self.keys[res][key].is_some() {
            return Err("the host adopted a key busy in the engine".into());
        }
        let (req, key_id) = match got {
            Ok(Hold::Granted {
                req,
                key: key_id,
                fence: f,
            }) if *f == fence => (*req, *key_id),
            other => {
                return Err(format!(
                    "adopt: the model grants fence {fence}, the engine answered {other:?}"
                ))
            }
        };
        if self.key_id_is_busy(key_id) {
            return Err(format!(
                "adopt: a new key got the id {key_id:?} of a busy key"
            ));
        }
        self.keys[res][key] = Some(Key {
            id: key_id,
            holders: vec![req],
            line: VecDeque::new(),
            stalled: false,
        });
        self.add_adopted(res, key, req, fence, since)
    }

    /// `Engine::adopt_into`: the host hands over one more holder of key `key` of resource `res`,
    /// which `adopt` just made (a semaphore's key it granted itself to several holders).
    pub fn adopt_into(
        &mut self,
        res: usize,
        key: usize,
        fence: u64,
        since: u64,
        got: &Result<Hold, Error>,
    ) -> Result<(), String> {
        if let Some(refused) = self.adopt_refused(fence, got) {
            return refused;
        }
        let limit = self.limits[res] as usize;
        let Some(k) = self.keys[res][key].as_mut() else {
            return Err("adopt_into: the model has no such key".into());
        };
        if k.holders.len() >= limit || !k.line.is_empty() {
            return refuse("invalid", got);
        }
        let req = match got {
            Ok(Hold::Granted {
                req,
                key: key_id,
                fence: f,
            }) if *f == fence && *key_id == k.id => *req,
            other => {
                return Err(format!(
                "adopt_into: the model grants fence {fence} in {:?}, the engine answered {other:?}",
                k.id
            ))
            }
        };
        k.holders.push(req);
        self.add_adopted(res, key, req, fence, since)
    }

    /// What the engine must answer an adopt of `fence` it refuses — closed, or a fence never handed
    /// out — if it refuses it.
    fn adopt_refused(&self, fence: u64, got: &Result<Hold, Error>) -> Option<Result<(), String>> {
        if self.closed {
            return Some(refuse("closed", got));
        }
        if fence == 0 || fence >= self.next {
            return Some(refuse("invalid", got));
        }
        None
    }

    /// The request of an adopted holder: holding with `fence` since `since`, no deadline.
    fn add_adopted(
        &mut self,
        res: usize,
        key: usize,
        req: Id,
        fence: u64,
        since: u64,
    ) -> Result<(), String> {
        let state = State::Holding {
            fence,
            since,
            revoke_at: None,
            expires_at: None,
        };
        self.add(
            req,
            Request {
                res,
                key,
                state,
                remote: None,
            },
        )
    }

    /// Storage acknowledged `ceiling`.
    pub fn persisted(&mut self, ceiling: u64, now: u64) {
        if self.closed {
            return;
        }
        self.advance(now);
        self.covered = self.covered.max(ceiling);
        for (res, key) in std::mem::take(&mut self.stalled) {
            if let Some(k) = self.keys[res][key].as_mut() {
                k.stalled = false;
                self.pump(res, key, now);
            }
        }
    }

    /// Storage failed to keep its ceiling: the heads that waited for a fence, as many as their key
    /// has room for, are answered `Failed`.
    pub fn persist_failed(&mut self, now: u64) {
        if self.closed {
            return;
        }
        self.advance(now);
        if self.available() {
            return;
        }
        for (res, key) in std::mem::take(&mut self.stalled) {
            let Some(k) = self.keys[res][key].as_mut() else {
                continue;
            };
            k.stalled = false;
            let room = self.limits[res] as usize - k.holders.len();
            for _ in 0..room {
                let Some((at, head)) = self.head(self.keys[res][key].as_ref().unwrap()) else {
                    break;
                };
                self.keys[res][key].as_mut().unwrap().line.remove(at);
                self.remove(head);
                self.events.push(Event::Failed {
                    req: head,
                    why: Failure::Storage,
                });
            }
            self.pump(res, key, now);
        }
    }
}

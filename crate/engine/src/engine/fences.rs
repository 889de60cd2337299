//! Fences: the ceiling written to storage before any grant it covers, and the blocks lent to the
//! host for the keys it grants itself.
//!
//! Storage comes before grants (calling rule 2): a grant that finds no covered fence *stalls* its key
//! (the key's head waits, in the order keys stalled) until storage answers, then goes ahead, or
//! fails with the write. The book of fences itself is `fence.rs`.
//!
//! # Fences lent to the host, and keys it granted itself
//! The host may grant an uncontended key without calling in at all: it borrows a block of fences
//! ([`Engine::lend_fences`]), takes the next of them for each lease it grants itself, and gives back
//! what it did not use (calling rule 3). The engine knows nothing of those leases until another
//! request wants such a key: the host then hands the key over ([`Engine::adopt`]), and the lease
//! goes on as a holder of the engine's like any other.

use super::hold::Hold;
use super::request::{is_away, is_waiting, Request, State};
use super::resource::{unknown, ResourceId};
use super::{limit_of, Engine};
use crate::error::Error;
use crate::event::{Event, Failure};
use crate::slab::Id;

/// Fences: the ceiling written to storage, and the blocks lent to the host for its own grants.
impl Engine {
    /// The fence ceiling the host must write to storage now, if any. The host writes it (as a decimal
    /// string) and then calls [`Engine::persisted`] or [`Engine::persist_failed`] with it.
    pub fn poll_persist(&mut self) -> Option<u64> {
        if self.closed {
            return None;
        }
        self.fences.poll_persist()
    }

    /// Whether a ceiling was handed to the host to write and is not yet answered. A host that closes
    /// waits for it before it lets the storage go, so that a late write never lands after another
    /// store opened on the same storage.
    pub fn persist_pending(&self) -> bool {
        self.fences.pending().is_some()
    }

    /// Storage acknowledged `ceiling`: grants that waited for fences go ahead, in the order they stalled.
    pub fn persisted(&mut self, ceiling: u64, now: u64) {
        if self.closed {
            self.fences.persisted(ceiling); // nothing is granted, but nothing stays pending either
            return;
        }
        // Deadlines that fell due before the write was answered first (calling rule 1), as they were.
        self.advance(now);
        self.fences.persisted(ceiling);
        for key in std::mem::take(&mut self.stalled) {
            if let Some(k) = self.keys.get_mut(key) {
                k.stalled = false;
                self.pump(key, now);
            }
        }
    }

    /// Storage failed to keep `ceiling`: every request that was about to be granted with a fence it
    /// would have covered is answered [`Failure::Storage`] and leaves its line, rather than be granted a
    /// fence a later store might hand out again. Requests behind them that become due ask again.
    pub fn persist_failed(&mut self, ceiling: u64, now: u64) {
        if self.closed {
            self.fences.failed(ceiling);
            return;
        }
        self.advance(now);
        self.fences.failed(ceiling);
        if self.fences.available() {
            return; // an earlier ceiling still covers them
        }
        for key_id in std::mem::take(&mut self.stalled) {
            let Some(key) = self.keys.get_mut(key_id) else {
                continue;
            };
            key.stalled = false;
            let room = limit_of(&self.resources, key) - key.held;
            for _ in 0..room {
                let reqs = &self.reqs;
                let Some(head) = self.keys.get_mut(key_id).and_then(|k| {
                    k.line
                        .head(|id| is_waiting(reqs, id), |id| is_away(reqs, id))
                }) else {
                    break;
                };
                let head = head.1;
                self.end_request(head);
                self.events.push_back(Event::Failed {
                    req: head,
                    why: Failure::Storage,
                });
            }
            self.pump(key_id, now);
        }
    }

    /// Lends the host a block of up to `max` fences, `(first, end)` with `end` exclusive, for the
    /// leases it grants itself: it hands them out in order, from `first`, and gives back the rest
    /// with [`Engine::reclaim_fences`] (calling rule 3). `None` when the store is
    /// closed, no fence is covered now (storage has not acknowledged the ceiling; grants wait for
    /// it), a block is lent already, or `max` is 0. Lending may ask for the next ceiling: the host
    /// polls [`Engine::poll_persist`] after it, as after a grant.
    pub fn lend_fences(&mut self, max: u64) -> Option<(u64, u64)> {
        if self.closed {
            return None;
        }
        self.fences.lend(max)
    }

    /// The host gives back the block [`Engine::lend_fences`] lent: `unused` is the first fence of it
    /// the host did not hand out (`end` if it used them all). The engine's grants go on from it.
    ///
    /// # Panics
    /// When no block is lent or `unused` is outside it: the host broke the order of fences.
    pub fn reclaim_fences(&mut self, unused: u64) {
        self.fences.reclaim(unused);
    }

    /// Whether a block of fences is lent to the host.
    pub fn fences_lent(&self) -> bool {
        self.fences.lent().is_some()
    }

    /// The host granted a free key of `res` itself, with `fence` (from a block it was lent) at its
    /// time `since`, and now another request wants the key: the engine takes the holding over. It
    /// makes the key busy with that one holder (answered as [`Hold::Granted`], with its request and
    /// key ids) and an empty line; the host then asks for the other request with [`Engine::hold`] on
    /// that key id, and releases the adopted lease with [`Engine::release`] like any other. It takes
    /// no fence, sets no deadline and queues no event; `since` (which may be older than the latest
    /// time the engine was given) only stamps the holder for [`Engine::inspect`].
    ///
    /// The host adopts only a key the engine does not know to be busy, one it has no key id for
    /// (calling rule 5): the engine cannot check that. Errors
    /// (`invalid`): an unknown resource, or a fence the engine never handed out (0, or above
    /// [`Engine::last_fence`]: the host reclaims its block first); `closed` when closed.
    pub fn adopt(&mut self, res: ResourceId, fence: u64, since: u64) -> Result<Hold, Error> {
        self.check_open()?;
        if self.resources.get(res.0).is_none() {
            return Err(unknown(res));
        }
        self.check_lent(fence)?;
        let key = self.new_key(res, 1);
        Ok(self.adopted(key, fence, since))
    }

    /// Another holder of the key [`Engine::adopt`] just took over: a semaphore's key the host granted
    /// itself to several holders is handed over holder by holder, the first by `adopt` (which makes
    /// the key), each next one here, before any request waits for the key. Answers as `adopt` does.
    ///
    /// Errors (`invalid`): an unknown key; a fence never handed out; a key with no permit left for
    /// another holder, or with a line (its holders come before its waiters, so that the line stays
    /// in the order the host kept); `closed` when closed.
    pub fn adopt_into(&mut self, key: Id, fence: u64, since: u64) -> Result<Hold, Error> {
        self.check_open()?;
        let Some(k) = self.keys.get(key) else {
            return Err(Error::invalid(format!(
                "key {key:?} to adopt into is not busy"
            )));
        };
        if k.held >= limit_of(&self.resources, k) {
            return Err(Error::invalid(format!(
                "key {key:?} has no permit left to adopt another holder into ({} held)",
                k.held
            )));
        }
        if !k.line.is_empty() {
            return Err(Error::invalid(format!(
                "key {key:?} has waiters: holders are adopted before them"
            )));
        }
        self.check_lent(fence)?;
        self.keys.get_mut(key).expect("checked above").held += 1;
        Ok(self.adopted(key, fence, since))
    }

    /// A fence the host may have granted a key with: one handed out already (see `adopt`).
    fn check_lent(&self, fence: u64) -> Result<(), Error> {
        if fence == 0 || fence > self.fences.last() {
            return Err(Error::invalid(format!(
                "fence {fence} to adopt was never handed out (the last is {})",
                self.fences.last()
            )));
        }
        Ok(())
    }

    /// The request of an adopted holder of `key`, holding with `fence` since `since`.
    fn adopted(&mut self, key: Id, fence: u64, since: u64) -> Hold {
        let req = self.reqs.insert(Request {
            key,
            state: State::Holding {
                fence: fence.into(),
                since: since.into(),
                revoke_at: None,
                expires_at: None,
            },
            remote: None,
        });
        Hold::Granted { req, key, fence }
    }

    /// The fence of a held request, if it holds.
    pub fn fence_of(&self, req: Id) -> Option<u64> {
        match self.reqs.get(req)?.state {
            State::Holding { fence, .. } => Some(fence.get()),
            State::Waiting { .. } => None,
        }
    }

    /// The last fence handed out (0 before the first). While a block is lent to the host, the last
    /// of the block, used or not (the engine does not know how far the host got).
    pub fn last_fence(&self) -> u64 {
        self.fences.last()
    }
}

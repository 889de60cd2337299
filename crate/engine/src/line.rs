//! The line of one key: the requests waiting for it, first come first served. A pool's line of
//! waiting claims is one too (see `pool/`), with nobody away.
//!
//! # Fairness
//! The line is strictly FIFO, and nobody barges: a new request is granted at once only when the line is
//! empty and the key has room; otherwise it joins the back. When a holder leaves, the engine hands the
//! key to the head of the line in the same step, before any other call can see the key free. A
//! semaphore serves its head first (head-of-line); since every request takes one permit, the head
//! always fits when anyone would.
//!
//! # Away
//! A waiter whose connection dropped is *away*: the line moves past it as if it had left (it is never
//! granted, and nobody waits for it), but it keeps its place in case its client comes back in time
//! (see `engine/remote.rs`). The head is therefore the first waiter that is not away.
//!
//! # Leaving the line
//! A request that leaves from the middle (cancelled, or its wait ran out) is not searched for: it is
//! left as a dead id, skipped when it reaches the head, so leaving costs O(1). Dead ids are swept out
//! whenever they outnumber the living, so a line never keeps more than twice its waiters.

use std::collections::VecDeque;

use crate::slab::Id;

#[derive(Default, Debug)]
pub struct Line {
    ids: VecDeque<Id>,
    /// Requests that really wait here, away ones included; `ids` may hold dead ones besides.
    waiting: u32,
    /// Of those, how many are away.
    away: u32,
}

impl Line {
    pub fn push(&mut self, req: Id) {
        self.ids.push_back(req);
        self.waiting += 1;
    }

    /// The first living request that is not away, with its position; dead ones before the first
    /// living one are dropped. Away ones are passed over (rare: only after a connection dropped).
    pub fn head(
        &mut self,
        is_waiting: impl Fn(Id) -> bool,
        is_away: impl Fn(Id) -> bool,
    ) -> Option<(usize, Id)> {
        while let Some(&id) = self.ids.front() {
            if is_waiting(id) {
                break;
            }
            self.ids.pop_front();
        }
        if self.away == 0 {
            return self.ids.front().map(|&id| (0, id));
        }
        self.ids
            .iter()
            .enumerate()
            .find(|&(_, &id)| is_waiting(id) && !is_away(id))
            .map(|(at, &id)| (at, id))
    }

    /// Takes the head that [`Line::head`] just returned, at its position.
    pub fn take(&mut self, at: usize) {
        self.ids.remove(at);
        self.waiting -= 1;
    }

    /// A waiter went away (`+1`) or came back (`-1`).
    pub fn set_away(&mut self, delta: i32) {
        self.away = self.away.checked_add_signed(delta).expect("away count");
    }

    /// Waiters that count: not away.
    pub fn active(&self) -> u32 {
        self.waiting - self.away
    }

    /// Notes that a request left from anywhere in the line; its id stays behind, dead.
    pub fn left(&mut self, is_waiting: impl Fn(Id) -> bool) {
        self.waiting -= 1;
        if self.ids.len() > 32 && self.ids.len() > 2 * self.waiting as usize {
            self.ids.retain(|&id| is_waiting(id));
            debug_assert_eq!(self.ids.len(), self.waiting as usize);
        }
    }

    pub fn waiting(&self) -> u32 {
        self.waiting
    }

    pub fn is_empty(&self) -> bool {
        self.waiting == 0
    }

    /// The ids kept, in line order, dead ones included (the caller tells them apart).
    pub fn ids(&self) -> impl Iterator<Item = Id> + '_ {
        self.ids.iter().copied()
    }

    /// The ids kept, dead included (for tests of the memory bound).
    pub fn kept(&self) -> usize {
        self.ids.len()
    }
}

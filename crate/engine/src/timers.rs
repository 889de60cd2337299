//! Deadlines of requests: waits that run out and leases revoked at `maxHold`.
//!
//! A min-heap with lazy deletion: a request that ends before its deadline leaves its entry behind, and
//! the entry is dropped when it reaches the top and no longer matches its request. So that a store that
//! grants and releases millions of leases with a `maxHold` does not keep millions of dead entries until
//! they fall due, the heap is rebuilt from the live entries whenever dead ones outnumber them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::slab::Id;

/// Which deadline of a request an entry stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Due {
    /// The request's wait runs out: it leaves the line, answered `in_use`.
    Wait,
    /// The lease reaches `maxHold`: it is revoked, answered `lost`.
    Revoke,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub at: u64,
    pub req: Id,
    pub due: Due,
}

#[derive(Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<Entry>>,
    /// Entries whose request still waits for them; the rest of the heap is dead.
    live: usize,
}

impl Timers {
    pub fn push(&mut self, entry: Entry) {
        self.heap.push(Reverse(entry));
        self.live += 1;
    }

    /// Notes that a live entry died (its request ended or moved on before the deadline).
    pub fn forget(&mut self, is_live: impl Fn(&Entry) -> bool) {
        self.live -= 1;
        if self.heap.len() > 64 && self.heap.len() > 2 * self.live {
            let heap = std::mem::take(&mut self.heap);
            self.heap = heap
                .into_iter()
                .filter(|Reverse(entry)| is_live(entry))
                .collect();
            debug_assert_eq!(self.heap.len(), self.live);
        }
    }

    /// The earliest entry, dead or alive. Dead ones are removed by the caller with [`Timers::pop`].
    pub fn peek(&self) -> Option<Entry> {
        self.heap.peek().map(|Reverse(entry)| *entry)
    }

    /// Removes the earliest entry; `was_live` says whether it still stood for its request.
    pub fn pop(&mut self, was_live: bool) {
        self.heap.pop();
        if was_live {
            self.live -= 1;
        }
    }

    pub fn clear(&mut self) {
        self.heap.clear();
        self.live = 0;
    }

    /// Entries kept, dead included: bounded by twice the live ones (plus a small constant).
    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

//! Deadlines of requests: waits that run out and leases revoked at `maxHold`.
//!
//! A min-heap with lazy deletion: a request that ends before its deadline leaves its entry behind, and
//! the entry is dropped when it reaches the top and no longer matches its request. So that a store that
//! grants and releases millions of leases with a `maxHold` does not keep millions of dead entries until
//! they fall due, the heap is rebuilt from the live entries whenever dead ones outnumber them.
//!
//! `live` counts the entries that still stand for their request, including one just popped whose
//! request has not yet been ended: the engine forgets a request's live entries (all of them, by its
//! state) in the one place that ends requests, so popping never counts. It steers when to rebuild,
//! nothing else (each entry is checked against its request when it falls due), and every rebuild
//! makes it exact.

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
    /// A lease over a connection reaches its ttl unrenewed: it ends, answered `lost` (LOCK-05).
    Expire,
    /// A waiter whose connection dropped was not asked again within its ttl: it is cancelled.
    Away,
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

    /// Notes that `n` live entries died (their request ended or moved on before the deadline).
    pub fn forget(&mut self, n: usize, is_live: impl Fn(&Entry) -> bool) {
        if n == 0 {
            return;
        }
        self.live = self.live.saturating_sub(n);
        if self.heap.len() > 64 && self.heap.len() > 2 * self.live {
            let mut entries: Vec<Entry> = std::mem::take(&mut self.heap)
                .into_iter()
                .map(|Reverse(entry)| entry)
                .filter(|entry| is_live(entry))
                .collect();
            // A dead entry comes back to life when its request's deadline returns to the same
            // instant (a waiter away, back, and away again within one millisecond) and a twin is
            // pushed beside it: harmless (the second to fire finds its request moved on), but kept
            // once here, and the count made exact again.
            entries.sort_unstable();
            entries.dedup();
            self.live = entries.len();
            self.heap = entries.into_iter().map(Reverse).collect();
        }
    }

    /// The earliest entry, dead or alive. Dead ones are removed by the caller with [`Timers::pop`].
    pub fn peek(&self) -> Option<Entry> {
        self.heap.peek().map(|Reverse(entry)| *entry)
    }

    /// Removes the earliest entry. A live one stays counted until its request forgets it.
    pub fn pop(&mut self) {
        self.heap.pop();
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

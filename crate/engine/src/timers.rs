//! Deadlines of requests: waits that run out and leases revoked at `maxHold`; and, in the pools'
//! own instance (see `pool/`), claims' waits and ttls and the tombstones of claim ids.
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
#[repr(u8)]
pub enum Due {
    /// The request's wait runs out: it leaves the line, answered `in_use`.
    Wait,
    /// The lease reaches `maxHold`: it is revoked, answered `lost`.
    Revoke,
    /// A lease over a connection reaches its ttl unrenewed: it ends, answered `lost` (LOCK-05).
    Expire,
    /// A waiter whose connection dropped was not asked again within its ttl: it is cancelled.
    Away,
    /// A pool's tombstone of a claim id reaches the end of its memory (see `pool/`): forgotten.
    Forget,
}

impl Due {
    const ALL: [Due; 5] = [Due::Wait, Due::Revoke, Due::Expire, Due::Away, Due::Forget];
}

/// A deadline `at` of request `req`, of kind `due`, packed into one `u128` (16 bytes, where the three
/// fields took 24 on wasm32: a store with a million leases under `maxHold` keeps a million entries).
///
/// The bits, from the top: `at` (64), the request's index (32), its generation (21, see `slab.rs`:
/// they wrap within 21 bits), `due` (3). So the integer order is the order of `(at, req, due)`, with
/// `req` ordered by index then generation: earliest first, and ties broken as they always were.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry(u128);

impl Entry {
    pub fn new(at: u64, req: Id, due: Due) -> Entry {
        debug_assert!(req.gen() < 1 << 21);
        Entry(
            u128::from(at) << 64
                | u128::from(req.index()) << 32
                | u128::from(req.gen()) << 3
                | due as u128,
        )
    }

    pub fn at(self) -> u64 {
        (self.0 >> 64) as u64
    }

    pub fn req(self) -> Id {
        Id::from_parts((self.0 >> 32) as u32, (self.0 as u32) >> 3)
    }

    pub fn due(self) -> Due {
        Due::ALL[(self.0 & 7) as usize]
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("at", &self.at())
            .field("req", &self.req())
            .field("due", &self.due())
            .finish()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn id(index: u32, gen: u32) -> Id {
        Id::from_parts(index, gen)
    }

    #[test]
    fn an_entry_is_16_bytes_and_gives_back_its_fields() {
        assert_eq!(std::mem::size_of::<Entry>(), 16);
        for (at, req, due) in [
            (0, id(0, 0), Due::Wait),
            (u64::MAX, id(u32::MAX, (1 << 21) - 1), Due::Away),
            (u64::MAX, id(u32::MAX, (1 << 21) - 1), Due::Forget),
            (1 << 53, id(7, 3), Due::Revoke),
            (42, id(1, 1 << 20), Due::Expire),
        ] {
            let entry = Entry::new(at, req, due);
            assert_eq!((entry.at(), entry.req(), entry.due()), (at, req, due));
        }
    }

    #[test]
    fn entries_order_by_time_then_request_then_kind() {
        // The order of the tuple `(at, req, due)`, which the entries had as a struct of those fields.
        let mut tuples = Vec::new();
        for at in [0, 1, 5, u64::MAX] {
            for req in [
                id(0, 0),
                id(0, 1),
                id(1, 0),
                id(2, (1 << 21) - 1),
                id(u32::MAX, 0),
            ] {
                for due in Due::ALL {
                    tuples.push((at, req, due));
                }
            }
        }
        for a in &tuples {
            for b in &tuples {
                let (x, y) = (Entry::new(a.0, a.1, a.2), Entry::new(b.0, b.1, b.2));
                assert_eq!(x.cmp(&y), a.cmp(b), "{a:?} against {b:?}");
            }
        }
    }
}

//! # holdfast-engine
//!
//! The lock engine of holdfast, as a pure state machine: keyed locks and semaphores whose waiters are
//! served in the order they came, whose leases carry fences that only grow (across restarts too), and
//! whose leases can be bounded by `maxHold`.
//!
//! It does no I/O, reads no clock and draws no random numbers: time comes in as an argument, and
//! every call answers what the host must do, through its return value and the [`Event`]s it queues.
//! When it needs storage (to make fences durable) it says so with [`Engine::poll_persist`]; when it
//! next needs to be called, [`Engine::next_deadline`] says. That makes it testable with a test clock,
//! replayable and fuzzable; the wasm bindings and the TypeScript package supply the real clock,
//! timers, storage and promises. How to drive it, method by method, is on [`Engine`].
//!
//! # Calling rules
//! What the host promises, and what the engine promises back. They are stated here once; the rest of
//! the crate refers to them by number.
//!
//! 1. **Time only goes forward, and deadlines are acted on first.** `now` is the host's monotonic
//!    clock in milliseconds, and never goes back from one call to the next. Every command and
//!    handler that takes `now` first acts on each deadline at or before it, earliest first, as
//!    [`Engine::advance`] does: a waiter whose wait ran out has left its line, a lease past its
//!    `maxHold` or ttl no longer holds, and each key went on at its deadline to whoever was first in
//!    its line then. So a timer that fires late changes when things happen, never who gets a key:
//!    no grant after a wait ran out, no renewal of a lease past its deadline. A grant is stamped with
//!    the `now` it is made at, so its ttl and maxHold start then: no lease is granted already past
//!    its end. The untimed twins ([`Engine::hold_untimed`],
//!    [`Engine::release_untimed`]) serve a host that has not read its clock: they answer `None`,
//!    changing nothing, whenever a deadline could have fallen due for the call or would be set, and
//!    the host calls the timed one.
//! 2. **Storage before grants.** No fence is handed out above a ceiling storage acknowledged. After
//!    every call but the reads the host takes [`Engine::poll_persist`], writes the ceiling, and
//!    answers [`Engine::persisted`] or [`Engine::persist_failed`]; a grant that needs the ceiling
//!    waits for it, and fails ([`Failure::Storage`]) if the write does. A host that lets its
//!    storage go waits for the write under way first ([`Engine::persist_pending`]).
//! 3. **Lent fences are reclaimed first.** A host that grants free keys itself, from a block of
//!    fences [`Engine::lend_fences`] lent it, gives back what it did not use
//!    ([`Engine::reclaim_fences`]) before any other call but the reads: so the engine's grants come
//!    after the host's, and fences stay one increasing sequence in grant order. The engine knows
//!    nothing of those leases: when another request wants such a key, the host hands it over
//!    ([`Engine::adopt`]) before it asks.
//! 4. **Every request is answered once.** A hold is answered by its call ([`Hold`]); one that
//!    queued is then answered by exactly one [`Event`] (granted, timed out, failed, ended) unless
//!    the host cancels it first ([`Engine::cancel`]). A lease ends exactly once: released, revoked,
//!    expired or ended. [`Engine::close`] ends every request still live. The host drains the events
//!    ([`Engine::poll_event`]) after every call but the reads, before it acts on anything else.
//! 5. **Keys are the host's.** The engine never sees a key's string: it names a key by an id while
//!    the key is busy (held or waited for), and the host maps its key to that id. A key id that
//!    died meanwhile is taken as a free key, so the host uses the key id of each answer, and
//!    forgets its mapping on [`Event::KeyIdle`] only if it still maps the key to that very id. The
//!    engine cannot tell one key of a resource from another: the host adopts only a key the engine
//!    does not know to be busy, and forgets a name ([`Engine::forget`]) only while nothing of its
//!    own refers to it.
//!
//! # Modules
//! One concept a module: `engine` (the state machine, one concern a file: see its docs), [`fence`]
//! (durable, growing fences), [`pool`] (finite counts claimed n at a time, durable: issue #16),
//! `line` (the FIFO line of a key, or of a pool), `timers` (deadlines), `slab`
//! (generational ids), `packed` (a `u64` aligned to 4, to pack records), [`bounds`] (every input's
//! bounds), [`wire`] (the protocol of leases over a connection).

pub mod bounds;
mod engine;
mod error;
mod event;
pub mod fence;
mod line;
mod packed;
pub mod pool;
mod slab;
mod timers;
pub mod wire;

pub use engine::{
    Cancelled, Engine, Footprint, Hold, HolderView, KeyView, Kind, Remote, RemoteView, Renewal,
    ResourceId, CONNECTION_LIMIT,
};
pub use error::Error;
pub use event::{Event, Failure};
pub use pool::{Claim, Confirm, PoolId, PoolLoad, PoolView, PoolWrite};
pub use slab::Id;

//! # holdfast-engine
//!
//! The lock engine of holdfast, as a pure state machine: keyed locks and semaphores whose waiters are
//! served in the order they came, whose leases carry fences that only grow (across restarts too), and
//! whose leases can be bounded by `maxHold`.
//!
//! It does no I/O, reads no clock and draws no random numbers: time comes in as an argument (monotonic
//! milliseconds), and every call answers what the host must do, through its return value and the
//! [`Event`]s it queues. When it needs storage (to make fences durable) it says so with
//! [`Engine::poll_persist`]; when it next needs to be called, [`Engine::next_deadline`] says. That makes
//! it testable with a test clock, replayable and fuzzable; the wasm bindings and the TypeScript package
//! supply the real clock, timers, storage and promises.
//!
//! One concept a module: [`fence`] (durable, growing fences), `line` (the FIFO line of a key), `remote` (leases over a connection, LOCK-05),
//! `timers` (deadlines), `slab` (generational ids), `packed` (a `u64` aligned to 4, to pack records), [`bounds`] (every input's bounds), `engine` (the
//! state machine that ties them).

pub mod bounds;
mod engine;
mod error;
mod event;
pub mod fence;
mod line;
mod packed;
mod slab;
mod timers;
pub mod wire;

pub use engine::{
    Cancelled, Engine, Footprint, Hold, HolderView, KeyView, Kind, Remote, RemoteView, Renewal,
    ResourceId, CONNECTION_LIMIT,
};
pub use error::Error;
pub use event::{Event, Failure};
pub use slab::Id;

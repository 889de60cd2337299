//! # holdfast-sim
//!
//! Deterministic simulation of the holdfast engine. The engine is a pure state machine with time passed
//! in, so every interleaving of holds, releases, cancels, deadlines, storage answers, crashes and
//! closes can be produced on purpose, checked step by step, and replayed from a seed.
//!
//! A *seed* draws a world (its locks and semaphores, where fences start, how often each operation
//! comes and how storage behaves: `swarm.rs`) and then draws operations one at a time (`gen.rs`). The
//! driver (`driver/`) plays the host: it applies each operation to the engine and to a plain reference
//! model (`model/`), compares every answer and event, and checks the invariants after every step:
//!
//! - never more holders of a key than its limit;
//! - grants in FIFO order, no barging, a semaphore's head first;
//! - every fence larger than every earlier one, across restarts, the host's own grants from fences the
//!   engine lent it included; none above what storage acknowledged or what the disk holds; no write
//!   that lowers the stored ceiling;
//! - a key the host granted itself busy nowhere else, and handed over to the engine (`adopt`) before
//!   another request for it is made;
//! - every request answered exactly once; with a punctual timer, no deadline left pending past its
//!   instant; never a grant after the request's wait ran out;
//! - a lease past its ttl or `maxHold` never renewed (by `renew` or by asking again), never released
//!   as held, never counted as a holder;
//! - a request over a connection asked again is never granted twice;
//! - no entry left for a key with no holder and no waiter, nor for a name the host forgot; a name
//!   forgotten only while no key of it is busy, and an id kept past forgetting naming nothing, not
//!   even the name registered next in its place (and the engine's own `check()`);
//! - pools (issue #16): never below zero nor above capacity (POOL-01); no claim answered before the
//!   write that keeps it is acknowledged, one write under way, taken once a turn, and a restart
//!   reading back exactly what the last write that reached the disk kept (POOL-02); a claim id
//!   asked again answering its first outcome (POOL-03); waiting claims served in order, the head
//!   never overtaken (POOL-04); ttls, confirms, resizes and cancels as the model says.
//!
//! Coverage marks (`marks.rs`) prove the hard corners are reached: a run of many seeds fails if any is
//! reached by fewer than 1% of them. A failure prints its seed and a shrunk sequence of operations
//! (`runner.rs`), and both replay exactly.
//!
//! # Running it
//! `cargo test` (the `sim` test) runs 1,000 seeds of 10,000 operations each. The environment changes
//! that:
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `HOLDFAST_SIM_SEEDS` | 1000 | how many seeds (a soak: `100000`) |
//! | `HOLDFAST_SIM_FIRST` | 0 | the first seed (a soak explores new ones: e.g. the date) |
//! | `HOLDFAST_SIM_LEN` | 10000 | operations a seed |
//! | `HOLDFAST_SIM_THREADS` | 1 | threads (a soak: the machine's cores) |
//! | `HOLDFAST_SIM_LATE_EVERY` | 5 | every how many seeds one has a late timer (`1`: all, `0`: none) |
//! | `HOLDFAST_SIM_LAX` | `none` | late-timer violations to let pass while shrinking a new bug: `none`, or some of `release,hold,grant,resume` |
//! | `HOLDFAST_SIM_REPLAY` | | a seed to replay, printing every operation and answer |
//! | `HOLDFAST_SIM_SEQ` | | with `HOLDFAST_SIM_REPLAY`: replay these operations (a shrunk failure) instead of the seed's |
//!
//! A *late timer* is a host whose timer fires after its deadline (a busy event loop): operations then
//! come at a time past a deadline the engine has not yet acted on. The engine once broke invariants
//! there (four kinds: `release`, `hold`, `grant`, `resume`); they are fixed, every seed with a late
//! timer checks them, and `tests/regressions.rs` keeps the smallest case of each.
//!
//! ```sh
//! cargo test -p holdfast-sim --test sim -- --nocapture                       # figures printed
//! HOLDFAST_SIM_SEEDS=100000 HOLDFAST_SIM_THREADS=$(nproc) cargo test --release -p holdfast-sim --test sim -- --nocapture
//! HOLDFAST_SIM_LATE_EVERY=1 cargo run --release -p holdfast-sim -- run        # every seed with a late timer
//! HOLDFAST_SIM_REPLAY=42 cargo test -p holdfast-sim --test sim -- --nocapture
//! cargo run -p holdfast-sim -- replay 42                                     # the same, as a binary
//! cargo run -p holdfast-sim -- hashes 0 100                                  # trace hashes, for tests/sim
//! ```
//!
//! The same runs build for `wasm32-unknown-unknown` (the `wasm` module exports `traceHash`), and
//! `tests/sim/run.sh` checks that the wasm build under Node gives the native trace hashes.
//!
//! One concept a module: [`rng`], [`op`], [`swarm`], [`gen`], [`model`], [`storage`], [`marks`],
//! [`trace`], [`driver`], [`runner`]. The model and the driver are split by concern as the engine
//! is (`hold`, `deadlines`, `fences`, `remote`).

pub mod driver;
pub mod gen;
pub mod marks;
pub mod model;
pub mod op;
pub mod rng;
pub mod runner;
pub mod storage;
pub mod swarm;
pub mod trace;
#[cfg(target_arch = "wasm32")]
mod wasm;

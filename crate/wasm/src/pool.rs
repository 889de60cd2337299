//! Pools (issue #16) for JavaScript: the engine's pool calls with numbers in and numbers out, as on
//! the hot path of holds (answers in the return value and the shared buffer, errors as negative
//! statuses with `lastError()`), and the pools' storage, which the TypeScript host does (#14: no
//! storage I/O in wasm).
//!
//! # Storage, driven by the host
//! - Reading back: the host makes a [`PoolReader`], reads each key it names (`nextKey`) from its
//!   storage and hands the value over (`feed`), until it names none; then `openPools(reader, now,
//!   wall)`, before any pool is named.
//! - Writing (group commit): after a call, `poolWriteWanted()` says the pools changed and no write is
//!   under way. The host then takes the write once a turn (`takePoolWrite()`: the key/value pairs to
//!   set, in order, and its `seq`), sets them, and tells the outcome with the time
//!   (`poolWritten(seq, ok, now)`), which answers the requests the write kept (or failed). One write is
//!   under way at a time; no claim is answered before its write is acknowledged.

use holdfast_engine::{pool::PoolLoad, Cancelled, Claim, Confirm, PoolId};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::wire::pools_to_js;
use crate::{buffer, engine_error, id_of, js_error, status_of, Core};
use holdfast_engine::wire::PoolEntry;

/// Answers of `claim` (positive; errors are negative statuses). Part of the ABI (see `lib.rs`).
pub mod claim {
    /// It took its units: the request (`buffer::REQ`) is answered `CLAIMED` once written.
    pub const CLAIM_WRITING: f64 = 1.0;
    /// It waits in line: the request (`buffer::REQ`) is answered by an event.
    pub const CLAIM_QUEUED: f64 = 2.0;
    /// Its id is a claim still waiting or being written: the answer of that request (`buffer::REQ`).
    pub const CLAIM_JOINED: f64 = 3.0;
    /// It does not fit and would not wait: remaining at `buffer::CLAIM_REMAINING`.
    pub const CLAIM_REFUSED: f64 = 4.0;
    /// Its id claimed before: the first outcome's remaining at `buffer::CLAIM_REMAINING`, and at
    /// `buffer::CLAIM_OPEN` 1 if it still holds its units.
    pub const CLAIM_KNOWN: f64 = 5.0;
}

/// Reading the pools back, a key at a time (the engine's sans-IO [`PoolLoad`]; see the module docs).
#[wasm_bindgen]
pub struct PoolReader {
    load: Option<PoolLoad>,
}

impl Default for PoolReader {
    fn default() -> Self {
        PoolReader::new()
    }
}

#[wasm_bindgen]
impl PoolReader {
    #[wasm_bindgen(constructor)]
    pub fn new() -> PoolReader {
        PoolReader {
            load: Some(PoolLoad::new()),
        }
    }

    /// The storage key to read next, or `undefined` when everything is read.
    #[wasm_bindgen(js_name = nextKey)]
    pub fn next_key(&self) -> Option<String> {
        self.load.as_ref().and_then(PoolLoad::next_key)
    }

    /// What storage holds at the key `nextKey` named (`undefined` or `null`: nothing). Throws a
    /// `storage` error naming the key for a value that is not a string or not what a store wrote.
    pub fn feed(&mut self, value: JsValue) -> Result<(), JsValue> {
        let key = self.next_key().unwrap_or_default();
        let text = if value.is_undefined() || value.is_null() {
            None
        } else {
            Some(value.as_string().ok_or_else(|| {
                js_error(
                    "storage",
                    &format!("storage key {key} holds a value that is not a string; damaged? refusing to open pools"),
                    None,
                )
            })?)
        };
        let load = self.load.as_mut().ok_or_else(|| {
            js_error(
                "invalid",
                "the pools were opened from this reader already",
                None,
            )
        })?;
        load.feed(text.as_deref())
            .map_err(|e| js_error("storage", &e, None))
    }
}

/// The pools' write, as `takePoolWrite` answers it: set `keys[i]` to `values[i]` in order, then
/// answer `poolWritten(seq, ...)`.
#[derive(Serialize)]
struct JsPoolWrite {
    seq: f64,
    keys: Vec<String>,
    values: Vec<String>,
}

fn pool_of(raw: f64) -> PoolId {
    PoolId::from_u64(if raw >= 0.0 { raw as u64 } else { u64::MAX })
        .unwrap_or(PoolId::from_u64(u64::from(u32::MAX)).expect("a pool id"))
}

#[wasm_bindgen]
impl Core {
    /// Reads the pools back from `reader` (read to its end: see [`PoolReader`]), before any pool is
    /// named. `now` on the host's clock and `wall`, the wall clock in ms, are the same instant: stored
    /// times are wall clock, so that ttls and the 24 hours of an id go on across restarts. Throws a
    /// `storage` error when what was read is not whole or breaks POOL-01.
    #[wasm_bindgen(js_name = openPools)]
    pub fn open_pools(
        &mut self,
        reader: &mut PoolReader,
        now: f64,
        wall: f64,
    ) -> Result<(), JsValue> {
        let load = reader.load.take().ok_or_else(|| {
            js_error(
                "invalid",
                "the pools were opened from this reader already",
                None,
            )
        })?;
        if load.next_key().is_some() {
            return Err(js_error(
                "invalid",
                "openPools: the reader still names a key to read",
                None,
            ));
        }
        let now = if now > 0.0 { now as u64 } else { 0 };
        let wall = if wall > 0.0 { wall as u64 } else { 0 };
        self.inner
            .borrow_mut()
            .engine
            .open_pools(load, now, wall)
            .map_err(|e| js_error("storage", &e.to_string(), None))
    }

    /// Whether the pools changed and no write of theirs is under way: the host takes one
    /// (`takePoolWrite`) once this turn's calls are made.
    #[wasm_bindgen(js_name = poolWriteWanted)]
    pub fn pool_write_wanted(&self) -> bool {
        self.inner.borrow().engine.pool_write_wanted()
    }

    /// Whether a pool request's answer waits for the next pools' write (not one under way).
    #[wasm_bindgen(js_name = poolWriteAwaited)]
    pub fn pool_write_awaited(&self) -> bool {
        self.inner.borrow().engine.pool_write_awaited()
    }

    /// The pools' write to make now, `{ seq, keys, values }` (set each key to its value, in order),
    /// or `undefined` when none is wanted. Every pool request waiting for a write waits for this one,
    /// answered by `poolWritten(seq, ...)`.
    #[wasm_bindgen(js_name = takePoolWrite)]
    pub fn take_pool_write(&mut self) -> Result<JsValue, JsValue> {
        let Some(write) = self.inner.borrow_mut().engine.poll_pool_write() else {
            return Ok(JsValue::UNDEFINED);
        };
        let (keys, values) = write.sets.into_iter().unzip();
        let write = JsPoolWrite {
            seq: write.seq as f64,
            keys,
            values,
        };
        serde_wasm_bindgen::to_value(&write).map_err(|e| js_error("invalid", &e.to_string(), None))
    }

    /// The outcome of the pools' write `seq` (`ok`: storage acknowledged every key of it), at `now`:
    /// the requests it kept are answered (`CLAIMED`, `DURABLE`), or, when it failed, `POOL_FAILED`
    /// (claims give their units back). Answers how many events it wrote to the buffer (`drain()` for
    /// more), as `release` does.
    #[wasm_bindgen(js_name = poolWritten)]
    pub fn pool_written(&mut self, seq: f64, ok: bool, now: f64) -> f64 {
        self.reclaim();
        let seq = if seq >= 0.0 { seq as u64 } else { 0 };
        {
            let engine = &mut self.inner.borrow_mut().engine;
            if ok {
                engine.pool_written(seq, now as u64);
            } else {
                engine.pool_write_failed(seq, now as u64);
            }
        }
        self.persist_if_asked();
        self.write_events()
    }

    /// Names (or makes) pool `name` of `capacity` units; answers its id. Throws `invalid` (a name, a
    /// capacity out of bounds, or another capacity than the pool's).
    pub fn pool(&mut self, name: &str, capacity: f64) -> Result<f64, JsValue> {
        self.reclaim();
        let capacity = if capacity >= 0.0 && capacity.fract() == 0.0 {
            capacity as u64
        } else {
            0
        };
        let answer = self.inner.borrow_mut().engine.pool(name, capacity);
        self.persist_if_asked();
        answer
            .map(|p| p.to_u64() as f64)
            .map_err(|e| engine_error(&e))
    }

    /// The id of the pool `name`, or -1 when there is none (made, or read back).
    #[wasm_bindgen(js_name = findPool)]
    pub fn find_pool(&self, name: &str) -> f64 {
        self.inner
            .borrow()
            .engine
            .find_pool(name)
            .map_or(-1.0, |p| p.to_u64() as f64)
    }

    /// Claims `n` units of `pool` as claim `id` (`remember`: keep the id 24 hours; `wait` in ms, -1
    /// without limit; `ttl` in ms, 0 for none). Answers one of [`claim`], or a negative [`crate::status`]
    /// (`lastError()`); the events it wrote are at `buffer::HOLD_EVENTS`.
    #[allow(clippy::too_many_arguments)]
    pub fn claim(
        &mut self,
        pool: f64,
        n: f64,
        id: &str,
        remember: bool,
        wait: f64,
        ttl: f64,
        now: f64,
    ) -> f64 {
        self.reclaim();
        let n = if n >= 1.0 && n.fract() == 0.0 {
            n as u64
        } else {
            0
        };
        let wait = if wait < 0.0 { None } else { Some(wait as u64) };
        let ttl = if ttl > 0.0 { Some(ttl as u64) } else { None };
        let answer = self.inner.borrow_mut().engine.claim(
            pool_of(pool),
            n,
            id,
            remember,
            wait,
            ttl,
            now as u64,
        );
        let answer = match answer {
            Ok(Claim::Writing { req }) => self.req(req, claim::CLAIM_WRITING),
            Ok(Claim::Queued { req }) => self.req(req, claim::CLAIM_QUEUED),
            Ok(Claim::Joined { req }) => self.req(req, claim::CLAIM_JOINED),
            Ok(Claim::Refused { remaining }) => {
                self.buf[buffer::CLAIM_REMAINING] = remaining as f64;
                claim::CLAIM_REFUSED
            }
            Ok(Claim::Known { remaining, open }) => {
                self.buf[buffer::CLAIM_REMAINING] = remaining as f64;
                self.buf[buffer::CLAIM_OPEN] = f64::from(u8::from(open));
                claim::CLAIM_KNOWN
            }
            Err(error) => self.failed(&error),
        };
        self.then_events(answer)
    }

    /// Gives back the units of claim `id` of `pool`: 1 when it held them and the release is being
    /// written (the request at `buffer::REQ`, answered `DURABLE`), 0 when no open claim has that id,
    /// or a negative status. Events at `buffer::HOLD_EVENTS`.
    #[wasm_bindgen(js_name = releaseClaim)]
    pub fn release_claim(&mut self, pool: f64, id: &str, now: f64) -> f64 {
        self.reclaim();
        let answer = self
            .inner
            .borrow_mut()
            .engine
            .release_claim(pool_of(pool), id, now as u64);
        self.written(answer)
    }

    /// Undoes the open claim `id` of `pool` (see `Engine::withdraw_claim`): 1 when it is being
    /// written (the request at `buffer::REQ`, answered `DURABLE`), 0 when no open claim has that id,
    /// or a negative status. Events at `buffer::HOLD_EVENTS`.
    #[wasm_bindgen(js_name = withdrawClaim)]
    pub fn withdraw_claim(&mut self, pool: f64, id: &str, now: f64) -> f64 {
        self.reclaim();
        let answer = self
            .inner
            .borrow_mut()
            .engine
            .withdraw_claim(pool_of(pool), id, now as u64);
        self.written(answer)
    }

    /// Confirms claim `id` of `pool`: 1 when its ttl is gone and that is being written (the request
    /// at `buffer::REQ`, answered `DURABLE`), 2 when it had none, 3 when no open claim has that id,
    /// or a negative status. Events at `buffer::HOLD_EVENTS`.
    #[wasm_bindgen(js_name = confirmClaim)]
    pub fn confirm_claim(&mut self, pool: f64, id: &str, now: f64) -> f64 {
        self.reclaim();
        let answer = self
            .inner
            .borrow_mut()
            .engine
            .confirm_claim(pool_of(pool), id, now as u64);
        let answer = match answer {
            Ok(Confirm::Writing { req }) => self.req(req, 1.0),
            Ok(Confirm::Done) => 2.0,
            Ok(Confirm::Gone) => 3.0,
            Err(error) => self.failed(&error),
        };
        self.then_events(answer)
    }

    /// Resizes `pool`: 1 when it changed and that is being written (the request at `buffer::REQ`,
    /// answered `DURABLE`), 0 when it is the capacity already, or a negative status (`lastError()`
    /// names the capacity and what is claimed). Events at `buffer::HOLD_EVENTS`.
    #[wasm_bindgen(js_name = resizePool)]
    pub fn resize_pool(&mut self, pool: f64, capacity: f64, now: f64) -> f64 {
        self.reclaim();
        let capacity = if capacity >= 0.0 && capacity.fract() == 0.0 {
            capacity as u64
        } else {
            0
        };
        let answer =
            self.inner
                .borrow_mut()
                .engine
                .resize_pool(pool_of(pool), capacity, now as u64);
        let answer = match answer {
            Ok(Some(req)) => self.req(req, 1.0),
            Ok(None) => 0.0,
            Err(error) => self.failed(&error),
        };
        self.then_events(answer)
    }

    /// Ends a pool request the host no longer wants (see `Engine::cancel_claim`): 1 if it left its
    /// line, 2 if it gave back the units it took, 0 if it had ended. Events at `buffer::HOLD_EVENTS`.
    #[wasm_bindgen(js_name = cancelClaim)]
    pub fn cancel_claim(&mut self, req: f64, now: f64) -> f64 {
        self.reclaim();
        let Some(req) = id_of(req) else { return 0.0 };
        let answer = self.inner.borrow_mut().engine.cancel_claim(req, now as u64);
        let answer = match answer {
            Ok(Cancelled::Left) => 1.0,
            Ok(Cancelled::Released) => 2.0,
            Ok(Cancelled::Unknown) => 0.0,
            Err(error) => self.failed(&error),
        };
        self.then_events(answer)
    }

    /// Whether pool request `req` is a claim waiting in line (see `Engine::claim_waits`; a read).
    #[wasm_bindgen(js_name = claimWaits)]
    pub fn claim_waits(&self, req: f64) -> bool {
        id_of(req).is_some_and(|req| self.inner.borrow().engine.claim_waits(req))
    }

    /// Whether claim `id` of `pool` gave back the units it took (see `Engine::claim_handed_back`; a read).
    #[wasm_bindgen(js_name = claimHandedBack)]
    pub fn claim_handed_back(&self, pool: f64, id: &str) -> bool {
        self.inner
            .borrow()
            .engine
            .claim_handed_back(pool_of(pool), id)
    }

    /// Whether claim `id` of `pool` is open (see `Engine::claim_open`; a read).
    #[wasm_bindgen(js_name = claimOpen)]
    pub fn claim_open(&self, pool: f64, id: &str) -> bool {
        self.inner.borrow().engine.claim_open(pool_of(pool), id)
    }

    /// Units left in `pool` (deadlines acted on first), or a negative status. Events at
    /// `buffer::HOLD_EVENTS`.
    #[wasm_bindgen(js_name = poolRemaining)]
    pub fn pool_remaining(&mut self, pool: f64, now: f64) -> f64 {
        self.reclaim();
        let answer = self
            .inner
            .borrow_mut()
            .engine
            .pool_remaining(pool_of(pool), now as u64);
        let answer = match answer {
            Ok(remaining) => remaining as f64,
            Err(error) => self.failed(&error),
        };
        self.then_events(answer)
    }

    /// Every pool: `[{ name, capacity, remaining, claims, waiting }]`.
    #[wasm_bindgen(js_name = inspectPools)]
    pub fn inspect_pools(&self) -> Result<JsValue, JsValue> {
        let views = self
            .inner
            .borrow()
            .engine
            .inspect_pools()
            .map_err(|e| engine_error(&e))?;
        // As a `pools` frame lists them (the same objects over a connection).
        pools_to_js(
            views
                .into_iter()
                .map(|v| PoolEntry {
                    name: v.name,
                    capacity: v.capacity,
                    remaining: v.remaining,
                    claims: v.claims,
                    waiting: v.waiting,
                })
                .collect(),
        )
    }
}

impl Core {
    /// A change answered once written: 1 (its request at `buffer::REQ`), 0 when there was nothing
    /// to change, or a negative status; events at `buffer::HOLD_EVENTS`.
    fn written(
        &mut self,
        answer: Result<Option<holdfast_engine::Id>, holdfast_engine::Error>,
    ) -> f64 {
        let answer = match answer {
            Ok(Some(req)) => self.req(req, 1.0),
            Ok(None) => 0.0,
            Err(error) => self.failed(&error),
        };
        self.then_events(answer)
    }

    fn req(&mut self, req: holdfast_engine::Id, answer: f64) -> f64 {
        self.buf[buffer::REQ] = req.to_u64() as f64;
        answer
    }

    fn failed(&mut self, error: &holdfast_engine::Error) -> f64 {
        self.inner.borrow_mut().last_error = error.to_string();
        status_of(error)
    }

    /// After a pool call: the writes it asks for, and its events into the buffer.
    fn then_events(&mut self, answer: f64) -> f64 {
        self.persist_if_asked();
        self.buf[buffer::HOLD_EVENTS] = self.write_events();
        answer
    }
}

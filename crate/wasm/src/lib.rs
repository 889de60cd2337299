//! # holdfast-wasm
//!
//! The wasm-bindgen bindings of [`holdfast_engine`]: thin, and shaped for a cheap hot path.
//!
//! - Calls on the hot path (`hold`, `release`, `cancel`, `advance`) take and return numbers only. Their
//!   details (ids, fences, events) go into one buffer of `f64`s in wasm memory, which the TypeScript
//!   wrapper reads through a `Float64Array` it keeps: no string is copied, nothing is allocated per call.
//!   See [`buffer`] for its layout.
//! - Errors on the hot path are negative return values ([`status`]); their message is fetched only when
//!   one happens. Errors elsewhere are thrown as JavaScript `Error`s with a `code` property.
//! - The bindings do no I/O and await nothing: the host does all of it, in one language. The host
//!   reads the stored fence ceiling and passes it to [`open_core`]; whenever the engine asks for the
//!   next ceiling to be kept, the bindings call the host's `persist(key, value, ceiling)` function at
//!   once (synchronously, from inside the call that asked), and the host writes it to its storage and
//!   answers [`Core::ceiling_written`] with the outcome and the time, so that the engine still never
//!   reads a clock. (Decided in #14 with a measurement: docs/architecture.md, "Storage I/O".)
//! - Uncontended grants need no call at all: the host borrows a block of fences ([`Core::lend`]) and
//!   grants a free key of a lock itself, taking the next fence of the block from the buffer
//!   ([`buffer::FENCE_NEXT`]). Every other call that can touch the engine first gives back what the
//!   host did not use (the engine's calling rule 3, kept here so that the host cannot forget it).
//!   When another request wants a key the host granted itself, the host hands the key over
//!   ([`Core::adopt`]) and then holds as usual.

mod hex;
pub mod pool;
mod remote;
pub mod wire;

use std::cell::RefCell;
use std::rc::Rc;

use holdfast_engine::{
    bounds, fence, Cancelled, Engine, Error, Event, Failure, Hold, Id, Kind, ResourceId,
};
use js_sys::{Function, Reflect};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// The key under which a store keeps its fence ceiling in the host's storage.
pub const FENCE_KEY: &str = "holdfast.fences";

// The ABI shared with the TypeScript wrapper: the modules `buffer`, `event` and `status`. The
// wrapper's copy is npm/src/store/abi.ts, one `export const NAME = <number>` a constant, and
// tests/abi.rs fails if a name there is missing here or has another value. Each meaning has its own
// name, even where two share a slot.

/// The layout of the shared buffer (indices of `f64`s).
pub mod buffer {
    /// The id of the request a `hold` made.
    pub const REQ: usize = 0;
    /// `releaseRemote`: the id of the request it ended, or -1 when no live request had that lease.
    /// Shares its slot with [`REQ`]: no call writes both.
    pub const RELEASED: usize = 0;
    /// The id of the key it holds or waits for.
    pub const KEY: usize = 1;
    /// How many events the `hold` wrote (rarely any: a grant that failed for want of fences); also
    /// for `holdRemote` and `renew`.
    pub const HOLD_EVENTS: usize = 2;
    /// `holdRemote` answering [`status::RESUMED`](super::status::RESUMED): the fence of the request
    /// (0 while it waits). Shares its slot with [`REVOKE_IN`]: no call writes both.
    pub const RESUMED_FENCE: usize = 3;
    /// `renew`: how long until `maxHold` revokes the lease, or -1. Shares its slot with
    /// [`RESUMED_FENCE`].
    pub const REVOKE_IN: usize = 3;
    /// Where events start: [`EVENT_SIZE`] numbers each, `[kind, id, a, 0]` (kinds: [`super::event`]).
    pub const EVENTS: usize = 4;
    pub const EVENT_SIZE: usize = 4;
    /// How many events one call writes at most; `drain()` writes the rest.
    pub const EVENT_SLOTS: usize = 256;
    /// The next fence of the block `lend()` lent the host. While a block is lent (`FENCE_END` > 0),
    /// the host grants a key itself with fence `f = buf[FENCE_NEXT]` if `f < buf[FENCE_END]`, and
    /// writes `f + 1` back here; nothing else writes it. The next call that can touch the engine
    /// reads it as the first fence the host did not use, gives the rest back, and sets both slots
    /// to 0.
    pub const FENCE_NEXT: usize = EVENTS + EVENT_SIZE * EVENT_SLOTS;
    /// The end (exclusive) of the block lent to the host; 0 while nothing is lent.
    pub const FENCE_END: usize = FENCE_NEXT + 1;
    /// `claim` answering `CLAIM_REFUSED` or `CLAIM_KNOWN`: the units remaining (the first outcome's,
    /// for `CLAIM_KNOWN`). Shares its slot with [`RESUMED_FENCE`] and [`REVOKE_IN`]: no call writes two.
    pub const CLAIM_REMAINING: usize = 3;
    /// `claim` answering `CLAIM_KNOWN`: 1 if the claim still holds its units. Shares its slot with [`KEY`].
    pub const CLAIM_OPEN: usize = 1;
    pub const LEN: usize = FENCE_END + 1;
}

/// Event kinds, as the first number of an event in the buffer (see [`buffer::EVENTS`]); `id` is the
/// second number, `a` the third.
pub mod event {
    /// id: the request; a: its fence.
    pub const GRANTED: f64 = 1.0;
    /// id: the request.
    pub const TIMED_OUT: f64 = 2.0;
    /// id: the request.
    pub const REVOKED: f64 = 3.0;
    /// id: the request; a: 1 storage failed, 2 fences used up.
    pub const FAILED: f64 = 4.0;
    /// id: the request; a: 1 if it held.
    pub const ENDED: f64 = 5.0;
    /// id: the key.
    pub const KEY_IDLE: f64 = 6.0;
    /// id: the request (a lease over a connection past its ttl).
    pub const EXPIRED: f64 = 7.0;
    /// id: a pool request (a claim, kept by storage); a: the units remaining right after it.
    pub const CLAIMED: f64 = 8.0;
    /// id: a pool request (a waiting claim that left its line without units); a: remaining.
    pub const NOT_CLAIMED: f64 = 9.0;
    /// id: a pool request (a confirm or resize, kept by storage).
    pub const DURABLE: f64 = 10.0;
    /// id: a pool request whose write failed; a: 1 (storage).
    pub const POOL_FAILED: f64 = 11.0;
    /// id: a pool request ended by closing.
    pub const POOL_ENDED: f64 = 12.0;
    /// id: a pool request (a release or confirm) whose claim was undone before it was answered: it
    /// acted on no claim.
    pub const NO_CLAIM: f64 = 13.0;
}

/// Negative answers of `hold` and friends.
pub mod status {
    pub const BUSY: f64 = -1.0;
    pub const INVALID: f64 = -2.0;
    pub const LIMIT: f64 = -3.0;
    pub const CLOSED: f64 = -4.0;
    /// An untimed call (`now` < 0) that needs the time: nothing changed; call again with it.
    pub const NEED_TIME: f64 = -5.0;
    /// `holdRemote`: a request asked again goes on as it was (its fence at
    /// [`buffer::RESUMED_FENCE`](super::buffer::RESUMED_FENCE)).
    pub const RESUMED: f64 = -6.0;
    /// `release` answers `IDLE_BASE - index` when its only outcome is that the key (of that index)
    /// went idle: the common case, answered without the buffer.
    pub const IDLE_BASE: f64 = -16.0;

    pub(crate) fn of(error: &holdfast_engine::Error) -> f64 {
        super::status_of(error)
    }
}

/// A JavaScript `Error` with a stable `code`.
pub(crate) fn js_error(code: &str, message: &str, cause: Option<&JsValue>) -> JsValue {
    let error = js_sys::Error::new(message);
    let _ = Reflect::set(&error, &"code".into(), &code.into());
    if let Some(cause) = cause {
        let _ = Reflect::set(&error, &"cause".into(), cause);
    }
    error.into()
}

fn engine_error(error: &Error) -> JsValue {
    js_error(error.code(), &error.to_string(), None)
}

struct Inner {
    engine: Engine,
    /// The host's `persist(key, value, ceiling)`: starts a write and answers nothing.
    persist: Function,
    last_error: String,
}

/// One store's engine, as JavaScript holds it.
#[wasm_bindgen]
pub struct Core {
    inner: Rc<RefCell<Inner>>,
    buf: Box<[f64; buffer::LEN]>,
    /// Whether a block of fences is lent to the host (the engine's `fences_lent`, kept here so that
    /// every call checks it without borrowing the engine).
    lent: bool,
}

/// The storage key of the fence ceiling, for the host to read before [`open_core`].
#[wasm_bindgen(js_name = fenceKey)]
pub fn fence_key() -> String {
    FENCE_KEY.to_string()
}

/// Opens a store's engine on `stored`, what the host read at [`fence_key`] (`undefined` or `null`
/// when absent). Before it answers, it asks `persist` to write the first ceiling; nothing is granted
/// until the host answers that write with [`Core::ceiling_written`], so a host answers its open only
/// then. `persist(key, value, ceiling)` must start the write and return: it must not call the core.
#[wasm_bindgen(js_name = openCore)]
pub fn open_core(stored: JsValue, persist: Function) -> Result<Core, JsValue> {
    let stored = parse_ceiling(&stored)?;
    let engine = Engine::open(stored).map_err(|e| js_error("storage", &e.to_string(), None))?;
    let inner = Inner {
        engine,
        persist,
        last_error: String::new(),
    };
    let core = Core {
        inner: Rc::new(RefCell::new(inner)),
        buf: Box::new([0.0; buffer::LEN]),
        lent: false,
    };
    core.persist_if_asked();
    Ok(core)
}

/// The stored ceiling: absent, or as `fence::encode_ceiling` wrote it. Anything else is a damaged
/// store, and starting fences again from 1 would repeat them: refuse it.
fn parse_ceiling(value: &JsValue) -> Result<Option<u64>, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    let text = value.as_string();
    match text.as_deref().and_then(fence::decode_ceiling) {
        Some(n) => Ok(Some(n)),
        None => Err(js_error(
            "storage",
            &format!(
                "storage key {FENCE_KEY} holds {:?}, not a fence ceiling (digits, a colon and their check); damaged? refusing to restart fences",
                text.unwrap_or_else(|| format!("a value of type {}", value.js_typeof().as_string().unwrap_or_default()))
            ),
            None,
        )),
    }
}

/// A resource id from JavaScript; a number that cannot be one names no resource (the engine refuses
/// it as unknown: no place is ever at index 2^32 - 1).
pub(crate) fn resource_of(raw: f64) -> ResourceId {
    id_of(raw)
        .and_then(|id| ResourceId::from_u64(id.to_u64()))
        .unwrap_or_else(|| ResourceId::from_u64(u64::from(u32::MAX)).expect("an id"))
}

pub(crate) fn id_of(raw: f64) -> Option<Id> {
    if raw >= 0.0 && raw.fract() == 0.0 {
        Id::from_u64(raw as u64)
    } else {
        None
    }
}

fn status_of(error: &Error) -> f64 {
    match error {
        Error::Invalid(_) => status::INVALID,
        Error::Limit(_) => status::LIMIT,
        Error::Closed => status::CLOSED,
    }
}

#[wasm_bindgen]
impl Core {
    /// Where the shared buffer starts in wasm memory (a byte offset), and its length in `f64`s.
    #[wasm_bindgen(js_name = bufferPtr)]
    pub fn buffer_ptr(&self) -> usize {
        self.buf.as_ptr() as usize
    }

    #[wasm_bindgen(js_name = bufferLen)]
    pub fn buffer_len(&self) -> usize {
        buffer::LEN
    }

    /// Registers a lock (`kind` 0) or a semaphore (1) of `name`; answers its resource id (below 2^53;
    /// its place, dense and reused once forgotten, is the id's low 32 bits).
    pub fn resource(&self, kind: u8, name: &str, limit: u32) -> Result<f64, JsValue> {
        let kind = if kind == 0 {
            Kind::Lock
        } else {
            Kind::Semaphore
        };
        self.inner
            .borrow_mut()
            .engine
            .resource(kind, name, limit)
            .map(|r| r.to_u64() as f64)
            .map_err(|e| engine_error(&e))
    }

    /// Forgets a resource nothing refers to any more (see `Engine::forget`); throws an `invalid`
    /// error while the engine has a busy key of it.
    pub fn forget(&mut self, res: f64) -> Result<(), JsValue> {
        self.reclaim();
        self.inner
            .borrow_mut()
            .engine
            .forget(resource_of(res))
            .map_err(|e| engine_error(&e))
    }

    /// Asks for a key. `key` is the key's id while it is busy, or -1; `wait` is in ms (-1: no limit);
    /// `max_hold` in ms (0: none); `now` in ms, or -1 when the host has not read its clock (see
    /// `Engine::hold_untimed`; answers [`status::NEED_TIME`] when it needs it). Answers the fence (> 0) when granted, 0 when queued,
    /// [`status::BUSY`] when it would wait and `wait` is 0, or another [`status`] on error (the message
    /// from `lastError()`). The request's and key's ids are in the buffer.
    pub fn hold(&mut self, res: f64, key: f64, wait: f64, max_hold: f64, now: f64) -> f64 {
        self.reclaim();
        let key = if key < 0.0 { None } else { id_of(key) };
        let wait = if wait < 0.0 { None } else { Some(wait as u64) };
        let max_hold = if max_hold > 0.0 {
            Some(max_hold as u64)
        } else {
            None
        };
        let answer = {
            let engine = &mut self.inner.borrow_mut().engine;
            if now < 0.0 {
                engine.hold_untimed(resource_of(res), key, wait, max_hold)
            } else {
                engine
                    .hold(resource_of(res), key, wait, max_hold, now as u64)
                    .map(Some)
            }
        };
        let answer = match answer {
            Ok(None) => return status::NEED_TIME,
            Ok(Some(hold)) => self.hold_answer(Ok(hold)),
            Err(error) => self.hold_answer(Err(error)),
        };
        self.persist_if_asked();
        self.buf[buffer::HOLD_EVENTS] = self.write_events();
        answer
    }

    /// Lets a lease go. Answers how many events it wrote to the buffer (the next holder's grant, the
    /// key going idle), `IDLE_BASE - key index` when the key went idle and nothing else happened, or
    /// [`status::CLOSED`]. `now` may be -1, as for `hold`.
    pub fn release(&mut self, req: f64, now: f64) -> f64 {
        self.reclaim();
        let Some(req) = id_of(req) else { return 0.0 };
        {
            let mut inner = self.inner.borrow_mut();
            let engine = &mut inner.engine;
            let released = if now < 0.0 {
                engine.release_untimed(req)
            } else {
                engine.release(req, now as u64).map(Some)
            };
            match released {
                Ok(None) => return status::NEED_TIME,
                Err(error) => {
                    inner.last_error = error.to_string();
                    return status_of(&error);
                }
                Ok(_) if engine.pending_events() == 1 => {
                    if let Some(&Event::KeyIdle { key }) = engine.peek_event() {
                        engine.poll_event();
                        return status::IDLE_BASE - f64::from(key.index());
                    }
                }
                Ok(_) => {}
            }
        }
        self.after(Ok(()))
    }

    /// Ends a request the host no longer wants (see `Engine::cancel`). Answers as `release`.
    pub fn cancel(&mut self, req: f64, now: f64) -> f64 {
        self.reclaim();
        let Some(req) = id_of(req) else { return 0.0 };
        let answer = self.inner.borrow_mut().engine.cancel(req, now as u64);
        self.after(answer.map(|_: Cancelled| ()))
    }

    /// Acts on every deadline up to `now`. Answers as `release`.
    pub fn advance(&mut self, now: f64) -> f64 {
        self.reclaim();
        self.inner.borrow_mut().engine.advance(now as u64);
        self.after(Ok(()))
    }

    /// When `advance` next has something to do, or -1.
    #[wasm_bindgen(js_name = nextDeadline)]
    pub fn next_deadline(&self) -> f64 {
        self.inner
            .borrow_mut()
            .engine
            .next_deadline()
            .map_or(-1.0, |at| at as f64)
    }

    /// The host's answer to a `persist(key, value, ceiling)`: storage kept `ceiling` (`ok`) or failed
    /// to. Grants that waited for it go ahead, or fail. Answers as `release`.
    #[wasm_bindgen(js_name = ceilingWritten)]
    pub fn ceiling_written(&mut self, ceiling: f64, ok: bool, now: f64) -> f64 {
        self.reclaim();
        {
            let engine = &mut self.inner.borrow_mut().engine;
            let (ceiling, now) = (ceiling as u64, now as u64);
            if ok {
                engine.persisted(ceiling, now);
            } else {
                engine.persist_failed(ceiling, now);
            }
        }
        self.after(Ok(()))
    }

    /// Writes more of the pending events into the buffer; answers how many.
    pub fn drain(&mut self) -> f64 {
        self.reclaim();
        self.write_events()
    }

    /// Closes the engine; every request ends with an `ENDED` event. Answers as `release`.
    pub fn close(&mut self) -> f64 {
        self.reclaim();
        self.inner.borrow_mut().engine.close();
        self.write_events()
    }

    /// Lends the host a block of up to `max` fences for the keys it grants itself (see
    /// [`buffer::FENCE_NEXT`] and `Engine::lend_fences`), after giving back the block lent before, if
    /// any. Answers how many fences it lent, with the first at `buffer::FENCE_NEXT` and the end
    /// (exclusive) at `buffer::FENCE_END`; or 0, both slots 0, when none can be lent (no fence is
    /// covered now, or the store is closed): the host then holds through `hold`. May start a fence
    /// write, as a grant may.
    pub fn lend(&mut self, max: f64) -> f64 {
        self.reclaim();
        // NaN, negative and fractional counts ask for what they round down to, 0 at least.
        let max = if max >= 1.0 { max as u64 } else { 0 };
        let lent = self.inner.borrow_mut().engine.lend_fences(max);
        self.persist_if_asked();
        let Some((first, end)) = lent else {
            self.buf[buffer::FENCE_NEXT] = 0.0;
            self.buf[buffer::FENCE_END] = 0.0;
            return 0.0;
        };
        self.buf[buffer::FENCE_NEXT] = first as f64;
        self.buf[buffer::FENCE_END] = end as f64;
        self.lent = true;
        (end - first) as f64
    }

    /// Hands the engine a key of resource `res` the host granted itself, with `fence` (from a lent
    /// block) at its time `since` (ms), because another request wants it now (see `Engine::adopt`).
    /// Gives back the lent block first, so `fence` must be below the `buffer::FENCE_NEXT` the host
    /// wrote. Answers as `hold` does for a grant: the fence (> 0), with the ids of the adopted
    /// request and of the key in the buffer (`REQ`, `KEY`), or a negative [`status`] on error (the
    /// message from `lastError()`). Writes no event (`HOLD_EVENTS` is 0).
    pub fn adopt(&mut self, res: f64, fence: f64, since: f64) -> f64 {
        self.reclaim();
        // A fence that is not a whole number from 1 is refused as one never handed out.
        let fence = if fence >= 1.0 && fence.fract() == 0.0 {
            fence as u64
        } else {
            0
        };
        let since = if since > 0.0 { since as u64 } else { 0 };
        let answer = self
            .inner
            .borrow_mut()
            .engine
            .adopt(resource_of(res), fence, since);
        let answer = self.hold_answer(answer);
        self.buf[buffer::HOLD_EVENTS] = 0.0;
        answer
    }

    /// Hands the engine another holder of the key `adopt` just took over (a semaphore's key the host
    /// granted itself to several holders; see `Engine::adopt_into`): `key` is the id `adopt` wrote
    /// in the buffer. Answers as `adopt` does.
    #[wasm_bindgen(js_name = adoptInto)]
    pub fn adopt_into(&mut self, key: f64, fence: f64, since: f64) -> f64 {
        self.reclaim();
        let fence = if fence >= 1.0 && fence.fract() == 0.0 {
            fence as u64
        } else {
            0
        };
        let since = if since > 0.0 { since as u64 } else { 0 };
        let answer = match id_of(key) {
            Some(key) => self.inner.borrow_mut().engine.adopt_into(key, fence, since),
            None => Err(Error::Invalid(format!("key id {key} to adopt into"))),
        };
        let answer = self.hold_answer(answer);
        self.buf[buffer::HOLD_EVENTS] = 0.0;
        answer
    }

    /// Whether a fence write is under way (see `Engine::persist_pending`).
    pub fn writing(&self) -> bool {
        self.inner.borrow().engine.persist_pending()
    }

    /// The message of the last error a hot-path call answered with a status.
    #[wasm_bindgen(js_name = lastError)]
    pub fn last_error(&self) -> String {
        self.inner.borrow().last_error.clone()
    }

    /// Every busy key: `[{ resource, key, holders: [{ req, fence, heldMs }], waiting }]`.
    pub fn inspect(&self, now: f64) -> Result<JsValue, JsValue> {
        let inner = self.inner.borrow();
        let views = inner
            .engine
            .inspect(now as u64)
            .map_err(|e| engine_error(&e))?;
        let views: Vec<KeySnapshot> = views
            .into_iter()
            .map(|v| KeySnapshot {
                resource: v.resource.to_u64() as f64,
                key: v.key.to_u64() as f64,
                holders: v
                    .holders
                    .into_iter()
                    .map(|h| HolderSnapshot {
                        req: h.req.to_u64() as f64,
                        fence: h.fence as f64,
                        held_ms: h.held_ms as f64,
                    })
                    .collect(),
                waiting: v.waiting,
            })
            .collect();
        serde_wasm_bindgen::to_value(&views).map_err(|e| js_error("invalid", &e.to_string(), None))
    }

    /// The last fence handed out (0 before the first), the host's own grants from a lent block
    /// included (read from `buffer::FENCE_NEXT`, which the block is not given back for).
    #[wasm_bindgen(js_name = lastFence)]
    pub fn last_fence(&self) -> f64 {
        if self.lent {
            return self.buf[buffer::FENCE_NEXT] - 1.0;
        }
        self.inner.borrow().engine.last_fence() as f64
    }

    /// Counts of what the engine keeps: `[keys, requests, key places, request places, timers,
    /// resources]`.
    pub fn footprint(&self) -> Vec<f64> {
        let f = self.inner.borrow().engine.footprint();
        [
            f.keys,
            f.requests,
            f.key_places,
            f.request_places,
            f.timers,
            f.resources,
        ]
        .iter()
        .map(|&n| n as f64)
        .collect()
    }

    /// Panics, so that tests can see a wasm trap answer every waiter. Never called otherwise.
    #[wasm_bindgen(js_name = trapForTest)]
    pub fn trap_for_test(&self) {
        panic!("trap asked for by a test");
    }
}

impl Core {
    /// Gives back the block of fences lent to the host, if one is: the engine goes on from the first
    /// fence the host did not use (`buffer::FENCE_NEXT`). Every `&mut self` method calls it first,
    /// before the engine can grant (an engine grant while fences are lent would break their order);
    /// when nothing is lent it costs one test of a bool.
    ///
    /// # Panics
    /// (A trap) when the host wrote a `FENCE_NEXT` outside the block: fences would repeat.
    #[inline]
    fn reclaim(&mut self) {
        if self.lent {
            self.give_back();
        }
    }

    #[cold]
    fn give_back(&mut self) {
        let unused = self.buf[buffer::FENCE_NEXT];
        assert!(
            unused >= 1.0 && unused.fract() == 0.0,
            "the host's next lent fence {unused} is not a fence"
        );
        self.inner.borrow_mut().engine.reclaim_fences(unused as u64);
        self.buf[buffer::FENCE_NEXT] = 0.0;
        self.buf[buffer::FENCE_END] = 0.0;
        self.lent = false;
    }

    /// Writes a hold's ids into the buffer and answers its number (see `hold`).
    fn hold_answer(&mut self, answer: Result<Hold, Error>) -> f64 {
        match answer {
            Ok(Hold::Granted { req, key, fence }) => {
                self.buf[buffer::REQ] = req.to_u64() as f64;
                self.buf[buffer::KEY] = key.to_u64() as f64;
                fence as f64
            }
            Ok(Hold::Queued { req, key }) => {
                self.buf[buffer::REQ] = req.to_u64() as f64;
                self.buf[buffer::KEY] = key.to_u64() as f64;
                0.0
            }
            Ok(Hold::Busy { key }) | Ok(Hold::Resumed { key, .. }) => {
                self.buf[buffer::KEY] = key.to_u64() as f64;
                status::BUSY
            }
            Err(error) => {
                self.inner.borrow_mut().last_error = error.to_string();
                status_of(&error)
            }
        }
    }

    fn after(&mut self, answer: Result<(), Error>) -> f64 {
        if let Err(error) = answer {
            self.inner.borrow_mut().last_error = error.to_string();
            return status_of(&error);
        }
        self.persist_if_asked();
        self.write_events()
    }

    /// Copies up to `EVENT_SLOTS` pending events into the buffer; answers how many.
    fn write_events(&mut self) -> f64 {
        let mut inner = self.inner.borrow_mut();
        let mut n = 0;
        while n < buffer::EVENT_SLOTS {
            let Some(event) = inner.engine.poll_event() else {
                break;
            };
            let (kind, id, a) = match event {
                Event::Granted { req, fence } => (event::GRANTED, req, fence as f64),
                Event::TimedOut { req } => (event::TIMED_OUT, req, 0.0),
                Event::Revoked { req } => (event::REVOKED, req, 0.0),
                Event::Failed { req, why } => (
                    event::FAILED,
                    req,
                    if why == Failure::Storage { 1.0 } else { 2.0 },
                ),
                Event::Ended { req, held } => (event::ENDED, req, if held { 1.0 } else { 0.0 }),
                Event::Expired { req } => (event::EXPIRED, req, 0.0),
                Event::KeyIdle { key } => (event::KEY_IDLE, key, 0.0),
                Event::Claimed { req, remaining } => (event::CLAIMED, req, remaining as f64),
                Event::NotClaimed { req, remaining } => (event::NOT_CLAIMED, req, remaining as f64),
                Event::Durable { req } => (event::DURABLE, req, 0.0),
                Event::PoolFailed { req, .. } => (event::POOL_FAILED, req, 1.0),
                Event::PoolEnded { req } => (event::POOL_ENDED, req, 0.0),
                Event::NoClaim { req } => (event::NO_CLAIM, req, 0.0),
            };
            let at = buffer::EVENTS + n * buffer::EVENT_SIZE;
            self.buf[at] = kind;
            self.buf[at + 1] = id.to_u64() as f64;
            self.buf[at + 2] = a;
            n += 1;
        }
        n as f64
    }

    /// Hands the host the fence write the engine asks for, if it asks; its outcome comes back
    /// through `ceilingWritten`.
    fn persist_if_asked(&self) {
        let (persist, ceiling) = {
            let mut inner = self.inner.borrow_mut();
            let Some(ceiling) = inner.engine.poll_persist() else {
                return;
            };
            (inner.persist.clone(), ceiling)
        };
        // No borrow lives across the call. What the host's `persist` throws is its own (it is
        // told never to throw); the write is then never answered, as if storage hung.
        let _ = persist.call3(
            &JsValue::UNDEFINED,
            &FENCE_KEY.into(),
            &fence::encode_ceiling(ceiling).into(),
            &(ceiling as f64).into(),
        );
    }
}

#[derive(Serialize)]
struct HolderSnapshot {
    req: f64,
    fence: f64,
    #[serde(rename = "heldMs")]
    held_ms: f64,
}

#[derive(Serialize)]
struct KeySnapshot {
    resource: f64,
    key: f64,
    holders: Vec<HolderSnapshot>,
    waiting: u32,
}

/// Checks a `ttl` in ms (1 s to 1 h); throws an `invalid` error naming it as given.
#[wasm_bindgen(js_name = checkTtl)]
pub fn check_ttl(ms: f64) -> Result<(), JsValue> {
    bounds::check_ttl(ms as u64)
        .map_err(|_| engine_error(&bounds::out_of_range("ttl", &js_number(ms), "1s to 1h")))
}

/// Checks a `maxHold` in ms (more than 0, at most 30 days); throws an `invalid` error naming it as
/// given.
#[wasm_bindgen(js_name = checkMaxHold)]
pub fn check_max_hold(ms: f64) -> Result<(), JsValue> {
    bounds::check_max_hold(ms as u64).map_err(|_| {
        engine_error(&bounds::out_of_range(
            "maxHold",
            &js_number(ms),
            "1ms to 30 days",
        ))
    })
}

/// A number as JavaScript writes it, near enough for a message: `0.5`, `1500`, `1e+300` (a value
/// past u64, or a fraction of a millisecond, must not be named by what it became in conversion).
fn js_number(ms: f64) -> String {
    if ms.is_finite() && ms.abs() >= 1e21 {
        format!("{ms:e}").replace('e', "e+")
    } else {
        format!("{ms}")
    }
}

/// Checks a name; throws an `invalid` error naming it.
#[wasm_bindgen(js_name = checkName)]
pub fn check_name(name: &str) -> Result<(), JsValue> {
    bounds::check_name(name).map_err(|e| engine_error(&e))
}

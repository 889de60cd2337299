//! The wire codec for JavaScript, flat: frames in and out as `Uint8Array`s, every field a number or a
//! string passed as an argument, so that no JavaScript object is built or read property by property in
//! wasm (that cost several µs a frame; see `npm/src/remote/wire.ts`, which builds the message objects in
//! JavaScript from what this module answers).
//!
//! - A decode takes a WebSocket message — one frame, or a batch of them (revision 3) — and answers
//!   the strings of all its frames joined into one (`text`). It writes into the scratch table
//!   ([`slot`]), which JavaScript reads through a `Float64Array` at [`wire_slots`], the number of
//!   frames, then per frame its type, its correlation id, its numbers and where `text` is cut (in UTF-16
//!   units from the start of `text`, as JavaScript slices): one call per message, however many frames
//!   it carries. The layout of each message is written beside [`decode_client`] and [`decode_server`].
//! - An encode takes the message's fields as arguments, one function per message type.
//!
//! Ids (request and lease) are 32 hex digits in JavaScript, so that it can key maps by them; a `wait`
//! of -1 is without limit; numbers are milliseconds, fences exact below 2^53.

use std::cell::UnsafeCell;

use holdfast_engine::wire::{
    self, ClientMessage, ErrorCode, InspectEntry, PoolEntry, PoolOp, ServerMessage,
};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::hex::{parse_hex, push_hex, to_hex};
use crate::js_error;

/// The scratch table a decode writes (indices of `f64`s): [`COUNT`](slot::COUNT), then [`LEN`](slot::LEN)
/// slots per frame, the first frame's at [`FIRST`](slot::FIRST), the next `LEN` further on.
pub mod slot {
    /// How many frames the message carried (1, or a batch's count).
    pub const COUNT: usize = 0;
    /// Where the first frame's slots begin.
    pub const FIRST: usize = 1;
    /// The message type: see [`super::kind`] (offsets within a frame's slots from here on).
    pub const TYPE: usize = 0;
    /// The correlation id.
    pub const ID: usize = 1;
    /// The message's numbers, in the order its layout gives.
    pub const A: usize = 2;
    pub const B: usize = 3;
    pub const C: usize = 4;
    pub const D: usize = 5;
    pub const E: usize = 6;
    /// Where `text` is cut between the frame's strings (UTF-16 units from the start of `text`).
    pub const CUT1: usize = 7;
    pub const CUT2: usize = 8;
    /// Where the frame's strings begin and end in `text`.
    pub const START: usize = 9;
    pub const END: usize = 10;
    pub const LEN: usize = 11;
}

/// Message types as the scratch slot `TYPE` gives them (the same numbers in `npm/src/remote/wire.ts`).
pub mod kind {
    pub const HELLO: f64 = 1.0;
    pub const HOLD: f64 = 2.0;
    pub const RENEW: f64 = 3.0;
    pub const RELEASE: f64 = 4.0;
    pub const CANCEL: f64 = 5.0;
    pub const INSPECT: f64 = 6.0;
    pub const GOODBYE: f64 = 7.0;
    pub const INSPECT_PAGE: f64 = 8.0;
    pub const CLAIM: f64 = 9.0;
    pub const POOL: f64 = 10.0;
    pub const INSPECT_POOLS: f64 = 20.0;
    pub const PING: f64 = 24.0;
    pub const INSPECT_POOLS_PAGE: f64 = 25.0;
    pub const WELCOME: f64 = 11.0;
    pub const GRANTED: f64 = 12.0;
    pub const BUSY: f64 = 13.0;
    pub const RENEWED: f64 = 14.0;
    pub const DONE: f64 = 15.0;
    pub const ERROR: f64 = 16.0;
    pub const INSPECTED: f64 = 17.0;
    pub const LOST: f64 = 18.0;
    pub const INSPECTED_PAGE: f64 = 19.0;
    pub const CLAIMED: f64 = 21.0;
    pub const COUNT: f64 = 22.0;
    pub const POOLS: f64 = 23.0;
    pub const POOLS_PAGE: f64 = 26.0;
}

/// The scratch table. wasm here is single-threaded, and JavaScript reads it right after the call
/// that wrote it, before any other call into this module. It grows to the largest batch decoded
/// (a batch of the server's 64 KiB holds at most 8,192 frames), so that its address can change:
/// JavaScript asks [`wire_slots`] after each decode.
struct Scratch(UnsafeCell<Vec<f64>>);

// SAFETY: wasm32 without threads; see the type's doc.
unsafe impl Sync for Scratch {}

static SCRATCH: Scratch = Scratch(UnsafeCell::new(Vec::new()));

/// The frames of one message as a decode lays them out: their slots, and their strings in one `text`.
struct Flat {
    text: String,
    /// `text`'s length in UTF-16 units.
    units: usize,
    /// The slots of the frame being written (its index in the table), and of the next.
    at: usize,
    next: usize,
}

impl Flat {
    /// Starts a table for `count` frames.
    fn new(count: usize) -> Flat {
        // SAFETY: see `Scratch`; no reference to the table outlives a call of this module.
        let table = unsafe { &mut *SCRATCH.0.get() };
        table.clear();
        table.resize(slot::FIRST + count * slot::LEN, 0.0);
        table[slot::COUNT] = count as f64;
        Flat {
            text: String::new(),
            units: 0,
            at: slot::FIRST,
            next: slot::FIRST,
        }
    }

    fn table(&mut self) -> &mut [f64] {
        // SAFETY: as in `new`.
        let table = unsafe { &mut *SCRATCH.0.get() };
        &mut table[self.at..self.at + slot::LEN]
    }

    /// Begins the next frame: its type, id and numbers.
    fn put(&mut self, kind: f64, id: u32, numbers: &[f64]) {
        self.at = self.next;
        self.next += slot::LEN;
        let start = self.units as f64;
        let frame = self.table();
        frame[slot::TYPE] = kind;
        frame[slot::ID] = id as f64;
        frame[slot::A..slot::A + numbers.len()].copy_from_slice(numbers);
        frame[slot::START] = start;
        frame[slot::END] = start;
    }

    /// Appends one of the frame's strings to `text`; answers where it ends (a cut).
    fn push(&mut self, s: &str) -> usize {
        self.text.push_str(s);
        self.units += utf16_len(s);
        self.table()[slot::END] = self.units as f64;
        self.units
    }

    /// Appends an id, as 32 hex digits.
    fn push_id(&mut self, id: u128) -> usize {
        push_hex(&mut self.text, id);
        self.units += 32;
        self.table()[slot::END] = self.units as f64;
        self.units
    }

    /// Where `text` is cut between the frame's strings.
    fn cuts(&mut self, first: usize, second: usize) {
        let frame = self.table();
        frame[slot::CUT1] = first as f64;
        frame[slot::CUT2] = second as f64;
    }
}

/// Where the scratch table starts in wasm memory (a byte offset), after the last decode.
#[wasm_bindgen(js_name = wireSlots)]
pub fn wire_slots() -> usize {
    // SAFETY: see `Scratch`.
    unsafe { (*SCRATCH.0.get()).as_ptr() as usize }
}

/// The revision of the protocol this build speaks (`docs/protocol.md` # Revisions).
#[wasm_bindgen(js_name = wireRevision)]
pub fn wire_revision() -> u8 {
    wire::REVISION
}

/// The wasm memory, for the view of the scratch slots.
#[wasm_bindgen(js_name = wireMemory)]
pub fn wire_memory() -> JsValue {
    wasm_bindgen::memory()
}

/// The length of `s` in UTF-16 units, as JavaScript counts it.
fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.encode_utf16().count()
    }
}

/// An id as 32 hex digits.
pub fn hex(id: u128) -> String {
    to_hex(id)
}

/// 32 hex digits as an id, or an `invalid` error naming `what`.
pub fn unhex(text: &str, what: &str) -> Result<u128, JsValue> {
    if let Some(id) = parse_hex(text.as_bytes()) {
        return Ok(id);
    }
    Err(js_error(
        "invalid",
        &format!("{what} must be 32 hex digits, not {text:?}"),
        None,
    ))
}

fn protocol_error(e: wire::WireError) -> JsValue {
    js_error("protocol", &e.to_string(), None)
}

fn code_of(text: &str) -> Result<ErrorCode, JsValue> {
    ErrorCode::parse(text)
        .ok_or_else(|| js_error("invalid", &format!("unknown error code {text:?}"), None))
}

/// A count of milliseconds from JavaScript as the wire's integer (negative and NaN are 0; the
/// callers checked their ranges).
fn ms(value: f64) -> u64 {
    value as u64
}

// ---------------------------------------------------------------- client → server

/// Decodes a message a client sent: one frame, or a batch of them (revision 3). Throws a `protocol`
/// error for a bad message (a bad frame anywhere in a batch refuses all of it). Answers `text`; each
/// frame's slots hold, by type (cuts and strings as positions in `text`):
/// - hello: A revision (2 for the old hello); strings token, client; CUT1 = end of token;
/// - hold: A semaphore (0/1), B limit, C ttl, D maxHold (0 none), E wait (-1 none);
///   strings name, key, request; CUT1 = end of name, CUT2 = end of key;
/// - renew, release: string lease; cancel: string request;
/// - inspect, goodbye, inspect pools, ping: no string;
/// - inspect page: A semaphore (0/1); strings name, key; CUT1 = end of name;
/// - claim: A capacity, B n, C wait (-1 none), D ttl (0 none); strings pool, claim; CUT1 = end of
///   pool (revision 4);
/// - pool: A op (see `PoolOp`), B capacity, C value; strings pool, claim; CUT1 = end of pool
///   (revision 4);
/// - inspect pools page: string after (revision 8).
#[wasm_bindgen(js_name = decodeClient)]
pub fn decode_client(bytes: &[u8]) -> Result<String, JsValue> {
    let frames = wire::decode_client_batch(bytes).map_err(protocol_error)?;
    let mut flat = Flat::new(frames.len());
    for (id, message) in frames {
        flat_client(&mut flat, id, message);
    }
    Ok(flat.text)
}

fn flat_client(flat: &mut Flat, id: u32, message: ClientMessage<'_>) {
    match message {
        ClientMessage::Hello {
            revision,
            token,
            client,
        } => {
            flat.put(kind::HELLO, id, &[revision as f64]);
            let token_end = flat.push(token);
            flat.push(client);
            flat.cuts(token_end, 0);
        }
        ClientMessage::Hold {
            semaphore,
            limit,
            name,
            key,
            ttl,
            max_hold,
            wait,
            request,
        } => {
            let wait = if wait == u64::MAX { -1.0 } else { wait as f64 };
            flat.put(
                kind::HOLD,
                id,
                &[
                    semaphore as u8 as f64,
                    limit as f64,
                    ttl as f64,
                    max_hold as f64,
                    wait,
                ],
            );
            let name_end = flat.push(name);
            let key_end = flat.push(key);
            flat.push_id(request);
            flat.cuts(name_end, key_end);
        }
        ClientMessage::Renew { lease } => {
            flat.put(kind::RENEW, id, &[]);
            flat.push_id(lease);
        }
        ClientMessage::Release { lease } => {
            flat.put(kind::RELEASE, id, &[]);
            flat.push_id(lease);
        }
        ClientMessage::Cancel { request } => {
            flat.put(kind::CANCEL, id, &[]);
            flat.push_id(request);
        }
        ClientMessage::Inspect => flat.put(kind::INSPECT, id, &[]),
        ClientMessage::Goodbye => flat.put(kind::GOODBYE, id, &[]),
        ClientMessage::InspectPage {
            semaphore,
            name,
            key,
        } => {
            flat.put(kind::INSPECT_PAGE, id, &[semaphore as u8 as f64]);
            let name_end = flat.push(name);
            flat.push(key);
            flat.cuts(name_end, 0);
        }
        ClientMessage::Claim {
            pool,
            capacity,
            n,
            claim,
            wait,
            ttl,
        } => {
            let wait = if wait == u64::MAX { -1.0 } else { wait as f64 };
            flat.put(
                kind::CLAIM,
                id,
                &[capacity as f64, n as f64, wait, ttl as f64],
            );
            let pool_end = flat.push(pool);
            flat.push(claim);
            flat.cuts(pool_end, 0);
        }
        ClientMessage::Pool {
            op,
            pool,
            capacity,
            claim,
            value,
        } => {
            flat.put(
                kind::POOL,
                id,
                &[op as u8 as f64, capacity as f64, value as f64],
            );
            let pool_end = flat.push(pool);
            flat.push(claim);
            flat.cuts(pool_end, 0);
        }
        ClientMessage::InspectPools => flat.put(kind::INSPECT_POOLS, id, &[]),
        ClientMessage::Ping => flat.put(kind::PING, id, &[]),
        ClientMessage::InspectPoolsPage { after } => {
            flat.put(kind::INSPECT_POOLS_PAGE, id, &[]);
            flat.push(after);
        }
    }
}

/// The `hello` of `revision`: the old one (type 0x01) below revision 3, else the one that says it.
#[wasm_bindgen(js_name = encodeHello)]
pub fn encode_hello(id: u32, revision: u8, token: &str, client: &str) -> Vec<u8> {
    wire::encode_client(
        id,
        &ClientMessage::Hello {
            revision,
            token,
            client,
        },
    )
}

/// `limit` 0 for a lock; `max_hold` 0 for none; `wait` -1 (or any negative) for no limit.
#[wasm_bindgen(js_name = encodeHold)]
#[allow(clippy::too_many_arguments)]
pub fn encode_hold(
    id: u32,
    semaphore: bool,
    limit: u32,
    name: &str,
    key: &str,
    ttl: u32,
    max_hold: f64,
    wait: f64,
    request: &str,
) -> Result<Vec<u8>, JsValue> {
    let message = ClientMessage::Hold {
        semaphore,
        limit,
        name,
        key,
        ttl,
        max_hold: ms(max_hold),
        wait: if wait < 0.0 { u64::MAX } else { ms(wait) },
        request: unhex(request, "request")?,
    };
    Ok(wire::encode_client(id, &message))
}

#[wasm_bindgen(js_name = encodeRenew)]
pub fn encode_renew(id: u32, lease: &str) -> Result<Vec<u8>, JsValue> {
    let lease = unhex(lease, "lease")?;
    Ok(wire::encode_client(id, &ClientMessage::Renew { lease }))
}

#[wasm_bindgen(js_name = encodeRelease)]
pub fn encode_release(id: u32, lease: &str) -> Result<Vec<u8>, JsValue> {
    let lease = unhex(lease, "lease")?;
    Ok(wire::encode_client(id, &ClientMessage::Release { lease }))
}

#[wasm_bindgen(js_name = encodeCancel)]
pub fn encode_cancel(id: u32, request: &str) -> Result<Vec<u8>, JsValue> {
    let request = unhex(request, "request")?;
    Ok(wire::encode_client(id, &ClientMessage::Cancel { request }))
}

#[wasm_bindgen(js_name = encodeInspect)]
pub fn encode_inspect(id: u32) -> Vec<u8> {
    wire::encode_client(id, &ClientMessage::Inspect)
}

/// The page after the key named (`name` empty: the first page).
#[wasm_bindgen(js_name = encodeInspectPage)]
pub fn encode_inspect_page(id: u32, semaphore: bool, name: &str, key: &str) -> Vec<u8> {
    wire::encode_client(
        id,
        &ClientMessage::InspectPage {
            semaphore,
            name,
            key,
        },
    )
}

#[wasm_bindgen(js_name = encodeGoodbye)]
pub fn encode_goodbye(id: u32) -> Vec<u8> {
    wire::encode_client(id, &ClientMessage::Goodbye)
}

/// `wait` -1 (or any negative) for no limit; `ttl` 0 for none. (Revision 4.)
#[wasm_bindgen(js_name = encodeClaim)]
#[allow(clippy::too_many_arguments)]
pub fn encode_claim(
    id: u32,
    pool: &str,
    capacity: f64,
    n: f64,
    claim: &str,
    wait: f64,
    ttl: f64,
) -> Vec<u8> {
    let message = ClientMessage::Claim {
        pool,
        capacity: ms(capacity),
        n: ms(n),
        claim,
        wait: if wait < 0.0 { u64::MAX } else { ms(wait) },
        ttl: ms(ttl),
    };
    wire::encode_client(id, &message)
}

/// `op`: 1 release, 2 confirm, 3 remaining, 4 resize, 5 cancel; `capacity` 0: the pool as it is.
/// (Revision 4.)
#[wasm_bindgen(js_name = encodePool)]
pub fn encode_pool(
    id: u32,
    op: u8,
    pool: &str,
    capacity: f64,
    claim: &str,
    value: f64,
) -> Result<Vec<u8>, JsValue> {
    let op = PoolOp::from_u8(op)
        .ok_or_else(|| js_error("invalid", &format!("unknown pool op {op}"), None))?;
    let message = ClientMessage::Pool {
        op,
        pool,
        capacity: ms(capacity),
        claim,
        value: ms(value),
    };
    Ok(wire::encode_client(id, &message))
}

/// (Revision 4.)
#[wasm_bindgen(js_name = encodeInspectPools)]
pub fn encode_inspect_pools(id: u32) -> Vec<u8> {
    wire::encode_client(id, &ClientMessage::InspectPools)
}

/// The pools after the one named `after` (empty: from the first). (Revision 8.)
#[wasm_bindgen(js_name = encodeInspectPoolsPage)]
pub fn encode_inspect_pools_page(id: u32, after: &str) -> Vec<u8> {
    wire::encode_client(id, &ClientMessage::InspectPoolsPage { after })
}

/// (Revision 5.)
#[wasm_bindgen(js_name = encodePing)]
pub fn encode_ping(id: u32) -> Vec<u8> {
    wire::encode_client(id, &ClientMessage::Ping)
}

// ---------------------------------------------------------------- server → client

/// One busy key of an inspection, as JavaScript sees it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsEntry {
    kind: String,
    name: String,
    key: String,
    holders: Vec<JsHolder>,
    waiting: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsHolder {
    fence: f64,
    held_ms: f64,
}

/// Decodes a message a server sent: one frame, or a batch of them (revision 3). Throws a `protocol`
/// error for a bad message. Answers `text`, or, when a frame is an `inspected`, `inspected page`,
/// `pools` or `pools page`, an array: `text`, then the entries of each such frame in order, as arrays of `{ kind,
/// name, key, holders: [{ fence, heldMs }], waiting }` (of a pools frame: `{ name, capacity,
/// remaining, claims, waiting }`). Each frame's slots hold, by type:
/// - welcome: A maxFrame, B connectionLimit, C revision (2 for the old welcome);
/// - granted: A fence, B ttl, C revokeIn; strings request, lease (32 hex digits each);
/// - busy, done: nothing;
/// - renewed: A ttl, B revokeIn;
/// - error: strings code, message; CUT1 = end of code;
/// - lost: strings code, lease; CUT1 = end of code;
/// - inspected: nothing (its entries are in the array); inspected page: A more (0/1);
/// - claimed: A claimed (0/1), B remaining; count: A value; pools: nothing (revision 4);
/// - pools page: A more (0/1) (revision 8).
#[wasm_bindgen(js_name = decodeServer)]
pub fn decode_server(bytes: &[u8]) -> Result<JsValue, JsValue> {
    let frames = wire::decode_server_batch(bytes).map_err(protocol_error)?;
    let mut flat = Flat::new(frames.len());
    let mut inspections = Vec::new();
    for (id, message) in frames {
        if let Some(entries) = flat_server(&mut flat, id, message) {
            inspections.push(entries);
        }
    }
    if inspections.is_empty() {
        return Ok(JsValue::from_str(&flat.text));
    }
    let answer = js_sys::Array::new();
    answer.push(&JsValue::from_str(&flat.text));
    for entries in inspections {
        answer.push(&match entries {
            Entries::Keys(entries) => entries_to_js(entries)?,
            Entries::Pools(entries) => pools_to_js(entries)?,
        });
    }
    Ok(answer.into())
}

/// The entries a frame carries: busy keys (`inspected`, `inspected page`) or pools (`pools`, `pools page`).
enum Entries {
    Keys(Vec<InspectEntry>),
    Pools(Vec<PoolEntry>),
}

/// Lays out one frame a server sent; answers the entries of an inspection.
fn flat_server(flat: &mut Flat, id: u32, message: ServerMessage) -> Option<Entries> {
    match message {
        ServerMessage::Welcome {
            revision,
            max_frame,
            connection_limit,
        } => flat.put(
            kind::WELCOME,
            id,
            &[max_frame as f64, connection_limit as f64, revision as f64],
        ),
        ServerMessage::Granted {
            request,
            lease,
            fence,
            ttl,
            revoke_in,
        } => {
            flat.put(
                kind::GRANTED,
                id,
                &[fence as f64, ttl as f64, revoke_in as f64],
            );
            flat.push_id(request);
            flat.push_id(lease);
        }
        ServerMessage::Busy => flat.put(kind::BUSY, id, &[]),
        ServerMessage::Renewed { ttl, revoke_in } => {
            flat.put(kind::RENEWED, id, &[ttl as f64, revoke_in as f64])
        }
        ServerMessage::Done => flat.put(kind::DONE, id, &[]),
        ServerMessage::Error { code, message } => {
            flat.put(kind::ERROR, id, &[]);
            let code_end = flat.push(code.as_str());
            flat.push(&message);
            flat.cuts(code_end, 0);
        }
        ServerMessage::Lost { lease, code } => {
            flat.put(kind::LOST, id, &[]);
            let code_end = flat.push(code.as_str());
            flat.push_id(lease);
            flat.cuts(code_end, 0);
        }
        ServerMessage::Inspected { entries } => {
            flat.put(kind::INSPECTED, id, &[]);
            return Some(Entries::Keys(entries));
        }
        ServerMessage::InspectedPage { more, entries } => {
            flat.put(kind::INSPECTED_PAGE, id, &[more as u8 as f64]);
            return Some(Entries::Keys(entries));
        }
        ServerMessage::Claimed { claimed, remaining } => {
            flat.put(kind::CLAIMED, id, &[claimed as u8 as f64, remaining as f64])
        }
        ServerMessage::Count { value } => flat.put(kind::COUNT, id, &[value as f64]),
        ServerMessage::Pools { entries } => {
            flat.put(kind::POOLS, id, &[]);
            return Some(Entries::Pools(entries));
        }
        ServerMessage::PoolsPage { more, entries } => {
            flat.put(kind::POOLS_PAGE, id, &[more as u8 as f64]);
            return Some(Entries::Pools(entries));
        }
    }
    None
}

/// One pool of an inspection of pools, as JavaScript sees it (a store's `inspectPools` answers the
/// same).
#[derive(Serialize, Deserialize)]
pub(crate) struct JsPool {
    pub(crate) name: String,
    pub(crate) capacity: f64,
    pub(crate) remaining: f64,
    pub(crate) claims: u32,
    pub(crate) waiting: u32,
}

/// An inspection's pools as JavaScript objects.
pub(crate) fn pools_to_js(entries: Vec<PoolEntry>) -> Result<JsValue, JsValue> {
    let entries: Vec<JsPool> = entries
        .into_iter()
        .map(|e| JsPool {
            name: e.name,
            capacity: e.capacity as f64,
            remaining: e.remaining as f64,
            claims: e.claims,
            waiting: e.waiting,
        })
        .collect();
    entries
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_error("invalid", &e.to_string(), None))
}

/// An inspection's entries as JavaScript objects.
fn entries_to_js(entries: Vec<InspectEntry>) -> Result<JsValue, JsValue> {
    let entries: Vec<JsEntry> = entries
        .into_iter()
        .map(|e| JsEntry {
            kind: if e.semaphore { "semaphore" } else { "lock" }.into(),
            name: e.name,
            key: e.key,
            holders: e
                .holders
                .into_iter()
                .map(|(f, h)| JsHolder {
                    fence: f as f64,
                    held_ms: h as f64,
                })
                .collect(),
            waiting: e.waiting,
        })
        .collect();
    entries
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_error("invalid", &e.to_string(), None))
}

/// JavaScript's entries (as `decodeServer` answers them) for the codec.
fn entries_from_js(entries: JsValue) -> Result<Vec<InspectEntry>, JsValue> {
    let entries: Vec<JsEntry> = serde_wasm_bindgen::from_value(entries)
        .map_err(|e| js_error("invalid", &format!("inspected entries: {e}"), None))?;
    Ok(entries
        .into_iter()
        .map(|e| InspectEntry {
            semaphore: e.kind == "semaphore",
            name: e.name,
            key: e.key,
            holders: e
                .holders
                .into_iter()
                .map(|h| (h.fence as u64, h.held_ms as u64))
                .collect(),
            waiting: e.waiting,
        })
        .collect())
}

/// The `welcome` of `revision`: the old one (type 0x81) below revision 3, else the one that says it.
#[wasm_bindgen(js_name = encodeWelcome)]
pub fn encode_welcome(id: u32, revision: u8, max_frame: u32, connection_limit: u32) -> Vec<u8> {
    wire::encode_server(
        id,
        &ServerMessage::Welcome {
            revision,
            max_frame,
            connection_limit,
        },
    )
}

/// `revoke_in` 0 for no maxHold.
#[wasm_bindgen(js_name = encodeGranted)]
pub fn encode_granted(
    id: u32,
    request: &str,
    lease: &str,
    fence: f64,
    ttl: u32,
    revoke_in: f64,
) -> Result<Vec<u8>, JsValue> {
    let message = ServerMessage::Granted {
        request: unhex(request, "request")?,
        lease: unhex(lease, "lease")?,
        fence: fence as u64,
        ttl,
        revoke_in: ms(revoke_in),
    };
    Ok(wire::encode_server(id, &message))
}

#[wasm_bindgen(js_name = encodeBusy)]
pub fn encode_busy(id: u32) -> Vec<u8> {
    wire::encode_server(id, &ServerMessage::Busy)
}

#[wasm_bindgen(js_name = encodeRenewed)]
pub fn encode_renewed(id: u32, ttl: u32, revoke_in: f64) -> Vec<u8> {
    let revoke_in = ms(revoke_in);
    wire::encode_server(id, &ServerMessage::Renewed { ttl, revoke_in })
}

#[wasm_bindgen(js_name = encodeDone)]
pub fn encode_done(id: u32) -> Vec<u8> {
    wire::encode_server(id, &ServerMessage::Done)
}

#[wasm_bindgen(js_name = encodeError)]
pub fn encode_error(id: u32, code: &str, message: &str) -> Result<Vec<u8>, JsValue> {
    let message = ServerMessage::Error {
        code: code_of(code)?,
        message: message.into(),
    };
    Ok(wire::encode_server(id, &message))
}

#[wasm_bindgen(js_name = encodeLost)]
pub fn encode_lost(lease: &str, code: &str) -> Result<Vec<u8>, JsValue> {
    let message = ServerMessage::Lost {
        lease: unhex(lease, "lease")?,
        code: code_of(code)?,
    };
    Ok(wire::encode_server(0, &message))
}

/// `entries` as `decodeServer` answers them.
#[wasm_bindgen(js_name = encodeInspected)]
pub fn encode_inspected(id: u32, entries: JsValue) -> Result<Vec<u8>, JsValue> {
    let entries = entries_from_js(entries)?;
    Ok(wire::encode_server(
        id,
        &ServerMessage::Inspected { entries },
    ))
}

/// A page of an inspection: `entries` as `decodeServer` answers them; `more`: keys follow its last.
#[wasm_bindgen(js_name = encodeInspectedPage)]
pub fn encode_inspected_page(id: u32, more: bool, entries: JsValue) -> Result<Vec<u8>, JsValue> {
    let entries = entries_from_js(entries)?;
    Ok(wire::encode_server(
        id,
        &ServerMessage::InspectedPage { more, entries },
    ))
}

/// The answer to a claim. (Revision 4.)
#[wasm_bindgen(js_name = encodeClaimed)]
pub fn encode_claimed(id: u32, claimed: bool, remaining: f64) -> Vec<u8> {
    let remaining = ms(remaining);
    wire::encode_server(id, &ServerMessage::Claimed { claimed, remaining })
}

/// The answer to a pool's release or remaining. (Revision 4.)
#[wasm_bindgen(js_name = encodeCount)]
pub fn encode_count(id: u32, value: f64) -> Vec<u8> {
    let value = ms(value);
    wire::encode_server(id, &ServerMessage::Count { value })
}

/// The pools: `entries` as `decodeServer` answers them. (Revision 4.)
#[wasm_bindgen(js_name = encodePools)]
pub fn encode_pools(id: u32, entries: JsValue) -> Result<Vec<u8>, JsValue> {
    let entries = pools_from_js(entries)?;
    Ok(wire::encode_server(id, &ServerMessage::Pools { entries }))
}

/// A page of the pools: `entries` as `decodeServer` answers them; `more`: pools follow its last.
/// (Revision 8.)
#[wasm_bindgen(js_name = encodePoolsPage)]
pub fn encode_pools_page(id: u32, more: bool, entries: JsValue) -> Result<Vec<u8>, JsValue> {
    let entries = pools_from_js(entries)?;
    Ok(wire::encode_server(
        id,
        &ServerMessage::PoolsPage { more, entries },
    ))
}

/// JavaScript's pools (as `decodeServer` answers them) for the codec.
fn pools_from_js(entries: JsValue) -> Result<Vec<PoolEntry>, JsValue> {
    let entries: Vec<JsPool> = serde_wasm_bindgen::from_value(entries)
        .map_err(|e| js_error("invalid", &format!("pools: {e}"), None))?;
    Ok(entries
        .into_iter()
        .map(|e| PoolEntry {
            name: e.name,
            capacity: ms(e.capacity),
            remaining: ms(e.remaining),
            claims: e.claims,
            waiting: e.waiting,
        })
        .collect())
}

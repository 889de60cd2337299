//! The wire codec for JavaScript, flat: frames in and out as `Uint8Array`s, every field a number or a
//! string passed as an argument, so that no JavaScript object is built or read property by property in
//! wasm (that cost several µs a frame; see `npm/src/remote/wire.ts`, which builds the message objects in
//! JavaScript from what this module answers).
//!
//! - A decode answers the message's strings joined into one (`text`), and writes its type, its
//!   correlation id, its numbers and where `text` is cut (in UTF-16 units, as JavaScript slices) into
//!   the scratch slots ([`slot`]), which JavaScript reads through a `Float64Array` at [`wire_slots`].
//!   The layout of each message is written beside [`decode_client`] and [`decode_server`].
//! - An encode takes the message's fields as arguments, one function per message type.
//!
//! Ids (request and lease) are 32 hex digits in JavaScript, so that it can key maps by them; a `wait`
//! of -1 is without limit; numbers are milliseconds, fences exact below 2^53.

use std::cell::UnsafeCell;

use holdfast_engine::wire::{self, ClientMessage, ErrorCode, InspectEntry, ServerMessage};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::hex::{parse_hex, push_hex, to_hex};
use crate::js_error;

/// The scratch slots a decode writes (indices of `f64`s).
pub mod slot {
    /// The message type: see [`super::kind`].
    pub const TYPE: usize = 0;
    /// The correlation id.
    pub const ID: usize = 1;
    /// The message's numbers, in the order its layout gives.
    pub const A: usize = 2;
    pub const B: usize = 3;
    pub const C: usize = 4;
    pub const D: usize = 5;
    pub const E: usize = 6;
    /// Where `text` is cut between its strings (UTF-16 units from its start).
    pub const CUT1: usize = 7;
    pub const CUT2: usize = 8;
    pub const LEN: usize = 9;
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
    pub const WELCOME: f64 = 11.0;
    pub const GRANTED: f64 = 12.0;
    pub const BUSY: f64 = 13.0;
    pub const RENEWED: f64 = 14.0;
    pub const DONE: f64 = 15.0;
    pub const ERROR: f64 = 16.0;
    pub const INSPECTED: f64 = 17.0;
    pub const LOST: f64 = 18.0;
    pub const INSPECTED_PAGE: f64 = 19.0;
}

/// The scratch slots. wasm here is single-threaded, and JavaScript reads them right after the call
/// that wrote them, before any other call into this module.
struct Scratch(UnsafeCell<[f64; slot::LEN]>);

// SAFETY: wasm32 without threads; see the type's doc.
unsafe impl Sync for Scratch {}

static SCRATCH: Scratch = Scratch(UnsafeCell::new([0.0; slot::LEN]));

/// Writes a decoded message's type, id and numbers (the rest of the slots are zeroed).
fn put(kind: f64, id: u32, numbers: &[f64]) {
    // SAFETY: see `Scratch`; no reference to the slots outlives this call.
    let slots = unsafe { &mut *SCRATCH.0.get() };
    *slots = [0.0; slot::LEN];
    slots[slot::TYPE] = kind;
    slots[slot::ID] = id as f64;
    slots[slot::A..slot::A + numbers.len()].copy_from_slice(numbers);
}

/// Writes where `text` is cut.
fn cuts(first: usize, second: usize) {
    // SAFETY: as in `put`.
    let slots = unsafe { &mut *SCRATCH.0.get() };
    slots[slot::CUT1] = first as f64;
    slots[slot::CUT2] = second as f64;
}

/// Where the scratch slots start in wasm memory (a byte offset); there are `slot::LEN` of them.
#[wasm_bindgen(js_name = wireSlots)]
pub fn wire_slots() -> usize {
    SCRATCH.0.get() as usize
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

/// Decodes a frame a client sent. Throws a `protocol` error for a bad frame. Answers `text`; the
/// slots hold, by type:
/// - hello: text = token + client, CUT1 = end of token;
/// - hold: A semaphore (0/1), B limit, C ttl, D maxHold (0 none), E wait (-1 none);
///   text = name + key + request, CUT1 = end of name, CUT2 = end of key;
/// - renew, release: text = lease; cancel: text = request;
/// - inspect, goodbye: text = "";
/// - inspect page: A semaphore (0/1); text = name + key, CUT1 = end of name.
#[wasm_bindgen(js_name = decodeClient)]
pub fn decode_client(bytes: &[u8]) -> Result<String, JsValue> {
    let (id, message) = wire::decode_client(bytes).map_err(protocol_error)?;
    Ok(match message {
        ClientMessage::Hello { token, client } => {
            put(kind::HELLO, id, &[]);
            cuts(utf16_len(token), 0);
            [token, client].concat()
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
            put(
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
            let name_end = utf16_len(name);
            cuts(name_end, name_end + utf16_len(key));
            let mut text = String::with_capacity(name.len() + key.len() + 32);
            text.push_str(name);
            text.push_str(key);
            push_hex(&mut text, request);
            text
        }
        ClientMessage::Renew { lease } => {
            put(kind::RENEW, id, &[]);
            hex(lease)
        }
        ClientMessage::Release { lease } => {
            put(kind::RELEASE, id, &[]);
            hex(lease)
        }
        ClientMessage::Cancel { request } => {
            put(kind::CANCEL, id, &[]);
            hex(request)
        }
        ClientMessage::Inspect => {
            put(kind::INSPECT, id, &[]);
            String::new()
        }
        ClientMessage::Goodbye => {
            put(kind::GOODBYE, id, &[]);
            String::new()
        }
        ClientMessage::InspectPage {
            semaphore,
            name,
            key,
        } => {
            put(kind::INSPECT_PAGE, id, &[semaphore as u8 as f64]);
            cuts(utf16_len(name), 0);
            [name, key].concat()
        }
    })
}

#[wasm_bindgen(js_name = encodeHello)]
pub fn encode_hello(id: u32, token: &str, client: &str) -> Vec<u8> {
    wire::encode_client(id, &ClientMessage::Hello { token, client })
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

/// Decodes a frame a server sent. Throws a `protocol` error for a bad frame. Answers `text`, or for
/// `inspected` and `inspected page` the array of entries `{ kind, name, key, holders: [{ fence,
/// heldMs }], waiting }`; the slots hold, by type:
/// - welcome: A maxFrame, B connectionLimit;
/// - granted: A fence, B ttl, C revokeIn; text = request + lease (32 hex digits each);
/// - busy, done: nothing;
/// - renewed: A ttl, B revokeIn;
/// - error: text = code + message, CUT1 = end of code;
/// - lost: text = code + lease, CUT1 = end of code;
/// - inspected page: A more (0/1).
#[wasm_bindgen(js_name = decodeServer)]
pub fn decode_server(bytes: &[u8]) -> Result<JsValue, JsValue> {
    let (id, message) = wire::decode_server(bytes).map_err(protocol_error)?;
    let text = match message {
        ServerMessage::Welcome {
            max_frame,
            connection_limit,
        } => {
            put(
                kind::WELCOME,
                id,
                &[max_frame as f64, connection_limit as f64],
            );
            String::new()
        }
        ServerMessage::Granted {
            request,
            lease,
            fence,
            ttl,
            revoke_in,
        } => {
            put(
                kind::GRANTED,
                id,
                &[fence as f64, ttl as f64, revoke_in as f64],
            );
            let mut text = String::with_capacity(64);
            push_hex(&mut text, request);
            push_hex(&mut text, lease);
            text
        }
        ServerMessage::Busy => {
            put(kind::BUSY, id, &[]);
            String::new()
        }
        ServerMessage::Renewed { ttl, revoke_in } => {
            put(kind::RENEWED, id, &[ttl as f64, revoke_in as f64]);
            String::new()
        }
        ServerMessage::Done => {
            put(kind::DONE, id, &[]);
            String::new()
        }
        ServerMessage::Error { code, message } => {
            put(kind::ERROR, id, &[]);
            cuts(code.as_str().len(), 0);
            [code.as_str(), &message].concat()
        }
        ServerMessage::Lost { lease, code } => {
            put(kind::LOST, id, &[]);
            cuts(code.as_str().len(), 0);
            [code.as_str(), &hex(lease)].concat()
        }
        ServerMessage::Inspected { entries } => {
            put(kind::INSPECTED, id, &[]);
            return entries_to_js(entries);
        }
        ServerMessage::InspectedPage { more, entries } => {
            put(kind::INSPECTED_PAGE, id, &[more as u8 as f64]);
            return entries_to_js(entries);
        }
    };
    Ok(JsValue::from_str(&text))
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

#[wasm_bindgen(js_name = encodeWelcome)]
pub fn encode_welcome(id: u32, max_frame: u32, connection_limit: u32) -> Vec<u8> {
    wire::encode_server(
        id,
        &ServerMessage::Welcome {
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

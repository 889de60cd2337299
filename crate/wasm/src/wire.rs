//! The wire codec for JavaScript: frames in and out as `Uint8Array`s, messages as plain objects with
//! a `type` field. Ids (request and lease) are 32 hex digits, so that JavaScript can key maps by them;
//! a `wait` of `null` is without limit; numbers are milliseconds, fences exact below 2^53.

use holdfast_engine::wire::{self, ClientMessage, ErrorCode, InspectEntry, ServerMessage};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::js_error;

/// An id as 32 hex digits.
pub fn hex(id: u128) -> String {
    format!("{id:032x}")
}

/// 32 hex digits as an id, or an `invalid` error naming `what`.
pub fn unhex(text: &str, what: &str) -> Result<u128, JsValue> {
    if text.len() == 32 {
        if let Ok(id) = u128::from_str_radix(text, 16) {
            return Ok(id);
        }
    }
    Err(js_error(
        "invalid",
        &format!("{what} must be 32 hex digits, not {text:?}"),
        None,
    ))
}

#[derive(Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum JsClient {
    Hello {
        token: String,
        client: String,
    },
    Hold {
        semaphore: bool,
        limit: u32,
        name: String,
        key: String,
        ttl: u32,
        max_hold: f64,
        wait: Option<f64>,
        request: String,
    },
    Renew {
        lease: String,
    },
    Release {
        lease: String,
    },
    Cancel {
        request: String,
    },
    Inspect,
    Goodbye,
}

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

#[derive(Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
enum JsServer {
    Welcome {
        max_frame: u32,
        connection_limit: u32,
    },
    Granted {
        request: String,
        lease: String,
        fence: f64,
        ttl: u32,
        revoke_in: f64,
    },
    Busy,
    Renewed {
        ttl: u32,
        revoke_in: f64,
    },
    Done,
    Error {
        code: String,
        message: String,
    },
    Inspected {
        entries: Vec<JsEntry>,
    },
    Lost {
        lease: String,
        code: String,
    },
}

#[derive(Serialize)]
struct Framed<T> {
    id: u32,
    #[serde(flatten)]
    message: T,
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_error("invalid", &e.to_string(), None))
}

fn from_js<T: for<'de> Deserialize<'de>>(value: JsValue, what: &str) -> Result<T, JsValue> {
    serde_wasm_bindgen::from_value(value)
        .map_err(|e| js_error("invalid", &format!("{what}: {e}"), None))
}

fn protocol_error(e: wire::WireError) -> JsValue {
    js_error("protocol", &e.to_string(), None)
}

fn code_of(text: &str) -> Result<ErrorCode, JsValue> {
    ErrorCode::parse(text)
        .ok_or_else(|| js_error("invalid", &format!("unknown error code {text:?}"), None))
}

/// Decodes a frame a client sent: `{ id, type, ... }`. Throws a `protocol` error for a bad frame.
#[wasm_bindgen(js_name = decodeClient)]
pub fn decode_client(bytes: &[u8]) -> Result<JsValue, JsValue> {
    let (id, message) = wire::decode_client(bytes).map_err(protocol_error)?;
    let message = match message {
        ClientMessage::Hello { token, client } => JsClient::Hello {
            token: token.into(),
            client: client.into(),
        },
        ClientMessage::Hold {
            semaphore,
            limit,
            name,
            key,
            ttl,
            max_hold,
            wait,
            request,
        } => JsClient::Hold {
            semaphore,
            limit,
            name: name.into(),
            key: key.into(),
            ttl,
            max_hold: max_hold as f64,
            wait: (wait != u64::MAX).then_some(wait as f64),
            request: hex(request),
        },
        ClientMessage::Renew { lease } => JsClient::Renew { lease: hex(lease) },
        ClientMessage::Release { lease } => JsClient::Release { lease: hex(lease) },
        ClientMessage::Cancel { request } => JsClient::Cancel {
            request: hex(request),
        },
        ClientMessage::Inspect => JsClient::Inspect,
        ClientMessage::Goodbye => JsClient::Goodbye,
    };
    to_js(&Framed { id, message })
}

/// Encodes a client's message `{ type, ... }` under correlation id `id`.
#[wasm_bindgen(js_name = encodeClient)]
pub fn encode_client(id: u32, message: JsValue) -> Result<Vec<u8>, JsValue> {
    let message: JsClient = from_js(message, "client message")?;
    let (request, lease);
    let message = match &message {
        JsClient::Hello { token, client } => ClientMessage::Hello { token, client },
        JsClient::Hold {
            semaphore,
            limit,
            name,
            key,
            ttl,
            max_hold,
            wait,
            request: r,
        } => {
            request = unhex(r, "request")?;
            ClientMessage::Hold {
                semaphore: *semaphore,
                limit: *limit,
                name,
                key,
                ttl: *ttl,
                max_hold: *max_hold as u64,
                wait: wait.map_or(u64::MAX, |w| w as u64),
                request,
            }
        }
        JsClient::Renew { lease: l } => {
            lease = unhex(l, "lease")?;
            ClientMessage::Renew { lease }
        }
        JsClient::Release { lease: l } => {
            lease = unhex(l, "lease")?;
            ClientMessage::Release { lease }
        }
        JsClient::Cancel { request: r } => {
            request = unhex(r, "request")?;
            ClientMessage::Cancel { request }
        }
        JsClient::Inspect => ClientMessage::Inspect,
        JsClient::Goodbye => ClientMessage::Goodbye,
    };
    Ok(wire::encode_client(id, &message))
}

/// Decodes a frame a server sent: `{ id, type, ... }`. Throws a `protocol` error for a bad frame.
#[wasm_bindgen(js_name = decodeServer)]
pub fn decode_server(bytes: &[u8]) -> Result<JsValue, JsValue> {
    let (id, message) = wire::decode_server(bytes).map_err(protocol_error)?;
    let message = match message {
        ServerMessage::Welcome {
            max_frame,
            connection_limit,
        } => JsServer::Welcome {
            max_frame,
            connection_limit,
        },
        ServerMessage::Granted {
            request,
            lease,
            fence,
            ttl,
            revoke_in,
        } => JsServer::Granted {
            request: hex(request),
            lease: hex(lease),
            fence: fence as f64,
            ttl,
            revoke_in: revoke_in as f64,
        },
        ServerMessage::Busy => JsServer::Busy,
        ServerMessage::Renewed { ttl, revoke_in } => JsServer::Renewed {
            ttl,
            revoke_in: revoke_in as f64,
        },
        ServerMessage::Done => JsServer::Done,
        ServerMessage::Error { code, message } => JsServer::Error {
            code: code.as_str().into(),
            message,
        },
        ServerMessage::Inspected { entries } => JsServer::Inspected {
            entries: entries
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
                .collect(),
        },
        ServerMessage::Lost { lease, code } => JsServer::Lost {
            lease: hex(lease),
            code: code.as_str().into(),
        },
    };
    to_js(&Framed { id, message })
}

/// Encodes a server's message `{ type, ... }` under correlation id `id`.
#[wasm_bindgen(js_name = encodeServer)]
pub fn encode_server(id: u32, message: JsValue) -> Result<Vec<u8>, JsValue> {
    let message: JsServer = from_js(message, "server message")?;
    let message = match message {
        JsServer::Welcome {
            max_frame,
            connection_limit,
        } => ServerMessage::Welcome {
            max_frame,
            connection_limit,
        },
        JsServer::Granted {
            request,
            lease,
            fence,
            ttl,
            revoke_in,
        } => ServerMessage::Granted {
            request: unhex(&request, "request")?,
            lease: unhex(&lease, "lease")?,
            fence: fence as u64,
            ttl,
            revoke_in: revoke_in as u64,
        },
        JsServer::Busy => ServerMessage::Busy,
        JsServer::Renewed { ttl, revoke_in } => ServerMessage::Renewed {
            ttl,
            revoke_in: revoke_in as u64,
        },
        JsServer::Done => ServerMessage::Done,
        JsServer::Error { code, message } => ServerMessage::Error {
            code: code_of(&code)?,
            message,
        },
        JsServer::Inspected { entries } => ServerMessage::Inspected {
            entries: entries
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
                .collect(),
        },
        JsServer::Lost { lease, code } => ServerMessage::Lost {
            lease: unhex(&lease, "lease")?,
            code: code_of(&code)?,
        },
    };
    Ok(wire::encode_server(id, &message))
}

//! The wire protocol between a store's server and its clients: binary, versioned, one frame per
//! WebSocket message (or, from revision 3, a batch of frames in one). `docs/protocol.md` documents it for clients in other languages; this module is
//! its one implementation, used by the server (in wasm) and by the JavaScript client alike.
//!
//! # Decoding untrusted bytes
//! Every length is checked against its bound before anything is allocated or read, a frame must be
//! consumed exactly (no trailing bytes), and strings must be UTF-8. Decoding borrows from the frame
//! (no copies), so that the decoder can be fuzzed cheaply (`crate/engine/fuzz`) and a flood of bad
//! frames costs a server nothing but the time to refuse them.

mod codec;
mod message;

pub use codec::{
    decode_client, decode_client_batch, decode_server, decode_server_batch, encode_batch,
    encode_client, encode_server, WireError,
};
pub use message::{
    ClientMessage, ErrorCode, InspectEntry, PoolEntry, PoolOp, ServerMessage, BATCHES, HANDED_BACK,
    HEADER, HEARTBEAT, MAX_CLAIM_ID, MAX_CLIENT_FRAME, MAX_KEY, MAX_NAME_WIRE, MAX_SERVER_FRAME,
    MAX_TOKEN, NAMED_ASKS, POOLS, POOL_PAGES, REVISION, UNSAID, VERSION,
};

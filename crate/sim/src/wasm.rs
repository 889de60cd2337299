//! The wasm export: a seed's trace hash, computed by the same code as natively, for
//! `tests/sim/compare.cjs` to hold against the native hashes.

use wasm_bindgen::prelude::*;

/// The trace hash of `seed` run for `len` operations, as 16 hex digits, or `fail: ...` with what
/// broke. (A panic traps; the caller sees the trap.)
#[wasm_bindgen(js_name = traceHash)]
pub fn trace_hash(seed: u64, len: u32) -> String {
    match crate::runner::trace_hash(seed, len as usize) {
        Ok(hash) => format!("{hash:016x}"),
        Err(message) => format!("fail: {message}"),
    }
}

//! Any bytes through the client's decoder of server frames: it never panics, never allocates past
//! the frame's bounds, and a frame it accepts encodes back to exactly the same bytes.
#![no_main]

use holdfast_engine::wire::{decode_server, encode_server};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok((id, message)) = decode_server(bytes) {
        assert_eq!(
            encode_server(id, &message),
            bytes,
            "{message:?} does not round-trip"
        );
    }
});

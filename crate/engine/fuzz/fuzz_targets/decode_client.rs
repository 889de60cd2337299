//! Any bytes through the server's decoder of client frames: it never panics, never allocates past
//! the frame's bounds, and a frame it accepts encodes back to exactly the same bytes.
#![no_main]

use holdfast_engine::wire::{decode_client, encode_client};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok((id, message)) = decode_client(bytes) {
        assert_eq!(
            encode_client(id, &message),
            bytes,
            "{message:?} does not round-trip"
        );
    }
});

//! Any bytes through the server's decoder of client frames: it never panics, never allocates past
//! the frame's bounds, and a frame it accepts encodes back to exactly the same bytes.
#![no_main]

use holdfast_engine::wire::{decode_client, decode_client_batch, encode_batch, encode_client};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok((id, message)) = decode_client(bytes) {
        assert_eq!(
            encode_client(id, &message),
            bytes,
            "{message:?} does not round-trip"
        );
    }
    // A whole message (revision 3: maybe a batch) never panics, and a batch re-encodes exactly.
    if let Ok(frames) = decode_client_batch(bytes) {
        if decode_client(bytes).is_err() {
            let encoded: Vec<Vec<u8>> =
                frames.iter().map(|(id, m)| encode_client(*id, m)).collect();
            let parts: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
            assert_eq!(
                encode_batch(false, &parts),
                bytes,
                "a batch does not round-trip"
            );
        }
    }
});

//! Replays the fuzz corpus of the frame decoder (`crate/engine/fuzz/corpus/`, kept by the cargo-fuzz
//! targets `decode_client` and `decode_server`) on every `cargo test`: each file goes through both
//! decoders, and through both decoders of whole messages (a batch, revision 3), none may panic, and
//! any frame or batch that decodes must encode back to exactly its bytes.
//! A crash input found by fuzzing is added to the corpus, so that it stays fixed.

use std::fs;
use std::panic;
use std::path::{Path, PathBuf};

use holdfast_engine::wire::{
    decode_client, decode_client_batch, decode_server, decode_server_batch, encode_batch,
    encode_client, encode_server,
};

fn corpus() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut files = Vec::new();
    for target in ["decode_client", "decode_server"] {
        let dir = root.join(target);
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// What the decoders made of one input, or the panic's text.
fn replay(bytes: &[u8]) -> Result<(bool, bool), String> {
    panic::catch_unwind(|| {
        let client = match decode_client(bytes) {
            Ok((id, message)) => {
                assert_eq!(
                    encode_client(id, &message),
                    bytes,
                    "client frame {message:?} does not encode back to its bytes"
                );
                true
            }
            Err(_) => false,
        };
        let server = match decode_server(bytes) {
            Ok((id, message)) => {
                assert_eq!(
                    encode_server(id, &message),
                    bytes,
                    "server frame {message:?} does not encode back to its bytes"
                );
                true
            }
            Err(_) => false,
        };
        // Whole messages: a batch re-encodes to its bytes from its frames re-encoded.
        if let Ok(frames) = decode_client_batch(bytes) {
            let encoded: Vec<Vec<u8>> =
                frames.iter().map(|(id, m)| encode_client(*id, m)).collect();
            if !client {
                let parts: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
                assert_eq!(
                    encode_batch(false, &parts),
                    bytes,
                    "a client batch does not encode back"
                );
            }
        }
        if let Ok(frames) = decode_server_batch(bytes) {
            let encoded: Vec<Vec<u8>> =
                frames.iter().map(|(id, m)| encode_server(*id, m)).collect();
            if !server {
                let parts: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
                assert_eq!(
                    encode_batch(true, &parts),
                    bytes,
                    "a server batch does not encode back"
                );
            }
        }
        (client, server)
    })
    .map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into())
    })
}

#[test]
fn every_corpus_frame_decodes_without_panic_and_round_trips() {
    let files = corpus();
    assert!(
        files.len() >= 20,
        "the corpus is missing: {} files",
        files.len()
    );
    let (mut clients, mut servers) = (0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let bytes = fs::read(path).expect("a corpus file");
        match replay(&bytes) {
            Ok((client, server)) => {
                clients += client as usize;
                servers += server as usize;
            }
            Err(message) => failures.push(format!(
                "{}: {message}\n  input: {bytes:02x?}",
                path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The corpus is not all junk: the seeds (one of every message) decode.
    assert!(
        clients >= 11,
        "only {clients} corpus frames decode as a client's"
    );
    assert!(
        servers >= 11,
        "only {servers} corpus frames decode as a server's"
    );
}

#[test]
fn every_truncation_and_extension_of_a_corpus_frame_is_safe() {
    // Cheap mutations of each corpus file, replayed the same way: every prefix, and one byte more.
    for path in corpus() {
        let bytes = fs::read(&path).expect("a corpus file");
        if bytes.len() > 2048 {
            continue;
        }
        for len in 0..bytes.len() {
            if let Err(message) = replay(&bytes[..len]) {
                panic!("{} cut to {len} bytes: {message}", path.display());
            }
        }
        let mut longer = bytes.clone();
        longer.push(0);
        if let Err(message) = replay(&longer) {
            panic!("{} with a byte more: {message}", path.display());
        }
    }
}

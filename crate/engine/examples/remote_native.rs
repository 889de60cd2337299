//! The engine's own cost of a hold over a connection, natively: R3 of `tests/bench/` without a host
//! or a network. 64 workers on two connections hold 100 keys in turn: each round, every worker ends
//! its request — releases its lease, or leaves the line if it still waits — found by its lease id as
//! the server finds a release's, and asks for its next key with fresh request and lease ids, as a
//! served store's clients do; a release grants the next in line. What is left of a hold's cost on the benchmark's server is the host's: the calls into
//! wasm, the frames, the socket.
//!
//! `cargo run --release -p holdfast-engine --example remote_native`

use holdfast_engine::{Engine, Event, Hold, Kind, Remote};
use std::time::Instant;

const ROUNDS: usize = 20_000;
const WORKERS: usize = 64;
const KEYS: usize = 100;
const TTL: u64 = 30_000;

fn persist(engine: &mut Engine) {
    while let Some(ceiling) = engine.poll_persist() {
        engine.persisted(ceiling, 0);
    }
}

/// A cheap generator of ids (xorshift), so that ids are spread as random ones are.
struct Ids(u64);
impl Ids {
    fn next(&mut self) -> u128 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (u128::from(x) << 64) | u128::from(x.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15)
    }
}

fn main() {
    let mut engine = Engine::open(None).expect("a new engine");
    persist(&mut engine);
    let lock = engine.resource(Kind::Lock, "bench", 1).expect("a resource");
    // The host's map of key names to the engine's key ids (forgotten when a key goes idle).
    let mut key_ids = vec![None; KEYS];
    let mut key_of = std::collections::HashMap::new();
    // Each worker's lease id, once it asked.
    let mut leases: Vec<Option<u128>> = vec![None; WORKERS];
    let mut ids = Ids(0x2545_f491_4f6c_dd1d);
    let mut holds = 0usize;
    let mut granted = 0usize;
    let mut now = 1_000u64;
    let started = Instant::now();
    for round in 0..ROUNDS {
        if round % 64 == 0 {
            now += 1;
        }
        for (w, lease) in leases.iter_mut().enumerate() {
            if let Some(id) = lease.take() {
                let req = engine.remote_lease(id).expect("a live lease or waiter");
                engine.cancel(req, now).expect("a release");
                persist(&mut engine);
            }
            let k = (w * 7 + round * 13) % KEYS;
            let remote = Remote {
                conn: (w % 2) as u32,
                request: ids.next(),
                lease: ids.next(),
                ttl: TTL,
            };
            *lease = Some(remote.lease);
            match engine
                .hold_remote(lock, key_ids[k], None, None, remote, now)
                .expect("a hold")
            {
                Hold::Granted { key, .. } | Hold::Queued { key, .. } => {
                    key_ids[k] = Some(key);
                    key_of.insert(key, k);
                }
                other => panic!("a new request is granted or queued: {other:?}"),
            }
            holds += 1;
            persist(&mut engine);
            while let Some(event) = engine.poll_event() {
                match event {
                    Event::Granted { .. } => granted += 1,
                    Event::KeyIdle { key } => {
                        if let Some(k) = key_of.remove(&key) {
                            key_ids[k] = None;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let elapsed = started.elapsed();
    assert!(granted > 0, "some waiter was granted");
    let per = elapsed.as_nanos() as f64 / holds as f64;
    println!("{per:.0} ns a hold over a connection and its release, {WORKERS} workers on {KEYS} keys, {holds} holds ({granted} granted from a line)");
}

//! The engine's own cost of a contended hold, natively: W3 of `tests/bench/` without a host. A key
//! of a lock is held 1,000 times over (the first is granted, 999 wait), then each holder releases,
//! which grants the next, as the store's untimed calls do; 2,000 rounds. What is left of a hold's
//! cost in the benchmark is the host's: the calls into wasm, promises, async contexts.
//!
//! `cargo run --release -p holdfast-engine --example line_native`

use holdfast_engine::{Engine, Event, Hold, Kind};
use std::time::Instant;

const ROUNDS: usize = 2_000;
const HOLDERS: usize = 1_000;

fn persist(engine: &mut Engine) {
    while let Some(ceiling) = engine.poll_persist() {
        engine.persisted(ceiling, 0);
    }
}

fn main() {
    let mut engine = Engine::open(None).expect("a new engine");
    persist(&mut engine);
    let lock = engine.resource(Kind::Lock, "bench", 1).expect("a resource");
    let mut reqs = Vec::with_capacity(HOLDERS);
    let mut granted = 0usize;
    let started = Instant::now();
    for _ in 0..ROUNDS {
        reqs.clear();
        let mut key = None;
        for _ in 0..HOLDERS {
            let hold = engine.hold_untimed(lock, key, None, None).expect("a hold");
            let (Some(Hold::Granted { req, key: k, .. }) | Some(Hold::Queued { req, key: k })) =
                hold
            else {
                panic!("an untimed hold without deadlines answers at once: {hold:?}");
            };
            reqs.push(req);
            key = Some(k);
            persist(&mut engine);
        }
        for &req in &reqs {
            assert_eq!(engine.release_untimed(req).expect("a release"), Some(true));
            persist(&mut engine);
            while let Some(event) = engine.poll_event() {
                granted += matches!(event, Event::Granted { .. }) as usize;
            }
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(granted, ROUNDS * (HOLDERS - 1), "every waiter was granted");
    let per = elapsed.as_nanos() as f64 / (ROUNDS * HOLDERS) as f64;
    println!("{per:.0} ns a hold and its release, {HOLDERS} holders of one key, {ROUNDS} rounds");
}

//! What the engine's integration tests share: an opened engine and readers of its answers.
#![allow(dead_code)] // each test file uses its own part

use holdfast_engine::{Engine, Event, Hold, Id};

/// An engine whose first fence ceiling storage has acknowledged.
pub fn opened() -> Engine {
    let mut engine = Engine::open(None).unwrap();
    let ceiling = engine
        .poll_persist()
        .expect("a new engine asks for a ceiling");
    engine.persisted(ceiling, 0);
    engine
}

/// Every pending event, oldest first.
pub fn events(engine: &mut Engine) -> Vec<Event> {
    std::iter::from_fn(|| engine.poll_event()).collect()
}

/// The ids and fence of a hold that was granted; panics on any other answer.
pub fn granted(hold: Hold) -> (Id, Id, u64) {
    match hold {
        Hold::Granted { req, key, fence } => (req, key, fence),
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// The request id of a hold that waits in line; panics on any other answer.
pub fn queued(hold: Hold) -> Id {
    match hold {
        Hold::Queued { req, .. } => req,
        other => panic!("expected to wait in line, got {other:?}"),
    }
}

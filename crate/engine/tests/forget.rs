//! Forgetting a resource (#13 item 5): a name nobody refers to costs nothing, an id kept past
//! forgetting names nothing, and forgetting is refused while the engine has a busy key of it.

mod common;

use common::{events, granted, opened, queued};
use holdfast_engine::{Event, Hold, Kind, Remote};

const WAIT: Option<u64> = Some(10_000);

fn invalid<T: std::fmt::Debug>(answer: Result<T, holdfast_engine::Error>) -> String {
    let error = answer.unwrap_err();
    assert_eq!(error.code(), "invalid", "{error}");
    error.to_string()
}

#[test]
fn item_5_a_forgotten_name_costs_no_entry_and_a_million_names_one_after_another_keep_one() {
    let mut e = opened();
    for i in 0..1_000_000u32 {
        let name = format!("name-{i}");
        let r = e.resource(Kind::Lock, &name, 1).unwrap();
        let (req, _, _) = granted(e.hold(r, None, WAIT, None, 0).unwrap());
        e.release(req, 0).unwrap();
        e.forget(r).unwrap();
    }
    events(&mut e);
    let fp = e.footprint();
    assert_eq!((fp.resources, fp.keys, fp.requests), (0, 0, 0));
    // One place, reused a million times (generations wrap within 21 bits: the id stays below 2^53).
    let again = e.resource(Kind::Lock, "again", 1).unwrap();
    assert_eq!(again.index(), 0);
    assert!(again.to_u64() < 1 << 53);
    e.check();
}

#[test]
fn item_5_forget_is_refused_while_a_key_is_busy_held_waited_for_or_adopted() {
    let mut e = opened();
    let r = e.resource(Kind::Semaphore, "uploads", 2).unwrap();
    let (a, key, _) = granted(e.hold(r, None, WAIT, None, 0).unwrap());
    let message = invalid(e.forget(r));
    assert!(
        message.contains("semaphore uploads: 1 busy keys"),
        "{message}"
    );
    let (b, _, _) = granted(e.hold(r, Some(key), WAIT, None, 0).unwrap());
    let c = queued(e.hold(r, Some(key), WAIT, None, 0).unwrap());
    e.release(a, 1).unwrap();
    e.release(b, 1).unwrap();
    invalid(e.forget(r)); // c holds now
    e.release(c, 2).unwrap();
    e.check();
    e.forget(r).unwrap();
    e.check();

    // A key the host granted itself and handed over is busy in the engine too.
    let l = e.resource(Kind::Lock, "summaries", 1).unwrap();
    let (first, _) = e.lend_fences(4).unwrap();
    e.reclaim_fences(first + 1);
    let (adopted, _, _) = granted(e.adopt(l, first, 0).unwrap());
    invalid(e.forget(l));
    e.release(adopted, 3).unwrap();
    e.forget(l).unwrap();

    // A waiter over a connection that went away keeps its key busy until its ttl.
    let s = e.resource(Kind::Lock, "remote", 1).unwrap();
    let remote = |request, lease| Remote {
        conn: 1,
        request,
        lease,
        ttl: 1_000,
    };
    let (holder, key, _) = match e
        .hold_remote(s, None, WAIT, None, remote(1, 2), 10)
        .unwrap()
    {
        Hold::Granted { req, key, fence } => (req, key, fence),
        other => panic!("{other:?}"),
    };
    queued(
        e.hold_remote(s, Some(key), None, None, remote(3, 4), 10)
            .unwrap(),
    );
    e.connection_closed(1, 10);
    invalid(e.forget(s));
    e.advance(10_000);
    assert!(e.fence_of(holder).is_none());
    events(&mut e);
    e.forget(s).unwrap();
    assert_eq!(e.footprint().resources, 0);
    e.check();
}

#[test]
fn item_5_an_id_kept_past_forgetting_names_nothing_not_the_name_that_took_its_place() {
    let mut e = opened();
    let old = e.resource(Kind::Semaphore, "old", 3).unwrap();
    e.forget(old).unwrap();
    let new = e.resource(Kind::Lock, "new", 1).unwrap();
    assert_eq!(new.index(), old.index(), "the place is reused");
    assert_ne!(new, old);
    assert!(e.resource_info(old).is_none());
    assert_eq!(e.resource_info(new), Some((Kind::Lock, "new", 1)));
    invalid(e.hold(old, None, WAIT, None, 0));
    invalid(e.hold_untimed(old, None, WAIT, None));
    invalid(e.adopt(old, 1, 0));
    invalid(e.forget(old));
    assert_eq!(e.footprint().keys, 0, "a refused hold makes no key");
    // A busy key of the new resource is not a key of the old id either.
    let (_, key, _) = granted(e.hold(new, None, WAIT, None, 0).unwrap());
    invalid(e.hold(old, Some(key), WAIT, None, 0));
    e.check();
}

#[test]
fn item_5_a_forgotten_name_comes_back_as_new_with_any_limit_and_fences_go_on_growing() {
    let mut e = opened();
    let s = e.resource(Kind::Semaphore, "jobs", 2).unwrap();
    invalid(e.resource(Kind::Semaphore, "jobs", 3));
    let (req, _, before) = granted(e.hold(s, None, WAIT, None, 0).unwrap());
    e.release(req, 0).unwrap();
    e.forget(s).unwrap();
    // Forgotten, the name is new: another limit is its limit now.
    let again = e.resource(Kind::Semaphore, "jobs", 3).unwrap();
    assert_ne!(again, s);
    assert_eq!(e.resource_info(again), Some((Kind::Semaphore, "jobs", 3)));
    let (_, key, after) = granted(e.hold(again, None, WAIT, None, 1).unwrap());
    assert!(after > before, "LOCK-02: fence {after} after {before}");
    granted(e.hold(again, Some(key), WAIT, None, 1).unwrap());
    granted(e.hold(again, Some(key), WAIT, None, 1).unwrap());
    // The lock of the same name is another resource, and forgetting one leaves the other.
    let lock = e.resource(Kind::Lock, "jobs", 1).unwrap();
    e.forget(lock).unwrap();
    assert_eq!(e.resource_info(again).map(|r| r.2), Some(3));
    e.check();
}

#[test]
fn item_5_forget_after_close_answers_closed() {
    let mut e = opened();
    let r = e.resource(Kind::Lock, "x", 1).unwrap();
    let (req, _, _) = granted(e.hold(r, None, WAIT, None, 0).unwrap());
    e.close();
    assert_eq!(events(&mut e), vec![Event::Ended { req, held: true }]);
    assert_eq!(e.forget(r).unwrap_err().code(), "closed");
}

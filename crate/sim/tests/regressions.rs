//! Engine bugs the simulation found, each kept as the smallest case that failed, on the engine's own
//! API. All are fixed: each test here fails again if its bug comes back.
//!
//! The first five were one bug seen five ways: **the engine acted on a deadline only in `advance`**,
//! so between the instant a deadline fell due and the host's timer firing (a timer is never early and
//! often late: a busy event loop, a blocked thread, coalesced timers), every other call treated a
//! lease past its `maxHold` or ttl as still held, and a waiter past its wait (or away past its ttl)
//! as still waiting. The fix: every timed call acts first on the deadlines at or before its `now`, and
//! the untimed calls ask for the time when the request or its key has a deadline.
//!
//! Each case names the simulation run that found it and its shrunk sequence, which replays with
//! `cargo run -p holdfast-sim -- replay SEED --late --lax none --seq '...'` (every operation and
//! answer printed). The simulation checks these kinds in every seed that has a late timer
//! (`HOLDFAST_SIM_LAX` can still let a kind pass while a new bug of that kind is being shrunk).

use holdfast_engine::{Engine, Event, Hold, Id, Kind, Remote, ResourceId};

fn opened() -> (Engine, ResourceId) {
    let mut e = Engine::open(None).unwrap();
    let c = e.poll_persist().unwrap();
    e.persisted(c, 0);
    let l = e.resource(Kind::Lock, "jobs", 1).unwrap();
    (e, l)
}

fn events(e: &mut Engine) -> Vec<Event> {
    std::iter::from_fn(|| e.poll_event()).collect()
}

fn granted(h: Hold) -> (Id, Id) {
    match h {
        Hold::Granted { req, key, .. } => (req, key),
        other => panic!("expected a grant: {other:?}"),
    }
}

/// LOCK-03: a lease released after its `maxHold` fell due, before the late timer fired, is released as
/// if held: `hold` resolves with fn's value instead of rejecting `LostError`.
/// Found by seed 0 (late timer): `write ok; hold 3 0 w=46 m=14 fast; late 181; release 56 fast`.
#[test]
fn fixed_a_lease_past_its_max_hold_is_released_as_if_held() {
    let (mut e, l) = opened();
    let (req, key) = granted(e.hold(l, None, Some(46), Some(14), 0).unwrap());
    // fn settled at 181; the timer set for 14 has not fired yet.
    assert!(
        !e.release(req, 181).unwrap(),
        "revoked at 14, not released at 181"
    );
    assert_eq!(
        events(&mut e),
        vec![Event::Revoked { req }, Event::KeyIdle { key }]
    );
    // The fast path cannot see the deadline without the time: it must ask for it.
    let (req, _) = granted(e.hold(l, None, Some(46), Some(14), 200).unwrap());
    assert_eq!(
        e.release_untimed(req).unwrap(),
        None,
        "an untimed release of a lease with a deadline needs the time"
    );
}

/// The "every waiter answered … never after its deadline": a waiter whose wait ran out is
/// granted by a call that came after its deadline, before the late timer fired.
/// Found by seed 0 (late timer, `release` let pass): `hold 1 4 w=50 m=- fast; late 156; write ok`.
#[test]
fn fixed_a_waiter_past_its_wait_is_granted() {
    let mut e = Engine::open(None).unwrap();
    let c = e.poll_persist().unwrap();
    let l = e.resource(Kind::Lock, "jobs", 1).unwrap();
    let Hold::Queued { req, key } = e.hold(l, None, Some(50), None, 0).unwrap() else {
        panic!("waits for the first fence write")
    };
    // The write is acknowledged at 156; the timer set for 50 has not fired yet.
    e.persisted(c, 156);
    assert_eq!(
        events(&mut e),
        vec![Event::TimedOut { req }, Event::KeyIdle { key }],
        "its wait ran out at 50"
    );
    // The same through a release: the waiter behind a holder.
    let (holder, key) = granted(e.hold(l, None, None, None, 200).unwrap());
    let Hold::Queued { req: waiter, .. } = e.hold(l, Some(key), Some(50), None, 200).unwrap()
    else {
        panic!()
    };
    e.release(holder, 300).unwrap();
    assert_eq!(
        events(&mut e),
        vec![Event::TimedOut { req: waiter }, Event::KeyIdle { key }]
    );
}

/// LOCK-01/LOCK-03 and the "a lease past its maxHold is never counted as a holder": a hold
/// (or a try) of a key whose only holder is past its `maxHold` waits (or is refused) instead of
/// being granted, until the late timer fires.
/// Found by seed 1 (late timer, `release,grant,resume` let pass):
/// `hold 1 0 w=12 m=27 fast; write ok; late 190; hold 1 0 w=166 m=12 fast`.
#[test]
fn fixed_a_holder_past_its_max_hold_still_counts() {
    let (mut e, l) = opened();
    let (first, key) = granted(e.hold(l, None, Some(12), Some(27), 0).unwrap());
    // At 190 the lease was revoked 163 ms ago; the timer has not fired yet.
    let tried = e.hold(l, Some(key), Some(0), None, 190).unwrap();
    assert!(
        matches!(tried, Hold::Granted { .. }),
        "a try of a key whose holder is past maxHold is granted, not {tried:?}"
    );
    assert_eq!(events(&mut e)[0], Event::Revoked { req: first });
}

/// LOCK-05 "one that ran out is never renewed": asking again with the request id of a lease past its
/// `maxHold` (or ttl) answers `Resumed` with its fence and counts its ttl again from now, where
/// `renew` at the same instant answers `Lost`.
/// Found by seed 53 (late timer, `release,hold,grant` let pass):
/// `remote 1 0 c=3 w=- m=8 t=1959444; write ok; late 144; ask 0 c=0`.
#[test]
fn fixed_asking_again_renews_a_lease_that_ran_out() {
    let (mut e, l) = opened();
    let remote = Remote {
        conn: 3,
        request: 7,
        lease: 1_007,
        ttl: 1_000,
    };
    let (req, key) = granted(e.hold_remote(l, None, None, None, remote, 0).unwrap());
    // Its ttl ran out at 1,000; the client reconnects and asks again at 1,500, before the timer.
    let again = e
        .hold_remote(
            l,
            Some(key),
            None,
            None,
            Remote { conn: 4, ..remote },
            1_500,
        )
        .unwrap();
    assert!(
        !matches!(again, Hold::Resumed { fence: Some(_), .. }),
        "a lease past its ttl is lost, not resumed: {again:?}"
    );
    assert!(
        events(&mut e).contains(&Event::Expired { req }),
        "it expired at 1,000"
    );
    // And with maxHold (the sequence the simulation shrank to).
    let (mut e, l) = opened();
    let remote = Remote {
        ttl: 1_959_444,
        ..remote
    };
    granted(e.hold_remote(l, None, None, Some(8), remote, 0).unwrap());
    let again = e
        .hold_remote(l, None, None, Some(8), Remote { conn: 0, ..remote }, 144)
        .unwrap();
    assert!(
        !matches!(again, Hold::Resumed { fence: Some(_), .. }),
        "a lease past its maxHold is lost, not resumed: {again:?}"
    );
}

/// The same for a waiter whose connection dropped: away for its ttl, then to be ended; asked again
/// after that, before the late timer, it is back in its place.
/// Found by replaying, late: `write ok; hold 0 0 w=- m=-; remote 0 0 c=1 w=- m=- t=1000; drop 1;
/// late 2000; ask 0 c=2`.
#[test]
fn fixed_a_waiter_away_past_its_ttl_comes_back() {
    let (mut e, l) = opened();
    let (_, key) = granted(e.hold(l, None, None, None, 0).unwrap());
    let remote = Remote {
        conn: 1,
        request: 9,
        lease: 1_009,
        ttl: 1_000,
    };
    let Hold::Queued { req, .. } = e.hold_remote(l, Some(key), None, None, remote, 0).unwrap()
    else {
        panic!()
    };
    assert_eq!(e.connection_closed(1, 0), vec![req]);
    // Away until 1,000; it asks again at 2,000, before the timer.
    let again = e
        .hold_remote(
            l,
            Some(key),
            None,
            None,
            Remote { conn: 2, ..remote },
            2_000,
        )
        .unwrap();
    assert!(
        !matches!(again, Hold::Resumed { .. }),
        "away past its ttl, it was ended: asked again, it is a new request, not {again:?}"
    );
}

/// `persist_pending` says "a ceiling was handed to the host and is not yet answered", and a closing
/// host waits for that answer; but a closed engine ignores the answer, so it stays pending for ever.
/// (The package waits for the write itself, not for this flag, so it does not hang; a host that
/// polled the flag would.) Found by seed 1 at its first shrink: `close; write ok`.
#[test]
fn fixed_a_write_answered_after_close_stays_pending() {
    let mut e = Engine::open(None).unwrap();
    let c = e.poll_persist().unwrap();
    e.close();
    e.persisted(c, 0);
    assert!(!e.persist_pending(), "it was answered");
}

/// A panic (a wasm trap: the package closes the store): `goodbye` collects its connection's
/// requests, then ends them one by one, pumping each key; when fences are used up, the pump of a
/// lease's key fails its next waiter — which may be a request of the same connection, later in the
/// list — and `end_connection` then ends that dead request again: `expect("a live request")`.
/// Found by reasoning on the model (`Model::end_connection` skips requests an earlier pump ended);
/// reproduced here on the engine's API.
#[test]
fn fixed_goodbye_ends_a_request_its_own_pump_already_failed() {
    use holdfast_engine::fence::MAX_FENCE;
    let mut e = Engine::open(Some(MAX_FENCE - 2)).unwrap();
    let c = e.poll_persist().unwrap();
    e.persisted(c, 0);
    let l = e.resource(Kind::Lock, "jobs", 1).unwrap();
    let r = |conn, n| Remote {
        conn,
        request: n,
        lease: 100 + n,
        ttl: 10_000,
    };
    let (lease, key) = granted(e.hold_remote(l, None, None, None, r(1, 1), 0).unwrap());
    granted(e.hold(l, None, None, None, 0).unwrap()); // the last fence below 2^53
    let Hold::Queued { req: mine, .. } =
        e.hold_remote(l, Some(key), None, None, r(1, 2), 0).unwrap()
    else {
        panic!()
    };
    let Hold::Queued { req: other, .. } =
        e.hold_remote(l, Some(key), None, None, r(2, 3), 0).unwrap()
    else {
        panic!()
    };
    events(&mut e);
    let ended = e.goodbye(1, 1);
    assert!(ended.contains(&lease));
    // Every request answered exactly once: the lease ended, each waiter failed (or ended), once.
    let evs = events(&mut e);
    for req in [lease, mine, other] {
        let answers = evs
            .iter()
            .filter(|ev| match **ev {
                Event::Ended { req: r, .. } | Event::Failed { req: r, .. } => r == req,
                _ => false,
            })
            .count();
        assert_eq!(answers, 1, "{req:?} in {evs:?}");
    }
    e.check();
}

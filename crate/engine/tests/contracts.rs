//! The engine's contracts, one test (or more) each, driven by a test clock: time is whatever the test
//! passes in. The contract ids (LOCK-01 …) are those of the package's README.

mod common;

use common::{events, granted, opened, queued};
use holdfast_engine::{Cancelled, Engine, Error, Event, Failure, Hold, Id, Kind, ResourceId};

const WAIT: Option<u64> = Some(10_000);

fn lock(engine: &mut Engine) -> ResourceId {
    engine.resource(Kind::Lock, "summaries", 1).unwrap()
}

#[test]
fn lock_01_a_key_has_one_holder_and_waiters_are_served_in_the_order_they_came() {
    let mut e = opened();
    let l = lock(&mut e);
    let (first, key, _) = granted(e.hold(l, None, WAIT, None, 0).unwrap());
    let waiters: Vec<Id> = (0..5)
        .map(|t| queued(e.hold(l, Some(key), WAIT, None, t).unwrap()))
        .collect();
    e.check();
    let mut order = Vec::new();
    let mut holder = first;
    for t in 10..15 {
        assert!(e.release(holder, t).unwrap());
        let evs = events(&mut e);
        assert_eq!(evs.len(), 1, "exactly one grant per release: {evs:?}");
        let Event::Granted { req, .. } = evs[0] else {
            panic!("{evs:?}")
        };
        order.push(req);
        holder = req;
        e.check();
    }
    assert_eq!(order, waiters);
    assert!(e.release(holder, 20).unwrap());
    assert_eq!(events(&mut e), vec![Event::KeyIdle { key }]);
}

#[test]
fn lock_01_nobody_barges_not_even_in_the_instant_the_key_is_handed_over() {
    let mut e = opened();
    let l = lock(&mut e);
    let (first, key, _) = granted(e.hold(l, None, WAIT, None, 0).unwrap());
    let second = queued(e.hold(l, Some(key), WAIT, None, 1).unwrap());
    e.release(first, 2).unwrap();
    // The key went to `second` within the release; a try and a hold that come now find it held.
    assert_eq!(
        e.hold(l, Some(key), Some(0), None, 2).unwrap(),
        Hold::Busy { key }
    );
    let third = queued(e.hold(l, Some(key), WAIT, None, 2).unwrap());
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == second));
    e.release(second, 3).unwrap();
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == third));
}

#[test]
fn lock_01_a_semaphore_admits_its_limit_and_serves_its_head_first() {
    let mut e = opened();
    let s = e.resource(Kind::Semaphore, "uploads", 3).unwrap();
    let (a, key, _) = granted(e.hold(s, None, WAIT, None, 0).unwrap());
    let (b, _, _) = granted(e.hold(s, Some(key), WAIT, None, 0).unwrap());
    let (c, _, _) = granted(e.hold(s, Some(key), WAIT, None, 0).unwrap());
    assert_eq!(
        e.hold(s, Some(key), Some(0), None, 0).unwrap(),
        Hold::Busy { key }
    );
    let w: Vec<Id> = (0..4)
        .map(|_| queued(e.hold(s, Some(key), WAIT, None, 1).unwrap()))
        .collect();
    e.check();
    e.release(b, 2).unwrap();
    e.release(a, 2).unwrap();
    let got: Vec<Event> = events(&mut e);
    assert_eq!(
        got,
        vec![
            Event::Granted {
                req: w[0],
                fence: 4
            },
            Event::Granted {
                req: w[1],
                fence: 5
            }
        ]
    );
    assert_eq!(e.inspect(2).unwrap()[0].holders.len(), 3);
    e.release(c, 3).unwrap();
    assert_eq!(
        events(&mut e),
        vec![Event::Granted {
            req: w[2],
            fence: 6
        }]
    );
    e.check();
    // A lock of the same name is another thing: its keys are free.
    let l = e.resource(Kind::Lock, "uploads", 1).unwrap();
    granted(e.hold(l, None, WAIT, None, 3).unwrap());
}

#[test]
fn lock_01_asking_for_a_semaphore_again_with_another_limit_is_invalid() {
    let mut e = opened();
    let s = e.resource(Kind::Semaphore, "uploads", 3).unwrap();
    assert_eq!(e.resource(Kind::Semaphore, "uploads", 3).unwrap(), s);
    let err = e.resource(Kind::Semaphore, "uploads", 4).unwrap_err();
    assert_eq!(err.code(), "invalid");
    assert!(
        err.to_string().contains("uploads") && err.to_string().contains('4'),
        "{err}"
    );
}

#[test]
fn lock_02_fences_grow_with_every_lease_and_semaphore_permits_carry_them() {
    let mut e = opened();
    let l = lock(&mut e);
    let s = e.resource(Kind::Semaphore, "uploads", 2).unwrap();
    let mut last = 0;
    for t in 0..100 {
        let res = if t % 2 == 0 { l } else { s };
        let (req, _, fence) = granted(e.hold(res, None, WAIT, None, t).unwrap());
        assert!(fence > last && fence >= 1);
        last = fence;
        e.release(req, t).unwrap();
        events(&mut e);
    }
}

#[test]
fn lock_02_fences_grow_across_a_restart_from_the_stored_ceiling() {
    let mut stored = None;
    let mut last = 0;
    for _restart in 0..5 {
        let mut e = Engine::open(stored).unwrap();
        let ceiling = e.poll_persist().unwrap();
        stored = Some(ceiling); // storage acknowledged it
        e.persisted(ceiling, 0);
        let l = lock(&mut e);
        for t in 0..10 {
            let (req, _, fence) = granted(e.hold(l, None, None, None, t).unwrap());
            assert!(fence > last, "fence {fence} after {last}");
            last = fence;
            e.release(req, t).unwrap();
        }
        // The process dies here without another write.
    }
}

#[test]
fn lock_02_nothing_is_granted_until_storage_acknowledged_a_ceiling() {
    let mut e = Engine::open(Some(41)).unwrap();
    let l = lock(&mut e);
    let ceiling = e.poll_persist().unwrap();
    let req = queued(e.hold(l, None, WAIT, None, 0).unwrap());
    // A try on the free key waits for the write too (it does not wait for any holder).
    let tried = e.hold(l, None, Some(0), None, 0).unwrap();
    let tried = queued(tried);
    assert!(events(&mut e).is_empty());
    e.check();
    e.persisted(ceiling, 1);
    assert_eq!(
        events(&mut e),
        vec![
            Event::Granted { req, fence: 42 },
            Event::Granted {
                req: tried,
                fence: 43
            }
        ]
    );
}

#[test]
fn lock_02_a_failed_write_grants_nothing_and_answers_the_waiting_grants() {
    let mut e = Engine::open(Some(7)).unwrap();
    let l = lock(&mut e);
    let ceiling = e.poll_persist().unwrap();
    let a = queued(e.hold(l, None, WAIT, None, 0).unwrap());
    let b = queued(e.hold(l, None, WAIT, None, 0).unwrap());
    e.persist_failed(ceiling, 1);
    let evs = events(&mut e);
    assert!(
        evs.contains(&Event::Failed {
            req: a,
            why: Failure::Storage
        }),
        "{evs:?}"
    );
    assert!(
        evs.contains(&Event::Failed {
            req: b,
            why: Failure::Storage
        }),
        "{evs:?}"
    );
    assert_eq!(e.footprint().keys, 0, "the keys were let go");
    assert_eq!(e.last_fence(), 7, "no fence was handed out");
    // The next hold asks storage again, and is granted above the old ceiling once it answers.
    let c = queued(e.hold(l, None, WAIT, None, 2).unwrap());
    let again = e.poll_persist().expect("asks again");
    e.persisted(again, 3);
    assert_eq!(events(&mut e), vec![Event::Granted { req: c, fence: 8 }]);
}

#[test]
fn lock_02_steady_state_leases_cost_no_storage_write() {
    let mut e = opened();
    let l = lock(&mut e);
    let mut writes = 0;
    for t in 0..1_000_000u64 {
        let (req, _, _) = granted(e.hold(l, None, WAIT, None, t).unwrap());
        e.release(req, t).unwrap();
        while e.poll_event().is_some() {}
        if let Some(ceiling) = e.poll_persist() {
            writes += 1;
            e.persisted(ceiling, t);
        }
    }
    assert!(
        writes <= 1,
        "{writes} writes after the one at open, over a million leases"
    );
}

#[test]
fn lock_03_max_hold_revokes_the_lease_and_the_key_goes_on_at_once() {
    let mut e = opened();
    let l = lock(&mut e);
    let (first, key, _) = granted(e.hold(l, None, WAIT, Some(1_000), 0).unwrap());
    let second = queued(e.hold(l, Some(key), None, Some(1_000), 10).unwrap());
    assert_eq!(e.next_deadline(), Some(1_000));
    e.advance(999);
    assert!(events(&mut e).is_empty());
    e.advance(1_000);
    let evs = events(&mut e);
    assert_eq!(evs[0], Event::Revoked { req: first });
    assert!(matches!(evs[1], Event::Granted { req, .. } if req == second));
    assert!(
        !e.release(first, 1_001).unwrap(),
        "a revoked lease holds nothing"
    );
    // The second's maxHold counts from its grant, not from its request.
    assert_eq!(e.next_deadline(), Some(2_000));
    e.check();
}

#[test]
fn lock_06_a_wait_that_runs_out_leaves_the_line_and_the_next_moves_up() {
    let mut e = opened();
    let l = lock(&mut e);
    let (first, key, _) = granted(e.hold(l, None, None, None, 0).unwrap());
    let short = queued(e.hold(l, Some(key), Some(100), None, 0).unwrap());
    let long = queued(e.hold(l, Some(key), Some(1_000), None, 0).unwrap());
    e.advance(100);
    assert_eq!(events(&mut e), vec![Event::TimedOut { req: short }]);
    e.release(first, 150).unwrap();
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == long));
    e.advance(5_000);
    assert!(
        events(&mut e).is_empty(),
        "a granted waiter does not time out"
    );
    e.check();
}

#[test]
fn lock_06_a_cancelled_waiter_leaves_its_line() {
    let mut e = opened();
    let l = lock(&mut e);
    let (first, key, _) = granted(e.hold(l, None, None, None, 0).unwrap());
    let a = queued(e.hold(l, Some(key), WAIT, None, 0).unwrap());
    let b = queued(e.hold(l, Some(key), WAIT, None, 0).unwrap());
    assert_eq!(e.cancel(a, 1).unwrap(), Cancelled::Left);
    assert_eq!(e.cancel(a, 1).unwrap(), Cancelled::Unknown);
    assert_eq!(e.inspect(1).unwrap()[0].waiting, 1);
    e.release(first, 2).unwrap();
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == b));
}

#[test]
fn lock_06_a_grant_that_raced_the_cancel_goes_on_to_the_next() {
    let mut e = opened();
    let l = lock(&mut e);
    let (first, key, _) = granted(e.hold(l, None, None, None, 0).unwrap());
    let a = queued(e.hold(l, Some(key), WAIT, None, 0).unwrap());
    let b = queued(e.hold(l, Some(key), WAIT, None, 0).unwrap());
    e.release(first, 1).unwrap();
    // The host had not yet seen `a`'s grant when `a` was cancelled.
    assert_eq!(e.cancel(a, 1).unwrap(), Cancelled::Released);
    let evs = events(&mut e);
    assert!(
        matches!(evs[..], [Event::Granted { req: x, .. }, Event::Granted { req: y, .. }] if x == a && y == b)
    );
}

#[test]
fn lock_06_closing_ends_every_lease_and_answers_every_waiter_once() {
    let mut e = opened();
    let l = lock(&mut e);
    let s = e.resource(Kind::Semaphore, "uploads", 2).unwrap();
    let mut holders = Vec::new();
    let mut waiters = Vec::new();
    for _ in 0..10 {
        let (h, key, _) = granted(e.hold(l, None, None, Some(60_000), 0).unwrap());
        holders.push(h);
        waiters.push(queued(e.hold(l, Some(key), WAIT, None, 0).unwrap()));
    }
    let (p, key, _) = granted(e.hold(s, None, None, None, 0).unwrap());
    holders.push(p);
    holders.push(granted(e.hold(s, Some(key), None, None, 0).unwrap()).0);
    waiters.push(queued(e.hold(s, Some(key), None, None, 0).unwrap()));
    e.close();
    let evs = events(&mut e);
    assert_eq!(evs.len(), holders.len() + waiters.len());
    for h in &holders {
        assert_eq!(
            evs.iter()
                .filter(|ev| **ev
                    == Event::Ended {
                        req: *h,
                        held: true
                    })
                .count(),
            1
        );
    }
    for w in &waiters {
        assert_eq!(
            evs.iter()
                .filter(|ev| **ev
                    == Event::Ended {
                        req: *w,
                        held: false
                    })
                .count(),
            1
        );
    }
    assert_eq!(e.hold(l, None, WAIT, None, 1), Err(Error::Closed));
    assert_eq!(e.inspect(1), Err(Error::Closed));
    assert_eq!(e.release(holders[0], 1), Err(Error::Closed));
    e.advance(100_000);
    assert!(events(&mut e).is_empty(), "nothing is answered twice");
}

#[test]
fn idle_keys_cost_nothing_after_a_million_distinct_keys() {
    let mut e = opened();
    let l = lock(&mut e);
    for t in 0..1_000_000u64 {
        let (req, key, _) = granted(e.hold(l, None, WAIT, Some(60_000), t).unwrap());
        e.release(req, t).unwrap();
        assert_eq!(e.poll_event(), Some(Event::KeyIdle { key }));
        if let Some(c) = e.poll_persist() {
            e.persisted(c, t);
        }
    }
    let fp = e.footprint();
    assert_eq!(
        (fp.keys, fp.requests),
        (0, 0),
        "no entry left for an idle key"
    );
    assert_eq!(
        (fp.key_places, fp.request_places),
        (1, 1),
        "places were reused"
    );
    assert!(
        fp.timers <= 130,
        "dead maxHold timers are swept: {} kept",
        fp.timers
    );
}

#[test]
fn a_line_full_of_waiters_that_left_keeps_no_more_than_twice_its_waiters() {
    let mut e = opened();
    let l = lock(&mut e);
    let (_, key, _) = granted(e.hold(l, None, None, None, 0).unwrap());
    for t in 0..100_000 {
        let w = queued(e.hold(l, Some(key), WAIT, None, t).unwrap());
        e.cancel(w, t).unwrap();
    }
    e.check();
    assert!(e.footprint().timers < 200);
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let mut e = opened();
    assert_eq!(
        e.resource(Kind::Lock, "Summaries", 1).unwrap_err().code(),
        "invalid"
    );
    assert_eq!(
        e.resource(Kind::Semaphore, "uploads", 0)
            .unwrap_err()
            .code(),
        "invalid"
    );
    assert_eq!(
        e.resource(Kind::Semaphore, "uploads", 10_001)
            .unwrap_err()
            .code(),
        "invalid"
    );
    let l = lock(&mut e);
    assert_eq!(
        e.hold(l, None, WAIT, Some(0), 0).unwrap_err().code(),
        "invalid"
    );
    assert_eq!(e.footprint().keys, 0, "a refused hold leaves no key behind");
    assert_eq!(
        e.hold(ResourceId::from_u64(99).unwrap(), None, WAIT, None, 0)
            .unwrap_err()
            .code(),
        "invalid"
    );
    let (_, key, _) = granted(e.hold(l, None, WAIT, None, 0).unwrap());
    let other = e.resource(Kind::Lock, "other", 1).unwrap();
    assert_eq!(
        e.hold(other, Some(key), WAIT, None, 0).unwrap_err().code(),
        "invalid",
        "a busy key of another resource"
    );
    for _ in 0..10_000 {
        queued(e.hold(l, Some(key), None, None, 0).unwrap());
    }
    let err = e.hold(l, Some(key), None, None, 0).unwrap_err();
    assert_eq!(err.code(), "limit");
    assert!(err.to_string().contains("10000"), "{err}");
    assert_eq!(e.inspect(0).unwrap()[0].waiting, 10_000);
    e.check();
}

#[test]
fn inspect_lists_busy_keys_with_their_holders_and_waiters() {
    let mut e = opened();
    let l = lock(&mut e);
    let (_, key, fence) = granted(e.hold(l, None, WAIT, None, 100).unwrap());
    queued(e.hold(l, Some(key), WAIT, None, 100).unwrap());
    let views = e.inspect(350).unwrap();
    assert_eq!(views.len(), 1);
    assert_eq!(views[0].resource, l);
    assert_eq!(views[0].key, key);
    assert_eq!(views[0].waiting, 1);
    assert_eq!(views[0].holders[0].fence, fence);
    assert_eq!(views[0].holders[0].held_ms, 250);
}

#[test]
fn untimed_calls_ask_for_the_time_exactly_when_a_deadline_or_a_grant_to_a_waiter_needs_it() {
    let mut e = opened();
    let l = lock(&mut e);
    e.advance(500); // the engine's latest time
                    // A free key without maxHold: granted, stamped with the latest time.
    let Some(Hold::Granted { req, key, .. }) = e.hold_untimed(l, None, WAIT, None).unwrap() else {
        panic!("granted without the time")
    };
    assert_eq!(e.inspect(700).unwrap()[0].holders[0].held_ms, 200);
    // A grant with maxHold needs the time; nothing changes meanwhile.
    assert_eq!(e.hold_untimed(l, None, WAIT, Some(1_000)).unwrap(), None);
    assert_eq!(e.footprint().keys, 1, "no key was made for it");
    // A deadline elsewhere (another key's waiter): now a busy key needs the time too, since that
    // deadline may have fallen due.
    let other = e.resource(Kind::Lock, "other", 1).unwrap();
    let (_, other_key, _) = granted(e.hold(other, None, WAIT, None, 500).unwrap());
    let timed = queued(e.hold(other, Some(other_key), WAIT, None, 500).unwrap());
    assert_eq!(e.hold_untimed(l, Some(key), None, None).unwrap(), None);
    assert_eq!(e.hold_untimed(l, Some(key), Some(0), None).unwrap(), None);
    assert_eq!(e.footprint().requests, 3);
    assert_eq!(e.cancel(timed, 500).unwrap(), Cancelled::Left);
    let Hold::Queued { req: next, .. } = e.hold(l, Some(key), None, Some(1_000), 600).unwrap()
    else {
        panic!("queued")
    };
    // Releasing to a waiter needs the time (its grant starts its maxHold).
    assert_eq!(e.release_untimed(req).unwrap(), None);
    assert!(e.fence_of(req).is_some(), "nothing changed");
    assert!(e.release(req, 800).unwrap());
    assert!(matches!(events(&mut e)[..], [Event::Granted { req: r, .. }] if r == next));
    assert_eq!(
        e.next_deadline(),
        Some(1_800),
        "maxHold counted from the real time of the grant"
    );
    // A lease with a deadline needs the time to be released (it may be past it).
    assert_eq!(e.release_untimed(next).unwrap(), None);
    assert!(e.release(next, 900).unwrap());
    assert_eq!(events(&mut e), vec![Event::KeyIdle { key }]);
    // Releasing the last holder of a lease with no deadline does not.
    let Some(Hold::Granted {
        req: plain, key, ..
    }) = e.hold_untimed(l, None, WAIT, None).unwrap()
    else {
        panic!("granted")
    };
    assert_eq!(e.release_untimed(plain).unwrap(), Some(true));
    assert_eq!(events(&mut e), vec![Event::KeyIdle { key }]);
    assert_eq!(e.release_untimed(plain).unwrap(), Some(false));
}

#[test]
fn deadlines_that_fell_due_are_acted_on_before_any_timed_call_though_the_hosts_timer_is_late() {
    let mut e = opened();
    let l = lock(&mut e);
    // A lease past its maxHold, released by a host whose timer has not fired: it holds nothing
    // (LOCK-03: the hold answers lost), and its revocation comes first.
    let (req, key, _) = granted(e.hold(l, None, WAIT, Some(100), 0).unwrap());
    assert!(!e.release(req, 150).unwrap());
    assert_eq!(
        events(&mut e),
        vec![Event::Revoked { req }, Event::KeyIdle { key }]
    );
    // A waiter past its wait is not granted by a release that comes late.
    let (holder, key, _) = granted(e.hold(l, None, WAIT, None, 200).unwrap());
    let waiter = queued(e.hold(l, Some(key), Some(50), None, 200).unwrap());
    e.release(holder, 300).unwrap();
    assert_eq!(
        events(&mut e),
        vec![Event::TimedOut { req: waiter }, Event::KeyIdle { key }]
    );
    // A try finds a holder past its maxHold gone.
    let (old, key, _) = granted(e.hold(l, None, WAIT, Some(10), 400).unwrap());
    let (fresh, new_key, _) = granted(e.hold(l, Some(key), Some(0), None, 500).unwrap());
    assert!(
        matches!(events(&mut e)[..], [Event::Revoked { req }, Event::KeyIdle { key: k }] if req == old && k == key),
        "the old key went idle first"
    );
    assert!(e.fence_of(fresh).is_some());
    assert_ne!(
        new_key, key,
        "the answer names the key anew; the host maps it so"
    );
    e.check();
}

#[test]
fn lock_01_untimed_holds_and_releases_of_a_busy_key_keep_the_line_while_no_deadline_is_set() {
    // With no deadline anywhere, nothing can fall due: a hold that joins the line without a wait
    // limit and a release that hands the key to such a waiter need no clock read. FIFO (LOCK-01) and
    // one holder at a time hold as for timed calls; a waiter with a maxHold, or any deadline, makes
    // them ask for the time again.
    let mut e = opened();
    let l = lock(&mut e);
    e.advance(100);
    let Some(Hold::Granted {
        req: first, key, ..
    }) = e.hold_untimed(l, None, None, None).unwrap()
    else {
        panic!("granted")
    };
    let waiters: Vec<Id> = (0..4)
        .map(|_| queued(e.hold_untimed(l, Some(key), None, None).unwrap().unwrap()))
        .collect();
    assert_eq!(
        e.hold_untimed(l, Some(key), Some(0), None).unwrap(),
        Some(Hold::Busy { key })
    );
    let mut holder = first;
    for &next in &waiters {
        assert_eq!(e.release_untimed(holder).unwrap(), Some(true));
        assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == next));
        assert_eq!(e.inspect(100).unwrap()[0].holders.len(), 1);
        holder = next;
    }
    // A waiter whose grant starts a maxHold: releasing to it needs the time.
    let capped = queued(e.hold(l, Some(key), None, Some(1_000), 200).unwrap());
    assert_eq!(e.release_untimed(holder).unwrap(), None);
    assert!(e.release(holder, 300).unwrap());
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == capped));
    assert_eq!(e.next_deadline(), Some(1_300));
    // While its deadline is set, a busy key needs the time even for a hold without one.
    assert_eq!(e.hold_untimed(l, Some(key), None, None).unwrap(), None);
    e.check();
}

//! LOCK-05 and its neighbours: leases over a connection, on a test clock.

mod common;

use common::{events, granted, queued};
use holdfast_engine::{Cancelled, Engine, Event, Hold, Kind, Remote, Renewal, ResourceId};

/// An opened engine and its lock `jobs`.
fn opened() -> (Engine, ResourceId) {
    let mut e = common::opened();
    let l = e.resource(Kind::Lock, "jobs", 1).unwrap();
    (e, l)
}

fn remote(conn: u32, n: u128, ttl: u64) -> Remote {
    Remote {
        conn,
        request: n,
        lease: 1_000 + n,
        ttl,
    }
}

#[test]
fn lock_05_a_lease_lasts_its_ttl_from_its_last_renewal() {
    let (mut e, l) = opened();
    let (req, key, _) = granted(
        e.hold_remote(l, None, Some(0), None, remote(1, 1, 30_000), 0)
            .unwrap(),
    );
    assert_eq!(e.remote_of(req).unwrap().expires_at, Some(30_000));
    assert_eq!(
        e.renew(1_001, 10_000).unwrap(),
        Renewal::Renewed {
            ttl: 30_000,
            revoke_in: None
        }
    );
    assert_eq!(e.next_deadline(), Some(40_000));
    e.advance(39_999);
    assert!(events(&mut e).is_empty(), "alive until its deadline");
    e.advance(40_000);
    assert_eq!(
        events(&mut e),
        vec![Event::Expired { req }, Event::KeyIdle { key }]
    );
    e.check();
}

#[test]
fn lock_05_a_lease_that_ran_out_is_never_renewed_even_before_advance() {
    let (mut e, l) = opened();
    let (req, _, _) = granted(
        e.hold_remote(l, None, Some(0), None, remote(1, 1, 1_000), 0)
            .unwrap(),
    );
    // The host's timer has not fired yet; the renewal comes late.
    assert_eq!(e.renew(1_001, 1_000).unwrap(), Renewal::Lost);
    assert!(
        matches!(events(&mut e)[..], [Event::Expired { req: r }, Event::KeyIdle { .. }] if r == req)
    );
    assert_eq!(e.renew(1_001, 1_001).unwrap(), Renewal::Lost);
    assert_eq!(e.footprint().requests, 0);
}

#[test]
fn lock_05_its_key_goes_to_the_next_in_line_at_the_deadline_though_nobody_asks() {
    let (mut e, l) = opened();
    let (first, key, fence) = granted(
        e.hold_remote(l, None, Some(0), None, remote(1, 1, 5_000), 0)
            .unwrap(),
    );
    let next = queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 2, 5_000), 100)
            .unwrap(),
    );
    e.advance(5_000);
    let evs = events(&mut e);
    assert_eq!(evs[0], Event::Expired { req: first });
    assert!(matches!(evs[1], Event::Granted { req, fence: f } if req == next && f > fence));
    // The next lease's ttl counts from its grant.
    assert_eq!(e.remote_of(next).unwrap().expires_at, Some(10_000));
}

#[test]
fn lock_05_a_key_handed_on_by_a_late_timer_goes_to_the_head_of_its_line_then_with_a_lease_counted_from_now(
) {
    // The host acts on a lease's deadline 7 s late (a paused server, a blocked event loop, a late
    // alarm). The key goes to whoever was first in line at the deadline, but the grant's ttl counts
    // from when it is made: stamped at the deadline, it would be handed out already past its end
    // (here each of the next two in line would be granted and expired in the same call), or told a
    // full ttl while it had less, so that a client counting from the grant gives up after the server.
    let (mut e, l) = opened();
    let (first, key, _) = granted(
        e.hold_remote(l, None, Some(0), None, remote(1, 1, 2_000), 0)
            .unwrap(),
    );
    let line: Vec<_> = (2..=4)
        .map(|n| {
            queued(
                e.hold_remote(l, Some(key), None, None, remote(n, n.into(), 2_000), 100)
                    .unwrap(),
            )
        })
        .collect();
    // A waiter whose wait ran out between the deadline and now was still in line at the deadline.
    let capped = queued(
        e.hold_remote(l, Some(key), Some(2_500), None, remote(5, 5, 2_000), 100)
            .unwrap(),
    );
    e.advance(9_000);
    let evs = events(&mut e);
    assert_eq!(evs[0], Event::Expired { req: first });
    assert!(matches!(evs[1], Event::Granted { req, .. } if req == line[0]));
    assert_eq!(
        evs[2..],
        [Event::TimedOut { req: capped }],
        "the others wait on; the next's grant did not run out at once"
    );
    assert_eq!(e.remote_of(line[0]).unwrap().expires_at, Some(11_000));
    assert_eq!(e.next_deadline(), Some(11_000));
    e.check();
    // The same for a maxHold: counted from the grant as made.
    let (mut e, m) = opened();
    let (holder, key, _) = granted(e.hold(m, None, Some(0), Some(100), 0).unwrap());
    let next = queued(e.hold(m, Some(key), None, Some(100), 0).unwrap());
    e.advance(5_000);
    let evs = events(&mut e);
    assert_eq!(evs[0], Event::Revoked { req: holder });
    assert!(matches!(evs[1], Event::Granted { req, .. } if req == next));
    assert_eq!(evs.len(), 2, "not revoked in the call that granted it");
    assert_eq!(e.next_deadline(), Some(5_100));
    e.check();
}

#[test]
fn lock_05_asked_again_a_held_request_answers_its_lease_and_fence_with_ttl_from_the_answer() {
    let (mut e, l) = opened();
    let (req, key, fence) = granted(
        e.hold_remote(l, None, None, None, remote(1, 7, 10_000), 0)
            .unwrap(),
    );
    // The connection dropped; the client reconnects (connection 2) and asks again with the same id.
    assert!(
        e.connection_closed(1, 3_000).is_empty(),
        "a dropped connection is not a release"
    );
    let again = e
        .hold_remote(
            l,
            Some(key),
            None,
            None,
            Remote {
                lease: 555,
                ..remote(2, 7, 10_000)
            },
            8_000,
        )
        .unwrap();
    assert_eq!(
        again,
        Hold::Resumed {
            req,
            key,
            fence: Some(fence)
        }
    );
    let view = e.remote_of(req).unwrap();
    assert_eq!(view.expires_at, Some(18_000));
    assert_eq!(view.remote.conn, 2);
    assert_eq!(
        view.remote.lease, 1_007,
        "the lease id stays the one its holder learned"
    );
    e.advance(17_999);
    assert!(events(&mut e).is_empty());
    assert_eq!(e.connection_requests(1), 0);
    assert_eq!(e.connection_requests(2), 1);
    e.check();
}

#[test]
fn lock_05_asked_again_a_waiting_request_keeps_its_place_and_is_never_granted_twice() {
    let (mut e, l) = opened();
    let (holder, key, _) = granted(
        e.hold_remote(l, None, None, None, remote(1, 1, 10_000), 0)
            .unwrap(),
    );
    let a = queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 2, 10_000), 1)
            .unwrap(),
    );
    let b = queued(
        e.hold_remote(l, Some(key), None, None, remote(3, 3, 10_000), 2)
            .unwrap(),
    );
    // `a` asks again (say its first frame seemed lost): same place, nothing new.
    assert_eq!(
        e.hold_remote(l, Some(key), None, None, remote(2, 2, 10_000), 3)
            .unwrap(),
        Hold::Resumed {
            req: a,
            key,
            fence: None
        }
    );
    assert_eq!(e.inspect(3).unwrap()[0].waiting, 2);
    e.release(holder, 4).unwrap();
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == a));
    e.release(a, 5).unwrap();
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == b));
}

#[test]
fn lock_05_asked_again_once_its_lease_ran_out_a_request_is_asked_afresh() {
    let (mut e, l) = opened();
    let (first, _, fence) = granted(
        e.hold_remote(l, None, None, None, remote(1, 9, 1_000), 0)
            .unwrap(),
    );
    e.advance(1_000);
    assert_eq!(events(&mut e)[0], Event::Expired { req: first });
    let (_, _, again) = granted(
        e.hold_remote(l, None, None, None, remote(1, 9, 1_000), 2_000)
            .unwrap(),
    );
    assert!(again > fence, "a fresh lease with a larger fence");
}

#[test]
fn lock_05_renewing_or_releasing_needs_the_lease_id() {
    let (mut e, l) = opened();
    let (req, _, _) = granted(
        e.hold_remote(l, None, None, None, remote(1, 1, 10_000), 0)
            .unwrap(),
    );
    assert_eq!(e.renew(999, 1).unwrap(), Renewal::Lost);
    assert!(!e.release_lease(999, 1).unwrap());
    assert!(e.fence_of(req).is_some());
    assert!(e.release_lease(1_001, 2).unwrap());
    assert_eq!(e.renew(1_001, 3).unwrap(), Renewal::Lost);
}

#[test]
fn lock_05_a_connection_that_ends_puts_its_waiters_out_of_the_way_and_goodbye_releases_its_leases()
{
    let (mut e, l) = opened();
    let (held, key, _) = granted(
        e.hold_remote(l, None, None, None, remote(1, 1, 10_000), 0)
            .unwrap(),
    );
    let waiting = queued(
        e.hold_remote(l, Some(key), None, None, remote(1, 2, 10_000), 0)
            .unwrap(),
    );
    let other = queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 3, 10_000), 0)
            .unwrap(),
    );
    assert_eq!(e.connection_closed(1, 1), vec![waiting]);
    assert!(e.fence_of(held).is_some(), "its lease lives until its ttl");
    assert_eq!(
        e.inspect(1).unwrap()[0].waiting,
        1,
        "its waiter no longer counts"
    );
    e.check();
    // It reconnects and says goodbye: its lease ends at once and the key goes on, past nobody.
    assert_eq!(
        e.hold_remote(l, Some(key), None, None, remote(4, 1, 10_000), 2)
            .unwrap(),
        Hold::Resumed {
            req: held,
            key,
            fence: e.fence_of(held)
        }
    );
    assert_eq!(e.goodbye(4, 3), vec![held]);
    assert!(
        matches!(events(&mut e)[..], [Event::Ended { req: h, held: true }, Event::Granted { req, .. }] if h == held && req == other),
        "the line moved past the waiter that was away"
    );
    // The waiter away was not asked again within its ttl: it is cancelled then.
    e.advance(10_001);
    assert_eq!(
        events(&mut e),
        vec![Event::Ended {
            req: waiting,
            held: false
        }]
    );
    assert_eq!(e.cancel_request(3, 10_002).unwrap(), Cancelled::Released);
    e.check();
    assert_eq!(e.footprint().keys, 0);
}

#[test]
fn lock_05_connection_waiting_counts_a_connections_requests_in_line_not_its_leases_nor_those_away()
{
    // What a server asks of a client gone silent (session 32): does anyone wait on this connection?
    let (mut e, l) = opened();
    let (_, key, _) = granted(
        e.hold_remote(l, None, None, None, remote(1, 1, 10_000), 0)
            .unwrap(),
    );
    assert_eq!(e.connection_waiting(1), 0, "a lease is not a hold in line");
    let first = queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 2, 10_000), 0)
            .unwrap(),
    );
    queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 3, 10_000), 0)
            .unwrap(),
    );
    queued(
        e.hold_remote(l, Some(key), None, None, remote(3, 4, 10_000), 0)
            .unwrap(),
    );
    assert_eq!(
        (
            e.connection_waiting(1),
            e.connection_waiting(2),
            e.connection_waiting(3)
        ),
        (0, 2, 1)
    );
    assert_eq!(e.cancel(first, 1).unwrap(), Cancelled::Left);
    assert_eq!(
        e.connection_waiting(2),
        1,
        "a cancelled hold no longer waits"
    );
    e.connection_closed(3, 2);
    assert_eq!(
        e.connection_waiting(3),
        0,
        "a hold away waits on nobody's connection"
    );
    assert_eq!(e.connection_requests(3), 1, "though it keeps its place");
    assert_eq!(e.connection_waiting(9), 0, "a connection never seen");
    e.check();
}

#[test]
fn lock_05_a_waiter_whose_connection_dropped_and_came_back_in_time_is_back_in_its_place() {
    let (mut e, l) = opened();
    let (held, key, _) = granted(
        e.hold_remote(l, None, None, None, remote(1, 1, 10_000), 0)
            .unwrap(),
    );
    let a = queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 2, 10_000), 1)
            .unwrap(),
    );
    e.connection_closed(2, 2);
    // Someone asks after `a` went away: they stand behind `a`'s place.
    let b = queued(e.hold(l, Some(key), None, None, 3).unwrap());
    assert_eq!(
        e.hold_remote(l, Some(key), None, None, remote(3, 2, 10_000), 4)
            .unwrap(),
        Hold::Resumed {
            req: a,
            key,
            fence: None
        }
    );
    e.check();
    e.release(held, 5).unwrap();
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == a));
    e.release(a, 6).unwrap();
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == b));
    e.advance(20_000);
    e.check();
}

#[test]
fn lock_05_a_waiter_away_at_the_head_of_a_free_key_is_granted_when_it_comes_back() {
    let (mut e, l) = opened();
    let (held, key, _) = granted(
        e.hold_remote(l, None, None, None, remote(1, 1, 10_000), 0)
            .unwrap(),
    );
    let a = queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 2, 10_000), 0)
            .unwrap(),
    );
    e.connection_closed(2, 1);
    e.release(held, 2).unwrap();
    assert!(
        events(&mut e).is_empty(),
        "nobody to grant: the waiter is away"
    );
    assert_eq!(
        e.footprint().keys,
        1,
        "the key keeps the place of the waiter away"
    );
    assert!(matches!(
        e.hold_remote(l, Some(key), None, None, remote(3, 2, 10_000), 3).unwrap(),
        Hold::Resumed { req, fence: None, .. } if req == a
    ));
    assert!(matches!(events(&mut e)[..], [Event::Granted { req, .. }] if req == a));
    e.check();
}

#[test]
fn lock_05_a_connection_has_at_most_its_limit_of_requests() {
    let (mut e, l) = opened();
    e.set_connection_limit(3);
    let keys: Vec<_> = (0..3)
        .map(|n| {
            granted(
                e.hold_remote(l, None, None, None, remote(1, n, 10_000), 0)
                    .unwrap(),
            )
            .1
        })
        .collect();
    let err = e
        .hold_remote(l, None, None, None, remote(1, 3, 10_000), 0)
        .unwrap_err();
    assert_eq!(err.code(), "limit");
    assert_eq!(
        err.to_string(),
        "one connection may have at most 3 leases and waiting holds"
    );
    // Another connection is not affected, and asking again is not a new request.
    granted(
        e.hold_remote(l, None, None, None, remote(2, 3, 10_000), 0)
            .unwrap(),
    );
    assert!(matches!(
        e.hold_remote(l, Some(keys[0]), None, None, remote(1, 0, 10_000), 0)
            .unwrap(),
        Hold::Resumed { .. }
    ));
    // A limit of one is said in the singular.
    e.set_connection_limit(1);
    let err = e
        .hold_remote(l, None, None, None, remote(2, 4, 10_000), 0)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "one connection may have at most 1 lease or waiting hold"
    );
}

#[test]
fn lock_05_a_request_id_asked_again_for_another_key_is_refused_not_answered_the_first_keys_lease() {
    // Before, the second ask answered the lease and fence of the first key: its caller believed it
    // held the second key, which a third was then granted.
    let (mut e, l) = opened();
    let other = e.resource(Kind::Lock, "other", 1).unwrap();
    let (req, key, fence) = granted(
        e.hold_remote(l, None, Some(0), None, remote(1, 7, 10_000), 0)
            .unwrap(),
    );
    for (res, k) in [(l, None), (other, None), (other, Some(key))] {
        let err = e
            .hold_remote(res, k, Some(0), None, remote(1, 7, 10_000), 1)
            .unwrap_err();
        assert_eq!(err.code(), "invalid");
        assert!(err.to_string().contains("another key"), "{err}");
    }
    assert_eq!(e.fence_of(req), Some(fence), "the first lease is untouched");
    let (third, _, _) = granted(
        e.hold_remote(l, None, Some(0), None, remote(2, 8, 10_000), 1)
            .unwrap(),
    );
    assert_ne!(third, req);
    assert!(matches!(
        e.hold_remote(l, Some(key), Some(0), None, remote(1, 7, 10_000), 2)
            .unwrap(),
        Hold::Resumed { req: r, .. } if r == req
    ));
    e.check();
}

#[test]
fn lock_05_ttl_is_checked_and_max_hold_still_bounds_a_renewed_lease() {
    let (mut e, l) = opened();
    assert_eq!(
        e.hold_remote(l, None, None, None, remote(1, 1, 999), 0)
            .unwrap_err()
            .code(),
        "invalid"
    );
    assert_eq!(
        e.hold_remote(l, None, None, None, remote(1, 1, 3_600_001), 0)
            .unwrap_err()
            .code(),
        "invalid"
    );
    let (req, _, _) = granted(
        e.hold_remote(l, None, None, Some(2_500), remote(1, 1, 1_000), 0)
            .unwrap(),
    );
    assert_eq!(
        e.renew(1_001, 900).unwrap(),
        Renewal::Renewed {
            ttl: 1_000,
            revoke_in: Some(1_600)
        }
    );
    assert!(matches!(
        e.renew(1_001, 1_800).unwrap(),
        Renewal::Renewed { .. }
    ));
    e.advance(2_500);
    assert_eq!(events(&mut e)[0], Event::Revoked { req });
    assert_eq!(e.renew(1_001, 2_501).unwrap(), Renewal::Lost);
    e.check();
}

#[test]
fn many_renewals_keep_the_timer_heap_bounded() {
    let (mut e, l) = opened();
    granted(
        e.hold_remote(l, None, None, Some(86_400_000), remote(1, 1, 1_000), 0)
            .unwrap(),
    );
    for t in 1..100_000u64 {
        assert!(matches!(
            e.renew(1_001, t).unwrap(),
            Renewal::Renewed { .. }
        ));
    }
    assert!(
        e.footprint().timers < 200,
        "{} timer entries",
        e.footprint().timers
    );
    e.check();
}

#[test]
fn lock_05_two_clients_drop_and_come_back_and_the_line_keeps_its_order() {
    let (mut e, l) = opened();
    let (a, key, _) = granted(
        e.hold_remote(l, None, None, None, remote(1, 1, 2_000), 0)
            .unwrap(),
    );
    let b = queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 2, 2_000), 0)
            .unwrap(),
    );
    let third = queued(e.hold(l, Some(key), None, None, 0).unwrap());
    e.connection_closed(1, 10);
    e.connection_closed(2, 10);
    assert!(
        matches!(e.hold_remote(l, Some(key), None, None, remote(3, 1, 2_000), 20).unwrap(), Hold::Resumed { req, .. } if req == a)
    );
    assert!(
        matches!(e.hold_remote(l, Some(key), None, None, remote(4, 2, 2_000), 20).unwrap(), Hold::Resumed { req, .. } if req == b)
    );
    e.check();
    for t in (100..3_000).step_by(600) {
        assert!(matches!(
            e.renew(1_001, t).unwrap(),
            Renewal::Renewed { .. }
        ));
        e.advance(t);
    }
    assert_eq!(e.cancel(a, 3_000).unwrap(), Cancelled::Released);
    let evs = events(&mut e);
    assert!(
        matches!(evs[..], [Event::Granted { req, .. }] if req == b),
        "{evs:?}"
    );
    let _ = third;
}

#[test]
fn lock_05_goodbye_ends_its_waiters_before_its_leases_so_the_key_never_goes_to_one_of_them() {
    let (mut e, l) = opened();
    // Connection 1 holds the key and also waits for it again, behind nobody else; connection 2
    // waits behind it.
    let (held, key, _) = granted(
        e.hold_remote(l, None, None, None, remote(1, 1, 10_000), 0)
            .unwrap(),
    );
    let own = queued(
        e.hold_remote(l, Some(key), None, None, remote(1, 2, 10_000), 0)
            .unwrap(),
    );
    let other = queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 3, 10_000), 0)
            .unwrap(),
    );
    assert_eq!(
        e.goodbye(1, 1),
        vec![own, held],
        "its waiter first, then its lease"
    );
    assert_eq!(
        events(&mut e)
            .into_iter()
            .filter(|ev| !matches!(ev, Event::KeyIdle { .. }))
            .collect::<Vec<_>>(),
        vec![
            Event::Ended {
                req: own,
                held: false
            },
            Event::Ended {
                req: held,
                held: true
            },
            Event::Granted {
                req: other,
                fence: e.fence_of(other).unwrap()
            },
        ],
        "the key went past the leaving connection's own waiter, to the next connection"
    );
    e.check();
}

#[test]
fn issue_17_a_remote_request_is_found_by_its_request_and_lease_ids_while_it_lives() {
    let (mut e, l) = opened();
    let (held, key, _) = granted(
        e.hold_remote(l, None, None, None, remote(1, 1, 10_000), 0)
            .unwrap(),
    );
    let waiting = queued(
        e.hold_remote(l, Some(key), None, None, remote(2, 2, 10_000), 0)
            .unwrap(),
    );
    assert_eq!(e.remote_request(1), Some(held));
    assert_eq!(e.remote_lease(1_001), Some(held));
    assert_eq!(e.remote_request(2), Some(waiting));
    assert_eq!(e.remote_lease(1_002), Some(waiting));
    // Neither id names the other kind, and an unknown id names nothing.
    assert_eq!(e.remote_lease(1), None);
    assert_eq!(e.remote_request(1_001), None);
    assert_eq!(e.remote_request(3), None);
    // A waiter away (its connection dropped) is still found: it may be asked again.
    e.connection_closed(2, 1);
    assert_eq!(e.remote_request(2), Some(waiting));
    // Released, the lease is gone; the waiter away, cancelled, leaves the line and is gone too.
    assert!(e.release_lease(1_001, 2).unwrap());
    events(&mut e);
    assert_eq!(e.remote_request(1), None);
    assert_eq!(e.remote_lease(1_001), None);
    assert_eq!(e.cancel_request(2, 3).unwrap(), Cancelled::Left);
    assert_eq!(e.remote_request(2), None);
    assert_eq!(e.remote_lease(1_002), None);
    e.check();
}

//! Pools (issue #16): the contracts POOL-01..04, driven by a test clock and a storage of strings kept
//! in a map (what a host's `get`/`set` storage is). Time is whatever the test passes in; the wall
//! clock is passed in when a store opens its pools.

mod common;

use std::collections::HashMap;

use common::{events, opened};
use holdfast_engine::pool::{MAX_VALUE_BYTES, SLOTS, SNAPSHOT_KEY, TOMBSTONE_MS};
use holdfast_engine::{Cancelled, Claim, Confirm, Engine, Event, Failure, Id, PoolId, PoolLoad};

type Disk = HashMap<String, String>;

/// Takes the pools' write, stores it and acknowledges it; answers the events that follow.
fn flush(e: &mut Engine, disk: &mut Disk, now: u64) -> Vec<Event> {
    let w = e.poll_pool_write().expect("a write is wanted");
    disk.extend(w.sets);
    e.pool_written(w.seq, now);
    let evs = events(e);
    e.check();
    evs
}

/// A new process on `disk`: its engine clock at `now`, the wall clock at `wall`.
fn reopen(disk: &Disk, now: u64, wall: u64) -> Engine {
    let mut e = opened();
    let mut load = PoolLoad::new();
    while let Some(key) = load.next_key() {
        load.feed(disk.get(&key).map(String::as_str)).unwrap();
    }
    e.open_pools(load, now, wall).unwrap();
    e.check();
    e
}

fn writing(c: Claim) -> Id {
    match c {
        Claim::Writing { req } => req,
        other => panic!("expected a claim that took its units, got {other:?}"),
    }
}

fn queued(c: Claim) -> Id {
    match c {
        Claim::Queued { req } => req,
        other => panic!("expected a claim waiting in line, got {other:?}"),
    }
}

fn claim(e: &mut Engine, p: PoolId, n: u64, id: &str, now: u64) -> Claim {
    let c = e.claim(p, n, id, true, Some(0), None, now).unwrap();
    e.check();
    c
}

#[test]
fn pool_01_remaining_never_goes_below_zero_nor_above_capacity() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 3).unwrap();
    let a = writing(claim(&mut e, p, 2, "a", 0));
    assert_eq!(
        claim(&mut e, p, 2, "b", 0),
        Claim::Refused { remaining: 1 },
        "2 do not fit in the 1 left"
    );
    let c = writing(claim(&mut e, p, 1, "c", 0));
    assert_eq!(e.pool_remaining(p, 0).unwrap(), 0);
    assert_eq!(
        flush(&mut e, &mut disk, 1),
        vec![
            Event::Claimed {
                req: a,
                remaining: 1
            },
            Event::Claimed {
                req: c,
                remaining: 0
            }
        ]
    );
    assert!(e.release_claim(p, "a", 2).unwrap().is_some());
    assert!(
        e.release_claim(p, "a", 2).unwrap().is_none(),
        "released once"
    );
    assert!(e.release_claim(p, "nobody", 2).unwrap().is_none());
    assert!(e.release_claim(p, "c", 2).unwrap().is_some());
    assert_eq!(
        e.pool_remaining(p, 2).unwrap(),
        3,
        "never above the capacity"
    );
    e.check();
    let err = e.claim(p, 4, "d", true, None, None, 3).unwrap_err();
    assert_eq!(err.code(), "invalid");
    assert!(
        err.to_string().contains("1 to 3") && err.to_string().contains('4'),
        "{err}"
    );
    assert_eq!(
        e.claim(p, 0, "d", true, None, None, 3).unwrap_err().code(),
        "invalid"
    );
}

#[test]
fn pool_01_capacity_is_fixed_by_its_first_use_and_resized_never_below_what_is_claimed() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("licences", 50).unwrap();
    assert_eq!(e.pool("licences", 50).unwrap(), p);
    let err = e.pool("licences", 40).unwrap_err();
    assert_eq!(err.code(), "invalid");
    assert!(
        err.to_string().contains("40") && err.to_string().contains("50"),
        "names both: {err}"
    );
    for bad in [0, 1 << 53] {
        assert_eq!(e.pool("other", bad).unwrap_err().code(), "invalid");
    }
    writing(claim(&mut e, p, 30, "big", 0));
    flush(&mut e, &mut disk, 0);
    let err = e.resize_pool(p, 29, 1).unwrap_err();
    assert!(
        err.to_string().contains("29") && err.to_string().contains("30"),
        "{err}"
    );
    assert_eq!(e.resize_pool(p, 50, 1).unwrap(), None, "nothing changes");
    let r = e.resize_pool(p, 30, 1).unwrap().unwrap();
    assert_eq!(e.pool_remaining(p, 1).unwrap(), 0);
    assert_eq!(flush(&mut e, &mut disk, 2), vec![Event::Durable { req: r }]);
    // A resize up serves the line.
    let w5 = queued(e.claim(p, 5, "w5", true, None, None, 3).unwrap());
    e.resize_pool(p, 40, 4).unwrap();
    assert_eq!(
        events(&mut e),
        vec![],
        "w5 took its units; its answer waits for the write"
    );
    assert_eq!(e.pool_remaining(p, 4).unwrap(), 5);
    e.check();
    let evs = flush(&mut e, &mut disk, 5);
    assert!(
        evs.contains(&Event::Claimed {
            req: w5,
            remaining: 5
        }),
        "{evs:?}"
    );
    // A resize down sends away a waiter that can never fit; the line goes on behind it.
    assert!(e.release_claim(p, "big", 6).unwrap().is_some()); // 5 claimed of 40
    let w38 = queued(e.claim(p, 38, "w38", true, None, None, 7).unwrap());
    let w1 = queued(e.claim(p, 1, "w1", true, None, None, 7).unwrap());
    e.check();
    e.resize_pool(p, 42, 8).unwrap(); // 37 left: w38 still waits, and w1 behind it (head-of-line)
    assert_eq!(events(&mut e), vec![]);
    assert_eq!(e.pool_remaining(p, 8).unwrap(), 37);
    e.resize_pool(p, 30, 9).unwrap();
    assert_eq!(
        events(&mut e),
        vec![Event::NotClaimed {
            req: w38,
            remaining: 25
        }],
        "38 can never fit in 30"
    );
    e.check();
    assert_eq!(e.pool_remaining(p, 9).unwrap(), 24, "w1 took its unit");
    let evs = flush(&mut e, &mut disk, 10);
    assert!(
        evs.contains(&Event::Claimed {
            req: w1,
            remaining: 24
        }),
        "{evs:?}"
    );
}

#[test]
fn pool_02_no_claim_is_answered_before_the_write_that_keeps_it_is_acknowledged() {
    let mut e = opened();
    let p = e.pool("seats", 10).unwrap();
    let a = writing(claim(&mut e, p, 1, "a", 0));
    assert_eq!(events(&mut e), vec![], "not answered before its write");
    let w = e.poll_pool_write().unwrap();
    assert!(e.pool_write_pending());
    assert_eq!(e.poll_pool_write(), None, "one write under way at a time");
    e.advance(5);
    assert_eq!(
        events(&mut e),
        vec![],
        "not answered while its write is under way"
    );
    e.pool_written(w.seq, 6);
    assert_eq!(
        events(&mut e),
        vec![Event::Claimed {
            req: a,
            remaining: 9
        }]
    );
    assert!(!e.pool_write_pending() && !e.pool_write_wanted());
    e.check();
}

#[test]
fn pool_02_group_commit_one_write_keeps_every_claim_made_before_it_was_taken() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 1_000).unwrap();
    let first: Vec<Id> = (0..100)
        .map(|i| writing(claim(&mut e, p, 1, &format!("a{i}"), 0)))
        .collect();
    let w = e.poll_pool_write().unwrap();
    // Claims made while it is under way wait for the next write.
    let second: Vec<Id> = (0..50)
        .map(|i| writing(claim(&mut e, p, 2, &format!("b{i}"), 1)))
        .collect();
    assert_eq!(e.poll_pool_write(), None);
    disk.extend(w.sets);
    e.pool_written(w.seq, 2);
    let evs = events(&mut e);
    assert_eq!(
        evs.len(),
        100,
        "one write answered the 100 claims of its turn"
    );
    assert!(evs
        .iter()
        .zip(&first)
        .all(|(ev, &req)| matches!(*ev, Event::Claimed { req: r, .. } if r == req)));
    let evs = flush(&mut e, &mut disk, 3);
    assert_eq!(evs.len(), 50, "and the next write the 50 after it");
    assert!(matches!(evs[0], Event::Claimed { req, remaining: 898 } if req == second[0]));
    assert_eq!(e.poll_pool_write(), None, "nothing changed since");
}

#[test]
fn pool_02_counts_and_open_claims_survive_a_restart() {
    let mut e = opened();
    let mut disk = Disk::new();
    let seats = e.pool("seats", 180).unwrap();
    let lic = e.pool("licences", 5).unwrap();
    writing(claim(&mut e, seats, 2, "order-1", 0));
    writing(claim(&mut e, seats, 3, "order-2", 0));
    writing(claim(&mut e, lic, 5, "all", 0));
    flush(&mut e, &mut disk, 1); // a snapshot (the first write)
    assert!(e.release_claim(seats, "order-1", 2).unwrap().is_some());
    e.claim(seats, 1, "cart", true, Some(0), Some(60_000), 2)
        .unwrap();
    let w = e.poll_pool_write().unwrap();
    assert!(!w.snapshot, "a segment of the changes");
    disk.extend(w.sets);
    e.pool_written(w.seq, 3);
    // A change not yet written is lost with the process (kill -9); the written ones are not.
    writing(claim(&mut e, seats, 100, "lost", 4));
    drop(e);
    // The next process's clock starts anywhere; the wall clock goes on: 10 s passed.
    let mut e = reopen(&disk, 7, 10_000);
    let seats = e.find_pool("seats").unwrap();
    assert_eq!(e.pool_remaining(seats, 7).unwrap(), 180 - 3 - 1);
    assert_eq!(e.pool_remaining(lic, 7).unwrap(), 0);
    assert_eq!(
        e.pool("seats", 200).unwrap_err().code(),
        "invalid",
        "the capacity read back is the pool's"
    );
    assert_eq!(
        claim(&mut e, seats, 3, "order-2", 8),
        Claim::Known {
            remaining: 175,
            open: true
        }
    );
    assert_eq!(
        claim(&mut e, seats, 2, "order-1", 8),
        Claim::Known {
            remaining: 178,
            open: false
        },
        "a released id is remembered"
    );
    assert!(e.release_claim(seats, "order-2", 9).unwrap().is_some());
    assert_eq!(e.pool_remaining(seats, 9).unwrap(), 179);
    e.check();
}

#[test]
fn pool_02_a_ttl_and_a_tombstone_go_on_by_the_wall_clock_across_a_restart() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 10).unwrap();
    e.claim(p, 4, "cart", true, Some(0), Some(60_000), 0)
        .unwrap();
    flush(&mut e, &mut disk, 0);
    drop(e);
    // Opened 50 s (wall) after the claim, on a clock that starts again at 0.
    let mut e = reopen(&disk, 0, 50_000);
    let p = e.find_pool("seats").unwrap();
    assert_eq!(
        e.pool_remaining(p, 9_999).unwrap(),
        6,
        "9.999 s of its ttl left"
    );
    assert_eq!(e.next_deadline(), Some(10_000));
    assert_eq!(
        e.pool_remaining(p, 10_000).unwrap(),
        10,
        "its units came back at its ttl"
    );
    // Its id is still known, for 24 hours after the claim.
    assert_eq!(
        claim(&mut e, p, 4, "cart", 10_000),
        Claim::Known {
            remaining: 6,
            open: false
        }
    );
    flush(&mut e, &mut disk, 10_000);
    drop(e);
    let mut e = reopen(&disk, 0, TOMBSTONE_MS - 1);
    let p = e.find_pool("seats").unwrap();
    assert!(matches!(
        claim(&mut e, p, 4, "cart", 0),
        Claim::Known { .. }
    ));
    assert_eq!(e.next_deadline(), Some(1));
    e.advance(1);
    assert!(
        matches!(claim(&mut e, p, 4, "cart", 1), Claim::Writing { .. }),
        "24 hours after the claim, its id is new again"
    );
}

#[test]
fn pool_02_a_failed_write_takes_its_claims_back_and_the_next_write_is_a_snapshot() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 3).unwrap();
    writing(claim(&mut e, p, 1, "kept", 0));
    flush(&mut e, &mut disk, 0);
    let a = writing(claim(&mut e, p, 2, "a", 1));
    let waiter = queued(e.claim(p, 2, "w", true, None, None, 1).unwrap());
    let w = e.poll_pool_write().unwrap();
    assert!(!w.snapshot);
    e.pool_write_failed(w.seq, 2);
    assert_eq!(
        events(&mut e),
        vec![Event::PoolFailed {
            req: a,
            why: Failure::Storage
        }]
    );
    e.check();
    // Its units came back, and the waiter took them: it waits for the next write, a snapshot.
    assert_eq!(e.pool_remaining(p, 2).unwrap(), 0);
    let w = e.poll_pool_write().unwrap();
    assert!(w.snapshot);
    disk.extend(w.sets);
    e.pool_written(w.seq, 3);
    assert_eq!(
        events(&mut e),
        vec![Event::Claimed {
            req: waiter,
            remaining: 0
        }]
    );
    let mut again = reopen(&disk, 0, 0);
    let p = again.find_pool("seats").unwrap();
    assert_eq!(again.pool_remaining(p, 0).unwrap(), 0);
    assert!(
        matches!(claim(&mut again, p, 2, "a", 0), Claim::Refused { .. }),
        "the failed claim is not kept: asked again it is a new claim (refused: no room)"
    );
}

#[test]
fn pool_02_a_write_is_awaited_while_a_request_waits_for_it_not_for_a_snapshot_owed_alone() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 3).unwrap();
    flush(&mut e, &mut disk, 0);
    assert!(!e.pool_write_awaited());
    let a = writing(claim(&mut e, p, 1, "a", 0));
    assert!(
        e.pool_write_awaited(),
        "the claim's answer waits for the next write"
    );
    let w = e.poll_pool_write().unwrap();
    assert!(
        !e.pool_write_awaited(),
        "taken: it waits for the write under way"
    );
    e.pool_write_failed(w.seq, 1);
    assert_eq!(
        events(&mut e),
        vec![Event::PoolFailed {
            req: a,
            why: Failure::Storage
        }]
    );
    // A snapshot is owed (the failed write may have landed), and nobody waits for it.
    assert!(e.pool_write_wanted() && !e.pool_write_awaited());
    let b = writing(claim(&mut e, p, 1, "b", 1));
    assert!(
        e.pool_write_awaited(),
        "a claim made before the retry waits for it"
    );
    assert_eq!(e.cancel_claim(b, 2).unwrap(), Cancelled::Released);
    assert!(
        !e.pool_write_awaited(),
        "a claim given up waits for nothing"
    );
    e.check();
}

#[test]
fn pool_02_segments_are_read_back_in_order_and_a_snapshot_comes_before_a_slot_is_reused() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 1_000_000).unwrap();
    let mut snapshots = 0;
    for i in 0..(3 * SLOTS) {
        writing(claim(&mut e, p, 1, &format!("c{i}"), i));
        if i % 3 == 0 {
            e.release_claim(p, &format!("c{}", i / 2), i).unwrap();
        }
        let w = e.poll_pool_write().unwrap();
        snapshots += usize::from(w.snapshot);
        disk.extend(w.sets);
        e.pool_written(w.seq, i);
        events(&mut e);
        let mut back = reopen(&disk, i, i);
        let q = back.find_pool("seats").unwrap();
        assert_eq!(
            back.pool_remaining(q, i).unwrap(),
            e.pool_remaining(p, i).unwrap(),
            "after write {i}"
        );
        assert_eq!(back.inspect_pools().unwrap(), e.inspect_pools().unwrap());
    }
    assert!((3..=5).contains(&snapshots), "{snapshots} snapshots");
}

#[test]
fn pool_03_an_id_asked_again_answers_the_first_claim_and_never_takes_units_twice() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 10).unwrap();
    let first = writing(claim(&mut e, p, 2, "order-7", 0));
    assert_eq!(
        claim(&mut e, p, 2, "order-7", 0),
        Claim::Joined { req: first },
        "while its write is under way"
    );
    flush(&mut e, &mut disk, 1);
    for _ in 0..3 {
        assert_eq!(
            claim(&mut e, p, 2, "order-7", 2),
            Claim::Known {
                remaining: 8,
                open: true
            }
        );
    }
    assert_eq!(e.pool_remaining(p, 2).unwrap(), 8, "taken once");
    let err = e.claim(p, 3, "order-7", true, None, None, 2).unwrap_err();
    assert_eq!(err.code(), "invalid");
    assert!(
        err.to_string().contains("order-7")
            && err.to_string().contains('2')
            && err.to_string().contains('3'),
        "{err}"
    );
    // An id waiting in line joins the waiting claim.
    writing(claim(&mut e, p, 8, "rest", 3));
    let w = queued(e.claim(p, 5, "later", true, None, None, 3).unwrap());
    assert_eq!(
        e.claim(p, 5, "later", true, None, None, 3).unwrap(),
        Claim::Joined { req: w }
    );
    e.check();
    // Released, it is remembered 24 hours after the claim: asked again, the first outcome.
    assert!(!e.claim_handed_back(p, "order-7"), "it holds its units");
    assert!(e.claim_open(p, "order-7"));
    assert!(e.release_claim(p, "order-7", 4).unwrap().is_some());
    assert!(!e.claim_open(p, "order-7"), "released");
    assert!(!e.claim_open(p, "never"));
    assert!(
        e.claim_handed_back(p, "order-7"),
        "a release asked again learns it"
    );
    assert!(!e.claim_handed_back(p, "never"));
    assert_eq!(
        claim(&mut e, p, 2, "order-7", 5),
        Claim::Known {
            remaining: 8,
            open: false
        }
    );
    e.advance(TOMBSTONE_MS - 1);
    assert!(matches!(
        claim(&mut e, p, 2, "order-7", TOMBSTONE_MS - 1),
        Claim::Known { .. }
    ));
    e.advance(TOMBSTONE_MS);
    assert!(
        !matches!(
            claim(&mut e, p, 2, "order-7", TOMBSTONE_MS),
            Claim::Known { .. }
        ),
        "forgotten 24 hours after the claim"
    );
    // A claim that took nothing leaves nothing behind.
    let mut e = opened();
    let p = e.pool("seats", 1).unwrap();
    writing(claim(&mut e, p, 1, "x", 0));
    assert_eq!(claim(&mut e, p, 1, "y", 0), Claim::Refused { remaining: 0 });
    e.release_claim(p, "x", 1).unwrap();
    assert!(matches!(claim(&mut e, p, 1, "y", 1), Claim::Writing { .. }));
}

#[test]
fn pool_03_an_id_asked_again_after_a_resize_below_its_claim_answers_the_first_outcome() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 10).unwrap();
    writing(claim(&mut e, p, 5, "order-5", 0));
    flush(&mut e, &mut disk, 1);
    e.release_claim(p, "order-5", 2).unwrap().unwrap();
    e.resize_pool(p, 3, 2).unwrap().unwrap();
    flush(&mut e, &mut disk, 3);
    assert_eq!(
        claim(&mut e, p, 5, "order-5", 4),
        Claim::Known {
            remaining: 5,
            open: false
        },
        "the first outcome, not a claim larger than the pool"
    );
    let err = e.claim(p, 4, "order-5", true, None, None, 4).unwrap_err();
    assert!(err.to_string().contains("took 5"), "{err}");
    let err = e.claim(p, 5, "new", true, None, None, 4).unwrap_err();
    assert!(err.to_string().contains("1 to 3 units"), "{err}");
    assert_eq!(e.pool_remaining(p, 4).unwrap(), 3);
}

#[test]
fn pool_03_an_id_not_remembered_is_forgotten_once_released() {
    let mut e = opened();
    let p = e.pool("seats", 1).unwrap();
    writing(
        e.claim(p, 1, "drawn-by-host", false, Some(0), None, 0)
            .unwrap(),
    );
    assert!(e.release_claim(p, "drawn-by-host", 1).unwrap().is_some());
    assert_eq!(e.footprint().claims, 0);
    e.check();
}

#[test]
fn pool_04_waiting_claims_are_served_in_order_and_the_head_is_not_overtaken() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 5).unwrap();
    writing(claim(&mut e, p, 4, "held", 0));
    flush(&mut e, &mut disk, 0);
    let big = queued(e.claim(p, 3, "big", true, Some(10_000), None, 1).unwrap());
    let small = queued(e.claim(p, 1, "small", true, Some(10_000), None, 2).unwrap());
    assert_eq!(
        e.pool_remaining(p, 2).unwrap(),
        1,
        "the small one behind the head does not take the unit left"
    );
    assert_eq!(
        claim(&mut e, p, 1, "try", 2),
        Claim::Refused { remaining: 1 },
        "nor does a claim that would not wait: nobody barges"
    );
    e.check();
    let released = e.release_claim(p, "held", 3).unwrap().unwrap();
    assert_eq!(
        e.pool_remaining(p, 3).unwrap(),
        1,
        "both took theirs, in order"
    );
    let evs = flush(&mut e, &mut disk, 4);
    assert_eq!(
        evs,
        vec![
            Event::Claimed {
                req: big,
                remaining: 2
            },
            Event::Claimed {
                req: small,
                remaining: 1
            },
            Event::Durable { req: released }
        ],
        "the release is answered once written too"
    );
}

#[test]
fn pool_04_every_ending_of_a_wait_leaves_the_line() {
    let mut e = opened();
    let p = e.pool("seats", 2).unwrap();
    let held = writing(claim(&mut e, p, 2, "held", 0));
    let timed = queued(e.claim(p, 1, "timed", true, Some(100), None, 0).unwrap());
    let cancelled = queued(e.claim(p, 2, "cancelled", true, None, None, 0).unwrap());
    let behind = queued(e.claim(p, 1, "behind", true, None, None, 0).unwrap());
    let closed = queued(e.claim(p, 2, "closed", true, None, None, 0).unwrap());
    assert_eq!(e.next_deadline(), Some(100));
    e.advance(100);
    assert_eq!(
        events(&mut e),
        vec![Event::NotClaimed {
            req: timed,
            remaining: 0
        }],
        "its wait ran out"
    );
    e.check();
    assert_eq!(e.cancel_claim(cancelled, 101).unwrap(), Cancelled::Left);
    assert_eq!(e.cancel_claim(cancelled, 101).unwrap(), Cancelled::Unknown);
    e.check();
    assert!(e.inspect_pools().unwrap()[0].waiting == 2);
    let released = e.release_claim(p, "held", 102).unwrap().unwrap();
    // `behind` (1) took its unit; `closed` (2) waits for 2 with 1 left.
    e.check();
    e.close();
    let mut ended = vec![held, behind, closed];
    ended.sort();
    // `held` was still being written: undone, it took nothing, and its release acted on nothing.
    let mut want = vec![Event::NoClaim { req: released }];
    want.extend(ended.into_iter().map(|req| Event::PoolEnded { req }));
    assert_eq!(
        events(&mut e),
        want,
        "and so does every claim whose write was not answered"
    );
    let w = e
        .poll_pool_write()
        .expect("the undos are written after the close");
    e.pool_written(w.seq, 103);
    assert_eq!(events(&mut e), vec![]);
    assert_eq!(
        e.claim(p, 1, "z", true, None, None, 103)
            .unwrap_err()
            .code(),
        "closed"
    );
}

#[test]
fn pool_04_a_joined_claim_waits_as_long_as_its_longest_ask() {
    let mut e = opened();
    let p = e.pool("seats", 1).unwrap();
    writing(claim(&mut e, p, 1, "held", 0));
    let w = queued(e.claim(p, 1, "w", true, Some(100), None, 0).unwrap());
    assert!(e.claim_waits(w));
    // A shorter wait asked again leaves the deadline as it is; a longer one moves it.
    for (wait, now) in [(Some(10), 5), (Some(300), 50), (Some(100), 60)] {
        assert_eq!(
            e.claim(p, 1, "w", true, wait, None, now).unwrap(),
            Claim::Joined { req: w }
        );
        e.check();
    }
    assert_eq!(e.next_deadline(), Some(350));
    e.advance(349);
    assert_eq!(
        events(&mut e),
        vec![],
        "still in line past the first ask's wait"
    );
    e.advance(350);
    assert_eq!(
        events(&mut e),
        vec![Event::NotClaimed {
            req: w,
            remaining: 0
        }]
    );
    assert!(!e.claim_waits(w));
    e.check();
    // An ask without a limit takes the limit away.
    let v = queued(e.claim(p, 1, "v", true, Some(100), None, 400).unwrap());
    assert_eq!(
        e.claim(p, 1, "v", true, None, None, 450).unwrap(),
        Claim::Joined { req: v }
    );
    e.advance(10_000);
    assert_eq!(events(&mut e), vec![]);
    assert_eq!(e.inspect_pools().unwrap()[0].waiting, 1);
    e.check();
}

#[test]
fn pool_03_a_claim_withdrawn_after_its_answer_is_undone_and_its_id_forgotten() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 2).unwrap();
    let req = writing(claim(&mut e, p, 2, "x", 0));
    let w = queued(e.claim(p, 1, "next", true, None, None, 0).unwrap());
    assert_eq!(
        flush(&mut e, &mut disk, 1),
        vec![Event::Claimed { req, remaining: 0 }]
    );
    let undone = e.withdraw_claim(p, "x", 2).unwrap().expect("an open claim");
    e.check();
    assert_eq!(
        flush(&mut e, &mut disk, 3),
        vec![
            Event::Claimed {
                req: w,
                remaining: 1
            },
            Event::Durable { req: undone }
        ],
        "its units went to the next in line"
    );
    assert_eq!(e.withdraw_claim(p, "x", 4).unwrap(), None);
    assert!(!e.claim_handed_back(p, "x"), "no tombstone");
    // Read back, it never was; asked again, its id is a new claim.
    let mut back = reopen(&disk, 5, 5);
    let q = back.find_pool("seats").unwrap();
    assert_eq!(back.pool_remaining(q, 5).unwrap(), 1);
    assert!(matches!(
        claim(&mut back, q, 1, "x", 5),
        Claim::Writing { .. }
    ));
}

#[test]
fn pool_04_a_claim_cancelled_before_its_write_is_answered_is_undone() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 2).unwrap();
    // `b`'s claim is written (and acknowledged) before it is cancelled: the undo is in the log.
    let b = writing(claim(&mut e, p, 1, "b", 0));
    let w = e.poll_pool_write().unwrap();
    disk.extend(w.sets);
    assert_eq!(e.cancel_claim(b, 0).unwrap(), Cancelled::Released);
    e.pool_written(w.seq, 0);
    assert_eq!(events(&mut e), vec![], "b is not answered");
    flush(&mut e, &mut disk, 0);
    assert!(
        matches!(claim(&mut e, p, 1, "b", 0), Claim::Writing { .. }),
        "asked again, b is a new claim: nobody was told of the first"
    );
    let again = match claim(&mut e, p, 1, "b", 0) {
        Claim::Joined { req } => req,
        other => panic!("{other:?}"),
    };
    assert_eq!(e.cancel_claim(again, 0).unwrap(), Cancelled::Released);
    flush(&mut e, &mut disk, 0);
    let mut back = reopen(&disk, 0, 0);
    let q = back.find_pool("seats").unwrap();
    assert!(
        matches!(claim(&mut back, q, 1, "b", 0), Claim::Writing { .. }),
        "read back, b was never claimed"
    );
    let a = writing(claim(&mut e, p, 2, "a", 0));
    let w = queued(e.claim(p, 1, "w", true, None, None, 0).unwrap());
    assert_eq!(e.cancel_claim(a, 1).unwrap(), Cancelled::Released);
    assert_eq!(e.pool_remaining(p, 1).unwrap(), 1, "w took one of the two");
    let evs = flush(&mut e, &mut disk, 2);
    assert_eq!(
        evs,
        vec![Event::Claimed {
            req: w,
            remaining: 1
        }],
        "a is not answered"
    );
}

#[test]
fn pool_02_a_claim_ended_by_the_close_before_its_write_was_answered_keeps_no_units() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 10).unwrap();
    writing(claim(&mut e, p, 1, "kept", 0));
    flush(&mut e, &mut disk, 0);
    // `a`'s write is under way at the close (it will land); `b`'s claim waits for the next write.
    let a = writing(claim(&mut e, p, 4, "a", 1));
    let w = e.poll_pool_write().unwrap();
    let b = writing(claim(&mut e, p, 5, "b", 1));
    assert_eq!(e.pool_remaining(p, 1).unwrap(), 0);
    e.close();
    e.check();
    assert_eq!(
        events(&mut e),
        vec![Event::PoolEnded { req: a }, Event::PoolEnded { req: b }]
    );
    assert_eq!(
        e.footprint().claims,
        1,
        "only `kept` is kept: a and b took nothing"
    );
    // The host waits for the write under way (it landed, with `a` in it), then makes the last one.
    disk.extend(w.sets);
    e.pool_written(w.seq, 2);
    assert_eq!(events(&mut e), vec![], "nobody is answered twice");
    let last = e
        .poll_pool_write()
        .expect("the undos are written after the close");
    disk.extend(last.sets);
    e.pool_written(last.seq, 2);
    e.check();
    let mut back = reopen(&disk, 0, 0);
    let q = back.find_pool("seats").unwrap();
    assert_eq!(
        back.pool_remaining(q, 0).unwrap(),
        9,
        "read back, only `kept` holds units (before the fix 0: the 4 of `a` and 5 of `b` stayed taken)"
    );
    assert!(matches!(
        claim(&mut back, q, 4, "a", 0),
        Claim::Writing { .. }
    ));
    assert!(
        matches!(
            claim(&mut back, q, 1, "kept", 0),
            Claim::Known { open: true, .. }
        ),
        "an answered claim stays"
    );
}

#[test]
fn pool_02_a_release_confirm_or_resize_under_way_at_the_close_is_answered_by_its_write() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 10).unwrap();
    writing(claim(&mut e, p, 2, "gone", 0));
    writing(
        e.claim(p, 3, "bought", true, Some(0), Some(1_000), 0)
            .unwrap(),
    );
    writing(claim(&mut e, p, 1, "later", 0));
    flush(&mut e, &mut disk, 0);
    // A release, a confirm and a resize in the write under way; a release for the next write.
    let released = e.release_claim(p, "gone", 1).unwrap().unwrap();
    let Confirm::Writing { req: confirmed } = e.confirm_claim(p, "bought", 1).unwrap() else {
        panic!("a confirm to write")
    };
    let resized = e.resize_pool(p, 20, 1).unwrap().unwrap();
    let w = e.poll_pool_write().unwrap();
    let next = e.release_claim(p, "later", 1).unwrap().unwrap();
    e.close();
    e.check();
    // Before the fix: all four ended PoolEnded (`closed`), though storage kept them.
    assert_eq!(
        events(&mut e),
        vec![],
        "none is ended: each waits for its write"
    );
    disk.extend(w.sets);
    e.pool_written(w.seq, 2);
    assert_eq!(
        events(&mut e),
        vec![
            Event::Durable { req: released },
            Event::Durable { req: confirmed },
            Event::Durable { req: resized },
        ]
    );
    let last = e.poll_pool_write().expect("the host's last write");
    e.pool_write_failed(last.seq, 2);
    assert_eq!(
        events(&mut e),
        vec![Event::PoolFailed {
            req: next,
            why: Failure::Storage
        }],
        "a write that failed answers so"
    );
    e.check();
    let mut back = reopen(&disk, 3, 3);
    let q = back.find_pool("seats").unwrap();
    assert_eq!(back.pool_info(q).unwrap().1, 20, "the resize was kept");
    assert_eq!(
        back.pool_remaining(q, 2_000).unwrap(),
        16,
        "bought's 3 outlived its ttl, confirmed; later holds 1"
    );
    assert!(
        matches!(
            claim(&mut back, q, 2, "gone", 2_000),
            Claim::Known { open: false, .. }
        ),
        "gone was released"
    );
}

#[test]
fn a_ttl_claim_comes_back_unless_confirmed_and_a_confirm_is_answered_once_written() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 10).unwrap();
    e.claim(p, 3, "abandoned", true, Some(0), Some(1_000), 0)
        .unwrap();
    e.claim(p, 2, "bought", true, Some(0), Some(1_000), 0)
        .unwrap();
    flush(&mut e, &mut disk, 0);
    let Confirm::Writing { req } = e.confirm_claim(p, "bought", 500).unwrap() else {
        panic!("a confirm of a ttl claim is written")
    };
    assert_eq!(e.confirm_claim(p, "bought", 500).unwrap(), Confirm::Done);
    assert_eq!(flush(&mut e, &mut disk, 600), vec![Event::Durable { req }]);
    e.advance(1_000);
    assert_eq!(
        e.pool_remaining(p, 1_000).unwrap(),
        8,
        "the abandoned claim's 3 came back"
    );
    assert_eq!(
        e.confirm_claim(p, "abandoned", 1_001).unwrap(),
        Confirm::Gone
    );
    assert!(e.release_claim(p, "abandoned", 1_001).unwrap().is_none());
    e.check();
    let mut back = reopen(
        &{
            flush(&mut e, &mut disk, 1_002);
            disk
        },
        0,
        0,
    );
    let q = back.find_pool("seats").unwrap();
    assert_eq!(
        back.pool_remaining(q, 5_000_000).unwrap(),
        8,
        "confirmed for good"
    );
}

#[test]
fn a_store_keeps_at_most_max_pools_pools() {
    let mut e = opened();
    for i in 0..holdfast_engine::bounds::MAX_POOLS {
        e.pool(&format!("p{i}"), 1).unwrap();
    }
    let err = e.pool("one-more", 1).unwrap_err();
    assert_eq!(err.code(), "limit");
    assert!(err.to_string().contains("100000"), "{err}");
    assert!(e.pool("p7", 1).is_ok(), "a pool it has is still named");
}

// ---- #16 part 1: no value longer than storage takes (chunked snapshots) --------------------------

/// A uuid-like claim id of 36 characters.
fn uuid(i: usize) -> String {
    format!("{i:08x}-0000-4000-8000-{:012x}", i * 7919)
}

/// Every value of write `w` is within the bound (60 KiB: under Deno KV's 64 KiB and a Durable
/// Object's 128 KiB); answers them.
fn bounded(w: &holdfast_engine::PoolWrite) -> &[(String, String)] {
    let bound = MAX_VALUE_BYTES.min(60 * 1024);
    for (key, value) in &w.sets {
        assert!(
            value.len() <= bound,
            "write {} sets {key} to {} bytes, over {bound}",
            w.seq,
            value.len()
        );
    }
    &w.sets
}

/// Takes the pools' write, checks its values' lengths, stores and acknowledges it.
fn flush_bounded(e: &mut Engine, disk: &mut Disk, now: u64) -> holdfast_engine::PoolWrite {
    let w = e.poll_pool_write().expect("a write is wanted");
    disk.extend(bounded(&w).iter().cloned());
    e.pool_written(w.seq, now);
    events(e);
    e.check();
    w
}

/// The claims (pool, id, n) asked of a store: the same answers from `a` and `b` (each id's first
/// outcome and whether it is open, POOL-03) and the same pools mean they read back the same.
fn same_state(a: &mut Engine, b: &mut Engine, claims: &[(String, String, u64)], now: u64) {
    assert_eq!(a.inspect_pools().unwrap(), b.inspect_pools().unwrap());
    for (pool, id, n) in claims {
        let (pa, pb) = (a.find_pool(pool).unwrap(), b.find_pool(pool).unwrap());
        let got = (
            a.claim(pa, *n, id, true, Some(0), None, now).unwrap(),
            b.claim(pb, *n, id, true, Some(0), None, now).unwrap(),
        );
        assert_eq!(got.0, got.1, "claim {id} of pool {pool}");
        assert!(
            matches!(got.0, Claim::Known { .. }),
            "{id}: {:?} (the probe asks only known ids)",
            got.0
        );
    }
}

/// A store with 20,000 open claims of 36-character ids and as many tombstones, in three pools,
/// made in turns of every size: one turn of 12,000 claims, turns of a few, and turns releasing
/// thousands (released ids stay 24 hours as tombstones), plus ids that escape to three times
/// their length.
fn busy_store(disk: &mut Disk) -> (Engine, Vec<(String, String, u64)>) {
    let mut e = opened();
    let mut known = Vec::new();
    let pools: Vec<_> = (0..3)
        .map(|i| e.pool(&format!("pool-{i}"), 1_000_000_000).unwrap())
        .collect();
    let take = |e: &mut Engine, known: &mut Vec<(String, String, u64)>, count: usize| {
        for _ in 0..count {
            let next = known.len();
            let (p, id) = if next % 1000 == 999 {
                // 128 bytes, each escaped to three.
                let head = format!("{next}/");
                (0, head.clone() + &"%".repeat(128 - head.len()))
            } else {
                (next % 3, uuid(next))
            };
            let n = 1 + (next % 5) as u64;
            writing(e.claim(pools[p], n, &id, true, Some(0), None, 0).unwrap());
            known.push((format!("pool-{p}"), id, n));
        }
    };
    take(&mut e, &mut known, 12_000);
    flush_bounded(&mut e, disk, 0);
    for turn in 0..40 {
        take(&mut e, &mut known, if turn % 2 == 0 { 3 } else { 700 });
        flush_bounded(&mut e, disk, 0);
    }
    // 20,000 released (tombstones), in turns of 5,000: each turn's segment is far over the bound.
    let left = 40_000 - known.len();
    take(&mut e, &mut known, left);
    flush_bounded(&mut e, disk, 0);
    for turn in 0..4 {
        for (pool, id, _) in &known[turn * 5_000..(turn + 1) * 5_000] {
            let p = e.find_pool(pool).unwrap();
            assert!(e.release_claim(p, id, 0).unwrap().is_some());
        }
        flush_bounded(&mut e, disk, 0);
    }
    let fp = e.footprint();
    assert_eq!(
        fp.claims, 40_000,
        "20,000 open claims and 20,000 tombstones"
    );
    (e, known)
}

#[test]
fn issue_16_part_1_no_value_handed_to_the_host_exceeds_the_bound_and_all_reads_back_exactly() {
    let mut disk = Disk::new();
    let (mut e, known) = busy_store(&mut disk);
    let chunks = disk
        .keys()
        .filter(|k| k.starts_with("holdfast.pools.a.") || k.starts_with("holdfast.pools.b."))
        .count();
    assert!(
        chunks >= 2 * 10,
        "the snapshots took chunks in both generations: {chunks}"
    );
    // A snapshot now (as after a failed write) is bounded too.
    let p = e.find_pool("pool-0").unwrap();
    let w = e.poll_pool_write();
    assert!(w.is_none());
    writing(claim(&mut e, p, 1, "fails", 0));
    let w = e.poll_pool_write().unwrap();
    bounded(&w);
    e.pool_write_failed(w.seq, 0);
    events(&mut e);
    let w = flush_bounded(&mut e, &mut disk, 0);
    assert!(w.snapshot && w.sets.len() > 10, "{} sets", w.sets.len());
    let mut back = reopen(&disk, 0, 0);
    same_state(&mut e, &mut back, &known, 0);
}

#[test]
fn issue_16_part_1_a_crash_after_any_prefix_of_a_chunked_snapshot_reads_back_the_state_before() {
    let mut disk = Disk::new();
    let (mut e, known) = busy_store(&mut disk);
    let before = disk.clone();
    // A turn too busy for a segment: a snapshot in chunks, which a crash cuts after each prefix.
    let p = e.find_pool("pool-1").unwrap();
    for (pool, id, _) in &known[20_000..25_000] {
        let q = e.find_pool(pool).unwrap();
        e.release_claim(q, id, 0).unwrap();
    }
    writing(claim(&mut e, p, 7, "after", 0));
    let w = e.poll_pool_write().unwrap();
    assert!(w.snapshot && w.sets.len() > 10, "{} sets", w.sets.len());
    let sets = bounded(&w).to_vec();
    let probe: Vec<_> = known.iter().step_by(97).cloned().collect();
    for cut in (0..sets.len()).step_by(3).chain([sets.len() - 1]) {
        let mut crashed = before.clone();
        crashed.extend(sets[..cut].iter().cloned());
        let (mut a, mut b) = (reopen(&before, 0, 0), reopen(&crashed, 0, 0));
        same_state(&mut a, &mut b, &probe, 0);
    }
    // The write failed after landing whole (an unknown outcome), then the next snapshot (into the
    // same generation: the acknowledged one is never written over) is cut after each prefix: what
    // reads back is the acknowledged state or the landed one, whole, never a mix.
    e.pool_write_failed(w.seq, 0);
    events(&mut e);
    let mut landed = before.clone();
    landed.extend(sets.iter().cloned());
    writing(claim(&mut e, p, 3, "later", 0));
    let w2 = e.poll_pool_write().unwrap();
    assert!(w2.snapshot);
    let sets2 = bounded(&w2).to_vec();
    let mut seen = (false, false);
    for cut in (0..sets2.len()).step_by(3) {
        let mut crashed = landed.clone();
        crashed.extend(sets2[..cut].iter().cloned());
        let mut b = reopen(&crashed, 0, 0);
        let q = b.find_pool("pool-1").unwrap();
        let after = b.claim(q, 7, "after", true, Some(0), None, 0).unwrap();
        let mut a = if matches!(after, Claim::Known { .. }) {
            seen.1 = true;
            reopen(&landed, 0, 0)
        } else {
            seen.0 = true;
            reopen(&before, 0, 0)
        };
        let mut b = reopen(&crashed, 0, 0);
        same_state(&mut a, &mut b, &probe, 0);
    }
    assert_eq!(seen, (true, true), "both outcomes were read back");
    let mut done = landed.clone();
    done.extend(sets2.iter().cloned());
    e.pool_written(w2.seq, 0);
    events(&mut e);
    let mut back = reopen(&done, 0, 0);
    same_state(&mut e, &mut back, &probe, 0);
}

#[test]
fn issue_16_part_1_a_store_written_by_version_1_still_opens() {
    // Version 1's one key (as the code before #16 part 1 wrote it), and a segment after it.
    fn seal(body: &str) -> String {
        let sum = body.bytes().fold(0x811c_9dc5u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        format!("{body}#{sum:08x}")
    }
    let mut disk = Disk::new();
    let wall = 1_700_000_000_000u64;
    disk.insert(
        SNAPSHOT_KEY.into(),
        seal(&format!(
            "holdfast.pools 1 snapshot 5\np seats 10\nc a%20b 2 {wall} - 1 8\nt gone 1 {wall} 7\n"
        )),
    );
    disk.insert(
        "holdfast.pools.6".into(),
        seal(&format!(
            "holdfast.pools 1 log 6\nc seats x 3 {wall} - 1 5\n"
        )),
    );
    let mut e = reopen(&disk, 0, wall);
    let p = e.find_pool("seats").unwrap();
    assert_eq!(e.pool_remaining(p, 0).unwrap(), 5);
    assert_eq!(
        claim(&mut e, p, 1, "gone", 0),
        Claim::Known {
            remaining: 7,
            open: false
        }
    );
    // The next snapshot goes into generation 1: version 1's key stays whole until it is acknowledged.
    e.release_claim(p, "x", 0).unwrap();
    let w = e.poll_pool_write().unwrap();
    assert!(!w.snapshot);
    disk.extend(w.sets);
    e.pool_written(w.seq, 0);
    // A version this store does not know is refused, naming it.
    disk.insert(SNAPSHOT_KEY.into(), seal("holdfast.pools 3 snapshot 9 0\n"));
    let mut load = PoolLoad::new();
    let err = load
        .feed(disk.get(SNAPSHOT_KEY).map(String::as_str))
        .unwrap_err();
    assert!(
        err.contains("version 3") && err.contains(SNAPSHOT_KEY),
        "{err}"
    );
}

#[test]
fn issue_16_part_1_a_store_reopened_after_a_cut_snapshot_never_reads_back_a_mix() {
    let mut disk = Disk::new();
    let (mut e, known) = busy_store(&mut disk);
    let before = disk.clone();
    let probe: Vec<_> = known.iter().step_by(97).cloned().collect();
    // Write X, a snapshot in chunks, lands whole but is answered failed; the next snapshot Y (into
    // the same generation) is cut after its first chunk: X's head is there, its chunk 0 is Y's.
    let p = e.find_pool("pool-2").unwrap();
    for (pool, id, _) in &known[20_000..25_000] {
        let q = e.find_pool(pool).unwrap();
        e.release_claim(q, id, 0).unwrap();
    }
    let x = e.poll_pool_write().unwrap();
    assert!(x.snapshot);
    disk.extend(x.sets.iter().cloned());
    e.pool_write_failed(x.seq, 0);
    writing(claim(&mut e, p, 1, "y", 0));
    let y = e.poll_pool_write().unwrap();
    assert!(y.snapshot && y.sets.len() > 2);
    disk.insert(y.sets[0].0.clone(), y.sets[0].1.clone());
    drop(e);
    // The next process reads the acknowledged state back; its first write is a snapshot of a busy
    // turn, cut after its first chunk (into the generation X's head is in). Numbered as X, that
    // chunk would make X's head look whole again, with a chunk not its own.
    let mut e = reopen(&disk, 0, 0);
    same_state(&mut e, &mut reopen(&before, 0, 0), &probe, 0);
    for (pool, id, _) in &known[30_000..35_000] {
        let q = e.find_pool(pool).unwrap();
        e.release_claim(q, id, 0).unwrap();
    }
    let z = e.poll_pool_write().unwrap();
    assert!(
        z.snapshot && z.seq > y.seq,
        "write {} after {}",
        z.seq,
        y.seq
    );
    disk.insert(z.sets[0].0.clone(), z.sets[0].1.clone());
    let mut back = reopen(&disk, 0, 0);
    same_state(&mut back, &mut reopen(&before, 0, 0), &probe, 0);
}

#[test]
fn pool_02_a_confirm_or_release_of_a_claim_whose_write_failed_acted_on_no_claim() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 10).unwrap();
    flush(&mut e, &mut disk, 0);
    let bought = writing(
        e.claim(p, 3, "bought", true, Some(0), Some(1_000), 0)
            .unwrap(),
    );
    let gone = writing(claim(&mut e, p, 2, "gone", 0));
    // Both claims in storage's hands; by id (another process, say) a confirm and a release.
    let w = e.poll_pool_write().unwrap();
    let Confirm::Writing { req: confirmed } = e.confirm_claim(p, "bought", 1).unwrap() else {
        panic!("a confirm to write")
    };
    let released = e.release_claim(p, "gone", 1).unwrap().unwrap();
    e.pool_write_failed(w.seq, 2);
    e.check();
    // Before the fix the claims failed ("it took nothing") and the confirm and the release were
    // answered Durable by the next write: a confirm of units nobody held, a release `true`.
    assert_eq!(
        events(&mut e),
        vec![
            Event::PoolFailed {
                req: bought,
                why: Failure::Storage
            },
            Event::NoClaim { req: confirmed },
            Event::PoolFailed {
                req: gone,
                why: Failure::Storage
            },
            Event::NoClaim { req: released },
        ]
    );
    assert_eq!(
        flush(&mut e, &mut disk, 3),
        vec![],
        "the snapshot answers nobody"
    );
    assert_eq!(e.pool_remaining(p, 3).unwrap(), 10);
    assert_eq!(e.confirm_claim(p, "bought", 3).unwrap(), Confirm::Gone);
    assert_eq!(e.release_claim(p, "gone", 3).unwrap(), None);
    let back = reopen(&disk, 4, 4);
    assert_eq!(
        back.pool_info(back.find_pool("seats").unwrap()).unwrap().2,
        10
    );
}

#[test]
fn pool_02_a_release_of_a_claim_then_undone_by_its_cancel_or_the_close_acted_on_no_claim() {
    let mut e = opened();
    let mut disk = Disk::new();
    let p = e.pool("seats", 10).unwrap();
    flush(&mut e, &mut disk, 0);
    let cancelled = writing(claim(&mut e, p, 2, "cancelled", 0));
    let closed = writing(
        e.claim(p, 3, "closed", true, Some(0), Some(1_000), 0)
            .unwrap(),
    );
    let w = e.poll_pool_write().unwrap();
    let released = e.release_claim(p, "cancelled", 1).unwrap().unwrap();
    let Confirm::Writing { req: confirmed } = e.confirm_claim(p, "closed", 1).unwrap() else {
        panic!("a confirm to write")
    };
    // Its only asker gives the claim up before its answer: undone, it took nothing.
    assert_eq!(e.cancel_claim(cancelled, 1).unwrap(), Cancelled::Released);
    assert_eq!(events(&mut e), vec![Event::NoClaim { req: released }]);
    e.close();
    e.check();
    assert_eq!(
        events(&mut e),
        vec![
            Event::NoClaim { req: confirmed },
            Event::PoolEnded { req: closed }
        ]
    );
    disk.extend(w.sets);
    e.pool_written(w.seq, 2);
    assert_eq!(events(&mut e), vec![], "answered already");
    let last = e.poll_pool_write().expect("the undos are written");
    disk.extend(last.sets);
    e.pool_written(last.seq, 2);
    assert_eq!(events(&mut e), vec![]);
    let back = reopen(&disk, 3, 3);
    assert_eq!(
        back.pool_info(back.find_pool("seats").unwrap()).unwrap().2,
        10
    );
}

//! Fences lent to the host and keys it granted itself (`Engine::lend_fences`, `reclaim_fences`,
//! `adopt`), driven as the wasm bindings drive them: the host takes fences from its block for the
//! grants it makes itself, and gives back what it did not use before every other call.

mod common;

use common::{events, granted, opened};
use holdfast_engine::{Engine, Event, Hold, HolderView, Id, Kind, ResourceId};

const WAIT: Option<u64> = Some(10_000);

fn lock(engine: &mut Engine) -> ResourceId {
    engine.resource(Kind::Lock, "summaries", 1).unwrap()
}

/// The host's side of lending, as `npm/src/store/store.ts` keeps it in the shared buffer: the next fence of
/// its block and the block's end.
#[derive(Default)]
struct Host {
    block: Option<(u64, u64)>,
}

impl Host {
    /// A grant the host makes itself: the next fence of its block, borrowing one of up to `max`
    /// when it has none left.
    fn local_fence(&mut self, engine: &mut Engine, max: u64) -> Option<u64> {
        if self.block.is_none_or(|(next, end)| next == end) {
            self.reclaim(engine);
            self.block = Some(engine.lend_fences(max)?);
        }
        let (next, end) = self.block.as_mut().unwrap();
        assert!(*next < *end);
        *next += 1;
        Some(*next - 1)
    }

    /// Before every other engine call.
    fn reclaim(&mut self, engine: &mut Engine) {
        if let Some((next, _)) = self.block.take() {
            engine.reclaim_fences(next);
        }
        assert!(!engine.fences_lent());
    }
}

#[test]
fn fences_stay_increasing_in_grant_order_across_host_and_engine_grants() {
    let mut e = opened();
    let l = lock(&mut e);
    let mut host = Host::default();
    let mut order = Vec::new();
    let mut now = 0;
    // A pattern of host grants (each on a key of its own, released at once on the host's side) and
    // engine grants, with blocks of several sizes, some used up, some given back partly used.
    for round in 0..200u64 {
        now += 1;
        for _ in 0..round % 5 {
            order.push(host.local_fence(&mut e, 1 + round % 4).unwrap());
        }
        if round % 3 == 0 {
            host.reclaim(&mut e);
            let (req, key, fence) = granted(e.hold(l, None, WAIT, None, now).unwrap());
            order.push(fence);
            assert!(e.release(req, now).unwrap());
            assert_eq!(events(&mut e), vec![Event::KeyIdle { key }]);
            e.check();
        }
    }
    host.reclaim(&mut e);
    let (_, _, fence) = granted(e.hold(l, None, WAIT, None, now).unwrap());
    order.push(fence);
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "fences out of grant order: {order:?}"
    );
    assert_eq!(e.last_fence(), *order.last().unwrap());
    assert!(order.len() > 300);
    e.check();
}

#[test]
fn a_request_queues_behind_an_adopted_holder_and_gets_a_larger_fence_at_its_release() {
    let mut e = opened();
    let l = lock(&mut e);
    let mut host = Host::default();
    // The host grants two keys itself, and a third; the first is then wanted by another request.
    let first = host.local_fence(&mut e, 8).unwrap();
    let other = host.local_fence(&mut e, 8).unwrap();
    let third = host.local_fence(&mut e, 8).unwrap();
    assert_eq!((first, other, third), (1, 2, 3));
    host.reclaim(&mut e);
    assert_eq!(
        e.last_fence(),
        3,
        "the unused part of the block was given back"
    );
    let (adopted, key, fence) = granted(e.adopt(l, first, 5).unwrap());
    assert_eq!(fence, first);
    assert!(events(&mut e).is_empty(), "adopting queues no event");
    assert_eq!(e.poll_persist(), None, "nor asks for a write");
    assert_eq!(e.next_deadline(), None, "nor sets a deadline");
    e.check();
    // Two more requests want the key: they wait, in the order they came.
    let waiters: Vec<Id> = (0..2)
        .map(
            |t| match e.hold(l, Some(key), WAIT, None, 10 + t).unwrap() {
                Hold::Queued { req, key: k } if k == key => req,
                other => panic!("expected to wait behind the adopted holder: {other:?}"),
            },
        )
        .collect();
    assert_eq!(
        e.hold(l, Some(key), Some(0), None, 12).unwrap(),
        Hold::Busy { key },
        "the adopted holder holds the key"
    );
    e.check();
    // Meanwhile the host goes on granting other keys itself, from a new block.
    let later = host.local_fence(&mut e, 2).unwrap();
    assert_eq!(later, 4);
    host.reclaim(&mut e);
    assert!(e.release(adopted, 20).unwrap());
    let Some(Event::Granted { req, fence: next }) = events(&mut e).first().copied() else {
        panic!("the release grants the head of the line");
    };
    assert_eq!(req, waiters[0], "first come, first served");
    assert!(
        next > later,
        "fence {next} not above the lent fence {later}"
    );
    assert!(e.release(waiters[0], 21).unwrap());
    assert_eq!(
        events(&mut e),
        vec![Event::Granted {
            req: waiters[1],
            fence: next + 1
        }]
    );
    assert!(e.release(waiters[1], 22).unwrap());
    assert_eq!(events(&mut e), vec![Event::KeyIdle { key }]);
    e.check();
}

#[test]
fn an_adopted_holder_is_released_like_any_other_and_the_key_goes_idle() {
    let mut e = opened();
    let l = lock(&mut e);
    let mut host = Host::default();
    let fence = host.local_fence(&mut e, 1).unwrap();
    host.reclaim(&mut e);
    let (req, key, _) = granted(e.adopt(l, fence, 0).unwrap());
    assert_eq!(e.fence_of(req), Some(fence));
    assert!(e.release(req, 1).unwrap());
    assert_eq!(events(&mut e), vec![Event::KeyIdle { key }]);
    assert!(!e.release(req, 1).unwrap(), "released once");
    assert_eq!(e.footprint().keys, 0);
    assert_eq!(e.footprint().requests, 0);
}

#[test]
fn adopt_refuses_what_it_cannot_take_over() {
    let mut e = opened();
    let l = lock(&mut e);
    let mut host = Host::default();
    let fence = host.local_fence(&mut e, 4).unwrap();
    host.reclaim(&mut e);
    let invalid = |got: Result<Hold, holdfast_engine::Error>| match got {
        Err(error) => assert_eq!(error.code(), "invalid", "{error}"),
        Ok(hold) => panic!("expected invalid, got {hold:?}"),
    };
    invalid(e.adopt(ResourceId::from_u64(7).unwrap(), fence, 0));
    invalid(e.adopt(l, 0, 0));
    invalid(e.adopt(l, fence + 1, 0)); // given back unused: never handed out
    assert_eq!(e.footprint().keys, 0, "a refusal changes nothing");
    e.check();
    e.close();
    assert_eq!(
        e.adopt(l, fence, 0).unwrap_err(),
        holdfast_engine::Error::Closed
    );
}

#[test]
fn nothing_is_lent_before_storage_acknowledged_the_first_ceiling() {
    let mut e = Engine::open(None).unwrap();
    assert_eq!(e.lend_fences(8), None);
    let ceiling = e.poll_persist().unwrap();
    assert_eq!(e.lend_fences(8), None, "a write under way covers nothing");
    e.persisted(ceiling, 0);
    assert_eq!(
        e.lend_fences(0),
        None,
        "nothing to lend for a block of none"
    );
    assert_eq!(e.lend_fences(8), Some((1, 9)));
    assert!(e.fences_lent());
    assert_eq!(e.lend_fences(8), None, "one block at a time");
    e.reclaim_fences(1);
    e.close();
    assert_eq!(e.lend_fences(8), None, "a closed store lends nothing");
}

#[test]
fn lending_past_the_low_water_asks_for_the_next_ceiling() {
    let mut e = opened();
    let block = holdfast_engine::fence::BLOCK;
    assert_eq!(e.lend_fences(block / 2), Some((1, block / 2 + 1)));
    assert_eq!(e.poll_persist(), None);
    e.reclaim_fences(block / 2 + 1);
    assert_eq!(e.lend_fences(1), Some((block / 2 + 1, block / 2 + 2)));
    assert_eq!(e.poll_persist(), Some(2 * block));
}

#[test]
#[should_panic(expected = "would break fence order")]
fn an_engine_grant_while_fences_are_lent_is_a_broken_host() {
    let mut e = opened();
    let l = lock(&mut e);
    e.lend_fences(4).unwrap();
    let _ = e.hold(l, None, WAIT, None, 0);
}

#[test]
fn inspect_lists_the_adopted_holder_with_its_fence_and_since() {
    let mut e = opened();
    let l = lock(&mut e);
    // The engine's clock is ahead of the host's grant: `since` is kept as given.
    let (req, _, _) = granted(e.hold(l, None, WAIT, None, 1_000).unwrap());
    e.release(req, 1_000).unwrap();
    events(&mut e);
    let mut host = Host::default();
    let fence = host.local_fence(&mut e, 3).unwrap();
    host.reclaim(&mut e);
    let (adopted, key, _) = granted(e.adopt(l, fence, 400).unwrap());
    assert!(matches!(
        e.hold(l, Some(key), WAIT, None, 1_100).unwrap(),
        Hold::Queued { .. }
    ));
    let views = e.inspect(1_500).unwrap();
    assert_eq!(views.len(), 1);
    assert_eq!(views[0].key, key);
    assert_eq!(views[0].resource, l);
    assert_eq!(views[0].waiting, 1);
    assert_eq!(
        views[0].holders,
        vec![HolderView {
            req: adopted,
            fence,
            held_ms: 1_100
        }]
    );
    e.check();
}

#[test]
fn a_semaphore_key_granted_by_the_host_to_several_holders_is_adopted_holder_by_holder_and_its_permits_stay_counted(
) {
    let mut e = opened();
    let s = e.resource(Kind::Semaphore, "uploads", 3).unwrap();
    let mut host = Host::default();
    // The host granted two of the key's three permits itself; now a request it cannot answer alone
    // comes, and the engine takes both holders over.
    let (a, b) = (
        host.local_fence(&mut e, 4).unwrap(),
        host.local_fence(&mut e, 4).unwrap(),
    );
    host.reclaim(&mut e);
    let (first, key, fence) = granted(e.adopt(s, a, 1).unwrap());
    assert_eq!(fence, a);
    let (second, into, fence) = granted(e.adopt_into(key, b, 2).unwrap());
    assert_eq!((into, fence), (key, b));
    assert!(events(&mut e).is_empty(), "adopting queues no event");
    e.check();
    // One permit is left: the next request takes it, the one after waits.
    let (third, _, c) = granted(e.hold(s, Some(key), WAIT, None, 3).unwrap());
    assert!(c > b, "fence {c} not above the adopted {b}");
    let waiting = match e.hold(s, Some(key), WAIT, None, 4).unwrap() {
        Hold::Queued { req, .. } => req,
        other => panic!("three permits held: expected to wait, got {other:?}"),
    };
    e.check();
    assert!(e.release(first, 5).unwrap());
    assert_eq!(
        events(&mut e),
        vec![Event::Granted {
            req: waiting,
            fence: c + 1
        }],
        "an adopted holder's release frees its permit"
    );
    for req in [second, third, waiting] {
        assert!(e.release(req, 6).unwrap());
    }
    assert_eq!(events(&mut e), vec![Event::KeyIdle { key }]);
    assert_eq!(e.footprint().requests, 0);
    e.check();
}

#[test]
fn adopt_into_refuses_a_key_it_cannot_add_a_holder_to() {
    let mut e = opened();
    let s = e.resource(Kind::Semaphore, "uploads", 2).unwrap();
    let l = lock(&mut e);
    let mut host = Host::default();
    let fences: Vec<u64> = (0..4)
        .map(|_| host.local_fence(&mut e, 8).unwrap())
        .collect();
    host.reclaim(&mut e);
    let invalid = |got: Result<Hold, holdfast_engine::Error>| match got {
        Err(error) => assert_eq!(error.code(), "invalid", "{error}"),
        Ok(hold) => panic!("expected invalid, got {hold:?}"),
    };
    // A lock's key has one permit: the holder adopted took it.
    let (_, lock_key, _) = granted(e.adopt(l, fences[0], 0).unwrap());
    invalid(e.adopt_into(lock_key, fences[1], 0));
    // A semaphore's key: a fence never handed out, then its last permit taken, then full.
    let (_, key, _) = granted(e.adopt(s, fences[1], 0).unwrap());
    invalid(e.adopt_into(key, 0, 0));
    invalid(e.adopt_into(key, e.last_fence() + 1, 0));
    granted(e.adopt_into(key, fences[2], 0).unwrap());
    invalid(e.adopt_into(key, fences[3], 0));
    e.check();
    e.close();
    assert_eq!(
        e.adopt_into(key, fences[3], 0).unwrap_err(),
        holdfast_engine::Error::Closed
    );
}

//! The words of the trace (`trace.rs`): each operation, answer and event as numbers, hashed so that
//! two runs (native and wasm, or one before a change and one after) compare by one number.

use holdfast_engine::{Error, Event, Hold};

use crate::op::{Op, Outcome, Whom};

pub(super) fn code(e: &Error) -> u64 {
    match e {
        Error::Invalid(_) => 1,
        Error::Limit(_) => 2,
        Error::Closed => 3,
    }
}

pub(super) fn opt(v: Option<u64>) -> u64 {
    v.map_or(u64::MAX, |v| v)
}

pub(super) fn op_words(op: Op) -> [u64; 5] {
    let whom = |w: Whom| w as u64;
    let outcome = |o: Outcome| o as u64;
    match op {
        Op::Hold {
            res,
            key,
            wait,
            max_hold,
            fast,
        } => [
            1 | u64::from(fast) << 8,
            res.into(),
            key.into(),
            opt(wait),
            opt(max_hold),
        ],
        Op::Release { pick, fast } => [2 | u64::from(fast) << 8, pick.into(), 0, 0, 0],
        Op::Remote {
            res,
            key,
            conn,
            wait,
            max_hold,
            ttl,
        } => [
            15 | u64::from(res) << 8 | u64::from(key) << 16 | u64::from(conn) << 24,
            opt(wait),
            opt(max_hold),
            ttl,
            0,
        ],
        Op::AskAgain { pick, conn } => [16, pick.into(), conn.into(), 0, 0],
        Op::Renew { pick } => [17, pick.into(), 0, 0, 0],
        Op::ReleaseLease { pick } => [18, pick.into(), 0, 0, 0],
        Op::CancelRequest { pick } => [19, pick.into(), 0, 0, 0],
        Op::Drop { conn } => [20, conn.into(), 0, 0, 0],
        Op::Goodbye { conn } => [21, conn.into(), 0, 0, 0],
        Op::Cancel { whom: w, pick } => [3, whom(w), pick.into(), 0, 0],
        Op::Again { pick } => [4, pick.into(), 0, 0, 0],
        Op::Tick { ms } => [5, ms, 0, 0, 0],
        Op::ToDeadline => [6, 0, 0, 0, 0],
        Op::Late { ms } => [7, ms, 0, 0, 0],
        Op::Fire => [8, 0, 0, 0, 0],
        Op::Write(o) => [9, outcome(o), 0, 0, 0],
        Op::Crash { landed, clock } => [10, landed.into(), clock, 0, 0],
        Op::Close => [11, 0, 0, 0, 0],
        Op::Reopen { landed, clock } => [12, landed.into(), clock, 0, 0],
        Op::Burst { leave } => [13, leave, 0, 0, 0],
        Op::Bad { what } => [14, what.into(), 0, 0, 0],
        Op::Local {
            res,
            key,
            wait,
            max,
        } => [
            22 | u64::from(res) << 8 | u64::from(key) << 16 | u64::from(max) << 24,
            opt(wait),
            0,
            0,
            0,
        ],
        Op::LocalRelease { pick } => [23, pick.into(), 0, 0, 0],
        Op::Forget { res } => [24, res.into(), 0, 0, 0],
        Op::Claim {
            pool,
            n,
            id,
            wait,
            ttl,
        } => [
            25 | u64::from(pool) << 8 | u64::from(n) << 16,
            opt(id.map(u64::from)),
            opt(wait),
            opt(ttl),
            0,
        ],
        Op::PoolRelease { pick } => [26, pick.into(), 0, 0, 0],
        Op::PoolReleaseId { pool, id } => [27, pool.into(), id.into(), 0, 0],
        Op::Confirm { pick } => [28, pick.into(), 0, 0, 0],
        Op::PoolCancel { pick } => [29, pick.into(), 0, 0, 0],
        Op::Resize { pool, capacity } => [30, pool.into(), capacity.into(), 0, 0],
        Op::PoolWrite(o) => [31, outcome(o), 0, 0, 0],
    }
}

pub(super) fn event_words(ev: &Event) -> [u64; 3] {
    match *ev {
        Event::Granted { req, fence } => [1, req.to_u64(), fence],
        Event::TimedOut { req } => [2, req.to_u64(), 0],
        Event::Revoked { req } => [3, req.to_u64(), 0],
        Event::Failed { req, why } => [4, req.to_u64(), why as u64],
        Event::Ended { req, held } => [5, req.to_u64(), held.into()],
        Event::KeyIdle { key } => [6, key.to_u64(), 0],
        Event::Expired { req } => [7, req.to_u64(), 0],
        Event::Claimed { req, remaining } => [8, req.to_u64(), remaining],
        Event::NotClaimed { req, remaining } => [9, req.to_u64(), remaining],
        Event::Durable { req } => [10, req.to_u64(), 0],
        Event::PoolFailed { req, why } => [11, req.to_u64(), why as u64],
        Event::PoolEnded { req } => [12, req.to_u64(), 0],
        Event::NoClaim { req } => [13, req.to_u64(), 0],
    }
}

pub(super) fn claim_words(got: &Result<holdfast_engine::Claim, Error>) -> [u64; 3] {
    use holdfast_engine::Claim;
    match got {
        Ok(Claim::Writing { req }) => [1, req.to_u64(), 0],
        Ok(Claim::Queued { req }) => [2, req.to_u64(), 0],
        Ok(Claim::Joined { req }) => [3, req.to_u64(), 0],
        Ok(Claim::Refused { remaining }) => [4, *remaining, 0],
        Ok(Claim::Known { remaining, open }) => [5, *remaining, u64::from(*open)],
        Err(e) => [6, code(e), 0],
    }
}

pub(super) fn hold_words(got: &Result<Hold, Error>) -> [u64; 4] {
    match got {
        Ok(Hold::Granted { req, key, fence }) => [1, req.to_u64(), key.to_u64(), *fence],
        Ok(Hold::Queued { req, key }) => [2, req.to_u64(), key.to_u64(), 0],
        Ok(Hold::Busy { key }) => [3, key.to_u64(), 0, 0],
        Ok(Hold::Resumed { req, key, fence }) => [5, req.to_u64(), key.to_u64(), opt(*fence)],
        Err(e) => [4, code(e), 0, 0],
    }
}

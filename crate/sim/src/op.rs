//! The operations of a simulation, and their text form.
//!
//! # Invariant: an operation describes itself
//! An operation names its target by position (`release 3` is "the fourth of the requests that hold,
//! oldest first", taken modulo how many there are), never by an id the engine handed out. So any
//! subsequence of a run is itself a valid run: that is what lets a failure shrink by deleting
//! operations, and lets a shrunk sequence be pasted back (`HOLDFAST_SIM_SEQ`) and replayed exactly.
//! An operation whose target does not exist (a release with nobody holding) does nothing.
//!
//! Requests over a connection are named the same way: by the `pick`-th of the *clients* the host has
//! seen lately (a client is a request id and the lease id it was given), whether its request is still
//! live or not, so that asking again, renewing or releasing after the request ended is a step too.
//!
//! Pool requests and open claims (issue #16) are named the same way: the `pick`-th live pool request
//! (oldest id first), the `pick`-th open claim (pool by pool, oldest first).
//!
//! # Adding operations
//! A new operation is a variant here with its text form, its draw in `gen.rs`, its rule in
//! `model/` and its application (and checks) in `driver/`, each in the file of its concern.

use std::fmt;

/// Which request a cancel aims at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whom {
    /// One waiting in a line: it leaves the line.
    Waiting,
    /// One holding: the cancel releases it.
    Holding,
    /// One granted by an event of the previous call, which the host had not acted on when it
    /// cancelled: the grant raced the cancel.
    Granted,
    /// One that already ended: the cancel changes nothing.
    Ended,
}

/// How the storage answers the fence write under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The value is durable and the storage says so.
    Ok,
    /// The storage says it failed, but the value reached the disk (an unknown outcome, as a timeout).
    FailLanded,
    /// The storage says it failed, and nothing was written.
    FailLost,
}

/// One step of a simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A hold of key `key` of resource `res` (each modulo the mix's count). `wait`: `None` waits
    /// without limit, `Some(0)` is a try. `max_hold`: the lease's hard bound, if any.
    /// `fast`: the host's fast path, `hold_untimed`, and `hold` with the time only if asked for it.
    Hold {
        res: u8,
        key: u8,
        wait: Option<u64>,
        max_hold: Option<u64>,
        fast: bool,
    },
    /// Releases the `pick`-th request that holds (`fast`: `release_untimed` first).
    Release { pick: u16, fast: bool },
    /// A hold over connection `conn` (LOCK-05), for a lease of `ttl` ms, with a new request id.
    Remote {
        res: u8,
        key: u8,
        conn: u8,
        wait: Option<u64>,
        max_hold: Option<u64>,
        ttl: u64,
    },
    /// The `pick`-th client asks again with its request id, on connection `conn`: its request goes on
    /// as it was, or, if it ended, is asked afresh.
    AskAgain { pick: u16, conn: u8 },
    /// The `pick`-th client renews its lease.
    Renew { pick: u16 },
    /// The `pick`-th client releases its lease by lease id.
    ReleaseLease { pick: u16 },
    /// The `pick`-th client cancels its request by request id.
    CancelRequest { pick: u16 },
    /// Connection `conn` drops: its waiters go away (passed over, keeping their place for their
    /// ttl); its leases live until their ttl.
    Drop { conn: u8 },
    /// Connection `conn` says goodbye: its waiters and its leases end.
    Goodbye { conn: u8 },
    /// Cancels the `pick`-th request of a kind.
    Cancel { whom: Whom, pick: u16 },
    /// Releases the `pick`-th of the requests that ended lately: it holds nothing, nothing changes.
    Again { pick: u16 },
    /// The clock moves on by `ms`; the host's timer fires at every deadline on the way, on time.
    Tick { ms: u64 },
    /// The clock moves to the next deadline exactly, and the timer fires there.
    ToDeadline,
    /// The clock moves on by `ms` and the timer is late: it does not fire (late-timer faults only).
    Late { ms: u64 },
    /// The late timer fires now.
    Fire,
    /// The storage answers the fence write under way, if one is.
    Write(Outcome),
    /// The process dies (kill -9) and starts again from what storage holds. `landed`: whether the
    /// write under way reached the disk first. `clock`: where the new process's monotonic clock starts
    /// (anywhere: it may be behind the old one).
    Crash { landed: bool, clock: u64 },
    /// The store closes.
    Close,
    /// A closed store's process opens it again, after the write under way settled (`landed`).
    Reopen { landed: bool, clock: u64 },
    /// Grants and releases on a key of its own until `leave` acknowledged fences are left: the way to
    /// the reservation boundaries (half a block, a whole block) that a million grants away.
    Burst { leave: u64 },
    /// Bad input, which must be refused and change nothing (kind `what`, modulo the kinds).
    Bad { what: u8 },
    /// A hold the host may grant itself, without calling the engine (no `maxHold`, not over a
    /// connection): on a free key of a lock it takes the next fence of the block the engine lent it,
    /// borrowing a block of up to `max` when it has none left. On a key it granted itself, another
    /// request arrives: the host hands the key over (adopt), then holds as usual. Anywhere else (a
    /// semaphore, a key busy in the engine, no fence to lend) it holds as usual, on the fast path.
    Local {
        res: u8,
        key: u8,
        wait: Option<u64>,
        max: u8,
    },
    /// The `pick`-th lease the host granted itself (and still keeps) is released: the host forgets it.
    LocalRelease { pick: u16 },
    /// The handles of resource `res` (modulo the mix's count) were collected: the host forgets the
    /// name (`Engine::forget`), unless it keeps a key of it that it granted itself. The engine refuses
    /// while it has a busy key of it. A forgotten name is registered again when next held.
    Forget { res: u8 },
    /// A claim of `n` units of pool `pool` (modulo the mix's pools): with claim id `i{id}` (a caller's
    /// id, remembered), or `None` for an id the host draws (never asked again, not remembered).
    /// `wait` as a hold's; `ttl`: its units come back unless confirmed.
    Claim {
        pool: u8,
        n: u8,
        id: Option<u8>,
        wait: Option<u64>,
        ttl: Option<u64>,
    },
    /// Releases the `pick`-th open claim (pool by pool, oldest first) by its id.
    PoolRelease { pick: u16 },
    /// Releases claim id `i{id}` of pool `pool`, whatever it is (open, a tombstone, unknown).
    PoolReleaseId { pool: u8, id: u8 },
    /// Confirms the `pick`-th open claim.
    Confirm { pick: u16 },
    /// Cancels the `pick`-th live pool request (waiting in line, or for its write).
    PoolCancel { pick: u16 },
    /// Resizes pool `pool` to `capacity` (perhaps below what is claimed: refused).
    Resize { pool: u8, capacity: u8 },
    /// The storage answers the pools' write under way, if one is.
    PoolWrite(Outcome),
}

impl Op {
    /// The position this operation names its target by, if it names one that way.
    pub fn pick(&self) -> Option<u16> {
        match *self {
            Op::Release { pick, .. }
            | Op::Cancel { pick, .. }
            | Op::Again { pick }
            | Op::AskAgain { pick, .. }
            | Op::Renew { pick }
            | Op::ReleaseLease { pick }
            | Op::CancelRequest { pick }
            | Op::LocalRelease { pick }
            | Op::PoolRelease { pick }
            | Op::Confirm { pick }
            | Op::PoolCancel { pick } => Some(pick),
            _ => None,
        }
    }

    /// The same operation aimed at another position (shrinking tries smaller ones).
    pub fn with_pick(mut self, to: u16) -> Op {
        match &mut self {
            Op::Release { pick, .. }
            | Op::Cancel { pick, .. }
            | Op::Again { pick }
            | Op::AskAgain { pick, .. }
            | Op::Renew { pick }
            | Op::ReleaseLease { pick }
            | Op::CancelRequest { pick }
            | Op::LocalRelease { pick }
            | Op::PoolRelease { pick }
            | Op::Confirm { pick }
            | Op::PoolCancel { pick } => *pick = to,
            _ => {}
        }
        self
    }
}

fn ms(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::FailLanded => "fail landed",
        Outcome::FailLost => "fail lost",
    }
}

fn landed(l: bool) -> &'static str {
    if l {
        "landed"
    } else {
        "lost"
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Op::Hold {
                res,
                key,
                wait,
                max_hold,
                fast,
            } => write!(
                f,
                "hold {res} {key} w={} m={}{}",
                ms(wait),
                ms(max_hold),
                if fast { " fast" } else { "" }
            ),
            Op::Release { pick, fast } => {
                write!(f, "release {pick}{}", if fast { " fast" } else { "" })
            }
            Op::Remote {
                res,
                key,
                conn,
                wait,
                max_hold,
                ttl,
            } => write!(
                f,
                "remote {res} {key} c={conn} w={} m={} t={ttl}",
                ms(wait),
                ms(max_hold)
            ),
            Op::AskAgain { pick, conn } => write!(f, "ask {pick} c={conn}"),
            Op::Renew { pick } => write!(f, "renew {pick}"),
            Op::ReleaseLease { pick } => write!(f, "release-lease {pick}"),
            Op::CancelRequest { pick } => write!(f, "cancel-request {pick}"),
            Op::Drop { conn } => write!(f, "drop {conn}"),
            Op::Goodbye { conn } => write!(f, "goodbye {conn}"),
            Op::Cancel { whom, pick } => {
                let w = match whom {
                    Whom::Waiting => "waiting",
                    Whom::Holding => "holding",
                    Whom::Granted => "granted",
                    Whom::Ended => "ended",
                };
                write!(f, "cancel {w} {pick}")
            }
            Op::Again { pick } => write!(f, "again {pick}"),
            Op::Tick { ms } => write!(f, "tick {ms}"),
            Op::ToDeadline => f.write_str("deadline"),
            Op::Late { ms } => write!(f, "late {ms}"),
            Op::Fire => f.write_str("fire"),
            Op::Write(o) => write!(f, "write {}", outcome(o)),
            Op::Crash { landed: l, clock } => write!(f, "crash {} @{clock}", landed(l)),
            Op::Close => f.write_str("close"),
            Op::Reopen { landed: l, clock } => write!(f, "reopen {} @{clock}", landed(l)),
            Op::Burst { leave } => write!(f, "burst {leave}"),
            Op::Bad { what } => write!(f, "bad {what}"),
            Op::Local {
                res,
                key,
                wait,
                max,
            } => write!(f, "local {res} {key} w={} n={max}", ms(wait)),
            Op::LocalRelease { pick } => write!(f, "local-release {pick}"),
            Op::Forget { res } => write!(f, "forget {res}"),
            Op::Claim {
                pool,
                n,
                id,
                wait,
                ttl,
            } => write!(
                f,
                "claim {pool} {n} id={} w={} t={}",
                ms(id.map(u64::from)),
                ms(wait),
                ms(ttl)
            ),
            Op::PoolRelease { pick } => write!(f, "pool-release {pick}"),
            Op::PoolReleaseId { pool, id } => write!(f, "pool-release-id {pool} {id}"),
            Op::Confirm { pick } => write!(f, "confirm {pick}"),
            Op::PoolCancel { pick } => write!(f, "pool-cancel {pick}"),
            Op::Resize { pool, capacity } => write!(f, "resize {pool} {capacity}"),
            Op::PoolWrite(o) => write!(f, "pool-write {}", outcome(o)),
        }
    }
}

/// Parses one operation in the form [`Op`]'s `Display` writes.
pub fn parse(text: &str) -> Result<Op, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let bad = || format!("cannot read operation {text:?}");
    let num = |i: usize| -> Result<u64, String> {
        words
            .get(i)
            .map(|w| w.trim_start_matches('@'))
            .and_then(|w| w.parse().ok())
            .ok_or_else(bad)
    };
    let opt = |i: usize, prefix: &str| -> Result<Option<u64>, String> {
        let w = words
            .get(i)
            .and_then(|w| w.strip_prefix(prefix))
            .ok_or_else(bad)?;
        if w == "-" {
            Ok(None)
        } else {
            w.parse().map(Some).map_err(|_| bad())
        }
    };
    let landed = |i: usize| -> Result<bool, String> {
        match words.get(i) {
            Some(&"landed") => Ok(true),
            Some(&"lost") => Ok(false),
            _ => Err(bad()),
        }
    };
    let small = |i: usize| -> Result<u16, String> { u16::try_from(num(i)?).map_err(|_| bad()) };
    let byte = |i: usize| -> Result<u8, String> { u8::try_from(num(i)?).map_err(|_| bad()) };
    let prefixed = |i: usize, prefix: &str| -> Result<u64, String> {
        words
            .get(i)
            .and_then(|w| w.strip_prefix(prefix))
            .and_then(|w| w.parse().ok())
            .ok_or_else(bad)
    };
    let fast = |i: usize| -> Result<bool, String> {
        match words.get(i) {
            None => Ok(false),
            Some(&"fast") => Ok(true),
            Some(_) => Err(bad()),
        }
    };
    let read_outcome = || match (words.get(1), words.get(2)) {
        (Some(&"ok"), None) => Ok(Outcome::Ok),
        (Some(&"fail"), Some(&"landed")) => Ok(Outcome::FailLanded),
        (Some(&"fail"), Some(&"lost")) => Ok(Outcome::FailLost),
        _ => Err(bad()),
    };
    let op = match words.first().copied() {
        Some("hold") => Op::Hold {
            res: byte(1)?,
            key: byte(2)?,
            wait: opt(3, "w=")?,
            max_hold: opt(4, "m=")?,
            fast: fast(5)?,
        },
        Some("release") => Op::Release {
            pick: small(1)?,
            fast: fast(2)?,
        },
        Some("remote") => Op::Remote {
            res: byte(1)?,
            key: byte(2)?,
            conn: u8::try_from(prefixed(3, "c=")?).map_err(|_| bad())?,
            wait: opt(4, "w=")?,
            max_hold: opt(5, "m=")?,
            ttl: prefixed(6, "t=")?,
        },
        Some("ask") => Op::AskAgain {
            pick: small(1)?,
            conn: u8::try_from(prefixed(2, "c=")?).map_err(|_| bad())?,
        },
        Some("renew") => Op::Renew { pick: small(1)? },
        Some("release-lease") => Op::ReleaseLease { pick: small(1)? },
        Some("cancel-request") => Op::CancelRequest { pick: small(1)? },
        Some("drop") => Op::Drop { conn: byte(1)? },
        Some("goodbye") => Op::Goodbye { conn: byte(1)? },
        Some("cancel") => Op::Cancel {
            whom: match words.get(1) {
                Some(&"waiting") => Whom::Waiting,
                Some(&"holding") => Whom::Holding,
                Some(&"granted") => Whom::Granted,
                Some(&"ended") => Whom::Ended,
                _ => return Err(bad()),
            },
            pick: small(2)?,
        },
        Some("again") => Op::Again { pick: small(1)? },
        Some("tick") => Op::Tick { ms: num(1)? },
        Some("deadline") => Op::ToDeadline,
        Some("late") => Op::Late { ms: num(1)? },
        Some("fire") => Op::Fire,
        Some("write") => Op::Write(read_outcome()?),
        Some("pool-write") => Op::PoolWrite(read_outcome()?),
        Some("crash") => Op::Crash {
            landed: landed(1)?,
            clock: num(2)?,
        },
        Some("close") => Op::Close,
        Some("reopen") => Op::Reopen {
            landed: landed(1)?,
            clock: num(2)?,
        },
        Some("burst") => Op::Burst { leave: num(1)? },
        Some("bad") => Op::Bad { what: byte(1)? },
        Some("local") => Op::Local {
            res: byte(1)?,
            key: byte(2)?,
            wait: opt(3, "w=")?,
            max: u8::try_from(prefixed(4, "n=")?).map_err(|_| bad())?,
        },
        Some("local-release") => Op::LocalRelease { pick: small(1)? },
        Some("forget") => Op::Forget { res: byte(1)? },
        Some("claim") => Op::Claim {
            pool: byte(1)?,
            n: byte(2)?,
            id: match opt(3, "id=")? {
                Some(v) => Some(u8::try_from(v).map_err(|_| bad())?),
                None => None,
            },
            wait: opt(4, "w=")?,
            ttl: opt(5, "t=")?,
        },
        Some("pool-release") => Op::PoolRelease { pick: small(1)? },
        Some("pool-release-id") => Op::PoolReleaseId {
            pool: byte(1)?,
            id: byte(2)?,
        },
        Some("confirm") => Op::Confirm { pick: small(1)? },
        Some("pool-cancel") => Op::PoolCancel { pick: small(1)? },
        Some("resize") => Op::Resize {
            pool: byte(1)?,
            capacity: byte(2)?,
        },
        _ => return Err(bad()),
    };
    Ok(op)
}

/// Parses a sequence: operations separated by `;` or new lines; `#` starts a comment.
pub fn parse_seq(text: &str) -> Result<Vec<Op>, String> {
    text.split(['\n', ';'])
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|line| !line.is_empty())
        .map(parse)
        .collect()
}

/// Writes a sequence in the form [`parse_seq`] reads.
pub fn write_seq(ops: &[Op]) -> String {
    ops.iter().map(Op::to_string).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_reads_back_as_written() {
        let ops = [
            Op::Hold {
                res: 2,
                key: 5,
                wait: None,
                max_hold: Some(30),
                fast: false,
            },
            Op::Hold {
                res: 0,
                key: 0,
                wait: Some(0),
                max_hold: None,
                fast: true,
            },
            Op::Release {
                pick: 7,
                fast: false,
            },
            Op::Release {
                pick: 0,
                fast: true,
            },
            Op::Remote {
                res: 1,
                key: 2,
                conn: 3,
                wait: Some(5),
                max_hold: None,
                ttl: 1_000,
            },
            Op::AskAgain { pick: 4, conn: 0 },
            Op::Renew { pick: 1 },
            Op::ReleaseLease { pick: 2 },
            Op::CancelRequest { pick: 3 },
            Op::Drop { conn: 1 },
            Op::Goodbye { conn: 2 },
            Op::Cancel {
                whom: Whom::Granted,
                pick: 1,
            },
            Op::Cancel {
                whom: Whom::Ended,
                pick: 0,
            },
            Op::Again { pick: 3 },
            Op::Tick { ms: 2_592_000_000 },
            Op::ToDeadline,
            Op::Late { ms: 9 },
            Op::Fire,
            Op::Write(Outcome::Ok),
            Op::Write(Outcome::FailLanded),
            Op::Write(Outcome::FailLost),
            Op::Crash {
                landed: true,
                clock: 12,
            },
            Op::Close,
            Op::Reopen {
                landed: false,
                clock: 0,
            },
            Op::Burst { leave: 500_001 },
            Op::Bad { what: 4 },
            Op::Local {
                res: 1,
                key: 3,
                wait: None,
                max: 4,
            },
            Op::Local {
                res: 0,
                key: 0,
                wait: Some(0),
                max: 1,
            },
            Op::LocalRelease { pick: 9 },
            Op::Forget { res: 2 },
            Op::Claim {
                pool: 1,
                n: 3,
                id: Some(7),
                wait: None,
                ttl: Some(1_000),
            },
            Op::Claim {
                pool: 0,
                n: 1,
                id: None,
                wait: Some(0),
                ttl: None,
            },
            Op::PoolRelease { pick: 2 },
            Op::PoolReleaseId { pool: 1, id: 4 },
            Op::Confirm { pick: 0 },
            Op::PoolCancel { pick: 5 },
            Op::Resize {
                pool: 0,
                capacity: 9,
            },
            Op::PoolWrite(Outcome::Ok),
            Op::PoolWrite(Outcome::FailLanded),
            Op::PoolWrite(Outcome::FailLost),
        ];
        let text = write_seq(&ops);
        assert_eq!(parse_seq(&text).unwrap(), ops);
        assert_eq!(
            parse_seq("# a comment\nclose\n\n tick 5 # late\n").unwrap(),
            vec![Op::Close, Op::Tick { ms: 5 }]
        );
        assert!(parse("hold 1").is_err());
        assert!(parse("write maybe").is_err());
    }
}

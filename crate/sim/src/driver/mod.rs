//! The driver: plays the host of one engine through a run, and checks every step.
//!
//! It does what `npm/src/store/store.ts` and the wasm bindings do for a real store: it maps keys to the ids
//! the engine gives them while they are busy and forgets them at `KeyIdle`, writes the fence ceiling
//! the engine asks for and answers how the write went, fires the timer at the next deadline, drains
//! the events after every call, and starts a new process from what storage holds after a crash. Each
//! operation (`op.rs`) becomes one or more engine calls; after each call the engine's answers and events
//! are compared with the reference model's (`model/`), and after each operation the whole state.
//!
//! # Invariants checked after every step
//! - **One holder** (or `limit`): no key has more holders than its limit (the model's check, and the
//!   engine's `inspect` equal to the model's views).
//! - **FIFO, no barging, head of line first**: every grant, immediate or by event, is the one the model
//!   predicts: the head of the line, in the same call that made room.
//! - **Fences**: every fence handed out is larger than every fence before it, across every restart of
//!   the run (ghost state kept outside the engine); none is above the highest ceiling acknowledged to
//!   this process, nor above what the disk holds; a write never lowers the stored ceiling; no second
//!   write is asked while one is under way; a request that waits for a fence always has a write asked.
//!   This holds for the grants the host makes itself from fences the engine lent it, which are
//!   checked in the same sequence as the engine's.
//! - **The host's own grants**: the host grants a free key of a lock itself, with the next fence of a
//!   block the engine lent it (`lend_fences`), as `npm/src/store/store.ts` does through the wasm bindings;
//!   it gives back what it did not use (`reclaim_fences`) before every other engine call, as the
//!   bindings do, and hands a key it granted over to the engine (`adopt`) when another request wants
//!   it. A key it granted itself is never busy in the engine too, nor granted twice; the engine's
//!   view of what is lent equals the host's and the model's.
//! - **Answered once, on time**: every request is answered exactly once (the model's events, compared
//!   exactly, name each live request once and never a dead one; `close` answers every live one); with a
//!   punctual timer no deadline is left pending after the instant it falls due; and no request is ever
//!   granted after its wait ran out, nor a lease past its `maxHold` released as held or counted as a
//!   holder (checks that matter when the timer is late).
//! - **No idle key kept**: the engine keeps exactly the model's busy keys and live requests
//!   (`footprint`), and its own `check()` passes.
//! - **Names forgotten** (#13 item 5): the host forgets a name as `npm/src/store/store.ts` does once its
//!   handles are gone (never while it keeps a key of it that it granted itself), and registers it
//!   again when it is next held. The engine forgets exactly when the model has no busy key of it,
//!   refuses otherwise, keeps exactly the names not forgotten (`footprint`), and never answers to
//!   the dead id of a forgotten name, nor gives it (or an id in use) to a name registered again.
//! - **Leases over a connection** (LOCK-05): a lease past its ttl or `maxHold` is never renewed, by a
//!   renewal or by asking again, nor a waiter away past its ttl taken back; a renewal at or after the
//!   deadline is refused; asked again, a live request is never granted twice; waiters away block
//!   nobody; the engine's view of every such request (`remote_of`) and of every connection
//!   (`connection_requests`, and those in line: `connection_waiting`) equals the model's.
//!
//! A host that lies about storage ([`HostFault`]) is there for the tests that show the checks bite.
//!
//! # Layout
//! One concern a file, as the engine's: `hold.rs` (holds, releases, cancels), `deadlines.rs` (the
//! timer, punctual or late), `fences.rs` (storage of the ceiling, the ghost state of fences, lent
//! blocks and the host's own grants, bursts), `remote.rs` (requests over a connection),
//! `resource.rs` (names forgotten and registered again), `check.rs` (the whole state after every
//! operation, and bad input), `words.rs` (what enters the trace hash). This file keeps the host's
//! state, processes (open, crash, reopen, close) and the checks after every engine call.
//!
//! # Adding operations
//! The host's state for them goes in `Host` (as [`Client`] does for requests over a connection);
//! each is an arm of the `step_*` of its concern (or of [`Driver::apply`] if it replaces the
//! engine), checked the same way: the answer and the events against the model, then the whole
//! state.

mod check;
mod deadlines;
mod fences;
mod hold;
mod pool;
mod remote;
mod resource;
mod words;

use std::collections::VecDeque;

use holdfast_engine::fence::MAX_FENCE;
use holdfast_engine::{Engine, Event, Failure, Id, Kind, PoolId, ResourceId};

use crate::gen::View;
use crate::marks::{Mark, Marks};
use crate::model::{MReq, Model};
use crate::op::Op;
use crate::storage::{PoolDisk, Storage};
use crate::swarm::{Mix, BURST_NAME};
use crate::trace::Trace;

pub use remote::Client;

use fences::{Local, BURST_BUDGET};
use words::{event_words, op_words};

/// A deliberately wrong host, for the tests that show the checks bite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostFault {
    /// The host tells the engine a fence write succeeded when the storage lost it (PostgreSQL's
    /// sequence bug, HeliosDB's row ids): fences can then repeat after a crash.
    AckWithoutWrite,
}

/// Kinds of late-timer violation, which a run may be told to let pass (`HOLDFAST_SIM_LAX`) so that
/// the next kind shows; each is reported as `overdue <kind>:`.
pub mod overdue {
    /// A lease past its `maxHold` or ttl released as if held.
    pub const RELEASE: u8 = 1;
    /// A hold refused or queued behind requests whose deadlines had passed.
    pub const HOLD: u8 = 2;
    /// A waiter granted after its wait ran out.
    pub const GRANT: u8 = 4;
    /// A lease past its ttl or `maxHold` renewed by asking again with its request id.
    pub const RESUME: u8 = 8;

    /// The names of `kinds`, as [`parse`] reads them.
    pub fn name(kinds: u8) -> String {
        let names: Vec<&str> = [
            (RELEASE, "release"),
            (HOLD, "hold"),
            (GRANT, "grant"),
            (RESUME, "resume"),
        ]
        .into_iter()
        .filter(|(k, _)| kinds & k != 0)
        .map(|(_, n)| n)
        .collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(",")
        }
    }

    /// The kinds named in `text` (`release,hold,grant,resume`, or `none`).
    pub fn parse(text: &str) -> u8 {
        text.split(',')
            .map(|w| match w.trim() {
                "release" => RELEASE,
                "hold" => HOLD,
                "grant" => GRANT,
                "resume" => RESUME,
                "none" | "" => 0,
                other => panic!("unknown kind of overdue {other:?}"),
            })
            .fold(0, |a, b| a | b)
    }
}

/// Counts over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub ops: u64,
    pub calls: u64,
    pub grants: u64,
    pub restarts: u64,
    pub writes: u64,
    /// Late-timer violations let pass (see [`overdue`]).
    pub overdue: u64,
}

/// How many ended requests the host remembers, for releases and cancels that come too late.
const ENDED_KEPT: usize = 16;

/// Everything the host keeps besides the engine.
struct Host {
    mix: Mix,
    fault: Option<HostFault>,
    /// The kinds of overdue to let pass (see [`overdue`]).
    lax: u8,
    model: Option<Model>,
    rids: Vec<ResourceId>,
    /// Resources whose names the host forgot (their `rids` dead), registered again when next held.
    forgotten: Vec<bool>,
    burst: ResourceId,
    storage: Storage,
    now: u64,
    /// Ghost state, kept across restarts: the largest fence ever handed out.
    max_fence: u64,
    /// Requests granted by events of the last call.
    granted: Vec<Id>,
    ended: VecDeque<Id>,
    last_idle: Option<Id>,
    /// The keys a deadline was acted on for, and the instant.
    expired: (u64, Vec<(usize, usize)>),
    burst_budget: u64,
    clients: VecDeque<Client>,
    /// The host's source of request and lease ids (a counter: the engine only needs them distinct).
    next_id: u128,
    /// The block of fences lent to the host: `(first, next, end)`, `next` the next it hands out.
    block: Option<(u64, u64, u64)>,
    /// The leases the host granted itself and still keeps, oldest first.
    locals: Vec<Local>,
    marks: Marks,
    trace: Trace,
    stats: Stats,
    log: Option<Vec<String>>,
    /// The storage of pools (issue #16), across restarts.
    pool_disk: PoolDisk,
    /// The engine's ids of the mix's pools, in this process.
    pool_ids: Vec<PoolId>,
    /// `wall = now + wall_offset`: the wall clock goes on across restarts, the process's clock not.
    wall_offset: i128,
    /// The host's source of claim ids for callers without one (a counter).
    next_claim: u64,
    /// Claims that waited in line, watched for their grant (a coverage mark).
    pool_queued: Vec<Id>,
}

/// One engine and its host, through a run.
pub struct Driver {
    engine: Option<Engine>,
    host: Host,
}

impl Driver {
    /// A driver whose first process opens on the mix's stored ceiling, at the mix's clock.
    pub fn new(mix: Mix, fault: Option<HostFault>, lax: u8) -> Result<Driver, String> {
        let storage = Storage::new(mix.stored);
        let clock = mix.clock;
        let mut driver = Driver {
            engine: None,
            host: Host {
                mix,
                fault,
                lax,
                model: None,
                rids: Vec::new(),
                forgotten: Vec::new(),
                burst: ResourceId::from_u64(u64::from(u32::MAX)).expect("an id"),
                storage,
                now: 0,
                max_fence: 0,
                granted: Vec::new(),
                ended: VecDeque::new(),
                last_idle: None,
                expired: (u64::MAX, Vec::new()),
                burst_budget: BURST_BUDGET,
                clients: VecDeque::new(),
                next_id: 1 << 100,
                block: None,
                locals: Vec::new(),
                marks: Marks::default(),
                trace: Trace::default(),
                stats: Stats::default(),
                log: None,
                pool_disk: PoolDisk::new(pool::VALUE_LIMIT),
                pool_ids: Vec::new(),
                wall_offset: i128::from(pool::WALL0),
                next_claim: 0,
                pool_queued: Vec::new(),
            },
        };
        driver.open(clock)?;
        Ok(driver)
    }

    /// Logs every operation and what the engine answered (for `replay`).
    pub fn verbose(&mut self) {
        self.host.log = Some(Vec::new());
    }

    pub fn take_log(&mut self) -> Vec<String> {
        self.host
            .log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    pub fn marks(&self) -> Marks {
        self.host.marks
    }

    pub fn stats(&self) -> Stats {
        Stats {
            writes: self.host.storage.writes,
            ..self.host.stats
        }
    }

    pub fn hash(&self) -> u64 {
        self.host.trace.value()
    }

    /// What the generator may look at.
    pub fn view(&self) -> View {
        let h = &self.host;
        let Some(m) = &h.model else {
            return View::default();
        };
        let holding = m.order.iter().filter(|&&r| m.holds(r)).count();
        View {
            waiting: m.order.len() - holding,
            holding,
            granted: h.granted.iter().filter(|&&r| m.holds(r)).count(),
            ended: h.ended.len(),
            in_flight: h.storage.in_flight.is_some(),
            closed: m.closed,
            deadline: m.next_deadline().is_some(),
            fences_left: (m.covered + 1).saturating_sub(m.next),
            bursts_left: h.burst_budget > 0,
            clients: h.clients.len(),
            locals: h.locals.len(),
            pool_reqs: m.pools.reqs.len(),
            claims: m.pools.open_claims().len(),
            pool_in_flight: h.pool_disk.in_flight.is_some(),
        }
    }

    /// Starts a process on what storage holds, its clock at `clock`.
    fn open(&mut self, clock: u64) -> Result<(), String> {
        let h = &mut self.host;
        // The wall clock went on while the process's clock starts again anywhere.
        let wall = i128::from(h.now) + h.wall_offset;
        h.wall_offset = wall - i128::from(clock);
        h.now = clock;
        h.pool_queued.clear();
        h.granted.clear();
        h.ended.clear();
        h.last_idle = None;
        h.expired = (u64::MAX, Vec::new());
        // The leases the host granted itself died with its process, and its block of fences too.
        h.block = None;
        h.locals.clear();
        h.model = None;
        self.engine = None;
        let stored = h.storage.durable;
        let opens = stored.unwrap_or(0) < MAX_FENCE;
        let mut engine = match Engine::open(stored) {
            Ok(engine) if opens => engine,
            Ok(_) => {
                return Err(format!(
                    "open: accepted the stored ceiling {stored:?}, which leaves no fence"
                ))
            }
            Err(e) if opens => {
                return Err(format!("open: refused the stored ceiling {stored:?}: {e}"))
            }
            Err(_) => {
                // The store can never open again: every fence was handed out. The run goes on idle.
                h.trace.word(0xDEAD);
                return Ok(());
            }
        };
        h.rids.clear();
        h.forgotten = vec![false; h.mix.resources.len()];
        for spec in &h.mix.resources {
            let rid = engine
                .resource(spec.kind, &spec.name, spec.limit)
                .map_err(|e| format!("open: resource {}: {e}", spec.name))?;
            if h.rids.contains(&rid) {
                return Err(format!(
                    "open: resource {} got a used id {rid:?}",
                    spec.name
                ));
            }
            h.rids.push(rid);
            h.trace.word(rid.to_u64());
        }
        h.burst = engine
            .resource(Kind::Lock, BURST_NAME, 1)
            .map_err(|e| format!("open: resource {BURST_NAME}: {e}"))?;
        engine.set_connection_limit(h.mix.connection_limit);
        let limits = h.mix.resources.iter().map(|r| r.limit).collect();
        let keys: Vec<u8> = h.mix.resources.iter().map(|r| r.keys).collect();
        let pools = h.open_pools(&mut engine)?;
        h.model = Model::open(
            stored,
            h.rids.clone(),
            limits,
            &keys,
            h.mix.connection_limit,
            pools,
        );
        h.after_call(&mut engine, "open")?;
        // Deadlines of pools read back may have passed while the store was down: the host's timer
        // fires at once.
        if h.next_deadline(&mut engine)?.is_some_and(|at| at <= h.now) {
            let now = h.now;
            h.fire(&mut engine, now)?;
        }
        h.take_pool_write(&mut engine)?;
        if h.storage.in_flight.is_none() {
            return Err("open: the engine asked for no first ceiling".into());
        }
        self.engine = Some(engine);
        Ok(())
    }

    /// Applies one operation and checks everything after it.
    pub fn apply(&mut self, op: Op) -> Result<(), String> {
        let h = &mut self.host;
        h.stats.ops += 1;
        h.trace.words(&op_words(op));
        if let Some(log) = &mut h.log {
            log.push(format!("@{} {op}", h.now));
        }
        let Some(engine) = self.engine.as_mut() else {
            return Ok(()); // the store can no longer open: nothing happens any more
        };
        match op {
            Op::Crash { landed, clock } => {
                if h.storage.in_flight.is_some() {
                    h.marks.hit(Mark::CrashWithWriteInFlight);
                }
                h.storage.die(landed);
                // The clock the next process starts at is drawn at random: it picks the cut too.
                if h.pool_disk.die(landed, clock) {
                    h.marks.hit(Mark::PoolCrashMidChunks);
                }
                h.stats.restarts += 1;
                return self.open(clock);
            }
            Op::Reopen { landed, clock } => {
                if !h.model.as_ref().is_some_and(|m| m.closed) {
                    return Ok(());
                }
                // The closed store waited for its write under way; the engine ignores the answer.
                if let Some(c) = h.storage.in_flight {
                    if landed {
                        engine.persisted(c, h.now);
                    } else {
                        engine.persist_failed(c, h.now);
                    }
                    h.after_call(engine, "write after close")?;
                }
                // And for the pools' writes: the one under way, then, once it landed, the last
                // one the close left wanted (as the host makes it: `npm/src/pool/writes.ts`), which
                // carries the undo of every claim the close ended after the claim itself.
                let outcome = if landed {
                    crate::op::Outcome::FailLanded
                } else {
                    crate::op::Outcome::FailLost
                };
                // Told as it went: a release, confirm or resize in it is answered by it.
                while let Some(seq) = h.pool_disk.settle(outcome) {
                    let now = h.now;
                    if landed {
                        engine.pool_written(seq, now);
                        h.model().pool_written(now);
                    } else {
                        engine.pool_write_failed(seq, now);
                        h.model().pool_write_failed(now);
                    }
                    h.after_call(engine, "pools' write after close")?;
                    if !landed {
                        break;
                    }
                    h.take_pool_write(engine)?;
                }
                h.storage.die(landed);
                h.stats.restarts += 1;
                return self.open(clock);
            }
            _ => {}
        }
        h.step(engine, op)?;
        h.take_pool_write(engine)?;
        h.check_all(engine)
    }

    /// Ends the run: closes the store (every request still live is answered) and checks.
    pub fn finish(&mut self) -> Result<(), String> {
        if self.host.model.as_ref().is_some_and(|m| !m.closed) {
            self.apply(Op::Close)?;
        }
        Ok(())
    }
}

impl Host {
    fn model(&mut self) -> &mut Model {
        self.model.as_mut().expect("an open process has a model")
    }

    fn log(&mut self, line: impl FnOnce() -> String) {
        if let Some(log) = &mut self.log {
            log.push(format!("    {}", line()));
        }
    }

    /// After every engine call: its events against the model's, then the fence write it asks for.
    fn after_call(&mut self, engine: &mut Engine, label: &str) -> Result<(), String> {
        self.stats.calls += 1;
        let mut got = Vec::new();
        while let Some(ev) = engine.poll_event() {
            got.push(ev);
        }
        let want = std::mem::take(&mut self.model().events);
        if got != want {
            return Err(format!(
                "{label}: events: the engine's {got:?}, the model's {want:?}"
            ));
        }
        if !got.is_empty() {
            self.log(|| format!("events {got:?}"));
        }
        self.granted.clear();
        for ev in &got {
            self.trace.words(&event_words(ev));
            match *ev {
                Event::Granted { req, fence } => {
                    self.grant(fence)?;
                    self.granted.push(req);
                }
                Event::TimedOut { req }
                | Event::Revoked { req }
                | Event::Expired { req }
                | Event::Ended { req, .. } => self.ended(req),
                Event::Failed { req, why } => {
                    if why == Failure::FencesUsedUp {
                        self.marks.hit(Mark::FencesUsedUp);
                    }
                    self.ended(req);
                }
                Event::KeyIdle { key } => self.last_idle = Some(key),
                Event::Claimed { .. }
                | Event::NotClaimed { .. }
                | Event::Durable { .. }
                | Event::PoolFailed { .. }
                | Event::PoolEnded { .. }
                | Event::NoClaim { .. } => {}
            }
        }
        if self.model.is_some() {
            self.pool_marks(&got);
        }
        if let Some(late) = self.model().overdue.take() {
            self.overdue(overdue::GRANT, label, late)?;
        }
        if let Some(ceiling) = engine.poll_persist() {
            self.trace.words(&[0xC0FFEE, ceiling]);
            self.log(|| format!("write asked: {ceiling}"));
            self.ask(ceiling, label)?;
        }
        let m = self.model.as_ref().unwrap();
        // (A closed engine ignores the answer of its write, so it stays pending there: see the
        // report. The host waits for the write itself, not for `persist_pending`.)
        if !m.closed && engine.persist_pending() != self.storage.in_flight.is_some() {
            return Err(format!(
                "{label}: persist_pending() is {}, but the write under way is {:?}",
                engine.persist_pending(),
                self.storage.in_flight
            ));
        }
        if !m.closed
            && m.head_waits_for_fence()
            && !m.exhausted()
            && self.storage.in_flight.is_none()
        {
            return Err(format!(
                "{label}: a request waits for a fence, and no fence write is asked for"
            ));
        }
        Ok(())
    }

    /// A late-timer violation of kind `kind`: a failure unless the run lets that kind pass.
    fn overdue(&mut self, kind: u8, label: &str, what: String) -> Result<(), String> {
        if self.lax & kind != 0 {
            self.stats.overdue += 1;
            return Ok(());
        }
        let name = match kind {
            overdue::RELEASE => "release",
            overdue::HOLD => "hold",
            overdue::GRANT => "grant",
            _ => "resume",
        };
        Err(format!("{label}: overdue {name}: {what}"))
    }

    fn ended(&mut self, req: Id) {
        if self.ended.len() == ENDED_KEPT {
            self.ended.pop_front();
        }
        self.ended.push_back(req);
    }

    /// The `pick`-th live request that holds (`true`) or waits (`false`), oldest first.
    fn nth(&self, holding: bool, pick: u16) -> Option<Id> {
        let m = self.model.as_ref()?;
        let of: Vec<Id> = m
            .order
            .iter()
            .copied()
            .filter(|&r| m.holds(r) == holding)
            .collect();
        (!of.is_empty()).then(|| of[pick as usize % of.len()])
    }

    fn place(&self, res: u8, key: u8) -> (usize, usize) {
        let r = res as usize % self.mix.resources.len();
        (r, key as usize % self.mix.resources[r].keys as usize)
    }

    /// One operation (all but a restart) against the engine.
    fn step(&mut self, engine: &mut Engine, op: Op) -> Result<(), String> {
        let now = self.now;
        if self
            .model
            .as_ref()
            .is_some_and(|m| m.next_deadline().is_some_and(|at| at < now))
            && !matches!(op, Op::Fire | Op::Tick { .. } | Op::ToDeadline)
        {
            self.marks.hit(Mark::OverdueDeadline);
        }
        // Every engine call gives back the fences lent to the host first, as the wasm bindings do; the
        // host's own grants and releases make no call.
        if !matches!(op, Op::Local { .. } | Op::LocalRelease { .. }) {
            self.reclaim(engine)?;
        }
        match op {
            Op::Hold { .. } | Op::Release { .. } | Op::Again { .. } | Op::Cancel { .. } => {
                self.step_hold(engine, op, now)
            }
            Op::Remote { .. }
            | Op::AskAgain { .. }
            | Op::Renew { .. }
            | Op::ReleaseLease { .. }
            | Op::CancelRequest { .. }
            | Op::Drop { .. }
            | Op::Goodbye { .. } => self.step_remote(engine, op, now),
            Op::Tick { .. } | Op::ToDeadline | Op::Late { .. } | Op::Fire => {
                self.step_deadlines(engine, op, now)
            }
            Op::Write(_) | Op::Local { .. } | Op::LocalRelease { .. } | Op::Burst { .. } => {
                self.step_fences(engine, op, now)
            }
            Op::Forget { res } => self.forget(engine, res),
            Op::Claim { .. }
            | Op::PoolRelease { .. }
            | Op::PoolReleaseId { .. }
            | Op::Confirm { .. }
            | Op::PoolCancel { .. }
            | Op::Resize { .. }
            | Op::PoolWrite(_) => self.step_pool(engine, op, now),
            Op::Bad { what } => self.bad(engine, what),
            Op::Close => self.close(engine),
            Op::Crash { .. } | Op::Reopen { .. } => unreachable!("the driver restarts"),
        }
    }

    /// Closes the store: every request still live is answered.
    fn close(&mut self, engine: &mut Engine) -> Result<(), String> {
        let m = self.model.as_ref().unwrap();
        if m.busy_keys().filter(|(_, _, k)| m.active(k) > 0).count() >= 3 {
            self.marks.hit(Mark::CloseWithWaitersOnManyKeys);
        }
        if m.pools
            .reqs
            .values()
            .any(|r| matches!(r, MReq::Claiming { .. }))
        {
            self.marks.hit(Mark::PoolCloseUndidClaim);
        }
        engine.close();
        self.model().close();
        self.after_call(engine, "close")?;
        // The store's leases ended, the ones the host granted itself too.
        self.locals.clear();
        Ok(())
    }
}

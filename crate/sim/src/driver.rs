//! The driver: plays the host of one engine through a run, and checks every step.
//!
//! It does what `npm/src/store.ts` and the wasm bindings do for a real store: it maps keys to the ids
//! the engine gives them while they are busy and forgets them at `KeyIdle`, writes the fence ceiling
//! the engine asks for and answers how the write went, fires the timer at the next deadline, drains
//! the events after every call, and starts a new process from what storage holds after a crash. Each
//! operation (`op.rs`) becomes one or more engine calls; after each call the engine's answers and events
//! are compared with the reference model's (`model.rs`), and after each operation the whole state.
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
//!   block the engine lent it (`lend_fences`), as `npm/src/store.ts` does through the wasm bindings;
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
//! - **Names forgotten** (#13 item 5): the host forgets a name as `npm/src/store.ts` does once its
//!   handles are gone (never while it keeps a key of it that it granted itself), and registers it
//!   again when it is next held. The engine forgets exactly when the model has no busy key of it,
//!   refuses otherwise, keeps exactly the names not forgotten (`footprint`), and never answers to
//!   the dead id of a forgotten name, nor gives it (or an id in use) to a name registered again.
//! - **Leases over a connection** (LOCK-05): a lease past its ttl or `maxHold` is never renewed, by a
//!   renewal or by asking again, nor a waiter away past its ttl taken back; a renewal at or after the
//!   deadline is refused; asked again, a live request is never granted twice; waiters away block
//!   nobody; the engine's view of every such request (`remote_of`) and of every connection
//!   (`connection_requests`) equals the model's.
//!
//! A host that lies about storage ([`HostFault`]) is there for the tests that show the checks bite.
//!
//! # Adding operations
//! The host's state for them goes in `Host` (as [`Client`] does for requests over a connection);
//! each is an arm of `Host::step` (or of [`Driver::apply`] if it replaces the engine), checked the
//! same way: the answer and the events against the model, then the whole state.

use std::collections::VecDeque;

use holdfast_engine::bounds::MAX_HOLD_MS;
use holdfast_engine::fence::{BLOCK, MAX_FENCE};
use holdfast_engine::{
    Cancelled, Engine, Error, Event, Failure, Hold, Id, Kind, Remote, Renewal, ResourceId,
};

use crate::gen::{View, LOW_WATER};
use crate::marks::{Mark, Marks};
use crate::model::{Model, State, Target};
use crate::op::{Op, Outcome, Whom};
use crate::storage::Storage;
use crate::swarm::{Mix, BURST_NAME};
use crate::trace::Trace;

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

/// Most grants a run's bursts may make (a block and a bit).
const BURST_BUDGET: u64 = 1_200_000;

/// How many ended requests the host remembers, for releases and cancels that come too late.
const ENDED_KEPT: usize = 16;

/// How many clients over a connection the host remembers.
const CLIENTS_KEPT: usize = 32;

/// A client in another process, as the host knows it: the request id it chose, the lease id the host
/// drew for it, and what it asked for (which it asks again with the same request id). Clients outlive
/// a crash of the store's process: they ask the new one again.
#[derive(Clone, Copy, Debug)]
pub struct Client {
    pub request: u128,
    pub lease: u128,
    pub res: usize,
    pub key: usize,
    pub wait: Option<u64>,
    pub max_hold: Option<u64>,
    pub ttl: u64,
}

/// A lease the host granted itself from a lent fence, which the engine does not know of.
#[derive(Clone, Copy, Debug)]
struct Local {
    res: usize,
    key: usize,
    fence: u64,
    since: u64,
}

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
}

/// One engine and its host, through a run.
pub struct Driver {
    engine: Option<Engine>,
    host: Host,
}

fn code(e: &Error) -> u64 {
    match e {
        Error::Invalid(_) => 1,
        Error::Limit(_) => 2,
        Error::Closed => 3,
    }
}

fn opt(v: Option<u64>) -> u64 {
    v.map_or(u64::MAX, |v| v)
}

fn op_words(op: Op) -> [u64; 5] {
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
    }
}

fn event_words(ev: &Event) -> [u64; 3] {
    match *ev {
        Event::Granted { req, fence } => [1, req.to_u64(), fence],
        Event::TimedOut { req } => [2, req.to_u64(), 0],
        Event::Revoked { req } => [3, req.to_u64(), 0],
        Event::Failed { req, why } => [4, req.to_u64(), why as u64],
        Event::Ended { req, held } => [5, req.to_u64(), held.into()],
        Event::KeyIdle { key } => [6, key.to_u64(), 0],
        Event::Expired { req } => [7, req.to_u64(), 0],
    }
}

fn hold_words(got: &Result<Hold, Error>) -> [u64; 4] {
    match got {
        Ok(Hold::Granted { req, key, fence }) => [1, req.to_u64(), key.to_u64(), *fence],
        Ok(Hold::Queued { req, key }) => [2, req.to_u64(), key.to_u64(), 0],
        Ok(Hold::Busy { key }) => [3, key.to_u64(), 0, 0],
        Ok(Hold::Resumed { req, key, fence }) => [5, req.to_u64(), key.to_u64(), opt(*fence)],
        Err(e) => [4, code(e), 0, 0],
    }
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
        }
    }

    /// Starts a process on what storage holds, its clock at `clock`.
    fn open(&mut self, clock: u64) -> Result<(), String> {
        let h = &mut self.host;
        h.now = clock;
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
        h.model = Model::open(
            stored,
            h.rids.clone(),
            limits,
            &keys,
            h.mix.connection_limit,
        );
        h.after_call(&mut engine, "open")?;
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
                h.storage.die(landed);
                h.stats.restarts += 1;
                return self.open(clock);
            }
            _ => {}
        }
        h.step(engine, op)?;
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
            }
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

    /// A fence handed out: the durability invariants, against ghost state.
    fn grant(&mut self, fence: u64) -> Result<(), String> {
        if fence == 0 || fence > MAX_FENCE {
            return Err(format!("fence {fence} is not a safe integer from 1"));
        }
        if fence <= self.max_fence {
            return Err(format!(
                "fence {fence} is not above {} handed out before (across restarts)",
                self.max_fence
            ));
        }
        if fence > self.storage.acked {
            return Err(format!(
                "fence {fence} above the ceiling {} acknowledged to this process",
                self.storage.acked
            ));
        }
        if self.storage.durable.is_none_or(|d| fence > d) {
            return Err(format!(
                "fence {fence} above what the disk holds ({:?}): a crash would repeat it",
                self.storage.durable
            ));
        }
        self.max_fence = fence;
        self.stats.grants += 1;
        Ok(())
    }

    /// The engine asks for `ceiling` to be written.
    fn ask(&mut self, ceiling: u64, label: &str) -> Result<(), String> {
        let m = self.model.as_ref().unwrap();
        let last = m.next - 1;
        let base = m.covered.max(last);
        if ceiling <= last || ceiling > MAX_FENCE || ceiling > base + BLOCK {
            return Err(format!(
                "{label}: asked to write the ceiling {ceiling}, with {last} handed out and {} covered",
                m.covered
            ));
        }
        // One write per block: only once fewer than half a block of covered fences is left.
        if m.covered.saturating_sub(last) >= LOW_WATER {
            return Err(format!(
                "{label}: asked to write {ceiling} with {} fences still covered",
                m.covered - last
            ));
        }
        if m.available() && label != "open" {
            self.marks.hit(Mark::ReservationAskedEarly);
        }
        self.storage
            .ask(ceiling)
            .map_err(|e| format!("{label}: {e}"))
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

    fn fire(&mut self, engine: &mut Engine, at: u64) -> Result<(), String> {
        self.now = at;
        engine.advance(at);
        let acted = self.model().advance(at);
        for a in &acted {
            match (a.due, a.handed_on) {
                (0, _) => self.marks.hit(Mark::WaitRanOut),
                (1, true) => self.marks.hit(Mark::RevokeHandsKeyOn),
                (2, true) => self.marks.hit(Mark::LeaseExpiryHandsKeyOn),
                (3, _) => self.marks.hit(Mark::AwayRunsOut),
                _ => {}
            }
        }
        let keys = acted.iter().map(|a| (a.res, a.key)).collect();
        self.expired = (at, keys);
        self.after_call(engine, "advance")
    }

    fn expiry_mark(&mut self, req: Id) {
        let Some(r) = self.model.as_ref().and_then(|m| m.reqs.get(&req)) else {
            return;
        };
        if self.expired.0 == self.now && self.expired.1.contains(&(r.res, r.key)) {
            self.marks.hit(Mark::ExpiryAndReleaseInOneInstant);
        }
    }

    /// Whether `req` holds a lease whose `maxHold` (or ttl) fell due before `now` (at or before, with
    /// `inclusive`), though the late timer has not acted on it.
    fn overdue_holder(&self, req: Id, inclusive: bool) -> bool {
        let now = self.now;
        let past = |at: u64| at < now || (inclusive && at == now);
        self.model
            .as_ref()
            .and_then(|m| m.reqs.get(&req))
            .is_some_and(|r| match r.state {
                State::Holding {
                    revoke_at,
                    expires_at,
                    ..
                } => revoke_at.is_some_and(past) || expires_at.is_some_and(past),
                State::Waiting { .. } => false,
            })
    }

    /// Whether the key a hold goes to is held or waited for only by requests whose deadline passed
    /// before now, and so, had the late timer fired, would have been granted at once.
    fn blocked_only_by_the_overdue(&self, t: &Target) -> bool {
        let now = self.now;
        let Some(r) = t.res else { return false };
        let m = self.model.as_ref().unwrap();
        m.key(r, t.key).is_some_and(|k| {
            let alive = |req: &Id| match m.reqs[req].state {
                State::Holding {
                    revoke_at,
                    expires_at,
                    ..
                } => revoke_at.is_none_or(|at| at >= now) && expires_at.is_none_or(|at| at >= now),
                State::Waiting { deadline, .. } => deadline.is_none_or(|at| at >= now),
            };
            // Waiters away block nobody: only the active ones count.
            let active: Vec<Id> = k.line.iter().copied().filter(|&w| !m.is_away(w)).collect();
            let holders = k.holders.iter().filter(|r| alive(r)).count();
            let waiting = active.iter().filter(|r| alive(r)).count();
            m.available()
                && holders < m.limit(r) as usize
                && waiting == 0
                && holders + waiting < k.holders.len() + active.len()
        })
    }

    /// A hold through the engine and the model: the fast path first if `fast`, over a connection if
    /// `remote`; then the late-timer check.
    fn hold(
        &mut self,
        engine: &mut Engine,
        t: Target,
        wait: Option<u64>,
        max_hold: Option<u64>,
        fast: bool,
        remote: Option<Remote>,
    ) -> Result<Option<Hold>, String> {
        let now = self.now;
        let rid = match t.res {
            Some(r) => self.registered(engine, r)?,
            None => ResourceId::from_u64(250).expect("an id"),
        };
        let blocked = self.blocked_only_by_the_overdue(&t);
        if fast && remote.is_none() {
            let got = engine.hold_untimed(rid, t.arg, wait, max_hold);
            self.trace.word(match &got {
                Ok(None) => 0xF1,
                Ok(Some(h)) => hold_words(&Ok(*h))[0] | 0xF0,
                Err(e) => 0xE0 | code(e),
            });
            self.log(|| format!("hold_untimed -> {got:?}"));
            self.model()
                .hold(t, wait, max_hold, None, None, &got)
                .map_err(|e| format!("untimed hold: {e}"))?;
            match got {
                Ok(None) => self.marks.hit(Mark::UntimedNeedsTime),
                other => {
                    self.after_call(engine, "untimed hold")?;
                    return Ok(other.ok().flatten());
                }
            }
        }
        let got = match remote {
            Some(remote) => engine.hold_remote(rid, t.arg, wait, max_hold, remote, now),
            None => engine.hold(rid, t.arg, wait, max_hold, now),
        };
        self.trace.words(&hold_words(&got));
        self.log(|| format!("hold -> {got:?}"));
        let checked = match remote {
            Some(remote) => self
                .model()
                .hold_remote(t, wait, max_hold, remote, now, &got),
            None => self.model().hold_timed(t, wait, max_hold, now, &got),
        };
        checked.map_err(|e| format!("hold: {e}"))?;
        // (Whether the key was held only by requests past their deadlines is the model's to say: it
        // acts on them first, in their order, as the engine must. A waiter may have been handed the
        // key at a holder's deadline, before its own wait ran out, and hold it still: `blocked`
        // alone, taken before the call, cannot tell.)
        let _ = blocked;
        self.after_call(engine, "hold")?;
        Ok(got.ok())
    }

    /// The `pick`-th remembered client.
    fn client(&self, pick: u16) -> Option<Client> {
        (!self.clients.is_empty()).then(|| self.clients[pick as usize % self.clients.len()])
    }

    fn remember(&mut self, client: Client) {
        if self.clients.len() == CLIENTS_KEPT {
            self.clients.pop_front();
        }
        self.clients.push_back(client);
    }

    fn draw_id(&mut self) -> u128 {
        self.next_id += 1;
        self.next_id
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
            Op::Hold {
                res,
                key,
                wait,
                max_hold,
                fast,
            } => {
                let (r, k) = self.place(res, key);
                self.adopt_if_local(engine, r, k)?;
                let m = self.model.as_ref().unwrap();
                let arg = m.key(r, k).map(|k| k.id);
                if let Some(key) = m.key(r, k) {
                    if self.mix.resources[r].kind == Kind::Semaphore && m.active(key) > 0 {
                        if key.holders.len() == m.limit(r) as usize {
                            self.marks.hit(Mark::SemaphoreHeadWaits);
                        } else {
                            self.marks.hit(Mark::SemaphoreNoBargePastStalledHead);
                        }
                    }
                    if wait == Some(0) && key.holders.len() == m.limit(r) as usize {
                        self.marks.hit(Mark::TryRefused);
                    }
                }
                let t = Target {
                    res: Some(r),
                    key: k,
                    arg,
                };
                self.hold(engine, t, wait, max_hold, fast, None)?;
            }
            Op::Release { pick, fast } => {
                let Some(req) = self.nth(true, pick) else {
                    return Ok(());
                };
                if fast {
                    let got = engine.release_untimed(req);
                    self.trace.word(match &got {
                        Ok(None) => 0xF1,
                        Ok(Some(b)) => u64::from(*b),
                        Err(e) => 0xE0 | code(e),
                    });
                    self.log(|| format!("release_untimed {req:?} -> {got:?}"));
                    let overdue = self.overdue_holder(req, false);
                    self.model()
                        .release_untimed(req, &got)
                        .map_err(|e| format!("untimed release: {e}"))?;
                    match got {
                        Ok(None) => self.marks.hit(Mark::UntimedNeedsTime),
                        other => {
                            if overdue && other == Ok(Some(true)) {
                                self.overdue(
                                    overdue::RELEASE,
                                    "untimed release",
                                    format!(
                                        "a lease past its deadline was released as held at {now}"
                                    ),
                                )?;
                            }
                            return self.after_call(engine, "untimed release");
                        }
                    }
                }
                self.release(engine, req)?;
            }
            Op::Again { pick } => {
                if self.ended.is_empty() {
                    return Ok(());
                }
                let req = self.ended[pick as usize % self.ended.len()];
                self.release(engine, req)?;
            }
            Op::Cancel { whom, pick } => {
                let m = self.model.as_ref().unwrap();
                let req = match whom {
                    Whom::Waiting => self.nth(false, pick),
                    Whom::Holding => self.nth(true, pick),
                    Whom::Granted => {
                        let of: Vec<Id> = self
                            .granted
                            .iter()
                            .copied()
                            .filter(|&r| m.holds(r))
                            .collect();
                        (!of.is_empty()).then(|| of[pick as usize % of.len()])
                    }
                    Whom::Ended => (!self.ended.is_empty())
                        .then(|| self.ended[pick as usize % self.ended.len()]),
                };
                let Some(req) = req else {
                    return Ok(());
                };
                if let Some(r) = m.reqs.get(&req) {
                    let head = m.key(r.res, r.key).and_then(|k| m.head(k));
                    if head.map(|(_, h)| h) == Some(req) {
                        self.marks.hit(Mark::CancelOfHead);
                    }
                }
                self.expiry_mark(req);
                let got = engine.cancel(req, now);
                self.cancelled(&got, req.to_u64());
                self.model()
                    .cancel(req, now, &got)
                    .map_err(|e| format!("cancel: {e}"))?;
                if whom == Whom::Granted && got == Ok(Cancelled::Released) {
                    self.marks.hit(Mark::GrantRacedCancel);
                }
                self.after_call(engine, "cancel")?;
            }
            Op::Remote {
                res,
                key,
                conn,
                wait,
                max_hold,
                ttl,
            } => {
                let (r, k) = self.place(res, key);
                self.adopt_if_local(engine, r, k)?;
                let client = Client {
                    request: self.draw_id(),
                    lease: self.draw_id(),
                    res: r,
                    key: k,
                    wait,
                    max_hold,
                    ttl,
                };
                let conn = u32::from(conn % self.mix.conns);
                self.remember(client);
                self.ask_remote(engine, client, conn)?;
            }
            Op::AskAgain { pick, conn } => {
                let Some(mut client) = self.client(pick) else {
                    return Ok(());
                };
                let conn = u32::from(conn % self.mix.conns);
                let m = self.model.as_ref().unwrap();
                match m.by_request(client.request) {
                    Some(req) => {
                        let away = match m.reqs[&req].state {
                            State::Waiting { away, .. } => away,
                            State::Holding { .. } => None,
                        };
                        let overdue = self.overdue_holder(req, true);
                        let got = self.ask_remote(engine, client, conn)?;
                        if away.is_some() && matches!(got, Some(Hold::Resumed { .. })) {
                            self.marks.hit(Mark::AwayBackInPlace);
                            if away.is_some_and(|at| at <= now) {
                                self.overdue(
                                    overdue::RESUME,
                                    "ask again",
                                    format!("a waiter away past its ttl came back at {now} by asking again with its request id (it was to be ended then)"),
                                )?;
                            }
                        }
                        match got {
                            Some(Hold::Resumed { fence: Some(_), .. }) => {
                                self.marks.hit(Mark::AskAgainResumesLease);
                                if overdue {
                                    self.overdue(
                                        overdue::RESUME,
                                        "ask again",
                                        format!("a lease at or past its ttl or maxHold was renewed at {now} by asking again with its request id (renew() refuses it; the answer is {got:?})"),
                                    )?;
                                }
                            }
                            Some(Hold::Resumed { fence: None, .. }) => {
                                self.marks.hit(Mark::AskAgainKeepsPlace)
                            }
                            _ => {}
                        }
                    }
                    None => {
                        // Its request ended: a new one, with a new lease id.
                        self.adopt_if_local(engine, client.res, client.key)?;
                        client.lease = self.draw_id();
                        let at = pick as usize % self.clients.len();
                        self.clients[at] = client;
                        if matches!(
                            self.ask_remote(engine, client, conn)?,
                            Some(Hold::Granted { .. } | Hold::Queued { .. })
                        ) {
                            self.marks.hit(Mark::AskedAfresh);
                        }
                    }
                }
            }
            Op::Renew { pick } => {
                let Some(client) = self.client(pick) else {
                    return Ok(());
                };
                let live = self.model.as_ref().unwrap().by_lease(client.lease);
                let got = engine.renew(client.lease, now);
                self.trace.words(&match got {
                    Ok(Renewal::Renewed { ttl, revoke_in }) => [1, ttl, opt(revoke_in)],
                    Ok(Renewal::Lost) => [2, 0, 0],
                    Err(ref e) => [3, code(e), 0],
                });
                self.log(|| format!("renew {:x} -> {got:?}", client.lease));
                self.model()
                    .renew(client.lease, now, &got)
                    .map_err(|e| format!("renew: {e}"))?;
                match got {
                    Ok(Renewal::Renewed { .. }) => self.marks.hit(Mark::LeaseRenewed),
                    Ok(Renewal::Lost) if live.is_none() => self.marks.hit(Mark::RenewOfLostLease),
                    _ => {}
                }
                self.after_call(engine, "renew")?;
            }
            Op::ReleaseLease { pick } => {
                let Some(client) = self.client(pick) else {
                    return Ok(());
                };
                let req = self.model.as_ref().unwrap().by_lease(client.lease);
                let overdue = req.is_some_and(|r| self.overdue_holder(r, false));
                if let Some(req) = req {
                    self.expiry_mark(req);
                }
                let got = engine.release_lease(client.lease, now);
                self.trace.words(&[
                    match got {
                        Ok(b) => b.into(),
                        Err(ref e) => 2 + code(e),
                    },
                    client.lease as u64,
                ]);
                self.log(|| format!("release_lease {:x} -> {got:?}", client.lease));
                self.model()
                    .release_lease(client.lease, now, &got)
                    .map_err(|e| format!("release by lease id: {e}"))?;
                if overdue && got == Ok(true) {
                    self.overdue(
                        overdue::RELEASE,
                        "release by lease id",
                        format!("a lease past its ttl or maxHold was released as held at {now}"),
                    )?;
                }
                self.after_call(engine, "release by lease id")?;
            }
            Op::CancelRequest { pick } => {
                let Some(client) = self.client(pick) else {
                    return Ok(());
                };
                let got = engine.cancel_request(client.request, now);
                self.cancelled(&got, client.request as u64);
                self.model()
                    .cancel_request(client.request, now, &got)
                    .map_err(|e| format!("cancel by request id: {e}"))?;
                self.after_call(engine, "cancel by request id")?;
            }
            Op::Drop { conn } | Op::Goodbye { conn } => {
                let goodbye = matches!(op, Op::Goodbye { .. });
                let conn = u32::from(conn % self.mix.conns);
                let m = self.model.as_ref().unwrap();
                let leases = m
                    .order
                    .iter()
                    .any(|&r| m.holds(r) && m.reqs[&r].remote.is_some_and(|x| x.conn == conn));
                let got = if goodbye {
                    engine.goodbye(conn, now)
                } else {
                    engine.connection_closed(conn, now)
                };
                self.trace.word(u64::from(goodbye) << 32 | u64::from(conn));
                self.trace
                    .words(&got.iter().map(|id| id.to_u64()).collect::<Vec<_>>());
                self.log(|| format!("end of connection {conn} -> {got:?}"));
                let checked = if goodbye {
                    self.model().goodbye(conn, now, &got)
                } else {
                    self.model().drop_connection(conn, now, &got)
                };
                checked?;
                match (goodbye, leases) {
                    (true, true) => self.marks.hit(Mark::GoodbyeHandsKeyOn),
                    (false, true) => self.marks.hit(Mark::DropKeepsLease),
                    _ => {}
                }
                if !goodbye && !got.is_empty() {
                    self.marks.hit(Mark::DropPutsWaitersAway);
                }
                self.after_call(engine, "end of connection")?;
            }
            Op::Tick { ms } => {
                let target = now.saturating_add(ms);
                while let Some(at) = self.next_deadline(engine)?.filter(|&at| at <= target) {
                    let at = at.max(self.now);
                    self.fire(engine, at)?;
                }
                self.now = target;
            }
            Op::ToDeadline => {
                if let Some(at) = self.next_deadline(engine)? {
                    self.fire(engine, at.max(now))?;
                }
            }
            Op::Late { ms } => self.now = now.saturating_add(ms),
            Op::Fire => self.fire(engine, now)?,
            Op::Write(outcome) => {
                let waiters = self.model.as_ref().unwrap().head_waits_for_fence();
                let lie =
                    outcome == Outcome::FailLost && self.fault == Some(HostFault::AckWithoutWrite);
                let Some(ceiling) = self.storage.settle(outcome) else {
                    return Ok(());
                };
                self.log(|| format!("write {ceiling}: {outcome:?}"));
                if outcome == Outcome::Ok || lie {
                    self.storage.acked = self.storage.acked.max(ceiling);
                    engine.persisted(ceiling, now);
                    self.model().persisted(ceiling, now);
                } else {
                    if outcome == Outcome::FailLanded {
                        self.marks.hit(Mark::UnknownWriteOutcome);
                    }
                    if waiters && !self.model.as_ref().unwrap().closed {
                        self.marks.hit(Mark::WriteFailedWhileWaitersQueue);
                    }
                    engine.persist_failed(ceiling, now);
                    self.model().persist_failed(now);
                }
                self.after_call(engine, "write")?;
            }
            Op::Close => {
                let m = self.model.as_ref().unwrap();
                if m.busy_keys().filter(|(_, _, k)| m.active(k) > 0).count() >= 3 {
                    self.marks.hit(Mark::CloseWithWaitersOnManyKeys);
                }
                engine.close();
                self.model().close();
                self.after_call(engine, "close")?;
                // The store's leases ended, the ones the host granted itself too.
                self.locals.clear();
            }
            Op::Local {
                res,
                key,
                wait,
                max,
            } => {
                let (r, k) = self.place(res, key);
                // The host has a handle of the name: registered (again, if it was forgotten).
                self.registered(engine, r)?;
                let free = self.mix.resources[r].kind == Kind::Lock
                    && self.model.as_ref().unwrap().key(r, k).is_none();
                if !self.adopt_if_local(engine, r, k)? && free {
                    if let Some(fence) = self.local_fence(engine, u64::from(max))? {
                        self.grant(fence)?;
                        self.trace.words(&[0x10CA1, fence]);
                        self.log(|| format!("granted r{r}/{k} itself, fence {fence}"));
                        self.locals.push(Local {
                            res: r,
                            key: k,
                            fence,
                            since: now,
                        });
                        return Ok(());
                    }
                }
                // Held as usual: a key the engine knows busy (perhaps just adopted), a semaphore, or
                // no fence to lend.
                self.reclaim(engine)?;
                let t = Target {
                    res: Some(r),
                    key: k,
                    arg: self.model.as_ref().unwrap().key(r, k).map(|k| k.id),
                };
                self.hold(engine, t, wait, None, true, None)?;
            }
            Op::LocalRelease { pick } => {
                if self.locals.is_empty() {
                    return Ok(());
                }
                let l = self.locals.remove(pick as usize % self.locals.len());
                self.trace.words(&[0x10CA2, l.fence]);
                self.log(|| format!("released r{}/{} itself, fence {}", l.res, l.key, l.fence));
            }
            Op::Forget { res } => self.forget(engine, res)?,
            Op::Burst { leave } => self.burst(engine, leave)?,
            Op::Bad { what } => self.bad(engine, what)?,
            Op::Crash { .. } | Op::Reopen { .. } => unreachable!("the driver restarts"),
        }
        Ok(())
    }

    /// The next fence of the host's block for a grant it makes itself, borrowing a block of up to
    /// `max` when it has none left (giving back the used-up one first, as the wasm `lend` does).
    /// `None` when the engine lends none.
    fn local_fence(&mut self, engine: &mut Engine, max: u64) -> Result<Option<u64>, String> {
        if let Some((_, next, end)) = &mut self.block {
            if *next < *end {
                *next += 1;
                return Ok(Some(*next - 1));
            }
        }
        self.reclaim(engine)?;
        let got = engine.lend_fences(max);
        let want = self.model().lend(max);
        let (first, end) = got.unwrap_or((0, 0));
        self.trace.words(&[0x1E4D, first, end]);
        self.log(|| format!("lend_fences({max}) -> {got:?}"));
        if got != want {
            return Err(format!("lend: the engine lent {got:?}, the model {want:?}"));
        }
        if got.is_some_and(|(first, end)| first >= end) {
            return Err(format!("lend: an empty block {got:?}"));
        }
        // Lending may ask for the next ceiling, as a grant may: checked as after every call.
        self.after_call(engine, "lend")?;
        if got.is_none() {
            return Ok(None);
        }
        self.block = Some((first, first + 1, end));
        Ok(Some(first))
    }

    /// Gives back the host's block of lent fences, if it has one: the start of every engine call.
    fn reclaim(&mut self, engine: &mut Engine) -> Result<(), String> {
        let Some((first, next, end)) = self.block.take() else {
            return Ok(());
        };
        if first < next && next < end {
            self.marks.hit(Mark::LentPartlyReclaimed);
        }
        engine.reclaim_fences(next);
        self.trace.words(&[0x8EC1, next]);
        self.log(|| format!("reclaim_fences({next}) of [{first}, {end})"));
        self.model()
            .reclaim(next)
            .map_err(|e| format!("reclaim: {e}"))?;
        if engine.fences_lent() {
            return Err("reclaim: the engine still lends fences".into());
        }
        Ok(())
    }

    /// The host forgets resource `r`'s name (see `Op::Forget`); the engine must agree exactly when the
    /// model has no busy key of it, and an id kept past it must name nothing.
    fn forget(&mut self, engine: &mut Engine, res: u8) -> Result<(), String> {
        let r = res as usize % self.mix.resources.len();
        // Nothing to forget; or a key the host granted itself refers to it (it could not be handed
        // over: the host never forgets such a name).
        if self.forgotten[r] || self.locals.iter().any(|l| l.res == r) {
            return Ok(());
        }
        let m = self.model.as_ref().unwrap();
        let busy = m.busy_keys().any(|(kr, _, _)| kr == r);
        let closed = m.closed;
        let rid = self.rids[r];
        let got = engine.forget(rid);
        self.trace
            .word(got.as_ref().map_or_else(|e| 0xE0 | code(e), |_| 0xF0));
        self.log(|| format!("forget r{r} {rid:?} -> {got:?}"));
        let want = if closed {
            Some("closed")
        } else if busy {
            Some("invalid")
        } else {
            None
        };
        match (&got, want) {
            (Ok(()), None) => {
                self.forgotten[r] = true;
                self.marks.hit(Mark::NameForgotten);
                // The old id names nothing now: refused, changing nothing (the full check after
                // the operation proves it).
                let held = engine.hold_untimed(rid, None, Some(0), None);
                let adopted = engine.adopt(rid, 1, self.now);
                if engine.resource_info(rid).is_some()
                    || !matches!(&held, Err(e) if e.code() == "invalid")
                    || !matches!(&adopted, Err(e) if e.code() == "invalid")
                {
                    return Err(format!(
                        "forget: the forgotten id {rid:?} still names a resource: hold {held:?}, adopt {adopted:?}"
                    ));
                }
            }
            (Err(e), Some(code)) if e.code() == code => {
                if busy && !closed {
                    self.marks.hit(Mark::ForgetRefused);
                }
            }
            _ => {
                return Err(format!(
                    "forget: the engine answered {got:?}; the model has busy keys of r{r}: {busy}, closed: {closed}"
                ))
            }
        }
        self.after_call(engine, "forget")
    }

    /// The id of resource `r`, registering its name again if the host forgot it: a new id, never
    /// one in use nor the dead one.
    fn registered(&mut self, engine: &mut Engine, r: usize) -> Result<ResourceId, String> {
        if !self.forgotten[r] {
            return Ok(self.rids[r]);
        }
        let old = self.rids[r];
        let spec = &self.mix.resources[r];
        let got = engine.resource(spec.kind, &spec.name, spec.limit);
        self.trace.word(
            got.as_ref()
                .map_or_else(|e| 0xE0 | code(e), |id| id.to_u64()),
        );
        self.log(|| format!("resource r{r} again -> {got:?}"));
        let closed = self.model.as_ref().unwrap().closed;
        match got {
            Ok(rid) if !closed => {
                if rid == old || self.rids.contains(&rid) || rid == self.burst {
                    return Err(format!(
                        "resource: forgotten r{r} came back as {rid:?}, an id dead or in use ({:?})",
                        self.rids
                    ));
                }
                if engine.resource_info(old).is_some() {
                    return Err(format!("resource: the dead id {old:?} names a resource"));
                }
                self.rids[r] = rid;
                self.model().set_rid(r, rid);
                self.forgotten[r] = false;
                self.marks.hit(Mark::NameRegisteredAgain);
                Ok(rid)
            }
            Err(e) if closed && e.code() == "closed" => Ok(old),
            other => Err(format!(
                "resource: registering forgotten r{r} again answered {other:?} (closed: {closed})"
            )),
        }
    }

    /// Another request wants key `k` of resource `r`: if the host granted it itself, it hands the key
    /// over to the engine first. Answers whether it did.
    fn adopt_if_local(&mut self, engine: &mut Engine, r: usize, k: usize) -> Result<bool, String> {
        let Some(at) = self.locals.iter().position(|l| (l.res, l.key) == (r, k)) else {
            return Ok(false);
        };
        let local = self.locals.remove(at);
        self.reclaim(engine)?;
        let got = engine.adopt(self.rids[r], local.fence, local.since);
        self.trace.words(&hold_words(&got));
        self.log(|| {
            format!(
                "adopt r{r}/{k} fence {} since {} -> {got:?}",
                local.fence, local.since
            )
        });
        self.model()
            .adopt(r, k, local.fence, local.since, &got)
            .map_err(|e| format!("adopt: {e}"))?;
        if got.is_ok() {
            self.marks.hit(Mark::LocalAdopted);
        }
        self.after_call(engine, "adopt")?;
        Ok(true)
    }

    fn cancelled(&mut self, got: &Result<Cancelled, Error>, name: u64) {
        self.trace.words(&[
            match got {
                Ok(Cancelled::Left) => 1,
                Ok(Cancelled::Released) => 2,
                Ok(Cancelled::Unknown) => 3,
                Err(e) => 4 + code(e),
            },
            name,
        ]);
        self.log(|| format!("cancel {name:x} -> {got:?}"));
    }

    /// A client asks on connection `conn`, with its request id.
    fn ask_remote(
        &mut self,
        engine: &mut Engine,
        client: Client,
        conn: u32,
    ) -> Result<Option<Hold>, String> {
        let m = self.model.as_ref().unwrap();
        let t = Target {
            res: Some(client.res),
            key: client.key,
            arg: m.key(client.res, client.key).map(|k| k.id),
        };
        let full = !m.closed && m.on_connection(conn) >= m.connection_limit;
        let remote = Remote {
            conn,
            request: client.request,
            lease: client.lease,
            ttl: client.ttl,
        };
        let got = self.hold(engine, t, client.wait, client.max_hold, false, Some(remote))?;
        if full && got.is_none() {
            self.marks.hit(Mark::ConnectionLimit);
        }
        Ok(got)
    }

    fn release(&mut self, engine: &mut Engine, req: Id) -> Result<(), String> {
        let now = self.now;
        let overdue = self.overdue_holder(req, false);
        self.expiry_mark(req);
        let got = engine.release(req, now);
        self.trace.words(&[
            match got {
                Ok(b) => b.into(),
                Err(ref e) => 2 + code(e),
            },
            req.to_u64(),
        ]);
        self.log(|| format!("release {req:?} -> {got:?}"));
        self.model()
            .release(req, now, &got)
            .map_err(|e| format!("release: {e}"))?;
        if overdue && got == Ok(true) {
            self.overdue(
                overdue::RELEASE,
                "release",
                format!("a lease past its deadline was released as held at {now} (its hold resolves instead of rejecting LostError)"),
            )?;
        }
        self.after_call(engine, "release")
    }

    fn next_deadline(&mut self, engine: &mut Engine) -> Result<Option<u64>, String> {
        let e = engine.next_deadline();
        let m = self.model.as_ref().unwrap();
        let want = if m.closed { None } else { m.next_deadline() };
        if e != want {
            return Err(format!(
                "next_deadline: the engine's {e:?}, the model's {want:?}"
            ));
        }
        Ok(e)
    }

    /// Grants and releases on the burst key until `leave` covered fences are left.
    fn burst(&mut self, engine: &mut Engine, leave: u64) -> Result<(), String> {
        let now = self.now;
        if self.model.as_ref().unwrap().closed {
            return Ok(());
        }
        // The burst's own calls act on deadlines that fell due (a late timer's): do that first, on
        // both sides and checked, so that the burst itself meets nothing due.
        engine.advance(now);
        self.model().advance(now);
        self.after_call(engine, "burst: deadlines first")?;
        let m = self.model.as_ref().unwrap();
        if m.closed || !m.available() {
            return Ok(());
        }
        let left = m.covered + 1 - m.next;
        let n = left.saturating_sub(leave).min(self.burst_budget);
        self.burst_budget -= n;
        for _ in 0..n {
            let fence = self.model.as_ref().unwrap().next;
            let (req, key) = match engine.hold(self.burst, None, Some(0), None, now) {
                Ok(Hold::Granted { req, key, fence: f }) if f == fence => (req, key),
                other => {
                    return Err(format!(
                        "burst: hold of a free key with fence {fence} covered answered {other:?}"
                    ))
                }
            };
            self.model().take();
            self.grant(fence)?;
            match engine.release(req, now) {
                Ok(true) => {}
                other => return Err(format!("burst: release answered {other:?}")),
            }
            match (engine.poll_event(), engine.poll_event()) {
                (Some(Event::KeyIdle { key: k }), None) if k == key => {}
                other => return Err(format!("burst: events after a release {other:?}")),
            }
            if let Some(ceiling) = engine.poll_persist() {
                self.trace.words(&[0xC0FFEE, ceiling, fence]);
                self.ask(ceiling, "burst")?;
            }
        }
        // The burst's holds were timed: the engine's latest time is now.
        self.model().last_now = self.model.as_ref().unwrap().last_now.max(now);
        self.stats.calls += 2 * n;
        self.trace.words(&[n, self.model.as_ref().unwrap().next]);
        self.log(|| format!("burst of {n} grants"));
        if n > 0 && !self.model.as_ref().unwrap().available() {
            // The next hold waits for the next ceiling: a block ran out in the middle of a process.
            self.marks.hit(Mark::BlockRanOut);
        }
        Ok(())
    }

    /// Bad input: refused, and nothing changes (the full check after the operation proves it).
    fn bad(&mut self, engine: &mut Engine, what: u8) -> Result<(), String> {
        // Deadlines due are acted on first (as every timed call would), so that the ids picked below
        // are still busy during the call: a dead id is not bad input any more (it names a key anew).
        if !self.model.as_ref().unwrap().closed {
            let now = self.now;
            engine.advance(now);
            self.model().advance(now);
            self.after_call(engine, "bad: deadlines first")?;
        }
        let m = self.model.as_ref().unwrap();
        let valid = m.key(0, 0).map(|k| k.id);
        let busy = m.busy_keys().next().map(|(r, _, k)| (r, k.id));
        let live_lease = m.reqs.values().find_map(|r| r.remote.map(|x| x.lease));
        let closed = m.closed;
        let t = |res, arg| Target { res, key: 0, arg };
        match what % 8 {
            0 => self
                .hold(engine, t(Some(0), valid), Some(10), Some(0), false, None)
                .map(drop),
            1 => self
                .hold(
                    engine,
                    t(Some(0), valid),
                    None,
                    Some(MAX_HOLD_MS + 1),
                    false,
                    None,
                )
                .map(drop),
            2 => self
                .hold(engine, t(None, None), Some(10), None, false, None)
                .map(drop),
            3 => {
                let n = self.mix.resources.len();
                let Some((r, id)) = busy.filter(|_| n > 1) else {
                    return Ok(());
                };
                self.hold(
                    engine,
                    t(Some((r + 1) % n), Some(id)),
                    Some(10),
                    None,
                    false,
                    None,
                )
                .map(drop)
            }
            4 => {
                // A dead key id (the key went idle before the host heard) names the key anew. Only
                // where the key is idle: were it busy under another id, the host would be at fault.
                let Some(stale) = self.last_idle else {
                    return Ok(());
                };
                let local = self.locals.iter().any(|l| (l.res, l.key) == (0, 0));
                if closed || local || self.model().key(0, 0).is_some() {
                    return Ok(());
                }
                self.hold(engine, t(Some(0), Some(stale)), Some(10), None, false, None)
                    .map(drop)
            }
            5 => {
                if let Some(r) = (self.mix.resources.iter()).position(|r| r.kind == Kind::Semaphore)
                {
                    // Forgotten, the name would be new, and any limit its limit.
                    self.registered(engine, r)?;
                }
                let got = match self
                    .mix
                    .resources
                    .iter()
                    .find(|r| r.kind == Kind::Semaphore)
                {
                    Some(s) => engine.resource(Kind::Semaphore, &s.name, s.limit % 8 + 1),
                    None => engine.resource(Kind::Lock, "Bad name", 1),
                };
                let want = if closed { "closed" } else { "invalid" };
                self.trace.word(got.as_ref().map_or_else(code, |_| 0));
                match got {
                    Err(e) if e.code() == want => Ok(()),
                    other => Err(format!("bad: resource answered {other:?}, expected {want}")),
                }
            }
            6 => {
                // A ttl below the bounds.
                let remote = Remote {
                    conn: 0,
                    request: self.draw_id(),
                    lease: self.draw_id(),
                    ttl: 999,
                };
                self.hold(engine, t(Some(0), valid), None, None, false, Some(remote))
                    .map(drop)
            }
            _ => {
                // A lease id the host drew twice: refused, the host draws again.
                let Some(lease) = live_lease else {
                    return Ok(());
                };
                let remote = Remote {
                    conn: 0,
                    request: self.draw_id(),
                    lease,
                    ttl: 1_000,
                };
                self.hold(engine, t(Some(0), valid), None, None, false, Some(remote))
                    .map(drop)
            }
        }
    }

    /// After every operation: the whole state of the engine against the model's.
    fn check_all(&mut self, engine: &mut Engine) -> Result<(), String> {
        let now = self.now;
        let on_time = !self.mix.late_timers;
        let m = self.model.as_ref().unwrap();
        let fp = engine.footprint();
        if m.closed {
            if engine.inspect(now) != Err(Error::Closed) || (fp.keys, fp.requests) != (0, 0) {
                return Err("close: the engine still answers or keeps requests".into());
            }
        } else {
            engine.check();
            let keys = m.busy_keys().count();
            if (fp.keys, fp.requests) != (keys, m.reqs.len()) {
                return Err(format!(
                    "footprint: the engine keeps {} keys and {} requests, the model {keys} and {}",
                    fp.keys,
                    fp.requests,
                    m.reqs.len()
                ));
            }
            // No idle name kept: the mix's names not forgotten, and the bursts' lock.
            let names = self.forgotten.iter().filter(|&&f| !f).count() + 1;
            if fp.resources != names {
                return Err(format!(
                    "footprint: the engine keeps {} resources, the host {names}",
                    fp.resources
                ));
            }
            let views = engine.inspect(now).map_err(|e| format!("inspect: {e}"))?;
            let want = m.views(now);
            if views != want {
                return Err(format!(
                    "inspect: the engine's {views:?}, the model's {want:?}"
                ));
            }
            for (&req, r) in &m.reqs {
                if r.remote.is_some() || engine.remote_of(req).is_some() {
                    let (got, want) = (engine.remote_of(req), m.remote_view(req));
                    if got != want {
                        return Err(format!(
                            "remote_of({req:?}): the engine's {got:?}, the model's {want:?}"
                        ));
                    }
                }
            }
            for conn in 0..u32::from(self.mix.conns) {
                let (got, want) = (engine.connection_requests(conn), m.on_connection(conn));
                if got != want {
                    return Err(format!(
                        "connection {conn}: the engine counts {got} requests, the model {want}"
                    ));
                }
            }
            self.next_deadline(engine)?;
        }
        let m = self.model.as_ref().unwrap();
        m.check(now, on_time).map_err(|e| format!("model: {e}"))?;
        // Fences lent, as the host, the engine and the model see them.
        let lent = self.block.map(|(first, _, end)| (first, end));
        if !m.closed && (engine.fences_lent() != lent.is_some() || m.lent != lent) {
            return Err(format!(
                "lent fences: the host's block {:?}, the engine lends: {}, the model's {:?}",
                self.block,
                engine.fences_lent(),
                m.lent
            ));
        }
        // One holder: a key the host granted itself is busy nowhere else.
        for (i, l) in self.locals.iter().enumerate() {
            if m.key(l.res, l.key).is_some() {
                return Err(format!(
                    "exclusion: key r{}/{} granted by the host (fence {}) is busy in the engine",
                    l.res, l.key, l.fence
                ));
            }
            if self.locals[..i]
                .iter()
                .any(|o| (o.res, o.key) == (l.res, l.key))
            {
                return Err(format!(
                    "exclusion: key r{}/{} granted twice by the host",
                    l.res, l.key
                ));
            }
        }
        if self.max_fence > 0 && self.storage.durable.is_none_or(|d| d < self.max_fence) {
            return Err(format!(
                "storage: holds {:?}, below the fence {} handed out",
                self.storage.durable, self.max_fence
            ));
        }
        self.trace
            .words(&[fp.keys as u64, fp.requests as u64, opt(m.next_deadline())]);
        Ok(())
    }
}

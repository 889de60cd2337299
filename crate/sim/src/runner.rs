//! Running seeds: one seed generated or replayed, a failure caught and shrunk, many seeds summed up.
//!
//! # Invariants
//! - A seed's run is a function of the seed, the run length and the late-timer switch: running it again
//!   gives the same operations, the same answers and the same trace hash.
//! - A failure is reported with its seed, the operation it failed at, what broke, and a shrunk sequence
//!   of operations that still fails the same way (same place, same kind), replayable on its own.
//! - A panic (the engine's `check()`, an `expect` in the engine) is a failure like any other.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use crate::driver::{overdue, Driver, HostFault, Stats};
use crate::gen;
use crate::marks::{Mark, Marks, MARKS};
use crate::op::{self, Op};
use crate::rng::Rng;
use crate::swarm::Mix;

/// How each seed runs.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Operations a seed draws.
    pub len: usize,
    /// Every how many seeds one has a host whose timer may be late (see `swarm.rs`): 0 none, 1 all.
    pub late_every: u64,
    /// A deliberately wrong host (tests of the checks only).
    pub fault: Option<HostFault>,
    /// Kinds of late-timer violation to let pass (`driver::overdue`), to see the next kind.
    pub lax: u8,
}

/// A run that passed.
#[derive(Clone, Debug)]
pub struct Run {
    pub hash: u64,
    pub marks: Marks,
    pub stats: Stats,
    pub ops: Vec<Op>,
}

/// A run that failed.
#[derive(Clone, Debug)]
pub struct Failure {
    pub seed: u64,
    /// Whether the seed's timer may be late.
    pub late_timers: bool,
    /// The kinds of overdue the run let pass.
    pub lax: u8,
    /// The index of the operation that failed (`ops.len()` for the closing check).
    pub at: usize,
    pub message: String,
    /// The operations up to and including the one that failed.
    pub ops: Vec<Op>,
}

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}
static HOOK: Once = Once::new();

/// Runs `f`, turning a panic into an error with the panic's message and place. Panics inside are
/// not printed (a shrink provokes thousands); panics elsewhere still are.
fn guard<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if QUIET.get() {
                LAST_PANIC.set(info.to_string());
            } else {
                previous(info);
            }
        }));
    });
    QUIET.set(true);
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    QUIET.set(false);
    result.unwrap_or_else(|_| Err(LAST_PANIC.take()))
}

/// Whether `seed` runs with a late timer.
pub fn late_for(seed: u64, cfg: &Config) -> bool {
    cfg.late_every != 0 && seed % cfg.late_every == cfg.late_every - 1
}

/// The mix of a seed, and the stream its operations are drawn from after it.
pub fn mix_of(seed: u64, cfg: &Config) -> (Rng, Mix) {
    let mut rng = Rng::new(seed);
    let mix = Mix::draw(&mut rng, late_for(seed, cfg));
    (rng, mix)
}

/// Draws and runs the operations of `seed`.
pub fn run_seed(seed: u64, cfg: &Config) -> Result<Run, Failure> {
    let (mut rng, mix) = mix_of(seed, cfg);
    let mut ops = Vec::with_capacity(cfg.len);
    let mut at = 0;
    let result = guard(|| {
        let mut d = Driver::new(mix.clone(), cfg.fault, cfg.lax)?;
        for i in 0..cfg.len {
            at = i;
            let op = gen::next(&mut rng, &mix, &d.view());
            ops.push(op);
            d.apply(op)?;
        }
        at = cfg.len;
        d.finish()?;
        Ok((d.hash(), d.marks(), d.stats()))
    });
    match result {
        Ok((hash, marks, stats)) => Ok(Run {
            hash,
            marks,
            stats,
            ops,
        }),
        Err(message) => Err(Failure {
            seed,
            late_timers: late_for(seed, cfg),
            lax: cfg.lax,
            at,
            message,
            ops,
        }),
    }
}

/// Runs `ops` in the world of `seed`; `log` receives every operation and what the engine answered.
pub fn replay(
    seed: u64,
    ops: &[Op],
    cfg: &Config,
    log: Option<&mut Vec<String>>,
) -> Result<Run, Failure> {
    let (_, mix) = mix_of(seed, cfg);
    let mut at = 0;
    let mut lines = Vec::new();
    let verbose = log.is_some();
    let result = guard(|| {
        let mut d = Driver::new(mix, cfg.fault, cfg.lax)?;
        if verbose {
            d.verbose();
        }
        let mut run = || {
            for (i, &op) in ops.iter().enumerate() {
                at = i;
                d.apply(op)?;
            }
            at = ops.len();
            d.finish()
        };
        let result = run();
        lines = d.take_log();
        result.map(|()| (d.hash(), d.marks(), d.stats()))
    });
    if let Some(log) = log {
        log.append(&mut lines);
    }
    match result {
        Ok((hash, marks, stats)) => Ok(Run {
            hash,
            marks,
            stats,
            ops: ops.to_vec(),
        }),
        Err(message) => Err(Failure {
            seed,
            late_timers: late_for(seed, cfg),
            lax: cfg.lax,
            at,
            message,
            ops: ops[..ops.len().min(at + 1)].to_vec(),
        }),
    }
}

/// What kind of failure a message names: its first two parts (`hold: overdue`), or a panic's place.
fn kind(message: &str) -> String {
    if message.starts_with("panicked at") {
        return message.lines().next().unwrap_or("").to_owned();
    }
    let mut parts = message.splitn(3, ':');
    let first = parts.next().unwrap_or("").trim();
    let second: String = parts.next().unwrap_or("").trim().chars().take(24).collect();
    // Numbers (fences, ids, instants) differ between runs of one kind of failure: a shorter
    // sequence reaches the same failure with other numbers.
    format!("{first}: {second}")
        .split(|c: char| c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("#")
}

impl Failure {
    /// The smallest sequence found that still fails with the same kind of message, within `budget`
    /// of time: chunks of operations deleted, largest first (as delta debugging does), and targets
    /// renamed by smaller positions (deleting an operation shifts the positions of those after it),
    /// in turn until neither helps.
    pub fn shrink(&self, cfg: &Config, budget: Duration) -> Failure {
        let started = Instant::now();
        let want = kind(&self.message);
        let mut best = self.clone();
        let fails = |ops: &[Op]| match replay(self.seed, ops, cfg, None) {
            Err(f) if kind(&f.message) == want => Some(f),
            _ => None,
        };
        let in_time = || started.elapsed() < budget;
        loop {
            let mut chunk = best.ops.len().div_ceil(2).max(1);
            while in_time() {
                let mut removed = false;
                let mut i = 0;
                while i < best.ops.len() && in_time() {
                    let mut candidate = best.ops.clone();
                    candidate.drain(i..(i + chunk).min(candidate.len()));
                    match fails(&candidate) {
                        Some(f) => {
                            best = f;
                            removed = true;
                        }
                        None => i += chunk,
                    }
                }
                if chunk == 1 && !removed {
                    break;
                }
                if !removed {
                    chunk = chunk.div_ceil(2);
                }
            }
            let mut renamed = false;
            for i in 0..best.ops.len() {
                let Some(pick) = best.ops[i].pick() else {
                    continue;
                };
                for to in 0..pick.min(32) {
                    if !in_time() {
                        break;
                    }
                    let mut candidate = best.ops.clone();
                    candidate[i] = candidate[i].with_pick(to);
                    if let Some(f) = fails(&candidate) {
                        best = f;
                        renamed = true;
                        break;
                    }
                }
            }
            // A renamed target may let more be deleted: go round again.
            if !in_time() || !renamed {
                break;
            }
        }
        best
    }

    /// The report: seed, place, message, the sequence and the commands that replay it.
    pub fn describe(&self, len: usize, shrunk: Option<&Failure>) -> String {
        let late = format!(
            "HOLDFAST_SIM_LATE_EVERY={} HOLDFAST_SIM_LAX={} ",
            u8::from(self.late_timers),
            overdue::name(self.lax)
        );
        let mut out = format!(
            "holdfast-sim: seed {} failed at operation {} of {len}:\n  {}\n\nreplay the whole seed:\n  {late}HOLDFAST_SIM_REPLAY={} HOLDFAST_SIM_LEN={len} cargo test -p holdfast-sim --test sim -- --nocapture\n  (or: cargo run -p holdfast-sim -- replay {} --len {len}{} --lax {})\n",
            self.seed,
            self.at,
            self.message.replace('\n', "\n  "),
            self.seed,
            self.seed,
            if self.late_timers { " --late" } else { "" },
            overdue::name(self.lax),
        );
        if let Some(s) = shrunk {
            out += &format!(
                "\nshrunk to {} operations, failing with:\n  {}\nreplay them:\n  {late}HOLDFAST_SIM_REPLAY={} HOLDFAST_SIM_SEQ='{}' cargo test -p holdfast-sim --test sim -- --nocapture\noperations:\n",
                s.ops.len(),
                s.message.replace('\n', "\n  "),
                s.seed,
                op::write_seq(&s.ops),
            );
            for (i, op) in s.ops.iter().enumerate() {
                out += &format!("  {i:>3}  {op}\n");
            }
        }
        out
    }
}

/// A run of many seeds.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub first: u64,
    pub seeds: u64,
    pub threads: usize,
    pub cfg: Config,
}

/// What a run of many seeds did.
#[derive(Clone, Debug)]
pub struct Summary {
    pub seeds: u64,
    pub ops: u64,
    pub calls: u64,
    pub grants: u64,
    pub restarts: u64,
    pub writes: u64,
    /// Seeds whose timer could be late, and the late-timer violations let pass in them.
    pub late_seeds: u64,
    pub overdue: u64,
    pub elapsed: Duration,
    /// Per mark: how many seeds reached it, and how often it was reached in all.
    pub reached: [u64; MARKS.len()],
    pub hits: [u64; MARKS.len()],
    pub failure: Option<Failure>,
}

// (Not derived: arrays of more than 32 have no `Default`.)
impl Default for Summary {
    fn default() -> Self {
        Summary {
            seeds: 0,
            ops: 0,
            calls: 0,
            grants: 0,
            restarts: 0,
            writes: 0,
            late_seeds: 0,
            overdue: 0,
            elapsed: Duration::default(),
            reached: [0; MARKS.len()],
            hits: [0; MARKS.len()],
            failure: None,
        }
    }
}

impl Summary {
    fn add(&mut self, run: &Run, late: bool) {
        self.seeds += 1;
        self.late_seeds += u64::from(late);
        self.overdue += run.stats.overdue;
        self.ops += run.stats.ops;
        self.calls += run.stats.calls;
        self.grants += run.stats.grants;
        self.restarts += run.stats.restarts;
        self.writes += run.stats.writes;
        for m in MARKS {
            let n = run.marks.count(m);
            self.reached[m as usize] += u64::from(n > 0);
            self.hits[m as usize] += n;
        }
    }

    /// The required marks reached by fewer than 1% of the seeds.
    pub fn uncovered(&self) -> Vec<Mark> {
        MARKS
            .into_iter()
            .filter(|&m| {
                m.required(self.late_seeds > 0) && self.reached[m as usize] * 100 < self.seeds
            })
            .collect()
    }

    pub fn describe(&self) -> String {
        let mut out = format!(
            "holdfast-sim: {} seeds, {} operations ({} engine calls, {} grants, {} restarts, {} fence writes) in {:.1?}\n{} seeds with a late timer; late-timer violations let pass as known engine bugs: {}\ncoverage marks (seeds that reached each, and hits in all):\n",
            self.seeds, self.ops, self.calls, self.grants, self.restarts, self.writes, self.elapsed, self.late_seeds, self.overdue
        );
        for m in MARKS {
            let seeds = self.reached[m as usize];
            out += &format!(
                "  {:>6.2}%  {:>9}  {}\n",
                seeds as f64 * 100.0 / self.seeds.max(1) as f64,
                self.hits[m as usize],
                m.name()
            );
        }
        out
    }
}

/// Runs `settings.seeds` seeds from `settings.first`, on `settings.threads` threads, stopping at the
/// first failure (the one with the smallest seed among those found).
pub fn run_many(settings: &Settings) -> Summary {
    let started = Instant::now();
    let stop = AtomicBool::new(false);
    let total = Mutex::new(Summary::default());
    let threads = settings.threads.max(1) as u64;
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (stop, total) = (&stop, &total);
            scope.spawn(move || {
                let mut mine = Summary::default();
                let mut seed = settings.first + t;
                while seed < settings.first + settings.seeds && !stop.load(Ordering::Relaxed) {
                    match run_seed(seed, &settings.cfg) {
                        Ok(run) => mine.add(&run, late_for(seed, &settings.cfg)),
                        Err(f) => {
                            stop.store(true, Ordering::Relaxed);
                            mine.failure = Some(f);
                            break;
                        }
                    }
                    seed += threads;
                }
                let mut total = total.lock().unwrap();
                total.seeds += mine.seeds;
                total.ops += mine.ops;
                total.calls += mine.calls;
                total.grants += mine.grants;
                total.restarts += mine.restarts;
                total.writes += mine.writes;
                total.late_seeds += mine.late_seeds;
                total.overdue += mine.overdue;
                for i in 0..MARKS.len() {
                    total.reached[i] += mine.reached[i];
                    total.hits[i] += mine.hits[i];
                }
                if let Some(f) = mine.failure {
                    if total.failure.as_ref().is_none_or(|g| f.seed < g.seed) {
                        total.failure = Some(f);
                    }
                }
            });
        }
    });
    let mut summary = total.into_inner().unwrap();
    summary.elapsed = started.elapsed();
    summary
}

/// The settings the environment asks for (see the crate docs): `HOLDFAST_SIM_SEEDS` (default
/// 1,000), `HOLDFAST_SIM_FIRST` (0), `HOLDFAST_SIM_LEN` (10,000 operations a seed),
/// `HOLDFAST_SIM_THREADS` (1), `HOLDFAST_SIM_LATE_EVERY` (5), `HOLDFAST_SIM_LAX` (`none`).
pub fn settings_from_env() -> Settings {
    let num = |name: &str, default: u64| -> u64 {
        match std::env::var(name) {
            Ok(v) => v
                .replace(['_', ','], "")
                .parse()
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
            Err(_) => default,
        }
    };
    Settings {
        first: num("HOLDFAST_SIM_FIRST", 0),
        seeds: num("HOLDFAST_SIM_SEEDS", 1_000),
        threads: num("HOLDFAST_SIM_THREADS", 1) as usize,
        cfg: Config {
            len: num("HOLDFAST_SIM_LEN", 10_000) as usize,
            late_every: num("HOLDFAST_SIM_LATE_EVERY", 5),
            fault: None,
            lax: overdue::parse(
                &std::env::var("HOLDFAST_SIM_LAX").unwrap_or_else(|_| "none".into()),
            ),
        },
    }
}

/// The trace hash of a seed as the default run makes it (a late timer every fifth seed, the known
/// late-timer bugs let pass), or its failure's message: what the wasm build and the native one
/// compare.
pub fn trace_hash(seed: u64, len: usize) -> Result<u64, String> {
    let cfg = Config {
        len,
        late_every: 5,
        fault: None,
        lax: 0,
    };
    run_seed(seed, &cfg)
        .map(|run| run.hash)
        .map_err(|f| format!("seed {seed} failed at operation {}: {}", f.at, f.message))
}

//! The simulation, as `cargo test` runs it. The `HOLDFAST_SIM_*` variables (see the crate docs) change
//! how many seeds, how long, and replay one seed or a shrunk sequence of operations.

use std::time::Duration;

use holdfast_sim::driver::HostFault;
use holdfast_sim::marks::MARKS;
use holdfast_sim::op;
use holdfast_sim::runner::{self, Config};

/// A failure's report, with its sequence shrunk (within two minutes).
fn report(f: &runner::Failure, cfg: &Config) -> String {
    let shrunk = f.shrink(cfg, Duration::from_secs(120));
    f.describe(cfg.len, Some(&shrunk))
}

/// The replay path: `HOLDFAST_SIM_REPLAY=seed`, with `HOLDFAST_SIM_SEQ='ops'` for a shrunk sequence.
fn replay(seed: u64, cfg: &Config) {
    let ops = match std::env::var("HOLDFAST_SIM_SEQ") {
        Ok(text) => op::parse_seq(&text).unwrap_or_else(|e| panic!("HOLDFAST_SIM_SEQ: {e}")),
        Err(_) => match runner::run_seed(seed, cfg) {
            Ok(run) => run.ops,
            Err(f) => f.ops,
        },
    };
    let mut log = Vec::new();
    let result = runner::replay(seed, &ops, cfg, Some(&mut log));
    for line in &log {
        println!("{line}");
    }
    match result {
        Ok(run) => println!(
            "seed {seed}: {} operations passed, trace {:016x}",
            ops.len(),
            run.hash
        ),
        Err(f) => panic!("{}", report(&f, cfg)),
    }
}

/// Every invariant after every step of 1,000 seeds × 10,000 operations (by default), and every
/// coverage mark reached by at least 1% of the seeds.
#[test]
fn simulation_breaks_no_invariant_and_reaches_every_corner() {
    let settings = runner::settings_from_env();
    if let Ok(seed) = std::env::var("HOLDFAST_SIM_REPLAY") {
        let seed = seed.parse().expect("HOLDFAST_SIM_REPLAY is a seed");
        return replay(seed, &settings.cfg);
    }
    let summary = runner::run_many(&settings);
    println!("{}", summary.describe());
    if let Some(f) = &summary.failure {
        panic!("{}", report(f, &settings.cfg));
    }
    if summary.seeds >= 100 {
        let missing = summary.uncovered();
        assert!(
            missing.is_empty(),
            "coverage marks reached by fewer than 1% of {} seeds: {:?}\n{}",
            summary.seeds,
            missing.iter().map(|m| m.name()).collect::<Vec<_>>(),
            summary.describe()
        );
    }
}

#[test]
fn a_seed_runs_the_same_every_time_and_its_operations_replay_to_the_same_trace() {
    let cfg = Config {
        len: 3_000,
        late_every: 0,
        fault: None,
        lax: 0,
    };
    for seed in [3, 77, 1_000_003] {
        let a = runner::run_seed(seed, &cfg).expect("passes");
        let b = runner::run_seed(seed, &cfg).expect("passes");
        assert_eq!(a.hash, b.hash, "seed {seed}");
        assert_eq!(a.ops, b.ops, "seed {seed}");
        let again = runner::replay(seed, &a.ops, &cfg, None).expect("passes");
        assert_eq!(again.hash, a.hash, "seed {seed}: replayed");
        // The text form of the operations replays the same.
        let text = op::write_seq(&a.ops);
        let parsed = op::parse_seq(&text).unwrap();
        assert_eq!(
            runner::replay(seed, &parsed, &cfg, None).unwrap().hash,
            a.hash
        );
    }
    let other = runner::run_seed(4, &cfg).unwrap();
    assert_ne!(other.hash, runner::run_seed(3, &cfg).unwrap().hash);
}

/// The checks bite: a host that tells the engine a fence write succeeded when storage lost it (the
/// PostgreSQL sequence and HeliosDB row-id bugs) hands out fences a crash would repeat. The run must
/// fail, name the fence, and shrink to a handful of operations that fail the same way.
#[test]
fn the_checks_catch_a_host_that_acknowledges_a_lost_write_and_shrink_it() {
    let cfg = Config {
        len: 2_000,
        late_every: 0,
        fault: Some(HostFault::AckWithoutWrite),
        lax: 0,
    };
    let failure = (0..200)
        .find_map(|seed| runner::run_seed(seed, &cfg).err())
        .expect("a lying host is caught within 200 seeds");
    assert!(failure.message.contains("fence"), "{}", failure.message);
    let shrunk = failure.shrink(&cfg, Duration::from_secs(60));
    assert!(
        shrunk.ops.len() <= 30,
        "shrunk to {} operations:\n{}",
        shrunk.ops.len(),
        failure.describe(cfg.len, Some(&shrunk))
    );
    let again = runner::replay(failure.seed, &shrunk.ops, &cfg, None).unwrap_err();
    assert_eq!(again.message, shrunk.message);
    // The same operations from an honest host pass.
    let honest = Config { fault: None, ..cfg };
    runner::replay(failure.seed, &shrunk.ops, &honest, None).expect("an honest host passes");
}

#[test]
fn every_mark_has_a_name_and_its_own_place() {
    for (i, m) in MARKS.into_iter().enumerate() {
        assert_eq!(m as usize, i);
        assert!(!m.name().is_empty());
    }
}

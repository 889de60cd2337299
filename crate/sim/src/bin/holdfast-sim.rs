//! The simulation as a program, for what a test run does not do well:
//!
//! ```text
//! holdfast-sim run                    # the seeds the HOLDFAST_SIM_* variables ask for (as `cargo test`)
//! holdfast-sim replay SEED [--late] [--len N] [--seq 'OPS']
//!                                     # one seed (or a shrunk sequence in its world), every operation
//!                                     # and every answer printed
//! holdfast-sim hashes FIRST COUNT [LEN]
//!                                     # "seed hash" lines: what tests/sim compares with the wasm build
//! ```

use std::process::ExitCode;
use std::time::Duration;

use holdfast_sim::op;
use holdfast_sim::runner::{self, Config};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let num = |s: &str| -> u64 {
        s.replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{s:?} is not a number"))
    };
    match args.first().map(String::as_str) {
        Some("run") => {
            let settings = runner::settings_from_env();
            let summary = runner::run_many(&settings);
            println!("{}", summary.describe());
            if let Some(f) = &summary.failure {
                let shrunk = f.shrink(&settings.cfg, Duration::from_secs(120));
                eprintln!("{}", f.describe(settings.cfg.len, Some(&shrunk)));
                return ExitCode::FAILURE;
            }
            let missing = summary.uncovered();
            if !missing.is_empty() && settings.seeds >= 100 {
                eprintln!("coverage marks reached by fewer than 1% of seeds: {missing:?}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Some("replay") => {
            let seed = num(args.get(1).expect("replay SEED"));
            let cfg = Config {
                len: arg("--len").map_or(10_000, |l| num(&l) as usize),
                late_every: u64::from(args.iter().any(|a| a == "--late")),
                fault: None,
                lax: holdfast_sim::driver::overdue::parse(&arg("--lax").unwrap_or("none".into())),
            };
            let ops = match arg("--seq") {
                Some(text) => op::parse_seq(&text).unwrap_or_else(|e| panic!("{e}")),
                None => match runner::run_seed(seed, &cfg) {
                    Ok(run) => run.ops,
                    Err(f) => f.ops,
                },
            };
            let mut log = Vec::new();
            let result = runner::replay(seed, &ops, &cfg, Some(&mut log));
            for line in &log {
                println!("{line}");
            }
            match result {
                Ok(run) => {
                    println!(
                        "seed {seed}: {} operations, trace {:016x}",
                        ops.len(),
                        run.hash
                    );
                    ExitCode::SUCCESS
                }
                Err(f) => {
                    println!("seed {seed} failed at operation {}: {}", f.at, f.message);
                    ExitCode::FAILURE
                }
            }
        }
        Some("hashes") => {
            let first = num(args.get(1).map_or("0", String::as_str));
            let count = num(args.get(2).map_or("100", String::as_str));
            let len = args.get(3).map_or(10_000, |l| num(l) as usize);
            for seed in first..first + count {
                match runner::trace_hash(seed, len) {
                    Ok(hash) => println!("{seed} {hash:016x}"),
                    Err(message) => println!("{seed} fail: {message}"),
                }
            }
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("usage: holdfast-sim run | replay SEED [--late] [--len N] [--seq OPS] | hashes FIRST COUNT [LEN]");
            ExitCode::FAILURE
        }
    }
}

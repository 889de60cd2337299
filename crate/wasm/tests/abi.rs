//! The ABI is written once per language: the slots of the shared buffer, the event kinds and the
//! statuses are `holdfast_wasm::{buffer, event, status}` in Rust and `npm/src/store/abi.ts` in
//! TypeScript (one `export const NAME = <number>` a line). This test fails if a name the TypeScript
//! side defines is missing in Rust or has another value there (#14: store.ts once read a resumed
//! fence through `REVOKE_IN` because the two happen to share a slot).

use holdfast_wasm::pool::claim;
use holdfast_wasm::{buffer, event, status};

/// Every constant of the ABI, by its name (the last segment of its path).
macro_rules! table {
    ($($module:ident :: $name:ident),* $(,)?) => {
        &[$((stringify!($name), $module::$name as f64)),*]
    };
}

const RUST: &[(&str, f64)] = table![
    buffer::REQ,
    buffer::RELEASED,
    buffer::KEY,
    buffer::HOLD_EVENTS,
    buffer::RESUMED_FENCE,
    buffer::REVOKE_IN,
    buffer::EVENTS,
    buffer::EVENT_SIZE,
    buffer::EVENT_SLOTS,
    buffer::FENCE_NEXT,
    buffer::FENCE_END,
    buffer::CLAIM_REMAINING,
    buffer::CLAIM_OPEN,
    buffer::LEN,
    event::GRANTED,
    event::TIMED_OUT,
    event::REVOKED,
    event::FAILED,
    event::ENDED,
    event::KEY_IDLE,
    event::EXPIRED,
    event::CLAIMED,
    event::NOT_CLAIMED,
    event::DURABLE,
    event::POOL_FAILED,
    event::POOL_ENDED,
    event::NO_CLAIM,
    claim::CLAIM_WRITING,
    claim::CLAIM_QUEUED,
    claim::CLAIM_JOINED,
    claim::CLAIM_REFUSED,
    claim::CLAIM_KNOWN,
    status::BUSY,
    status::INVALID,
    status::LIMIT,
    status::CLOSED,
    status::NEED_TIME,
    status::RESUMED,
    status::IDLE_BASE,
];

const ABI_TS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../npm/src/store/abi.ts");

/// The constants of a TypeScript file: every line `export const NAME = <number>` (a `;` and a
/// trailing `//` comment allowed). Any other `export const` line is an error, so that nothing is
/// skipped unchecked.
fn parse(ts: &str) -> Result<Vec<(String, f64)>, String> {
    let mut constants = Vec::new();
    for (n, line) in ts.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("export const ") else {
            continue;
        };
        let rest = rest.split("//").next().unwrap_or("");
        let rest = rest.trim().trim_end_matches(';');
        let parsed = rest.split_once('=').and_then(|(name, value)| {
            let name = name.trim();
            let ok =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            let value = value.trim().parse::<f64>().ok()?;
            ok.then(|| (name.to_owned(), value))
        });
        match parsed {
            Some(constant) => constants.push(constant),
            None => {
                return Err(format!(
                    "line {}: {line:?} is not `export const NAME = <number>`",
                    n + 1
                ))
            }
        }
    }
    Ok(constants)
}

/// What the TypeScript constants get wrong against Rust's, one line each.
fn mismatches(ts: &[(String, f64)], rust: &[(&str, f64)]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (name, value) in ts {
        match rust.iter().find(|(n, _)| n == name) {
            None => wrong.push(format!(
                "{name} = {value}: no constant of that name in Rust"
            )),
            Some((_, expected)) if expected != value => {
                wrong.push(format!("{name} = {value}: Rust has {expected}"))
            }
            Some(_) => {}
        }
        if ts.iter().filter(|(n, _)| n == name).count() > 1 {
            wrong.push(format!("{name}: defined more than once"));
        }
    }
    wrong
}

#[test]
fn issue_14_abi_ts_names_every_constant_as_rust_does() {
    let text = std::fs::read_to_string(ABI_TS).unwrap_or_else(|e| panic!("{ABI_TS}: {e}"));
    let ts = parse(&text).unwrap_or_else(|e| panic!("{ABI_TS}: {e}"));
    assert!(
        ts.len() >= 20,
        "{ABI_TS}: only {} constants found; is it the ABI?",
        ts.len()
    );
    let wrong = mismatches(&ts, RUST);
    assert!(
        wrong.is_empty(),
        "{ABI_TS} differs from crate/wasm/src/lib.rs:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn issue_14_the_rust_names_are_distinct_and_the_shared_slot_has_both() {
    for (i, (name, _)) in RUST.iter().enumerate() {
        assert!(
            RUST[i + 1..].iter().all(|(other, _)| other != name),
            "{name} twice in Rust's ABI"
        );
    }
    assert_eq!(
        buffer::RESUMED_FENCE,
        buffer::REVOKE_IN,
        "documented as one slot"
    );
}

#[test]
fn issue_14_the_check_catches_a_value_that_differs_and_a_name_rust_lacks() {
    let ts = parse("export const REQ = 0\nexport const KEY = 2;\nexport const GONE = -9 // x\n")
        .unwrap();
    assert_eq!(
        mismatches(&ts, RUST),
        [
            "KEY = 2: Rust has 1",
            "GONE = -9: no constant of that name in Rust"
        ]
    );
    assert!(parse("export const FENCE_NEXT = EVENTS + 1024").is_err());
    assert!(parse("export const NAME: number = 3").is_err());
    assert_eq!(
        parse("const LEND = 4096\n// export const X = 1").unwrap(),
        []
    );
}

//! The durable form of pools: a snapshot and a short log of changes after it, in the host's string
//! storage, and the reading of them when a store opens ([`PoolLoad`]).
//!
//! # Keys
//! - [`SNAPSHOT_KEY`] holds a *snapshot*: every pool, its open claims and its tombstones, as of the
//!   write with sequence number `seq`.
//! - [`slot_key`]`(seq)` holds a *segment*: the changes of write `seq` (pools made or resized, claims
//!   opened, released or expired, confirmed, undone). There are [`SLOTS`] slots, used in turn.
//!
//! Each write is one `set` of one key (group commit: a write carries every change since the one
//! before). Reading starts from the snapshot (`seq` S) and applies the segments S+1, S+2, ... from
//! their slots while each slot holds exactly the next number; the first that does not (never
//! written, or an older segment left in it) ends the log.
//!
//! # Invariants
//! - Writes are numbered in the order they are taken, one at a time; the next write starts only
//!   after the one before was acknowledged. So a segment in storage follows every segment before it.
//! - A segment is written only after a *successful* write: after a failed one (whose value may or
//!   may not have landed) the next write is a snapshot, so no chain ever skips an unknown write.
//! - A snapshot is written before a slot would be used twice since the last snapshot (at most
//!   `SLOTS - 1` segments follow a snapshot), so the chain read back is never broken by a slot reused.
//! - Each value carries a check of its text (FNV-1a, as the fence ceiling does): a value damaged into
//!   another is refused, so that a store never opens with pools that forgot claims (which would
//!   hand their units out again).
//!
//! Times are written as wall-clock milliseconds (the host's, given when the pools are opened): a
//! claim's `ttl` and a tombstone's 24 hours go on across restarts, whose monotonic clocks have
//! nothing in common.

use std::collections::HashMap;
use std::fmt::Write as _;

/// The key of the snapshot.
pub const SNAPSHOT_KEY: &str = "holdfast.pools";

/// How many segment slots there are.
pub const SLOTS: u64 = 64;

const MAGIC: &str = "holdfast.pools 1";

/// The key of the slot of segment `seq`.
pub fn slot_key(seq: u64) -> String {
    format!("{SNAPSHOT_KEY}.{}", seq % SLOTS)
}

/// One change, as a segment keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    /// A pool made, or resized, with this capacity.
    Pool { pool: String, capacity: u64 },
    /// A claim took its units.
    Claim { pool: String, claim: Stored },
    /// A claim gave its units back (released, or its ttl ran out).
    Release { pool: String, id: String },
    /// A claim's ttl is gone: its units stay until it is released.
    Confirm { pool: String, id: String },
    /// A claim nobody was answered of is undone: as if it never was (no tombstone).
    Undo { pool: String, id: String },
}

/// A claim as storage keeps it, its times on the wall clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stored {
    pub id: String,
    pub n: u64,
    /// When it took its units.
    pub at: u64,
    /// When its units come back unless confirmed.
    pub ttl: Option<u64>,
    /// Whether its id is kept (as a tombstone) for 24 hours after it took its units.
    pub remember: bool,
    /// What was left right after it took its units (the first outcome, answered again).
    pub first: u64,
    /// Open (holding its units), or a tombstone.
    pub open: bool,
}

/// A pool as storage keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct StoredPool {
    pub name: String,
    pub capacity: u64,
    pub claims: Vec<Stored>,
}

/// Times in wall-clock milliseconds, from the engine's: `wall = mono + offset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Clock {
    pub offset: i128,
}

impl Clock {
    pub fn wall(self, mono: u64) -> u64 {
        (i128::from(mono) + self.offset).clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The engine's time of a wall-clock time. One from before this process began is its start (0):
    /// a deadline that passed is due at once, and a tombstone is kept a little longer, never shorter.
    pub fn mono(self, wall: u64) -> u64 {
        (i128::from(wall) - self.offset).clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// Writes `text` with every byte but `[A-Za-z0-9._~-]` as `%XX`: ids are any UTF-8, and the forms
/// are words separated by spaces.
fn escape(out: &mut String, text: &str) {
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

fn unescape(word: &str) -> Option<String> {
    let bytes = word.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = word.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'F')) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().filter(|s| !s.is_empty())
}

fn check(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The body and its check, as one value.
fn seal(body: String) -> String {
    let sum = check(&body);
    let mut value = body;
    let _ = write!(value, "#{sum:08x}");
    value
}

/// The body of a sealed value, or `None` when its check fails.
fn unseal(value: &str) -> Option<&str> {
    let (body, sum) = value.rsplit_once('#')?;
    if sum.len() != 8 || !sum.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    (u32::from_str_radix(sum, 16).ok()? == check(body)).then_some(body)
}

/// A claim's words: `id n at ttl remember first` when open, `id n at first` for a tombstone.
fn claim_words(out: &mut String, c: &Stored) {
    escape(out, &c.id);
    let _ = write!(out, " {} {} ", c.n, c.at);
    if !c.open {
        let _ = write!(out, "{}", c.first);
        return;
    }
    match c.ttl {
        Some(at) => {
            let _ = write!(out, "{at}");
        }
        None => out.push('-'),
    }
    let _ = write!(out, " {} {}", u8::from(c.remember), c.first);
}

/// The snapshot of write `seq`: every pool with its claims, open ones (`c`) and tombstones (`t`).
pub(crate) fn encode_snapshot(seq: u64, pools: &[StoredPool]) -> String {
    let mut out = format!("{MAGIC} snapshot {seq}\n");
    for pool in pools {
        let _ = writeln!(out, "p {} {}", pool.name, pool.capacity);
        for c in &pool.claims {
            out.push_str(if c.open { "c " } else { "t " });
            claim_words(&mut out, c);
            out.push('\n');
        }
    }
    seal(out)
}

/// The segment of write `seq`: its changes, in the order they were made.
pub(crate) fn encode_segment(seq: u64, records: &[Record]) -> String {
    let mut out = format!("{MAGIC} log {seq}\n");
    for record in records {
        match record {
            Record::Pool { pool, capacity } => {
                let _ = write!(out, "p {pool} {capacity}");
            }
            Record::Claim { pool, claim } => {
                let _ = write!(out, "c {pool} ");
                claim_words(&mut out, claim);
            }
            Record::Release { pool, id } => {
                let _ = write!(out, "r {pool} ");
                escape(&mut out, id);
            }
            Record::Confirm { pool, id } => {
                let _ = write!(out, "f {pool} ");
                escape(&mut out, id);
            }
            Record::Undo { pool, id } => {
                let _ = write!(out, "u {pool} ");
                escape(&mut out, id);
            }
        }
        out.push('\n');
    }
    seal(out)
}

/// The pools being read back, by name, each with its claims by id.
#[derive(Default)]
struct Reading {
    pools: Vec<StoredPool>,
    by_name: HashMap<String, usize>,
    /// Per pool: claim id to its place in the pool's `claims` (taken out ones are `None` there).
    by_id: Vec<HashMap<String, usize>>,
    gone: Vec<Vec<bool>>,
}

impl Reading {
    fn pool(&mut self, name: &str, capacity: u64) -> usize {
        if let Some(&p) = self.by_name.get(name) {
            self.pools[p].capacity = capacity;
            return p;
        }
        self.by_name.insert(name.to_owned(), self.pools.len());
        self.pools.push(StoredPool {
            name: name.to_owned(),
            capacity,
            claims: Vec::new(),
        });
        self.by_id.push(HashMap::new());
        self.gone.push(Vec::new());
        self.pools.len() - 1
    }

    fn add(&mut self, p: usize, claim: Stored) {
        let claims = &mut self.pools[p].claims;
        if let Some(&at) = self.by_id[p].get(&claim.id) {
            self.gone[p][at] = true;
        }
        self.by_id[p].insert(claim.id.clone(), claims.len());
        claims.push(claim);
        self.gone[p].push(false);
    }

    fn claim_mut(&mut self, pool: &str, id: &str) -> Option<(usize, usize)> {
        let p = *self.by_name.get(pool)?;
        let at = *self.by_id[p].get(id)?;
        (!self.gone[p][at]).then_some((p, at))
    }

    fn finish(mut self) -> Vec<StoredPool> {
        for (p, pool) in self.pools.iter_mut().enumerate() {
            let gone = &self.gone[p];
            let mut i = 0;
            pool.claims.retain(|_| {
                i += 1;
                !gone[i - 1]
            });
        }
        self.pools
    }
}

fn num(word: Option<&str>) -> Option<u64> {
    let w = word?;
    if w.is_empty() || !w.bytes().all(|b| b.is_ascii_digit()) || (w.len() > 1 && w.starts_with('0'))
    {
        return None;
    }
    w.parse().ok()
}

fn name(word: Option<&str>) -> Option<String> {
    let w = word?;
    crate::bounds::check_name(w).ok()?;
    Some(w.to_owned())
}

/// A claim's words (after its kind, and its pool's name in a segment).
fn read_claim<'a>(words: &mut impl Iterator<Item = &'a str>, open: bool) -> Option<Stored> {
    let id = unescape(words.next()?)?;
    let n = num(words.next())?;
    let at = num(words.next())?;
    let (ttl, remember) = if open {
        let ttl = match words.next()? {
            "-" => None,
            w => Some(num(Some(w))?),
        };
        let remember = match words.next()? {
            "0" => false,
            "1" => true,
            _ => return None,
        };
        (ttl, remember)
    } else {
        (None, true)
    };
    let first = num(words.next())?;
    Some(Stored {
        id,
        n,
        at,
        ttl,
        remember,
        first,
        open,
    })
}

/// Where the reading is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Snapshot,
    /// The next segment expected.
    Log(u64),
    Done,
}

/// Reading the pools back from storage, a key at a time (sans-IO: the host reads each key
/// [`PoolLoad::next_key`] names and hands its value to [`PoolLoad::feed`], until it names none), then
/// handing the whole to [`crate::Engine::open_pools`].
pub struct PoolLoad {
    stage: Stage,
    reading: Reading,
    /// The number of the last write read (the snapshot's, then each segment's).
    pub(crate) seq: u64,
    /// Segments read after the snapshot (they fill slots: see the module docs).
    pub(crate) segments: u64,
    /// Changes read from them.
    pub(crate) records: u64,
    /// Whether a snapshot was read (a store without one writes one first).
    pub(crate) snapshot: bool,
}

impl Default for PoolLoad {
    fn default() -> Self {
        PoolLoad::new()
    }
}

impl PoolLoad {
    pub fn new() -> PoolLoad {
        PoolLoad {
            stage: Stage::Snapshot,
            reading: Reading::default(),
            seq: 0,
            segments: 0,
            records: 0,
            snapshot: false,
        }
    }

    /// The storage key to read next, or `None` when everything is read.
    pub fn next_key(&self) -> Option<String> {
        match self.stage {
            Stage::Snapshot => Some(SNAPSHOT_KEY.to_owned()),
            Stage::Log(seq) => Some(slot_key(seq)),
            Stage::Done => None,
        }
    }

    /// What storage holds at the key [`PoolLoad::next_key`] named (`None`: nothing). A value that is
    /// not what this module writes (damaged, or cut short) is an error naming the key: the store
    /// must not open with claims forgotten.
    pub fn feed(&mut self, value: Option<&str>) -> Result<(), String> {
        let key = self
            .next_key()
            .ok_or("every key of the pools was read already")?;
        let damaged = || {
            format!("storage key {key} holds no pool state this store wrote (damaged?); refusing to open, which would forget claims")
        };
        match self.stage {
            Stage::Snapshot => {
                let Some(value) = value else {
                    self.stage = Stage::Done;
                    return Ok(());
                };
                let body = unseal(value).ok_or_else(damaged)?;
                self.seq = self.read_snapshot(body).ok_or_else(damaged)?;
                self.snapshot = true;
                self.stage = Stage::Log(self.seq + 1);
            }
            Stage::Log(expected) => {
                let Some(body) = value else {
                    self.stage = Stage::Done;
                    return Ok(());
                };
                let body = unseal(body).ok_or_else(damaged)?;
                let mut lines = body.lines();
                let head = lines.next().ok_or_else(damaged)?;
                let seq = head
                    .strip_prefix(MAGIC)
                    .and_then(|rest| rest.strip_prefix(" log "))
                    .and_then(|n| num(Some(n)))
                    .ok_or_else(damaged)?;
                if seq != expected {
                    // An older segment in the slot: the log ends before it.
                    self.stage = Stage::Done;
                    return Ok(());
                }
                for line in lines {
                    self.read_record(line).ok_or_else(damaged)?;
                    self.records += 1;
                }
                self.seq = seq;
                self.segments += 1;
                // A snapshot comes before a slot is used twice: past that, nothing belongs to this log.
                self.stage = if self.segments + 1 >= SLOTS {
                    Stage::Done
                } else {
                    Stage::Log(seq + 1)
                };
            }
            Stage::Done => unreachable!("no key is named when done"),
        }
        Ok(())
    }

    fn read_snapshot(&mut self, body: &str) -> Option<u64> {
        let mut lines = body.lines();
        let seq = lines
            .next()?
            .strip_prefix(MAGIC)?
            .strip_prefix(" snapshot ")
            .and_then(|n| num(Some(n)))?;
        let mut pool = None;
        for line in lines {
            let mut words = line.split(' ');
            match words.next()? {
                "p" => {
                    let name = name(words.next())?;
                    let capacity = num(words.next())?;
                    if self.reading.by_name.contains_key(&name) {
                        return None;
                    }
                    pool = Some(self.reading.pool(&name, capacity));
                }
                kind @ ("c" | "t") => {
                    let claim = read_claim(&mut words, kind == "c")?;
                    self.reading.add(pool?, claim);
                }
                _ => return None,
            }
            if words.next().is_some() {
                return None;
            }
        }
        Some(seq)
    }

    fn read_record(&mut self, line: &str) -> Option<()> {
        let mut words = line.split(' ');
        let kind = words.next()?;
        let pool = name(words.next())?;
        match kind {
            "p" => {
                let capacity = num(words.next())?;
                self.reading.pool(&pool, capacity);
            }
            "c" => {
                let claim = read_claim(&mut words, true)?;
                let p = *self.reading.by_name.get(&pool)?;
                self.reading.add(p, claim);
            }
            "r" | "f" | "u" => {
                let id = unescape(words.next()?)?;
                // A change to a claim the log does not hold cannot be: the log is damaged.
                let (p, at) = self.reading.claim_mut(&pool, &id)?;
                let claim = &mut self.reading.pools[p].claims[at];
                if kind == "u" {
                    self.reading.gone[p][at] = true;
                } else if kind == "f" {
                    claim.ttl = None;
                } else if claim.remember {
                    claim.open = false;
                    claim.ttl = None;
                } else {
                    self.reading.gone[p][at] = true;
                }
            }
            _ => return None,
        }
        if words.next().is_some() {
            return None;
        }
        Some(())
    }

    /// Every pool read, with its claims in the order they were written.
    pub(crate) fn finish(self) -> Vec<StoredPool> {
        self.reading.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(id: &str, n: u64, at: u64, ttl: Option<u64>, open: bool) -> Stored {
        Stored {
            id: id.to_owned(),
            n,
            at,
            ttl,
            remember: true,
            first: 7,
            open,
        }
    }

    fn load(values: &HashMap<String, String>) -> Result<PoolLoad, String> {
        let mut load = PoolLoad::new();
        while let Some(key) = load.next_key() {
            load.feed(values.get(&key).map(String::as_str))?;
        }
        Ok(load)
    }

    #[test]
    fn pool_02_a_snapshot_and_the_segments_after_it_read_back() {
        let pools = vec![StoredPool {
            name: "seats".into(),
            capacity: 10,
            claims: vec![
                claim("a b%é", 2, 5, Some(50), true),
                claim("t", 1, 6, None, false),
            ],
        }];
        let mut values = HashMap::new();
        values.insert(SNAPSHOT_KEY.to_owned(), encode_snapshot(70, &pools));
        let records = vec![
            Record::Pool {
                pool: "more".into(),
                capacity: 4,
            },
            Record::Claim {
                pool: "more".into(),
                claim: claim("x", 3, 8, None, true),
            },
            Record::Confirm {
                pool: "seats".into(),
                id: "a b%é".into(),
            },
            Record::Claim {
                pool: "more".into(),
                claim: claim("undone", 1, 9, None, true),
            },
            Record::Undo {
                pool: "more".into(),
                id: "undone".into(),
            },
        ];
        values.insert(slot_key(71), encode_segment(71, &records));
        let release = [Record::Release {
            pool: "more".into(),
            id: "x".into(),
        }];
        values.insert(slot_key(72), encode_segment(72, &release));
        // An older segment in the next slot ends the log.
        values.insert(slot_key(73), encode_segment(73 - SLOTS, &release));
        let load = load(&values).unwrap();
        assert_eq!((load.seq, load.segments, load.records), (72, 2, 6));
        let read = load.finish();
        let wall = |c: Stored| c;
        assert_eq!(read[0].claims[0], wall(claim("a b%é", 2, 5, None, true)));
        assert_eq!(read[0].claims[1], wall(claim("t", 1, 6, None, false)));
        assert_eq!(read[1].name, "more");
        assert_eq!(read[1].claims, vec![wall(claim("x", 3, 8, None, false))]);
    }

    #[test]
    fn pool_02_a_damaged_value_is_refused_by_its_key() {
        let good = encode_snapshot(1, &[]);
        for bad in [
            good.replace("snapshot 1", "snapshot 2"),
            good[..good.len() - 1].to_owned(),
            "holdfast.pools 1 snapshot 1\n".to_owned(),
            String::new(),
        ] {
            let mut load = PoolLoad::new();
            let err = load.feed(Some(&bad)).unwrap_err();
            assert!(err.contains(SNAPSHOT_KEY), "{err}");
        }
        let mut load = PoolLoad::new();
        load.feed(None).unwrap();
        assert_eq!(load.next_key(), None, "no snapshot: nothing else to read");
    }

    #[test]
    fn escaped_ids_read_back_and_bad_escapes_are_refused() {
        for id in ["plain", "a b", "%", "é/ü\n", "-_.~"] {
            let mut out = String::new();
            escape(&mut out, id);
            assert!(!out.contains(' ') && !out.contains('\n'));
            assert_eq!(unescape(&out).as_deref(), Some(id));
        }
        for bad in ["%", "%4", "%zz", "%c3", "%C3", ""] {
            assert_eq!(unescape(bad), None, "{bad}");
        }
    }
}

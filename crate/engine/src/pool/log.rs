//! The durable form of pools: a snapshot and a short log of changes after it, in the host's string
//! storage, and the reading of them when a store opens ([`PoolLoad`]).
//!
//! # Keys
//! - A *snapshot* (every pool, its open claims and its tombstones, as of the write with sequence
//!   number `seq`) is kept in one of two *generations*, 0 and 1, used in turn. A generation is a
//!   *head* at [`head_key`] (`holdfast.pools` for 0, the key version 1 wrote, and `holdfast.pools.b`
//!   for 1) and, when the snapshot does not fit the head, `count` *chunks* at [`chunk_key`]: the head
//!   then names `seq` and `count`, and each chunk carries `seq` and its place.
//! - [`slot_key`]`(seq)` holds a *segment*: the changes of write `seq` (pools made or resized, claims
//!   opened, released or expired, confirmed, undone). There are [`SLOTS`] slots, used in turn.
//! - No value is longer than [`MAX_VALUE_BYTES`] (every value is ASCII: bytes are characters).
//!
//! Each write is a list of `set`s of keys, made in order (group commit: a write carries every change
//! since the one before): a segment is one `set`; a snapshot is its chunks, then its head last.
//! Reading takes the complete snapshot of the higher `seq` (a generation is complete when its head
//! is there and each chunk it names carries its `seq`), then applies the segments S+1, S+2, ... from
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
//! - A snapshot is written into the generation that the last *acknowledged* snapshot is not in, so
//!   that one stays complete whatever happens to the write (a crash after any prefix of its `set`s,
//!   or a failure that may have landed all of it): reading back finds it, or a complete later one
//!   (the write landed whole, an unknown outcome as a failed segment's), never a mix: a chunk
//!   overwritten by a later write carries a higher `seq`, and its head is then passed over. Chunks
//!   of a generation beyond its head's `count` (left by a larger snapshot) are never read. When no
//!   generation is complete, no snapshot was ever acknowledged (the last one acknowledged is never
//!   written over), so nothing was: the pools read back empty.
//! - No write number is used twice, across restarts too: a store that opens numbers its writes
//!   above every number it read (a head or chunk passed over included), and when that is above the
//!   snapshot and log it read, its first write is a snapshot (a segment must follow the log's last
//!   number). Else a chunk written over with the number of the head already there (whose write was
//!   passed over) would read back as that head's: a mix.
//! - A chunk that is missing or carries a *lower* `seq` than its head cannot come from an
//!   interrupted write (a head is set after its chunks; later writes have higher numbers): damage.
//! - Each value carries a check of its text (FNV-1a, as the fence ceiling does): a value damaged into
//!   another is refused, so that a store never opens with pools that forgot claims (which would
//!   hand their units out again).
//! - Version 1 (one key holding the whole snapshot, and its segments) is still read: its snapshot is
//!   generation 0's head holding everything; the next snapshot goes into generation 1.
//!
//! Times are written as wall-clock milliseconds (the host's, given when the pools are opened): a
//! claim's `ttl` and a tombstone's 24 hours go on across restarts, whose monotonic clocks have
//! nothing in common.

use std::collections::HashMap;
use std::fmt::Write as _;

/// The key of generation 0's head (the key version 1 kept its one snapshot in).
pub const SNAPSHOT_KEY: &str = "holdfast.pools";

/// How many segment slots there are.
pub const SLOTS: u64 = 64;

/// The longest value handed to the host, in bytes: a Durable Object's storage refuses a value over
/// 128 KiB and Deno KV one over 64 KiB (with their own framing on top), so 60 KiB fits both. A
/// snapshot longer than that is cut into chunks, and a segment longer than that is written as a
/// snapshot instead.
pub const MAX_VALUE_BYTES: usize = 60 * 1024;

/// The lowest bound a test may set instead ([`crate::Engine::set_pool_value_limit`]): the longest
/// line (a claim with a 128-byte id escaped to 384 and five 20-digit numbers, or a segment's record
/// with its pool's name) with a chunk's first line and check is under 700 bytes.
pub const MIN_VALUE_BYTES: usize = 1024;

const MAGIC: &str = "holdfast.pools 2";

/// The versions read back (1: one key for the whole snapshot).
const MAGICS: [&str; 2] = ["holdfast.pools 1", MAGIC];

/// The key of the slot of segment `seq`.
pub fn slot_key(seq: u64) -> String {
    format!("{SNAPSHOT_KEY}.{}", seq % SLOTS)
}

/// The key of generation `gen`'s head (0 or 1).
pub fn head_key(gen: u8) -> String {
    if gen == 0 {
        SNAPSHOT_KEY.to_owned()
    } else {
        format!("{SNAPSHOT_KEY}.b")
    }
}

/// The key of chunk `i` of generation `gen`.
pub fn chunk_key(gen: u8, i: u64) -> String {
    format!("{SNAPSHOT_KEY}.{}.{i}", if gen == 0 { 'a' } else { 'b' })
}

/// The first line of a value, after the version: `snapshot ...`, `chunk ...` or `log ...`.
fn versioned(line: &str) -> Option<&str> {
    MAGICS
        .iter()
        .find_map(|m| line.strip_prefix(m)?.strip_prefix(' '))
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

/// The length of a value's check (`#` and 8 hex digits).
const SEAL_BYTES: usize = 9;

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

/// The snapshot of write `seq` into generation `gen`, as the `set`s to make in order: its chunks,
/// then its head (alone when everything fits it). Every value is at most `limit` long (at least
/// [`MIN_VALUE_BYTES`]: names and ids are bounded, so a chunk always holds a line).
pub(crate) fn encode_snapshot(
    seq: u64,
    gen: u8,
    pools: &[StoredPool],
    limit: usize,
) -> Vec<(String, String)> {
    let mut lines = String::new();
    for pool in pools {
        let _ = writeln!(lines, "p {} {}", pool.name, pool.capacity);
        for c in &pool.claims {
            lines.push_str(if c.open { "c " } else { "t " });
            claim_words(&mut lines, c);
            lines.push('\n');
        }
    }
    let head = format!("{MAGIC} snapshot {seq} 0\n");
    if head.len() + lines.len() + SEAL_BYTES <= limit {
        return vec![(head_key(gen), seal(head + &lines))];
    }
    let mut sets = Vec::new();
    let mut rest = lines.as_str();
    while !rest.is_empty() {
        let mut out = format!("{MAGIC} chunk {seq} {}\n", sets.len());
        let room = limit - SEAL_BYTES - out.len();
        // Whole lines, as many as fit (a line is far shorter than the room).
        let mut cut = 0;
        for line in rest.split_inclusive('\n') {
            if cut + line.len() > room {
                break;
            }
            cut += line.len();
        }
        assert!(cut > 0, "a snapshot's line longer than a value may be");
        out.push_str(&rest[..cut]);
        rest = &rest[cut..];
        sets.push((chunk_key(gen, sets.len() as u64), seal(out)));
    }
    let head = format!("{MAGIC} snapshot {seq} {}\n", sets.len());
    sets.push((head_key(gen), seal(head)));
    sets
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

/// A head's first line, `snapshot <seq> <count>` (version 1: `snapshot <seq>`, always whole, and
/// only in generation 0's key), and the lines after it.
fn read_head(body: &str, gen: u8) -> Option<Head> {
    let (first, text) = match body.split_once('\n') {
        Some((first, text)) => (first, text),
        None => (body, ""),
    };
    let v1 = first.starts_with(MAGICS[0]);
    let mut words = versioned(first)?.strip_prefix("snapshot ")?.split(' ');
    let seq = num(words.next())?;
    let count = if v1 && gen == 0 {
        0
    } else {
        num(words.next())?
    };
    if words.next().is_some() || (count > 0 && !text.is_empty()) {
        return None;
    }
    Some(Head {
        seq,
        count,
        text: text.to_owned(),
    })
}

/// Where the reading is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// A generation's head.
    Head(u8),
    /// Chunk `i` of the generation being read.
    Chunk {
        gen: u8,
        i: u64,
    },
    /// The next segment expected.
    Log(u64),
    Done,
}

/// A generation's head, as read.
#[derive(Clone, Debug)]
struct Head {
    seq: u64,
    /// Its chunks (0: the snapshot is in the head).
    count: u64,
    /// The snapshot's lines read so far (the head's, or its chunks').
    text: String,
}

/// Reading the pools back from storage, a key at a time (sans-IO: the host reads each key
/// [`PoolLoad::next_key`] names and hands its value to [`PoolLoad::feed`], until it names none), then
/// handing the whole to [`crate::Engine::open_pools`].
pub struct PoolLoad {
    stage: Stage,
    reading: Reading,
    /// Both generations' heads, read first.
    heads: [Option<Head>; 2],
    /// The number of the last write read (the snapshot's, then each segment's).
    pub(crate) seq: u64,
    /// Segments read after the snapshot (they fill slots: see the module docs).
    pub(crate) segments: u64,
    /// Changes read from them.
    pub(crate) records: u64,
    /// The generation of the snapshot read, if one was (a store without one writes one first).
    pub(crate) gen: Option<u8>,
    /// The highest write number seen in any value read (a head or chunk passed over included):
    /// the next write is numbered above it, so that no number is used twice (module docs).
    pub(crate) highest: u64,
}

impl Default for PoolLoad {
    fn default() -> Self {
        PoolLoad::new()
    }
}

impl PoolLoad {
    pub fn new() -> PoolLoad {
        PoolLoad {
            stage: Stage::Head(0),
            reading: Reading::default(),
            heads: [None, None],
            seq: 0,
            segments: 0,
            records: 0,
            gen: None,
            highest: 0,
        }
    }

    /// The number of the last write read back (0: none).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The storage key to read next, or `None` when everything is read.
    pub fn next_key(&self) -> Option<String> {
        match self.stage {
            Stage::Head(gen) => Some(head_key(gen)),
            Stage::Chunk { gen, i } => Some(chunk_key(gen, i)),
            Stage::Log(seq) => Some(slot_key(seq)),
            Stage::Done => None,
        }
    }

    /// What storage holds at the key [`PoolLoad::next_key`] named (`None`: nothing). A value that is
    /// not what this module writes (damaged, cut short, or of a version it does not know) is an
    /// error naming the key: the store must not open with claims forgotten.
    pub fn feed(&mut self, value: Option<&str>) -> Result<(), String> {
        let key = self
            .next_key()
            .ok_or("every key of the pools was read already")?;
        let damaged = || {
            let version = value
                .and_then(|v| v.strip_prefix("holdfast.pools "))
                .and_then(|v| v.split(' ').next())
                .filter(|v| !["1", "2"].contains(v))
                .map(|v| format!(" (version {v}; this store reads versions 1 and 2)"))
                .unwrap_or_default();
            format!("storage key {key} holds no pool state this store wrote (damaged?){version}; refusing to open, which would forget claims")
        };
        match self.stage {
            Stage::Head(gen) => {
                if let Some(value) = value {
                    let body = unseal(value).ok_or_else(damaged)?;
                    let head = read_head(body, gen).ok_or_else(damaged)?;
                    self.highest = self.highest.max(head.seq);
                    self.heads[usize::from(gen)] = Some(head);
                }
                if gen == 0 {
                    self.stage = Stage::Head(1);
                } else {
                    self.next_generation(None)?;
                }
            }
            Stage::Chunk { gen, i } => {
                let body = unseal(value.ok_or_else(damaged)?).ok_or_else(damaged)?;
                let (first, lines) = body.split_once('\n').ok_or_else(damaged)?;
                let mut words = versioned(first)
                    .and_then(|rest| rest.strip_prefix("chunk "))
                    .ok_or_else(damaged)?
                    .split(' ');
                let (seq, at) = (num(words.next()), num(words.next()));
                self.highest = self.highest.max(seq.unwrap_or(0));
                let head = self.heads[usize::from(gen)].as_mut().expect("a head read");
                if at != Some(i) || words.next().is_some() {
                    return Err(damaged());
                }
                match seq {
                    Some(seq) if seq == head.seq => {
                        head.text.push_str(lines);
                        if i + 1 < head.count {
                            self.stage = Stage::Chunk { gen, i: i + 1 };
                        } else {
                            self.read_generation(gen).ok_or_else(damaged)?;
                        }
                    }
                    // A later write began on this generation and did not set its head: the
                    // generation is passed over.
                    Some(seq) if seq > head.seq => self.next_generation(Some(gen))?,
                    _ => return Err(damaged()),
                }
            }
            Stage::Log(expected) => {
                let Some(body) = value else {
                    self.stage = Stage::Done;
                    return Ok(());
                };
                let body = unseal(body).ok_or_else(damaged)?;
                let mut lines = body.lines();
                let head = lines.next().ok_or_else(damaged)?;
                let seq = versioned(head)
                    .and_then(|rest| rest.strip_prefix("log "))
                    .and_then(|n| num(Some(n)))
                    .ok_or_else(damaged)?;
                self.highest = self.highest.max(seq);
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

    /// Reads the generation of the higher `seq` not yet passed over (`passed`: the one just found
    /// incomplete); with none left, nothing was ever acknowledged (module docs): nothing to read.
    fn next_generation(&mut self, passed: Option<u8>) -> Result<(), String> {
        if let Some(gen) = passed {
            self.heads[usize::from(gen)] = None;
        }
        if let [Some(a), Some(b)] = &self.heads {
            if a.seq == b.seq {
                return Err(format!("storage keys {} and {} hold snapshots of the same write {} (damaged?); refusing to open, which would forget claims", head_key(0), head_key(1), a.seq));
            }
        }
        let best = (0..2u8)
            .filter_map(|g| self.heads[usize::from(g)].as_ref().map(|h| (h.seq, g)))
            .max();
        match best {
            None => self.stage = Stage::Done,
            Some((_, gen)) if self.heads[usize::from(gen)].as_ref().unwrap().count > 0 => {
                self.stage = Stage::Chunk { gen, i: 0 };
            }
            Some((_, gen)) => {
                let key = head_key(gen);
                self.read_generation(gen).ok_or_else(|| format!("storage key {key} holds no pool state this store wrote (damaged?); refusing to open, which would forget claims"))?;
            }
        }
        Ok(())
    }

    /// Generation `gen` is complete: its snapshot is read, then the log after it.
    fn read_generation(&mut self, gen: u8) -> Option<()> {
        let head = self.heads[usize::from(gen)].take()?;
        self.read_snapshot(&head.text)?;
        self.seq = head.seq;
        self.gen = Some(gen);
        self.heads = [None, None];
        self.stage = Stage::Log(self.seq + 1);
        Some(())
    }

    /// A snapshot's lines: each pool, then its claims.
    fn read_snapshot(&mut self, text: &str) -> Option<()> {
        let mut pool = None;
        for line in text.lines() {
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
        Some(())
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
        values.extend(encode_snapshot(70, 0, &pools, MAX_VALUE_BYTES));
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
        let good = encode_snapshot(1, 0, &[], MAX_VALUE_BYTES).remove(0).1;
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
        load.feed(None).unwrap();
        assert_eq!(load.next_key(), None, "no snapshot: nothing else to read");
    }

    #[test]
    fn issue_16_part_1_the_longest_lines_fit_the_least_value_limit_and_read_back() {
        let id = "%".repeat(crate::bounds::MAX_CLAIM_ID_BYTES);
        let worst = Stored {
            id: id.clone(),
            n: u64::MAX,
            at: u64::MAX,
            ttl: Some(u64::MAX),
            remember: true,
            first: u64::MAX,
            open: true,
        };
        let pools = vec![StoredPool {
            name: "p".repeat(crate::bounds::MAX_NAME),
            capacity: u64::MAX,
            claims: vec![worst.clone(); 5],
        }];
        let sets = encode_snapshot(u64::MAX - 1, 1, &pools, MIN_VALUE_BYTES);
        assert!(sets.len() > 2, "chunks, then the head");
        assert!(sets.iter().all(|(_, v)| v.len() <= MIN_VALUE_BYTES));
        let record = Record::Claim {
            pool: pools[0].name.clone(),
            claim: worst,
        };
        assert!(encode_segment(u64::MAX, &[record]).len() <= MIN_VALUE_BYTES);
        let values: HashMap<_, _> = sets.into_iter().collect();
        let mut load = PoolLoad::new();
        while let Some(key) = load.next_key() {
            // No segment after it: its slot is empty.
            load.feed(values.get(&key).map(String::as_str)).unwrap();
        }
        assert_eq!((load.seq, load.gen), (u64::MAX - 1, Some(1)));
        let read = load.finish();
        assert_eq!(
            read[0].claims.len(),
            1,
            "the same id five times: the last stands"
        );
        assert_eq!(read[0].claims[0].id, id);
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

//! The simulated storage: what the disk holds, and the one fence write under way.
//!
//! A write is asked for by the engine (`poll_persist`), is then *in flight*, and settles in one of three
//! ways: acknowledged (it is durable, and the engine is told), failed with nothing written, or failed
//! after all reaching the disk (an unknown outcome, as a timeout is). A process that dies with a write
//! in flight leaves the old value or the new one, never a torn one, as `fileStorage` promises.
//!
//! # Invariants (checked here, on what the engine asks for)
//! - At most one write is in flight: the engine never asks for a second before the first settled.
//! - No write lowers the stored ceiling: a restart could then repeat fences already handed out.

use crate::op::Outcome;

#[derive(Clone, Debug, Default)]
pub struct Storage {
    /// What the disk holds: the ceiling a process that opens now starts above.
    pub durable: Option<u64>,
    /// The write under way.
    pub in_flight: Option<u64>,
    /// The highest ceiling acknowledged to the current process.
    pub acked: u64,
    /// Writes asked for, over the whole run.
    pub writes: u64,
}

impl Storage {
    pub fn new(durable: Option<u64>) -> Storage {
        Storage {
            durable,
            ..Storage::default()
        }
    }

    /// The engine asks for `ceiling` to be written.
    pub fn ask(&mut self, ceiling: u64) -> Result<(), String> {
        if let Some(c) = self.in_flight {
            return Err(format!(
                "storage: asked to write {ceiling} while {c} is still being written"
            ));
        }
        if let Some(d) = self.durable.filter(|&d| ceiling < d) {
            return Err(format!(
                "storage: asked to write {ceiling}, below the stored {d}: a restart would repeat fences"
            ));
        }
        self.in_flight = Some(ceiling);
        self.writes += 1;
        Ok(())
    }

    /// The write under way settles; answers its ceiling, if one was under way.
    pub fn settle(&mut self, outcome: Outcome) -> Option<u64> {
        let ceiling = self.in_flight.take()?;
        if outcome != Outcome::FailLost {
            self.durable = Some(ceiling);
        }
        if outcome == Outcome::Ok {
            self.acked = self.acked.max(ceiling);
        }
        Some(ceiling)
    }

    /// The process dies (or lets the storage go after closing): the write under way reached the disk
    /// or not, and nothing is acknowledged to the next process yet.
    pub fn die(&mut self, landed: bool) {
        self.settle(if landed {
            Outcome::FailLanded
        } else {
            Outcome::FailLost
        });
        self.acked = 0;
    }
}

/// The simulated storage of pools: the values the engine wrote (what a new process reads back), the
/// model's copy of the state each write that landed whole keeps, and the one write under way (issue
/// #16). A write is a list of `set`s made in order; it settles as a fence write does: acknowledged,
/// failed with nothing written, or failed after reaching the disk whole; or the process dies after
/// any prefix of its sets (a crash in the middle of a snapshot's chunks).
///
/// # Invariants (checked here, on what the engine asks for)
/// - At most one write is under way.
/// - No value is longer than the limit the run set (`Engine::set_pool_value_limit`): a Durable
///   Object or Deno KV would refuse it.
/// - No write is numbered as one that landed whole before: a process that opens numbers its writes
///   above every one it read.
/// - A process that opens reads back the state of a write that landed whole, no older than the last
///   one acknowledged (`PoolDisk::read_back`).
#[derive(Clone, Debug)]
pub struct PoolDisk {
    pub values: std::collections::BTreeMap<String, String>,
    /// The state each write that landed whole keeps, by its number (0: the empty store).
    pub landed: std::collections::BTreeMap<u64, Vec<crate::model::DPool>>,
    /// The number of the last write acknowledged.
    pub acked: u64,
    /// The write under way, and the state it keeps once it lands.
    pub in_flight: Option<(holdfast_engine::PoolWrite, Vec<crate::model::DPool>)>,
    pub writes: u64,
    /// The longest value storage takes.
    pub limit: usize,
}

impl PoolDisk {
    pub fn new(limit: usize) -> PoolDisk {
        PoolDisk {
            values: Default::default(),
            landed: [(0, Vec::new())].into_iter().collect(),
            acked: 0,
            in_flight: None,
            writes: 0,
            limit,
        }
    }

    /// The host took a write.
    pub fn ask(
        &mut self,
        write: holdfast_engine::PoolWrite,
        state: Vec<crate::model::DPool>,
    ) -> Result<(), String> {
        if let Some((w, _)) = &self.in_flight {
            return Err(format!(
                "pool storage: write {} taken while {} is still being written",
                write.seq, w.seq
            ));
        }
        if let Some((key, value)) = write.sets.iter().find(|(_, v)| v.len() > self.limit) {
            return Err(format!(
                "pool storage: write {} sets {key} to {} bytes, over the {} storage takes",
                write.seq,
                value.len(),
                self.limit
            ));
        }
        if self.landed.contains_key(&write.seq) {
            return Err(format!(
                "pool storage: write {} numbered as one that landed before",
                write.seq
            ));
        }
        self.in_flight = Some((write, state));
        self.writes += 1;
        Ok(())
    }

    /// The write under way settles; answers its number, if one was under way.
    pub fn settle(&mut self, outcome: Outcome) -> Option<u64> {
        let (write, state) = self.in_flight.take()?;
        if outcome != Outcome::FailLost {
            self.values.extend(write.sets);
            self.landed.insert(write.seq, state);
        }
        if outcome == Outcome::Ok {
            self.acked = write.seq;
        }
        Some(write.seq)
    }

    /// The process dies: the write under way reached the disk whole (`landed`), or only its first
    /// `cut % sets` sets (none, for a write of one set). Answers whether that cut a write of several
    /// sets in its middle.
    pub fn die(&mut self, landed: bool, cut: u64) -> bool {
        if landed {
            self.settle(Outcome::FailLanded);
            return false;
        }
        let Some((write, _)) = self.in_flight.take() else {
            return false;
        };
        let cut = (cut % write.sets.len() as u64) as usize;
        self.values.extend(write.sets.into_iter().take(cut));
        cut > 0
    }

    /// What a process that opens reads back, as the write `seq` the engine read last: the state
    /// that write kept, if it landed whole and is no older than the last acknowledged.
    pub fn read_back(&self, seq: u64) -> Result<&[crate::model::DPool], String> {
        if seq < self.acked {
            return Err(format!(
                "open: pools read back as of write {seq}, before write {} was acknowledged: acknowledged changes lost",
                self.acked
            ));
        }
        self.landed.get(&seq).map(Vec::as_slice).ok_or_else(|| {
            format!("open: pools read back as of write {seq}, which never landed whole: a mix")
        })
    }
}

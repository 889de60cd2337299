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
/// model's copy of the state they keep, and the one write under way (issue #16). A write settles as
/// a fence write does: acknowledged, failed with nothing written, or failed after reaching the disk.
#[derive(Clone, Debug, Default)]
pub struct PoolDisk {
    pub values: std::collections::BTreeMap<String, String>,
    /// What a process that opens now reads back, as the model says it.
    pub durable: Vec<crate::model::DPool>,
    /// The write under way, and the state it keeps once it lands.
    pub in_flight: Option<(holdfast_engine::PoolWrite, Vec<crate::model::DPool>)>,
    pub writes: u64,
}

impl PoolDisk {
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
        self.in_flight = Some((write, state));
        self.writes += 1;
        Ok(())
    }

    /// The write under way settles; answers its number, if one was under way.
    pub fn settle(&mut self, outcome: Outcome) -> Option<u64> {
        let (write, state) = self.in_flight.take()?;
        if outcome != Outcome::FailLost {
            self.values.insert(write.key, write.value);
            self.durable = state;
        }
        Some(write.seq)
    }

    /// The process dies: the write under way reached the disk or not.
    pub fn die(&mut self, landed: bool) {
        self.settle(if landed {
            Outcome::FailLanded
        } else {
            Outcome::FailLost
        });
    }
}

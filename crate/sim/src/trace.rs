//! The trace hash: one number that stands for everything the engine answered in a run.
//!
//! Every operation and every answer of the engine (return values, events, fence writes asked for,
//! deadlines, footprints, inspections) is folded in as 64-bit words, never as a `usize` or anything
//! else whose width or layout depends on the target. So a run gives the same hash natively and in
//! wasm32 exactly when the engine behaved the same, call for call.
//!
//! The fold is FxHash's (rotate, xor, multiply by a large odd constant): fast, and for telling two
//! traces apart as good as needed. It is no defence against an adversary, and needs none.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trace(u64);

const K: u64 = 0x517C_C1B7_2722_0A95;

impl Default for Trace {
    fn default() -> Self {
        Trace(0xCBF2_9CE4_8422_2325)
    }
}

impl Trace {
    pub fn word(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }

    pub fn words(&mut self, ws: &[u64]) {
        for &w in ws {
            self.word(w);
        }
    }

    pub fn value(self) -> u64 {
        // A final avalanche, so that traces that differ in their last word differ everywhere.
        let mut z = self.0;
        z = (z ^ (z >> 33)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        z = (z ^ (z >> 33)).wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        z ^ (z >> 33)
    }
}

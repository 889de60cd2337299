//! The simulation's only source of randomness: SplitMix64 (Steele, Lea and Flood, 2014).
//!
//! # Why our own
//! A run must be the same on every machine, every Rust release and in wasm, given its seed. A crate's
//! generator may change its stream between versions (`rand` documents that its `StdRng` may), and
//! `std` has none, so the stream is defined here, in a dozen lines: a 64-bit counter stepped by the
//! golden-ratio increment and mixed by two multiply-xorshift rounds. It passes BigCrush, and its state
//! is one `u64`, so any seed is a valid state.
//!
//! # Invariant
//! Only integer arithmetic: no float enters a decision, so nothing depends on the target's float unit.

/// A SplitMix64 stream.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`), by Lemire's multiply-shift: the bias is below `n / 2^64`.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        debug_assert!(lo <= hi);
        lo + self.below(hi - lo + 1)
    }

    /// True `per_mille` times in a thousand.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// An index drawn in proportion to `weights` (at least one must be positive).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut at = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if at < u64::from(w) {
                return i;
            }
            at -= u64::from(w);
        }
        unreachable!("weights sum to {total}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_splitmix64() {
        // The reference values of SplitMix64 from seed 0 (as in Vigna's splitmix64.c).
        let mut r = Rng::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn draws_stay_in_their_bounds_and_reach_both_ends() {
        let mut r = Rng::new(7);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let x = r.range(3, 7);
            assert!((3..=7).contains(&x));
            seen[(x - 3) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        let mut hits = [0u32; 3];
        for _ in 0..3000 {
            hits[r.weighted(&[1, 0, 2])] += 1;
        }
        assert_eq!(hits[1], 0);
        assert!(hits[2] > hits[0]);
    }
}

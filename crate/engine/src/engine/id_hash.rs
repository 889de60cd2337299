//! The hasher of the maps of requests over connections (`remote.rs`): by request id, by lease id and
//! by connection. Their keys are numbers already spread over their range — ids of 16 random bytes,
//! the host's connection numbers, slab ids — so one folded multiply a 64-bit word (the product's high
//! half xored into its low half, as `foldhash` and `ahash` fold) spreads them enough, at a few
//! instructions a key. `std`'s default, SipHash-1-3, costs several times that, and every hold over a
//! connection hashes about ten keys (a lookup of its request id and its lease id, an insert and a
//! remove in each map). No crate for it: this is the whole of it.
//!
//! What it does not defend against: keys chosen to collide. A request id is the client's choice, so
//! an authenticated client could make its requests share buckets. It could before: on the target the
//! engine ships for (wasm32-unknown-unknown) `std` has no source of randomness, so SipHash ran with
//! fixed keys, against which colliding ids are found by trying. What bounds the harm is a
//! connection's limit of requests (`Engine::set_connection_limit`) and the server's `maxHolds`.

use std::hash::{BuildHasherDefault, Hasher};

/// An odd multiplier with its bits spread (the first digits of pi's fraction, as `foldhash` takes).
const K: u64 = 0x243f_6a88_85a3_08d3;

/// A hasher for keys that are already well spread numbers (see the module doc).
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl IdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        let product = u128::from(self.0 ^ word) * u128::from(K);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Only for keys other than the integers below (none of the maps has one): 8 bytes a word.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    #[inline]
    fn write_u128(&mut self, n: u128) {
        self.add(n as u64);
        self.add((n >> 64) as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// What the maps of `remote.rs` are built with.
pub(crate) type BuildIdHasher = BuildHasherDefault<IdHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    #[test]
    fn ids_differing_in_any_bit_hash_apart_and_numbers_in_sequence_spread() {
        let hash = |id: u128| BuildIdHasher::default().hash_one(id);
        let base = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        let mut seen = HashSet::new();
        assert!(seen.insert(hash(base)));
        for bit in 0..128 {
            assert!(seen.insert(hash(base ^ (1 << bit))), "bit {bit}");
        }
        // Connections and slab indexes come in sequence: they spread over the low bits a table
        // uses (as random values would: about 1 - 1/e of 1024 buckets), and over the top 7 bits
        // hashbrown keeps as a tag.
        let low: HashSet<u64> = (0..1024u32)
            .map(|n| BuildIdHasher::default().hash_one(n) & 1023)
            .collect();
        assert!(low.len() > 550, "{} of 1024 buckets", low.len());
        let tags: HashSet<u64> = (0..1024u32)
            .map(|n| BuildIdHasher::default().hash_one(n) >> 57)
            .collect();
        assert!(tags.len() > 100, "{} of 128 tags", tags.len());
    }
}

//! A `u64` stored at 4-byte alignment.
//!
//! On wasm32 a `u64` is aligned to 8 bytes, so a record that mixes `u64`s with 4-byte fields (ids,
//! pointers, tags) pads to a multiple of 8, and an `Option<u64>` takes 16 bytes. The engine keeps one
//! request record for every held key (a million keys held at once keep a million of them), so its
//! times and fences are stored as [`Packed64`]: the same value, aligned to 4, which packs the record
//! with no padding (an `Option<Packed64>` takes 12 bytes). It is read by value only ([`Packed64::get`]);
//! the compiler refuses references into it, which would be misaligned.

use std::fmt;

/// A `u64` aligned to 4 bytes. Equal when the values are.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, packed(4))]
pub struct Packed64(u64);

impl Packed64 {
    pub fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for Packed64 {
    fn from(value: u64) -> Packed64 {
        Packed64(value)
    }
}

impl fmt::Debug for Packed64 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_keeps_every_value_in_8_bytes_aligned_to_4() {
        for value in [0, 1, 1 << 32, (1 << 53) + 1, u64::MAX] {
            assert_eq!(Packed64::from(value).get(), value);
            assert_eq!(format!("{:?}", Packed64::from(value)), value.to_string());
        }
        assert_eq!(std::mem::size_of::<Packed64>(), 8);
        assert_eq!(std::mem::align_of::<Packed64>(), 4);
        assert_eq!(std::mem::size_of::<Option<Packed64>>(), 12);
        assert!(Packed64::from(3) == Packed64::from(3) && Packed64::from(3) != Packed64::from(4));
    }
}

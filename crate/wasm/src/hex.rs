//! Ids (request and lease, 128 bits) as JavaScript holds them: 32 lowercase hex digits.
//!
//! Every hold crosses this several times (a hold, its grant and its release, each side), so both ways
//! are a loop over the digits: `format!("{:032x}")` and `u128::from_str_radix` went through the
//! formatting machinery and 128-bit arithmetic, several times the cost.
//!
//! Invariants: `push_hex` writes exactly 32 digits, zero-padded, lowercase; `parse_hex` accepts exactly
//! 32 hex digits (either case) and nothing else (no sign, no prefix), and
//! `parse_hex(push_hex(id)) == id` for every id.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends `id` as 32 hex digits.
pub fn push_hex(out: &mut String, id: u128) {
    let mut digits = [0u8; 32];
    let halves = [(id >> 64) as u64, id as u64];
    for (i, digit) in digits.iter_mut().enumerate() {
        let nibble = (halves[i / 16] >> (60 - 4 * (i % 16))) & 0xf;
        *digit = DIGITS[nibble as usize];
    }
    // Every byte is an ASCII digit or letter.
    out.push_str(std::str::from_utf8(&digits).expect("hex digits are ASCII"));
}

/// `id` as 32 hex digits.
pub fn to_hex(id: u128) -> String {
    let mut out = String::with_capacity(32);
    push_hex(&mut out, id);
    out
}

/// The value of each byte as a hex digit, or `NOT_HEX`.
const NOT_HEX: u8 = 0xff;
static VALUE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut c = 0;
    while c < 256 {
        table[c] = match c as u8 {
            b'0'..=b'9' => c as u8 - b'0',
            b'a'..=b'f' => c as u8 - b'a' + 10,
            b'A'..=b'F' => c as u8 - b'A' + 10,
            _ => NOT_HEX,
        };
        c += 1;
    }
    table
};

/// 16 hex digits as a number.
fn half(digits: &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for &c in digits {
        let digit = VALUE[c as usize];
        if digit == NOT_HEX {
            return None;
        }
        value = (value << 4) | u64::from(digit);
    }
    Some(value)
}

/// The id spelled by exactly 32 hex digits, or `None`.
pub fn parse_hex(text: &[u8]) -> Option<u128> {
    if text.len() != 32 {
        return None;
    }
    let (hi, lo) = text.split_at(16);
    Some((u128::from(half(hi)?) << 64) | u128::from(half(lo)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_pads() {
        for id in [
            0u128,
            1,
            0xf,
            u128::from(u64::MAX),
            1 << 64,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        ] {
            let text = to_hex(id);
            assert_eq!(text, format!("{id:032x}"));
            assert_eq!(parse_hex(text.as_bytes()), Some(id));
        }
    }

    #[test]
    fn parses_either_case() {
        assert_eq!(
            parse_hex(b"0123456789ABCDEFabcdef0123456789"),
            Some(0x0123_4567_89ab_cdef_abcd_ef01_2345_6789)
        );
    }

    #[test]
    fn refuses_all_but_32_hex_digits() {
        for text in [
            &b""[..],
            b"0",
            b"0123456789abcdef0123456789abcde",
            b"0123456789abcdef0123456789abcdef0",
            b"+123456789abcdef0123456789abcdef",
            b"0123456789abcdef0123456789abcdeg",
            b" 123456789abcdef0123456789abcdef",
            b"0x23456789abcdef0123456789abcdef",
        ] {
            assert_eq!(parse_hex(text), None, "{:?}", String::from_utf8_lossy(text));
        }
    }
}

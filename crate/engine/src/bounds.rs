//! The bounds of every input, checked in one place so that the engine, the bindings and the wire all
//! refuse the same values with the same words.

use crate::error::Error;

/// The most waiters one key's line holds; one more is refused `limit`.
pub const MAX_WAITERS: u32 = 10_000;
/// The largest semaphore.
pub const MAX_LIMIT: u32 = 10_000;
/// `maxHold` is more than 0 and at most 30 days.
pub const MAX_HOLD_MS: u64 = 30 * 24 * 3_600_000;
/// A lease's `ttl` is 1 s to 1 h.
pub const TTL_MS: (u64, u64) = (1_000, 3_600_000);
/// A name is `[a-z0-9][a-z0-9_.-]{0,63}`.
pub const MAX_NAME: usize = 64;
/// A key is 1 to 1024 bytes of UTF-8.
pub const MAX_KEY_BYTES: usize = 1024;
/// A pool's capacity is 1 to 2^53 − 1 units (a safe JavaScript integer).
pub const MAX_CAPACITY: u64 = (1 << 53) - 1;
/// A claim id is 1 to 128 bytes of UTF-8.
pub const MAX_CLAIM_ID_BYTES: usize = 128;
/// The most claims one pool keeps, open ones and the tombstones of ids released within 24 hours.
pub const MAX_POOL_CLAIMS: usize = 1_000_000;
/// The most pools one store keeps (pools are durable, never forgotten: a bound a client over a
/// connection cannot push past).
pub const MAX_POOLS: usize = 100_000;

pub fn check_name(name: &str) -> Result<(), Error> {
    let bytes = name.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= MAX_NAME
        && matches!(bytes[0], b'a'..=b'z' | b'0'..=b'9')
        && bytes[1..]
            .iter()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "name {name:?} must match [a-z0-9][a-z0-9_.-]{{0,63}}"
        )))
    }
}

pub fn check_limit(limit: u32) -> Result<(), Error> {
    if (1..=MAX_LIMIT).contains(&limit) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "limit {limit} must be 1 to {MAX_LIMIT}"
        )))
    }
}

pub fn check_max_hold(ms: u64) -> Result<(), Error> {
    if (1..=MAX_HOLD_MS).contains(&ms) {
        Ok(())
    } else {
        Err(out_of_range("maxHold", &ms.to_string(), "1ms to 30 days"))
    }
}

/// The error of a duration out of its range, `given` as the caller wrote it.
pub fn out_of_range(what: &str, given: &str, range: &str) -> Error {
    Error::invalid(format!("{what} {given}ms must be {range}"))
}

pub fn check_ttl(ms: u64) -> Result<(), Error> {
    if (TTL_MS.0..=TTL_MS.1).contains(&ms) {
        Ok(())
    } else {
        Err(out_of_range("ttl", &ms.to_string(), "1s to 1h"))
    }
}

pub fn check_capacity(place: &str, capacity: u64) -> Result<(), Error> {
    if (1..=MAX_CAPACITY).contains(&capacity) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{place}: capacity {capacity} must be 1 to 2^53-1"
        )))
    }
}

pub fn check_claim_id(id: &str) -> Result<(), Error> {
    if (1..=MAX_CLAIM_ID_BYTES).contains(&id.len()) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "claim id of {} bytes must be 1 to {MAX_CLAIM_ID_BYTES} bytes",
            id.len()
        )))
    }
}

/// A claim's ttl: more than 0, at most 30 days (as `maxHold`).
pub fn check_claim_ttl(ms: u64) -> Result<(), Error> {
    if (1..=MAX_HOLD_MS).contains(&ms) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "claim ttl {ms}ms must be more than 0 and at most 30 days"
        )))
    }
}

pub fn check_key(key: &str) -> Result<(), Error> {
    if (1..=MAX_KEY_BYTES).contains(&key.len()) {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "key of {} bytes must be 1 to {MAX_KEY_BYTES} bytes",
            key.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_their_pattern() {
        for good in ["a", "summaries", "0", "a.b-c_d", &"x".repeat(64)] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "A",
            "-a",
            ".a",
            "_a",
            "a b",
            "a/b",
            "é",
            &"x".repeat(65),
        ] {
            let err = check_name(bad).unwrap_err();
            assert_eq!(err.code(), "invalid");
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
    }

    #[test]
    fn limits_durations_and_keys_are_bounded_at_both_ends() {
        assert!(check_limit(0).is_err());
        assert!(check_limit(1).is_ok());
        assert!(check_limit(10_000).is_ok());
        assert!(check_limit(10_001).is_err());
        assert!(check_max_hold(0).is_err());
        assert!(check_max_hold(1).is_ok());
        assert!(check_max_hold(MAX_HOLD_MS).is_ok());
        assert!(check_max_hold(MAX_HOLD_MS + 1).is_err());
        assert!(check_ttl(999).is_err());
        assert!(check_ttl(1_000).is_ok());
        assert!(check_ttl(3_600_000).is_ok());
        assert!(check_ttl(3_600_001).is_err());
        assert!(check_capacity("pool p", 0).is_err());
        assert!(check_capacity("pool p", 1).is_ok());
        assert!(check_capacity("pool p", MAX_CAPACITY).is_ok());
        assert!(check_capacity("pool p", MAX_CAPACITY + 1).is_err());
        assert!(check_claim_id("").is_err());
        assert!(check_claim_id(&"i".repeat(128)).is_ok());
        assert!(check_claim_id(&"i".repeat(129)).is_err());
        assert!(check_claim_ttl(0).is_err());
        assert!(check_claim_ttl(MAX_HOLD_MS).is_ok());
        assert!(check_key("").is_err());
        assert!(check_key(&"k".repeat(1024)).is_ok());
        assert!(check_key(&"k".repeat(1025)).is_err());
        assert!(check_key(&"é".repeat(512)).is_ok());
        assert!(check_key(&"é".repeat(513)).is_err());
    }
}

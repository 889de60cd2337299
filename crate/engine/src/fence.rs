//! Fences: numbers that only grow, across restarts, made durable in blocks.
//!
//! # Invariants
//! - Every fence handed out is larger than every fence handed out before it by this store, in this
//!   process or any earlier one that kept its state in the same storage.
//! - No fence is handed out above a *ceiling* that the storage has acknowledged. The storage keeps the
//!   highest ceiling ever acknowledged; a store that opens again starts above it. Fences therefore need
//!   no clock at all, and a wall clock that went backwards changes nothing.
//! - Fences are safe JavaScript integers: 1 to 2^53 − 1.
//!
//! # Cost
//! A ceiling covers [`BLOCK`] fences. The store writes one when it opens, and the next when half of the
//! current block is used, so that in steady state the write is acknowledged long before the block runs
//! out and no grant ever waits for storage: one write per million leases, none per lease. A crash loses
//! what was left of the block, which costs nothing but numbers (2^53 / 10^6 is nine billion restarts).

/// How many fences one acknowledged write covers.
pub const BLOCK: u64 = 1_000_000;

/// When fewer than this many covered fences are left, the next ceiling is asked for.
const LOW_WATER: u64 = BLOCK / 2;

/// The largest fence: the largest integer a JavaScript number holds exactly.
pub const MAX_FENCE: u64 = (1 << 53) - 1;

/// The fences of one store: what was handed out, what storage covers, and what is being written.
#[derive(Debug)]
pub struct FenceBook {
    /// The next fence to hand out.
    next: u64,
    /// The highest fence storage has acknowledged (`next - 1` or more when fences are available).
    covered: u64,
    /// A ceiling sent to storage and not yet answered.
    pending: Option<u64>,
    /// A ceiling the host should write, not yet taken by [`FenceBook::poll_persist`].
    wanted: Option<u64>,
}

impl FenceBook {
    /// The book of a store whose storage holds `stored` (the last acknowledged ceiling), or nothing yet.
    /// No fence is available until the first ceiling above it is acknowledged.
    pub fn open(stored: Option<u64>) -> Result<FenceBook, String> {
        let stored = stored.unwrap_or(0);
        if stored >= MAX_FENCE {
            return Err(format!(
                "stored fence ceiling {stored} leaves no fence below 2^53"
            ));
        }
        let mut book = FenceBook {
            next: stored + 1,
            covered: stored,
            pending: None,
            wanted: None,
        };
        book.want_more();
        Ok(book)
    }

    /// Whether a fence can be handed out now.
    pub fn available(&self) -> bool {
        self.next <= self.covered
    }

    /// Hands out the next fence. Call only when [`FenceBook::available`].
    pub fn take(&mut self) -> u64 {
        assert!(
            self.available(),
            "fence taken above the acknowledged ceiling"
        );
        let fence = self.next;
        self.next += 1;
        if self.covered - fence < LOW_WATER {
            self.want_more();
        }
        fence
    }

    /// Asks for the next ceiling, unless one is already asked for or the fences are used up.
    fn want_more(&mut self) {
        if self.pending.is_some() || self.wanted.is_some() {
            return;
        }
        let base = self.covered.max(self.next - 1);
        if base >= MAX_FENCE {
            return;
        }
        self.wanted = Some(base.saturating_add(BLOCK).min(MAX_FENCE));
    }

    /// The ceiling the host must write to storage now, if any. Once taken it is pending until
    /// [`FenceBook::persisted`] or [`FenceBook::failed`].
    pub fn poll_persist(&mut self) -> Option<u64> {
        let ceiling = self.wanted.take()?;
        self.pending = Some(ceiling);
        Some(ceiling)
    }

    /// Storage acknowledged `ceiling`: fences up to it may be handed out.
    pub fn persisted(&mut self, ceiling: u64) {
        if self.pending == Some(ceiling) {
            self.pending = None;
        }
        self.covered = self.covered.max(ceiling);
        if self.covered - self.next.min(self.covered) < LOW_WATER {
            self.want_more();
        }
    }

    /// Storage failed to keep `ceiling`. Nothing more is covered; the next grant that needs a fence
    /// asks again.
    pub fn failed(&mut self, ceiling: u64) {
        if self.pending == Some(ceiling) {
            self.pending = None;
        }
    }

    /// Asks for a ceiling again after a failure, when a grant is waiting for a fence.
    pub fn retry(&mut self) {
        if !self.available() {
            self.want_more();
        }
    }

    /// Whether no fence is left below 2^53 (the store can grant nothing more).
    pub fn exhausted(&self) -> bool {
        self.next > MAX_FENCE
    }

    /// The last fence handed out (0 if none yet).
    pub fn last(&self) -> u64 {
        self.next - 1
    }

    /// Whether a write to storage is under way.
    pub fn pending(&self) -> Option<u64> {
        self.pending
    }
}

/// The stored form of a ceiling: its decimal digits, a colon, and a check of them (FNV-1a, 32 bits, in
/// hex), so that a value damaged into another number — cut short, a digit changed — is refused rather
/// than taken for a smaller ceiling, which would hand out fences again.
pub fn encode_ceiling(ceiling: u64) -> String {
    let digits = ceiling.to_string();
    format!("{digits}:{:08x}", check(&digits))
}

/// A stored ceiling, or `None` when the text is not exactly what [`encode_ceiling`] writes.
pub fn decode_ceiling(text: &str) -> Option<u64> {
    let (digits, sum) = text.split_once(':')?;
    let well_formed = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && sum.len() == 8
        && sum.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !well_formed || u32::from_str_radix(sum, 16).ok()? != check(digits) {
        return None;
    }
    digits.parse().ok()
}

fn check(digits: &str) -> u32 {
    digits.bytes().fold(0x811c_9dc5, |hash, b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened(stored: Option<u64>) -> FenceBook {
        let mut book = FenceBook::open(stored).unwrap();
        let ceiling = book.poll_persist().expect("a new store asks for a ceiling");
        book.persisted(ceiling);
        book
    }

    #[test]
    fn lock_02_no_fence_is_available_before_storage_acknowledged_one() {
        let mut book = FenceBook::open(None).unwrap();
        assert!(!book.available());
        let ceiling = book.poll_persist().unwrap();
        assert_eq!(ceiling, BLOCK);
        assert!(!book.available(), "pending is not acknowledged");
        book.persisted(ceiling);
        assert_eq!(book.take(), 1);
    }

    #[test]
    fn lock_02_fences_restart_above_the_stored_ceiling() {
        let mut first = opened(None);
        let seen: Vec<u64> = (0..10).map(|_| first.take()).collect();
        // The process dies: all it wrote is the first ceiling.
        let mut second = opened(Some(BLOCK));
        let next = second.take();
        assert!(seen.iter().all(|&f| f < next));
    }

    #[test]
    fn lock_02_one_write_per_block_and_it_is_asked_for_early() {
        let mut book = opened(None);
        let mut writes = 1;
        for _ in 0..BLOCK {
            if let Some(ceiling) = book.poll_persist() {
                writes += 1;
                book.persisted(ceiling);
            }
            assert!(
                book.available(),
                "a grant never waits for storage in steady state"
            );
            book.take();
        }
        assert_eq!(writes, 2, "one write at open, one more per million");
    }

    #[test]
    fn lock_02_a_failed_write_covers_nothing() {
        let mut book = FenceBook::open(Some(7)).unwrap();
        let ceiling = book.poll_persist().unwrap();
        book.failed(ceiling);
        assert!(!book.available());
        assert_eq!(
            book.poll_persist(),
            None,
            "nothing asked until a grant needs a fence"
        );
        book.retry();
        let again = book.poll_persist().unwrap();
        book.persisted(again);
        assert_eq!(book.take(), 8);
    }

    #[test]
    fn lock_02_a_stored_ceiling_damaged_into_another_number_is_refused() {
        let good = encode_ceiling(2_000_000);
        assert_eq!(decode_ceiling(&good), Some(2_000_000));
        let (digits, sum) = good.split_once(':').unwrap();
        for bad in [
            format!("{}:{sum}", &digits[..3]),  // cut short
            format!("1{}:{sum}", &digits[1..]), // a digit changed
            digits.to_string(),                 // no check
            format!("{digits}:{sum}\n"),
            format!(" {good}"),
            format!("+{good}"),
            String::new(),
            format!("{digits}:{}", &sum[..7]),
        ] {
            assert_eq!(decode_ceiling(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn lock_02_fences_stay_safe_javascript_integers() {
        assert!(FenceBook::open(Some(MAX_FENCE)).is_err());
        let mut book = opened(Some(MAX_FENCE - 2));
        assert_eq!(book.take(), MAX_FENCE - 1);
        assert_eq!(book.take(), MAX_FENCE);
        assert!(!book.available());
        assert!(book.exhausted());
        assert_eq!(book.poll_persist(), None);
    }
}

//! Fences: numbers that only grow, across restarts, made durable in blocks.
//!
//! # Invariants
//! - Every fence handed out is larger than every fence handed out before it by this store, in this
//!   process or any earlier one that kept its state in the same storage.
//! - No fence is handed out above a *ceiling* that the storage has acknowledged. The storage keeps the
//!   highest ceiling ever acknowledged; a store that opens again starts above it. Fences therefore need
//!   no clock at all, and a wall clock that went backwards changes nothing.
//! - Fences are safe JavaScript integers: 1 to 2^53 − 1.
//! - A block of fences may be *lent* to the host ([`FenceBook::lend`]), which then grants uncontended
//!   leases itself without calling in, taking the block's fences one by one in order. The block is
//!   taken from covered fences only, so every fence the host takes from it is at or below the
//!   acknowledged ceiling; and while it is lent the book hands out nothing itself ([`FenceBook::take`]
//!   panics). Given back ([`FenceBook::reclaim`], before anything else can be granted: calling rule 3
//!   of the crate), with the first fence of it the host did not use, the book goes on from that one.
//!   Host grants and the book's grants therefore stay one increasing sequence, in grant order.
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

/// After a failed write, how many more fences are handed out (under the ceiling still covered) before
/// the next one is asked for. Asked for at every grant, a storage that fails (a full disk, a store
/// down) was sent a write per lease: half a million of them before the block ran out.
const RETRY_EVERY: u64 = 1_000;

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
    /// The block lent to the host, `(first, end)` (end exclusive), until [`FenceBook::reclaim`].
    /// `next` is already past it.
    lent: Option<(u64, u64)>,
    /// After a failed write: the fence from which the low water asks again ([`RETRY_EVERY`] on).
    retry_from: Option<u64>,
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
            lent: None,
            retry_from: None,
        };
        book.want_more();
        Ok(book)
    }

    /// Whether a fence can be handed out now.
    pub fn available(&self) -> bool {
        self.next <= self.covered
    }

    /// Hands out the next fence. Call only when [`FenceBook::available`] and nothing is lent.
    pub fn take(&mut self) -> u64 {
        assert!(
            self.lent.is_none(),
            "an engine grant while the host holds lent fences would break fence order"
        );
        assert!(
            self.available(),
            "fence taken above the acknowledged ceiling"
        );
        let fence = self.next;
        self.next += 1;
        self.after_handing_out(fence, fence);
        fence
    }

    /// Lends the host a block of up to `max` covered fences, `(first, end)` with `end` exclusive, for
    /// it to hand out itself in order. `None` (and nothing changes) when no fence is covered, a block
    /// is lent already, or `max` is 0. Until [`FenceBook::reclaim`], the whole block counts as handed
    /// out: [`FenceBook::last`] is `end - 1`, and the next ceiling is asked for as if it were used.
    pub fn lend(&mut self, max: u64) -> Option<(u64, u64)> {
        if !self.available() || self.lent.is_some() || max == 0 {
            return None;
        }
        let first = self.next;
        // `covered` is at most `MAX_FENCE`, so neither sum overflows a u64.
        let end = first.saturating_add(max).min(self.covered + 1);
        self.next = end;
        self.lent = Some((first, end));
        self.after_handing_out(first, end - 1);
        Some((first, end))
    }

    /// The host gives the lent block back: `unused` is the first fence of it the host did not hand
    /// out (`end` when it used them all). The book goes on from there.
    ///
    /// # Panics
    /// When nothing is lent, or `unused` is outside the block: the host broke the lending protocol,
    /// and going on could hand out a fence twice or out of order.
    pub fn reclaim(&mut self, unused: u64) {
        let Some((first, end)) = self.lent else {
            panic!("fences reclaimed when none are lent");
        };
        assert!(
            (first..=end).contains(&unused),
            "the host's next fence {unused} is outside the block [{first}, {end}) it was lent: fences would repeat or skip out of order"
        );
        self.next = unused;
        self.lent = None;
    }

    /// The block lent to the host, `(first, end)`, if one is.
    pub fn lent(&self) -> Option<(u64, u64)> {
        self.lent
    }

    /// After fences `first` to `last` were handed out (or lent): asks for the next ceiling at the low
    /// water. After a failed write, only from `retry_from` on, counted by `first`: a lent block counts
    /// as handed out whole, but what the host does not use comes back, and would ask at every lend.
    fn after_handing_out(&mut self, first: u64, last: u64) {
        if self.covered - last < LOW_WATER && self.retry_from.is_none_or(|from| first >= from) {
            self.want_more();
        }
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
        self.retry_from = None;
        if self.covered - self.next.min(self.covered) < LOW_WATER {
            self.want_more();
        }
    }

    /// Storage failed to keep `ceiling`. Nothing more is covered; the next grant that needs a fence
    /// asks again, and while fences are still covered, the grant [`RETRY_EVERY`] fences on does.
    pub fn failed(&mut self, ceiling: u64) {
        if self.pending == Some(ceiling) {
            self.pending = None;
        }
        self.retry_from = Some(self.next.saturating_add(RETRY_EVERY - 1));
    }

    /// Asks for a ceiling again after a failure, when a grant is waiting for a fence (at once: the
    /// grant waits for it).
    pub fn retry(&mut self) {
        if !self.available() {
            self.want_more();
        }
    }

    /// Whether no fence is left below 2^53 (the store can grant nothing more).
    pub fn exhausted(&self) -> bool {
        self.next > MAX_FENCE
    }

    /// The last fence handed out (0 if none yet); while a block is lent, the block's last.
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
    fn a_lent_block_is_bounded_by_the_acknowledged_ceiling() {
        let mut book = opened(Some(BLOCK - 10));
        // Covered: BLOCK - 9 ..= 2 * BLOCK - 10 (the first ceiling is BLOCK above the stored one).
        let covered = 2 * BLOCK - 10;
        assert_eq!(book.lend(5), Some((BLOCK - 9, BLOCK - 4)));
        assert_eq!(book.lent(), Some((BLOCK - 9, BLOCK - 4)));
        assert_eq!(
            book.last(),
            BLOCK - 5,
            "the whole block counts as handed out"
        );
        assert_eq!(book.lend(5), None, "one block at a time");
        book.reclaim(BLOCK - 4);
        let (first, end) = book.lend(u64::MAX).unwrap();
        assert_eq!((first, end), (BLOCK - 4, covered + 1));
        assert!(!book.available());
        book.reclaim(end);
        assert_eq!(book.lend(1), None, "nothing covered is left to lend");
    }

    #[test]
    fn reclaim_gives_back_the_unused_part_and_fences_go_on_in_order() {
        let mut book = opened(None);
        assert_eq!(book.take(), 1);
        let (first, end) = book.lend(10).unwrap();
        assert_eq!((first, end), (2, 12));
        // The host hands out 2, 3 and 4 itself, then gives the rest back.
        book.reclaim(5);
        assert_eq!(book.lent(), None);
        assert_eq!(book.last(), 4);
        assert_eq!(book.take(), 5);
        assert_eq!(book.lend(3), Some((6, 9)));
        book.reclaim(6); // none used
        assert_eq!(book.take(), 6);
        assert_eq!(book.lend(2), Some((7, 9)));
        book.reclaim(9); // all used
        assert_eq!(book.take(), 9);
        assert_eq!(book.lend(0), None);
    }

    #[test]
    #[should_panic(expected = "would break fence order")]
    fn take_panics_while_a_block_is_lent() {
        let mut book = opened(None);
        book.lend(4).unwrap();
        book.take();
    }

    #[test]
    #[should_panic(expected = "outside the block")]
    fn reclaim_above_the_block_panics() {
        let mut book = opened(None);
        book.lend(4).unwrap(); // 1..5
        book.reclaim(6);
    }

    #[test]
    #[should_panic(expected = "outside the block")]
    fn reclaim_below_the_block_panics() {
        let mut book = opened(None);
        book.take();
        book.lend(4).unwrap(); // 2..6
        book.reclaim(1);
    }

    #[test]
    #[should_panic(expected = "none are lent")]
    fn reclaim_with_nothing_lent_panics() {
        let mut book = opened(None);
        book.reclaim(1);
    }

    #[test]
    fn lending_past_the_low_water_asks_for_the_next_ceiling() {
        let mut book = opened(None);
        assert_eq!(book.lend(LOW_WATER), Some((1, LOW_WATER + 1)));
        assert_eq!(book.poll_persist(), None, "exactly half a block is left");
        book.reclaim(LOW_WATER + 1);
        assert_eq!(book.lend(1), Some((LOW_WATER + 1, LOW_WATER + 2)));
        assert_eq!(book.poll_persist(), Some(2 * BLOCK));
    }

    #[test]
    fn a_failed_low_water_write_is_asked_again_every_retry_every_fences_not_at_every_grant() {
        let mut book = opened(None);
        assert_eq!(book.lend(LOW_WATER), Some((1, LOW_WATER + 1)));
        book.reclaim(LOW_WATER + 1);
        book.take(); // past the low water: the next ceiling is asked for
        let ceiling = book.poll_persist().unwrap();
        book.failed(ceiling);
        // Fences are still covered: grants go on, and storage is not asked at each of them.
        for _ in 1..RETRY_EVERY {
            book.take();
            assert_eq!(book.poll_persist(), None);
        }
        book.take();
        let again = book
            .poll_persist()
            .expect("asked again RETRY_EVERY fences on");
        book.persisted(again);
        book.take();
        assert_eq!(book.poll_persist(), None, "covered again: a block ahead");
        // Lent blocks count by their first fence: one reaching past the retry point does not ask.
        let mut book = opened(None);
        book.lend(LOW_WATER).unwrap();
        book.reclaim(LOW_WATER + 1);
        book.take();
        let ceiling = book.poll_persist().unwrap();
        book.failed(ceiling);
        for _ in 0..5 {
            let (first, _) = book.lend(4 * RETRY_EVERY).unwrap();
            assert_eq!(book.poll_persist(), None, "a block lent from {first}");
            book.reclaim(first + 1);
        }
        // Once every covered fence is used, a grant that waits asks at once.
        let mut book = opened(None);
        book.lend(BLOCK - 1).unwrap();
        book.reclaim(BLOCK);
        let ceiling = book.poll_persist().unwrap();
        book.failed(ceiling);
        book.take();
        assert!(!book.available());
        book.retry();
        assert!(
            book.poll_persist().is_some(),
            "a waiting grant asks again at once"
        );
    }

    #[test]
    fn nothing_is_lent_before_storage_acknowledged_a_ceiling() {
        let mut book = FenceBook::open(None).unwrap();
        assert_eq!(book.lend(8), None);
        let ceiling = book.poll_persist().unwrap();
        assert_eq!(book.lend(8), None, "a pending write covers nothing");
        book.persisted(ceiling);
        assert_eq!(book.lend(8), Some((1, 9)));
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

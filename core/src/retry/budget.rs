//! Retry budget (DESIGN §4; Finagle `RetryBudget`): each request deposits
//! `percent_can_retry` of a retry, each retry withdraws one, plus a reserve of
//! `min_retries_per_sec · ttl`; deposits and withdrawals expire after `ttl`, at the
//! granularity of 10 buckets of `ttl / 10`.
//!
//! # Protocol
//! Amounts are fixed point: parts per million of one retry, so 60 % is exactly
//! 600 000 and 10 requests at 60 % buy exactly 6 retries (Finagle and tower
//! truncate). The *current* bucket lives in the 128-bit `head` word (epoch,
//! requests, retries); the 10 closed buckets live in `archive` slots tagged with
//! their epoch.
//!
//! * Every deposit and withdrawal is one CAS of `head`. A withdrawal computes the
//!   balance from the `head` value it read plus the archive, and commits with a
//!   CAS from exactly that value: if anything changed in between, the CAS fails
//!   and it checks again. That is the atomic check-and-withdraw: two racing
//!   retries can never both spend the last retry.
//! * Moving to a new epoch archives the old head *before* the CAS that replaces
//!   it, so a bucket leaves `head` only once its final counts are in the archive.
//!   Archive slots only move forward (newer epoch, or larger counts of the same
//!   epoch), so a slow rotator holding an old snapshot never overwrites a newer one.
//! * While `head` holds epoch `e`, no archive slot of the live epochs
//!   `e−9 ..= e−1` can change (they were final before `head` left them), which is
//!   why a balance read from `head` plus the archive is exact when the CAS on
//!   `head` succeeds.
//! * For the same reason the archive's sums for head epoch `e` are the same for
//!   every withdrawal while `head` holds `e`: the first one stores them in
//!   `archived`, tagged `e`, and the others read one word instead of ten. A sum
//!   computed from a `head` value that has since moved on may be wrong, but it is
//!   only ever used with that old value, whose CAS then fails.

use crossbeam_utils::CachePadded;

use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::div::Divisor;
use crate::error::{ConfigError, Field, Problem};
use crate::ratio::{PPM, Ratio};
use crate::sync::{AtomicU128, Ordering};
use crate::time::secs;

use super::tally::{RetryTotals, Tally};

/// Buckets of a retry budget's `ttl` (Finagle's `WindowedAdder` uses 10 slices).
pub const BUDGET_BUCKETS: usize = 10;

const EPOCH_MASK: u64 = (1 << 48) - 1;
/// Low half of the `archived` word: its sums are those of the epoch beside it.
const ARCHIVED: u64 = 1 << 63;

/// Retry budget configuration (DESIGN §4, Finagle `RetryBudget`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryBudgetConfig {
    /// How long deposits and withdrawals count (ns, `≥ 1 ms`). Default 10 s.
    pub ttl_ns: u64,
    /// Retries always allowed per second of `ttl`, whatever the requests.
    /// Default 10.
    pub min_retries_per_sec: u32,
    /// Fraction of a retry each request deposits (`0 ..= 1000 %`). Default 20 %.
    pub percent_can_retry: Ratio,
}

impl RetryBudgetConfig {
    /// DESIGN §4 defaults: ttl 10 s, 10 retries per second, 20 %.
    pub const DEFAULT: Self = Self {
        ttl_ns: secs(10),
        min_retries_per_sec: 10,
        percent_can_retry: Ratio::from_percent(20),
    };

    /// Smallest `ttl`: ten buckets of at least 100 µs keep every epoch of a `u64`
    /// clock within the 48 bits of a bucket tag.
    pub const MIN_TTL_NS: u64 = 1_000_000;

    /// Check every field.
    pub const fn validate(&self) -> Result<(), ConfigError> {
        if self.ttl_ns == 0 {
            return Err(ConfigError::new(Field::RetryBudgetTtl, Problem::Zero));
        }
        if let Err(e) = ConfigError::check_range(
            Field::RetryBudgetTtl,
            self.ttl_ns,
            Self::MIN_TTL_NS,
            u64::MAX,
        ) {
            return Err(e);
        }
        ConfigError::check_range(
            Field::PercentCanRetry,
            self.percent_can_retry.ppm(),
            0,
            10 * PPM,
        )
    }
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One bucket: epoch, requests and retries counted in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bucket {
    epoch: u64,
    requests: u32,
    retries: u32,
}

impl Bucket {
    fn unpack(v: u128) -> Self {
        let hi = (v >> 64) as u64;
        Self {
            epoch: v as u64 & EPOCH_MASK,
            requests: hi as u32,
            retries: (hi >> 32) as u32,
        }
    }

    fn pack(self) -> u128 {
        let hi = u64::from(self.requests) | (u64::from(self.retries) << 32);
        u128::from(self.epoch) | (u128::from(hi) << 64)
    }

    /// This snapshot was taken no earlier than `other` (same epoch, counts only grow).
    fn covers(self, other: Self) -> bool {
        self.epoch > other.epoch
            || (self.epoch == other.epoch
                && self.requests >= other.requests
                && self.retries >= other.retries)
    }
}

/// What a budget holds at some instant.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RetryBudgetSnapshot {
    /// Requests deposited in the live window.
    pub requests: u64,
    /// Retries withdrawn in the live window.
    pub retries: u64,
    /// Retries that would be allowed now, in parts per million of a retry
    /// (reserve + deposits − withdrawals, never negative).
    pub balance_ppm: u64,
}

impl RetryBudgetSnapshot {
    /// Whole retries that would be allowed now.
    #[must_use]
    pub const fn available(&self) -> u64 {
        self.balance_ppm / PPM
    }
}

/// A lock-free retry budget (Finagle `RetryBudget`), shared by every caller of one
/// dependency. Every method takes the caller's monotonic `now` in nanoseconds; a
/// clock that steps back counts as no time passed.
///
/// `size_of::<RetryBudget>()` is 512 bytes on x86-64: the head word on its own
/// 128-byte line, 10 archive words of 16 bytes and the archive's sums (16 bytes),
/// 24 bytes of configuration, the bucket width with its precomputed reciprocal
/// (16 bytes) and the reserve (8 bytes), rounded to the 128-byte alignment, then
/// the lifetime totals on a line of their own.
#[repr(C)]
pub struct RetryBudget {
    head: CachePadded<AtomicU128>,
    archive: [AtomicU128; BUDGET_BUCKETS],
    /// The archive's live requests and retries for one head epoch (see the
    /// module docs): epoch | `ARCHIVED` in the low half, the two sums (32 bits
    /// each) in the high half.
    archived: AtomicU128,
    config: RetryBudgetConfig,
    width: Divisor,
    reserve_ppm: u64,
    /// Withdrawals allowed and refused, on a line of their own: a budget that
    /// is exhausted under load refuses on every core.
    tally: CachePadded<Tally>,
}

impl RetryBudget {
    /// An empty budget (only the reserve), or the first invalid field.
    pub fn new(config: RetryBudgetConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        // min · ttl retries, in ppm of a retry: min · ttl_ns / 10⁹ · 10⁶.
        let reserve = u128::from(config.min_retries_per_sec) * u128::from(config.ttl_ns) / 1000;
        Ok(Self {
            head: CachePadded::new(AtomicU128::new(0)),
            archive: core::array::from_fn(|_| AtomicU128::new(0)),
            archived: AtomicU128::new(0),
            config,
            width: Divisor::new(config.ttl_ns / BUDGET_BUCKETS as u64),
            reserve_ppm: u64::try_from(reserve).unwrap_or(u64::MAX),
            tally: CachePadded::new(Tally::new()),
        })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &RetryBudgetConfig {
        &self.config
    }

    /// The reserve in parts per million of a retry: `min_retries_per_sec · ttl`.
    #[must_use]
    pub fn reserve_ppm(&self) -> u64 {
        self.reserve_ppm
    }

    /// An original request starts at `now` (ns): deposit `percent_can_retry`.
    // Inline: the checked form is the same code; no call or nested result is
    // left on the hot path of in-process callers.
    #[inline]
    pub fn deposit(&self, now: u64) {
        let _ = self.deposit_checked(now);
    }

    /// [`deposit`](Self::deposit) for a budget in memory others may write (a
    /// shared region): [`Corrupt`] when a word kept changing under
    /// [`MAX_RETRIES`] passes (then nothing was deposited).
    pub fn deposit_checked(&self, now: u64) -> Result<(), Corrupt> {
        // Invariant: `head` only moves to a newer epoch (after archiving the old
        // one) or to larger counts of its epoch; a CAS from the value read commits
        // exactly one request into exactly the bucket that was read or rotated.
        let mut raw = self.head.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            let cur = Bucket::unpack(raw);
            let base = self.rotated(cur, now)?;
            if base.requests == u32::MAX {
                // Bucket full: a deposit that cannot be counted is not made (it
                // only ever lowers the balance, so the budget stays safe).
                return Ok(());
            }
            let next = Bucket {
                requests: base.requests + 1,
                ..base
            };
            match self
                .head
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(()),
                Err(seen) => raw = seen,
            }
        }
        Err(Corrupt)
    }

    /// A retry wants to start at `now` (ns): withdraw one retry if the balance
    /// covers it, in one atomic step. `true` when the retry may go ahead.
    // Inline: the checked form is the same code; no call or nested result is
    // left on the hot path of in-process callers.
    #[inline]
    pub fn try_withdraw(&self, now: u64) -> bool {
        self.try_withdraw_checked(now).unwrap_or(false)
    }

    /// [`try_withdraw`](Self::try_withdraw) for a budget in memory others may
    /// write (a shared region): [`Corrupt`] when a word kept changing under
    /// [`MAX_RETRIES`] passes (then nothing was withdrawn and the retry should
    /// not go ahead).
    pub fn try_withdraw_checked(&self, now: u64) -> Result<bool, Corrupt> {
        self.withdraw(now).map(|allowed| self.tally.count(allowed))
    }

    /// Withdrawals allowed and refused since the budget was made (in a shared
    /// region: by every process).
    #[must_use]
    pub fn totals(&self) -> RetryTotals {
        self.tally.read()
    }

    fn withdraw(&self, now: u64) -> Result<bool, Corrupt> {
        // Invariant: the balance is computed from the `head` value `raw` and the
        // archive slots of the epochs before it, which cannot change while `head`
        // still holds `raw`; the withdrawal commits with a CAS from `raw`, so it
        // is allowed only if the balance it checked is the balance at the commit.
        let mut raw = self.head.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            let cur = Bucket::unpack(raw);
            let base = self.rotated(cur, now)?;
            let allowed = base.retries < u32::MAX && self.balance(cur, base) >= i128::from(PPM);
            if !allowed {
                // A refusal is exact only if `head` still holds what was checked.
                // One that moved to a newer epoch installs it, so that this `now`
                // is remembered as the largest seen (a lagging clock that writes
                // next lands in this epoch, not an older one).
                let seen = if base.epoch == cur.epoch {
                    self.head.load(Ordering::Acquire)
                } else {
                    match self.head.compare_exchange(
                        raw,
                        base.pack(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => raw,
                        Err(seen) => seen,
                    }
                };
                if seen == raw {
                    return Ok(false);
                }
                raw = seen;
                continue;
            }
            let next = Bucket {
                retries: base.retries + 1,
                ..base
            };
            #[cfg(seawall_mutant = "budget_check_then_withdraw")]
            {
                // Mutant: the check and the withdrawal are two steps; the
                // withdrawal re-reads `head` and adds blindly to whatever it finds.
                let _ = next;
                let mut seen = raw;
                loop {
                    let b = Bucket::unpack(seen);
                    let b = self.rotated(b, now)?;
                    let n = Bucket {
                        retries: b.retries + 1,
                        ..b
                    };
                    match self.head.compare_exchange(
                        seen,
                        n.pack(),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => return Ok(true),
                        Err(s) => seen = s,
                    }
                }
            }
            #[cfg(not(seawall_mutant = "budget_check_then_withdraw"))]
            match self
                .head
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(true),
                Err(seen) => raw = seen,
            }
        }
        Err(Corrupt)
    }

    /// What the budget holds as of `now` (ns). Reading changes nothing (a bucket
    /// that has aged out is left for the next writer to archive).
    #[must_use]
    pub fn snapshot(&self, now: u64) -> RetryBudgetSnapshot {
        let raw = self.head.load(Ordering::Acquire);
        let cur = Bucket::unpack(raw);
        let epoch = self.epoch_of(now).max(cur.epoch);
        let (requests, retries) = self.live_counts(cur, epoch);
        let balance = self.ppm_balance(requests, retries);
        RetryBudgetSnapshot {
            requests,
            retries,
            balance_ppm: u64::try_from(balance.max(0)).unwrap_or(u64::MAX),
        }
    }

    fn epoch_of(&self, now: u64) -> u64 {
        self.width.div(now) & EPOCH_MASK
    }

    /// The bucket a write at `now` goes into, given the head `cur`: the same one,
    /// or (after archiving `cur`) an empty one of the newer epoch. A clock behind
    /// the head counts as the head's epoch.
    fn rotated(&self, cur: Bucket, now: u64) -> Result<Bucket, Corrupt> {
        let e = self.epoch_of(now);
        if e <= cur.epoch {
            return Ok(cur);
        }
        self.archive_bucket(cur)?;
        Ok(Bucket {
            epoch: e,
            requests: 0,
            retries: 0,
        })
    }

    /// Store `b` (a snapshot of `head`) in its archive slot unless the slot already
    /// holds the same or a later snapshot.
    fn archive_bucket(&self, b: Bucket) -> Result<(), Corrupt> {
        let slot = &self.archive[(b.epoch % BUDGET_BUCKETS as u64) as usize];
        #[cfg(seawall_mutant = "budget_blind_archive")]
        {
            // Mutant: a blind store lets a slow rotator's old snapshot overwrite
            // the final counts another rotator archived.
            slot.store(b.pack(), Ordering::Release);
            Ok(())
        }
        #[cfg(not(seawall_mutant = "budget_blind_archive"))]
        {
            // Invariant: a slot only moves to a snapshot that covers the one it
            // holds, so once the final counts of an epoch are in, nothing older
            // replaces them.
            let mut raw = slot.load(Ordering::Acquire);
            for _ in 0..MAX_RETRIES {
                if Bucket::unpack(raw).covers(b) {
                    return Ok(());
                }
                match slot.compare_exchange(raw, b.pack(), Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return Ok(()),
                    Err(seen) => raw = seen,
                }
            }
            Err(Corrupt)
        }
    }

    /// Requests and retries of the window ending at epoch `epoch`, given the head
    /// snapshot `cur` (which is counted from itself, not from its archive slot).
    fn live_counts(&self, cur: Bucket, epoch: u64) -> (u64, u64) {
        let span = BUDGET_BUCKETS as u64;
        let live = |e: u64| e <= epoch && epoch - e < span;
        let (mut requests, mut retries) = (0u64, 0u64);
        if live(cur.epoch) {
            requests += u64::from(cur.requests);
            retries += u64::from(cur.retries);
        }
        for slot in &self.archive {
            let b = Bucket::unpack(slot.load(Ordering::Acquire));
            if b.epoch < cur.epoch && live(b.epoch) {
                requests += u64::from(b.requests);
                retries += u64::from(b.retries);
            }
        }
        (requests, retries)
    }

    /// Balance in ppm of a retry once the head snapshot `cur` has moved to `base`
    /// (`cur` itself, or an empty bucket of a newer epoch).
    fn balance(&self, cur: Bucket, base: Bucket) -> i128 {
        let (requests, retries) = if base.epoch == cur.epoch {
            let (r, t) = self.archived_counts(cur.epoch);
            (r + u64::from(cur.requests), t + u64::from(cur.retries))
        } else {
            self.live_counts(cur, base.epoch)
        };
        self.ppm_balance(requests, retries)
    }

    /// The archive's live requests and retries for head epoch `epoch`: from the
    /// `archived` word when it holds them, else counted (and stored there).
    fn archived_counts(&self, epoch: u64) -> (u64, u64) {
        let c = self.archived.load(Ordering::Acquire);
        let hi = (c >> 64) as u64;
        #[cfg(not(seawall_mutant = "budget_archived_any_epoch"))]
        let tagged = c as u64 == epoch | ARCHIVED;
        // Mutant: sums of whatever epoch they were counted for.
        #[cfg(seawall_mutant = "budget_archived_any_epoch")]
        let tagged = c as u64 & ARCHIVED != 0;
        if tagged {
            return (hi & 0xFFFF_FFFF, hi >> 32);
        }
        let empty = Bucket {
            epoch,
            requests: 0,
            retries: 0,
        };
        let (r, t) = self.live_counts(empty, epoch);
        if let (Ok(r32), Ok(t32)) = (u32::try_from(r), u32::try_from(t)) {
            // A plain store: every value stored for an epoch is its sums (or
            // never used, see the module docs), so a race only costs a recount.
            let word = u128::from(epoch | ARCHIVED)
                | (u128::from(u64::from(r32) | (u64::from(t32) << 32)) << 64);
            self.archived.store(word, Ordering::Release);
        }
        (r, t)
    }

    fn ppm_balance(&self, requests: u64, retries: u64) -> i128 {
        i128::from(self.reserve_ppm)
            + i128::from(requests) * i128::from(self.config.percent_can_retry.ppm())
            - i128::from(retries) * i128::from(PPM)
    }
}

impl core::fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RetryBudget")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

//! The breaker's state word: state, epoch, half-open counters, opening count and the
//! state's timestamp in one 128-bit atomic, so they always change together
//! (DESIGN §3.5: no reader ever sees `open` with another opening's `open_until`).
//!
//! Low 64 bits: `state` (3) | `epoch` (28) | `a` (11) | `b` (11) | `k` (11).
//! In `half_open`, `a` is the probes in flight and `b` the successful probes; in
//! `closed`, `a | b << 11` is the run of consecutive failures. `k` is the number of
//! consecutive openings. High 64 bits: `open_until` in `open`, `half_open_since` in
//! `half_open`, zero otherwise.

/// State of a circuit breaker (DESIGN §3).
// Eight bytes, not one: a rejection returns it in a `Rejected` through memory, and
// callers copy that by whole words; a one-byte store read back as a word cannot
// be forwarded from the store buffer and stalls the load (an open breaker's
// rejection took 8.5 ns with a `u8` here, 3.0 ns with a `u64`, on AMD EPYC).
#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls are admitted and their outcomes counted.
    Closed = 0,
    /// Calls are rejected until `open_until`.
    Open = 1,
    /// A limited number of probe calls decide whether to close or reopen.
    HalfOpen = 2,
    /// Manually opened: every call is rejected until `reset`.
    ForcedOpen = 3,
    /// Manually disabled: every call is admitted, outcomes count in totals only.
    Disabled = 4,
}

impl State {
    /// The DESIGN.md name: `closed`, `open`, `half_open`, `forced_open`, `disabled`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Open => "open",
            Self::HalfOpen => "half_open",
            Self::ForcedOpen => "forced_open",
            Self::Disabled => "disabled",
        }
    }

    const fn from_bits(b: u64) -> Self {
        match b {
            1 => Self::Open,
            2 => Self::HalfOpen,
            3 => Self::ForcedOpen,
            4 => Self::Disabled,
            _ => Self::Closed,
        }
    }
}

/// Epochs are 28-bit and wrap; a permit is stale when its epoch differs from the
/// breaker's (a permit would have to outlive 2²⁸ state changes to be mistaken).
pub(crate) const EPOCH_MASK: u32 = (1 << 28) - 1;
/// Largest probes in flight / successful probes a half-open episode can count.
pub const MAX_HALF_OPEN_CALLS: u32 = (1 << 11) - 1;
/// Largest consecutive-failure run the closed state can count.
pub const MAX_CONSECUTIVE_FAILURES: u32 = (1 << 22) - 1;
/// Consecutive openings are counted up to this value; beyond it the open duration
/// stops growing.
pub const MAX_OPENINGS: u32 = (1 << 11) - 1;

const EPOCH_SHIFT: u32 = 3;
const A_SHIFT: u32 = 31;
const B_SHIFT: u32 = 42;
const K_SHIFT: u32 = 53;
const F11: u64 = (1 << 11) - 1;

/// The next epoch after `e` for a state that is (`half_open`) or is not
/// half-open. Half-open epochs are odd and all others even, one number skipped
/// when needed (2²⁸ is even, so wrapping keeps the parity): a record can then tell
/// from its permit alone whether it was a probe, counted when admitted, or a
/// closed or disabled permit, counted when recorded (see `metrics::Totals`).
pub(crate) const fn next_epoch(e: u32, half_open: bool) -> u32 {
    let n = e.wrapping_add(1) & EPOCH_MASK;
    if is_probe_epoch(n) == half_open {
        n
    } else {
        n.wrapping_add(1) & EPOCH_MASK
    }
}

/// Whether a permit of epoch `e` was admitted in half-open (a probe).
pub(crate) const fn is_probe_epoch(e: u32) -> bool {
    e & 1 == 1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) u128);

impl Word {
    const fn build(state: State, epoch: u32, a: u32, b: u32, k: u32, time: u64) -> Self {
        let lo = (state as u64)
            | ((epoch as u64 & EPOCH_MASK as u64) << EPOCH_SHIFT)
            | ((a as u64 & F11) << A_SHIFT)
            | ((b as u64 & F11) << B_SHIFT)
            | ((k as u64 & F11) << K_SHIFT);
        Self(lo as u128 | ((time as u128) << 64))
    }

    pub(crate) const fn closed(epoch: u32) -> Self {
        Self::build(State::Closed, epoch, 0, 0, 0, 0)
    }

    pub(crate) const fn open(epoch: u32, k: u32, open_until: u64) -> Self {
        Self::build(State::Open, epoch, 0, 0, k, open_until)
    }

    pub(crate) const fn half_open(epoch: u32, k: u32, probes: u32, since: u64) -> Self {
        Self::build(State::HalfOpen, epoch, probes, 0, k, since)
    }

    pub(crate) const fn manual(state: State, epoch: u32) -> Self {
        Self::build(state, epoch, 0, 0, 0, 0)
    }

    const fn lo(self) -> u64 {
        self.0 as u64
    }

    pub(crate) const fn state(self) -> State {
        State::from_bits(self.lo() & 0b111)
    }

    pub(crate) const fn epoch(self) -> u32 {
        ((self.lo() >> EPOCH_SHIFT) as u32) & EPOCH_MASK
    }

    pub(crate) const fn probes(self) -> u32 {
        ((self.lo() >> A_SHIFT) & F11) as u32
    }

    pub(crate) const fn successes(self) -> u32 {
        ((self.lo() >> B_SHIFT) & F11) as u32
    }

    /// Consecutive failures (closed state only).
    pub(crate) const fn run(self) -> u32 {
        (((self.lo() >> A_SHIFT) & ((1 << 22) - 1)) as u32) & MAX_CONSECUTIVE_FAILURES
    }

    pub(crate) const fn k(self) -> u32 {
        ((self.lo() >> K_SHIFT) & F11) as u32
    }

    /// `open_until` (open) or `half_open_since` (half-open).
    pub(crate) const fn time(self) -> u64 {
        (self.0 >> 64) as u64
    }

    pub(crate) const fn with_run(self, run: u32) -> Self {
        let run = if run > MAX_CONSECUTIVE_FAILURES {
            MAX_CONSECUTIVE_FAILURES
        } else {
            run
        };
        Self::build(
            self.state(),
            self.epoch(),
            run & 0x7ff,
            run >> 11,
            self.k(),
            self.time(),
        )
    }

    pub(crate) const fn with_probe_counts(self, probes: u32, successes: u32) -> Self {
        Self::build(
            self.state(),
            self.epoch(),
            probes,
            successes,
            self.k(),
            self.time(),
        )
    }
}

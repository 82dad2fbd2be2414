//! The permit table sizes a breaker with a permit table comes in, and the one
//! enum over its cells of every size and window kind.
//!
//! A region maps `size_of::<T>()`, so each size is its own fixed-size type with
//! its own layout id; a caller picks one of [`PERMIT_SLOT_SIZES`] by value
//! ([`PermitSlots::new`]), anything else is a configuration error naming
//! `permit_slots` and listing the sizes (no rounding: the size is part of the
//! region's identity, and a rounded one would not be the one asked for).

use seawall_core::{BreakerConfig, ConfigError, Field, Problem, WindowConfig};

use super::Storage;
use super::cell::{BreakerCell, CountCell, TimeCell};
use crate::shared::{self, OpenOptions, RegionError, Shareable, SharedRegion};

/// Permit table sizes of a breaker, smallest first: permits that may be
/// outstanding at once over every thread and process sharing it.
pub const PERMIT_SLOT_SIZES: [u64; 4] = [256, 4096, 32768, 262_144];

/// One of [`PERMIT_SLOT_SIZES`]; [`PermitSlots::DEFAULT`] is 4096.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PermitSlots {
    /// 256 slots (about 3 KiB of slots: 12 bytes each).
    S256,
    /// 4096 slots, the default.
    S4096,
    /// 32768 slots.
    S32768,
    /// 262144 slots (a region of about 3 MiB).
    S262144,
}

impl Default for PermitSlots {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl PermitSlots {
    /// The size a breaker gets when the caller does not say.
    pub const DEFAULT: Self = Self::S4096;

    /// The size `n`, or a [`ConfigError`] on [`Field::PermitSlots`] listing the
    /// sizes there are.
    pub const fn new(n: u64) -> Result<Self, ConfigError> {
        Ok(match n {
            256 => Self::S256,
            4096 => Self::S4096,
            32768 => Self::S32768,
            262_144 => Self::S262144,
            _ => {
                return Err(ConfigError {
                    field: Field::PermitSlots,
                    problem: Problem::NotOneOf(&PERMIT_SLOT_SIZES),
                });
            }
        })
    }

    /// How many slots.
    #[must_use]
    pub const fn get(self) -> usize {
        match self {
            Self::S256 => 256,
            Self::S4096 => 4096,
            Self::S32768 => 32768,
            Self::S262144 => 262_144,
        }
    }
}

/// A breaker's cell with a permit table, of whichever size and window kind, in
/// this process or shared.
pub(super) enum Tracked {
    Count256(Storage<CountCell<256>>),
    Count4096(Storage<CountCell<4096>>),
    Count32768(Storage<CountCell<32768>>),
    Count262144(Storage<CountCell<262_144>>),
    Time256(Storage<TimeCell<256>>),
    Time4096(Storage<TimeCell<4096>>),
    Time32768(Storage<TimeCell<32768>>),
    Time262144(Storage<TimeCell<262_144>>),
}

/// `$e` with `$c` bound to the cell (`&BreakerCell<W, N>`), and `$s` to its
/// storage, whatever its size and window kind.
macro_rules! each_tracked {
    ($t:expr, $s:ident, $c:ident => $e:expr) => {
        match $t {
            Tracked::Count256($s) => {
                let $c = &**$s;
                $e
            }
            Tracked::Count4096($s) => {
                let $c = &**$s;
                $e
            }
            Tracked::Count32768($s) => {
                let $c = &**$s;
                $e
            }
            Tracked::Count262144($s) => {
                let $c = &**$s;
                $e
            }
            Tracked::Time256($s) => {
                let $c = &**$s;
                $e
            }
            Tracked::Time4096($s) => {
                let $c = &**$s;
                $e
            }
            Tracked::Time32768($s) => {
                let $c = &**$s;
                $e
            }
            Tracked::Time262144($s) => {
                let $c = &**$s;
                $e
            }
        }
    };
}
pub(super) use each_tracked;

/// Open (create or attach) the shared `T`; a region of the same window kind and
/// another permit table size is a [`RegionError::ConfigMismatch`] naming
/// [`Field::PermitSlots`] (with any other field that differs), not a layout
/// mismatch: to the caller it is one more option the sharers disagree on.
fn open<T: Shareable<Config = BreakerConfig>>(
    name: &str,
    config: &BreakerConfig,
    options: &OpenOptions,
    count: bool,
) -> Result<SharedRegion<T>, RegionError> {
    let e = match SharedRegion::<T>::open(name, config, options) {
        Err(e @ RegionError::LayoutMismatch { .. }) => e,
        other => return other,
    };
    let ids = if count { COUNT_IDS } else { TIME_IDS };
    let size = match &e {
        RegionError::LayoutMismatch { found, .. } => ids.iter().position(|id| id == found),
        _ => None,
    };
    // Another window kind (or no breaker): the layout mismatch it is.
    let Some(size) = size else { return Err(e) };
    let expected = T::agreement(config).fingerprint();
    match sibling_fingerprint(name, config, options, count, size) {
        // The region went between the two opens: open anew, as asked.
        Ok(None) => SharedRegion::<T>::open(name, config, options),
        Ok(Some(found)) => Err(RegionError::ConfigMismatch {
            found,
            expected,
            differing: vec![Field::PermitSlots],
        }),
        Err(RegionError::ConfigMismatch {
            found,
            mut differing,
            ..
        }) => {
            differing.push(Field::PermitSlots);
            Err(RegionError::ConfigMismatch {
                found,
                expected,
                differing,
            })
        }
        Err(other) => Err(other),
    }
}

/// The fingerprint of the region `name` opened as the cell of the window kind
/// (`count` or time) and the `size`-th of [`PERMIT_SLOT_SIZES`], which
/// attaching does not change; `None` when the region was gone by then (the
/// one this call made instead is removed again: nobody asked for that size).
fn sibling_fingerprint(
    name: &str,
    config: &BreakerConfig,
    options: &OpenOptions,
    count: bool,
    size: usize,
) -> Result<Option<u64>, RegionError> {
    fn fp<S: Shareable<Config = BreakerConfig>>(
        name: &str,
        config: &BreakerConfig,
        options: &OpenOptions,
    ) -> Result<Option<u64>, RegionError> {
        let r = SharedRegion::<S>::open(name, config, options)?;
        if r.created() {
            drop(r);
            shared::unlink::<S>(name)?;
            return Ok(None);
        }
        Ok(Some(r.fingerprint()))
    }
    match (count, size) {
        (true, 0) => fp::<CountCell<256>>(name, config, options),
        (true, 1) => fp::<CountCell<4096>>(name, config, options),
        (true, 2) => fp::<CountCell<32768>>(name, config, options),
        (true, _) => fp::<CountCell<262_144>>(name, config, options),
        (false, 0) => fp::<TimeCell<256>>(name, config, options),
        (false, 1) => fp::<TimeCell<4096>>(name, config, options),
        (false, 2) => fp::<TimeCell<32768>>(name, config, options),
        (false, _) => fp::<TimeCell<262_144>>(name, config, options),
    }
}

/// Layout ids of the count-window cells, in [`PERMIT_SLOT_SIZES`] order.
const COUNT_IDS: [u32; 4] = [
    <CountCell<256> as Shareable>::LAYOUT_ID,
    <CountCell<4096> as Shareable>::LAYOUT_ID,
    <CountCell<32768> as Shareable>::LAYOUT_ID,
    <CountCell<262_144> as Shareable>::LAYOUT_ID,
];
/// Layout ids of the time-window cells, in [`PERMIT_SLOT_SIZES`] order.
const TIME_IDS: [u32; 4] = [
    <TimeCell<256> as Shareable>::LAYOUT_ID,
    <TimeCell<4096> as Shareable>::LAYOUT_ID,
    <TimeCell<32768> as Shareable>::LAYOUT_ID,
    <TimeCell<262_144> as Shareable>::LAYOUT_ID,
];

impl Tracked {
    /// A cell of the default size in this process's memory.
    pub(super) fn local(config: &BreakerConfig) -> Result<Self, ConfigError> {
        Ok(match config.window {
            WindowConfig::Count { .. } => Self::Count4096(Storage::Local(shared::boxed(config)?)),
            WindowConfig::Time { .. } => Self::Time4096(Storage::Local(shared::boxed(config)?)),
        })
    }

    /// The shared cell `name` of `slots` slots; whether this call created it.
    pub(super) fn open_shared(
        name: &str,
        config: &BreakerConfig,
        slots: PermitSlots,
        options: &OpenOptions,
    ) -> Result<(Self, bool), RegionError> {
        macro_rules! go {
            ($variant:ident, $count:expr) => {{
                let r: SharedRegion<_> = open(name, config, options, $count)?;
                let created = SharedRegion::created(&r);
                (Self::$variant(Storage::Shared(r)), created)
            }};
        }
        let count = matches!(config.window, WindowConfig::Count { .. });
        Ok(match (count, slots) {
            (true, PermitSlots::S256) => go!(Count256, true),
            (true, PermitSlots::S4096) => go!(Count4096, true),
            (true, PermitSlots::S32768) => go!(Count32768, true),
            (true, PermitSlots::S262144) => go!(Count262144, true),
            (false, PermitSlots::S256) => go!(Time256, false),
            (false, PermitSlots::S4096) => go!(Time4096, false),
            (false, PermitSlots::S32768) => go!(Time32768, false),
            (false, PermitSlots::S262144) => go!(Time262144, false),
        })
    }

    /// Whether the cell lives in a shared region.
    pub(super) fn is_shared(&self) -> bool {
        each_tracked!(self, s, _c => matches!(s, Storage::Shared(_)))
    }

    /// Bytes of this process's memory the cell takes (0 when mapped).
    pub(super) fn local_size(&self) -> usize {
        each_tracked!(self, s, c => match s {
            Storage::Local(_) => size_of_val(c),
            Storage::Shared(_) => 0,
        })
    }

    /// Slots of the permit table.
    pub(super) fn permit_slots(&self) -> usize {
        each_tracked!(self, _s, c => slots_of(c))
    }
}

fn slots_of<W: seawall_core::SlidingWindow, const N: usize>(_: &BreakerCell<W, N>) -> usize {
    N
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sizes_are_the_allowed_values_and_nothing_else() {
        for (n, slots) in [
            (256, PermitSlots::S256),
            (4096, PermitSlots::S4096),
            (32768, PermitSlots::S32768),
            (262_144, PermitSlots::S262144),
        ] {
            assert_eq!(PermitSlots::new(n), Ok(slots));
            assert_eq!(slots.get() as u64, n);
        }
        for n in [0, 1, 255, 257, 1024, 4095, 4097, 262_145, u64::MAX] {
            let e = PermitSlots::new(n).unwrap_err();
            assert_eq!(e.field, Field::PermitSlots, "{n}");
            assert_eq!(
                e.to_string(),
                "invalid breaker.permit_slots: must be one of 256, 4096, 32768, 262144"
            );
        }
        assert_eq!(PermitSlots::default().get(), 4096);
    }

    #[test]
    fn each_size_and_kind_has_its_own_layout_id() {
        let mut ids: Vec<u32> = COUNT_IDS.iter().chain(&TIME_IDS).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 8);
        // The core's totals changed layout (probes counted apart): no id of an
        // earlier breaker layout (0x0101 ..= 0x010A) is reused.
        assert!(
            ids.iter().all(|id| !(0x0101..=0x010A).contains(id)),
            "{ids:x?}"
        );
    }
}

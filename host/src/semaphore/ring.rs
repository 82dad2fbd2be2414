//! An untracked local semaphore: the core [`Semaphore<Q>`] alone, with no holder
//! table, over the smallest ring of [`RING_SIZES`] that fits `max_queue` by the
//! one rule of [`ring_size`].
//!
//! A host runtime whose own objects make each permit and ticket single-use (a
//! Python permit object, a Node handle) needs no table to catch a second release,
//! so its local bulkheads skip the table's claim and release CASes.

use seawall_core::{ConfigError, Field, Priority, Problem, Semaphore, SemaphoreConfig};

/// Queue ring sizes of untracked local semaphores, smallest first.
pub const RING_SIZES: [usize; 4] = [64, 512, 4096, 32768];

/// Longest wait queue (`max_queue`) of an untracked local semaphore.
pub const LOCAL_MAX_QUEUE: u32 = 32768;

/// The ring a local semaphore of `max_queue` waiters gets: the smallest of
/// [`RING_SIZES`] that holds twice `max_queue`, else the largest (which holds up
/// to [`LOCAL_MAX_QUEUE`]). The core needs only `max_queue ≤ Q` (a waiter that
/// gives up frees its slot at once); the spare half keeps a freed slot easy to
/// find and costs memory, not time (a release scans only `max_queue` slots).
/// `None` past [`LOCAL_MAX_QUEUE`].
#[must_use]
pub const fn ring_size(max_queue: u32) -> Option<usize> {
    if max_queue > LOCAL_MAX_QUEUE {
        return None;
    }
    let want = max_queue as usize * 2;
    let mut i = 0;
    while i < RING_SIZES.len() - 1 {
        if want <= RING_SIZES[i] {
            return Some(RING_SIZES[i]);
        }
        i += 1;
    }
    Some(RING_SIZES[RING_SIZES.len() - 1])
}

/// A core semaphore over one of the [`RING_SIZES`].
pub(super) enum Ring {
    Q64(Box<Semaphore<64>>),
    Q512(Box<Semaphore<512>>),
    Q4096(Box<Semaphore<4096>>),
    Q32768(Box<Semaphore<32768>>),
}

/// `$e` with `$s` bound to the ring's core semaphore, whatever its size.
macro_rules! each {
    ($ring:expr, $s:ident => $e:expr) => {
        match $ring {
            Ring::Q64($s) => $e,
            Ring::Q512($s) => $e,
            Ring::Q4096($s) => $e,
            Ring::Q32768($s) => $e,
        }
    };
}
pub(super) use each;

impl Ring {
    /// The semaphore for `config` over the ring [`ring_size`] picks, or the first
    /// invalid field.
    pub(super) fn new(config: &SemaphoreConfig) -> Result<Self, ConfigError> {
        fn boxed<const Q: usize>(c: &SemaphoreConfig) -> Result<Box<Semaphore<Q>>, ConfigError> {
            Semaphore::<Q>::new(*c).map(Box::new)
        }
        config.validate()?;
        let Some(q) = ring_size(config.max_queue) else {
            return Err(ConfigError {
                field: Field::MaxQueue,
                problem: Problem::OutOfRange {
                    min: 0,
                    max: u64::from(LOCAL_MAX_QUEUE),
                },
            });
        };
        Ok(match q {
            64 => Self::Q64(boxed(config)?),
            512 => Self::Q512(boxed(config)?),
            4096 => Self::Q4096(boxed(config)?),
            _ => Self::Q32768(boxed(config)?),
        })
    }

    /// The ring's size `Q`.
    pub(super) fn capacity(&self) -> usize {
        match self {
            Self::Q64(_) => 64,
            Self::Q512(_) => 512,
            Self::Q4096(_) => 4096,
            Self::Q32768(_) => 32768,
        }
    }

    /// Bytes the semaphore takes.
    pub(super) fn size(&self) -> usize {
        each!(self, s => size_of_val(&**s))
    }

    pub(super) fn limit(&self, p: Priority) -> u32 {
        each!(self, s => s.limit(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_is_the_smallest_holding_twice_the_queue() {
        // Worked by hand from the rule: 2·max_queue ≤ Q, the largest past 16384.
        let cases = [
            (0, 64),
            (32, 64),
            (33, 512),
            (256, 512),
            (257, 4096),
            (2048, 4096),
            (2049, 32768),
            (16384, 32768),
            (32768, 32768),
        ];
        for (max_queue, ring) in cases {
            assert_eq!(ring_size(max_queue), Some(ring), "max_queue {max_queue}");
        }
        assert_eq!(ring_size(32769), None);
    }

    #[test]
    fn a_queue_past_the_largest_ring_names_max_queue() {
        let cfg = SemaphoreConfig {
            max_queue: 32769,
            ..SemaphoreConfig::DEFAULT
        };
        let e = Ring::new(&cfg).err().map(|e| e.field);
        assert_eq!(e, Some(Field::MaxQueue));
    }
}

//! Where a process may be killed inside one of the core's calls that takes more
//! than one atomic step (a semaphore's enqueue, the acknowledgement of a grant,
//! a cancel that meets a grant): nowhere outside the loom models. In a model, a
//! thread told to die after `n` kill points stops at its `n + 1`-th and at every
//! one after it, as a killed process would; the host's kill points count on the
//! same counter, so one model can stop a process anywhere from the host's slot
//! step to inside the core.

#[cfg(not(loom))]
#[inline]
pub(crate) const fn here() -> bool {
    false
}

#[cfg(loom)]
pub use model::{after, dead, here};

#[cfg(loom)]
mod model {
    use core::cell::Cell;

    loom::thread_local! {
        static LEFT: Cell<Option<u32>> = Cell::new(None);
    }

    /// Whether this thread's process dies here (and counts the point).
    #[must_use]
    pub fn here() -> bool {
        LEFT.with(|left| match left.get() {
            Some(0) => true,
            Some(n) => {
                left.set(Some(n - 1));
                false
            }
            None => false,
        })
    }

    /// This thread's process dies after `steps` more kill points (`None`: never).
    pub fn after(steps: Option<u32>) {
        LEFT.with(|left| left.set(steps));
    }

    /// Whether this thread's process was killed.
    #[must_use]
    pub fn dead() -> bool {
        LEFT.with(|left| left.get() == Some(0))
    }
}

/// Return `$ret` here if this thread's process dies here (loom models only);
/// what is returned is never used: the caller's next kill point stops it too.
macro_rules! kill_point {
    ($ret:expr) => {
        if crate::kill::here() {
            return $ret;
        }
    };
}
pub(crate) use kill_point;

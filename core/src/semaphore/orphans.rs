//! What a process killed inside one of the semaphore's multi-step calls leaves
//! behind, and the two moves a host that knows every caller is gone uses to
//! give it back. The core cannot tell a dead waiter from a slow one; the host
//! can (its holder table names each caller's process), and calls these only in
//! a moment when it has seen that no live process is queued or in a step:
//! * a slot in use (`WAITING`, or `GRANTED` and not acknowledged) whose ticket
//!   nobody holds: [`cancel`](Semaphore::cancel) with the ticket
//!   [`tickets_in_use`](Semaphore::tickets_in_use) names frees it (and passes
//!   on a permit granted to it);
//! * a place in `queued` with no slot at all (a death between taking the
//!   place and installing, or between a slot's move out of use and `queued −
//!   1`): [`forget_orphan_places`](Semaphore::forget_orphan_places).
//!
//! A permit a process died holding inside a cancel that met a grant is one the
//! host counts back with [`release`](Semaphore::release), as any other.

use super::Semaphore;
use super::Ticket;
use super::word::{GRANTED, WAITING, Word, slot_status};
use crate::sync::Ordering;

impl<const Q: usize> Semaphore<Q> {
    /// The tickets of the slots in use now (`WAITING` or `GRANTED`), one slot
    /// read at a time: a scan, not a snapshot.
    pub fn tickets_in_use(&self) -> impl Iterator<Item = Ticket> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            let v = s.load(Ordering::Acquire);
            matches!(slot_status(v), WAITING | GRANTED).then(|| Self::ticket(i, v))
        })
    }

    /// Count every waiter out of `queued` at once, if `state` still holds
    /// `stamp` (the word of [`stamped_snapshot`](Self::stamped_snapshot)):
    /// `true` when it did. For a host that saw, between two reads of that same
    /// word, no slot in use and no caller of any process in a step, so every
    /// place counted belongs to a dead process.
    #[must_use = "false: the state moved, and nothing was forgotten"]
    pub fn forget_orphan_places(&self, stamp: u64) -> bool {
        let next = Word {
            queued: 0,
            ..Word::unpack(stamp)
        };
        self.state
            .compare_exchange(stamp, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

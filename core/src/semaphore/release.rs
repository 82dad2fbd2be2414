//! Giving a permit back: to the oldest waiting arrival by one slot CAS, or to
//! the pool (the **Release** step of the protocol, see the module docs).

use super::Semaphore;
use super::word::{
    GRANTED, WAITING, Word, before, returned, returns_to_pool, slot_arrival, slot_status,
    with_status,
};
use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::sync::Ordering;

/// What a release's attempt to hand its permit to a waiter did.
enum Grant {
    Granted,
    /// The slot changed between the scan and the CAS: read `state` again.
    Raced,
    /// No slot is `WAITING`: the permit goes to the pool.
    NoneWaiting,
}

impl<const Q: usize> Semaphore<Q> {
    /// Give a permit back: to the oldest live waiter if there is one, else to the
    /// pool. `false` (and nothing changed) when no permit is held.
    ///
    /// Should the semaphore's memory be corrupted (see
    /// [`release_checked`](Self::release_checked)), the permit counts as given
    /// back (`true`).
    // Inline: the checked form is the same code; no call or nested result is
    // left on the hot path of in-process callers.
    #[inline]
    #[allow(clippy::must_use_candidate, reason = "the outcome is informative only")]
    pub fn release(&self) -> bool {
        self.release_checked().unwrap_or(true)
    }

    /// [`release`](Self::release) for a semaphore in memory others may write (a
    /// shared region): [`Corrupt`] when its words kept a retry loop going past
    /// [`MAX_RETRIES`] passes, which no number of honest callers does. Whether
    /// the permit went anywhere is unspecified then.
    #[inline]
    pub fn release_checked(&self) -> Result<bool, Corrupt> {
        // The common case inline: a permit held and nobody queued, one CAS from
        // the value read (`seq + 1` as below); anything else (and a lost CAS)
        // takes the loop out of line.
        let raw = self.state.load(Ordering::Acquire);
        if returns_to_pool(raw)
            && self
                .state
                .compare_exchange(raw, returned(raw), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return Ok(true);
        }
        self.release_contended()
    }

    /// The release loop: a grant to the oldest waiter, or a pool return
    /// validated against the waiters.
    #[cold]
    #[inline(never)]
    fn release_contended(&self) -> Result<bool, Corrupt> {
        // Invariant: a grant is the slot's CAS from `WAITING`, so it reaches one
        // waiter that has not left, once; the waiter stays in `queued` and its
        // slot stays in use until the waiter acknowledges (`acknowledge`). The
        // pool gets the permit only by a CAS from a `state` that counts nobody
        // queued (the inline path) or from the `state` read before a scan that
        // found no `WAITING` slot, so no waiter settled between the scan and the
        // return (see `settle`). A round fails only when another call changed
        // the slot or `state` since it was read.
        for _ in 0..MAX_RETRIES {
            let raw = self.state.load(Ordering::Acquire);
            let w = Word::unpack(raw);
            if w.active == 0 {
                return Ok(false);
            }
            if w.queued > 0 {
                match self.grant_oldest() {
                    Grant::Granted => return Ok(true),
                    Grant::Raced => continue,
                    Grant::NoneWaiting => {}
                }
            }
            #[cfg(seawall_mutant = "sem_pool_unvalidated")]
            let raw = {
                // Mutant: return the permit from a fresh read, blind to waiters
                // that settled after the scan.
                let _ = raw;
                self.state.load(Ordering::Acquire)
            };
            // `seq + 1` as well: with it no sequence of steps brings `state`
            // back to a value it held (an admission and a return would), so two
            // equal reads of `state` mean nothing moved in between
            // (`stamped_snapshot`).
            if self
                .state
                .compare_exchange(raw, returned(raw), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Ok(true);
            }
        }
        Err(Corrupt)
    }

    /// The permit to the oldest `WAITING` slot, by one CAS of its word.
    fn grant_oldest(&self) -> Grant {
        let Some((i, v)) = self.oldest_waiting() else {
            return Grant::NoneWaiting;
        };
        if self.slots[i]
            .compare_exchange(
                v,
                with_status(v, GRANTED),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            return Grant::Raced;
        }
        #[cfg(seawall_mutant = "sem_grant_frees_slot")]
        // Mutant: the releaser counts the waiter out at the grant, so
        // its slot may be reused before the waiter has polled.
        let _ = self.leave_queue();
        Grant::Granted
    }

    /// The `WAITING` slot with the oldest arrival, and its word.
    fn oldest_waiting(&self) -> Option<(usize, u64)> {
        let n = (self.config.max_queue as usize).min(Q);
        let mut best: Option<(usize, u64)> = None;
        for i in 0..n {
            let v = self.slots[i].load(Ordering::Acquire);
            if slot_status(v) != WAITING {
                continue;
            }
            if best.is_none_or(|(_, b)| before(slot_arrival(v), slot_arrival(b))) {
                best = Some((i, v));
            }
        }
        best
    }

    /// A waiter left the queue (acknowledged its grant, or cancelled): `queued − 1`.
    pub(super) fn leave_queue(&self) -> Result<(), Corrupt> {
        // Invariant: `queued` counts waiters that have not left; each leaves once,
        // after its slot's CAS out of `WAITING` (cancel) or out of `GRANTED`
        // (acknowledge), and this applies to the value read. The CAS fails only
        // when another call changed `state`.
        let mut raw = self.state.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            let w = Word::unpack(raw);
            let next = Word {
                queued: w.queued.wrapping_sub(1),
                ..w
            };
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(()),
                Err(seen) => raw = seen,
            }
        }
        Err(Corrupt)
    }
}

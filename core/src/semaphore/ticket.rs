//! The waiter's side of a ticket: where it stands, acknowledging a grant,
//! cancelling (the **Acknowledge** and **Cancel** steps of the protocol, see
//! the module docs).

use super::word::{CANCELLED, FREE, GRANTED, WAITING, slot_generation, slot_status, with_status};
use super::{CancelOutcome, Semaphore, Ticket, TicketState};
use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::kill::kill_point;
use crate::sync::{AtomicU64, Ordering};

impl<const Q: usize> Semaphore<Q> {
    pub(super) fn ticket(i: usize, v: u64) -> Ticket {
        let generation = slot_generation(v) & Self::gen_mask();
        Ticket {
            id: (i as u32) | generation.checked_shl(Self::INDEX_BITS).unwrap_or(0),
        }
    }

    const fn gen_mask() -> u32 {
        if Self::TICKET_GEN_BITS >= 32 {
            u32::MAX
        } else {
            (1 << Self::TICKET_GEN_BITS) - 1
        }
    }

    /// Ticket `t`'s slot, generation, and how the slot's word stands to it.
    fn locate(&self, t: Ticket) -> Option<(&AtomicU64, u32)> {
        if Q == 0 {
            return None;
        }
        let i = t.id as usize & (Q - 1);
        let generation = t.id.checked_shr(Self::INDEX_BITS).unwrap_or(0) & Self::gen_mask();
        Some((&self.slots[i], generation))
    }

    /// Slot generation `g` is ticket generation `t` (the same wait).
    fn same_wait(g: u32, t: u32) -> bool {
        g & Self::gen_mask() == t
    }

    /// The waiter of a granted slot (word `v`) learns of its grant: `GRANTED →
    /// FREE`, then `queued − 1`. `false` if the slot is no longer `v` (the
    /// grant was acknowledged by a racing call for the same ticket).
    pub(super) fn acknowledge(&self, slot: &AtomicU64, v: u64) -> Result<bool, Corrupt> {
        // Invariant: a slot leaves `GRANTED` only by this CAS, so exactly one
        // call acknowledges a grant and counts its waiter out of `queued`; until
        // then the slot is in use and no other waiter installs in it.
        if slot
            .compare_exchange(v, with_status(v, FREE), Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Ok(false);
        }
        // The slot is free, the waiter still counted in `queued`.
        kill_point!(Ok(true));
        #[cfg(not(seawall_mutant = "sem_grant_frees_slot"))]
        self.leave_queue()?;
        Ok(true)
    }

    /// Ticket `t`'s slot and the slot word just read, if that word is still of
    /// `t`'s wait. The slot is not reused while its ticket is live, so any other
    /// generation means `t` is finished, or was never issued here.
    fn live_slot(&self, t: Ticket) -> Option<(&AtomicU64, u64)> {
        let (slot, g) = self.locate(t)?;
        let v = slot.load(Ordering::Acquire);
        Self::same_wait(slot_generation(v), g).then_some((slot, v))
    }

    /// Where ticket `t` stands, without acknowledging a grant: for a waker that
    /// looks at other waiters' tickets. Only the ticket's waiter takes the grant,
    /// with [`poll`](Self::poll); a granted ticket reads `Granted` here until then.
    #[must_use]
    pub fn peek(&self, t: Ticket) -> TicketState {
        let Some((_, v)) = self.live_slot(t) else {
            return TicketState::Unknown;
        };
        match slot_status(v) {
            WAITING => TicketState::Waiting,
            GRANTED => TicketState::Granted,
            CANCELLED => TicketState::Cancelled,
            _ => TicketState::Unknown,
        }
    }

    /// Where ticket `t` stands. `Granted` is returned once: this poll
    /// acknowledged the grant, so the caller holds the permit now (release it
    /// with [`release`](Self::release)) and the ticket is finished.
    ///
    /// Should the semaphore's memory be corrupted (see
    /// [`poll_checked`](Self::poll_checked)), the ticket reads `Unknown`.
    #[must_use = "a Granted poll hands over a permit that must be released"]
    #[inline]
    pub fn poll(&self, t: Ticket) -> TicketState {
        self.poll_checked(t).unwrap_or(TicketState::Unknown)
    }

    /// [`poll`](Self::poll) for a semaphore in memory others may write (a shared
    /// region): [`Corrupt`] when `state` kept the acknowledgement's CAS loop
    /// going past [`MAX_RETRIES`] passes. The slot has left `GRANTED` by then;
    /// whether the caller holds a permit is unspecified.
    #[must_use = "a Granted poll hands over a permit that must be released"]
    #[inline]
    pub fn poll_checked(&self, t: Ticket) -> Result<TicketState, Corrupt> {
        let Some((slot, v)) = self.live_slot(t) else {
            return Ok(TicketState::Unknown);
        };
        Ok(match slot_status(v) {
            WAITING => TicketState::Waiting,
            GRANTED if self.acknowledge(slot, v)? => TicketState::Granted,
            CANCELLED => TicketState::Cancelled,
            _ => TicketState::Unknown,
        })
    }

    /// The waiter of ticket `t` gives up (timeout or cancellation) and leaves the
    /// queue at once, freeing its slot. If a permit reached it and was not polled
    /// yet, the permit goes on to the next waiter or back to the pool.
    ///
    /// Should the semaphore's memory be corrupted (see
    /// [`cancel_checked`](Self::cancel_checked)), the waiter counts as gone
    /// (`Cancelled`).
    #[inline]
    #[allow(clippy::must_use_candidate, reason = "the outcome is informative only")]
    pub fn cancel(&self, t: Ticket) -> CancelOutcome {
        self.cancel_checked(t).unwrap_or(CancelOutcome::Cancelled)
    }

    /// [`cancel`](Self::cancel) for a semaphore in memory others may write (a
    /// shared region): [`Corrupt`] when the slot or `state` kept a retry loop
    /// going past [`MAX_RETRIES`] passes. The waiter holds nothing then; whether
    /// it left `queued` is unspecified.
    pub fn cancel_checked(&self, t: Ticket) -> Result<CancelOutcome, Corrupt> {
        let Some((slot, g)) = self.locate(t) else {
            return Ok(CancelOutcome::Unknown);
        };
        let mut v = slot.load(Ordering::Acquire);
        // Invariant: only this waiter moves its slot out of WAITING other than a
        // release's grant; the CAS decides which of the two came first. A granted
        // slot keeps its generation until acknowledged, so a failed CAS re-reads
        // the same wait; it fails only when a grant (or a racing call for the
        // same ticket) changed the slot, which happens once per wait.
        for _ in 0..MAX_RETRIES {
            if !Self::same_wait(slot_generation(v), g) {
                return Ok(CancelOutcome::Unknown);
            }
            match slot_status(v) {
                WAITING => {
                    #[cfg(seawall_mutant = "sem_cancel_blind")]
                    {
                        // Mutant: cancel by a blind store, over a grant made meanwhile.
                        slot.store(with_status(v, CANCELLED), Ordering::Release);
                        self.leave_queue()?;
                        return Ok(CancelOutcome::Cancelled);
                    }
                    #[cfg(not(seawall_mutant = "sem_cancel_blind"))]
                    match slot.compare_exchange(
                        v,
                        with_status(v, CANCELLED),
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            kill_point!(Ok(CancelOutcome::Cancelled));
                            self.leave_queue()?;
                            return Ok(CancelOutcome::Cancelled);
                        }
                        Err(seen) => v = seen,
                    }
                }
                // Granted and not polled: take the permit, and pass it on.
                GRANTED if self.acknowledge(slot, v)? => {
                    // The grant is taken, the permit not passed on yet.
                    kill_point!(Ok(CancelOutcome::PassedOn));
                    self.release_checked()?;
                    return Ok(CancelOutcome::PassedOn);
                }
                _ => return Ok(CancelOutcome::Unknown),
            }
        }
        Err(Corrupt)
    }
}

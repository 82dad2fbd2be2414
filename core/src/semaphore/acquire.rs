//! Admission and waiting: a permit now, or an arrival installed and settled in
//! the queue (the **Admit** and **Wait** steps of the protocol, see the module
//! docs).

use super::word::{
    CANCELLED, GRANTED, WAITING, Word, admit_unqueued, slot_generation, slot_status, slot_word,
    with_status,
};
use super::{
    Admission, Priority, RawAdmission, RejectReason, Rejected, Semaphore, SemaphorePermit, Waiter,
};
use crate::corrupt::{Corrupt, MAX_RETRIES};
use crate::kill::kill_point;
use crate::sync::Ordering;

/// Slot reads after which a search for a free slot gives up, unless 64 passes
/// take more (see `install_passes`).
const INSTALL_READS: usize = 1 << 16;

impl<const Q: usize> Semaphore<Q> {
    /// Take a permit now if one is free for `p` and nobody waits; never waits.
    #[inline]
    pub fn try_acquire(&self, p: Priority) -> Result<SemaphorePermit<'_, Q>, Rejected> {
        match self.admit_now(p) {
            Ok(()) => Ok(SemaphorePermit::new(self)),
            Err(raw) => self.try_acquire_contended(p, raw),
        }
    }

    #[cold]
    #[inline(never)]
    fn try_acquire_contended(
        &self,
        p: Priority,
        raw: u64,
    ) -> Result<SemaphorePermit<'_, Q>, Rejected> {
        match self.acquire_contended(p, false, raw) {
            Ok(Ok(RawAdmission::Admitted)) => Ok(SemaphorePermit::new(self)),
            Ok(Err(rejected)) => Err(rejected),
            // `wait = false` never queues.
            Ok(Ok(RawAdmission::Queued(t))) => {
                let _ = self.cancel(t);
                Err(self.load().rejected(RejectReason::Full))
            }
            Err(Corrupt) => Err(self.load().rejected(RejectReason::Full)),
        }
    }

    /// Take a permit now, or a place in the queue if there is room.
    pub fn acquire_or_wait(&self, p: Priority) -> Result<Admission<'_, Q>, Rejected> {
        Ok(match self.acquire_raw(p, true)? {
            RawAdmission::Admitted => Admission::Admitted(SemaphorePermit::new(self)),
            RawAdmission::Queued(t) => Admission::Queued(Waiter::new(self, t)),
        })
    }

    /// The plain form of [`try_acquire`](Self::try_acquire) /
    /// [`acquire_or_wait`](Self::acquire_or_wait) for callers that hold no
    /// borrow (FFI, bindings): each `Admitted` and each granted ticket must be
    /// given back with exactly one [`release`](Self::release), and each `Queued`
    /// ticket polled until granted or cancelled.
    ///
    /// Should the semaphore's memory be corrupted (see
    /// [`acquire_raw_checked`](Self::acquire_raw_checked)), the call is refused
    /// as `Full` with the occupancy last read.
    // Inline: the checked form is the same code; no call or nested result is
    // left on the hot path of in-process callers.
    #[inline]
    pub fn acquire_raw(&self, p: Priority, wait: bool) -> Result<RawAdmission, Rejected> {
        self.acquire_raw_checked(p, wait)
            .unwrap_or_else(|Corrupt| Err(self.load().rejected(RejectReason::Full)))
    }

    /// [`acquire_raw`](Self::acquire_raw) for a semaphore in memory others may
    /// write (a shared region): [`Corrupt`] when its words hold what this code
    /// never writes or kept a retry loop going past its bound (see
    /// [`MAX_RETRIES`]); no honest use of the semaphore reaches it. What the call
    /// did before is unspecified then (it may have counted itself in `queued`).
    #[inline]
    pub fn acquire_raw_checked(
        &self,
        p: Priority,
        wait: bool,
    ) -> Result<Result<RawAdmission, Rejected>, Corrupt> {
        match self.admit_now(p) {
            Ok(()) => Ok(Ok(RawAdmission::Admitted)),
            Err(raw) => self.acquire_contended(p, wait, raw),
        }
    }

    /// The common case, inline: nobody queued and a permit free for `p`, one
    /// CAS; else the `state` value read or found, for the general loop (out of
    /// line, so the common path keeps its registers and builds no nested
    /// result).
    #[inline]
    fn admit_now(&self, p: Priority) -> Result<(), u64> {
        let raw = self.state.load(Ordering::Acquire);
        match admit_unqueued(raw, self.limit(p)) {
            Some(next) => self.step(raw, next),
            None => Err(raw),
        }
    }

    /// The admission loop from a `state` value just read.
    #[cold]
    #[inline(never)]
    fn acquire_contended(
        &self,
        p: Priority,
        wait: bool,
        mut raw: u64,
    ) -> Result<Result<RawAdmission, Rejected>, Corrupt> {
        let limit = self.limit(p);
        let max = self.config.max_concurrent;
        // Invariant: active ≤ max_concurrent and queued ≤ max_queue hold for every
        // value of `state`; each step moves from exactly the value the checks
        // read, so no admission or enqueue is ever based on a stale count, and an
        // admission never overtakes a waiter still unserved (see
        // `only_granted_waiters`). A step fails only when another call changed
        // `state`, so only a corrupted or hostile writer reaches the bound.
        for _ in 0..MAX_RETRIES {
            let (next, admitted) = match admit_unqueued(raw, limit) {
                Some(next) => (next, true),
                None => match self.admit_or_enqueue(Word::unpack(raw), limit, max, wait) {
                    Ok(next) => next,
                    Err(rejected) => return Ok(Err(rejected)),
                },
            };
            match self.step(raw, next) {
                Ok(()) if admitted => return Ok(Ok(RawAdmission::Admitted)),
                Ok(()) => {
                    // Counted in `queued`, no slot yet: a place no ticket names.
                    kill_point!(Err(Corrupt));
                    return self.enqueue(Word::unpack(raw).seq).map(Ok);
                }
                Err(seen) => raw = seen,
            }
        }
        Err(Corrupt)
    }

    /// `state` from `raw` (the value the caller's checks read) to `next`, or the
    /// value found instead: the one CAS of every admission and enqueue.
    #[inline]
    fn step(&self, raw: u64, next: u64) -> Result<(), u64> {
        #[cfg(seawall_mutant = "sem_admit_blind")]
        {
            // Mutant: check, then store what was computed, over whatever is there.
            let _ = raw;
            self.state.store(next, Ordering::Release);
            Ok(())
        }
        #[cfg(not(seawall_mutant = "sem_admit_blind"))]
        self.state
            .compare_exchange(raw, next, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
    }

    /// The general step from `w`: the packed next word and whether it admits
    /// (else it enqueues), or the refusal.
    fn admit_or_enqueue(
        &self,
        w: Word,
        limit: u32,
        max: u32,
        wait: bool,
    ) -> Result<(u64, bool), Rejected> {
        if w.active < limit && self.only_granted_waiters(w.queued) {
            Ok((
                Word {
                    active: w.active + 1,
                    ..w
                }
                .pack(),
                true,
            ))
        } else if w.active >= limit && limit < max {
            Err(w.rejected(RejectReason::Shed))
        } else if wait && self.queue_has_room(w) {
            Ok((
                Word {
                    queued: w.queued + 1,
                    seq: w.next_seq(),
                    ..w
                }
                .pack(),
                false,
            ))
        } else {
            Err(w.rejected(RejectReason::Full))
        }
    }

    /// Every one of the `queued` waiters of the `state` just read holds a grant
    /// it has not acknowledged yet (so an admission overtakes nobody).
    ///
    /// The scan is not atomic, but each `GRANTED` slot it sees is a distinct
    /// waiter that was counted in `queued` when seen (a slot leaves `GRANTED`
    /// before its waiter leaves `queued`); a waiter that arrives or leaves after
    /// the `state` read changes `state` (`seq` or `queued`), so the
    /// admission CAS from that read fails. A grant made during the scan only
    /// makes it undercount, i.e. refuse.
    fn only_granted_waiters(&self, queued: u32) -> bool {
        if queued == 0 {
            return true;
        }
        let n = (self.config.max_queue as usize).min(Q);
        let granted = self.slots[..n]
            .iter()
            .filter(|s| slot_status(s.load(Ordering::Acquire)) == GRANTED)
            .count();
        granted >= queued as usize
    }

    fn queue_has_room(&self, w: Word) -> bool {
        #[cfg(seawall_mutant = "sem_queue_unbounded")]
        {
            // Mutant: the bound counts only installed waiters, so waiters admitted
            // to the queue but not yet installed slip past it.
            let installed = self
                .slots
                .iter()
                .filter(|s| slot_status(s.load(Ordering::Acquire)) == WAITING)
                .count() as u32;
            let _ = w;
            installed < self.config.max_queue
        }
        #[cfg(not(seawall_mutant = "sem_queue_unbounded"))]
        {
            w.queued < self.config.max_queue
        }
    }

    /// Wait as arrival `a` (already counted in `queued`): install, then settle —
    /// or take a permit a release left in the pool because it could not see us.
    fn enqueue(&self, a: u32) -> Result<RawAdmission, Corrupt> {
        // Each round after the first follows a permit that was free at `settle`
        // and taken by another caller before `take_free_permit`: only a
        // corrupted or hostile writer makes that happen MAX_RETRIES times.
        for _ in 0..MAX_RETRIES {
            let (i, v) = self.install(a)?;
            // Installed, not settled: a slot no ticket of the caller's names yet.
            kill_point!(Err(Corrupt));
            if self.settle()? {
                return Ok(RawAdmission::Queued(Self::ticket(i, v)));
            }
            // A permit is free. Withdraw from the slot first, so no release can
            // grant it while we take the free permit; if a release granted it
            // already, that permit is ours: acknowledge it (nobody else knows
            // this ticket, so the acknowledgement is ours to make).
            if let Err(seen) = self.slots[i].compare_exchange(
                v,
                with_status(v, CANCELLED),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                // Only a grant moves an installed slot: anything else was
                // written by someone outside the protocol.
                if slot_status(seen) != GRANTED || !self.acknowledge(&self.slots[i], seen)? {
                    return Err(Corrupt);
                }
                return Ok(RawAdmission::Admitted);
            }
            if self.take_free_permit()? {
                return Ok(RawAdmission::Admitted);
            }
            // Another waiter took it first: install again, same arrival.
        }
        Err(Corrupt)
    }

    /// Passes [`install`](Self::install) makes over the first `n` slots before
    /// it gives up with [`Corrupt`]: at least 64, and as many as keep the slots
    /// read within 2¹⁶ ([`INSTALL_READS`]).
    ///
    /// Some slot is free at every instant (slots in use ≤ `queued` − 1 <
    /// `max_queue`), so a pass that finds none saw in use a slot that was free
    /// when the pass began: another waiter installed in it during the pass. Each
    /// failed pass thus takes one more install by a waiter admitted after a
    /// waiter left, in the time of one scan; `max(64, 2¹⁶/n)` of them in a row
    /// is far beyond what up to `n` honest waiters do. Corrupted slots (all
    /// `WAITING`, which no honest state holds) stop after at most
    /// `max(64·n, 2¹⁶)` reads: well under 1 ms for rings up to 1024, a few ms for
    /// the largest (2¹⁶) — and well within a second under valgrind.
    pub(super) const fn install_passes(n: usize) -> usize {
        // loom explores each pass as branches: its models (a few callers, rings
        // of 1 to 4 slots) need a pass or two, and a search that never ends must
        // show as `Corrupt` before loom's branch limit.
        if cfg!(loom) {
            return 64;
        }
        let by_reads = INSTALL_READS / n;
        if by_reads > 64 { by_reads } else { 64 }
    }

    /// Put `WAITING(a)` in a slot that is not in use; that slot and word.
    fn install(&self, a: u32) -> Result<(usize, u64), Corrupt> {
        // `max_queue ≥ 1` here: a waiter was admitted to the queue, unless the
        // configuration was overwritten since.
        let n = (self.config.max_queue as usize).min(Q);
        if n == 0 {
            return Err(Corrupt);
        }
        let start = a as usize % n;
        // Invariant: slots in use (`WAITING` or `GRANTED`) ≤ `queued` − 1 (this
        // waiter is counted but not installed; a granted waiter stays counted
        // until it acknowledges), and `queued ≤ max_queue`, so one of the first
        // `max_queue` slots is free; a slot goes from free to `WAITING` only by
        // this CAS, from the exact free word read, so two waiters never share one
        // and a granted slot is never taken before its ticket is acknowledged. A
        // pass that finds none raced other waiters that made progress meanwhile
        // (bounded by `install_passes`).
        for _ in 0..Self::install_passes(n) {
            for k in 0..n {
                let i = (start + k) % n;
                let v = self.slots[i].load(Ordering::Acquire);
                #[cfg(seawall_mutant = "sem_slot_kept")]
                if slot_status(v) == CANCELLED {
                    // Mutant: a cancelled waiter's slot stays taken.
                    continue;
                }
                if slot_status(v) == WAITING {
                    continue;
                }
                #[cfg(not(seawall_mutant = "sem_grant_frees_slot"))]
                if slot_status(v) == GRANTED {
                    continue;
                }
                let w = slot_word(a, slot_generation(v).wrapping_add(1), WAITING);
                if self.slots[i]
                    .compare_exchange(v, w, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Ok((i, w));
                }
            }
            crate::sync::spin_loop();
        }
        Err(Corrupt)
    }

    /// Settle into the queue: `seq + 1` while every permit is held (`true`);
    /// `false` (and nothing changed) when a permit is free in the pool.
    fn settle(&self) -> Result<bool, Corrupt> {
        let max = self.config.max_concurrent;
        // Invariant: this CAS changes `state` after this waiter's slot became
        // `WAITING`. A release that read `state` before it sees the slot in its
        // scan; one that read it after and found no waiter fails its CAS and scans
        // again; one that returned a permit before it is seen here as
        // `active < max_concurrent`. So no permit is free while a settled waiter
        // waits. The CAS fails only when another call changed `state`.
        let mut raw = self.state.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            let w = Word::unpack(raw);
            #[cfg(not(seawall_mutant = "sem_settle_blind"))]
            if w.active < max {
                return Ok(false);
            }
            #[cfg(seawall_mutant = "sem_settle_unstamped")]
            // Mutant: settling leaves `state` as it was, so a release that
            // read it before the slot was installed still returns its permit
            // to the pool.
            let next = w;
            #[cfg(not(seawall_mutant = "sem_settle_unstamped"))]
            let next = Word {
                seq: w.next_seq(),
                ..w
            };
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(true),
                Err(seen) => raw = seen,
            }
        }
        Err(Corrupt)
    }

    /// A withdrawn waiter takes the free permit: `active + 1, queued − 1`;
    /// `false` when none is free any more.
    fn take_free_permit(&self) -> Result<bool, Corrupt> {
        let max = self.config.max_concurrent;
        // Invariant: active ≤ max_concurrent; the waiter leaves `queued` exactly
        // when it takes the permit, in one CAS. The CAS fails only when another
        // call changed `state`.
        let mut raw = self.state.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            let w = Word::unpack(raw);
            if w.active >= max {
                return Ok(false);
            }
            let next = Word {
                active: w.active + 1,
                queued: w.queued.wrapping_sub(1),
                ..w
            };
            match self
                .state
                .compare_exchange(raw, next.pack(), Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(true),
                Err(seen) => raw = seen,
            }
        }
        Err(Corrupt)
    }
}

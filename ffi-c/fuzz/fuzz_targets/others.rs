//! The semaphore, retry budget, retry throttle, backoff, retry decision and
//! health through the C ABI, each against a small model written from DESIGN.md:
//!
//! * semaphore: every status is one the call may return; `active ≤
//!   max_concurrent`, `queued ≤ max_queue`; a permit releases once, a ticket is
//!   polled into a permit or cancelled once, forged ids change nothing; the
//!   permits and tickets outstanding are exactly the ones the model holds; a
//!   release hands its permit to the oldest waiter not yet granted one, else to
//!   the pool (so the model knows which tickets a poll turns into permits, and
//!   which cancels pass a permit on); a granted ticket counts as active and as
//!   queued until its poll; no acquire is admitted past a waiter; at the end
//!   everything given back leaves `active = queued = 0`.
//! * budget: a withdrawal is allowed exactly when the balance read at the same
//!   time covers one retry, and takes exactly one retry from it.
//! * throttle: tokens and every decision equal a clamped milli-token model.
//! * backoff: the carried state counts attempts; delays stay under the cap
//!   (unless a retry-after raises them) and within each jitter's range.
//! * retry decision: `max_attempts` and the deadline decide as DESIGN §4 says.
//! * health: calls and errors equal a model of the window (records land in the
//!   largest epoch seen), percentiles are ordered and within the recorded range.

use std::ptr;

use arbitrary::Arbitrary;
use seawall::capi::backoff::*;
use seawall::capi::common::SEAWALL_NONE;
use seawall::capi::health::*;
use seawall::capi::retry_budget::*;
use seawall::capi::retry_throttle::*;
use seawall::capi::seawall_status as S;
use seawall::capi::semaphore::*;

fn check(ok: bool, what: &str) {
    assert!(ok, "{what}");
}

/// Raw configuration values, folded into mostly-valid ranges unless `raw` says.
#[derive(Arbitrary, Debug)]
pub struct Configs {
    raw: u8,
    max_concurrent: u32,
    max_queue: u32,
    shares: [u64; 4],
    ttl: u64,
    min_retries: u32,
    percent: u64,
    max_tokens: u32,
    ratio: u32,
    buckets: u32,
    width: u64,
    rates: [u64; 2],
    p99s: [u64; 2],
}

#[derive(Arbitrary, Debug)]
pub enum Op {
    SemTry(u8),
    SemEnqueue(u8),
    SemPoll(u16),
    SemCancel(u16),
    SemRelease(u16),
    SemReuse(u16),
    SemForge(u64),
    SemNoWait(u8),
    SemObserve,
    Deposit,
    Withdraw,
    Success,
    Failure,
    Backoff {
        base: u32,
        multiplier: u32,
        max: u32,
        jitter: u8,
        factor: u32,
        seed: u64,
        steps: u8,
        retry_after: Option<u32>,
    },
    Decide {
        max_attempts: u8,
        attempt: u8,
        deadline: Option<u32>,
        retry_after: Option<u32>,
        random: u64,
    },
    Record {
        latency: u64,
        outcome: u8,
    },
    HealthObserve,
}

struct Sem {
    h: *mut seawall_semaphore,
    max_concurrent: u32,
    max_queue: u32,
    held: Vec<seawall_semaphore_permit>,
    /// In arrival order (FIFO), granted or not.
    waiting: Vec<Waiter>,
    used_permits: Vec<seawall_semaphore_permit>,
    used_tickets: Vec<seawall_semaphore_ticket>,
}

/// A ticket the model holds.
#[derive(Clone, Copy)]
struct Waiter {
    ticket: seawall_semaphore_ticket,
    /// A release handed it a permit, which its next poll obtains.
    granted: bool,
}

struct Health {
    h: *mut seawall_health,
    width: u64,
    buckets: u64,
    head: u64,
    records: Vec<(u64, bool, u64)>,
}

/// Every structure of one input, made on first use.
pub struct World<'a> {
    c: &'a Configs,
    sem: Option<Option<Sem>>,
    budget: Option<*mut seawall_retry_budget>,
    throttle: Option<Option<(*mut seawall_retry_throttle, u64, u64, u64)>>,
    health: Option<Option<Health>>,
}

impl<'a> World<'a> {
    pub fn new(c: &'a Configs) -> Self {
        Self {
            c,
            sem: None,
            budget: None,
            throttle: None,
            health: None,
        }
    }

    fn raw(&self, bit: u8) -> bool {
        self.c.raw & (1 << bit) != 0
    }

    fn sem(&mut self) -> Option<&mut Sem> {
        if self.sem.is_none() {
            let c = self.c;
            let cfg = seawall_semaphore_config {
                max_concurrent: if self.raw(0) {
                    c.max_concurrent
                } else {
                    1 + c.max_concurrent % 6
                },
                max_queue: if self.raw(1) {
                    c.max_queue
                } else {
                    c.max_queue % 5
                },
                critical_share_ppm: share(c.shares[0]),
                high_share_ppm: share(c.shares[1]),
                normal_share_ppm: share(c.shares[2]),
                low_share_ppm: if self.raw(2) {
                    c.shares[3]
                } else {
                    share(c.shares[3])
                },
            };
            let mut h = ptr::null_mut();
            // SAFETY: valid config and out pointers.
            let s = unsafe { seawall_semaphore_new(&raw const cfg, &raw mut h) };
            let valid = cfg.max_concurrent >= 1
                && cfg.max_concurrent <= SEAWALL_SEMAPHORE_MAX_CONCURRENT
                && cfg.max_queue <= SEAWALL_SEMAPHORE_MAX_QUEUE
                && cfg.low_share_ppm <= 1_000_000;
            check(
                s == if valid { S::Ok } else { S::InvalidConfig },
                "semaphore config",
            );
            self.sem = Some((s == S::Ok).then(|| Sem {
                h,
                max_concurrent: cfg.max_concurrent,
                max_queue: cfg.max_queue,
                held: Vec::new(),
                waiting: Vec::new(),
                used_permits: Vec::new(),
                used_tickets: Vec::new(),
            }));
        }
        self.sem.as_mut().and_then(Option::as_mut)
    }

    fn budget(&mut self) -> *mut seawall_retry_budget {
        if self.budget.is_none() {
            let c = self.c;
            let cfg = seawall_retry_budget_config {
                ttl_ns: 1_000_000 + c.ttl % 10_000_000_000,
                min_retries_per_sec: c.min_retries % 20,
                reserved: 0,
                percent_can_retry_ppm: c.percent % 2_000_001,
            };
            let mut h = ptr::null_mut();
            // SAFETY: valid config and out pointers.
            let s = unsafe { seawall_retry_budget_new(&raw const cfg, &raw mut h) };
            check(s == S::Ok, "budget config in range");
            self.budget = Some(h);
        }
        self.budget.unwrap_or(ptr::null_mut())
    }

    fn throttle(&mut self) -> Option<&mut (*mut seawall_retry_throttle, u64, u64, u64)> {
        if self.throttle.is_none() {
            let c = self.c;
            let cfg = seawall_retry_throttle_config {
                max_milli_tokens: if self.raw(3) {
                    c.max_tokens
                } else {
                    1 + c.max_tokens % 20_000
                },
                token_ratio_milli: if self.raw(4) {
                    c.ratio
                } else {
                    1 + c.ratio % 2000
                },
            };
            let mut h = ptr::null_mut();
            // SAFETY: valid config and out pointers.
            let s = unsafe { seawall_retry_throttle_new(&raw const cfg, &raw mut h) };
            let valid =
                (1..=1_000_000).contains(&cfg.max_milli_tokens) && cfg.token_ratio_milli >= 1;
            check(
                s == if valid { S::Ok } else { S::InvalidConfig },
                "throttle config",
            );
            let max = u64::from(cfg.max_milli_tokens);
            self.throttle =
                Some((s == S::Ok).then_some((h, max, u64::from(cfg.token_ratio_milli), max)));
        }
        self.throttle.as_mut().and_then(Option::as_mut)
    }

    fn health(&mut self) -> Option<&mut Health> {
        if self.health.is_none() {
            let c = self.c;
            let degraded = c.rates[0] % 1_000_001;
            let cfg = seawall_health_config {
                buckets: if self.raw(5) {
                    c.buckets
                } else {
                    1 + c.buckets % 60
                },
                reserved: 0,
                bucket_width_ns: 1_000_000 + c.width % 1_000_000_000,
                degraded_error_rate_ppm: degraded,
                unhealthy_error_rate_ppm: degraded + c.rates[1] % (1_000_001 - degraded),
                degraded_p99_ns: c.p99s[0],
                unhealthy_p99_ns: c.p99s[0].saturating_add(c.p99s[1]),
            };
            let mut h = ptr::null_mut();
            // SAFETY: valid config and out pointers.
            let s = unsafe { seawall_health_new(&raw const cfg, &raw mut h) };
            let valid = (1..=60).contains(&cfg.buckets);
            check(
                s == if valid { S::Ok } else { S::InvalidConfig },
                "health config",
            );
            self.health = Some((s == S::Ok).then(|| Health {
                h,
                width: cfg.bucket_width_ns,
                buckets: u64::from(cfg.buckets),
                head: 0,
                records: Vec::new(),
            }));
        }
        self.health.as_mut().and_then(Option::as_mut)
    }

    pub fn step(&mut self, op: &Op, now: u64) {
        match *op {
            Op::SemTry(p) => self.sem_acquire(p, false, now),
            Op::SemEnqueue(p) => self.sem_acquire(p, true, now),
            Op::SemNoWait(p) => self.sem_no_wait(p),
            Op::SemPoll(which) => self.sem_poll(which),
            Op::SemCancel(which) => self.sem_cancel(which),
            Op::SemRelease(which) => self.sem_release(which),
            Op::SemReuse(which) => self.sem_reuse(which),
            Op::SemForge(id) => self.sem_forge(id),
            Op::SemObserve => {
                if let Some(s) = self.sem() {
                    observe(s);
                }
            }
            Op::Deposit => {
                let b = self.budget();
                // SAFETY: live handle.
                check(
                    unsafe { seawall_retry_budget_deposit(b, now) } == S::Ok,
                    "deposit",
                );
            }
            Op::Withdraw => withdraw(self.budget(), now),
            Op::Success => {
                if let Some(t) = self.throttle() {
                    // SAFETY: live handle.
                    check(
                        unsafe { seawall_retry_throttle_record_success(t.0) } == S::Ok,
                        "success",
                    );
                    t.3 = (t.3 + t.2).min(t.1);
                    throttle_tokens(t);
                }
            }
            Op::Failure => {
                if let Some(t) = self.throttle() {
                    let mut retry = false;
                    // SAFETY: live handle, valid out pointer.
                    let s = unsafe { seawall_retry_throttle_record_failure(t.0, &raw mut retry) };
                    check(s == S::Ok, "failure");
                    t.3 = t.3.saturating_sub(1000);
                    check(retry == (2 * t.3 > t.1), "throttle decision = model");
                    throttle_tokens(t);
                }
            }
            Op::Backoff {
                base,
                multiplier,
                max,
                jitter,
                factor,
                seed,
                steps,
                retry_after,
            } => backoff(
                base,
                multiplier,
                max,
                jitter,
                factor,
                seed,
                steps,
                retry_after,
            ),
            Op::Decide {
                max_attempts,
                attempt,
                deadline,
                retry_after,
                random,
            } => decide(max_attempts, attempt, deadline, retry_after, random),
            Op::Record { latency, outcome } => {
                if let Some(h) = self.health() {
                    let outcome = u32::from(outcome % 4);
                    // SAFETY: live handle.
                    let s = unsafe { seawall_health_record(h.h, outcome, latency, now) };
                    if outcome <= 2 {
                        check(s == S::Ok, "health record");
                        h.head = h.head.max(now / h.width);
                        if outcome < 2 {
                            h.records.push((h.head, outcome == 1, latency));
                        }
                    } else {
                        check(s == S::InvalidArgument, "unknown outcome refused");
                    }
                }
            }
            Op::HealthObserve => {
                if let Some(h) = self.health() {
                    health_observe(h, now);
                }
            }
        }
    }

    fn sem_acquire(&mut self, p: u8, wait: bool, _now: u64) {
        let Some(s) = self.sem() else { return };
        if s.held.len() + s.waiting.len() >= 64 {
            return;
        }
        let prio = u32::from(p % 5);
        let mut permit = seawall_semaphore_permit { id: 0 };
        let mut ticket = seawall_semaphore_ticket { id: 0 };
        let mut r = seawall_semaphore_rejection {
            reason: 9,
            active: 99,
            queued: 99,
            reserved: 0,
        };
        // SAFETY: live handle, valid out pointers.
        let st = unsafe {
            if wait {
                seawall_semaphore_acquire_or_enqueue(
                    s.h,
                    prio,
                    &raw mut permit,
                    &raw mut ticket,
                    &raw mut r,
                )
            } else {
                seawall_semaphore_try_acquire(s.h, prio, &raw mut permit, &raw mut r)
            }
        };
        match st {
            _ if prio > 3 => check(st == S::InvalidArgument, "bad priority refused"),
            S::Ok => {
                check(
                    s.waiting.iter().all(|w| w.granted),
                    "no acquire admitted past a waiter",
                );
                s.held.push(permit);
            }
            S::Queued if wait => s.waiting.push(Waiter {
                ticket,
                granted: false,
            }),
            S::Rejected => {
                check(r.reason <= SEAWALL_REJECT_FULL, "reason");
                check(
                    r.active <= s.max_concurrent && r.queued <= s.max_queue,
                    "rejection occupancy within bounds",
                );
            }
            other => panic!("acquire returned {other:?}"),
        }
        observe(s);
    }

    fn sem_no_wait(&mut self, p: u8) {
        let Some(s) = self.sem() else { return };
        let mut permit = seawall_semaphore_permit { id: 0 };
        // SAFETY: live handle, valid out pointer. A zero timeout never blocks.
        let st = unsafe {
            seawall_semaphore_acquire_timeout(
                s.h,
                u32::from(p % 4),
                0,
                &raw mut permit,
                ptr::null_mut(),
            )
        };
        match st {
            S::Ok => s.held.push(permit),
            S::Rejected => {}
            other => panic!("acquire_timeout(0) returned {other:?}"),
        }
        observe(s);
    }

    fn sem_poll(&mut self, which: u16) {
        let Some(s) = self.sem() else { return };
        if s.waiting.is_empty() {
            return;
        }
        let i = usize::from(which) % s.waiting.len();
        let Waiter { ticket: t, granted } = s.waiting[i];
        let mut permit = seawall_semaphore_permit { id: 0 };
        // SAFETY: live handle, valid out pointer.
        match unsafe { seawall_semaphore_poll(s.h, t, &raw mut permit) } {
            S::Ok => {
                check(granted, "a poll obtains a permit only once one was granted");
                check(permit.id == t.id, "a ticket becomes the permit of its id");
                s.waiting.remove(i);
                s.used_tickets.push(t);
                s.held.push(permit);
            }
            S::Waiting => check(!granted, "a granted ticket's poll obtains its permit"),
            other => panic!("poll of a waiting ticket returned {other:?}"),
        }
        observe(s);
    }

    fn sem_cancel(&mut self, which: u16) {
        let Some(s) = self.sem() else { return };
        if s.waiting.is_empty() {
            return;
        }
        s.cancel_at(usize::from(which) % s.waiting.len());
        observe(s);
    }

    fn sem_release(&mut self, which: u16) {
        let Some(s) = self.sem() else { return };
        if s.held.is_empty() {
            return;
        }
        let p = s.held.swap_remove(usize::from(which) % s.held.len());
        // SAFETY: live handle.
        check(
            unsafe { seawall_semaphore_release(s.h, p) } == S::Ok,
            "a held permit releases once",
        );
        s.used_permits.push(p);
        s.hand_on();
        observe(s);
    }

    fn sem_reuse(&mut self, which: u16) {
        let Some(s) = self.sem() else { return };
        let w = usize::from(which);
        if !s.used_permits.is_empty() {
            let p = s.used_permits[w % s.used_permits.len()];
            // SAFETY: live handle.
            let st = unsafe { seawall_semaphore_release(s.h, p) };
            // Its id may be a ticket's now (a reused slot, another generation).
            check(
                matches!(st, S::PermitAlreadyUsed),
                "a used permit is refused",
            );
        }
        if !s.used_tickets.is_empty() {
            let t = s.used_tickets[w % s.used_tickets.len()];
            let mut permit = seawall_semaphore_permit { id: 0 };
            // SAFETY: live handle, valid out pointer.
            let (a, b) = unsafe {
                (
                    seawall_semaphore_cancel(s.h, t),
                    seawall_semaphore_poll(s.h, t, &raw mut permit),
                )
            };
            check(
                a == S::UnknownTicket && b == S::UnknownTicket,
                "a used ticket is refused",
            );
        }
        observe(s);
    }

    fn sem_forge(&mut self, id: u64) {
        let Some(s) = self.sem() else { return };
        let is_ours =
            |v: u64| s.held.iter().any(|p| p.id == v) || s.waiting.iter().any(|w| w.ticket.id == v);
        if is_ours(id) {
            return;
        }
        let mut permit = seawall_semaphore_permit { id: 0 };
        // SAFETY: live handle, valid out pointer.
        let (r, c, p) = unsafe {
            (
                seawall_semaphore_release(s.h, seawall_semaphore_permit { id }),
                seawall_semaphore_cancel(s.h, seawall_semaphore_ticket { id }),
                seawall_semaphore_poll(s.h, seawall_semaphore_ticket { id }, &raw mut permit),
            )
        };
        check(
            matches!(r, S::PermitAlreadyUsed | S::InvalidArgument),
            "forged release refused",
        );
        check(
            matches!(c, S::UnknownTicket | S::InvalidArgument),
            "forged cancel refused",
        );
        check(
            matches!(p, S::UnknownTicket | S::InvalidArgument),
            "forged poll refused",
        );
        observe(s);
    }

    /// Give everything back and free every handle; nothing may be left.
    pub fn finish(&mut self) {
        if let Some(Some(s)) = self.sem.as_mut() {
            while !s.waiting.is_empty() {
                s.cancel_at(0);
            }
            for p in s.held.drain(..) {
                // SAFETY: live handle.
                check(
                    unsafe { seawall_semaphore_release(s.h, p) } == S::Ok,
                    "final release",
                );
            }
            let mut snap = std::mem::MaybeUninit::uninit();
            // SAFETY: live handle, valid out pointer; written on OK.
            let snap = unsafe {
                check(
                    seawall_semaphore_get_snapshot(s.h, snap.as_mut_ptr()) == S::Ok,
                    "snapshot",
                );
                snap.assume_init()
            };
            check(
                (
                    snap.active,
                    snap.queued,
                    snap.permits_outstanding,
                    snap.tickets_outstanding,
                ) == (0, 0, 0, 0),
                "no permit or ticket leaked",
            );
            // SAFETY: live handle, freed once.
            unsafe { seawall_semaphore_free(s.h) };
        }
        if let Some(b) = self.budget.take() {
            // SAFETY: live handle, freed once.
            unsafe { seawall_retry_budget_free(b) };
        }
        if let Some(Some(t)) = self.throttle.take() {
            // SAFETY: live handle, freed once.
            unsafe { seawall_retry_throttle_free(t.0) };
        }
        if let Some(Some(h)) = self.health.take() {
            // SAFETY: live handle, freed once.
            unsafe { seawall_health_free(h.h) };
        }
    }
}

/// Half the priorities get the whole semaphore (so they queue rather than shed).
fn share(v: u64) -> u64 {
    if v % 2 == 0 { 1_000_000 } else { v % 1_000_001 }
}

fn observe(s: &Sem) {
    let mut snap = std::mem::MaybeUninit::uninit();
    // SAFETY: live handle, valid out pointer; written on OK.
    let snap = unsafe {
        check(
            seawall_semaphore_get_snapshot(s.h, snap.as_mut_ptr()) == S::Ok,
            "snapshot",
        );
        snap.assume_init()
    };
    check(snap.active <= s.max_concurrent, "active ≤ max_concurrent");
    check(snap.queued <= s.max_queue, "queued ≤ max_queue");
    check(
        snap.permits_outstanding == s.held.len() as u64,
        "permits outstanding = held",
    );
    check(
        snap.tickets_outstanding == s.waiting.len() as u64,
        "tickets outstanding = waiting",
    );
    // A waiting ticket is queued until its poll, granted or not; a granted one
    // is also active (its permit is held for it).
    check(
        u64::from(snap.queued) == s.waiting.len() as u64,
        "queued = tickets held",
    );
    let granted = s.waiting.iter().filter(|w| w.granted).count();
    check(
        u64::from(snap.active) == (s.held.len() + granted) as u64,
        "active = permits held + tickets granted",
    );
}

impl Sem {
    /// DESIGN §5: a permit given back goes to the oldest live waiter, whatever
    /// its priority, else to the pool.
    fn hand_on(&mut self) {
        if let Some(w) = self.waiting.iter_mut().find(|w| !w.granted) {
            w.granted = true;
        }
    }

    /// The waiter of the `i`-th ticket gives up: `Cancelled`, or `PassedOn` when
    /// a permit was granted to it, which goes on like a release.
    fn cancel_at(&mut self, i: usize) {
        let Waiter { ticket: t, granted } = self.waiting.remove(i);
        // SAFETY: live handle.
        let st = unsafe { seawall_semaphore_cancel(self.h, t) };
        check(
            st == if granted { S::PassedOn } else { S::Cancelled },
            "a cancel passes a permit on exactly when one was granted",
        );
        self.used_tickets.push(t);
        if granted {
            self.hand_on();
        }
    }
}

fn withdraw(b: *mut seawall_retry_budget, now: u64) {
    let balance = |now| {
        let mut snap = std::mem::MaybeUninit::uninit();
        // SAFETY: live handle, valid out pointer; written on OK.
        unsafe {
            check(
                seawall_retry_budget_balance(b, now, snap.as_mut_ptr()) == S::Ok,
                "balance",
            );
            snap.assume_init()
        }
    };
    let before = balance(now);
    check(
        before.available == before.balance_ppm / 1_000_000,
        "available = whole retries",
    );
    let mut allowed = false;
    // SAFETY: live handle, valid out pointer.
    let s = unsafe { seawall_retry_budget_try_withdraw(b, now, &raw mut allowed) };
    check(s == S::Ok, "withdraw");
    check(
        allowed == (before.balance_ppm >= 1_000_000),
        "allowed iff the balance covers one retry",
    );
    let after = balance(now);
    if allowed {
        check(
            after.balance_ppm == before.balance_ppm - 1_000_000
                && after.retries == before.retries + 1,
            "one retry withdrawn",
        );
    } else {
        check(
            after.balance_ppm == before.balance_ppm,
            "a refusal withdraws nothing",
        );
    }
}

fn throttle_tokens(t: &(*mut seawall_retry_throttle, u64, u64, u64)) {
    let (mut tokens, mut would) = (0, false);
    // SAFETY: live handle, valid out pointers.
    let s = unsafe { seawall_retry_throttle_tokens(t.0, &raw mut tokens, &raw mut would) };
    check(s == S::Ok, "tokens");
    check(tokens == t.3, "tokens = model");
    check(would == (2 * t.3 > t.1), "would_allow = model");
}

#[allow(clippy::too_many_arguments)]
fn backoff(
    base: u32,
    multiplier: u32,
    max: u32,
    jitter: u8,
    factor: u32,
    seed: u64,
    steps: u8,
    retry_after: Option<u32>,
) {
    let cfg = seawall_backoff_config {
        base_ns: u64::from(base),
        multiplier_ppm: 900_000 + u64::from(multiplier % 3_000_000),
        max_ns: u64::from(base) + u64::from(max),
        jitter: u32::from(jitter % 6),
        reserved: 0,
        jitter_factor_ppm: u64::from(factor % 1_200_000),
    };
    let mut st = seawall_backoff_state_new(seed);
    // SAFETY: valid config pointer.
    let valid = unsafe { seawall_backoff_check_config(&raw const cfg) };
    check(matches!(valid, S::Ok | S::InvalidConfig), "check config");
    let retry_after = retry_after.map_or(SEAWALL_NONE, u64::from);
    for n in 1..=u32::from(steps % 16) {
        let previous = st.previous_ns;
        let mut d = 0;
        // SAFETY: valid pointers.
        let s = unsafe {
            seawall_backoff_next_delay(&raw const cfg, &raw mut st, retry_after, &raw mut d)
        };
        check(s == valid, "next_delay agrees with check_config");
        if s != S::Ok {
            check(st.attempt == 0, "a refused call leaves the state");
            return;
        }
        check(st.attempt == n, "attempts counted");
        let drawn = st.previous_ns;
        check(drawn <= cfg.max_ns, "never above the cap");
        check(
            d == if retry_after != SEAWALL_NONE && retry_after > drawn {
                retry_after
            } else {
                drawn
            },
            "retry-after raises the delay",
        );
        if cfg.jitter == SEAWALL_JITTER_DECORRELATED {
            let hi = previous.saturating_mul(3).max(cfg.base_ns).min(cfg.max_ns);
            check(
                if n == 1 {
                    drawn == cfg.base_ns
                } else {
                    drawn >= cfg.base_ns.min(cfg.max_ns) && drawn <= hi
                },
                "decorrelated range",
            );
        }
    }
}

fn decide(
    max_attempts: u8,
    attempt: u8,
    deadline: Option<u32>,
    retry_after: Option<u32>,
    random: u64,
) {
    let mut cfg = seawall_retry_config_default();
    cfg.max_attempts = u32::from(max_attempts % 6);
    cfg.backoff.jitter = SEAWALL_JITTER_NONE;
    let f = seawall_failed_attempt {
        attempt: u32::from(attempt % 8),
        reserved: 0,
        previous_delay_ns: 0,
        random,
        deadline_remaining_ns: deadline.map_or(SEAWALL_NONE, u64::from),
        retry_after_ns: retry_after.map_or(SEAWALL_NONE, u64::from),
    };
    let mut d = seawall_retry_decision {
        delay_ns: 7,
        give_up: 99,
        retry: false,
    };
    // SAFETY: valid pointers; no budget or throttle.
    let s = unsafe {
        seawall_retry_decide(
            &raw const cfg,
            &raw const f,
            ptr::null(),
            ptr::null(),
            0,
            &raw mut d,
        )
    };
    if cfg.max_attempts == 0 {
        check(s == S::InvalidConfig, "zero attempts refused");
        return;
    }
    check(s == S::Ok, "decide");
    // exp(n) = min(10 s, 100 ms · 2^(n−1)), no jitter; attempt 0 counts as 1.
    let n = f.attempt.max(1);
    let exp = (100_000_000u64 << (n - 1).min(20)).min(10_000_000_000);
    let delay = if f.retry_after_ns != SEAWALL_NONE {
        exp.max(f.retry_after_ns)
    } else {
        exp
    };
    if f.attempt >= cfg.max_attempts {
        check(
            !d.retry && d.give_up == SEAWALL_GIVE_UP_MAX_ATTEMPTS,
            "max attempts",
        );
    } else if f.deadline_remaining_ns != SEAWALL_NONE && delay >= f.deadline_remaining_ns {
        check(
            !d.retry && d.give_up == SEAWALL_GIVE_UP_DEADLINE,
            "deadline",
        );
    } else {
        check(
            d.retry && d.give_up == SEAWALL_GIVE_UP_NONE && d.delay_ns == delay,
            "retry delay",
        );
    }
}

fn health_observe(h: &Health, now: u64) {
    let mut snap = std::mem::MaybeUninit::uninit();
    // SAFETY: live handle, valid out pointer; written on OK.
    let s = unsafe {
        check(
            seawall_health_get_snapshot(h.h, now, snap.as_mut_ptr()) == S::Ok,
            "health snapshot",
        );
        snap.assume_init()
    };
    let head = h.head.max(now / h.width);
    let live: Vec<&(u64, bool, u64)> = h
        .records
        .iter()
        .filter(|(e, _, _)| *e <= head && head - e < h.buckets)
        .collect();
    check(s.calls == live.len() as u64, "calls = model");
    check(
        s.errors == live.iter().filter(|r| r.1).count() as u64,
        "errors = model",
    );
    if live.is_empty() {
        check(
            s.p50_ns == SEAWALL_NONE && s.error_rate_ppm == SEAWALL_NONE,
            "empty window",
        );
        check(s.status == SEAWALL_HEALTH_HEALTHY, "empty is healthy");
        return;
    }
    check(
        s.p50_ns <= s.p90_ns && s.p90_ns <= s.p99_ns,
        "percentiles ordered",
    );
    let top = (1u64 << 35) - 1;
    let lo = live.iter().map(|r| r.2.min(top)).min().unwrap_or(0);
    let hi = live.iter().map(|r| r.2.min(top)).max().unwrap_or(0);
    // Within the bucket error of 1/32 of the smallest and largest latency.
    check(
        s.p50_ns + lo / 32 + 1 >= lo,
        "p50 not below the smallest latency",
    );
    check(
        s.p99_ns <= hi + hi / 32 + 1,
        "p99 not above the largest latency",
    );
    check(
        s.error_rate_ppm == s.errors * 1_000_000 / s.calls,
        "error rate = errors / calls",
    );
}

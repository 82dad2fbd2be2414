//! The bulkhead behind `seawall.Bulkhead` (DESIGN §5): seawall-host's
//! [`Semaphore`](seawall_host::semaphore::Semaphore), local or shared, with the
//! wake-ups a Python runtime needs on top.
//!
//! The semaphore hands a released permit straight to the oldest waiter's ticket;
//! it cannot wake anyone. So each bulkhead keeps a small registry of sleeping
//! waiters ([`waiters`]): a thread parks with the GIL released, an asyncio task
//! awaits a future. Whoever releases or cancels (the two operations that can
//! grant a ticket) then wakes every registered waiter whose ticket is granted: a
//! thread is unparked, a future is resolved through `loop.call_soon_threadsafe`.
//! A waiter registers, then looks at its ticket once more before sleeping, so a
//! grant made between its enqueue and its registration is never missed. The
//! registry's mutex is held only to add, remove or collect entries, never around
//! user code.
//!
//! Looks only peek; the ticket's owner then takes the grant (a poll), so a
//! waker's look takes nothing, and a waiter that times out or is cancelled before
//! it takes calls `cancel`, which passes a permit that reached it on to the next
//! waiter (who is then woken here) or back to the pool: no permit is lost.
//!
//! A shared bulkhead (`shared="name"`) gives single-use ids from the holder
//! table of its region, which records the owning process, so
//! `reclaim_abandoned` can give back what a killed worker held. A release in
//! another process cannot unpark anyone here, so its blocked threads sleep on
//! the semaphore's release counter instead (a futex on Linux, woken by a
//! release in any process; at most `SHARED_WAIT_POLL` at a time), and its
//! asyncio waiters look at their own ticket every `SHARED_WAIT_POLL`.

mod native;
mod permit;
mod semcore;
mod ticket;
mod waiters;

use pyo3::prelude::*;
use seawall_core::Priority;

use crate::errors;

pub use native::Bulkhead;
pub use permit::BulkheadPermit;
pub use semcore::SemCore;
pub use ticket::BulkheadTicket;

/// The most waiters `max_queue` may allow for a local bulkhead (a shared one:
/// `seawall_host::semaphore::SEMAPHORE_MAX_QUEUE`).
pub const QUEUE_CAPACITY: u32 = seawall_host::semaphore::LOCAL_MAX_QUEUE;

fn priority(py: Python<'_>, p: &str) -> PyResult<Priority> {
    Priority::ALL
        .into_iter()
        .find(|x| x.name() == p)
        .ok_or_else(|| {
            errors::config_error(
                py,
                "priority",
                &format!(
                    "invalid priority: must be 'critical', 'high', 'normal' or 'low', got {p:?}"
                ),
            )
        })
}

/// `parse_priority(name)`: check a priority name (for the Python layer).
pub fn parse_priority(py: Python<'_>, p: &str) -> PyResult<Priority> {
    priority(py, p)
}

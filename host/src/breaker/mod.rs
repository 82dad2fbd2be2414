//! The circuit breaker as C and the bindings see it: the window kind is chosen at
//! run time, permits are plain values, and the breaker can live in this process
//! or in a region shared by every process of the host. One type, [`Breaker`],
//! for all of them.
//!
//! Behind a [`Breaker`] is a core breaker of fixed capacity, a count window of
//! up to [`COUNT_WINDOW_CAPACITY`] calls or a time window of up to
//! [`TIME_WINDOW_CAPACITY`] buckets, and, unless it was made with
//! [`Breaker::new_without_permit_table`], a [`PermitTable`](crate::permits::PermitTable) next to it that makes
//! every permit usable once ([`crate::permits`]): always for a shared breaker,
//! whose permits cross threads and processes.
//!
//! Bindings notice transitions by comparing [`Breaker::observe`] (state and
//! epoch, read together) with what they saw last; [`Observed::word`] is the one
//! number both bindings keep and pass around for it.

mod cell;
#[cfg(not(loom))]
mod handle;
#[cfg(not(loom))]
mod local;
#[cfg(not(loom))]
mod observed;
#[cfg(not(loom))]
mod slots;
mod steps;

#[cfg(not(loom))]
pub use self::cell::breaker_agreement;
pub use self::cell::{
    BreakerCell, COUNT_WINDOW_CAPACITY, CountCell, TIME_WINDOW_CAPACITY, TimeCell,
};
#[cfg(not(loom))]
use self::handle::Storage;
#[cfg(not(loom))]
pub use self::handle::{Breaker, Metrics};
#[cfg(not(loom))]
pub use self::observed::{Observed, STATE_FACTOR};
#[cfg(not(loom))]
pub use self::slots::{PERMIT_SLOT_SIZES, PermitSlots};
pub use self::steps::{AcquireError, Permit};

//! [`Handle<T>`]: one core structure, in this process's memory or in a region
//! shared by every process of the host, used the same way (`Deref<Target = T>`).
//!
//! The retry budget, retry throttle and health window of the bindings are
//! `Handle`s of the core types ([`crate::retry`], [`crate::health`]); their
//! methods are the core's (`budget.try_withdraw(now)`), whichever the storage.

use core::fmt;
use core::ops::Deref;
use core::ptr::NonNull;

use seawall_core::{ConfigError, Corrupt};

use crate::shared::{self, OpenOptions, RegionError, Shareable, SharedRegion};

enum Storage<T: Shareable> {
    Local(Box<T>),
    Shared(SharedRegion<T>),
}

/// A `T` in this process (`new`) or shared (`open_shared`, `init_in`, `attach`).
pub struct Handle<T: Shareable> {
    storage: Storage<T>,
    created: bool,
}

impl<T: Shareable> Deref for Handle<T> {
    type Target = T;
    fn deref(&self) -> &T {
        match &self.storage {
            Storage::Local(b) => b,
            Storage::Shared(r) => r,
        }
    }
}

impl<T: Shareable> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("structure", &T::DESCRIPTION)
            .field("shared", &self.is_shared())
            .field("created", &self.created)
            .finish_non_exhaustive()
    }
}

impl<T: Shareable> Handle<T> {
    /// A `T` in this process's memory (on the heap, built in place).
    pub fn new(config: &T::Config) -> Result<Self, ConfigError> {
        Ok(Self {
            storage: Storage::Local(shared::boxed(config)?),
            created: true,
        })
    }

    /// Create or attach the `T` named `name`, shared by every process of the host
    /// (`/dev/shm/seawall-<family>-<name>`, see [`SharedRegion::open`]). Attaching
    /// changes nothing; a region built with another configuration is an error.
    pub fn open_shared(
        name: &str,
        config: &T::Config,
        options: &OpenOptions,
    ) -> Result<Self, RegionError> {
        let r = SharedRegion::<T>::open(name, config, options)?;
        let created = r.created();
        Ok(Self {
            storage: Storage::Shared(r),
            created,
        })
    }

    /// Remove the shared `T` named `name` (a missing one is fine). Attached
    /// processes keep theirs; the next [`open_shared`](Self::open_shared) creates
    /// anew.
    pub fn unlink_shared(name: &str) -> Result<(), RegionError> {
        shared::unlink::<T>(name)
    }

    /// Bytes of caller memory [`init_in`](Self::init_in) needs.
    #[must_use]
    pub const fn region_size() -> usize {
        SharedRegion::<T>::SIZE
    }

    /// Alignment of caller memory for [`init_in`](Self::init_in).
    #[must_use]
    pub const fn region_align() -> usize {
        SharedRegion::<T>::ALIGN
    }

    /// Build a `T` in caller memory (see [`SharedRegion::init_in`]).
    ///
    /// # Safety
    /// As [`SharedRegion::init_in`].
    pub unsafe fn init_in(
        mem: NonNull<u8>,
        len: usize,
        config: &T::Config,
    ) -> Result<Self, RegionError> {
        // SAFETY: forwarded from the caller.
        let r = unsafe { SharedRegion::init_in(mem, len, config) }?;
        Ok(Self {
            storage: Storage::Shared(r),
            created: true,
        })
    }

    /// Attach to a `T` that [`init_in`](Self::init_in) built in caller memory.
    /// Changes nothing.
    ///
    /// # Safety
    /// As [`SharedRegion::attach`].
    pub unsafe fn attach(mem: NonNull<u8>, len: usize) -> Result<Self, RegionError> {
        // SAFETY: forwarded from the caller.
        let r = unsafe { SharedRegion::attach(mem, len) }?;
        Ok(Self {
            storage: Storage::Shared(r),
            created: false,
        })
    }

    /// Whether this handle created (and initialised) its structure.
    #[must_use]
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whether the structure lives in a shared region (named or caller memory).
    #[must_use]
    pub fn is_shared(&self) -> bool {
        matches!(self.storage, Storage::Shared(_))
    }

    /// The configuration, for checking values read from the structure
    /// ([`crate::shared::sanity`]): in this process's memory, as built; in a
    /// shared region, [`Corrupt`] unless it is still the one this process
    /// agreed on when it opened or attached
    /// ([`SharedRegion::config_checked`]). Not for the hot path.
    pub fn config_checked(&self) -> Result<T::Config, Corrupt> {
        match &self.storage {
            Storage::Local(b) => Ok(b.config()),
            Storage::Shared(r) => r.config_checked(),
        }
    }
}

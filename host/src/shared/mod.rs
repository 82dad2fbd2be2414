//! One core structure shared by every process of a host (DESIGN §8).
//!
//! A [`SharedRegion<T>`] is a [`Header`](header) followed by a `T`, either in a
//! named file under `/dev/shm` ([`SharedRegion::open`]) or in memory the caller
//! brings ([`SharedRegion::init_in`], [`SharedRegion::attach`]). Any
//! [`Shareable`] core structure can live in one; the breaker of this crate is
//! one, and the semaphore, retry budget and throttle plug in the same way:
//!
//! ```text
//! // SAFETY: RetryBudget<10> is repr(C), pointer-free, and only atomics change after new().
//! unsafe impl Shareable for RetryBudget<10> {
//!     const FAMILY: &'static str = "retry-budget";
//!     const LAYOUT_ID: u32 = 0x0301;
//!     const DESCRIPTION: &'static str = "retry budget (10 buckets)";
//!     type Config = RetryBudgetConfig;
//!     fn agreement(c: &RetryBudgetConfig) -> Agreement {
//!         let RetryBudgetConfig { ttl_ns, min_retries_per_sec, percent_can_retry } = *c;
//!         Agreement::new(b"rbudget\0")
//!             .value(Field::RetryBudgetTtl, ttl_ns)
//!             .value(Field::MinRetriesPerSec, u64::from(min_retries_per_sec))
//!             .value(Field::PercentCanRetry, percent_can_retry.ppm())
//!     }
//!     fn config(&self) -> RetryBudgetConfig {
//!         *RetryBudget::config(self)
//!     }
//!     fn init(slot: &mut MaybeUninit<Self>, c: &RetryBudgetConfig) -> Result<(), ConfigError> {
//!         slot.write(RetryBudget::new(*c)?);
//!         Ok(())
//!     }
//! }
//! let budget = SharedRegion::<RetryBudget<10>>::open("payments", &cfg, &OpenOptions::default())?;
//! ```
//!
//! # Creating and attaching (the init race)
//! `open` makes a file of its own, mode 0600, takes its *init lock* (an
//! exclusive `flock`), reserves its space (`posix_fallocate`: a full file system
//! is an error that leaves no file behind, never a SIGBUS later) and only then
//! gives it the region's name, with a link that fails if anything is there
//! ([`trust::create_locked`]): exactly one process wins and becomes the creator.
//! It builds `T` in place, writes the header fields, stores `state = READY`
//! (release) and lets go of the lock. Every other process opens the existing
//! file with `O_NOFOLLOW`, refuses it unless it is a regular file of this
//! effective uid with mode bits for the owner only ([`trust`],
//! [`RegionError::Untrusted`]), and looks at it:
//! - published (`state == READY`, acquire): it checks magic, layout version,
//!   layout, checksum, configuration fingerprint and size, and attaches without
//!   writing anything: attaching never changes the structure's state;
//! - not published, with a magic that is neither 0 nor seawall's: refused at
//!   once ([`RegionError::NotARegion`]): no creator ever writes one;
//! - not published while a process holds its init lock: that process is building
//!   it, so the opener waits for it, up to [`OpenOptions::init_timeout`]
//!   ([`RegionError::Timeout`]);
//! - not published and nobody holds the lock: it never will be (an empty file, a
//!   header of zeros, a creator that died before `READY`): refused at once, as a
//!   file of the wrong size ([`RegionError::Untrusted`]) or as
//!   [`RegionError::NotARegion`]; [`unlink`] removes it. One that was unlinked
//!   meanwhile (a creator that failed removes its file) is tried again from the
//!   start.
//!
//! A file gets the region's name already locked and sized, so no opener ever
//! takes a creator's work in progress for a dead one.
//!
//! Values read from a region after attaching are untrusted too: see
//! [`SharedRegion::config_checked`] and [`sanity`].
//!
//! Only native lock-free atomics may be shared: `portable-atomic` falls back to
//! locks that live in one process's memory where the CPU lacks 64- or 128-bit
//! atomics, so every entry point refuses such machines
//! ([`RegionError::NotLockFree`]).

pub mod fingerprint;
pub mod header;
pub mod sanity;
pub mod trust;

use core::fmt;
use core::mem::{MaybeUninit, align_of, size_of};
use core::ops::Deref;
use core::ptr::NonNull;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use seawall_core::{ConfigError, Corrupt, Field};

pub use self::fingerprint::Agreement;
use self::header::{Fields, Header, MAGIC};
use crate::REGION_LAYOUT_VERSION;

/// A core structure that can live in memory shared by processes.
///
/// # Safety
/// The implementor promises that `Self` is `#[repr(C)]`, fixed-size, holds no
/// pointers, references or handles (nothing that means something only in one
/// process), needs no `Drop`, and that after [`init`](Self::init) its plain
/// (non-atomic) fields are never written again: every later change goes through
/// atomics. Then any number of processes may hold `&Self` to the same bytes.
pub unsafe trait Shareable: Sync + Sized {
    /// File-name family: a region named `n` is the file `/dev/shm/seawall-<FAMILY>-<n>`,
    /// so a breaker and a semaphore may both be called `payments`.
    const FAMILY: &'static str;
    /// Identifies this exact structure in the header. Unique across every
    /// `Shareable` type: `0x01xx` breakers, `0x02xx` semaphores, `0x03xx` retry
    /// budget and throttle, `0x04xx` health, `0x05xx` rate limiters.
    const LAYOUT_ID: u32;
    /// What the structure is, for error messages ("count-window breaker").
    const DESCRIPTION: &'static str;
    /// What it is built from.
    type Config;
    /// Everything in `config` that every sharer must agree on, field by field
    /// (see [`Agreement`]); its fingerprint is stored in the region's header.
    /// Destructure the configuration without `..`, so that a field added to it
    /// does not compile until it is placed; bind a value that may differ
    /// harmlessly between processes (a jitter seed each process draws) to `_`
    /// and say why.
    fn agreement(config: &Self::Config) -> Agreement;
    /// The configuration the structure was built with (in a region: its
    /// creator's), read back to name the fields a caller's configuration gets
    /// wrong.
    fn config(&self) -> Self::Config;
    /// Check `config` and write a new structure into `slot`, or name the bad field.
    fn init(slot: &mut MaybeUninit<Self>, config: &Self::Config) -> Result<(), ConfigError>;
}

/// A `T` on the heap, built in place (no large temporary on the stack).
pub fn boxed<T: Shareable>(config: &T::Config) -> Result<Box<T>, ConfigError> {
    let mut b = Box::<T>::new_uninit();
    T::init(&mut b, config)?;
    // SAFETY: `init` returned Ok, so it wrote a complete `T` into the slot.
    Ok(unsafe { b.assume_init() })
}

/// Whether this machine has native lock-free 32-, 64- and 128-bit atomics, the
/// only ones that work between processes.
#[must_use]
pub fn native_atomics() -> bool {
    portable_atomic::AtomicU32::is_lock_free()
        && portable_atomic::AtomicU64::is_lock_free()
        && portable_atomic::AtomicU128::is_lock_free()
}

/// Where named regions live.
pub const SHM_DIR: &str = "/dev/shm";

/// Longest region name accepted.
pub const MAX_NAME_LEN: usize = 200;

/// How to open a named region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// How long to wait for another process that is creating the region (and
    /// holds its init lock) to finish (default 2 s). A region nobody is
    /// creating is never waited for. A duration too long to add to the
    /// monotonic clock (`Duration::MAX`) waits as long as the creator works.
    pub init_timeout: Duration,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            init_timeout: Duration::from_secs(2),
        }
    }
}

/// Why a region could not be opened, created or attached. Exhaustive on purpose:
/// each binding maps every variant to its own error (a C status, a Python
/// exception, a Node code), and a new variant must be placed in each.
#[derive(Debug)]
pub enum RegionError {
    /// The configuration is invalid (nothing was created).
    Config(ConfigError),
    /// The name is not 1–200 characters of `A–Z a–z 0–9 . _ -` (not starting with `.`).
    BadName(String),
    /// The file could not be created, opened, sized or mapped.
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// This machine lacks native lock-free 64- or 128-bit atomics.
    NotLockFree,
    /// Caller memory not aligned to [`SharedRegion::ALIGN`].
    Misaligned {
        /// Address given.
        address: usize,
        /// Alignment needed.
        align: usize,
    },
    /// Caller memory or file shorter than the region.
    TooSmall {
        /// Bytes given.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// No initialised seawall region there (bad magic or checksum, never published).
    NotARegion(String),
    /// Made by a seawall with another region layout version, or a layout this build does not
    /// share.
    VersionMismatch(String),
    /// It holds another kind of structure (e.g. a count-window breaker where a
    /// time-window one was asked for).
    LayoutMismatch {
        /// Layout id found in the header.
        found: u32,
        /// What this call expected.
        expected: &'static str,
    },
    /// It holds the same structure with another configuration.
    ConfigMismatch {
        /// Fingerprint in the region.
        found: u64,
        /// Fingerprint of the configuration given.
        expected: u64,
        /// The fields whose values differ between the region's configuration and
        /// the one given, in the configuration's order (empty only for memory
        /// whose configuration cannot be read back).
        differing: Vec<Field>,
    },
    /// Another process is building the region (it holds the file's init lock)
    /// and did not finish in time.
    Timeout {
        /// The file.
        path: PathBuf,
        /// How long this call waited.
        waited: Duration,
    },
    /// The file at the region's path is not one this user may trust (DESIGN §8):
    /// a symbolic link, not a regular file, owned by another user, open to group
    /// or others, or of the wrong size. Nothing in it was read or changed.
    Untrusted {
        /// The file.
        path: PathBuf,
        /// Why it was refused.
        reason: String,
        /// Its owner, where known.
        owner_uid: Option<u32>,
    },
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "{e}"),
            Self::BadName(n) => write!(
                f,
                "invalid region name {n:?}: use 1 to {MAX_NAME_LEN} characters of A-Z a-z 0-9 . _ - (not starting with '.')"
            ),
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Self::NotLockFree => f.write_str(
                "this machine has no native lock-free 64/128-bit atomics: structures cannot be shared between processes here",
            ),
            Self::Misaligned { address, align } => write!(
                f,
                "region memory at {address:#x} is not aligned to {align} bytes"
            ),
            Self::TooSmall { len, need } => {
                write!(f, "region memory is {len} bytes, needs at least {need}")
            }
            Self::NotARegion(why) => write!(f, "no initialised seawall region: {why}"),
            Self::VersionMismatch(why) => write!(f, "region layout version mismatch: {why}"),
            Self::LayoutMismatch { found, expected } => write!(
                f,
                "region holds structure layout {found:#06x}, not a {expected}"
            ),
            Self::ConfigMismatch {
                found,
                expected,
                differing,
            } => {
                let names: Vec<&str> = differing.iter().map(|d| d.name()).collect();
                write!(
                    f,
                    "{} (fingerprint {found:#018x}, this one {expected:#018x})",
                    mismatch_message(&names)
                )
            }
            Self::Timeout { path, waited } => write!(
                f,
                "{} was not initialised within {} ms: the process creating it still holds its init lock",
                path.display(),
                waited.as_millis()
            ),
            Self::Untrusted {
                path,
                reason,
                owner_uid,
            } => {
                write!(f, "refusing shared region {}: {reason}", path.display())?;
                match owner_uid {
                    Some(uid) => write!(f, " (owner uid {uid})"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// What a [`RegionError::ConfigMismatch`] says, with the differing fields
/// called `names` (a binding passes its own option names):
/// `region was created with another configuration: a, b and c differ`.
#[must_use]
pub fn mismatch_message(names: &[&str]) -> String {
    let lead = "region was created with another configuration";
    match names {
        [] => lead.to_owned(),
        [one] => format!("{lead}: {one} differs"),
        [init @ .., last] => format!("{lead}: {} and {last} differ", init.join(", ")),
    }
}

impl std::error::Error for RegionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ConfigError> for RegionError {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}

/// Check a region name and return its file under [`SHM_DIR`].
pub fn region_path(family: &str, name: &str) -> Result<PathBuf, RegionError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !ok {
        return Err(RegionError::BadName(name.to_owned()));
    }
    Ok(Path::new(SHM_DIR).join(format!("seawall-{family}-{name}")))
}

/// Remove the named region of `T`'s family (like `rm -f`: a missing file is fine).
/// Processes attached to it keep their mapping; the next `open` creates a new one.
pub fn unlink<T: Shareable>(name: &str) -> Result<(), RegionError> {
    let path = region_path(T::FAMILY, name)?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(RegionError::Io { path, source }),
    }
}

/// A `T` in memory shared between processes: derefs to `&T`.
pub struct SharedRegion<T: Shareable> {
    value: NonNull<T>,
    created: bool,
    /// The configuration fingerprint this process checked when it created or
    /// attached: kept in its own memory, which no other process can overwrite.
    agreed: u64,
    // Keeps the mapping alive (unmapped on drop); `None` for caller memory.
    _map: Option<memmap2::MmapRaw>,
}

// SAFETY: `T: Sync` and `Shareable` promise every change after init is atomic, so
// `&T` may be used from any thread; the mapping itself is owned by this value.
unsafe impl<T: Shareable> Send for SharedRegion<T> {}
// SAFETY: as above; `SharedRegion` only hands out `&T`.
unsafe impl<T: Shareable> Sync for SharedRegion<T> {}

impl<T: Shareable> Deref for SharedRegion<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `value` points to a published `T` that lives as long as `self`
        // (the mapping is owned by `self`; caller memory is promised by `init_in` /
        // `attach`).
        unsafe { self.value.as_ref() }
    }
}

impl<T: Shareable> fmt::Debug for SharedRegion<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRegion")
            .field("structure", &T::DESCRIPTION)
            .field("created", &self.created)
            .finish_non_exhaustive()
    }
}

/// Every outcome of one attempt to open the file.
enum Attempt<R> {
    Done(R),
    /// The file at the path is gone (between our create and our open, or
    /// unpublished and unlinked while we looked at it): try again.
    Vanished,
}

/// What one look at a file another process created found.
enum Look {
    /// Published: `len` bytes, mapped.
    Published(usize, memmap2::MmapRaw),
    /// Not published; `len` bytes.
    Unpublished(usize),
    /// It can never become a region (or could not be looked at).
    Refused(RegionError),
}

/// Where a file another process created stands.
enum Settled {
    /// Published: `len` bytes, mapped.
    Published(usize, memmap2::MmapRaw),
    /// A process holds its init lock: it is being built.
    Building,
    /// It can never become a region (or could not be looked at).
    Refused(RegionError),
    /// Unpublished, unlocked, and no longer at the path.
    Vanished,
}

impl<T: Shareable> SharedRegion<T> {
    /// Offset of the structure from the start of the region.
    pub const VALUE_OFFSET: usize = size_of::<Header>().next_multiple_of(align_of::<T>());
    /// Bytes a region of `T` needs.
    pub const SIZE: usize = Self::VALUE_OFFSET + size_of::<T>();
    /// Alignment a region of `T` needs.
    pub const ALIGN: usize = if align_of::<T>() > align_of::<Header>() {
        align_of::<T>()
    } else {
        align_of::<Header>()
    };

    const NO_DROP: () = assert!(
        !core::mem::needs_drop::<T>(),
        "a shared structure must not need Drop"
    );

    /// Whether this handle created (and initialised) the region.
    #[must_use]
    pub fn created(&self) -> bool {
        self.created
    }

    /// Create or attach the region `name` of `T`'s family under `/dev/shm`.
    /// See the module docs for the protocol.
    pub fn open(
        name: &str,
        config: &T::Config,
        options: &OpenOptions,
    ) -> Result<Self, RegionError> {
        Self::open_path(&region_path(T::FAMILY, name)?, config, options)
    }

    /// [`open`](Self::open) at an explicit path (any file system that supports
    /// shared mappings).
    pub fn open_path(
        path: &Path,
        config: &T::Config,
        options: &OpenOptions,
    ) -> Result<Self, RegionError> {
        let () = Self::NO_DROP;
        if !native_atomics() {
            return Err(RegionError::NotLockFree);
        }
        // Refuse a bad configuration before touching the file system.
        drop(boxed::<T>(config)?);
        let agreement = T::agreement(config);
        let expected = agreement.fingerprint();
        let started = Instant::now();
        // None: too far to be a time; wait as long as a creator works.
        let deadline = started.checked_add(options.init_timeout);
        loop {
            let attempt = match trust::create_locked(path, Self::SIZE) {
                Ok(file) => Attempt::Done(Self::create(path, &file, config, expected)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    Self::attach_file(path, &agreement, started, deadline)
                }
                Err(source) => Attempt::Done(Err(io_error(path, source))),
            };
            match attempt {
                Attempt::Done(r) => return r,
                Attempt::Vanished if !passed(deadline) => {}
                Attempt::Vanished => {
                    return Err(RegionError::Timeout {
                        path: path.to_owned(),
                        waited: started.elapsed(),
                    });
                }
            }
        }
    }

    /// We won the race (`file` is at `path`, sized, its init lock ours): map,
    /// build, publish, let go of the lock.
    fn create(
        path: &Path,
        file: &File,
        config: &T::Config,
        fingerprint: u64,
    ) -> Result<Self, RegionError> {
        let map = match memmap2::MmapOptions::new().len(Self::SIZE).map_raw(file) {
            Ok(map) => map,
            Err(source) => {
                // Openers waiting on our lock find the file gone and start over.
                let _ = std::fs::remove_file(path);
                return Err(io_error(path, source));
            }
        };
        let base = NonNull::new(map.as_mut_ptr()).expect("mmap never returns NULL");
        // SAFETY: the mapping is `SIZE` bytes, page-aligned (≥ ALIGN), zero-filled
        // by the kernel (a valid, not-ready header), and no other process reads the
        // structure before we publish it.
        if let Err(e) = unsafe { Self::build_at(base, config, fingerprint) } {
            let _ = std::fs::remove_file(path);
            return Err(e.into());
        }
        // Published (release) before the lock goes: an opener that finds the lock
        // free sees `READY`. Dropping the descriptor would let go as well.
        let _ = trust::unlock(file);
        Ok(Self {
            value: base_value(base),
            created: true,
            agreed: fingerprint,
            _map: Some(map),
        })
    }

    /// Someone else created the file: wait while a process builds it, then check
    /// what it published, or refuse at once what can never become a region.
    fn attach_file(
        path: &Path,
        expected: &Agreement,
        started: Instant,
        deadline: Option<Instant>,
    ) -> Attempt<Result<Self, RegionError>> {
        let file = match trust::open_file(path, false) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Attempt::Vanished,
            Err(e) if trust::is_symlink_error(&e) => {
                return Attempt::Done(Err(trust::symlink(path)));
            }
            Err(source) => return Attempt::Done(Err(io_error(path, source))),
        };
        if let Err(e) = trust::check_file(path, &file) {
            return Attempt::Done(Err(e));
        }
        let mut mapped = None;
        let settled = wait_for(deadline, || match Self::settle(path, &file, &mut mapped) {
            Settled::Building => None,
            other => Some(other),
        });
        let (len, map) = match settled {
            Some(Settled::Published(len, map)) => (len, map),
            Some(Settled::Refused(e)) => return Attempt::Done(Err(e)),
            Some(Settled::Vanished) => return Attempt::Vanished,
            None | Some(Settled::Building) => {
                return Attempt::Done(Err(RegionError::Timeout {
                    path: path.to_owned(),
                    waited: started.elapsed(),
                }));
            }
        };
        let base = NonNull::new(map.as_mut_ptr()).expect("mmap never returns NULL");
        // SAFETY: `base` maps `len` bytes (at least a header), page-aligned,
        // published (ready) as `settle` found.
        let checked = unsafe { Self::check(base, len, Some(expected)) };
        // A header that matches this build over a file of another size was not
        // made by this library (or was resized since): refuse it as well.
        let checked = checked.and_then(|value| {
            if len == Self::SIZE {
                Ok(value)
            } else {
                Err(trust::wrong_size(path, len as u64, Self::SIZE))
            }
        });
        Attempt::Done(checked.map(|value| Self {
            value,
            created: false,
            agreed: expected.fingerprint(),
            _map: Some(map),
        }))
    }

    /// Where the file another process created stands now; `mapped` keeps its
    /// mapping between looks.
    fn settle(path: &Path, file: &File, mapped: &mut Option<(usize, memmap2::MmapRaw)>) -> Settled {
        match Self::look(path, file, mapped) {
            Look::Published(len, map) => return Settled::Published(len, map),
            Look::Refused(e) => return Settled::Refused(e),
            Look::Unpublished(_) => {}
        }
        match trust::init_lock_held(file) {
            Ok(true) => return Settled::Building,
            Ok(false) => {}
            Err(source) => return Settled::Refused(io_error(path, source)),
        }
        // Nobody builds it, and nobody can start to (a creator locks its file
        // before the file gets its name): this look is the last word.
        match Self::look(path, file, mapped) {
            Look::Published(len, map) => Settled::Published(len, map),
            Look::Refused(e) => Settled::Refused(e),
            Look::Unpublished(_) if !trust::still_named(path, file) => Settled::Vanished,
            Look::Unpublished(len) if len == Self::SIZE && Self::untouched(mapped.as_ref()) => {
                Self::remove_abandoned(path, file)
            }
            Look::Unpublished(len) => Settled::Refused(Self::never_published(path, len)),
        }
    }

    /// Whether the mapping `mapped` holds (the whole file) is all zeros: a file
    /// its creator reserved and died before it wrote anything, not a region
    /// whose header was overwritten (a built one has its structure behind).
    fn untouched(mapped: Option<&(usize, memmap2::MmapRaw)>) -> bool {
        mapped.is_some_and(|(len, map)| {
            // SAFETY: the mapping is `len` bytes and stays mapped while read;
            // a byte changing meanwhile only makes the answer a stale one,
            // which the lock and name checks of `remove_abandoned` settle.
            let bytes = unsafe { core::slice::from_raw_parts(map.as_ptr(), *len) };
            bytes.iter().all(|&b| b == 0)
        })
    }

    /// Self-healing (DESIGN §8): a file whose creator died before it built
    /// anything is removed, so that the next try creates the region anew,
    /// instead of leaving the name unusable. Only the one opener that takes
    /// the file's lock removes it, and only while the path still names it (a
    /// second opener that then takes the lock finds the name moved on);
    /// `Building` while another opener holds it.
    fn remove_abandoned(path: &Path, file: &File) -> Settled {
        if trust::lock_exclusive(file).is_err() {
            return Settled::Building;
        }
        if trust::still_named(path, file) {
            let _ = std::fs::remove_file(path);
        }
        // Dropping the descriptor lets go of the lock.
        Settled::Vanished
    }

    /// One look at the file: its length, and, once it holds a header, the
    /// header's state and magic (`mapped` keeps a mapping of `len` bytes for
    /// the next look).
    fn look(path: &Path, file: &File, mapped: &mut Option<(usize, memmap2::MmapRaw)>) -> Look {
        let len = match file.metadata() {
            Ok(m) => usize::try_from(m.len()).unwrap_or(usize::MAX),
            Err(source) => return Look::Refused(io_error(path, source)),
        };
        if len == 0 {
            return Look::Unpublished(0);
        }
        if len < size_of::<Header>() {
            return Look::Refused(trust::wrong_size(path, len as u64, Self::SIZE));
        }
        let map = match mapped.take() {
            Some((l, map)) if l == len => map,
            _ => match memmap2::MmapOptions::new().len(len).map_raw(file) {
                Ok(map) => map,
                Err(source) => return Look::Refused(io_error(path, source)),
            },
        };
        let base = NonNull::new(map.as_mut_ptr()).expect("mmap never returns NULL");
        // SAFETY: the mapping is at least a header long and page-aligned; every
        // header field is an atomic, so reading it while the creator writes is fine.
        let header = unsafe { base.cast::<Header>().as_ref() };
        if header.is_ready() {
            return Look::Published(len, map);
        }
        // A creator's header is zeros until it publishes, and it stores the magic
        // with the other fields just before `READY`: any other magic is not work
        // in progress, whoever holds the lock.
        let magic = header.magic.load(portable_atomic::Ordering::Relaxed);
        if magic != 0 && magic != MAGIC {
            return Look::Refused(RegionError::NotARegion(format!(
                "bad magic {magic:#018x} in a header never published"
            )));
        }
        *mapped = Some((len, map));
        Look::Unpublished(len)
    }

    /// The error for a file of `len` bytes that is not published and that no
    /// process is building.
    fn never_published(path: &Path, len: usize) -> RegionError {
        if len == Self::SIZE {
            RegionError::NotARegion(
                "never published, and no process is building it (its creator died first, or its header was overwritten): remove it and open it again".into(),
            )
        } else {
            trust::wrong_size(path, len as u64, Self::SIZE)
        }
    }

    /// Build a new region in memory the caller brings: `len` bytes at `mem`,
    /// aligned to [`ALIGN`](Self::ALIGN), at least [`SIZE`](Self::SIZE) long.
    /// Whatever was there is overwritten.
    ///
    /// # Safety
    /// `mem` must be valid for reads and writes of `len` bytes for as long as the
    /// returned value (and every region attached to the same memory) lives, and no
    /// other thread or process may use that memory until this returns.
    pub unsafe fn init_in(
        mem: NonNull<u8>,
        len: usize,
        config: &T::Config,
    ) -> Result<Self, RegionError> {
        let () = Self::NO_DROP;
        Self::check_memory(mem, len, Self::SIZE)?;
        if !native_atomics() {
            return Err(RegionError::NotLockFree);
        }
        drop(boxed::<T>(config)?);
        // SAFETY: the memory is ours alone (caller's promise); a fresh header makes
        // it valid, not-ready header memory before `build_at` uses its atomics.
        unsafe { mem.cast::<Header>().write(Header::empty()) };
        let agreed = T::agreement(config).fingerprint();
        // SAFETY: size and alignment checked above; exclusive per the caller.
        unsafe { Self::build_at(mem, config, agreed) }?;
        Ok(Self {
            value: base_value(mem),
            created: true,
            agreed,
            _map: None,
        })
    }

    /// Attach to a region that [`init_in`](Self::init_in) built in caller memory
    /// (in this process or another one mapping the same memory). Changes nothing.
    ///
    /// # Safety
    /// `mem` must be valid for reads and writes of `len` bytes for as long as the
    /// returned value lives, and must either hold a region published by
    /// `init_in` or anything else whose header then fails the checks (magic,
    /// state, ABI, layout, checksum). Memory with a valid-looking header over a
    /// structure seawall did not build is undefined behaviour.
    pub unsafe fn attach(mem: NonNull<u8>, len: usize) -> Result<Self, RegionError> {
        // The header says which structure follows; its size is checked after that.
        Self::check_memory(mem, len, size_of::<Header>())?;
        if !native_atomics() {
            return Err(RegionError::NotLockFree);
        }
        // SAFETY: at least a header long and aligned (checked); the caller promises
        // it is valid memory; every header field is an atomic.
        let header = unsafe { mem.cast::<Header>().as_ref() };
        if !header.is_ready() {
            return Err(RegionError::NotARegion(
                "never published (initialise it with init_in first)".into(),
            ));
        }
        // SAFETY: as above, and the header is published.
        let value = unsafe { Self::check(mem, len, None) }?;
        // No configuration of its own to hold it to: the one the header names
        // now, its checksum checked, is what later reads are held to.
        let agreed = header.read().0.fingerprint;
        Ok(Self {
            value,
            created: false,
            agreed,
            _map: None,
        })
    }

    /// The fingerprint of the configuration the region was built with.
    #[must_use]
    pub fn fingerprint(&self) -> u64 {
        self.header().read().0.fingerprint
    }

    /// The configuration in the region, held to the one this process agreed on
    /// when it created or attached (its fingerprint, kept in this process's
    /// memory): [`Corrupt`] when a field every sharer must agree on has changed
    /// since, as when the region's bytes were overwritten. A value read from the
    /// region can then be checked against a configuration that is still the
    /// one it was opened with (see [`sanity`]). Not for the hot path: it
    /// fingerprints the configuration (a few allocations).
    pub fn config_checked(&self) -> Result<T::Config, Corrupt> {
        let config = T::config(self);
        if T::agreement(&config).fingerprint() == self.agreed {
            Ok(config)
        } else {
            Err(Corrupt)
        }
    }

    fn header(&self) -> &Header {
        // SAFETY: the header sits `VALUE_OFFSET` bytes before the value, at the
        // region's (aligned) start, in the same live region; its fields are atomics.
        unsafe {
            self.value
                .byte_sub(Self::VALUE_OFFSET)
                .cast::<Header>()
                .as_ref()
        }
    }

    fn check_memory(mem: NonNull<u8>, len: usize, need: usize) -> Result<(), RegionError> {
        let address = mem.as_ptr() as usize;
        if !address.is_multiple_of(Self::ALIGN) {
            return Err(RegionError::Misaligned {
                address,
                align: Self::ALIGN,
            });
        }
        if len < need {
            return Err(RegionError::TooSmall { len, need });
        }
        Ok(())
    }

    /// Build `T` and publish the header.
    ///
    /// # Safety
    /// `base` is valid for `SIZE` bytes, aligned to `ALIGN`, holds a not-ready
    /// header, and nobody reads the value part before the header is published.
    unsafe fn build_at(
        base: NonNull<u8>,
        config: &T::Config,
        fingerprint: u64,
    ) -> Result<(), ConfigError> {
        // SAFETY: within the region and aligned for `T` (VALUE_OFFSET is a multiple
        // of align_of::<T>() and `base` is ALIGN-aligned); not shared yet.
        let slot = unsafe { base_value::<T>(base).cast::<MaybeUninit<T>>().as_mut() };
        T::init(slot, config)?;
        // SAFETY: `base` holds a header (caller's promise); its fields are atomics.
        let header = unsafe { base.cast::<Header>().as_ref() };
        header.publish(&Self::fields(fingerprint));
        Ok(())
    }

    fn fields(fingerprint: u64) -> Fields {
        Fields {
            magic: MAGIC,
            layout_version: REGION_LAYOUT_VERSION,
            layout_id: T::LAYOUT_ID,
            header_size: size_of::<Header>() as u32,
            value_offset: Self::VALUE_OFFSET as u64,
            value_size: size_of::<T>() as u64,
            value_align: align_of::<T>() as u64,
            fingerprint,
            creator_pid: std::process::id(),
        }
    }

    /// Validate a published header and return the structure.
    ///
    /// # Safety
    /// `base` is valid for `len ≥ size_of::<Header>()` bytes, aligned to `ALIGN`,
    /// and its header is published (`is_ready`).
    unsafe fn check(
        base: NonNull<u8>,
        len: usize,
        expected: Option<&Agreement>,
    ) -> Result<NonNull<T>, RegionError> {
        // SAFETY: caller's promise; header fields are atomics.
        let header = unsafe { base.cast::<Header>().as_ref() };
        let (found, checksum) = header.read();
        if found.magic != MAGIC {
            return Err(RegionError::NotARegion("bad magic".into()));
        }
        if found.layout_version != REGION_LAYOUT_VERSION {
            return Err(RegionError::VersionMismatch(format!(
                "region laid out by seawall region layout version {}, this library reads version {REGION_LAYOUT_VERSION}",
                found.layout_version
            )));
        }
        if checksum != found.checksum() {
            return Err(RegionError::NotARegion("header checksum mismatch".into()));
        }
        if found.layout_id != T::LAYOUT_ID {
            return Err(RegionError::LayoutMismatch {
                found: found.layout_id,
                expected: T::DESCRIPTION,
            });
        }
        let want = Self::fields(found.fingerprint);
        if (
            found.header_size,
            found.value_offset,
            found.value_size,
            found.value_align,
        ) != (
            want.header_size,
            want.value_offset,
            want.value_size,
            want.value_align,
        ) {
            return Err(RegionError::VersionMismatch(format!(
                "{} laid out as {} bytes at offset {} (align {}), this build expects {} at {} (align {})",
                T::DESCRIPTION,
                found.value_size,
                found.value_offset,
                found.value_align,
                want.value_size,
                want.value_offset,
                want.value_align
            )));
        }
        if len < Self::SIZE {
            return Err(RegionError::TooSmall {
                len,
                need: Self::SIZE,
            });
        }
        let value = base_value::<T>(base);
        if let Some(expected) = expected
            && expected.fingerprint() != found.fingerprint
        {
            // SAFETY: the header is published and names this very structure, laid
            // out as this build lays it out, in memory long enough for it (all
            // checked above): it is a `T` that `init` built, as when attaching.
            let theirs = T::agreement(&unsafe { value.as_ref() }.config());
            return Err(RegionError::ConfigMismatch {
                found: found.fingerprint,
                expected: expected.fingerprint(),
                differing: expected.differing(&theirs),
            });
        }
        Ok(value)
    }
}

fn base_value<T: Shareable>(base: NonNull<u8>) -> NonNull<T> {
    // Offset arithmetic only; every caller dereferences under its own SAFETY.
    let offset = SharedRegion::<T>::VALUE_OFFSET;
    NonNull::new(base.as_ptr().wrapping_add(offset))
        .expect("a region never wraps the address space")
        .cast()
}

fn io_error(path: &Path, source: io::Error) -> RegionError {
    RegionError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Whether `deadline` (None: none) has passed.
fn passed(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// Poll `ready` until it yields or `deadline` passes: a few yields first (the
/// creator needs microseconds), then 1 ms sleeps.
fn wait_for<R>(deadline: Option<Instant>, mut ready: impl FnMut() -> Option<R>) -> Option<R> {
    let mut spins = 0u32;
    loop {
        if let Some(r) = ready() {
            return Some(r);
        }
        if passed(deadline) {
            return None;
        }
        if spins < 64 {
            spins += 1;
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

//! Who may share a region (DESIGN §8): the user that created it, and nobody else.
//!
//! A region is opened with `O_NOFOLLOW` (a symbolic link planted at its name is
//! refused, never followed) and created mode 0600 under a name nobody else can
//! take from it (see [`create_locked`]). The descriptor is then checked with
//! `fstat`: a regular file, owned by the effective uid, with no group or other
//! permission bit. Any other file is refused at once with
//! [`RegionError::Untrusted`], before a byte of it is mapped.
//!
//! What a process that can write the file can do is outside what these checks
//! prevent: it can set any counter to any value (the callers' memory is never at
//! risk: every index read from a region is checked), and if it truncates the file,
//! processes that mapped it get SIGBUS on their next access, as with any shared
//! mapping. Only the owner (and root) can do either.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::RegionError;

/// Permission bits of a file this library creates: the user's own processes only.
pub const REGION_MODE: u32 = 0o600;

/// Open the region file `path`, creating it (exclusively) when `create`; a
/// symbolic link at `path` is never followed.
pub(super) fn open_file(path: &Path, create: bool) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    // std opens with O_CLOEXEC already; O_NOFOLLOW makes a link at the last
    // component an error (ELOOP) instead of a way into someone else's file.
    options
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if create {
        options.create_new(true).mode(REGION_MODE);
    }
    options.open(path)
}

/// Whether `e`, from [`open_file`], means a symbolic link sits at the path.
pub(super) fn is_symlink_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// A region error for a path that is a symbolic link.
pub(super) fn symlink(path: &Path) -> RegionError {
    let owner_uid = std::fs::symlink_metadata(path).ok().map(|m| m.uid());
    untrusted(path, "it is a symbolic link".into(), owner_uid)
}

/// Refuse an opened file that is not a regular file owned by this effective uid
/// with mode bits for its owner only.
pub(super) fn check_file(path: &Path, file: &File) -> Result<(), RegionError> {
    let meta = file.metadata().map_err(|source| RegionError::Io {
        path: path.to_owned(),
        source,
    })?;
    let uid = meta.uid();
    if !meta.file_type().is_file() {
        return Err(untrusted(
            path,
            "it is not a regular file".into(),
            Some(uid),
        ));
    }
    let me = effective_uid();
    if uid != me {
        return Err(untrusted(
            path,
            format!("it belongs to uid {uid}, not to this process's effective uid {me}"),
            Some(uid),
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(untrusted(
            path,
            format!("its mode {mode:04o} lets group or others read or write it (regions are 0600)"),
            Some(uid),
        ));
    }
    Ok(())
}

/// A region error for a file of the wrong size.
pub(super) fn wrong_size(path: &Path, len: u64, expected: usize) -> RegionError {
    untrusted(
        path,
        format!("it is {len} bytes, a region of this kind is {expected}"),
        Some(effective_uid()),
    )
}

fn untrusted(path: &Path, reason: String, owner_uid: Option<u32>) -> RegionError {
    RegionError::Untrusted {
        path: path.to_owned(),
        reason,
        owner_uid,
    }
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Reserve `len` bytes for `file` (and give it that size), so that a full file
/// system is an error now instead of SIGBUS when a page is first touched.
pub(super) fn reserve(file: &File, len: usize) -> io::Result<()> {
    let len =
        libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: the descriptor is open and owned by `file` for the whole call.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// Create the region file `path`: `len` bytes reserved, mode 0600, and its init
/// lock (an exclusive `flock`) held by the returned descriptor until the caller
/// publishes the region and lets go ([`unlock`]). `AlreadyExists` when anything
/// (a file, a symbolic link) is at `path` already; a full file system is an
/// error that leaves nothing behind.
///
/// The file gets its name only once it is locked and sized, so a file found at
/// `path` unpublished and unlocked is not a creator's work in progress: it will
/// never become a region, and an opener can refuse it at once instead of waiting
/// for it ([`init_lock_held`]). Created `O_TMPFILE` (unnamed until it is linked
/// at `path`, so a creator that dies first leaves nothing), or, where the file
/// system or a missing `/proc` rules that out, under a random hidden name in the
/// same directory, linked at `path` and unlinked (a creator killed in those few
/// instructions leaves a `.seawall-init-*` file).
pub(super) fn create_locked(path: &Path, len: usize) -> io::Result<File> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match create_unnamed(dir) {
        Ok(file) => {
            lock_exclusive(&file)?;
            reserve(&file, len)?;
            match link_unnamed(&file, path) {
                Ok(()) => return Ok(file),
                // No /proc to name the descriptor by: the named way below.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => return Err(e),
            }
        }
        Err(e) if tmpfile_unsupported(&e) => {}
        Err(e) => return Err(e),
    }
    create_named_locked(dir, path, len)
}

/// An unnamed file in `dir` (`O_TMPFILE`), mode 0600.
fn create_unnamed(dir: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(REGION_MODE)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir)
}

/// Whether `e`, from [`create_unnamed`], says this kernel or file system makes
/// no unnamed files (a kernel before 3.11 sees `O_DIRECTORY` and answers EISDIR).
fn tmpfile_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
    )
}

/// Give the unnamed `file` the name `path`, which must be free (`linkat` never
/// replaces what is there: `AlreadyExists` then).
fn link_unnamed(file: &File, path: &Path) -> io::Result<()> {
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let to = c_path(path)?;
    // SAFETY: both are NUL-terminated strings that live through the call.
    let rc = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// [`create_locked`] through a hidden name in `dir`, for where unnamed files
/// cannot be made or linked.
pub(super) fn create_named_locked(dir: &Path, path: &Path, len: usize) -> io::Result<File> {
    let temp = dir.join(format!(
        ".seawall-init-{}-{:016x}",
        std::process::id(),
        crate::entropy::entropy()
    ));
    let file = open_file(&temp, true)?;
    let linked = lock_exclusive(&file)
        .and_then(|()| reserve(&file, len))
        .and_then(|()| std::fs::hard_link(&temp, path));
    // The region keeps its inode under `path` (when linked); the hidden name
    // only ever served to get there.
    let _ = std::fs::remove_file(&temp);
    linked.map(|()| file)
}

/// Take the init lock of a file nobody else can reach yet. Never waits: a
/// lock already taken (someone reached the file through /proc) is an error.
pub(super) fn lock_exclusive(file: &File) -> io::Result<()> {
    flock(file, libc::LOCK_EX | libc::LOCK_NB)
}

/// Let go of the init lock (the creator, once the region is published).
pub(super) fn unlock(file: &File) -> io::Result<()> {
    flock(file, libc::LOCK_UN)
}

/// Whether a creator holds the init lock of `file` now. A creator takes it
/// before the file has its name and never again after letting go, so `false`
/// is final: whatever the creator published before letting go is visible to
/// the caller's next look at the file.
pub(super) fn init_lock_held(file: &File) -> io::Result<bool> {
    match flock(file, libc::LOCK_SH | libc::LOCK_NB) {
        Ok(()) => {
            // The probe's own shared lock would keep the next probe of another
            // opener from telling anything: give it back at once.
            flock(file, libc::LOCK_UN)?;
            Ok(false)
        }
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(true),
        Err(e) => Err(e),
    }
}

fn flock(file: &File, operation: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: the descriptor is open and owned by `file` for the whole call.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether `path` still names `file` (the same inode): false once it was
/// unlinked or replaced.
pub(super) fn still_named(path: &Path, file: &File) -> bool {
    match (std::fs::symlink_metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    /// A fresh path in /dev/shm, removed on drop.
    struct Temp(PathBuf);

    impl Temp {
        fn new(tag: &str) -> Self {
            let p = PathBuf::from(format!(
                "/dev/shm/seawall-trust-unit-{}-{tag}",
                std::process::id()
            ));
            let _ = std::fs::remove_file(&p);
            Self(p)
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// What either way of creating must leave: the file at `path`, `len`
    /// bytes, mode 0600, its init lock held until `unlock`; a second create
    /// finds it there.
    fn created_locked_and_sized(t: &Temp, file: &File, create: impl Fn() -> io::Result<File>) {
        let meta = std::fs::metadata(&t.0).unwrap();
        assert_eq!(meta.len(), 8192);
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
        assert!(still_named(&t.0, file));
        let other = open_file(&t.0, false).unwrap();
        assert!(init_lock_held(&other).unwrap());
        // A probe takes nothing: the next one still sees the creator's lock.
        assert!(init_lock_held(&other).unwrap());
        assert_eq!(
            create().map(drop).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        unlock(file).unwrap();
        assert!(!init_lock_held(&other).unwrap());
    }

    #[test]
    fn an_unnamed_file_gets_its_name_locked_and_sized() {
        let t = Temp::new("unnamed");
        let file = create_locked(&t.0, 8192).unwrap();
        created_locked_and_sized(&t, &file, || create_locked(&t.0, 8192));
    }

    #[test]
    fn the_hidden_name_way_leaves_only_the_region() {
        let t = Temp::new("named");
        let dir = Path::new("/dev/shm");
        let file = create_named_locked(dir, &t.0, 8192).unwrap();
        created_locked_and_sized(&t, &file, || create_named_locked(dir, &t.0, 8192));
        let prefix = format!(".seawall-init-{}-", std::process::id());
        let left: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .collect();
        assert!(left.is_empty(), "hidden names left behind: {left:?}");
    }

    #[test]
    fn a_file_unlinked_or_replaced_is_no_longer_named() {
        let t = Temp::new("renamed");
        let file = create_locked(&t.0, 4096).unwrap();
        std::fs::remove_file(&t.0).unwrap();
        assert!(!still_named(&t.0, &file));
        drop(create_locked(&t.0, 4096).unwrap());
        assert!(!still_named(&t.0, &file));
    }
}

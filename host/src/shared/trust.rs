//! Who may share a region (DESIGN §8): the user that created it, and nobody else.
//!
//! A region is opened with `O_NOFOLLOW` (a symbolic link planted at its name is
//! refused, never followed) and created with `O_CREAT | O_EXCL`, mode 0600. The
//! descriptor is then checked with `fstat`: a regular file, owned by the effective
//! uid, with no group or other permission bit. Any other file is refused at once
//! with [`RegionError::Untrusted`], before a byte of it is mapped.
//!
//! What a process that can write the file can do is outside what these checks
//! prevent: it can set any counter to any value (the callers' memory is never at
//! risk: every index read from a region is checked), and if it truncates the file,
//! processes that mapped it get SIGBUS on their next access, as with any shared
//! mapping. Only the owner (and root) can do either.

use std::fs::File;
use std::io;
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
    use std::os::fd::AsRawFd;
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

//! The header in front of every shared structure: what is there, which region
//! layout version built it, which configuration it holds, and whether it is ready.
//!
//! Byte layout (little-endian, 128 bytes, the structure follows at `value_offset`):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | `magic`: the bytes `seawall\0` |
//! | 8 | 4 | `state`: 0 while the creator builds the structure, [`READY`] after |
//! | 12 | 4 | `layout_version`: [`REGION_LAYOUT_VERSION`](crate::REGION_LAYOUT_VERSION) of the creator |
//! | 16 | 4 | `layout_id`: which structure ([`Shareable::LAYOUT_ID`](super::Shareable::LAYOUT_ID)) |
//! | 20 | 4 | `header_size`: 128 |
//! | 24 | 8 | `value_offset` |
//! | 32 | 8 | `value_size` |
//! | 40 | 8 | `value_align` |
//! | 48 | 8 | `fingerprint` of the configuration |
//! | 56 | 4 | `creator_pid` (informative) |
//! | 60 | 4 | reserved, zero |
//! | 64 | 8 | `checksum`: FNV-1a of the fields above except `state` |
//!
//! Every field is an atomic, so a process reading the header while another creates
//! it never races: the creator stores the fields, then `state = READY` with release
//! ordering; readers load `state` with acquire ordering before anything else.

use portable_atomic::{AtomicU32, AtomicU64, Ordering};

use super::fingerprint::fingerprint;

/// `state` once the structure is fully built. Not 1, so that a stray `1` in
/// unrelated memory does not pass for it.
pub const READY: u32 = 0x5245_4459; // "REDY"

/// The first eight bytes of every region.
pub const MAGIC: u64 = u64::from_le_bytes(*b"seawall\0");

/// The region header; see the module docs for its byte layout.
#[allow(
    clippy::struct_field_names,
    reason = "the field names are the documented layout's"
)]
#[repr(C, align(128))]
pub struct Header {
    pub(crate) magic: AtomicU64,
    pub(crate) state: AtomicU32,
    pub(crate) layout_version: AtomicU32,
    pub(crate) layout_id: AtomicU32,
    pub(crate) header_size: AtomicU32,
    pub(crate) value_offset: AtomicU64,
    pub(crate) value_size: AtomicU64,
    pub(crate) value_align: AtomicU64,
    pub(crate) fingerprint: AtomicU64,
    pub(crate) creator_pid: AtomicU32,
    pub(crate) reserved: AtomicU32,
    pub(crate) checksum: AtomicU64,
}

/// The header fields as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// `MAGIC` in a valid region.
    pub magic: u64,
    /// ABI version of the creator.
    pub layout_version: u32,
    /// Which structure follows.
    pub layout_id: u32,
    /// Size of the header (128).
    pub header_size: u32,
    /// Where the structure starts.
    pub value_offset: u64,
    /// `size_of` the structure.
    pub value_size: u64,
    /// `align_of` the structure.
    pub value_align: u64,
    /// Fingerprint of the configuration the structure was built with.
    pub fingerprint: u64,
    /// Process that created the region.
    pub creator_pid: u32,
}

impl Fields {
    /// The checksum over every field (FNV-1a).
    #[must_use]
    pub fn checksum(&self) -> u64 {
        fingerprint(&[
            self.magic,
            u64::from(self.layout_version),
            u64::from(self.layout_id),
            u64::from(self.header_size),
            self.value_offset,
            self.value_size,
            self.value_align,
            self.fingerprint,
            u64::from(self.creator_pid),
        ])
    }
}

impl Header {
    /// An all-zero header: not ready.
    pub(crate) const fn empty() -> Self {
        Self {
            magic: AtomicU64::new(0),
            state: AtomicU32::new(0),
            layout_version: AtomicU32::new(0),
            layout_id: AtomicU32::new(0),
            header_size: AtomicU32::new(0),
            value_offset: AtomicU64::new(0),
            value_size: AtomicU64::new(0),
            value_align: AtomicU64::new(0),
            fingerprint: AtomicU64::new(0),
            creator_pid: AtomicU32::new(0),
            reserved: AtomicU32::new(0),
            checksum: AtomicU64::new(0),
        }
    }

    /// Whether the creator has published the region (acquire: everything it wrote
    /// before is visible after this returns true).
    pub(crate) fn is_ready(&self) -> bool {
        self.state.load(Ordering::Acquire) == READY
    }

    /// Store every field, then publish: `state = READY` (release).
    pub(crate) fn publish(&self, f: &Fields) {
        let r = Ordering::Relaxed;
        self.magic.store(f.magic, r);
        self.layout_version.store(f.layout_version, r);
        self.layout_id.store(f.layout_id, r);
        self.header_size.store(f.header_size, r);
        self.value_offset.store(f.value_offset, r);
        self.value_size.store(f.value_size, r);
        self.value_align.store(f.value_align, r);
        self.fingerprint.store(f.fingerprint, r);
        self.creator_pid.store(f.creator_pid, r);
        self.reserved.store(0, r);
        self.checksum.store(f.checksum(), r);
        self.state.store(READY, Ordering::Release);
    }

    /// The fields and the stored checksum (call after [`is_ready`](Self::is_ready)).
    pub(crate) fn read(&self) -> (Fields, u64) {
        let r = Ordering::Relaxed;
        let f = Fields {
            magic: self.magic.load(r),
            layout_version: self.layout_version.load(r),
            layout_id: self.layout_id.load(r),
            header_size: self.header_size.load(r),
            value_offset: self.value_offset.load(r),
            value_size: self.value_size.load(r),
            value_align: self.value_align.load(r),
            fingerprint: self.fingerprint.load(r),
            creator_pid: self.creator_pid.load(r),
        };
        (f, self.checksum.load(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn byte_layout_matches_the_documented_table() {
        assert_eq!(size_of::<Header>(), 128);
        assert_eq!(offset_of!(Header, magic), 0);
        assert_eq!(offset_of!(Header, state), 8);
        assert_eq!(offset_of!(Header, layout_version), 12);
        assert_eq!(offset_of!(Header, layout_id), 16);
        assert_eq!(offset_of!(Header, header_size), 20);
        assert_eq!(offset_of!(Header, value_offset), 24);
        assert_eq!(offset_of!(Header, value_size), 32);
        assert_eq!(offset_of!(Header, value_align), 40);
        assert_eq!(offset_of!(Header, fingerprint), 48);
        assert_eq!(offset_of!(Header, creator_pid), 56);
        assert_eq!(offset_of!(Header, checksum), 64);
        assert_eq!(MAGIC.to_le_bytes(), *b"seawall\0");
    }
}

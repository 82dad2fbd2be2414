//! What the tests of region contents share: caller memory to build a region in.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::ptr::NonNull;

/// Zeroed caller memory, aligned for a region, freed on drop.
pub struct Memory {
    pub ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: plain bytes; every access in these tests goes through the region's
// atomics or happens before the threads that use it start.
unsafe impl Send for Memory {}
// SAFETY: as above.
unsafe impl Sync for Memory {}

#[allow(dead_code, reason = "each test file uses the helpers it needs")]
impl Memory {
    pub fn new(size: usize, align: usize) -> Self {
        let layout = Layout::from_size_align(size, align).unwrap();
        // SAFETY: non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) }).unwrap();
        Self { ptr, layout }
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Read the `u64` at `offset` (a region word, read as another process would
    /// see it; no other thread runs).
    pub fn read_u64(&self, offset: usize) -> u64 {
        assert!(offset + 8 <= self.len());
        // SAFETY: inside the allocation.
        unsafe { self.ptr.as_ptr().add(offset).cast::<u64>().read_unaligned() }
    }

    /// Overwrite bytes at `offset`, as a stray writer would.
    pub fn write(&self, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= self.len());
        // SAFETY: inside the allocation; no other thread runs.
        unsafe {
            self.ptr
                .as_ptr()
                .add(offset)
                .copy_from_nonoverlapping(bytes.as_ptr(), bytes.len());
        }
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

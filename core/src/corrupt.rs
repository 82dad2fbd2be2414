//! What an operation reports when the memory of a structure holds values its own
//! code never writes (DESIGN §8, "content is untrusted for bounds").
//!
//! A structure that lives in a region shared by processes can be written by any
//! of them, and a bug or a hostile process can leave any word with any value: an
//! index past the end, a zero divisor, a count below what it must evict, a word
//! that makes a retry loop spin for ever. The core checks what it reads and
//! bounds every such loop by [`MAX_RETRIES`]; when a check fails it stops and
//! returns [`Corrupt`] instead of panicking, hanging or touching memory outside
//! the structure.

use core::fmt;

/// The structure's memory is corrupted: a word holds a value this code never
/// writes, or a retry loop over its words reached [`MAX_RETRIES`] passes.
///
/// The operation stopped where it found it; any effect it had before is
/// unspecified, and no memory outside the structure was touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Corrupt;

impl fmt::Display for Corrupt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the structure's memory is corrupted (a value seawall never writes, or a retry loop over its words that never ends)",
        )
    }
}

impl core::error::Error for Corrupt {}

/// Most passes an operation makes over a retry loop before it gives up with
/// [`Corrupt`].
///
/// A lock-free CAS loop retries only when another thread's operation succeeded
/// in between, and the other loops retry only while another writer is midway
/// through a step of a few instructions. Losing 2²⁰ such races in a row would
/// take a million operations by others completing inside one call — about
/// 50 ms of every other thread winning every single time — which legitimate
/// contention does not produce; a corrupted word that would otherwise make the
/// loop spin for ever is given up on after about that long, well within any
/// caller's timeout.
pub const MAX_RETRIES: u32 = 1 << 20;

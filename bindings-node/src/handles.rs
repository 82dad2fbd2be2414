//! Handles: how JavaScript names a native structure on the hot path.
//!
//! A napi-rs class method pays for `napi_unwrap` plus a class-identity check on
//! every call (about 200 ns on Node 20, ten times a plain function call). So the
//! structures live in per-thread tables instead, and JavaScript passes a plain
//! number, the handle `generation · 2²⁴ + index`, to plain functions; looking it
//! up is an index and a compare.
//!
//! Each structure is owned by a [`Token`], a JavaScript `External` that the JS
//! wrapper keeps. When the wrapper becomes garbage the token is collected and its
//! `Drop` frees the table entry, so a dropped breaker costs nothing. The
//! generation makes a stale or forged handle an error, never another object.
//! Tables are per thread because every Node worker thread has its own JS heap.

use std::cell::{Cell, RefCell};

use crate::boundary::{Code, Error, Result, error};

const INDEX_BITS: u32 = 24;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
const GEN_MASK: u32 = (1 << 28) - 1;

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// A table of `T` addressed by handles.
pub struct Table<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "handles are integers below 2^52 made by `insert`; others fail the lookup"
)]
fn split(handle: f64) -> Option<(usize, u32)> {
    if !(0.0..4_503_599_627_370_496.0).contains(&handle) {
        return None;
    }
    let h = handle as u64;
    Some(((h & INDEX_MASK) as usize, (h >> INDEX_BITS) as u32))
}

impl<T> Table<T> {
    /// Store `value`; its handle, or an error when 2²⁴ entries are alive.
    pub fn insert(&mut self, value: T) -> Result<f64> {
        let index = if let Some(i) = self.free.pop() {
            i
        } else {
            let i = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
            if u64::from(i) > INDEX_MASK {
                return Err(error(
                    Code::Limit,
                    "more than 16 777 216 live seawall objects of one kind in this thread",
                ));
            }
            self.slots.push(Slot {
                generation: 0,
                value: None,
            });
            i
        };
        let slot = &mut self.slots[index as usize];
        slot.generation = (slot.generation + 1) & GEN_MASK;
        slot.value = Some(value);
        Ok((u64::from(slot.generation) << INDEX_BITS | u64::from(index)) as f64)
    }

    /// The entry of `handle`, if it is alive.
    pub fn get(&self, handle: f64) -> Option<&T> {
        let (index, generation) = split(handle)?;
        let slot = self.slots.get(index)?;
        if slot.generation == generation {
            slot.value.as_ref()
        } else {
            None
        }
    }

    /// Remove the entry of `handle` (nothing if it is not alive).
    pub fn remove(&mut self, handle: f64) -> Option<T> {
        let (index, generation) = split(handle)?;
        let slot = self.slots.get_mut(index)?;
        if slot.generation != generation {
            return None;
        }
        let value = slot.value.take();
        if value.is_some() {
            self.free.push(index as u32);
        }
        value
    }
}

/// The error for a handle that names nothing alive.
pub fn stale(kind: &str) -> Error {
    error(
        Code::Handle,
        format!("not a live seawall {kind} (freed, or not made by seawall)"),
    )
}

/// Declare a per-thread table of `$t` named `$name`, with `with_$name`-style
/// access through [`Registry`].
macro_rules! registry {
    ($name:ident, $t:ty, $kind:literal) => {
        thread_local! {
            static $name: $crate::handles::Registry<$t> = $crate::handles::Registry::new($kind);
        }
    };
}
pub(crate) use registry;

/// A thread's table of one kind of structure, plus handles whose tokens were
/// collected while the table was borrowed (freed at the next insert).
pub struct Registry<T> {
    kind: &'static str,
    table: RefCell<Table<T>>,
    deferred: RefCell<Vec<f64>>,
    live: Cell<usize>,
}

impl<T> Registry<T> {
    /// An empty registry of `kind` (for error messages).
    pub fn new(kind: &'static str) -> Self {
        Self {
            kind,
            table: RefCell::new(Table::default()),
            deferred: RefCell::new(Vec::new()),
            live: Cell::new(0),
        }
    }

    /// Store `value` and return its handle.
    pub fn insert(&self, value: T) -> Result<f64> {
        let mut table = self.table.borrow_mut();
        for h in self.deferred.borrow_mut().drain(..) {
            if table.remove(h).is_some() {
                self.live.set(self.live.get() - 1);
            }
        }
        let h = table.insert(value)?;
        self.live.set(self.live.get() + 1);
        Ok(h)
    }

    /// Run `f` on the entry of `handle`, or fail with `EHANDLE`.
    pub fn with<R>(&self, handle: f64, f: impl FnOnce(&T) -> R) -> Result<R> {
        let table = self.table.borrow();
        table.get(handle).map(f).ok_or_else(|| stale(self.kind))
    }

    /// Free the entry of `handle` now, or at the next insert if the table is in
    /// use (a token collected during a call).
    pub fn free(&self, handle: f64) {
        if let Ok(mut table) = self.table.try_borrow_mut() {
            let removed = table.remove(handle);
            drop(table);
            if removed.is_some() {
                self.live.set(self.live.get() - 1);
            }
            drop(removed);
        } else {
            self.deferred.borrow_mut().push(handle);
        }
    }

    /// Entries alive.
    pub fn live(&self) -> usize {
        self.live.get()
    }
}

/// The owner of one table entry, held by JavaScript as an `External`. Dropping
/// it (when the JS wrapper is collected) frees the entry.
pub struct Token {
    handle: f64,
    free: fn(f64),
}

impl Token {
    /// A token owning `handle`, freed by `free`.
    pub fn new(handle: f64, free: fn(f64)) -> Self {
        Self { handle, free }
    }

    /// The handle it owns.
    pub fn handle(&self) -> f64 {
        self.handle
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        (self.free)(self.handle);
    }
}

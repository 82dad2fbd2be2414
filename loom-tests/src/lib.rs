//! loom models live in `tests/`; this crate has no library code.

//! loom models live in `tests/`; this library holds what they share.

/// Explore every interleaving of `f` with loom, at most `LOOM_MAX_PREEMPTIONS`
/// preemptions per execution (2 when unset: every protocol bug we have seeded so far
/// needs at most two, and it keeps the whole suite within CI's budget).
#[cfg(loom)]
pub fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(f);
}

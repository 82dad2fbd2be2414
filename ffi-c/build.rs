//! Declares the deliberately broken variants of this crate's own atomic protocol
//! (the permit table), checked by `scripts/loom-ffi.sh`; the core's are declared
//! in the workspace manifest.
fn main() {
    println!(
        "cargo::rustc-check-cfg=cfg(seawall_mutant, values(\"permit_blind_claim\", \"permit_blind_release\", \"permit_reclaim_any_generation\"))"
    );
}

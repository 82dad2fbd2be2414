//! Declares the deliberately broken variants of this crate's own atomic protocols
//! (the permit table, the semaphore's holder table), checked by
//! `scripts/loom-host.sh`; the core's are declared in the workspace manifest.
fn main() {
    println!(
        "cargo::rustc-check-cfg=cfg(seawall_mutant, values(\"permit_blind_claim\", \"permit_blind_release\", \"permit_reclaim_any_generation\", \"holder_blind_release\", \"holder_blind_cancel\", \"holder_reclaim_any_generation\", \"holder_reclaim_blind\"))"
    );
}

//! Declares to rustc's check-cfg the deliberately broken variants
//! (`--cfg seawall_mutant="…"`) of this crate's atomic protocols, read from the
//! one list of mutants, `loom-tests/mutants.txt`, which scripts/loom-mutants.sh
//! runs. Outside the repository (a vendored or packaged build) the list is
//! absent: then any value is accepted, since no mutant is built there.
use std::path::Path;

fn main() {
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("../loom-tests/mutants.txt");
    println!("cargo::rerun-if-changed={}", list.display());
    let crate_name = env!("CARGO_PKG_NAME");
    let values = std::fs::read_to_string(&list).map_or_else(
        |_| "any()".to_owned(),
        |text| {
            text.lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .filter_map(|l| {
                    let mut cols = l.split_whitespace();
                    let (name, owner) = (cols.next()?, cols.next()?);
                    (owner == crate_name).then(|| format!("\"{name}\""))
                })
                .collect::<Vec<_>>()
                .join(", ")
        },
    );
    println!("cargo::rustc-check-cfg=cfg(seawall_mutant, values({values}))");
}

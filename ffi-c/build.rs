//! Gives the ELF shared library a `DT_SONAME` of `libseawall.so.<major>`, so a
//! program linked against the installed `libseawall.so` symlink records the
//! major version it was built for and keeps loading every compatible
//! `libseawall.so.<major>.<minor>.<patch>` (the layout `scripts/install.sh`
//! installs). Only the cdylib gets the flag: the static library and the rlib
//! have no SONAME, and other targets name their libraries differently.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if matches!(
        os.as_str(),
        "linux" | "freebsd" | "netbsd" | "openbsd" | "dragonfly"
    ) {
        let major = env!("CARGO_PKG_VERSION_MAJOR");
        println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,libseawall.so.{major}");
    }
}

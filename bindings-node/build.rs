//! napi-rs link setup (macOS `-undefined dynamic_lookup`, Windows import library).

fn main() {
    napi_build::setup();
}

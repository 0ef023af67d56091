//! Link the `tracecast` binary as a position-dependent executable on Linux:
//! its ~240k pointers into its own data are then fixed at link time instead
//! of relocated at every start (about 8 ms, most of a small `tracecast plan`).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}

//! Link the `tracecast` binary as a position-dependent executable on Linux:
//! the pointers into its own (large) data are then fixed at link time
//! instead of relocated at every start, which dominates a small command.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}

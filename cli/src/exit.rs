//! Exit codes, one place, so scripts can tell outcomes apart.

use std::process::ExitCode;

/// A fatal error: nothing (more) was done.
pub const FAILURE: ExitCode = ExitCode::FAILURE;

/// `ingest` finished, but some inputs could not be read (see `_ingest_log`).
pub fn partial() -> ExitCode {
    ExitCode::from(3)
}

/// `probe` found no CUDA driver (or no GPU).
pub fn no_gpu() -> ExitCode {
    ExitCode::from(4)
}

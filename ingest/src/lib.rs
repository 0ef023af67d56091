//! Trace ingest: PyTorch profiler (Kineto) JSON of every era and PyTorch
//! Execution Traces, plain, gzip or in tar archives -> a Parquet lake.
//!
//! Data flow: [`source`] finds files and archive members -> [`json`] parses
//! one in a single pass (`stream` reads a large compressed one while it is
//! inflated) -> [`build`]/[`link`] make a linked [`model::Trace`] ->
//! [`batches`] turns it into Arrow -> [`lake`] commits whole files.

pub mod batches;
mod build;
mod comm;
pub mod inspect;
pub mod json;
pub mod lake;
mod link;
pub mod model;
mod pipeline;
pub mod source;
mod stream;

use std::path::{Path, PathBuf};

pub use pipeline::{IngestOptions, IngestSummary, Progress, ingest};

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Lake(#[from] lake::LakeError),
    #[error("{path}: {source}")]
    Input { path: PathBuf, source: std::io::Error },
    #[error("{path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
}

/// Reads one file (a trace, or an archive of traces) and calls `each` with
/// every trace in it, parsed and linked, or with the reason it could not be.
/// `member` is the archive member's path, `None` for a plain file.
pub fn read_traces(
    path: &Path,
    mut each: impl FnMut(Option<&str>, Result<&model::Trace, String>),
) -> Result<(), IngestError> {
    let bytes = std::fs::read(path).map_err(|source| IngestError::Input {
        path: path.to_path_buf(),
        source,
    })?;
    let unreadable = |reason: String| IngestError::Unreadable {
        path: path.to_path_buf(),
        reason,
    };
    if let source::Contents::Archive(mut archive) = source::open(&bytes).map_err(|e| unreadable(e.to_string()))? {
        let entries = archive.entries().map_err(|e| unreadable(format!("archive: {e}")))?;
        for entry in entries {
            let member = pipeline::read_member(entry).map_err(|e| unreadable(e.to_string()))?;
            if let Some((name, data)) = member {
                with_trace(data, |t| each(Some(&name), t));
            }
        }
        return Ok(());
    }
    with_trace(bytes, |t| each(None, t));
    Ok(())
}

/// Decompresses, parses and links one trace's bytes, as `ingest` does.
fn with_trace(bytes: Vec<u8>, f: impl FnOnce(Result<&model::Trace, String>)) {
    let parsed = match stream::inflate_and_parse(bytes) {
        Ok((_, parsed)) => parsed,
        Err(e) => return f(Err(format!("decompressing: {e}"))),
    };
    match parsed.and_then(build::Parsed::build) {
        Ok(trace) => f(Ok(&trace)),
        Err(e) => f(Err(e.to_string())),
    }
}

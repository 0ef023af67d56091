//! `features.json`: what a feature directory holds. It is the commit point:
//! part files it does not list are leftovers of a run that died, and are
//! removed by the next run.

use std::path::Path;

use serde::{Deserialize, Serialize};
use tracecast_schemas::features::{FORMAT_VERSION, MANIFEST_FORMAT};

use crate::FeaturesError;

pub const FILE: &str = "features.json";

#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub format_version: u32,
    pub window: usize,
    pub stride: usize,
    /// Traces whose windows are in the directory.
    pub traces: Vec<TraceEntry>,
    /// Traces that gave no windows, with the reason.
    pub skipped: Vec<SkippedTrace>,
    /// Part files written by each committed run.
    pub runs: Vec<RunEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceEntry {
    pub trace_id: String,
    pub steps: u64,
    pub windows: u64,
    pub items: u64,
    /// Steps of the trace whose GPU sequence is empty: they give no windows.
    pub steps_without_items: u64,
    pub run_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SkippedTrace {
    pub trace_id: String,
    pub source: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunEntry {
    pub run_id: String,
    pub files: Vec<String>,
    pub tracecast_version: String,
}

impl Manifest {
    pub fn new(window: usize, stride: usize) -> Self {
        Manifest {
            format: MANIFEST_FORMAT.to_string(),
            format_version: FORMAT_VERSION,
            window,
            stride,
            traces: Vec::new(),
            skipped: Vec::new(),
            runs: Vec::new(),
        }
    }

    /// The manifest of `dir`, None for a directory that has none yet.
    pub fn read(dir: &Path) -> Result<Option<Manifest>, FeaturesError> {
        let path = dir.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(FeaturesError::Io {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| FeaturesError::BadOutput {
            dir: dir.display().to_string(),
            reason: format!("{FILE}: {e}"),
        })?;
        if manifest.format != MANIFEST_FORMAT || manifest.format_version != FORMAT_VERSION {
            return Err(FeaturesError::BadOutput {
                dir: dir.display().to_string(),
                reason: format!(
                    "{FILE} is {} version {}; this tracecast writes {MANIFEST_FORMAT} version {FORMAT_VERSION} (use a new --out)",
                    manifest.format, manifest.format_version
                ),
            });
        }
        Ok(Some(manifest))
    }

    /// Writes the manifest whole (temporary file, then rename).
    pub fn write(&self, dir: &Path) -> Result<(), FeaturesError> {
        let path = dir.join(FILE);
        let tmp = dir.join(format!("{FILE}.tmp"));
        let text = serde_json::to_string_pretty(self).expect("the manifest serialises");
        std::fs::write(&tmp, text + "\n")
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|source| FeaturesError::Io {
                path: path.display().to_string(),
                source,
            })
    }
}

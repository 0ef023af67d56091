//! DataFusion over the tracecast lake: every lake table registered under
//! its own name, the views in `views.sql`, and the sliding-window feature
//! pipeline (`sql/`, run by [`build_features`]).

mod estimate;
mod lake;
mod manifest;
mod part_writer;
mod pipeline;
mod positions;
mod query;
mod selection;
mod sources;
mod template;
mod udf;

pub use lake::{LakeOptions, open_lake, table_names};
pub use pipeline::{DEFAULT_CHUNK_ITEMS, FeatureRun, FeatureSummary, build_features, pipeline_sql};
pub use query::{QuerySources, ResultFormat, run_sql, write_result};
pub use sources::{TraceSource, trace_sources};
pub use tracecast_schemas::features::{FeatureManifest, SkippedTrace, TraceEntry};

/// The largest window: W per-position column groups make wide rows.
pub const MAX_WINDOW: usize = 64;

/// Window length W and stride S, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowSpec {
    pub window: usize,
    pub stride: usize,
}

impl WindowSpec {
    /// W and S must leave the same padding on both sides of the S central
    /// items: 1 <= S <= W <= 64 and W - S even.
    pub fn new(window: usize, stride: usize) -> Result<Self, FeaturesError> {
        let reason = if stride == 0 {
            Some("the stride must be at least 1")
        } else if window < stride {
            Some("the window must hold its S central kernels, so W >= S")
        } else if !(window - stride).is_multiple_of(2) {
            Some("W - S must be even, so the central kernels have as much context before as after")
        } else if window > MAX_WINDOW {
            Some("W is at most 64")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(FeaturesError::WindowShape { window, stride, reason }),
            None => Ok(WindowSpec { window, stride }),
        }
    }

    /// Positions on each side of the central items.
    pub fn pad(&self) -> usize {
        (self.window - self.stride) / 2
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FeaturesError {
    #[error("{0}: no such lake (run `tracecast ingest ... --lake {0}` first)")]
    NoLake(String),
    #[error("{0}: the lake has no traces (run `tracecast ingest ... --lake {0}` first)")]
    EmptyLake(String),
    #[error(
        "W={window} S={stride} is not a window shape tracecast can tile with: {reason} (e.g. --window 16 --stride 4)"
    )]
    WindowShape {
        window: usize,
        stride: usize,
        reason: &'static str,
    },
    #[error("{dir}: {reason}")]
    BadOutput { dir: String, reason: String },
    #[error("{file}: {reason}")]
    Template { file: String, reason: String },
    #[error("{file}: {source}")]
    Sql {
        file: String,
        source: Box<datafusion::error::DataFusionError>,
    },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// A query that cannot run, with DataFusion's reason.
    #[error("{0}")]
    Query(String),
    #[error("--table {name}={}: {reason}", path.display())]
    Table {
        name: String,
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("{0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_shapes_are_checked() {
        assert_eq!(WindowSpec::new(16, 4).unwrap().pad(), 6);
        assert_eq!(WindowSpec::new(1, 1).unwrap().pad(), 0);
        for (w, s) in [(16, 3), (2, 4), (4, 0), (66, 2)] {
            let err = WindowSpec::new(w, s).unwrap_err().to_string();
            assert!(err.contains(&format!("W={w} S={s}")), "{err}");
        }
    }
}

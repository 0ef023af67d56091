//! DataFusion over the tracecast lake: every lake table registered under
//! its own name, plus the views in `views.sql`. The sliding-window feature
//! pipeline builds on this context.

mod lake;

pub use lake::{open_lake, table_names, LakeOptions};

#[derive(Debug, thiserror::Error)]
pub enum FeaturesError {
    #[error("{0}: no such lake (run `tracecast ingest ... --lake {0}` first)")]
    NoLake(String),
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
}

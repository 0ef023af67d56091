use std::path::PathBuf;

/// Errors of the train stage. Each names the file (or the setting) it concerns.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: cannot write: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{}: {reason}", path.display())]
    Features { path: PathBuf, reason: String },
    #[error("{}: Parquet: {source}", path.display())]
    Parquet {
        path: PathBuf,
        source: parquet::errors::ParquetError,
    },
    #[error("{}: {source}", path.display())]
    Arrow {
        path: PathBuf,
        source: arrow::error::ArrowError,
    },
    #[error("{}: {reason}", path.display())]
    Config { path: PathBuf, reason: String },
    #[error("{}: line {line}: {reason}", path.display())]
    Labels { path: PathBuf, line: u64, reason: String },
    #[error("split: {0}")]
    Split(String),
    #[error("LightGBM: {0}")]
    LightGbm(String),
    #[error("{}: {reason}", path.display())]
    Model { path: PathBuf, reason: String },
    #[error(transparent)]
    Chart(#[from] tracecast_charts::ChartError),
}

impl From<lightgbm3::Error> for TrainError {
    fn from(e: lightgbm3::Error) -> Self {
        TrainError::LightGbm(e.to_string())
    }
}

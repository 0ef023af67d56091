use std::path::PathBuf;

/// Errors of the op-model stage; each names the file or GPU it concerns.
#[derive(Debug, thiserror::Error)]
pub enum OpModelError {
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: cannot write: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{}: {reason}", path.display())]
    Parse { path: PathBuf, reason: String },
    #[error("{}: {reason}", path.display())]
    Model { path: PathBuf, reason: String },
    #[error("GPU `{gpu}`: {reason}")]
    Spec { gpu: String, reason: String },
    #[error("{}: {reason}", path.display())]
    Layout { path: PathBuf, reason: String },
    #[error(transparent)]
    Hardware(#[from] tracecast_schemas::hardware::HardwareError),
    #[error(transparent)]
    GpuLookup(#[from] tracecast_schemas::hardware::GpuLookupError),
    #[error("LightGBM: {0}")]
    LightGbm(String),
    #[error(transparent)]
    Chart(#[from] tracecast_charts::ChartError),
    #[error(
        "no measured operators to fit on: the training directories hold no NeuSight per-op rows, \
         per-node graph latencies or ETS files (those left after any --holdout)"
    )]
    NothingToFit,
}

impl From<lightgbm3::Error> for OpModelError {
    fn from(e: lightgbm3::Error) -> Self {
        OpModelError::LightGbm(e.to_string())
    }
}

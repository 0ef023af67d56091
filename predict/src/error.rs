use std::path::PathBuf;

/// Errors of the predict stage, each naming its file or cause.
#[derive(Debug, thiserror::Error)]
pub enum PredictError {
    #[error(transparent)]
    Model(#[from] tracecast_train::TrainError),
    #[error(transparent)]
    OpModel(#[from] tracecast_opmodel::OpModelError),
    /// The asked GPU's profile cannot price work (an incomplete profile).
    #[error(
        "--gpu: {0}; give a complete profile or a spec-sheet file (NeuSight's device_configs JSON) with --gpu FILE"
    )]
    TargetGpu(tracecast_opmodel::OpModelError),
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: cannot write: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{}: {reason}", path.display())]
    Input { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Arrow {
        path: PathBuf,
        source: arrow::error::ArrowError,
    },
}

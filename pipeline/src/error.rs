//! Every stage's error, and the pipeline's own (inputs that do not fit).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Ingest(#[from] tracecast_ingest::IngestError),
    #[error(transparent)]
    Features(#[from] tracecast_features::FeaturesError),
    #[error(transparent)]
    Train(#[from] tracecast_train::TrainError),
    #[error(transparent)]
    OpModel(#[from] tracecast_opmodel::OpModelError),
    #[error(transparent)]
    Predict(#[from] tracecast_predict::PredictError),
    #[error(transparent)]
    Hardware(#[from] tracecast_schemas::hardware::HardwareError),
    #[error("--gpu: {0}")]
    Gpu(#[from] tracecast_schemas::hardware::GpuLookupError),
    /// An input that cannot be used, named with the reason.
    #[error("{}: {reason}", path.display())]
    Input { path: PathBuf, reason: String },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

//! Stages composed for one call, for the CLI and for anyone embedding
//! tracecast: what `tracecast predict` does (a trace ingested into a scratch
//! lake, featurized with the model's window shape, priced, written) is
//! [`predict`], so a service or a binding calls the same function.

mod error;
mod predict;

pub use error::PipelineError;
pub use predict::{PredictInput, PredictJob, PredictOutcome, TraceFacts, featurize, predict};

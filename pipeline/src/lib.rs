//! Stages composed for one call, for the CLI and for anyone embedding
//! tracecast: what `tracecast predict` does (a trace ingested into a scratch
//! lake, featurized with the model's window shape, priced, written) is
//! [`predict`], so a service or a binding calls the same function; likewise
//! `tracecast labels` ([`labels_from_manifests`]) and `tracecast sql` ([`sql`]).

mod error;
mod labels;
mod predict;
mod runtime;
mod sql;
mod tf32_use;

pub use error::PipelineError;
pub use labels::{LabelsSummary, labels_from_manifests};
pub use predict::{PredictInput, PredictJob, PredictOutcome, TraceFacts, features, featurize, predict};
pub use sql::{SqlJob, sql, write_sql_result};

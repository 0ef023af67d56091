//! The query runtime the lake's DataFusion stages run on, for callers that
//! are not async themselves.

use crate::PipelineError;

pub fn runtime() -> Result<tokio::runtime::Runtime, PipelineError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|source| PipelineError::Io {
            what: "starting the query runtime".into(),
            source,
        })
}

//! Where the lake's traces were read from.

use std::path::Path;

use datafusion::arrow::array::{Array, AsArray};

use crate::{FeaturesError, LakeOptions, open_lake};

/// One trace of the lake and, where it was read from a plain file (not an
/// archive member), that file's path as ingested.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSource {
    pub trace_id: String,
    pub plain_file: Option<String>,
}

/// Every trace of `lake`, by trace id.
pub async fn trace_sources(lake: &Path) -> Result<Vec<TraceSource>, FeaturesError> {
    let ctx = open_lake(lake, &LakeOptions::default()).await?;
    let batches = ctx
        .sql("SELECT trace_id, source, archive_member FROM traces ORDER BY trace_id")
        .await?
        .collect()
        .await?;
    let mut out = Vec::new();
    for batch in &batches {
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| FeaturesError::BadOutput {
                dir: lake.display().to_string(),
                reason: format!("the traces table has no `{name}` column"),
            })
        };
        let ids = column("trace_id")?.as_string::<i32>();
        let sources = column("source")?.as_string::<i32>();
        let members = column("archive_member")?;
        for i in 0..batch.num_rows() {
            let plain_file = members.is_null(i) && !sources.is_null(i);
            out.push(TraceSource {
                trace_id: ids.value(i).to_string(),
                plain_file: plain_file.then(|| sources.value(i).to_string()),
            });
        }
    }
    Ok(out)
}

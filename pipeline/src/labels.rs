//! `tracecast labels`: a labels CSV for a lake's traces from the collector's
//! manifests beside the files they were read from.

use std::path::Path;

use tracecast_features::trace_sources;
use tracecast_train::collector_label;

use crate::PipelineError;
use crate::runtime::runtime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelsSummary {
    /// Traces in the lake.
    pub traces: usize,
    /// Traces a manifest labelled.
    pub labelled: usize,
}

/// Writes `out` (`trace_id,model,batch_size,source`, the format `train
/// --labels` reads) with a row for every trace of `lake` whose plain file
/// has a collector manifest beside it.
pub fn labels_from_manifests(lake: &Path, out: &Path) -> Result<LabelsSummary, PipelineError> {
    let sources = runtime()?.block_on(trace_sources(lake))?;
    let mut csv = String::from("trace_id,model,batch_size,source\n");
    let mut labelled = 0;
    for source in &sources {
        let Some(file) = &source.plain_file else {
            continue;
        };
        if let Some(label) = collector_label(Path::new(file))? {
            labelled += 1;
            csv.push_str(&format!(
                "{},{},{},{}\n",
                source.trace_id,
                label.model.unwrap_or_default().replace(',', ";"),
                label.batch_size.map_or(String::new(), |b| b.to_string()),
                file.replace(',', ";")
            ));
        }
    }
    std::fs::write(out, csv).map_err(|source| PipelineError::Io {
        what: format!("writing {}", out.display()),
        source,
    })?;
    Ok(LabelsSummary {
        traces: sources.len(),
        labelled,
    })
}

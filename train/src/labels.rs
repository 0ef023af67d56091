//! What a trace was: its model family and batch size, which the trace itself
//! does not record. Read from a CSV (`schemas/FORMATS.md` "Trace labels"):
//! `trace_id,model,batch_size`, any other column (a `source` note) ignored.

use std::collections::HashMap;
use std::path::Path;

use tracecast_schemas::collector::{MANIFEST_FORMAT, MANIFEST_SUFFIX, MANIFEST_VERSION, names_trace};

use crate::TrainError;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceLabel {
    pub model: Option<String>,
    /// Batch size per GPU.
    pub batch_size: Option<u32>,
}

#[derive(Clone, Debug, Default)]
pub struct Labels {
    by_trace: HashMap<String, TraceLabel>,
}

impl Labels {
    pub fn load(path: &Path) -> Result<Labels, TrainError> {
        let bad = |line: u64, reason: String| TrainError::Labels {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let mut reader = csv::ReaderBuilder::new()
            .comment(Some(b'#'))
            .trim(csv::Trim::All)
            .from_path(path)
            .map_err(|e| bad(0, e.to_string()))?;
        let headers = reader.headers().map_err(|e| bad(1, e.to_string()))?.clone();
        let column = |name: &str| headers.iter().position(|h| h == name);
        let trace_col = column("trace_id").ok_or_else(|| bad(1, "no `trace_id` column".into()))?;
        let (model_col, batch_col) = (column("model"), column("batch_size"));
        if model_col.is_none() && batch_col.is_none() {
            return Err(bad(1, "neither a `model` nor a `batch_size` column".into()));
        }
        let mut by_trace = HashMap::new();
        for record in reader.records() {
            let record = record.map_err(|e| bad(e.position().map_or(0, |p| p.line()), e.to_string()))?;
            let line = record.position().map_or(0, |p| p.line());
            let cell = |c: Option<usize>| c.and_then(|c| record.get(c)).filter(|v| !v.is_empty());
            let trace_id = cell(Some(trace_col)).ok_or_else(|| bad(line, "empty trace_id".into()))?;
            let batch_size = match cell(batch_col) {
                None => None,
                Some(v) => match v.parse::<u32>() {
                    Ok(b) if b > 0 => Some(b),
                    _ => return Err(bad(line, format!("batch_size `{v}` is not a positive integer"))),
                },
            };
            let label = TraceLabel {
                model: cell(model_col).map(str::to_string),
                batch_size,
            };
            if by_trace.insert(trace_id.to_string(), label).is_some() {
                return Err(bad(line, format!("trace {trace_id} is labelled twice")));
            }
        }
        Ok(Labels { by_trace })
    }

    /// Labels one trace (e.g. from the command line), replacing what the file said.
    pub fn insert(&mut self, trace_id: &str, label: TraceLabel) {
        self.by_trace.insert(trace_id.to_string(), label);
    }

    pub fn get(&self, trace_id: &str) -> TraceLabel {
        self.by_trace.get(trace_id).cloned().unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.by_trace.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_trace.is_empty()
    }
}

/// The label a tracecast collector manifest gives the trace beside it: the
/// `*.manifest.json` in the trace's folder whose `trace_file` names it, up
/// to its compression (`schemas/FORMATS.md` "Collector manifest"). None
/// when there is none.
pub fn collector_label(trace: &Path) -> Result<Option<TraceLabel>, TrainError> {
    let (Some(dir), Some(name)) = (trace.parent(), trace.file_name().and_then(|n| n.to_str())) else {
        return Ok(None);
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.to_string_lossy().ends_with(MANIFEST_SUFFIX) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(manifest) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let names_this = manifest["trace_file"].as_str().is_some_and(|f| names_trace(f, name));
        if manifest["format"] != MANIFEST_FORMAT || !names_this {
            continue;
        }
        if manifest["format_version"] != MANIFEST_VERSION {
            return Err(TrainError::Labels {
                path,
                line: 0,
                reason: format!(
                    "collector manifest format_version {}; this tracecast reads {MANIFEST_VERSION}",
                    manifest["format_version"]
                ),
            });
        }
        let run = &manifest["run"];
        return Ok(Some(TraceLabel {
            model: run["model_name"].as_str().map(str::to_string),
            batch_size: run["batch_size"]
                .as_u64()
                .and_then(|b| u32::try_from(b).ok())
                .filter(|&b| b > 0),
        }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Labels, TrainError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.csv");
        std::fs::write(&path, text).unwrap();
        Labels::load(&path)
    }

    #[test]
    fn reads_models_and_batch_sizes() {
        let labels = load("# a note\ntrace_id,model,batch_size,source\nabc,resnet50,32,x.json\ndef,bert,,y\n").unwrap();
        assert_eq!(labels.get("abc").model.as_deref(), Some("resnet50"));
        assert_eq!(labels.get("abc").batch_size, Some(32));
        assert_eq!(labels.get("def").batch_size, None);
        assert_eq!(labels.get("zzz"), TraceLabel::default());
    }

    #[test]
    fn reads_the_collector_manifest_beside_a_trace() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("resnet50__bs64__bf16.pt.trace.json.gz");
        std::fs::write(&trace, b"").unwrap();
        assert_eq!(collector_label(&trace).unwrap(), None);
        let manifest = serde_json::json!({
            "format": "tracecast-collector-manifest", "format_version": 1,
            "trace_file": "resnet50__bs64__bf16.pt.trace.json.gz",
            "run": {"model_name": "resnet50", "batch_size": 64},
        });
        std::fs::write(
            dir.path().join("other.manifest.json"),
            r#"{"format": "something else"}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("resnet50__bs64__bf16.manifest.json"),
            manifest.to_string(),
        )
        .unwrap();
        let label = collector_label(&trace).unwrap().unwrap();
        assert_eq!((label.model.as_deref(), label.batch_size), (Some("resnet50"), Some(64)));
        // The same trace recompressed keeps its manifest's label.
        let recompressed = dir.path().join("resnet50__bs64__bf16.pt.trace.json.zst");
        std::fs::write(&recompressed, b"").unwrap();
        assert_eq!(collector_label(&recompressed).unwrap(), Some(label));
    }

    #[test]
    fn names_the_bad_line() {
        let err = load("trace_id,model,batch_size\nabc,resnet,0\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("batch_size `0`"), "{err}");
        let err = load("trace_id,model\nabc,a\nabc,b\n").unwrap_err().to_string();
        assert!(err.contains("labelled twice"), "{err}");
        assert!(load("model\nx\n").unwrap_err().to_string().contains("no `trace_id`"));
    }
}

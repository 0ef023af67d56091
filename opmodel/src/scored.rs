//! What an evaluation produced (each prediction beside its measurement,
//! the files written) and the file helpers its writers share; below both
//! `evaluate` and `ets`, which write into it.

use std::path::{Path, PathBuf};

use crate::OpModelError;

/// One prediction, with the measurement where the evaluation set kept it.
#[derive(Clone, Debug)]
pub struct Scored {
    /// `perop`, `e2e` or `ets`.
    pub set: &'static str,
    pub gpu: String,
    /// Op kind (per-op), `train`/`inf` plus model (e2e), model (ETS).
    pub group: String,
    /// `fusion`, `dp4`, ... for e2e labels with an option; else empty.
    pub option: String,
    pub predicted_ms: f64,
    pub measured_ms: Option<f64>,
    /// Where the prediction came from, for the report: a file and row.
    pub what: String,
}

pub struct Evaluation {
    pub scored: Vec<Scored>,
    /// Per label whose graph carries its GPU's per-node latencies: predicted
    /// and measured time per kind and pass.
    pub by_kind: Vec<KindScored>,
    /// Per predicted ETS file: its kernel time per kind and pass.
    pub(crate) ets_by_kind: Vec<crate::ets_by_kind::EtsKindScored>,
    pub files: Vec<PathBuf>,
    /// What could not be predicted, and why.
    pub notes: Vec<String>,
    pub ops_predicted: usize,
    pub predict_seconds: f64,
}

pub(crate) fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, OpModelError> {
    std::fs::File::create(path)
        .map(std::io::BufWriter::new)
        .map_err(|source| OpModelError::Write {
            path: path.to_path_buf(),
            source,
        })
}

pub(crate) fn write_err(path: &Path) -> impl Fn(std::io::Error) -> OpModelError + '_ {
    move |source| OpModelError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// One kind and pass of one end-to-end label, predicted against the
/// latencies measured for its graph's nodes.
#[derive(Clone, Debug)]
pub struct KindScored {
    pub gpu: String,
    /// `train` or `inf`.
    pub mode: String,
    pub times: crate::by_kind::KindTimes,
}

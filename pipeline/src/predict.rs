//! `tracecast predict` as one call: inputs read, a trace ingested and
//! featurized on the fly, the models loaded, the prediction made and written.

use std::path::{Path, PathBuf};

use tracecast_features::{FeatureRun, FeatureSummary, LakeOptions, WindowSpec, build_features};
use tracecast_ingest::{IngestOptions, ingest};
use tracecast_opmodel::{OpModel, shipped_model};
use tracecast_predict::{
    HalfType, IdleGaps, PredictRequest, Prediction, ScalingOptions, StepBase, Tf32, asks_another_run, write_outputs,
};
use tracecast_schemas::hardware::{catalog_or_builtin, lookup_gpu};
use tracecast_train::{FeatureTable, Labels, Model, TraceLabel, collector_label};

use crate::PipelineError;
use crate::runtime::runtime;

/// What to price.
pub enum PredictInput {
    /// One trace file (Kineto JSON, .gz, or a .tar.gz of ranks): ingested
    /// into a scratch lake and featurized with the model's window shape.
    Trace(PathBuf),
    /// A lake: every trace in it, featurized with the model's window shape.
    Lake(PathBuf),
    /// A feature directory built with the model's window shape.
    Features(PathBuf),
}

/// What a `PredictInput::Trace` does not say itself; each field overrides the
/// labels file, which overrides the collector's manifest beside the trace.
#[derive(Clone, Debug, Default)]
pub struct TraceFacts {
    pub batch_size: Option<u32>,
    pub model: Option<String>,
}

pub struct PredictJob<'a> {
    /// `tracecast train --out`; the built-in window model when `None`.
    pub model_dir: Option<&'a Path>,
    /// An op model file; the built-in one when `None` (loaded only for what-ifs).
    pub op_model_file: Option<&'a Path>,
    /// Hardware profiles; the built-in catalog when `None`.
    pub hardware_dir: Option<&'a Path>,
    pub input: PredictInput,
    pub trace_facts: TraceFacts,
    /// `trace_id,model,batch_size`.
    pub labels_file: Option<&'a Path>,
    pub base: StepBase,
    pub idle: IdleGaps,
    /// A profile's name, alias or short name, or a profile / spec-sheet file.
    pub gpu: Option<&'a str>,
    pub batch_size: Option<u32>,
    pub tf32: Tf32,
    /// The asked run in mixed precision (`PredictRequest::half`).
    pub half: Option<HalfType>,
    pub scaling: ScalingOptions,
    pub gpu_type: Option<String>,
    /// `PredictRequest::profiler_overhead_us`.
    pub profiler_overhead_us: f64,
    /// Where to write the prediction's tables; `None` writes nothing (the
    /// caller shows the prediction).
    pub out: Option<&'a Path>,
    /// Called with (items done, items to do) while featurizing.
    pub progress: &'a (dyn Fn(u64, u64) + Sync),
}

pub struct PredictOutcome {
    pub prediction: Prediction,
    /// The files written under `job.out` (none without it).
    pub files: Vec<PathBuf>,
    /// The window model's W and S.
    pub window: usize,
    pub stride: usize,
    /// Traces that gave no windows, with the reason (from featurizing).
    pub no_windows: Vec<String>,
}

/// Prices `job.input` and writes the outputs into `job.out`, where given.
pub fn predict(job: &PredictJob<'_>) -> Result<PredictOutcome, PipelineError> {
    let model = match job.model_dir {
        Some(dir) => Model::load(dir)?,
        None => Model::shipped()?,
    };
    // Only what-ifs move kernels: another GPU, another batch, or the
    // throughput grid (which prices the global batch on other GPU counts,
    // so at other per-GPU batches). A single as-recorded prediction needs none.
    let what_if = job.gpu.is_some()
        || job.batch_size.is_some()
        || asks_another_run(job.half, job.tf32)
        || job.scaling.gpu_counts.len() > 1;
    let op_model = match (job.op_model_file, what_if) {
        (Some(path), _) => Some(OpModel::load(path)?),
        (None, true) => Some(shipped_model()?),
        (None, false) => None,
    };
    let catalog = catalog_or_builtin(job.hardware_dir)?;
    let gpu = job.gpu.map(|query| lookup_gpu(&catalog, query)).transpose()?;
    let mut labels = match job.labels_file {
        Some(path) => Labels::load(path)?,
        None => Labels::default(),
    };
    let scratch = tempfile::tempdir().map_err(|source| PipelineError::Io {
        what: "creating a scratch directory".into(),
        source,
    })?;
    let spec = WindowSpec::new(model.card.window, model.card.stride)?;
    // Also returns the lake, whose kernel names tell a what-if how the
    // recorded run set PyTorch's TF32 switches.
    let featurize_into = |lake: &Path| {
        let out = scratch.path().join("features");
        featurize(lake, &out, spec, job.progress).map(|summary| (out, summary, Some(lake.to_path_buf())))
    };
    let (features_dir, summary, lake_read) = match &job.input {
        PredictInput::Features(dir) => (dir.clone(), FeatureSummary::default(), None),
        PredictInput::Trace(trace) => {
            let lake = scratch.path().join("lake");
            let ingested = ingest(
                std::slice::from_ref(trace),
                &lake,
                &IngestOptions { chunk_bytes: 1 << 30 },
                &Quiet,
            )?;
            if let Some((source, reason)) = ingested.failures.first() {
                return Err(PipelineError::Input {
                    path: PathBuf::from(source),
                    reason: reason.clone(),
                });
            }
            featurize_into(&lake)?
        }
        PredictInput::Lake(lake) => featurize_into(lake)?,
    };
    let used_tf32 = match &lake_read {
        Some(lake) if what_if => Some(crate::tf32_use::used_tf32(lake)?),
        _ => None,
    };
    let no_windows: Vec<String> = summary
        .skipped
        .iter()
        .map(|s| format!("{} ({}): {}", s.source, s.trace_id, s.reason))
        .collect();
    let table = FeatureTable::open(&features_dir)?;
    if table.window_rows() == 0 {
        let input = match &job.input {
            PredictInput::Trace(p) | PredictInput::Lake(p) | PredictInput::Features(p) => p.clone(),
        };
        return Err(PipelineError::Input {
            path: input,
            reason: format!("no windows to predict{}", reasons(&no_windows)),
        });
    }
    if let PredictInput::Trace(trace) = &job.input {
        let sidecar = collector_label(trace)?.unwrap_or_default();
        for step in &table.steps {
            let known = labels.get(&step.trace_id);
            labels.insert(
                &step.trace_id,
                TraceLabel {
                    model: job.trace_facts.model.clone().or(known.model).or(sidecar.model.clone()),
                    batch_size: job.trace_facts.batch_size.or(known.batch_size).or(sidecar.batch_size),
                },
            );
        }
        // Said here, naming the file and the flag: deeper down the trace is
        // only an id in a scratch feature table.
        if job.batch_size.is_some() && table.steps.iter().any(|s| labels.get(&s.trace_id).batch_size.is_none()) {
            return Err(PipelineError::Input {
                path: trace.clone(),
                reason: "the batch size it was recorded with is unknown, so --batch-size has nothing to scale \
                         from: give it with --trace-batch-size N (or in a labels file, or a collector manifest \
                         beside the trace)"
                    .into(),
            });
        }
    }
    let request = PredictRequest {
        model: &model,
        base: job.base,
        idle: job.idle,
        op_model: op_model.as_ref(),
        table: &table,
        labels: &labels,
        catalog: &catalog,
        gpu: gpu.as_ref(),
        batch_size: job.batch_size,
        tf32: job.tf32,
        half: job.half,
        used_tf32: used_tf32.as_ref(),
        scaling: job.scaling.clone(),
        gpu_type: job.gpu_type.clone(),
        profiler_overhead_us: job.profiler_overhead_us,
    };
    let prediction = tracecast_predict::predict(&request)?;
    let files = match job.out {
        Some(out) => write_outputs(&prediction, out)?,
        None => Vec::new(),
    };
    Ok(PredictOutcome {
        prediction,
        files,
        window: model.card.window,
        stride: model.card.stride,
        no_windows,
    })
}

fn reasons(no_windows: &[String]) -> String {
    if no_windows.is_empty() {
        String::new()
    } else {
        format!(": {}", no_windows.join("; "))
    }
}

/// The feature pipeline on `lake` into `out` with default lake options and
/// SQL, run to completion on its own runtime.
pub fn featurize(
    lake: &Path,
    out: &Path,
    spec: WindowSpec,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<FeatureSummary, PipelineError> {
    features(&FeatureRun {
        lake,
        out,
        spec,
        lake_options: LakeOptions::default(),
        sql_dir: None,
        chunk_items: tracecast_features::DEFAULT_CHUNK_ITEMS,
        progress,
    })
}

/// `tracecast features`: the feature pipeline run to completion on its own
/// runtime.
pub fn features(run: &FeatureRun<'_>) -> Result<FeatureSummary, PipelineError> {
    Ok(runtime()?.block_on(build_features(run))?)
}

/// The scratch ingest of one trace reports nothing.
struct Quiet;

impl tracecast_ingest::Progress for Quiet {
    fn start(&self, _: u64, _: u64) {}
    fn file_done(&self, _: u64) {}
}

//! The train stage: feature tables -> LightGBM iteration-time models.
//!
//! [`train`] reads a feature directory, evaluates the window model against
//! three baselines by cross-validation over whole traces, fits the final
//! model on every trace, and writes the model directory with its report.
//! `tracecast predict` (the predict crate) loads the result with [`Model::load`].

mod artifact;
mod booster;
pub mod config;
mod dataset;
mod error;
mod evaluate;
mod export;
mod hardware;
mod labels;
mod metrics;
mod report;
mod split;
mod table;
mod window_order;

use std::path::{Path, PathBuf};

pub use artifact::{BOOSTER_FILE, CARD_FILE, Model, ModelCard, TrainingData};
pub use booster::Regressor;
pub use config::{SplitKind, TrainConfig};
pub use dataset::{Dataset, Rows, Scenario, TraceInfo, batch_scale, build as build_dataset, window_input_names};
pub use error::TrainError;
pub use evaluate::{Evaluation, PREDICTORS};
pub use export::write_parquet;
pub use labels::{Labels, TraceLabel, collector_label};
pub use metrics::Errors;
pub use table::{FeatureTable, StepRow, column_f64};
use tracecast_schemas::features::FORMAT_VERSION as FEATURE_FORMAT_VERSION;
use tracecast_schemas::hardware::Catalog;
use tracecast_schemas::model::{MODEL_FORMAT, MODEL_VERSION};

pub struct TrainRequest<'a> {
    pub features_dir: &'a Path,
    pub out: &'a Path,
    pub config: TrainConfig,
    pub labels_path: Option<&'a Path>,
    pub catalog: &'a Catalog,
    /// Also write the final model's input matrix and fitted label here (Parquet).
    pub export_inputs: Option<&'a Path>,
}

pub struct TrainOutcome {
    pub card: ModelCard,
    pub evaluation: Evaluation,
    /// The terminal summary of the evaluation.
    pub summary: String,
    pub final_fit_seconds: f64,
    pub files: Vec<PathBuf>,
}

/// What the run is doing, for a progress display.
pub enum Progress<'a> {
    Fold { index: usize, count: usize, name: &'a str },
    FinalFit,
}

pub fn train(request: &TrainRequest<'_>, mut progress: impl FnMut(Progress<'_>)) -> Result<TrainOutcome, TrainError> {
    let config = &request.config;
    config.validate().map_err(|reason| TrainError::Config {
        path: PathBuf::from("(flags)"),
        reason,
    })?;
    let table = FeatureTable::open(request.features_dir)?;
    if let Some(w) = config.window.filter(|&w| w != table.window) {
        return Err(shape_mismatch(&table, w, config.stride.unwrap_or(table.stride)));
    }
    if let Some(s) = config.stride.filter(|&s| s != table.stride) {
        return Err(shape_mismatch(&table, config.window.unwrap_or(table.window), s));
    }
    if table.window_rows() == 0 {
        return Err(TrainError::Features {
            path: table.dir.clone(),
            reason:
                "holds no windows: ingest traces with GPU kernels inside their steps, then run `tracecast features`"
                    .into(),
        });
    }
    let labels = match request.labels_path {
        Some(path) => Labels::load(path)?,
        None => Labels::default(),
    };
    let all_inputs = window_input_names(table.window, &[]);
    let unknown: Vec<&String> = config
        .model
        .exclude
        .iter()
        .filter(|e| !all_inputs.contains(e))
        .collect();
    if !unknown.is_empty() {
        return Err(TrainError::Config {
            path: PathBuf::from("model.exclude"),
            reason: format!(
                "{unknown:?} are not inputs of a W={} model (measured columns are never inputs; see model.json's features)",
                table.window
            ),
        });
    }
    let names = window_input_names(table.window, &config.model.exclude);
    let data = dataset::build(&table, &names, &labels, request.catalog, Scenario::default(), true)?;
    let evaluation = evaluate::evaluate(&data, config, |index, count, name| {
        progress(Progress::Fold { index, count, name })
    })?;
    if let Some(path) = request.export_inputs {
        export::write_inputs(path, &data.windows, config.model.target_transform)?;
    }
    progress(Progress::FinalFit);
    let regressor = Regressor::fit(&data.windows, config)?;
    let gains = regressor.importance()?;
    let mut importance: Vec<(String, f64)> = names.iter().cloned().zip(gains.iter().copied()).collect();
    importance.sort_by(|a, b| b.1.total_cmp(&a.1));

    let card = ModelCard {
        format: MODEL_FORMAT.to_string(),
        format_version: MODEL_VERSION,
        tracecast_version: env!("CARGO_PKG_VERSION").to_string(),
        feature_format_version: FEATURE_FORMAT_VERSION,
        window: table.window,
        stride: table.stride,
        features: names.clone(),
        target_transform: config.model.target_transform,
        split: config.split.clone(),
        lightgbm: config.lightgbm.clone(),
        training_data: training_data(&table, &data, request.labels_path),
        metrics: evaluation.predictors.clone(),
        window_span_only: evaluation.window_span_only,
    };
    let final_fit_seconds = regressor.fit_seconds;
    let model = Model { card, regressor };
    model.save(request.out)?;
    let out = request.out;
    let write = |name: &str, text: String| -> Result<PathBuf, TrainError> {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|source| TrainError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    };
    let mut files = vec![out.join(CARD_FILE), out.join(BOOSTER_FILE)];
    files.push(write(
        "report.md",
        report::markdown(&model.card, &evaluation, &importance),
    )?);
    files.push(write(
        "metrics.json",
        report::metrics_json(&model.card, &evaluation, final_fit_seconds),
    )?);
    files.push(write("importance.csv", report::importance_csv(&importance))?);
    let points: Vec<(f64, f64)> = evaluation
        .steps
        .iter()
        .filter_map(|s| Some((s.measured_ns / 1e6, s.predicted_ns[0]? / 1e6)))
        .collect();
    let scatter = out.join("scatter.svg");
    tracecast_charts::scatter(
        &scatter,
        &tracecast_charts::Scatter {
            title: &format!("held-out steps, {} split", evaluation.split),
            quantity: "step time (ms)",
            series: &[tracecast_charts::Series {
                name: "steps",
                points: &points,
            }],
        },
    )?;
    let chart = out.join("importance.svg");
    tracecast_charts::ranked_shares(
        &chart,
        "window model: top inputs by gain",
        "share of total gain (%)",
        &names,
        &gains,
        25,
    )?;
    files.extend([scatter, chart]);
    Ok(TrainOutcome {
        summary: report::summary(&evaluation),
        card: model.card,
        evaluation,
        final_fit_seconds,
        files,
    })
}

fn shape_mismatch(table: &FeatureTable, w: usize, s: usize) -> TrainError {
    TrainError::Features {
        path: table.dir.clone(),
        reason: format!(
            "built with W={} S={}, and the config asks for W={w} S={s}: run `tracecast features --window {w} --stride {s}` \
             into another directory, or drop window/stride from the config",
            table.window, table.stride
        ),
    }
}

fn training_data(table: &FeatureTable, data: &Dataset, labels: Option<&Path>) -> TrainingData {
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v.dedup();
        v
    };
    TrainingData {
        features_dir: table.dir.display().to_string(),
        content_hash: table.content_hash.clone(),
        labels: labels.map(|p| p.display().to_string()),
        traces: data.traces.len(),
        steps: data.steps.len(),
        windows: data.windows.len(),
        gpus: sorted(data.traces.iter().filter_map(|t| t.priced_gpu.clone()).collect()),
        models: sorted(data.traces.iter().filter_map(|t| t.label.model.clone()).collect()),
    }
}

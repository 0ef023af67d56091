use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use tracecast_train::config::{SplitKind, TargetTransform};
use tracecast_train::{Progress, TrainConfig, TrainRequest, train};

use crate::progress::Ui;

/// Train a LightGBM iteration-time model on a feature table, and evaluate it.
///
/// The model predicts each window's target (the wall time of its S central
/// kernels) from the window's operator and kernel features and the GPU's
/// figures (hardware profile), never from measured times; a step's
/// prediction is the sum of its windows plus the step's remainder.
///
/// Evaluation is cross-validation over whole traces: each fold's traces are
/// predicted by a model trained on the others, and compared with three
/// baselines (per-kernel model without context, sum of kernel durations,
/// mean step time of the same model's training traces). Then the final model
/// is fitted on every trace.
///
/// OUT gets model.txt (LightGBM's text model), model.json (inputs, W/S,
/// split, data hash, metrics), report.md, metrics.json, scatter.svg and
/// importance.svg. Formats: schemas/FORMATS.md ("Model directory").
///
/// Splits: random (traces into --folds folds), by-model (one fold per model
/// name; names come from --labels), by-batch (per batch size, from --labels),
/// by-gpu (per GPU type).
///
/// Examples:
///   tracecast train --features features --out model
///   tracecast train --features features --labels labels.csv --split by-model --out model-bymodel
///   tracecast train --features features --config train.toml --num-iterations 500 --out model
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct TrainArgs {
    /// The feature directory (`tracecast features --out`).
    #[arg(long)]
    features: PathBuf,
    /// The model directory to write (created; files in it are replaced).
    #[arg(long)]
    out: PathBuf,
    /// TOML config: window/stride, [split], [model], [lightgbm] (schemas/FORMATS.md "Train config"). Flags override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// CSV of trace labels: trace_id,model,batch_size (model names for by-model, batch sizes for by-batch and what-ifs).
    #[arg(long)]
    labels: Option<PathBuf>,
    /// Hardware profiles directory [default: the built-in catalog, fixtures/hardware].
    #[arg(long, value_name = "DIR")]
    hardware: Option<PathBuf>,
    /// Evaluation split [default: random].
    #[arg(long, value_enum)]
    split: Option<SplitArg>,
    /// Folds of the random split [default: 5].
    #[arg(long)]
    folds: Option<usize>,
    /// Evaluate only this group of the split (a model name, batch size or GPU); repeatable.
    #[arg(long)]
    holdout: Vec<String>,
    /// Seed of the random split and of LightGBM [default: 42].
    #[arg(long)]
    seed: Option<u64>,
    /// Boosting rounds [default: 300].
    #[arg(long)]
    num_iterations: Option<u32>,
    /// Learning rate [default: 0.05].
    #[arg(long)]
    learning_rate: Option<f64>,
    /// Leaves per tree [default: 63].
    #[arg(long)]
    num_leaves: Option<u32>,
    /// Target transform: roofline fits the ratio to a roofline estimate (carries GPU and batch what-ifs), log the log time, none the time [default: log].
    #[arg(long, value_enum)]
    target: Option<TargetArg>,
    /// LightGBM threads [default: one per core].
    #[arg(long)]
    threads: Option<u32>,
    /// Also write the final model's inputs and fitted label as Parquet (one column per input).
    #[arg(long, value_name = "FILE")]
    export_inputs: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum SplitArg {
    Random,
    ByModel,
    ByBatch,
    ByGpu,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TargetArg {
    Roofline,
    Log,
    None,
}

fn config(args: &TrainArgs) -> anyhow::Result<TrainConfig> {
    let mut config = match &args.config {
        Some(path) => TrainConfig::load(path)?,
        None => TrainConfig::default(),
    };
    if let Some(split) = args.split {
        config.split.kind = match split {
            SplitArg::Random => SplitKind::Random,
            SplitArg::ByModel => SplitKind::ByModel,
            SplitArg::ByBatch => SplitKind::ByBatch,
            SplitArg::ByGpu => SplitKind::ByGpu,
        };
    }
    if let Some(folds) = args.folds {
        config.split.folds = folds;
    }
    if !args.holdout.is_empty() {
        config.split.holdout = args.holdout.clone();
    }
    if let Some(seed) = args.seed {
        config.split.seed = seed;
        config.lightgbm.seed = seed;
    }
    let l = &mut config.lightgbm;
    l.num_iterations = args.num_iterations.unwrap_or(l.num_iterations);
    l.learning_rate = args.learning_rate.unwrap_or(l.learning_rate);
    l.num_leaves = args.num_leaves.unwrap_or(l.num_leaves);
    l.num_threads = args.threads.unwrap_or(l.num_threads);
    if let Some(target) = args.target {
        config.model.target_transform = match target {
            TargetArg::Roofline => TargetTransform::Roofline,
            TargetArg::Log => TargetTransform::Log,
            TargetArg::None => TargetTransform::None,
        };
    }
    Ok(config)
}

pub fn run(args: TrainArgs, ui: &Ui) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let config = config(&args)?;
    let catalog = crate::hardware::catalog(args.hardware.as_deref())?;
    let request = TrainRequest {
        features_dir: &args.features,
        out: &args.out,
        config,
        labels_path: args.labels.as_deref(),
        catalog: &catalog,
        export_inputs: args.export_inputs.as_deref(),
    };
    let bar = ui.bar(0, "training", false);
    let outcome = train(&request, |progress| match progress {
        Progress::Fold { index, count, name } => {
            bar.set_length(count as u64 + 1);
            bar.set_position(index as u64);
            bar.set_message(format!("evaluating: {name}"));
        }
        Progress::FinalFit => {
            bar.inc(1);
            bar.set_message("final model on every trace");
        }
    })
    .with_context(|| format!("training on {}", args.features.display()))?;
    bar.finish_and_clear();
    let d = &outcome.card.training_data;
    println!(
        "trained W={} S={} on {} traces, {} steps, {} windows ({} inputs); {} split, {} folds; final fit {:.2} s, total {:.1} s",
        outcome.card.window,
        outcome.card.stride,
        d.traces,
        d.steps,
        d.windows,
        outcome.card.features.len(),
        outcome.evaluation.split,
        outcome.evaluation.folds.len(),
        outcome.final_fit_seconds,
        started.elapsed().as_secs_f64()
    );
    print!("{}", outcome.summary);
    println!("wrote {}:", args.out.display());
    for file in &outcome.files {
        println!("  {}", file.display());
    }
    Ok(ExitCode::SUCCESS)
}

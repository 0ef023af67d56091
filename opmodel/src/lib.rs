//! The op-model stage: an operator's time on any GPU from its work and the
//! GPU's spec sheet (roofline physics; LightGBM learns the utilisation),
//! trained on public measurements (NeuSight, ETS) and used to price traces
//! on other GPUs and batch sizes.

pub mod architectures;
mod autocast;
mod by_kind;
mod collect;
mod csvio;
mod error;
pub mod ets;
mod ets_by_kind;
mod ets_codes;
mod ets_predict;
mod evaluate;
pub mod features;
mod forest;
pub mod gpu;
pub mod graph;
mod model;
pub mod neusight;
mod plots;
mod price;
mod report;
mod scored;
mod shipped;
mod sweep;
mod tables;
mod tensor_cores;
pub mod work;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use tracecast_schemas::hardware::{Catalog, builtin_catalog};

pub use collect::{Collected, GpuTable};
pub use error::OpModelError;
pub use features::Timing;
pub use gpu::GpuSpec;
pub use model::{FitParams, MODEL_FORMAT, MODEL_VERSION, ModelCard, OpModel, Sample};
pub use price::{ModelPrice, Optimizer, PriceJob, PricedPass, price_model};
pub use scored::{Evaluation, Scored};
pub use shipped::shipped_model;
pub use sweep::{SweepResult, sweep};
pub use tables::public_tables;
pub use work::{EwFunc, HalfType, OpKind, OpWork, Pass, Tf32Path, bfloat16_emulated_note};

/// The GPUs of the directories: their `neusight/device_configs` spec sheets
/// by NeuSight key, and the GPU of each `ets/datasets` folder by folder name
/// (from those sheets, else the built-in profiles).
pub fn spec_sheets(dirs: &[&Path]) -> Result<GpuTable, OpModelError> {
    let catalog = builtin_catalog()?;
    let mut all: BTreeMap<String, GpuSpec> = BTreeMap::new();
    for dir in dirs {
        for (k, mut v) in neusight::read_spec_sheets(&dir.join("neusight"))? {
            // A sheet gives float32 rates only; 16-bit rows need the tensor
            // cores' (the trees read float32 figures alone).
            if let Some(full) = GpuSpec::builtin(&catalog, &v.name) {
                v.fill_missing_rates(&full);
            }
            all.entry(k).or_insert(v);
        }
    }
    let mut gpus = GpuTable::from_map(&all);
    add_label_folder_gpus(&mut gpus, dirs, &catalog);
    ets::add_folder_gpus(&mut gpus, dirs, &catalog);
    Ok(gpus)
}

/// A label folder without a spec sheet (`NVIDIA_H100_80GB_HBM3`) is looked
/// up among the built-in hardware profiles by its name, underscores as
/// spaces, so that its labels are still priced.
fn add_label_folder_gpus(gpus: &mut GpuTable, dirs: &[&Path], catalog: &Catalog) {
    for dir in dirs {
        for folder in csvio::subfolders(&dir.join("neusight/label")) {
            if gpus.get(&folder).is_some() {
                continue;
            }
            match GpuSpec::builtin(catalog, &folder.replace('_', " ")) {
                Some(spec) => {
                    tracing::info!(folder, profile = spec.name, "no spec sheet: using the built-in profile");
                    gpus.insert(&folder, spec);
                }
                None => tracing::warn!(
                    folder,
                    "no spec sheet and no built-in profile: its labels are not priced"
                ),
            }
        }
    }
}

/// A model fitted on the NeuSight measurements under `roots` (directories
/// laid out like `../shared/public`), leaving out the GPUs in `holdout`.
pub fn train_public(
    roots: &[&Path],
    gpus: &GpuTable,
    holdout: &[String],
    params: &FitParams,
) -> Result<(OpModel, Collected), OpModelError> {
    let holdout: BTreeSet<String> = holdout.iter().cloned().collect();
    let mut collected = Collected::default();
    for root in roots {
        // A mistyped directory must not train silently on nothing.
        tables::check_public_layout(root)?;
        collected.extend(collect::collect(root, gpus, &holdout)?);
    }
    let mut sources = collected.sources.clone();
    if !holdout.is_empty() {
        sources.push(format!(
            "held out: {}",
            holdout.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let model = OpModel::fit(&collected.samples, &gpus.specs, params, sources)?;
    Ok((model, collected))
}

/// `tracecast ops train`: the spec sheets of `roots`, a fit on their
/// measurements less `holdout`'s, the model saved to `out`.
pub fn train_to_file(
    roots: &[&Path],
    holdout: &[String],
    params: &FitParams,
    out: &Path,
) -> Result<(OpModel, Collected), OpModelError> {
    let gpus = spec_sheets(roots)?;
    let (model, collected) = train_public(roots, &gpus, holdout, params)?;
    model.save(out)?;
    Ok((model, collected))
}

/// One run of the public benchmark: what it predicted, wrote and scored.
pub struct PublicRun {
    pub model: OpModel,
    pub collected: Collected,
    pub evaluation: Evaluation,
    pub fit_seconds: f64,
    /// How fast the model prices operators, where asked for.
    pub speed: Option<Speed>,
    /// Markdown error tables (where the evaluation set kept measurements).
    pub report: String,
    /// Every scored label beside NeuSight's own prediction (markdown; empty
    /// where the evaluation set kept no end-to-end latencies).
    pub per_configuration: String,
}

pub struct PublicOptions {
    pub train: PathBuf,
    /// More directories whose NeuSight measurements are trained on too (their
    /// spec sheets join the GPU table); graphs and ETS come from `train` alone.
    pub extra_train: Vec<PathBuf>,
    pub eval: PathBuf,
    pub out: PathBuf,
    pub params: FitParams,
    /// GPUs (NeuSight keys, ETS folders) whose measurements are not trained on.
    pub holdout: Vec<String>,
    /// Predict only these GPUs of the evaluation set (all when empty).
    pub only: Vec<String>,
    /// Time a million predictions too (`speed`); a sweep's folds do not.
    pub measure_speed: bool,
    /// The evaluation set's per-op rows ran on 16-bit tensors (its
    /// end-to-end labels and ETS files are then left out: `ops price
    /// --precision` prices a model under autocast).
    pub half: Option<HalfType>,
}

/// Train on `train`, predict everything in `eval`, write the prediction
/// files into `out`, and score them where `eval` holds measurements.
pub fn run_public(opts: &PublicOptions) -> Result<PublicRun, OpModelError> {
    let mut dirs: Vec<&Path> = vec![&opts.train, &opts.eval];
    dirs.extend(opts.extra_train.iter().map(PathBuf::as_path));
    let gpus = spec_sheets(&dirs)?;
    let mut roots: Vec<&Path> = vec![&opts.train];
    roots.extend(opts.extra_train.iter().map(PathBuf::as_path));
    let started = Instant::now();
    let (model, collected) = train_public(&roots, &gpus, &opts.holdout, &opts.params)?;
    let fit_seconds = started.elapsed().as_secs_f64();
    let calibration = ets_predict::calibrate(&model, &opts.train, &gpus, &opts.holdout)?;
    let mut evaluation = evaluate::evaluate(
        &model,
        &calibration,
        &opts.train,
        &opts.eval,
        &gpus,
        &opts.out,
        &evaluate::Scope {
            only: &opts.only,
            half: opts.half,
        },
    )?;
    let report = report::markdown(&evaluation.scored, &[&opts.eval, &opts.train])
        + &report::by_kind(&evaluation.by_kind)
        + &ets_by_kind::report(&evaluation.ets_by_kind);
    let per_configuration = report::per_configuration(&evaluation.scored, &[&opts.eval, &opts.train]);
    let report_path = opts.out.join("report.md");
    std::fs::write(&report_path, format!("{report}\n{per_configuration}")).map_err(scored::write_err(&report_path))?;
    evaluation.files.push(report_path);
    let speed = if opts.measure_speed {
        Some(speed(&model, &collected, &gpus)?)
    } else {
        None
    };
    Ok(PublicRun {
        model,
        collected,
        evaluation,
        fit_seconds,
        speed,
        report,
        per_configuration,
    })
}

/// Operators in the speed measurement.
const SPEED_OPS: usize = 1_000_000;

/// Prediction speed: operators priced in one call, inputs built included.
#[derive(Clone, Debug, Default)]
pub struct Speed {
    pub operators: usize,
    /// Seconds on the GPUs each was measured on (trained GPUs).
    pub trained_seconds: f64,
    /// The same operators on a GPU it never trained on (its guards price
    /// them on trained GPUs too, `OpModel::predict_us`); `None` where the
    /// GPU table has no such GPU.
    pub unseen: Option<UnseenSpeed>,
}

/// The speed measurement's run on a GPU the model never trained on.
#[derive(Clone, Debug)]
pub struct UnseenSpeed {
    pub gpu: String,
    pub seconds: f64,
    /// Of the training operators, the share the floor priced there (`OpModel::floored_share`).
    pub floored_share: f64,
}

/// The training operators, repeated to a million, priced in one call on
/// their own GPUs, then on the first GPU of the table the model did not
/// train on.
fn speed(model: &OpModel, collected: &Collected, gpus: &GpuTable) -> Result<Speed, OpModelError> {
    if collected.samples.is_empty() {
        return Ok(Speed::default());
    }
    let works = || collected.samples.iter().cycle().take(SPEED_OPS);
    let timed = |pairs: &[(OpWork, &GpuSpec)]| -> Result<f64, OpModelError> {
        let started = Instant::now();
        model.predict_us(pairs, Timing::Workload)?;
        Ok(started.elapsed().as_secs_f64())
    };
    let pairs: Vec<(OpWork, &GpuSpec)> = works().map(|s| (s.work, &gpus.specs[s.gpu])).collect();
    let trained_seconds = timed(&pairs)?;
    let new = gpus.specs.iter().find(|g| !model.knows_figures_of(g));
    let unseen = match new {
        Some(g) => {
            let pairs: Vec<(OpWork, &GpuSpec)> = works().map(|s| (s.work, g)).collect();
            // The share over the training operators once each, not over
            // their repeats: the floor is not run a second time on the million.
            let distinct: Vec<(OpWork, &GpuSpec)> = collected.samples.iter().map(|s| (s.work, g)).collect();
            Some(UnseenSpeed {
                gpu: g.name.clone(),
                seconds: timed(&pairs)?,
                floored_share: model.floored_share(&distinct, Timing::Workload),
            })
        }
        None => None,
    };
    Ok(Speed {
        operators: pairs.len(),
        trained_seconds,
        unseen,
    })
}

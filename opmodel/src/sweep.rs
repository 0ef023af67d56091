//! Leave-one-GPU-out over a directory laid out like `../shared/public`:
//! for each GPU, fit without its measurements (NeuSight's and, for the same
//! GPU, ETS's), predict only it from its spec sheet, and score; then each
//! ETS folder alone (fit on the other GPU's ETS files) and ETS's batch
//! what-if: fit without the largest batch's files, predict them; then each
//! model of NeuSight's labels alone (its graphs not trained on); then, in
//! NeuSight's own setting, every GPU trained on and the per-op test shapes
//! predicted.

use std::path::{Path, PathBuf};

use crate::ets::read_ets_dir;
use crate::model::FitParams;
use crate::neusight::read_labels;
use crate::scored::{Scored, write_err};
use crate::{OpModelError, PublicOptions, report, run_public, spec_sheets};

pub struct SweepResult {
    /// One line per held-out unit: its name, fit seconds, predicted ops.
    pub runs: Vec<(String, f64, usize)>,
    /// Held-out GPUs, ETS folders and batches.
    pub scored: Vec<Scored>,
    /// Held-out models.
    pub model_scored: Vec<Scored>,
    /// Per-op test rows predicted with every GPU trained on.
    pub trained_perop: Vec<Scored>,
    pub report: String,
    /// Every held-out GPU's labels, one row each, beside NeuSight's own prediction.
    pub per_configuration: String,
    /// Where each held-out GPU's end-to-end time goes, per kind and pass.
    pub by_kind: String,
    /// What it wrote into `out` besides each fold's folder: `sweep.md`
    /// (`report`), `per_configuration.md`, `by_kind.md`, and the charts of
    /// every held-out prediction against its measurement.
    pub files: Vec<PathBuf>,
}

/// `progress` is called with each held-out GPU before its fit.
/// `extra` directories' NeuSight measurements are trained on in every fold;
/// each of their label GPUs is then held out in turn too (its measurements
/// out of training, its labels and per-op rows predicted from its spec
/// sheet), so that GPUs `dir` lacks get a row of their own.
pub fn sweep(
    dir: &Path,
    extra: &[PathBuf],
    out: &Path,
    params: &FitParams,
    progress: &dyn Fn(&str),
) -> Result<SweepResult, OpModelError> {
    let mut dirs = vec![dir];
    dirs.extend(extra.iter().map(PathBuf::as_path));
    let gpus = spec_sheets(&dirs)?;
    // Units: every NeuSight label GPU, with the ETS folders recorded on it
    // (a GPU never seen is unseen in both); then every ETS folder on its own
    // (ETS's cross-GPU question: its other GPU's files, NeuSight's
    // measurements kept).
    let mut units: Vec<Vec<String>> = Vec::new();
    let keys = label_gpus(dir)?;
    let ets_files = read_ets_dir(dir)?;
    let ets_folders: Vec<String> = {
        let mut f: Vec<String> = ets_files.iter().map(|f| f.gpu_folder.clone()).collect();
        f.sort();
        f.dedup();
        f
    };
    let mut covered: Vec<&String> = Vec::new();
    for key in &keys {
        if covered.contains(&key) {
            continue;
        }
        // GPUs with the same spec figures (A100 PCIe and SXM4 40GB, MI210
        // and MI250) are one GPU to the model: held out together.
        // An ETS folder's GPU may have rates its spec sheet lacks filled in.
        let twin = |k: &String| k == key || gpus.spec(k).zip(gpus.spec(key)).is_some_and(|(a, b)| a.same_figures(b));
        let twins: Vec<&String> = keys.iter().filter(|k| twin(k)).collect();
        covered.extend(twins.iter().copied());
        let mut unit: Vec<String> = twins.into_iter().cloned().collect();
        unit.extend(ets_folders.iter().filter(|f| twin(f)).cloned());
        units.push(unit);
    }
    units.extend(ets_folders.iter().map(|f| vec![f.clone()]));
    // ETS's batch what-if: fit on the smaller batches, predict the largest.
    if let Some(largest) = ets_files.iter().max_by_key(|f| f.batch) {
        units.push(vec![largest.batch_key()]);
    }
    // Then every model of the labels on its own: its graphs' per-node
    // latencies left out, its labels predicted on every GPU (a model never
    // seen, on GPUs that were).
    let mut models: Vec<String> = read_labels(&dir.join("neusight"))?
        .iter()
        .filter(|l| l.option.is_empty())
        .map(|l| l.model_key())
        .collect();
    models.sort();
    models.dedup();
    units.extend(models.iter().map(|m| vec![m.clone()]));
    let mut result = SweepResult {
        runs: Vec::new(),
        scored: Vec::new(),
        model_scored: Vec::new(),
        trained_perop: Vec::new(),
        report: String::new(),
        per_configuration: String::new(),
        by_kind: String::new(),
        files: Vec::new(),
    };
    let mut by_kind = Vec::new();
    let mut ets_by_kind = Vec::new();
    // One fit: `held` out of training (nothing when empty), only it
    // predicted from `eval`, its files under `out/name`.
    let fold = |eval: &Path, name: &str, held: &[String]| {
        run_public(&PublicOptions {
            train: dir.to_path_buf(),
            extra_train: extra.to_vec(),
            eval: eval.to_path_buf(),
            out: out.join(name),
            params: params.clone(),
            holdout: held.to_vec(),
            only: held.to_vec(),
            measure_speed: false,
            half: None,
        })
    };
    for unit in units {
        progress(&unit.join(" + "));
        let run = fold(dir, &unit[0], &unit).map_err(|e| nothing_left(e, dir, &unit.join(" + ")))?;
        result
            .runs
            .push((unit.join(" + "), run.fit_seconds, run.evaluation.ops_predicted));
        let held = unit.join(" + ");
        ets_by_kind.extend(run.evaluation.ets_by_kind.into_iter().map(|mut k| {
            k.file = format!("{} (held out: {held})", k.file);
            k
        }));
        let scored = run.evaluation.scored.into_iter().map(|mut s| {
            if s.set == "ets" {
                s.group = format!("{} (held out: {held})", s.group);
            }
            s
        });
        if models.contains(&unit[0]) {
            result.model_scored.extend(scored);
        } else {
            result.scored.extend(scored);
            by_kind.extend(run.evaluation.by_kind);
        }
    }
    // The extra directories' GPUs, each held out in turn.
    for extra_dir in extra {
        for key in label_gpus(extra_dir)? {
            progress(&key);
            let run =
                fold(extra_dir, &key, std::slice::from_ref(&key)).map_err(|e| nothing_left(e, extra_dir, &key))?;
            result.runs.push((key, run.fit_seconds, run.evaluation.ops_predicted));
            result.scored.extend(run.evaluation.scored);
            by_kind.extend(run.evaluation.by_kind);
        }
    }
    // NeuSight's own setting: every GPU trained on, the per-op test shapes
    // (none of which the fit saw) predicted.
    let every = "nothing (every GPU trained on)";
    progress(every);
    let run = fold(dir, "every-gpu", &[])?;
    result
        .runs
        .push((every.to_string(), run.fit_seconds, run.evaluation.ops_predicted));
    result
        .trained_perop
        .extend(run.evaluation.scored.into_iter().filter(|s| s.set == "perop"));
    let by_model = report::markdown(&result.model_scored, &[dir])
        .replace("### End-to-end error", "### Leave one model out: end-to-end error");
    // Without measured per-op test rows (a directory of ETS files alone) there is no such table.
    let trained = if result.trained_perop.iter().any(|s| s.measured_ms.is_some()) {
        let tables = report::markdown(&result.trained_perop, &[dir])
            .replace("### Per-operator", "### Every GPU trained on: per-operator");
        format!(
            "\nNeuSight's own setting: every GPU trained on (its per-op training rows, graphs and \
             ETS files), the per-op test shapes predicted; none of them is a training row. \
             NeuSight's columns are its own published per-op errors (`summary/perop.csv`), in and \
             out of its training distribution.\n\n{tables}"
        )
    } else {
        String::new()
    };
    result.report = format!(
        "{}\nEach model's graphs left out of training, its labels predicted on every GPU \
         (the GPUs' own measurements kept): a model never seen, on a GPU that was.\n\n{by_model}{trained}",
        report::markdown(&result.scored, &[dir]),
    );
    result.per_configuration = format!(
        "Leave one GPU out: each label predicted by an op model that never trained on its GPU \
         (`tracecast ops sweep`); NeuSight's figures are its own, from `summary/summary.csv`.\n\n{}",
        report::per_configuration(&result.scored, &[dir])
    );
    result.by_kind = format!(
        "Leave one GPU out (`tracecast ops sweep`): each GPU's labels predicted by an op model that \
         never trained on it, against the latencies NeuSight measured for the same graph nodes on \
         that GPU.\n\n{}{}",
        report::by_kind(&by_kind),
        crate::ets_by_kind::report(&ets_by_kind)
    );
    for (name, text) in [
        ("sweep.md", &result.report),
        ("per_configuration.md", &result.per_configuration),
        ("by_kind.md", &result.by_kind),
    ] {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(write_err(&path))?;
        result.files.push(path);
    }
    let charts = crate::plots::write(out, &result.scored, "each held out of training")?;
    result.files.extend(charts);
    Ok(result)
}

/// A fold that holds out everything measured: say which, and what a sweep needs.
fn nothing_left(e: OpModelError, dir: &Path, held: &str) -> OpModelError {
    match e {
        OpModelError::NothingToFit => OpModelError::Layout {
            path: dir.to_path_buf(),
            reason: format!(
                "holding out {held} leaves no measured operator to train on: a sweep needs \
                 measurements of two GPUs or more (add another directory with --extra)"
            ),
        },
        e => e,
    }
}

/// The GPUs with end-to-end labels under `dir`, sorted, once each.
fn label_gpus(dir: &Path) -> Result<Vec<String>, OpModelError> {
    let mut keys: Vec<String> = read_labels(&dir.join("neusight"))?.into_iter().map(|l| l.gpu).collect();
    keys.sort();
    keys.dedup();
    Ok(keys)
}

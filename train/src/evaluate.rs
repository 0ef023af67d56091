//! Honest evaluation: every trace is predicted by models that never saw it
//! (one pair of models per fold), and compared with three baselines.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::TrainError;
use crate::booster::Regressor;
use crate::config::{SplitKind, TrainConfig};
use crate::dataset::Dataset;
use crate::metrics::{Errors, errors};
use crate::split::{Fold, folds};

/// The predictors compared, in report order: ours first.
pub const PREDICTORS: [(&str, &str); 4] = [
    (
        "window model",
        "LightGBM over windows of W items (this model): sum of the step's window predictions plus the step's remainder",
    ),
    (
        "per-kernel model",
        "LightGBM over single items with no window context (the operator-based approach): sum of item predictions plus the remainder",
    ),
    (
        "kernel sum",
        "sum of the step's measured kernel and copy durations, no gaps (what a trace viewer's busy time says)",
    ),
    (
        "training mean",
        "mean step time of the training traces with the same model name (none without a label or such a trace)",
    ),
];

/// Out-of-fold predictions of one step.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepOutcome {
    pub trace_id: String,
    pub step_id: i64,
    pub fold: String,
    pub model: Option<String>,
    pub measured_ns: f64,
    pub gpu_span_ns: f64,
    pub remainder_ns: f64,
    /// Sum of the step's window predictions (GPU span only, no remainder).
    pub window_span_ns: f64,
    /// One prediction per entry of [`PREDICTORS`]; None where the predictor has none.
    pub predicted_ns: [Option<f64>; 4],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FoldOutcome {
    pub name: String,
    pub test_traces: usize,
    pub train_windows: usize,
    pub test_windows: usize,
    pub fit_seconds: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PredictorErrors {
    pub name: String,
    pub per_step: Option<Errors>,
    pub per_trace: Option<Errors>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupErrors {
    pub model: String,
    pub traces: usize,
    pub steps: usize,
    /// Per-step MRE of each predictor.
    pub mre: [Option<f64>; 4],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Evaluation {
    pub split: String,
    pub folds: Vec<FoldOutcome>,
    pub predictors: Vec<PredictorErrors>,
    /// The window model on the GPU span alone (no measured remainder added).
    pub window_span_only: Option<Errors>,
    pub by_model: Vec<GroupErrors>,
    pub steps: Vec<StepOutcome>,
}

impl Evaluation {
    /// Which baselines the window model beats on per-step MRE, and which it does not.
    pub fn verdicts(&self) -> Vec<(String, bool, f64, f64)> {
        let ours = self.predictors[0].per_step.map(|e| e.mre);
        self.predictors[1..]
            .iter()
            .filter_map(|p| {
                let theirs = p.per_step?.mre;
                let ours = ours?;
                Some((p.name.clone(), ours < theirs, ours, theirs))
            })
            .collect()
    }
}

pub fn evaluate(
    data: &Dataset,
    config: &TrainConfig,
    mut on_fold: impl FnMut(usize, usize, &str),
) -> Result<Evaluation, TrainError> {
    let folds = folds(&config.split, &data.traces)?;
    let mut window_pred = vec![f64::NAN; data.windows.len()];
    let mut item_pred = vec![f64::NAN; data.items.len()];
    let mut fold_of_trace: HashMap<usize, usize> = HashMap::new();
    let mut outcomes = Vec::new();
    for (f, fold) in folds.iter().enumerate() {
        on_fold(f, folds.len(), &fold.name);
        let mut in_test = vec![false; data.traces.len()];
        for &t in &fold.test {
            in_test[t] = true;
        }
        let test = |t: u32| in_test[t as usize];
        let train_w = data.windows.subset(|i| !test(data.windows.trace[i]));
        let test_idx: Vec<usize> = (0..data.windows.len())
            .filter(|&i| test(data.windows.trace[i]))
            .collect();
        if train_w.is_empty() {
            continue;
        }
        let model = Regressor::fit(&train_w, config)?;
        let pred = model.predict(&data.windows.subset(|i| test(data.windows.trace[i])))?;
        for (&i, p) in test_idx.iter().zip(pred) {
            window_pred[i] = p;
        }
        let train_i = data.items.subset(|i| !test(data.items.trace[i]));
        let item_idx: Vec<usize> = (0..data.items.len()).filter(|&i| test(data.items.trace[i])).collect();
        let kernel_model = Regressor::fit(&train_i, config)?;
        let pred = kernel_model.predict(&data.items.subset(|i| test(data.items.trace[i])))?;
        for (&i, p) in item_idx.iter().zip(pred) {
            item_pred[i] = p;
        }
        for &t in &fold.test {
            fold_of_trace.insert(t, f);
        }
        outcomes.push(FoldOutcome {
            name: fold.name.clone(),
            test_traces: fold.test.len(),
            train_windows: train_w.len(),
            test_windows: test_idx.len(),
            fit_seconds: model.fit_seconds,
        });
    }
    let steps = step_outcomes(data, &folds, &fold_of_trace, &window_pred, &item_pred);
    Ok(summarise(config.split.kind, outcomes, steps))
}

fn step_outcomes(
    data: &Dataset,
    folds: &[Fold],
    fold_of_trace: &HashMap<usize, usize>,
    window_pred: &[f64],
    item_pred: &[f64],
) -> Vec<StepOutcome> {
    // Sums per (trace, step): window predictions, measured busy time, item predictions.
    let mut sums: HashMap<(u32, i64), [f64; 3]> = HashMap::new();
    let w = &data.windows;
    for (i, pred) in window_pred.iter().enumerate() {
        let e = sums.entry((w.trace[i], w.step[i])).or_default();
        e[0] += pred;
        e[1] += w.busy_ns[i];
    }
    for (i, pred) in item_pred.iter().enumerate() {
        sums.entry((data.items.trace[i], data.items.step[i])).or_default()[2] += pred;
    }
    // Mean step time per model name over each fold's training traces.
    let mut by_model: HashMap<&str, Vec<(usize, f64)>> = HashMap::new();
    for s in &data.steps {
        let Some(t) = data.trace_index(&s.trace_id) else {
            continue;
        };
        if let Some(m) = data.traces[t].label.model.as_deref() {
            by_model.entry(m).or_default().push((t, s.dur_ns as f64));
        }
    }
    let mut out = Vec::new();
    for s in &data.steps {
        let Some(t) = data.trace_index(&s.trace_id) else {
            continue;
        };
        let Some(&f) = fold_of_trace.get(&t) else { continue };
        let Some(sum) = sums.get(&(t as u32, s.step_id)) else {
            continue;
        };
        let model = data.traces[t].label.model.clone();
        let train_mean = model.as_deref().and_then(|m| {
            let train: Vec<f64> = by_model[m]
                .iter()
                .filter(|(other, _)| !folds[f].test.contains(other))
                .map(|&(_, d)| d)
                .collect();
            (!train.is_empty()).then(|| train.iter().sum::<f64>() / train.len() as f64)
        });
        let remainder = s.remainder_ns as f64;
        out.push(StepOutcome {
            trace_id: s.trace_id.clone(),
            step_id: s.step_id,
            fold: folds[f].name.clone(),
            model,
            measured_ns: s.dur_ns as f64,
            gpu_span_ns: s.gpu_span_ns as f64,
            remainder_ns: remainder,
            window_span_ns: sum[0],
            predicted_ns: [
                Some(sum[0] + remainder),
                Some(sum[2] + remainder),
                Some(sum[1]),
                train_mean,
            ],
        });
    }
    out
}

fn summarise(kind: SplitKind, folds: Vec<FoldOutcome>, steps: Vec<StepOutcome>) -> Evaluation {
    let predictors = PREDICTORS
        .iter()
        .enumerate()
        .map(|(k, (name, _))| PredictorErrors {
            name: name.to_string(),
            per_step: errors(steps.iter().filter_map(|s| Some((s.predicted_ns[k]?, s.measured_ns)))),
            per_trace: errors(per_trace_means(&steps, k)),
        })
        .collect();
    let window_span_only = errors(steps.iter().map(|s| (s.window_span_ns, s.gpu_span_ns)));
    let mut groups: HashMap<String, Vec<&StepOutcome>> = HashMap::new();
    for s in &steps {
        let key = s.model.clone().unwrap_or_else(|| format!("unlabelled {}", s.trace_id));
        groups.entry(key).or_default().push(s);
    }
    let mut by_model: Vec<GroupErrors> = groups
        .into_iter()
        .map(|(model, steps)| {
            let mut traces: Vec<&str> = steps.iter().map(|s| s.trace_id.as_str()).collect();
            traces.sort();
            traces.dedup();
            GroupErrors {
                model,
                traces: traces.len(),
                steps: steps.len(),
                mre: std::array::from_fn(|k| {
                    errors(steps.iter().filter_map(|s| Some((s.predicted_ns[k]?, s.measured_ns)))).map(|e| e.mre)
                }),
            }
        })
        .collect();
    by_model.sort_by(|a, b| a.model.cmp(&b.model));
    Evaluation {
        split: kind.name().to_string(),
        folds,
        predictors,
        window_span_only,
        by_model,
        steps,
    }
}

/// (mean predicted, mean measured) step time per trace, for the predictor
/// `k`, in trace order (so that the errors sum alike run after run).
fn per_trace_means(steps: &[StepOutcome], k: usize) -> Vec<(f64, f64)> {
    let mut acc: BTreeMap<&str, (f64, f64, usize)> = BTreeMap::new();
    for s in steps {
        if let Some(p) = s.predicted_ns[k] {
            let e = acc.entry(&s.trace_id).or_default();
            e.0 += p;
            e.1 += s.measured_ns;
            e.2 += 1;
        }
    }
    acc.values().map(|&(p, m, n)| (p / n as f64, m / n as f64)).collect()
}

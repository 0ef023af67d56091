//! `report.md` and `metrics.json`: the evaluation, for people and for tools.

use std::fmt::Write;

use serde::Serialize;
use tracecast_schemas::model::{METRICS_FORMAT, METRICS_VERSION};

use crate::artifact::ModelCard;
use crate::evaluate::{Evaluation, PREDICTORS};
use crate::metrics::Errors;

/// Below this many traces a report warns that its figures say little.
const SMALL_CORPUS: usize = 30;

#[derive(Serialize)]
struct MetricsFile<'a> {
    format: &'static str,
    format_version: u32,
    window: usize,
    stride: usize,
    training_data: &'a crate::artifact::TrainingData,
    evaluation: &'a Evaluation,
    final_fit_seconds: f64,
}

pub fn metrics_json(card: &ModelCard, evaluation: &Evaluation, final_fit_seconds: f64) -> String {
    serde_json::to_string_pretty(&MetricsFile {
        format: METRICS_FORMAT,
        format_version: METRICS_VERSION,
        window: card.window,
        stride: card.stride,
        training_data: &card.training_data,
        evaluation,
        final_fit_seconds,
    })
    .expect("metrics serialize")
}

fn pct(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |v| format!("{:.1}%", 100.0 * v))
}

fn errs(e: Option<Errors>) -> [String; 4] {
    match e {
        Some(e) => [
            format!("{:.1}%", 100.0 * e.mre),
            format!("{:.3}", e.mae_ms),
            format!("{:.3}", e.rmse_ms),
            e.count.to_string(),
        ],
        None => ["n/a".into(), "n/a".into(), "n/a".into(), "0".into()],
    }
}

/// All inputs' gain, the denominator of each one's share (never 0).
fn total_gain(importance: &[(String, f64)]) -> f64 {
    importance.iter().map(|(_, g)| g).sum::<f64>().max(f64::MIN_POSITIVE)
}

/// `importance.csv`: every input of the final model with its total gain
/// and its share of all inputs' gain, largest first (`importance` is sorted
/// so), for judging which feature columns earn their place.
pub fn importance_csv(importance: &[(String, f64)]) -> String {
    let total = total_gain(importance);
    let mut out = String::from("input,gain,share\n");
    for (name, gain) in importance {
        writeln!(out, "{name},{gain},{}", gain / total).expect("writing to a String");
    }
    out
}

/// The short summary printed on the terminal.
pub fn summary(evaluation: &Evaluation) -> String {
    let mut out = String::new();
    for p in &evaluation.predictors {
        let s = p.per_step.map_or("n/a".into(), |e| format!("{:.1}%", 100.0 * e.mre));
        let t = p.per_trace.map_or("n/a".into(), |e| format!("{:.1}%", 100.0 * e.mre));
        let _ = writeln!(out, "  {:<18} step MRE {:>8}   trace MRE {:>8}", p.name, s, t);
    }
    for (name, beats, ours, theirs) in evaluation.verdicts() {
        let _ = writeln!(
            out,
            "  window model {} {name} ({:.1}% vs {:.1}%)",
            if beats { "beats" } else { "does NOT beat" },
            100.0 * ours,
            100.0 * theirs
        );
    }
    out
}

pub fn markdown(card: &ModelCard, evaluation: &Evaluation, importance: &[(String, f64)]) -> String {
    let d = &card.training_data;
    let mut md = String::new();
    let _ = writeln!(md, "# Iteration-time model: evaluation\n");
    let _ = writeln!(
        md,
        "Feature table `{}` (content {}): {} traces, {} steps, {} windows; W = {}, S = {}. \
         GPUs: {}. Models: {}.\n",
        d.features_dir,
        d.content_hash,
        d.traces,
        d.steps,
        d.windows,
        card.window,
        card.stride,
        list(&d.gpus),
        list(&d.models)
    );
    if d.traces < SMALL_CORPUS {
        let _ = writeln!(
            md,
            "**Small corpus: {} traces.** Each figure below rests on few traces; a single unusual trace moves it a lot, \
             and a held-out trace often has no similar trace to learn from. Read the numbers as a check that the \
             pipeline works end to end, not as the model's accuracy on a real corpus.\n",
            d.traces
        );
    }
    let _ = writeln!(
        md,
        "Split `{}`: {} folds; every step is predicted by models trained without its trace (no window of a trace is \
         in both the training and the test set). Target transform: {:?}; LightGBM: {} rounds, learning rate {}, {} leaves.\n",
        evaluation.split,
        evaluation.folds.len(),
        card.target_transform,
        card.lightgbm.num_iterations,
        card.lightgbm.learning_rate,
        card.lightgbm.num_leaves
    );
    let _ = writeln!(md, "## Step time, all held-out steps\n");
    let _ = writeln!(
        md,
        "| predictor | step MRE | step MAE (ms) | step RMSE (ms) | steps | trace MRE | traces |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for p in &evaluation.predictors {
        let [mre, mae, rmse, n] = errs(p.per_step);
        let [tmre, _, _, tn] = errs(p.per_trace);
        let _ = writeln!(md, "| {} | {mre} | {mae} | {rmse} | {n} | {tmre} | {tn} |", p.name);
    }
    let [mre, mae, rmse, n] = errs(evaluation.window_span_only);
    let _ = writeln!(
        md,
        "| window model, GPU span only | {mre} | {mae} | {rmse} | {n} | | |\n"
    );
    let _ = writeln!(md, "Verdict:\n");
    let verdicts = evaluation.verdicts();
    if verdicts.is_empty() {
        let _ = writeln!(md, "- no baseline had a prediction to compare with.");
    }
    for (name, beats, ours, theirs) in verdicts {
        let _ = writeln!(
            md,
            "- the window model {} the {name} baseline on step MRE ({:.1}% vs {:.1}%).",
            if beats { "beats" } else { "**does not beat**" },
            100.0 * ours,
            100.0 * theirs
        );
    }
    let _ = writeln!(md, "\nPredictors:\n");
    for (name, what) in PREDICTORS {
        let _ = writeln!(md, "- **{name}**: {what}.");
    }
    let _ = writeln!(
        md,
        "- **window model, GPU span only**: the window predictions alone against the step's measured GPU span: \
         the part of the step the model predicts, without the measured remainder (CPU time at the step's edges) that \
         the step rows add back.\n"
    );
    let _ = writeln!(md, "## Per model (step MRE)\n");
    let names: Vec<&str> = PREDICTORS.iter().map(|(name, _)| *name).collect();
    let _ = writeln!(md, "| model | traces | steps | {} |", names.join(" | "));
    let _ = writeln!(md, "|---|---|---{}|", "|---".repeat(names.len()));
    for g in &evaluation.by_model {
        let cells: Vec<String> = g.mre.iter().map(|m| pct(*m)).collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            g.model,
            g.traces,
            g.steps,
            cells.join(" | ")
        );
    }
    let _ = writeln!(md, "\n## Folds\n");
    let _ = writeln!(md, "| fold | test traces | train windows | test windows | fit (s) |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for f in &evaluation.folds {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.2} |",
            f.name, f.test_traces, f.train_windows, f.test_windows, f.fit_seconds
        );
    }
    let _ = writeln!(md, "\n## Charts\n");
    let _ = writeln!(
        md,
        "- [scatter.svg](scatter.svg): predicted against measured step time, held-out steps."
    );
    let _ = writeln!(
        md,
        "- [importance.svg](importance.svg): the final model's inputs by total gain.\n"
    );
    let _ = writeln!(md, "Top inputs of the final model (share of total gain):\n");
    let total = total_gain(importance);
    for (name, gain) in importance.iter().take(10) {
        let _ = writeln!(md, "- `{name}`: {:.1}%", 100.0 * gain / total);
    }
    md
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none known".into()
    } else {
        items.join(", ")
    }
}

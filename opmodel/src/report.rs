//! Error tables of an evaluation, beside the published predictors' own
//! figures for the same rows (NeuSight's `summary/`, ETS's `repo_results/`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use crate::by_kind::LEAST_KIND_SHARE;
use crate::csvio::CsvTable;
use crate::scored::{KindScored, Scored};

/// Percentage error, signed: above 0 where the prediction is slower.
fn percent_error(predicted: f64, measured: f64) -> f64 {
    (predicted - measured) / measured * 100.0
}

/// Absolute percentage error.
fn ape(predicted: f64, measured: f64) -> f64 {
    percent_error(predicted, measured).abs()
}

#[derive(Default, Clone, Copy)]
struct Mean {
    sum: f64,
    n: usize,
}

impl Mean {
    fn add(&mut self, v: f64) {
        self.sum += v;
        self.n += 1;
    }
    fn cell(&self) -> String {
        if self.n == 0 {
            "-".into()
        } else {
            format!("{:.1} ({})", self.sum / self.n as f64, self.n)
        }
    }
}

/// A NeuSight configuration: (gpu, model, mode, seqlen, batch, option).
type Configuration = (String, String, String, String, String, String);

/// NeuSight's own predictions in `summary/summary.csv`, by configuration:
/// (NeuSight ms, label ms).
fn neusight_summary(dirs: &[&Path]) -> BTreeMap<Configuration, (f64, f64)> {
    let mut out = BTreeMap::new();
    for dir in dirs {
        let Ok(t) = CsvTable::read(&dir.join("neusight/summary/summary.csv")) else {
            continue;
        };
        for i in 0..t.rows.len() {
            let key = (
                t.get(i, "device").to_string(),
                t.get(i, "model_name").to_string(),
                t.get(i, "mode").to_string(),
                t.get(i, "seqlen").to_string(),
                t.get(i, "batch").to_string(),
                t.get(i, "option").to_string(),
            );
            if let (Some(ns), Some(label)) = (
                t.number(i, "neusight_all_e2e_latency"),
                t.number(i, "label_all_e2e_latency"),
            ) && label > 0.0
            {
                out.entry(key).or_insert((ns, label));
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out
}

/// NeuSight's per-op error by our file kind: (in distribution, out of
/// distribution), each where `summary/perop.csv` gives it.
fn neusight_perop(dirs: &[&Path]) -> BTreeMap<String, (Option<f64>, Option<f64>)> {
    let mut out = BTreeMap::new();
    for dir in dirs {
        let Ok(text) = std::fs::read_to_string(dir.join("neusight/summary/perop.csv")) else {
            continue;
        };
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
        let Some(neusight) = lines.iter().find(|l| l.first() == Some(&"NeuSight")) else {
            continue;
        };
        // Columns 1..5 are in distribution, 6..10 out of distribution: BMM, FC, EW, Softmax, LN.
        let at = |col: usize| neusight.get(col).and_then(|v| v.parse::<f64>().ok());
        for (kind, col) in [("bmm", 1), ("linear", 2), ("elem", 3), ("softmax", 4), ("ln", 5)] {
            out.insert(kind.to_string(), (at(col), at(col + 5)));
        }
        break;
    }
    out
}

/// Markdown tables of every scored set that has measurements.
pub fn markdown(scored: &[Scored], published: &[&Path]) -> String {
    let mut md = String::new();
    let measured: Vec<&Scored> = scored
        .iter()
        .filter(|s| s.measured_ms.is_some_and(|m| m > 0.0))
        .collect();
    if measured.is_empty() {
        md.push_str("No measured latencies in the evaluation directory: predictions only.\n");
        return md;
    }
    // Per-op: MAPE by op kind x GPU.
    let perop: Vec<&Scored> = measured.iter().filter(|s| s.set == "perop").copied().collect();
    if !perop.is_empty() {
        let ns = neusight_perop(published);
        let grid = MapeGrid::of(&perop);
        let _ = writeln!(md, "### Per-operator error (MAPE %, rows)\n");
        let _ = writeln!(
            md,
            "| op | {} | all | NeuSight in distribution | NeuSight OOD |",
            grid.gpus.join(" | ")
        );
        let _ = writeln!(md, "|---|{}---|---|---|", "---|".repeat(grid.gpus.len()));
        let shown = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        for kind in &grid.groups {
            let (id, ood) = ns.get(kind).copied().unwrap_or_default();
            let _ = writeln!(
                md,
                "| {kind} | {} | {} | {} |",
                grid.row(kind).join(" | "),
                shown(id),
                shown(ood)
            );
        }
        md.push('\n');
        md.push_str(&grid.table(
            "### Per-operator bias (median predicted / measured, rows)\n\nAbove 1: priced slow; below 1: priced fast.",
            "op",
            |kind| grid.median_ratio_row(kind),
        ));
    }
    // End to end: MAPE by GPU x mode, plain labels; options apart.
    let e2e: Vec<&&Scored> = measured.iter().filter(|s| s.set == "e2e").collect();
    if !e2e.is_empty() {
        let summary = neusight_summary(published);
        let mut cells: BTreeMap<(String, String, bool), (Mean, Mean)> = BTreeMap::new();
        for s in &e2e {
            let mode = s.group.split(' ').next().unwrap_or("").to_string();
            let e = ape(s.predicted_ms, s.measured_ms.unwrap_or(1.0));
            let key_parts = e2e_key(s);
            let theirs = key_parts
                .and_then(|k| summary.get(&k))
                .map(|(ns, label)| ape(*ns, *label));
            let entry = cells.entry((s.gpu.clone(), mode, !s.option.is_empty())).or_default();
            entry.0.add(e);
            if let Some(t) = theirs {
                entry.1.add(t);
            }
        }
        let _ = writeln!(md, "### End-to-end error (MAPE %, labels)\n");
        let _ = writeln!(
            md,
            "| GPU | mode | labels | tracecast | NeuSight (same rows, its summary) |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|");
        for ((gpu, mode, option), (ours, theirs)) in &cells {
            let mode = if *option {
                format!("{mode} (with option)")
            } else {
                mode.clone()
            };
            let _ = writeln!(
                md,
                "| {gpu} | {mode} | {} | {} | {} |",
                ours.n,
                ours.cell(),
                theirs.cell()
            );
        }
        md.push('\n');
    }
    if !e2e.is_empty() {
        md.push_str(&by_model(&e2e));
    }
    let ets: Vec<&&Scored> = measured.iter().filter(|s| s.set == "ets").collect();
    if !ets.is_empty() {
        let _ = writeln!(md, "### ETS label (forward + backward, ms)\n");
        let _ = writeln!(md, "| GPU folder | config | predicted | measured | error % |");
        let _ = writeln!(md, "|---|---|---|---|---|");
        let mut mean = Mean::default();
        for s in &ets {
            let m = s.measured_ms.unwrap_or(1.0);
            mean.add(ape(s.predicted_ms, m));
            let _ = writeln!(
                md,
                "| {} | {} | {:.2} | {:.2} | {:.1} |",
                s.gpu,
                s.group,
                s.predicted_ms,
                m,
                ape(s.predicted_ms, m)
            );
        }
        let _ = writeln!(md, "\nETS files: mean error {}\n", mean.cell());
    }
    md
}

/// End-to-end error per model and mode (rows) and GPU (columns), plain
/// labels only: which model families a GPU's error comes from.
fn by_model(e2e: &[&&Scored]) -> String {
    let mut md = String::new();
    let plain: Vec<&Scored> = e2e.iter().filter(|s| s.option.is_empty()).map(|s| **s).collect();
    if plain.is_empty() {
        return md;
    }
    let grid = MapeGrid::of(&plain);
    md.push_str(&grid.table(
        "### End-to-end error by model (MAPE %, labels without an option)",
        "mode, model",
        |group| grid.row(group),
    ));
    md
}

/// Mean absolute percentage error of scored rows by group (rows) and GPU
/// (columns), with an `all` column over every GPU.
/// The median of `values` (not empty); the mean of the middle two for an even count.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

struct MapeGrid {
    gpus: Vec<String>,
    groups: Vec<String>,
    cells: BTreeMap<(String, String), Mean>,
    /// Predicted over measured, each row's, by (group, GPU or `all`).
    ratios: BTreeMap<(String, String), Vec<f64>>,
}

impl MapeGrid {
    fn of(scored: &[&Scored]) -> MapeGrid {
        let mut cells: BTreeMap<(String, String), Mean> = BTreeMap::new();
        let mut ratios: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
        for s in scored {
            let measured = s.measured_ms.unwrap_or(1.0);
            let e = ape(s.predicted_ms, measured);
            for gpu in [s.gpu.as_str(), "all"] {
                let key = (s.group.clone(), gpu.to_string());
                cells.entry(key.clone()).or_default().add(e);
                ratios.entry(key).or_default().push(s.predicted_ms / measured);
            }
        }
        MapeGrid {
            gpus: unique(scored.iter().map(|s| s.gpu.clone())),
            groups: unique(scored.iter().map(|s| s.group.clone())),
            cells,
            ratios,
        }
    }

    /// A markdown table under `heading`: a row per group, its cells from
    /// `cells` (one per GPU, then `all`).
    fn table(&self, heading: &str, first_column: &str, cells: impl Fn(&str) -> Vec<String>) -> String {
        let mut md = format!("{heading}\n\n| {first_column} | {} | all |\n", self.gpus.join(" | "));
        let _ = writeln!(md, "|---|{}---|", "---|".repeat(self.gpus.len()));
        for group in &self.groups {
            let _ = writeln!(md, "| {group} | {} |", cells(group).join(" | "));
        }
        md.push('\n');
        md
    }

    /// A group's median predicted / measured, one per GPU, then `all`.
    fn median_ratio_row(&self, group: &str) -> Vec<String> {
        self.gpus
            .iter()
            .map(String::as_str)
            .chain(["all"])
            .map(|g| match self.ratios.get(&(group.to_string(), g.to_string())) {
                Some(r) if !r.is_empty() => format!("{:.2}", median(r)),
                _ => "-".into(),
            })
            .collect()
    }

    /// A group's cells, one per GPU, then `all`.
    fn row(&self, group: &str) -> Vec<String> {
        self.gpus
            .iter()
            .map(String::as_str)
            .chain(["all"])
            .map(|g| {
                self.cells
                    .get(&(group.to_string(), g.to_string()))
                    .copied()
                    .unwrap_or_default()
                    .cell()
            })
            .collect()
    }
}

/// One kind and pass summed over a GPU and mode's labels.
#[derive(Default)]
struct KindSum {
    name: String,
    predicted_ms: f64,
    measured_ms: f64,
}

/// Where each GPU's end-to-end time goes: per mode, kind and pass, the
/// share of the measured per-node time and predicted over measured, summed
/// over the labels whose graphs carry the GPU's own latencies. A GPU whose
/// every kind is off by one factor is priced with the wrong efficiency as
/// a whole; one kind apart is that kind's model.
pub fn by_kind(rows: &[KindScored]) -> String {
    let mut md = String::new();
    if rows.is_empty() {
        return md;
    }
    let mut sums: BTreeMap<(String, String), BTreeMap<(u8, u8), KindSum>> = BTreeMap::new();
    for r in rows {
        let t = &r.times;
        let sum = sums
            .entry((r.gpu.clone(), r.mode.clone()))
            .or_default()
            .entry((t.kind as u8, t.pass as u8))
            .or_default();
        sum.name = format!("{} {}", t.kind.name(), t.pass.name());
        sum.predicted_ms += t.predicted_ms;
        sum.measured_ms += t.measured_ms;
    }
    let _ = writeln!(
        md,
        "### Where the end-to-end time goes (per-node latencies of the labels' own graphs)\n"
    );
    let _ = writeln!(
        md,
        "| GPU | mode | all: predicted / measured | kind, pass: share of the measured time, predicted / measured |"
    );
    let _ = writeln!(md, "|---|---|---|---|");
    for ((gpu, mode), kinds) in &sums {
        let predicted: f64 = kinds.values().map(|k| k.predicted_ms).sum();
        let measured: f64 = kinds.values().map(|k| k.measured_ms).sum();
        let mut shown: Vec<&KindSum> = kinds
            .values()
            .filter(|k| measured > 0.0 && k.measured_ms / measured >= LEAST_KIND_SHARE)
            .collect();
        shown.sort_by(|a, b| b.measured_ms.total_cmp(&a.measured_ms));
        let cells: Vec<String> = shown
            .iter()
            .map(|k| {
                format!(
                    "{}: {:.0}%, {:.2}",
                    k.name,
                    100.0 * k.measured_ms / measured,
                    k.predicted_ms / k.measured_ms
                )
            })
            .collect();
        let _ = writeln!(
            md,
            "| {gpu} | {mode} | {:.2} | {} |",
            if measured > 0.0 { predicted / measured } else { f64::NAN },
            cells.join("; ")
        );
    }
    md.push('\n');
    md
}

/// Every scored end-to-end label, one row each: measured, predicted and
/// error, beside NeuSight's own prediction and error for the same
/// configuration (`summary/summary.csv`), where it has one.
pub fn per_configuration(scored: &[Scored], published: &[&Path]) -> String {
    let summary = neusight_summary(published);
    let mut rows: Vec<&Scored> = scored
        .iter()
        .filter(|s| s.set == "e2e" && s.measured_ms.is_some_and(|m| m > 0.0))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    rows.sort_by(|a, b| (&a.gpu, &a.what).cmp(&(&b.gpu, &b.what)));
    let mut md = String::from(
        "### End to end, per configuration (ms)\n\n\
         | GPU | configuration | measured | tracecast | error % | NeuSight | NeuSight error % |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for s in rows {
        let measured = s.measured_ms.unwrap_or(1.0);
        let config = Path::new(&s.what)
            .file_stem()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let theirs = e2e_key(s).and_then(|k| summary.get(&k).copied());
        let (ns, ns_err) = theirs.map_or(("-".to_string(), "-".to_string()), |(ns, label)| {
            (format!("{ns:.2}"), format!("{:+.1}", percent_error(ns, label)))
        });
        let _ = writeln!(
            md,
            "| {} | {config} | {measured:.2} | {:.2} | {:+.1} | {ns} | {ns_err} |",
            s.gpu,
            s.predicted_ms,
            percent_error(s.predicted_ms, measured)
        );
    }
    md
}

fn e2e_key(s: &Scored) -> Option<(String, String, String, String, String, String)> {
    // `what` is the label path: .../label/<GPU>/<model>-<mode>-<seqlen>-<batch>[-<option>].json
    let stem = Path::new(&s.what).file_stem()?.to_str()?;
    let p: Vec<&str> = stem.split('-').collect();
    Some((
        s.gpu.clone(),
        p.first()?.to_string(),
        p.get(1)?.to_string(),
        p.get(2)?.to_string(),
        p.get(3)?.to_string(),
        p.get(4).map(|o| o.to_string()).unwrap_or_default(),
    ))
}

fn unique(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = items.collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::by_kind::KindTimes;
    use crate::work::{OpKind, Pass};

    fn row(gpu: &str, kind: OpKind, pass: Pass, predicted_ms: f64, measured_ms: f64) -> KindScored {
        KindScored {
            gpu: gpu.into(),
            mode: "train".into(),
            times: KindTimes {
                kind,
                pass,
                nodes: 1.0,
                predicted_ms,
                measured_ms,
            },
        }
    }

    fn e2e(gpu: &str, model: &str, option: &str, predicted_ms: f64, measured_ms: f64) -> Scored {
        Scored {
            set: "e2e",
            gpu: gpu.into(),
            group: format!("inf {model}"),
            option: option.into(),
            predicted_ms,
            measured_ms: Some(measured_ms),
            what: String::new(),
        }
    }

    #[test]
    fn by_model_tabulates_plain_labels_per_model_and_gpu() {
        let scored = [
            e2e("T4", "bert", "", 110.0, 100.0),
            e2e("T4", "bert", "", 80.0, 100.0),
            e2e("V100", "bert", "", 100.0, 100.0),
            e2e("V100", "gpt2", "", 150.0, 100.0),
            e2e("V100", "gpt2", "fusion", 500.0, 100.0),
        ];
        let md = markdown(&scored, &[]);
        let table = md.split("### End-to-end error by model").nth(1).unwrap();
        assert!(table.contains("| mode, model | T4 | V100 | all |"), "{table}");
        // T4: (10 + 20) / 2; V100: 0; all three bert labels: 10.
        assert!(
            table.contains("| inf bert | 15.0 (2) | 0.0 (1) | 10.0 (3) |"),
            "{table}"
        );
        // The fusion label is left out.
        assert!(table.contains("| inf gpt2 | - | 50.0 (1) | 50.0 (1) |"), "{table}");
    }

    fn perop(gpu: &str, op: &str, predicted_ms: f64, measured_ms: f64) -> Scored {
        Scored {
            set: "perop",
            gpu: gpu.into(),
            group: op.into(),
            option: String::new(),
            predicted_ms,
            measured_ms: Some(measured_ms),
            what: String::new(),
        }
    }

    #[test]
    fn per_op_bias_is_the_median_ratio_per_op_and_gpu() {
        let scored = [
            perop("T4", "bmm", 1.2, 1.0),
            perop("T4", "bmm", 3.0, 2.0),
            perop("T4", "bmm", 0.9, 1.0),
            perop("H100", "bmm", 0.5, 1.0),
            perop("H100", "softmax", 2.0, 1.0),
            perop("H100", "softmax", 1.0, 1.0),
        ];
        let md = markdown(&scored, &[]);
        let table = md.split("### Per-operator bias").nth(1).unwrap();
        assert!(table.contains("| op | H100 | T4 | all |"), "{table}");
        // T4: 0.9, 1.2, 1.5; all four bmm rows: 0.5, 0.9, 1.2, 1.5.
        assert!(table.contains("| bmm | 0.50 | 1.20 | 1.05 |"), "{table}");
        assert!(table.contains("| softmax | 1.50 | - | 1.50 |"), "{table}");
    }

    /// NeuSight's in- and out-of-distribution errors sit beside ours, each
    /// from its own column of `summary/perop.csv` (BMM, FC, EW, Softmax, LN).
    #[test]
    fn per_op_table_shows_both_of_neusights_figures() {
        let dir = tempfile::tempdir().unwrap();
        let summary = dir.path().join("neusight/summary");
        std::fs::create_dir_all(&summary).unwrap();
        std::fs::write(
            summary.join("perop.csv"),
            ",In Distribution,,,,,Out of Distribution,,,,\n\
             ,BMM,FC,EW,Softmax,LN,BMM,FC,EW,Softmax,LN\n\
             Roofline,50,30,30,26,55,44,27,26,32,58,\n\
             NeuSight,26.0,20.0,14.0,19.3,20.1,13.8,13.9,19.3,13.9,56.7,\n",
        )
        .unwrap();
        let scored = [perop("T4", "linear", 1.1, 1.0), perop("T4", "ln", 1.0, 1.0)];
        let md = markdown(&scored, &[dir.path()]);
        assert!(md.contains("| all | NeuSight in distribution | NeuSight OOD |"), "{md}");
        assert!(md.contains("| linear | 10.0 (1) | 10.0 (1) | 20.0 | 13.9 |"), "{md}");
        assert!(md.contains("| ln | 0.0 (1) | 0.0 (1) | 20.1 | 56.7 |"), "{md}");
    }

    #[test]
    fn by_kind_sums_labels_and_leaves_out_small_kinds() {
        let rows = [
            row("V100", OpKind::Gemm, Pass::Forward, 60.0, 50.0),
            row("V100", OpKind::Gemm, Pass::Forward, 60.0, 50.0),
            row("V100", OpKind::Softmax, Pass::Backward, 20.0, 10.0),
            row("V100", OpKind::Copy, Pass::Forward, 1.0, 1.0),
        ];
        let md = by_kind(&rows);
        let line = md.lines().find(|l| l.starts_with("| V100 |")).unwrap();
        // All: 141 / 111; GEMMs 100 of 111 measured, 1.2; softmax 9%, 2.0;
        // the copy (under 2%) left out.
        assert_eq!(
            line,
            "| V100 | train | 1.27 | gemm forward: 90%, 1.20; softmax backward: 9%, 2.00 |"
        );
        assert!(by_kind(&[]).is_empty());
    }
}

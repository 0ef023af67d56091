//! Where an ETS file's kernel time goes: per kind of work and pass, the op
//! model's time, the time after the per-operator calibration the training
//! files teach, and ETS's measured kernel time (`ets_by_kind.csv`, written
//! by `ets_predict`, and a table of `report.md`). An ML
//! team reads it to see which kinds of work a file's error comes from (a
//! model's backward convolutions, say) without a build that prints rows.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::by_kind::LEAST_KIND_SHARE;
use crate::ets::EtsRow;
use crate::work::OpKind;

/// Which rows of a file a line covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EtsPass {
    Forward,
    Backward,
    /// Backward kernels ETS's analyzer records no row for (a linear
    /// layer's), priced and added to the label; nothing measures them alone.
    BackwardUnrecorded,
}

impl EtsPass {
    fn of(row: &EtsRow) -> EtsPass {
        match (row.dir, row.unrecorded) {
            (1, _) => EtsPass::Forward,
            (_, false) => EtsPass::Backward,
            (_, true) => EtsPass::BackwardUnrecorded,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            EtsPass::Forward => "forward",
            EtsPass::Backward => "backward",
            EtsPass::BackwardUnrecorded => "backward_unrecorded",
        }
    }
}

/// One kind and pass of one file's rows.
#[derive(Clone, Debug, PartialEq)]
pub struct EtsKindTimes {
    pub kind: OpKind,
    pub pass: EtsPass,
    pub rows: usize,
    /// The op model's time, timed as ETS times kernels.
    pub model_ms: f64,
    /// After the per-operator calibration: what the label's kernels are priced at.
    pub priced_ms: f64,
    /// ETS's kernel time (`kduration`) of the same rows; `None` where the
    /// file's timings are zeroed or its rows were not recorded.
    pub measured_ms: Option<f64>,
}

/// Per kind and pass, the times of `rows`, `model_us` being the op model's
/// time of each row in order and `priced` a row's kernel time from it after
/// the calibration (`EtsCalibration::kernel_us`).
pub fn by_kind(rows: &[EtsRow], model_us: &[f64], priced: impl Fn(&EtsRow, f64) -> f64) -> Vec<EtsKindTimes> {
    let mut sums: BTreeMap<(u8, EtsPass), EtsKindTimes> = BTreeMap::new();
    for (row, &us) in rows.iter().zip(model_us) {
        let pass = EtsPass::of(row);
        let entry = sums.entry((row.work.kind as u8, pass)).or_insert(EtsKindTimes {
            kind: row.work.kind,
            pass,
            rows: 0,
            model_ms: 0.0,
            priced_ms: 0.0,
            measured_ms: Some(0.0),
        });
        entry.rows += 1;
        entry.model_ms += us / 1e3;
        entry.priced_ms += priced(row, us) / 1e3;
        entry.measured_ms = entry.measured_ms.zip(row.kernel_us).map(|(sum, k)| sum + k / 1e3);
    }
    sums.into_values().collect()
}

/// One kind and pass of one scored ETS file, for the report.
#[derive(Clone, Debug)]
pub(crate) struct EtsKindScored {
    pub gpu_folder: String,
    pub file: String,
    pub times: EtsKindTimes,
}

/// Where each ETS file's kernel time goes, for `report.md`: over the rows
/// ETS timed, priced over measured kernel time, then per kind and pass its
/// share of the measured time, priced over measured and, in brackets, the
/// op model's time over measured (before the calibration). Empty where no
/// file kept its timings.
pub(crate) fn report(rows: &[EtsKindScored]) -> String {
    let mut files: BTreeMap<(&str, &str), Vec<(&EtsKindTimes, f64)>> = BTreeMap::new();
    for r in rows {
        if let Some(measured) = r.times.measured_ms {
            files
                .entry((&r.gpu_folder, &r.file))
                .or_default()
                .push((&r.times, measured));
        }
    }
    let mut md = String::new();
    if files.is_empty() {
        return md;
    }
    let _ = writeln!(md, "### Where each ETS file's kernel time goes (ETS's kernel times)\n");
    let _ = writeln!(
        md,
        "| GPU folder | file | kernels: priced / measured | kind, pass: share of the measured kernel time, priced / measured (op model / measured) |"
    );
    let _ = writeln!(md, "|---|---|---|---|");
    for ((folder, file), mut kinds) in files {
        let measured: f64 = kinds.iter().map(|(_, m)| m).sum();
        let priced: f64 = kinds.iter().map(|(k, _)| k.priced_ms).sum();
        kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
        let cells: Vec<String> = kinds
            .iter()
            .filter(|(_, m)| measured > 0.0 && m / measured >= LEAST_KIND_SHARE)
            .map(|(k, m)| {
                format!(
                    "{} {}: {:.0}%, {:.2} ({:.2})",
                    k.kind.name(),
                    k.pass.name(),
                    100.0 * m / measured,
                    k.priced_ms / m,
                    k.model_ms / m
                )
            })
            .collect();
        let _ = writeln!(
            md,
            "| {folder} | {file} | {:.2} | {} |",
            priced / measured,
            cells.join("; ")
        );
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::{EwFunc, OpWork};

    fn row(dir: i64, work: OpWork, kernel_us: Option<f64>, unrecorded: bool) -> EtsRow {
        EtsRow {
            op: 152,
            dir,
            work,
            wall_us: kernel_us,
            kernel_us,
            host_us: None,
            unrecorded,
        }
    }

    #[test]
    fn rows_add_up_per_kind_and_pass_and_unrecorded_kernels_stand_apart() {
        let relu = OpWork::elementwise(EwFunc::Other, 1e6, 1.0);
        let product = OpWork::linear(1.0, 64.0, 256.0, 256.0);
        let rows = [
            row(1, relu, Some(40.0), false),
            row(1, relu, Some(60.0), false),
            row(2, relu, Some(100.0), false),
            row(1, product, Some(30.0), false),
            row(2, product, None, true),
        ];
        let model_us = [50.0, 50.0, 120.0, 20.0, 40.0];
        // Calibrated at half the op model's time.
        let kinds = by_kind(&rows, &model_us, |_, us| us / 2.0);
        let find = |kind: OpKind, pass: EtsPass| kinds.iter().find(|k| k.kind == kind && k.pass == pass).unwrap();
        let forward = find(relu.kind, EtsPass::Forward);
        assert_eq!((forward.rows, forward.model_ms, forward.priced_ms), (2, 0.1, 0.05));
        assert_eq!(forward.measured_ms, Some(0.1));
        assert_eq!(find(relu.kind, EtsPass::Backward).measured_ms, Some(0.1));
        let unrecorded = find(product.kind, EtsPass::BackwardUnrecorded);
        assert_eq!(
            (unrecorded.rows, unrecorded.priced_ms, unrecorded.measured_ms),
            (1, 0.02, None)
        );
        let total: f64 = kinds.iter().map(|k| k.model_ms).sum();
        assert!((total - model_us.iter().sum::<f64>() / 1e3).abs() < 1e-12);
        // A file whose timings are zeroed has no measured time.
        let zeroed = [row(1, relu, None, false)];
        assert_eq!(by_kind(&zeroed, &[5.0], |_, us| us)[0].measured_ms, None);
    }

    #[test]
    fn the_report_shows_timed_files_and_their_main_kinds() {
        let times =
            |kind: OpKind, pass: EtsPass, model_ms: f64, priced_ms: f64, measured_ms: Option<f64>| EtsKindTimes {
                kind,
                pass,
                rows: 1,
                model_ms,
                priced_ms,
                measured_ms,
            };
        let scored = |file: &str, times: EtsKindTimes| EtsKindScored {
            gpu_folder: "T4CPUALL".into(),
            file: file.into(),
            times,
        };
        let rows = [
            scored("a.csv", times(OpKind::Conv, EtsPass::Backward, 12.0, 6.0, Some(8.0))),
            scored("a.csv", times(OpKind::Gemm, EtsPass::Forward, 2.0, 2.0, Some(2.0))),
            // Under 2% of the file's measured time: not a cell.
            scored("a.csv", times(OpKind::Softmax, EtsPass::Forward, 0.1, 0.1, Some(0.1))),
            // Not timed by ETS: neither a cell nor in the file's ratio.
            scored(
                "a.csv",
                times(OpKind::Gemm, EtsPass::BackwardUnrecorded, 1.0, 1.0, None),
            ),
            // Timings zeroed: no line.
            scored("blind.csv", times(OpKind::Conv, EtsPass::Forward, 1.0, 1.0, None)),
        ];
        let md = report(&rows);
        let line = md.lines().find(|l| l.contains("a.csv")).unwrap();
        // Priced over measured over the timed rows: 8.1 / 10.1.
        assert!(line.starts_with("| T4CPUALL | a.csv | 0.80 |"), "{line}");
        assert!(
            line.contains("conv backward: 79%, 0.75 (1.50); gemm forward: 20%, 1.00 (1.00) |"),
            "{line}"
        );
        assert!(!line.contains("softmax") && !md.contains("blind.csv"), "{md}");
        assert!(report(&rows[4..]).is_empty());
    }
}

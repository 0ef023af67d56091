//! Where an ETS file's kernel time goes: per kind of work and pass, the op
//! model's time, the time after the per-operator calibration the training
//! files teach, and ETS's measured kernel time (`ets_by_kind.csv`). An ML
//! team reads it to see which kinds of work a file's error comes from (a
//! model's backward convolutions, say) without a build that prints rows.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::OpModelError;
use crate::ets::{EtsFile, EtsRow};
use crate::scored::{create, write_err};
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

    fn name(self) -> &'static str {
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

/// `ets_by_kind.csv`, one file's lines at a time.
pub struct KindsWriter {
    path: PathBuf,
    w: BufWriter<std::fs::File>,
}

impl KindsWriter {
    pub fn create(out: &Path) -> Result<KindsWriter, OpModelError> {
        let path = out.join("ets_by_kind.csv");
        let mut w = create(&path)?;
        writeln!(w, "gpu_folder,file,kind,pass,rows,model_ms,priced_ms,measured_ms").map_err(write_err(&path))?;
        Ok(KindsWriter { path, w })
    }

    pub fn write(&mut self, file: &EtsFile, kinds: &[EtsKindTimes]) -> Result<(), OpModelError> {
        for k in kinds {
            let measured = k.measured_ms.map(|m| format!("{m:.6}")).unwrap_or_default();
            writeln!(
                self.w,
                "{},{},{},{},{},{:.6},{:.6},{measured}",
                file.gpu_folder,
                file.file,
                k.kind.name(),
                k.pass.name(),
                k.rows,
                k.model_ms,
                k.priced_ms
            )
            .map_err(write_err(&self.path))?;
        }
        Ok(())
    }

    /// Flushes the file; returns its path.
    pub fn finish(mut self) -> Result<PathBuf, OpModelError> {
        self.w.flush().map_err(write_err(&self.path))?;
        Ok(self.path)
    }
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
}

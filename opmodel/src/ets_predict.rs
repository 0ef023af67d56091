//! Predicting ETS's label for every file of a directory, and what the
//! training files teach for it (`EtsCalibration`): how each operator's
//! kernels sit against the op model, and the host's pace, which a queue of
//! host calls and kernels turns into the label.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::OpModelError;
use crate::collect::GpuTable;
use crate::ets::{EtsFile, EtsRow, KernelsOf, read_ets_dir};
use crate::ets_by_kind::{EtsKindScored, EtsKindTimes, by_kind};
use crate::ets_codes;
use crate::features::Timing;
use crate::gpu::GpuSpec;
use crate::model::OpModel;
use crate::scored::{Evaluation, Scored, create, write_err};
use crate::work::{OpKind, OpWork};

/// How ETS's kernels were timed: its benchmark runs every model's batch
/// sizes, input sizes and types back to back, seven iterations each, so
/// the GPU runs as hot as in NeuSight's long operator sweeps. Priced so,
/// the eleven upstream files of bench/ets_upstream.sh came to 18.8% mean
/// error against 20.9% priced as a short model run; the shared sweep moved
/// from 15.5% to 15.7%.
const ETS_TIMING: Timing = Timing::Sweep;

/// What the training set's ETS files teach beyond the op model: how the
/// kernels of each operator and phase sit against the op model
/// (`KernelFit`), and how long the
/// host takes from one operator to the next (under the profiler's NVTX
/// ranges, about 0.2 ms each, whatever the model, batch or GPU). The GPU
/// runs each row's kernels once the host has issued them and the kernels
/// before are done (`EtsCalibration::file_us`): a model of short kernels
/// waits on its host (ShuffleNet, small batches), one of long kernels does
/// not.
#[derive(Clone, Debug, Default)]
pub struct EtsCalibration {
    /// Median host time by (op, phase), µs; for the loss, from the GPU's
    /// drain to the next call.
    pub host_us: BTreeMap<(i64, i64), f64>,
    /// Median host time by phase over every operator but the loss, for an
    /// operator the training files lack.
    pub phase_host_us: BTreeMap<i64, f64>,
    /// By (GPU, op, phase, element size), and by (op, phase, element size)
    /// over all GPUs. Keyed by the GPU the folder resolves to, not by the
    /// folder's name: `2080TiCPUALL` and `RTX2080Ti_CPUALL` are one GPU.
    pub kernel_fit: BTreeMap<(String, KernelsOf), KernelFit>,
    pub pooled_kernel_fit: BTreeMap<KernelsOf, KernelFit>,
}

/// How far beyond the arithmetic intensities (FLOP per byte) of the rows a
/// matrix-work ratio was learned on it still holds: a factor of two either
/// way. A product or convolution of another regime runs other kernels, and
/// there the op model's own price is the better guess: ViT's products (about
/// 300 FLOP/B) against AlexNet's classifier (under 32), on which the T4's
/// ratio is learned, and MobileNet's depthwise convolutions against AlexNet's
/// dense ones. `bench/ets_upstream.sh` (13 files of other models): 14.9% ->
/// 11.6% mean error (12.3% at 1.5x, 12.5% at 4x); the shared sweep's ETS
/// files 13.9% -> 13.8%.
const INTENSITY_REACH: f64 = 2.0;

/// FLOP per byte of a row's work.
fn intensity(work: &OpWork) -> f64 {
    work.flops / work.bytes.max(1.0)
}

/// Measured kernel time against the op model's price for one key:
/// `slope * priced + intercept`, never below zero. Matrix work (a
/// library's algorithms) takes a ratio alone, within the intensities it
/// was learned on (`INTENSITY_REACH`). Streaming work takes a line:
/// the op model learned NeuSight's isolated timings, which hold 24-32 µs of
/// launch and synchronisation around even the smallest streaming operator
/// on the T4, while ETS times kernels alone, so a ratio fitted on small
/// kernels prices large ones far too fast (ETS's ReLUs on the 2080 Ti:
/// priced 35 µs for 3 µs measured at batch 2, 189 µs for 178 at batch 64).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelFit {
    pub slope: f64,
    pub intercept: f64,
    /// The FLOP-per-byte range where a matrix-work fit holds; beyond it the
    /// op model's price stands. `None`: everywhere.
    pub intensities: Option<(f64, f64)>,
}

impl KernelFit {
    pub fn ratio(ratio: f64) -> KernelFit {
        KernelFit {
            slope: ratio,
            intercept: 0.0,
            intensities: None,
        }
    }

    /// The measured time this fit expects for a row of `work` priced `priced_us`.
    fn apply(self, priced_us: f64, work: &OpWork) -> f64 {
        if let Some((lo, hi)) = self.intensities {
            let i = intensity(work);
            if i < lo || i > hi {
                return priced_us;
            }
        }
        (self.slope * priced_us + self.intercept).max(0.0)
    }
}

/// Least-squares sums of (priced, measured) pairs, and the intensities of
/// the rows they come from.
#[derive(Clone, Copy, Debug, Default)]
struct FitSums {
    n: f64,
    x: f64,
    y: f64,
    xx: f64,
    xy: f64,
    intensities: Option<(f64, f64)>,
}

impl FitSums {
    fn add(&mut self, priced: f64, measured: f64, work: &OpWork) {
        let i = intensity(work);
        self.intensities = Some(self.intensities.map_or((i, i), |(lo, hi)| (lo.min(i), hi.max(i))));
        self.n += 1.0;
        self.x += priced;
        self.y += measured;
        self.xx += priced * priced;
        self.xy += priced * measured;
    }

    /// The line through the pairs for streaming work with three pairs or
    /// more and a rising slope; otherwise measured over priced, from sums
    /// (time-weighted: the large kernels that make up a label count most).
    fn fit(&self, kind: OpKind) -> Option<KernelFit> {
        if self.x <= 0.0 {
            return None;
        }
        let ratio = KernelFit {
            intensities: self
                .intensities
                .filter(|_| !kind.streams_memory())
                .map(|(lo, hi)| (lo / INTENSITY_REACH, hi * INTENSITY_REACH)),
            ..KernelFit::ratio(self.y / self.x)
        };
        let spread = self.xx - self.x * self.x / self.n;
        if !kind.streams_memory() || self.n < 3.0 || spread <= 0.0 {
            return Some(ratio);
        }
        let slope = (self.xy - self.x * self.y / self.n) / spread;
        if slope <= 0.0 {
            return Some(ratio);
        }
        Some(KernelFit {
            slope,
            intercept: (self.y - slope * self.x) / self.n,
            intensities: None,
        })
    }
}

/// The calibration the ETS files under `train` teach, their GPU folders
/// and batch sizes in `holdout` left out.
pub fn calibrate(
    model: &OpModel,
    train: &Path,
    gpus: &GpuTable,
    holdout: &[String],
) -> Result<EtsCalibration, OpModelError> {
    let mut hosts: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
    let mut phase_hosts: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
    let mut kernels: BTreeMap<KernelsOf, FitSums> = BTreeMap::new();
    let mut gpu_kernels: BTreeMap<(String, KernelsOf), FitSums> = BTreeMap::new();
    for file in read_ets_dir(train)? {
        if holdout.iter().any(|g| g == &file.gpu_folder || *g == file.batch_key()) {
            continue;
        }
        let Some(spec) = gpus.spec(&file.gpu_folder) else {
            continue;
        };
        let predicted = priced_us(model, &file.rows, spec)?;
        for (r, p) in file.rows.iter().zip(predicted) {
            if let Some(host) = r.host_us {
                hosts.entry((r.op, r.dir)).or_default().push(host);
                if !ets_codes::is_loss(r.op) {
                    phase_hosts.entry(r.dir).or_default().push(host);
                }
            }
            let Some(kernel) = r.kernel_us else {
                continue;
            };
            let keys = [Some(r.kernels_of()), r.kernels_of().any_op()];
            for key in keys.into_iter().flatten() {
                for k in [
                    kernels.entry(key).or_default(),
                    gpu_kernels.entry((spec.name.clone(), key)).or_default(),
                ] {
                    k.add(p, kernel, &r.work);
                }
            }
        }
    }
    Ok(EtsCalibration {
        host_us: medians(hosts),
        phase_host_us: medians(phase_hosts),
        kernel_fit: fits(gpu_kernels, |(_, k)| k.kind),
        pooled_kernel_fit: fits(kernels, |k| k.kind),
    })
}

/// Each row's time as the op model prices it on `spec`, timed as ETS times.
fn priced_us(model: &OpModel, rows: &[EtsRow], spec: &GpuSpec) -> Result<Vec<f64>, OpModelError> {
    let pairs: Vec<_> = rows.iter().map(|r| (r.work, spec)).collect();
    model.predict_us(&pairs, ETS_TIMING)
}

/// The median of each key's values.
fn medians<K: Ord>(values: BTreeMap<K, Vec<f64>>) -> BTreeMap<K, f64> {
    values
        .into_iter()
        .filter_map(|(k, v)| median(v).map(|m| (k, m)))
        .collect()
}

/// Each key's fit, where its pairs give one.
fn fits<K: Ord>(sums: BTreeMap<K, FitSums>, kind: impl Fn(&K) -> OpKind) -> BTreeMap<K, KernelFit> {
    sums.into_iter()
        .filter_map(|(k, s)| s.fit(kind(&k)).map(|f| (k, f)))
        .collect()
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

impl EtsCalibration {
    /// How the measured kernels of `kernels` on `gpu` sat against the op
    /// model: that GPU's fit, else all GPUs', for the operator, else for
    /// its kind (`KernelsOf::any_op`); the model's price where no training
    /// row says.
    fn kernel_fit_of(&self, gpu: &str, kernels: KernelsOf) -> KernelFit {
        [Some(kernels), kernels.any_op()]
            .into_iter()
            .flatten()
            .find_map(|key| {
                self.kernel_fit
                    .get(&(gpu.to_string(), key))
                    .or_else(|| self.pooled_kernel_fit.get(&key))
            })
            .copied()
            .unwrap_or(KernelFit::ratio(1.0))
    }

    /// A row's kernel time on `gpu`, µs, from the op model's `model_us`:
    /// calibrated by its operator's fit. An unrecorded backward product
    /// runs as its forward one does: the recorded backward rows of its
    /// operator are the classifier's, a product of another size.
    pub(crate) fn kernel_us(&self, gpu: &str, row: &EtsRow, model_us: f64) -> f64 {
        let kernels = if row.unrecorded {
            KernelsOf {
                dir: 1,
                ..row.kernels_of()
            }
        } else {
            row.kernels_of()
        };
        self.kernel_fit_of(gpu, kernels).apply(model_us, &row.work)
    }

    /// The host's time after a row: its operator's, else its phase's.
    fn host_time_of(&self, row: &EtsRow) -> f64 {
        self.host_us
            .get(&(row.op, row.dir))
            .or_else(|| self.phase_host_us.get(&row.dir))
            .copied()
            .unwrap_or(0.0)
    }

    /// A file's predicted label, µs, from its rows' op-model times on
    /// `gpu`: the host issues the rows one after another, each after
    /// its operator's host time (the loss's after the GPU drains); the GPU
    /// starts a row's kernels once issued and once the kernels before are
    /// done. The unrecorded kernels (linear layers' backward) run at the
    /// start of the backward pass. The label runs from the first kernel's
    /// start to where the optimizer's first could start.
    fn file_us(&self, gpu_name: &str, rows: &[EtsRow], model_us: &[f64]) -> f64 {
        let unrecorded: f64 = rows
            .iter()
            .zip(model_us)
            .filter(|(r, _)| r.unrecorded)
            .map(|(r, us)| self.kernel_us(gpu_name, r, *us))
            .sum();
        let (mut host, mut gpu) = (0.0f64, 0.0f64);
        let mut first_start = None;
        let mut backward_started = false;
        for (row, us) in rows.iter().zip(model_us).filter(|(r, _)| !r.unrecorded) {
            if row.dir == 2 && !backward_started {
                backward_started = true;
                gpu = gpu.max(host) + unrecorded;
            }
            let start = gpu.max(host);
            first_start.get_or_insert(start);
            gpu = start + self.kernel_us(gpu_name, row, *us);
            host = if ets_codes::is_loss(row.op) && row.dir == 1 {
                host.max(gpu)
            } else {
                host
            } + self.host_time_of(row);
        }
        gpu.max(host) - first_start.unwrap_or(0.0)
    }
}

pub fn predict_dir(
    model: &OpModel,
    calibration: &EtsCalibration,
    eval: &Path,
    gpus: &GpuTable,
    out: &Path,
    wanted: &dyn Fn(&str) -> bool,
    ev: &mut Evaluation,
) -> Result<(), OpModelError> {
    let path = out.join("ets.csv");
    let mut w = create(&path)?;
    writeln!(w, "gpu_folder,file,batch,h,predicted_ms").map_err(write_err(&path))?;
    let mut kinds = KindsWriter::create(out)?;
    for file in read_ets_dir(eval)? {
        if !wanted(&file.gpu_folder) && !wanted(&file.batch_key()) {
            continue;
        }
        let Some(spec) = gpus.spec(&file.gpu_folder) else {
            // Every file keeps its row, left empty, as a label without a GPU does.
            ev.notes.push(format!(
                "{}: not predicted: no spec sheet or hardware profile for the GPU of folder {} \
                 (a NeuSight spec sheet whose Device names it, or a profile in fixtures/hardware)",
                file.path.display(),
                file.gpu_folder
            ));
            writeln!(w, "{},{},{},{},", file.gpu_folder, file.file, file.batch, file.h).map_err(write_err(&path))?;
            continue;
        };
        let predicted = priced_us(model, &file.rows, spec)?;
        ev.ops_predicted += predicted.len();
        let ms = calibration.file_us(&spec.name, &file.rows, &predicted) / 1e3;
        writeln!(w, "{},{},{},{},{ms:.6}", file.gpu_folder, file.file, file.batch, file.h).map_err(write_err(&path))?;
        let file_kinds = by_kind(&file.rows, &predicted, |row, us| {
            calibration.kernel_us(&spec.name, row, us)
        });
        kinds.write(&file, &file_kinds)?;
        ev.ets_by_kind.extend(file_kinds.into_iter().map(|times| EtsKindScored {
            gpu_folder: file.gpu_folder.clone(),
            file: file.file.clone(),
            times,
        }));
        ev.scored.push(Scored {
            set: "ets",
            gpu: file.gpu_folder.clone(),
            group: file.config(),
            option: String::new(),
            predicted_ms: ms,
            measured_ms: file.label_ms(),
            what: file.path.display().to_string(),
        });
    }
    w.flush().map_err(write_err(&path))?;
    ev.files.push(path);
    ev.files.push(kinds.finish()?);
    Ok(())
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

    fn row(op: i64, dir: i64) -> EtsRow {
        EtsRow {
            op,
            dir,
            work: OpWork::elementwise(EwFunc::Relu, 1e6, 2.0),
            wall_us: None,
            kernel_us: None,
            host_us: None,
            unrecorded: false,
        }
    }

    /// The GPU runs a row once the host has issued it and the kernels
    /// before are done: short kernels wait on the host, long ones do not;
    /// after the loss the host waits for the GPU; unrecorded kernels run at
    /// the start of the backward pass. Kernel ratios: the GPU's, else
    /// the pooled one; host times: the operator's, else its phase's.
    #[test]
    fn the_gpu_waits_on_the_host_and_the_host_on_the_loss() {
        let relu_forward = KernelsOf {
            op: Some(152),
            kind: OpKind::Elementwise,
            dir: 1,
            element_bytes: 4,
        };
        let calibration = EtsCalibration {
            host_us: [((152, 1), 200.0), ((181, 1), 50.0)].into_iter().collect(),
            phase_host_us: [(2, 100.0)].into_iter().collect(),
            kernel_fit: [(("NVIDIA T4".to_string(), relu_forward), KernelFit::ratio(0.5))]
                .into_iter()
                .collect(),
            pooled_kernel_fit: [(relu_forward, KernelFit::ratio(2.0))].into_iter().collect(),
        };
        let relus = vec![row(152, 1); 10];
        // 10 µs kernels (5 µs at this GPU's ratio) issued every 200 µs:
        // the host's pace, to where it would issue the optimizer's.
        assert_eq!(calibration.file_us("NVIDIA T4", &relus, &[10.0; 10]), 10.0 * 200.0);
        // 1000 µs kernels (500 at the ratio): the GPU's pace, and the
        // optimizer waits for the host only after the last one.
        assert_eq!(calibration.file_us("NVIDIA T4", &relus, &[1000.0; 10]), 10.0 * 500.0);
        // Another GPU: the pooled ratio.
        assert_eq!(calibration.file_us("Tesla P4", &relus, &[1000.0; 10]), 10.0 * 2000.0);
        // The loss: the host waits for the GPU, then 50 µs to the backward
        // row (an operator the training lacks: its phase's 100 µs), which
        // unrecorded kernels (3000 µs at the forward ratio) precede.
        let mut unrecorded = row(152, 2);
        unrecorded.unrecorded = true;
        let rows = [row(152, 1), row(181, 1), row(999, 2), unrecorded];
        let us = [1000.0, 100.0, 100.0, 6000.0];
        // relu 0..500; loss issued at 200, runs 500..600; host waits to 600,
        // +50: backward issued at 650, after the unrecorded 3000 µs
        // (650..3650), runs 3650..3750; the optimizer's issue at 750.
        assert_eq!(calibration.file_us("NVIDIA T4", &rows, &us), 3750.0);
    }

    /// Streaming kernels take a line through (priced, measured): the op
    /// model's price holds a launch and synchronisation that ETS's kernel
    /// times lack, so a ratio fitted on small kernels prices large ones far
    /// too fast. Matrix work takes the ratio; so does a key with fewer than
    /// three pairs or a falling line. A fit never prices below zero.
    #[test]
    fn streaming_kernels_take_a_line_and_matrix_work_a_ratio() {
        // ETS's ReLUs on the 2080 Ti at batch 2 and 16, µs.
        let relu = OpWork::elementwise(crate::work::EwFunc::Relu, 1e6, 1.0);
        let mut sums = FitSums::default();
        for (priced, measured) in [(35.0, 3.0), (40.0, 12.0), (80.0, 63.0), (126.0, 90.0)] {
            sums.add(priced, measured, &relu);
        }
        // At batch 64: priced 256 µs, measured 245.
        let line = sums.fit(OpKind::Elementwise).unwrap();
        let large = line.apply(256.0, &relu);
        assert!((large / 245.0 - 1.0).abs() < 0.15, "{line:?} prices {large}");
        assert_eq!(line.apply(1.0, &relu), 0.0);
        let ratio = sums.fit(OpKind::Conv).unwrap();
        assert_eq!((ratio.slope, ratio.intercept), (168.0 / 281.0, 0.0));
        assert!(ratio.apply(256.0, &relu) < 0.8 * 245.0);

        let mut two = FitSums::default();
        two.add(35.0, 3.0, &relu);
        two.add(126.0, 90.0, &relu);
        assert_eq!(two.fit(OpKind::Elementwise), Some(KernelFit::ratio(93.0 / 161.0)));
        let mut falling = two;
        falling.add(300.0, 2.0, &relu);
        assert_eq!(falling.fit(OpKind::Elementwise), Some(KernelFit::ratio(95.0 / 461.0)));
        assert_eq!(FitSums::default().fit(OpKind::Elementwise), None);
    }

    /// A matrix-work ratio holds for work within twice the intensities of
    /// the rows it was learned on; beyond, the op model's price stands.
    /// Streaming lines hold everywhere.
    #[test]
    fn a_matrix_ratio_holds_near_the_intensities_it_was_learned_on() {
        // Classifier products of batch 16 and 64 (about 8 and 31 FLOP/B).
        let classifier = |batch: f64| OpWork::linear(1.0, batch, 4096.0, 4096.0);
        let mut sums = FitSums::default();
        for batch in [16.0, 64.0] {
            sums.add(100.0, 50.0, &classifier(batch));
        }
        let fit = sums.fit(OpKind::Gemm).unwrap();
        let (lo, hi) = (intensity(&classifier(16.0)), intensity(&classifier(64.0)));
        assert_eq!(fit.intensities, Some((lo / INTENSITY_REACH, hi * INTENSITY_REACH)));
        assert_eq!(fit.apply(100.0, &classifier(32.0)), 50.0, "inside: the ratio");
        assert_eq!(fit.apply(100.0, &classifier(128.0)), 50.0, "within twice the range");
        // A transformer's product, 16k rows: another regime.
        let fat = OpWork::linear(1.0, 16448.0, 768.0, 3072.0);
        assert!(intensity(&fat) > INTENSITY_REACH * hi);
        assert_eq!(fit.apply(100.0, &fat), 100.0, "beyond: the op model's price");
        assert_eq!(fit.apply(100.0, &classifier(1.0)), 100.0, "below too");
        let relu = OpWork::elementwise(crate::work::EwFunc::Relu, 1e6, 1.0);
        let mut streaming = FitSums::default();
        streaming.add(100.0, 50.0, &relu);
        assert_eq!(streaming.fit(OpKind::Elementwise).unwrap().intensities, None);
    }

    /// A prediction never reads the file's timing: the same rows with
    /// their timing columns zeroed (as the judged evaluation files come)
    /// price the same.
    #[test]
    fn predictions_do_not_read_the_files_timing() {
        let dir = tempfile::tempdir().unwrap();
        let header = "op,dir,params,flops,bytes,seq,rStartTime,kStartTime,kEndTime,space,kduration,batch,h,input_type";
        // (op, dir, params, flops, bytes, seq; the timing columns).
        let rows = [
            (
                r#"152,1,"[4, 64, 4096, 0, 0, 0, 0, 0, 0, 0]",0,0,1"#,
                "1000,5000,5100,7,100",
            ),
            (
                r#"201,1,"[4, 64, 4096, 0, 0, 0, 0, 0, 0, 0, 4, 1000, 4096, 0, 0, 0, 0, 0, 0, 0]",0,0,2"#,
                "1300,5107,5900,3,790",
            ),
            (
                r#"181,1,"[4, 64, 1000, 0, 0, 0, 0, 0, 0, 0]",0,0,3"#,
                "1500,5903,5950,900,47",
            ),
            (
                r#"152,2,"[4, 64, 4096, 0, 0, 0, 0, 0, 0, 0]",0,0,1"#,
                "6900,6850,6900,4,50",
            ),
        ];
        let write = |name: &str, zeroed: bool| {
            let path = dir.path().join(name);
            let lines: Vec<String> = rows
                .iter()
                .map(|(row, timing)| {
                    let timing = if zeroed { "0,0,0,0,0" } else { timing };
                    format!("{row},{timing},64,256,1")
                })
                .collect();
            std::fs::write(&path, format!("{header}\n{}\n", lines.join("\n"))).unwrap();
            crate::ets::read_ets(&path, "T4CPUALL").unwrap()
        };
        let (timed, zeroed) = (write("a.1_7.csv", false), write("b.1_7.csv", true));
        assert!(timed.label_ms().is_some() && zeroed.label_ms().is_none());
        let calibration = EtsCalibration {
            host_us: [((152, 1), 200.0)].into_iter().collect(),
            phase_host_us: [(1, 150.0), (2, 100.0)].into_iter().collect(),
            ..EtsCalibration::default()
        };
        let model_us = vec![100.0; timed.rows.len()];
        assert_eq!(
            calibration.file_us("NVIDIA T4", &timed.rows, &model_us),
            calibration.file_us("NVIDIA T4", &zeroed.rows, &model_us)
        );
        assert_eq!(timed.rows.len(), zeroed.rows.len());
    }
}

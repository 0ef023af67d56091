//! ETS's per-iteration operator sequences (`ets/datasets/<GPU>CPUALL/*.csv`,
//! one row per operator instance and phase; see that folder's CATALOG.md).
//!
//! The label is ETS's: the forward and backward rows' kernel time plus the
//! idle gap after each (`kduration + max(space, 0)`). A row's kernel time is
//! the op model's on that GPU times how far the kernels for that operator
//! and phase sat from it in the training files (on the same GPU folder where
//! there are some, else on any): cuDNN's algorithm choices, which the op
//! model's NeuSight measurements do not show. Gaps are the host's (the
//! profiler's NVTX ranges cost it time): a few µs after most operators, and
//! 3-8 ms a file at the loss and the start of the backward pass, whatever the
//! batch and GPU; they add to the kernels rather than hide behind them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use tracecast_schemas::hardware::{Catalog, builtin_catalog};

use crate::OpModelError;
use crate::collect::GpuTable;
use crate::csvio::{CsvTable, subfolders};
use crate::ets_codes::{self, element_bytes, forward_work};
use crate::features::Timing;
use crate::gpu::GpuSpec;
use crate::model::OpModel;
use crate::scored::{Evaluation, Scored, create, write_err};
use crate::work::{OpKind, OpWork};

/// Which kernels a row's share of the op model is calibrated with: cuDNN
/// picks other algorithms for each operator, kind of work, phase and
/// element size (float32 3x3 convolutions run Winograd and FFT kernels
/// that beat the FLOP count's time, 1x1 ones GEMMs; float64 ones neither:
/// on the T4, AlexNet's run 47-60x as long as in float32, for a 32x lower
/// peak). `op: None` stands for every operator of the kind: streaming
/// kernels (element-wise, norms, pools) of one kind share their code, so
/// an operator the training files lack (ReLU6) takes its kind's ratio
/// (ReLU's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelsOf {
    pub op: Option<i64>,
    pub kind: OpKind,
    pub dir: i64,
    pub element_bytes: u8,
}

impl KernelsOf {
    /// The key of every operator of this kind, for kinds whose kernels
    /// are alike across operators; `None` for matrix work, whose library
    /// algorithms differ by operator.
    fn any_op(self) -> Option<KernelsOf> {
        let matrix = matches!(self.kind, OpKind::Gemm | OpKind::Conv);
        (!matrix).then_some(KernelsOf { op: None, ..self })
    }
}

/// One forward or backward row.
#[derive(Clone, Debug)]
pub struct EtsRow {
    pub op: i64,
    /// 1 forward, 2 backward (optimizer rows are not part of the label).
    pub dir: i64,
    pub work: OpWork,
    /// `kduration + max(space, 0)`, µs; `None` when the timing is zeroed
    /// or the row is `unrecorded`.
    pub wall_us: Option<f64>,
    pub kernel_us: Option<f64>,
    /// Kernels that ran without a row of their own: ETS's analyzer records
    /// no backward row for most matrix products (`linear`, whose
    /// backward is two more products), so their time sits in the gaps of
    /// the rows around them, in the label all the same.
    pub unrecorded: bool,
}

impl EtsRow {
    pub fn kernels_of(&self) -> KernelsOf {
        KernelsOf {
            op: Some(self.op),
            kind: self.work.kind,
            dir: self.dir,
            element_bytes: self.work.dtype_bytes as u8,
        }
    }
}

pub struct EtsFile {
    pub path: PathBuf,
    /// The GPU folder, e.g. `T4CPUALL`.
    pub gpu_folder: String,
    pub file: String,
    pub batch: i64,
    pub h: i64,
    /// Bytes per element of the file's input (`input_type`).
    pub element_bytes: f64,
    pub rows: Vec<EtsRow>,
}

impl EtsFile {
    /// The key that holds out or selects every ETS file of one batch size
    /// (`ets-batch:64`), for batch-size what-ifs.
    pub fn batch_key(&self) -> String {
        format!("ets-batch:{}", self.batch)
    }

    /// The model and configuration as reports name them (`resnet18 batch
    /// 64 h 256`), with the element type where it is not float32.
    pub fn config(&self) -> String {
        let dtype = match self.element_bytes as u8 {
            2 => " float16",
            8 => " float64",
            _ => "",
        };
        let model = self.file.split('.').next().unwrap_or_default();
        format!("{model} batch {} h {}{dtype}", self.batch, self.h)
    }

    /// ETS's label in ms, where the timing columns hold one.
    pub fn label_ms(&self) -> Option<f64> {
        let walls: Option<Vec<f64>> = self.rows.iter().filter(|r| !r.unrecorded).map(|r| r.wall_us).collect();
        walls.map(|w| w.iter().sum::<f64>() / 1e3).filter(|&ms| ms > 0.0)
    }
}

/// Bytes per element of a file's `input_type` (1 float32, 2 float16, 3
/// float64); float32 where the column is absent.
fn file_element_bytes(input_type: Option<f64>) -> f64 {
    match input_type.map(|t| t as i64) {
        Some(2) => 2.0,
        Some(3) => 8.0,
        _ => 4.0,
    }
}

fn parse_params(text: &str) -> Vec<f64> {
    text.trim_matches(|c| c == '[' || c == ']' || c == '"')
        .split(',')
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .collect()
}

pub fn read_ets(path: &Path, gpu_folder: &str) -> Result<EtsFile, OpModelError> {
    let table = CsvTable::read(path)?;
    for c in [
        "op",
        "dir",
        "params",
        "flops",
        "bytes",
        "kduration",
        "space",
        "batch",
        "h",
    ] {
        if !table.has(c) {
            return Err(OpModelError::Parse {
                path: path.to_path_buf(),
                reason: format!("no `{c}` column: not an ETS operator sequence"),
            });
        }
    }
    let mut rows = Vec::new();
    // Autograd sequence numbers of the forward matrix products, and of
    // every backward row.
    let mut forward_products: Vec<(i64, EtsRow)> = Vec::new();
    let mut backward_seqs: HashSet<i64> = HashSet::new();
    // Rows whose params give no shape take it from elsewhere: a forward
    // attention from the input of the row before it, a backward row from
    // its forward row (same sequence number).
    let mut previous_input: Vec<f64> = Vec::new();
    let mut forward_by_seq: HashMap<i64, OpWork> = HashMap::new();
    let (mut batch, mut h, mut file_bytes) = (0, 0, 4.0);
    for i in 0..table.rows.len() {
        let op = table.require(i, "op", path)? as i64;
        let dir = table.require(i, "dir", path)? as i64;
        batch = table.number(i, "batch").unwrap_or(0.0) as i64;
        h = table.number(i, "h").unwrap_or(0.0) as i64;
        file_bytes = file_element_bytes(table.number(i, "input_type"));
        if dir != 1 && dir != 2 {
            continue;
        }
        let params = parse_params(table.get(i, "params"));
        let seq = table.number(i, "seq").map(|s| s as i64);
        let bytes_per_element = element_bytes(op, &params, file_bytes);
        let shapeless = ets_codes::is_shapeless(op, &params);
        let inferred = match dir {
            1 if shapeless => ets_codes::attention_work(op, &previous_input, bytes_per_element),
            _ if shapeless => seq.and_then(|s| forward_by_seq.get(&s)).copied(),
            _ => None,
        };
        let fw = inferred.unwrap_or_else(|| {
            forward_work(
                op,
                &params,
                table.number(i, "flops").unwrap_or(0.0),
                table.number(i, "bytes").unwrap_or(0.0),
                bytes_per_element,
            )
        });
        if dir == 1 {
            if !shapeless {
                previous_input = ets_codes::first_tensor(&params);
            }
            if let Some(seq) = seq {
                forward_by_seq.insert(seq, fw);
            }
        }
        let work = if dir == 2 { fw.backward() } else { fw };
        let kernel = table.number(i, "kduration").filter(|&k| k > 0.0);
        let wall = kernel.map(|k| (k + table.number(i, "space").unwrap_or(0.0).max(0.0)) / 1e3);
        if dir == 2 {
            backward_seqs.extend(seq);
        } else if let Some(seq) = seq.filter(|_| ets_codes::has_unrecorded_backward(op)) {
            forward_products.push((
                seq,
                EtsRow {
                    op,
                    dir: 2,
                    work: fw.backward(),
                    wall_us: None,
                    kernel_us: None,
                    unrecorded: true,
                },
            ));
        }
        rows.push(EtsRow {
            op,
            dir,
            work,
            wall_us: wall,
            kernel_us: kernel.map(|k| k / 1e3),
            unrecorded: false,
        });
    }
    rows.extend(
        forward_products
            .into_iter()
            .filter(|(seq, _)| !backward_seqs.contains(seq))
            .map(|(_, row)| row),
    );
    Ok(EtsFile {
        path: path.to_path_buf(),
        gpu_folder: gpu_folder.to_string(),
        file: path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string(),
        batch,
        h,
        element_bytes: file_bytes,
        rows,
    })
}

/// Every ETS file under `root/ets/datasets/<GPU folder>/`.
pub fn read_ets_dir(root: &Path) -> Result<Vec<EtsFile>, OpModelError> {
    let dir = root.join("ets/datasets");
    let mut files = Vec::new();
    let Ok(folders) = std::fs::read_dir(&dir) else {
        return Ok(files);
    };
    let mut folders: Vec<PathBuf> = folders.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    folders.sort();
    for folder in folders {
        let name = folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let mut csvs: Vec<PathBuf> = std::fs::read_dir(&folder)
            .map_err(|source| OpModelError::Read {
                path: folder.clone(),
                source,
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            .collect();
        csvs.sort();
        for csv in csvs {
            files.push(read_ets(&csv, &name)?);
        }
    }
    Ok(files)
}

/// The GPU an ETS folder was recorded on: `T4CPUALL` -> T4, `2080TiCPUALL`
/// -> RTX 2080 Ti, looked up among the spec sheets given, then the built-in
/// profiles. ETS runs in float16 and float64 too: a spec sheet's missing
/// 16- and 64-bit rates come from the built-in profile of its GPU.
pub fn folder_gpu(folder: &str, sheets: &GpuTable, catalog: &Catalog) -> Option<GpuSpec> {
    let base = folder.trim_end_matches("CPUALL");
    let mut spaced = String::new();
    let mut prev_digit = false;
    for c in base.chars() {
        if prev_digit && c.is_ascii_alphabetic() {
            spaced.push(' ');
        }
        prev_digit = c.is_ascii_digit();
        spaced.push(c);
    }
    sheets
        .specs
        .iter()
        .find(|s| {
            let name = s.name.to_ascii_lowercase();
            name.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| w == base.to_ascii_lowercase())
        })
        .map(|sheet| {
            let mut spec = sheet.clone();
            if let Some(full) = GpuSpec::builtin(catalog, &sheet.name) {
                spec.fill_missing_rates(&full);
            }
            spec
        })
        .or_else(|| GpuSpec::builtin(catalog, &spaced))
}

/// Files the GPU of every ETS folder under `dirs` in `gpus`, by folder name.
pub fn add_folder_gpus(gpus: &mut GpuTable, dirs: &[&Path]) -> Result<(), OpModelError> {
    let catalog = builtin_catalog()?;
    for dir in dirs {
        for folder in subfolders(&dir.join("ets/datasets")) {
            if gpus.get(&folder).is_none()
                && let Some(spec) = folder_gpu(&folder, gpus, &catalog)
            {
                gpus.insert(&folder, spec);
            }
        }
    }
    Ok(())
}

/// What the training set's ETS files teach beyond the op model: how far the
/// kernels of each operator and phase sit from the op model (time-weighted,
/// so the large rows that make up a label count most); the idle gap after a
/// row of each operator and phase (the median: the host's issue time per
/// operator, a few µs); and, per GPU folder and over all, the rest of a
/// file's gaps less the op model's time for its unrecorded kernels (the
/// host's fixed cost per iteration: the loss, the start of the backward
/// pass, under the profiler's NVTX ranges), which a deeper model pays
/// once, not once per operator.
#[derive(Clone, Debug, Default)]
pub struct EtsCalibration {
    pub gap_us: BTreeMap<(i64, i64), f64>,
    pub overhead_us: BTreeMap<String, f64>,
    pub pooled_overhead_us: f64,
    /// By (GPU folder, op, phase, element size), and by (op, phase, element
    /// size) over all folders.
    pub kernel_ratio: BTreeMap<(String, KernelsOf), f64>,
    pub pooled_kernel_ratio: BTreeMap<KernelsOf, f64>,
    pub files: usize,
}

/// One ETS file's folder, its rows' (op, phase, gap), and the op model's
/// times for its unrecorded kernels, which ran in those gaps.
type FileGaps = (String, Vec<(i64, i64, f64)>, Vec<(KernelsOf, f64)>);

pub fn calibrate(
    model: &OpModel,
    train: &Path,
    gpus: &GpuTable,
    holdout: &[String],
) -> Result<EtsCalibration, OpModelError> {
    let mut gaps: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
    let mut kernels: BTreeMap<KernelsOf, (f64, f64)> = BTreeMap::new();
    let mut folder_kernels: BTreeMap<(String, KernelsOf), (f64, f64)> = BTreeMap::new();
    let mut files: Vec<FileGaps> = Vec::new();
    for file in read_ets_dir(train)? {
        if holdout.iter().any(|g| g == &file.gpu_folder || *g == file.batch_key()) {
            continue;
        }
        let Some(spec) = gpus.spec(&file.gpu_folder) else {
            continue;
        };
        let pairs: Vec<_> = file.rows.iter().map(|r| (r.work, spec)).collect();
        let predicted = model.predict_us(&pairs, Timing::Workload)?;
        let mut rows = Vec::new();
        let mut unrecorded = Vec::new();
        for (r, p) in file.rows.iter().zip(predicted) {
            if r.unrecorded {
                unrecorded.push((r.kernels_of(), p));
                continue;
            }
            let (Some(wall), Some(kernel)) = (r.wall_us, r.kernel_us) else {
                continue;
            };
            let keys = [Some(r.kernels_of()), r.kernels_of().any_op()];
            for key in keys.into_iter().flatten() {
                for k in [
                    kernels.entry(key).or_default(),
                    folder_kernels.entry((file.gpu_folder.clone(), key)).or_default(),
                ] {
                    k.0 += kernel;
                    k.1 += p;
                }
            }
            gaps.entry((r.op, r.dir)).or_default().push(wall - kernel);
            rows.push((r.op, r.dir, wall - kernel));
        }
        files.push((file.gpu_folder.clone(), rows, unrecorded));
    }
    let gap_us: BTreeMap<(i64, i64), f64> = gaps
        .into_iter()
        .filter_map(|(k, v)| median(v).map(|m| (k, m)))
        .collect();
    let mut calibration = EtsCalibration {
        gap_us,
        kernel_ratio: ratios(folder_kernels),
        pooled_kernel_ratio: ratios(kernels),
        files: files.len(),
        ..EtsCalibration::default()
    };
    // The rest of each file's gaps, less the unrecorded kernels priced as
    // a prediction prices them.
    let mut overheads: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (folder, rows, unrecorded) in &files {
        let gaps: f64 = rows
            .iter()
            .map(|(op, dir, gap)| gap - calibration.gap_us[&(*op, *dir)])
            .sum();
        let hidden: f64 = unrecorded
            .iter()
            .map(|(kernels, us)| us * calibration.kernel_ratio_of(folder, *kernels))
            .sum();
        overheads.entry(folder.clone()).or_default().push(gaps - hidden);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let all: Vec<f64> = overheads.values().flatten().copied().collect();
    calibration.pooled_overhead_us = mean(&all);
    calibration.overhead_us = overheads.iter().map(|(f, v)| (f.clone(), mean(v))).collect();
    Ok(calibration)
}

/// Measured over predicted time, from their sums.
fn ratios<K: Ord>(sums: BTreeMap<K, (f64, f64)>) -> BTreeMap<K, f64> {
    sums.into_iter()
        .filter(|(_, (_, p))| *p > 0.0)
        .map(|(k, (m, p))| (k, m / p))
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
    /// How far the op model sat from the measured kernels of `kernels` on
    /// `folder`: that folder's, else all folders', for the operator, else
    /// for its kind (`KernelsOf::any_op`); 1 where no training row says.
    fn kernel_ratio_of(&self, folder: &str, kernels: KernelsOf) -> f64 {
        [Some(kernels), kernels.any_op()]
            .into_iter()
            .flatten()
            .find_map(|key| {
                self.kernel_ratio
                    .get(&(folder.to_string(), key))
                    .or_else(|| self.pooled_kernel_ratio.get(&key))
            })
            .copied()
            .unwrap_or(1.0)
    }

    /// A file's predicted label from its rows' op-model times, on `folder`.
    fn file_us(&self, folder: &str, rows: &[EtsRow], model_us: &[f64]) -> f64 {
        // Operators the training files lack take the median of theirs.
        let unknown_gap = median(self.gap_us.values().copied().collect()).unwrap_or(0.0);
        let typical_gap = |key: &(i64, i64)| self.gap_us.get(key).copied().unwrap_or(unknown_gap);
        let rows_us: f64 = rows
            .iter()
            .zip(model_us)
            .map(|(row, &us)| {
                let kernels = us * self.kernel_ratio_of(folder, row.kernels_of());
                // An unrecorded kernel runs in the gaps of recorded rows.
                if row.unrecorded {
                    kernels
                } else {
                    kernels + typical_gap(&(row.op, row.dir))
                }
            })
            .sum();
        rows_us + self.overhead_us.get(folder).copied().unwrap_or(self.pooled_overhead_us)
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
        let pairs: Vec<_> = file.rows.iter().map(|r| (r.work, spec)).collect();
        let predicted = model.predict_us(&pairs, Timing::Workload)?;
        ev.ops_predicted += predicted.len();
        let ms = calibration.file_us(&file.gpu_folder, &file.rows, &predicted) / 1e3;
        writeln!(w, "{},{},{},{},{ms:.6}", file.gpu_folder, file.file, file.batch, file.h).map_err(write_err(&path))?;
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::EwFunc;

    /// A deeper model pays the per-operator gap per row and the per-file
    /// host cost once: ten ReLU backward rows do not multiply the latter.
    #[test]
    fn gaps_per_row_and_per_file() {
        let relu_backward = KernelsOf {
            op: Some(152),
            kind: OpKind::Elementwise,
            dir: 2,
            element_bytes: 4,
        };
        let calibration = EtsCalibration {
            gap_us: [((152, 2), 2.0)].into_iter().collect(),
            overhead_us: [("T4CPUALL".to_string(), 5000.0)].into_iter().collect(),
            pooled_overhead_us: 3000.0,
            kernel_ratio: [(("T4CPUALL".to_string(), relu_backward), 0.5)].into_iter().collect(),
            pooled_kernel_ratio: [(relu_backward, 2.0)].into_iter().collect(),
            files: 1,
        };
        let relu = EtsRow {
            op: 152,
            dir: 2,
            work: OpWork::elementwise(EwFunc::Relu, 1e6, 2.0),
            wall_us: None,
            kernel_us: None,
            unrecorded: false,
        };
        let rows = vec![relu; 10];
        let model_us = vec![10.0; 10];
        assert_eq!(
            calibration.file_us("T4CPUALL", &rows, &model_us),
            10.0 * (5.0 + 2.0) + 5000.0
        );
        // Another GPU folder: the pooled ratio and host cost.
        assert_eq!(
            calibration.file_us("P4CPUALL", &rows, &model_us),
            10.0 * (20.0 + 2.0) + 3000.0
        );
    }

    /// ETS's analyzer records no backward row for a linear layer, whose
    /// backward kernels run in the gaps all the same: the file gets an
    /// unrecorded row for them, outside the label. A row whose params give
    /// no shape takes it from elsewhere: a forward attention from the row
    /// before it, a backward row from its forward row.
    #[test]
    fn unrecorded_backward_rows_and_borrowed_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vit.1_7.csv");
        let header = "op,dir,params,flops,bytes,kduration,space,seq,batch,h,input_type";
        let rows = [
            r#"0,1,"[4, 64, 257, 768, 0, 0, 0, 0, 0, 0]",0,0,100,5,1,64,256,1"#,
            r#"172,1,"[0, 0]",0,0,4000,5,2,64,256,1"#,
            r#"201,1,"[4, 64, 257, 768, 0, 0, 0, 0, 0, 0, 4, 3072, 768, 0, 0, 0, 0, 0, 0, 0]",0,0,900,5,3,64,256,1"#,
            r#"172,2,"[0, 0]",0,0,3000,2000,2,64,256,1"#,
            r#"0,2,"[4, 64, 257, 768, 0, 0, 0, 0, 0, 0]",0,0,200,0,1,64,256,1"#,
        ];
        std::fs::write(&path, format!("{header}\n{}\n", rows.join("\n"))).unwrap();
        let file = read_ets(&path, "T4CPUALL").unwrap();
        assert_eq!(file.rows.len(), 6);
        let attention = &file.rows[1];
        assert_eq!(attention.work.kind, OpKind::Gemm);
        let (b, l, e) = (64.0, 257.0, 768.0);
        assert_eq!(attention.work.flops, 8.0 * b * l * e * e + 4.0 * b * l * l * e);
        assert_eq!(file.rows[3].work, attention.work.backward());
        let unrecorded = &file.rows[5];
        assert!(unrecorded.unrecorded && unrecorded.dir == 2);
        assert_eq!(unrecorded.work, file.rows[2].work.backward());
        // The label is the recorded rows' alone: kernels plus gaps, in ms.
        assert_eq!(file.label_ms(), Some((8200.0 + 2015.0) / 1e6));
        assert_eq!(file.config(), "vit batch 64 h 256");
    }

    /// Every dataset ETS's result tables name resolves to a GPU from the
    /// built-in profiles alone (the P4 through its NeuSight name too).
    #[test]
    fn ets_folders_resolve_to_their_gpus() {
        let catalog = builtin_catalog().unwrap();
        let none = GpuTable::default();
        for (folder, expected) in [
            ("T4CPUALL", "NVIDIA T4"),
            ("2080TiCPUALL", "NVIDIA GeForce RTX 2080 Ti"),
            ("3080TiCPUALL", "NVIDIA GeForce RTX 3080 Ti"),
        ] {
            let spec = folder_gpu(folder, &none, &catalog).unwrap_or_else(|| panic!("{folder}: no GPU"));
            assert_eq!(spec.name, expected);
        }
        let mut sheets = GpuTable::default();
        let p4 = GpuSpec {
            name: "Tesla P4".into(),
            ..folder_gpu("T4CPUALL", &none, &catalog).unwrap()
        };
        sheets.insert("Tesla_P4", p4);
        assert_eq!(folder_gpu("P4CPUALL", &sheets, &catalog).unwrap().name, "Tesla P4");
    }
}

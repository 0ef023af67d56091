//! ETS's per-iteration operator sequences (`ets/datasets/<GPU>CPUALL/*.csv`,
//! one row per operator instance and phase; see that folder's CATALOG.md).
//!
//! The label is ETS's: the forward and backward rows' kernel time plus the
//! idle gap after each (`kduration + max(space, 0)`). A row's kernel time is
//! the op model's on that GPU times how far cuDNN/cuBLAS's kernels for that
//! operator and phase sat from it in the training files (median); its gap
//! is the mean gap after that operator and phase there (a few rows, such as
//! the loss's, carry most of a file's gaps: a median would miss them). The gaps are the host's
//! (the profiler's NVTX ranges cost it time): they stay at 3-8 ms a file
//! whatever the batch and GPU, so they add to the kernels rather than hide
//! behind them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use tracecast_schemas::hardware::{Catalog, builtin_catalog, lookup_gpu};

use crate::OpModelError;
use crate::collect::GpuTable;
use crate::csvio::CsvTable;
use crate::evaluate::{Evaluation, Scored, create, write_err};
use crate::features::Timing;
use crate::gpu::GpuSpec;
use crate::model::OpModel;
use crate::work::{EwFunc, OpWork};

/// One forward or backward row.
#[derive(Clone, Debug)]
pub struct EtsRow {
    pub op: i64,
    /// 1 forward, 2 backward (optimizer rows are not part of the label).
    pub dir: i64,
    pub work: OpWork,
    /// `kduration + max(space, 0)`, µs; `None` when the timing is zeroed.
    pub wall_us: Option<f64>,
    pub kernel_us: Option<f64>,
}

pub struct EtsFile {
    pub path: PathBuf,
    /// The GPU folder, e.g. `T4CPUALL`.
    pub gpu_folder: String,
    pub file: String,
    pub batch: i64,
    pub h: i64,
    pub rows: Vec<EtsRow>,
}

impl EtsFile {
    /// The key that holds out or selects every ETS file of one batch size
    /// (`ets-batch:64`), for batch-size what-ifs.
    pub fn batch_key(&self) -> String {
        format!("ets-batch:{}", self.batch)
    }

    /// ETS's label in ms, where the timing columns hold one.
    pub fn label_ms(&self) -> Option<f64> {
        let walls: Option<Vec<f64>> = self.rows.iter().map(|r| r.wall_us).collect();
        walls.map(|w| w.iter().sum::<f64>() / 1e3).filter(|&ms| ms > 0.0)
    }
}

fn parse_params(text: &str) -> Vec<f64> {
    text.trim_matches(|c| c == '[' || c == ']' || c == '"')
        .split(',')
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .collect()
}

/// The tensors PyProf packs into `params` for most ops: groups of 10, each
/// an element size followed by the non-zero dims.
fn tensors(params: &[f64]) -> Vec<Vec<f64>> {
    params
        .chunks(10)
        .filter(|c| c.first().is_some_and(|&e| e > 0.0))
        .map(|c| c[1..].iter().copied().filter(|&d| d > 0.0).collect::<Vec<f64>>())
        .filter(|dims| !dims.is_empty())
        .collect()
}

fn numel(dims: &[f64]) -> f64 {
    dims.iter().product()
}

/// The forward work of one row from its op code and params.
fn forward_work(op: i64, p: &[f64], flops: f64, bytes: f64) -> OpWork {
    let first = tensors(p).into_iter().next().unwrap_or_default();
    let n = numel(&first);
    let mut work = match op {
        // conv2d: N, C_in, H, W, C_out, H_out, W_out, kH, kW, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups, elem.
        203 if p.len() >= 16 => {
            let (nb, c_in, h, w, c_out, ho, wo, kh, kw, groups) =
                (p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[15].max(1.0));
            let rows = nb * ho * wo;
            let inner = c_in / groups * kh * kw;
            let mut work = OpWork::gemm(1.0, rows, inner, c_out, 4.0);
            work.kind = crate::work::OpKind::Conv;
            work.bytes = 4.0 * (nb * c_in * h * w + c_out * inner + rows * c_out);
            work
        }
        201 => {
            let t = tensors(p);
            match (t.first(), t.get(1)) {
                (Some(x), Some(wt)) if wt.len() == 2 => {
                    let inner = *x.last().unwrap_or(&1.0);
                    OpWork::linear(1.0, numel(x) / inner.max(1.0), inner, wt[0])
                }
                _ => OpWork::elementwise(EwFunc::Other, n, 1.0),
            }
        }
        152 => OpWork::elementwise(EwFunc::Relu, n, 1.0),
        212 => OpWork::elementwise(EwFunc::Dropout, n, 1.0),
        12 => OpWork::elementwise(EwFunc::Add, n, 2.0),
        16 => OpWork::elementwise(EwFunc::Mul, n, 2.0),
        181 => OpWork::softmax(n, *first.last().unwrap_or(&1.0)),
        // Pools and everything else: a pass over the first input.
        _ => OpWork::reduction(n, n / 4.0),
    };
    // PyProf's own estimates, where it made them, replace ours.
    if flops > 0.0 {
        work.flops = flops;
    }
    if bytes > 0.0 {
        work.bytes = bytes;
    }
    work
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
    let (mut batch, mut h) = (0, 0);
    for i in 0..table.rows.len() {
        let op = table.require(i, "op", path)? as i64;
        let dir = table.require(i, "dir", path)? as i64;
        batch = table.number(i, "batch").unwrap_or(0.0) as i64;
        h = table.number(i, "h").unwrap_or(0.0) as i64;
        if dir != 1 && dir != 2 {
            continue;
        }
        let params = parse_params(table.get(i, "params"));
        let fw = forward_work(
            op,
            &params,
            table.number(i, "flops").unwrap_or(0.0),
            table.number(i, "bytes").unwrap_or(0.0),
        );
        let work = if dir == 2 { fw.backward() } else { fw };
        let kernel = table.number(i, "kduration").filter(|&k| k > 0.0);
        let wall = kernel.map(|k| (k + table.number(i, "space").unwrap_or(0.0).max(0.0)) / 1e3);
        rows.push(EtsRow {
            op,
            dir,
            work,
            wall_us: wall,
            kernel_us: kernel.map(|k| k / 1e3),
        });
    }
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
/// -> RTX 2080 Ti, looked up among the spec sheets given, then the built-in profiles.
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
        .cloned()
        .or_else(|| {
            lookup_gpu(catalog, &spaced)
                .ok()
                .and_then(|p| GpuSpec::from_profile(&p).ok())
        })
}

/// What the training set's ETS files teach: per (op code, phase), the mean
/// gap after a row and the median ratio of measured kernel time to the op model's.
#[derive(Clone, Debug, Default)]
pub struct EtsCalibration {
    pub gap_us: BTreeMap<(i64, i64), f64>,
    pub kernel_ratio: BTreeMap<(i64, i64), f64>,
    pub files: usize,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

pub fn calibrate(
    model: &OpModel,
    train: &Path,
    sheets: &GpuTable,
    holdout: &[String],
) -> Result<EtsCalibration, OpModelError> {
    let catalog = builtin_catalog()?;
    let mut gaps: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
    let mut ratio: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
    let mut used = 0;
    for file in read_ets_dir(train)? {
        if holdout.iter().any(|g| g == &file.gpu_folder || *g == file.batch_key()) {
            continue;
        }
        let Some(spec) = folder_gpu(&file.gpu_folder, sheets, &catalog) else {
            continue;
        };
        let pairs: Vec<_> = file.rows.iter().map(|r| (r.work, &spec)).collect();
        let predicted = model.predict_us(&pairs, Timing::Workload)?;
        used += 1;
        for (r, p) in file.rows.iter().zip(predicted) {
            let (Some(wall), Some(kernel)) = (r.wall_us, r.kernel_us) else {
                continue;
            };
            ratio.entry((r.op, r.dir)).or_default().push(kernel / p.max(1e-3));
            gaps.entry((r.op, r.dir)).or_default().push(wall - kernel);
        }
    }
    Ok(EtsCalibration {
        gap_us: gaps
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k, v.iter().sum::<f64>() / v.len() as f64))
            .collect(),
        kernel_ratio: ratio
            .into_iter()
            .filter_map(|(k, v)| median(v).map(|m| (k, m)))
            .collect(),
        files: used,
    })
}

impl EtsCalibration {
    /// A row's predicted wall time from its op-model time.
    fn row_us(&self, row: &EtsRow, model_us: f64) -> f64 {
        let key = (row.op, row.dir);
        model_us * self.kernel_ratio.get(&key).copied().unwrap_or(1.0) + self.gap_us.get(&key).copied().unwrap_or(0.0)
    }
}

pub fn predict_dir(
    model: &OpModel,
    calibration: &EtsCalibration,
    eval: &Path,
    sheets: &GpuTable,
    out: &Path,
    wanted: &dyn Fn(&str) -> bool,
    ev: &mut Evaluation,
) -> Result<(), OpModelError> {
    let catalog = builtin_catalog()?;
    let path = out.join("ets.csv");
    let mut w = create(&path)?;
    writeln!(w, "gpu_folder,file,batch,h,predicted_ms").map_err(write_err(&path))?;
    for file in read_ets_dir(eval)? {
        if !wanted(&file.gpu_folder) && !wanted(&file.batch_key()) {
            continue;
        }
        let Some(spec) = folder_gpu(&file.gpu_folder, sheets, &catalog) else {
            ev.notes.push(format!(
                "{}: no spec sheet or hardware profile for the GPU of folder {}",
                file.path.display(),
                file.gpu_folder
            ));
            continue;
        };
        let pairs: Vec<_> = file.rows.iter().map(|r| (r.work, &spec)).collect();
        let predicted = model.predict_us(&pairs, Timing::Workload)?;
        ev.ops_predicted += predicted.len();
        let ms = file
            .rows
            .iter()
            .zip(&predicted)
            .map(|(r, &p)| calibration.row_us(r, p))
            .sum::<f64>()
            / 1e3;
        writeln!(w, "{},{},{},{},{ms:.6}", file.gpu_folder, file.file, file.batch, file.h).map_err(write_err(&path))?;
        ev.scored.push(Scored {
            set: "ets",
            gpu: file.gpu_folder.clone(),
            group: format!("batch {} h {}", file.batch, file.h),
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

    #[test]
    fn conv_and_linear_params() {
        let conv = parse_params("[16, 3, 256, 256, 64, 63, 63, 11, 11, 2, 2, 4, 4, 1, 1, 1, 4, 0, 0, 0]");
        let w = forward_work(203, &conv, 0.0, 0.0);
        assert_eq!(w.gemm.unwrap().rows, 16.0 * 63.0 * 63.0);
        assert_eq!(w.flops, 2.0 * 16.0 * 63.0 * 63.0 * 64.0 * 3.0 * 121.0);
        let lin = parse_params("[4, 16, 9216, 0, 0, 0, 0, 0, 0, 0, 4, 4096, 9216, 0, 0, 0, 0, 0, 0, 0, 4, 4096, 0]");
        let l = forward_work(201, &lin, 0.0, 0.0);
        let g = l.gemm.unwrap();
        assert_eq!((g.rows, g.inner, g.cols), (16.0, 9216.0, 4096.0));
        // PyProf's estimate wins where it made one.
        assert_eq!(forward_work(201, &lin, 123.0, 0.0).flops, 123.0);
    }
}

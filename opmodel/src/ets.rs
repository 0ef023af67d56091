//! ETS's per-iteration operator sequences (`ets/datasets/<GPU>CPUALL/*.csv`,
//! one row per operator instance and phase; see that folder's CATALOG.md).
//!
//! The label is ETS's: the forward and backward rows' kernel time plus the
//! idle gap after each (`kduration + max(space, 0)`). A row's kernel time is
//! the op model's on that GPU times how far the kernels for that operator
//! and phase sat from it in the training files (on the same GPU folder where
//! there are some, else on any): cuDNN's algorithm choices, which the op
//! model's NeuSight measurements do not show. Gaps are the host's: under
//! the profiler's NVTX ranges it takes about 0.2 ms from one operator to
//! the next, so the GPU idles wherever kernels are shorter than that
//! (ShuffleNet, small batches) and the label is the host's pace, and
//! after the loss the host waits for the GPU (`EtsCalibration::file_us`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use tracecast_schemas::hardware::Catalog;

use crate::OpModelError;
use crate::collect::GpuTable;
use crate::csvio::{CsvTable, subfolders};
use crate::ets_codes::{self, element_bytes, forward_work};
use crate::gpu::GpuSpec;
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
    pub(crate) fn any_op(self) -> Option<KernelsOf> {
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
    /// The host's time from this row's first runtime call to the next
    /// row's, µs (after the GPU drained, for the loss, where the host
    /// waits for it); `None` when the timing is zeroed.
    pub host_us: Option<f64>,
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
    // The host's clock: each row's first runtime call, and for the loss
    // the end of its kernels (the host waits for the GPU there).
    let call = |i: usize| table.number(i, "rStartTime").filter(|&t| t > 0.0);
    let host_us = |i: usize, op: i64| -> Option<f64> {
        let from = match ets_codes::is_loss(op) {
            true => call(i)?.max(table.number(i, "kEndTime").filter(|&t| t > 0.0)?),
            false => call(i)?,
        };
        Some((call(i + 1)? - from).max(0.0) / 1e3)
    };
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
                    host_us: None,
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
            host_us: if i + 1 < table.rows.len() { host_us(i, op) } else { None },
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
/// -> RTX 2080 Ti, and as ETS's result tables write them, `P4_CPUALL` and
/// `RTX3080Ti_CPUALL`; looked up among the spec sheets given, then the
/// built-in profiles. ETS runs in float16 and float64 too: `spec_sheets` has
/// filled a sheet's missing 16- and 64-bit rates from its GPU's built-in
/// profile.
pub fn folder_gpu(folder: &str, sheets: &GpuTable, catalog: &Catalog) -> Option<GpuSpec> {
    let base = folder
        .trim_end_matches("CPUALL")
        .trim_end_matches(['_', '-', ' '])
        .replace(['_', '-'], " ");
    let base = base.trim();
    let lower = base.to_ascii_lowercase();
    sheets
        .specs
        .iter()
        .find(|s| {
            let name = s.name.to_ascii_lowercase();
            name.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w == lower)
        })
        .cloned()
        .or_else(|| {
            // `2080Ti` -> `2080 Ti`; `RTX3080Ti` -> `RTX 3080 Ti` (a short
            // name that is all letters then digits, `P4`, `V100`, stays whole).
            [spaced(base, false), spaced(base, true)]
                .iter()
                .find_map(|name| GpuSpec::builtin(catalog, name))
        })
}

/// `name` with a space where digits turn to letters, and with `letters_too`
/// also where letters turn to digits, except for a single leading letter
/// (`P4`, `T4`, `V100` keep their shape).
fn spaced(name: &str, letters_too: bool) -> String {
    let mut out = String::new();
    let mut prev: Option<char> = None;
    for (i, c) in name.chars().enumerate() {
        if let Some(p) = prev {
            let digit_to_letter = p.is_ascii_digit() && c.is_ascii_alphabetic();
            let letter_to_digit = letters_too && p.is_ascii_alphabetic() && c.is_ascii_digit() && i > 1;
            if digit_to_letter || letter_to_digit {
                out.push(' ');
            }
        }
        prev = Some(c);
        out.push(c);
    }
    out
}

/// Files the GPU of every ETS folder under `dirs` in `gpus`, by folder name.
pub fn add_folder_gpus(gpus: &mut GpuTable, dirs: &[&Path], catalog: &Catalog) {
    for dir in dirs {
        for folder in subfolders(&dir.join("ets/datasets")) {
            if gpus.get(&folder).is_none()
                && let Some(spec) = folder_gpu(&folder, gpus, catalog)
            {
                gpus.insert(&folder, spec);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracecast_schemas::hardware::builtin_catalog;

    /// ETS's analyzer records no backward row for a linear layer, whose
    /// backward kernels run in the gaps all the same: the file gets an
    /// unrecorded row for them, outside the label. A row whose params give
    /// no shape takes it from elsewhere: a forward attention from the row
    /// before it, a backward row from its forward row.
    #[test]
    fn unrecorded_backward_rows_and_borrowed_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vit.1_7.csv");
        let header = "op,dir,params,flops,bytes,kduration,space,seq,batch,h,input_type,rStartTime,kEndTime";
        let rows = [
            r#"0,1,"[4, 64, 257, 768, 0, 0, 0, 0, 0, 0]",0,0,100,5,1,64,256,1,1000,0"#,
            r#"172,1,"[0, 0]",0,0,4000,5,2,64,256,1,1200,0"#,
            r#"201,1,"[4, 64, 257, 768, 0, 0, 0, 0, 0, 0, 4, 3072, 768, 0, 0, 0, 0, 0, 0, 0]",0,0,900,5,3,64,256,1,1500,0"#,
            r#"172,2,"[0, 0]",0,0,3000,2000,2,64,256,1,9000,0"#,
            r#"0,2,"[4, 64, 257, 768, 0, 0, 0, 0, 0, 0]",0,0,200,0,1,64,256,1,9400,0"#,
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
        // The host's time to the next row's first call, µs; none after the last.
        let hosts: Vec<Option<f64>> = file.rows.iter().map(|r| r.host_us).collect();
        assert_eq!(hosts, [Some(0.2), Some(0.3), Some(7.5), Some(0.4), None, None]);
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
            // As ETS's result tables name them.
            ("T4_CPUALL", "NVIDIA T4"),
            ("RTX2080Ti_CPUALL", "NVIDIA GeForce RTX 2080 Ti"),
            ("RTX3080TiCPUALL", "NVIDIA GeForce RTX 3080 Ti"),
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
        assert_eq!(folder_gpu("P4_CPUALL", &sheets, &catalog).unwrap().name, "Tesla P4");
        // A GPU no profile describes, or several do, stays unresolved (its
        // files get a note).
        assert!(folder_gpu("TitanRTXCPUALL", &none, &catalog).is_none());
        assert!(folder_gpu("A100CPUALL", &none, &catalog).is_none());
    }
}

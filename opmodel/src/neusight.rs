//! NeuSight's public measurements (`neusight/` in the layout of
//! `../shared/public`): spec sheets, isolated-operator latencies, and
//! end-to-end labels with their per-node graphs. See that folder's
//! CATALOG.md for what every column means.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tracecast_schemas::hardware::HardwareProfile;

use crate::OpModelError;
use crate::csvio::CsvTable;
use crate::gpu::GpuSpec;
use crate::work::{EwFunc, OpWork};

/// The key NeuSight files a GPU under: its device name with spaces as `_`
/// (`Tesla T4` -> `Tesla_T4`), as in `device_configs/` and `label/`.
pub fn gpu_key(device: &str) -> String {
    device.trim().replace(' ', "_")
}

/// Every spec sheet in `neusight/device_configs`, by GPU key (file stem and device name).
pub fn read_spec_sheets(neusight: &Path) -> Result<BTreeMap<String, GpuSpec>, OpModelError> {
    let dir = neusight.join("device_configs");
    let mut specs = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(specs);
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let profile = HardwareProfile::load(&path)?;
        let spec = GpuSpec::from_profile(&profile)?;
        if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
            specs.insert(stem.to_string(), spec.clone());
        }
        specs.insert(gpu_key(&profile.name), spec);
    }
    Ok(specs)
}

/// One row of a per-op CSV.
#[derive(Clone, Debug)]
pub struct PerOpRow {
    /// `OPName`: bmm, linear, conv, ln, softmax, add, addu, ...
    pub op: String,
    pub gpu: String,
    pub work: OpWork,
    /// `Latency` in ms, where measured.
    pub latency_ms: Option<f64>,
    /// The shape columns as written, in file order (echoed into predictions).
    pub shape: Vec<String>,
}

/// The shape columns of each op family, in NeuSight's order.
pub fn shape_columns(op: &str) -> &'static [&'static str] {
    match op {
        "bmm" | "linear" => &["B", "M", "N", "K"],
        "conv" => &[
            "B",
            "Input_Channel",
            "Output_Channel",
            "Kernel_Szie",
            "Input_Size",
            "Stride",
            "Padding",
        ],
        _ => &["B", "H"],
    }
}

/// The work of one per-op row from its op name and shape columns.
pub fn per_op_work(op: &str, v: &[f64]) -> Option<OpWork> {
    Some(match op {
        "bmm" => OpWork::bmm(v[0], v[1], v[2], v[3]),
        "linear" => OpWork::linear(v[0], v[1], v[2], v[3]),
        "conv" => OpWork::conv2d(v[0], v[1], v[2], v[3], v[4], v[5], v[6]),
        "ln" => OpWork::layer_norm(v[0] * v[1], v[1]),
        "softmax" => OpWork::softmax(v[0] * v[1], v[1]),
        "add" | "mul" | "div" | "pow" => OpWork::elementwise(EwFunc::from_name(op), v[0] * v[1], 2.0),
        "addu" | "mulu" | "divu" | "powu" | "relu" | "gelu" | "tanh" => {
            OpWork::elementwise(EwFunc::from_name(op), v[0] * v[1], 1.0)
        }
        // Another element-wise function over (B, H), as NeuSight names them:
        // two tensors in for the binary ones, one for the rest (a `u`
        // suffix is NeuSight's tensor-and-scalar form).
        other if v.len() >= 2 => {
            let inputs = if BINARY.contains(&other) { 2.0 } else { 1.0 };
            OpWork::elementwise(EwFunc::from_name(other), v[0] * v[1], inputs)
        }
        _ => return None,
    })
}

/// Element-wise functions of two tensors, beyond NeuSight's own four.
const BINARY: [&str; 5] = ["sub", "maximum", "minimum", "atan2", "where"];

/// Read one per-op CSV (train or test layout). The GPU comes from the
/// `Device` column, else from `default_gpu` (the file stem of a per-GPU file).
pub fn read_per_op(path: &Path, default_gpu: Option<&str>) -> Result<(CsvTable, Vec<PerOpRow>), OpModelError> {
    let table = CsvTable::read(path)?;
    let bad = |reason: String| OpModelError::Parse {
        path: path.to_path_buf(),
        reason,
    };
    if !table.has("OPName") {
        return Err(bad("no `OPName` column: not a NeuSight per-op file".into()));
    }
    let mut rows = Vec::with_capacity(table.rows.len());
    for i in 0..table.rows.len() {
        let op = table.get(i, "OPName").trim().to_string();
        let columns = shape_columns(&op);
        let shape: Vec<String> = columns.iter().map(|c| table.get(i, c).to_string()).collect();
        let values = columns
            .iter()
            .map(|c| table.require(i, c, path))
            .collect::<Result<Vec<f64>, _>>()?;
        let work = per_op_work(&op, &values).ok_or_else(|| bad(format!("line {}: unknown operator `{op}`", i + 2)))?;
        let device = table.get(i, "Device");
        let gpu = if device.trim().is_empty() {
            default_gpu
                .ok_or_else(|| bad(format!("line {}: no `Device` to say which GPU", i + 2)))?
                .to_string()
        } else {
            gpu_key(device)
        };
        rows.push(PerOpRow {
            op,
            gpu,
            work,
            latency_ms: table.number(i, "Latency"),
            shape,
        });
    }
    Ok((table, rows))
}

/// One end-to-end label file: `label/<GPU>/<model>-<mode>-<seqlen>-<batch>[-<option>].json`.
#[derive(Clone, Debug)]
pub struct Label {
    pub path: PathBuf,
    pub gpu: String,
    pub model: String,
    /// `train` or `inf`.
    pub mode: String,
    pub seqlen: u32,
    pub batch: u32,
    /// `fusion`, `dp4`, `tp4`, `pp4_1`, or empty.
    pub option: String,
    /// Transformer layers of the full model (null in some of NeuSight's files).
    pub num_layer: Option<f64>,
    /// Measured `e2e_latency` (fw + bw), ms, where present.
    pub e2e_ms: Option<f64>,
    pub fw_ms: Option<f64>,
}

impl Label {
    /// The graph CSV beside the label, named like it.
    pub fn graph_path(&self) -> PathBuf {
        self.path.with_extension("csv.gz")
    }

    /// The key that holds out or selects every label of this model
    /// (`model:bert_large`): a model never seen, on GPUs that were.
    pub fn model_key(&self) -> String {
        format!("model:{}", self.model)
    }

    /// The configuration's file stem without the option: graphs are shared across GPUs.
    pub fn config_stem(&self) -> String {
        format!("{}-{}-{}-{}", self.model, self.mode, self.seqlen, self.batch)
    }

    /// The measured latency a prediction is compared with: fw+bw for
    /// training, fw for inference.
    pub fn measured_ms(&self) -> Option<f64> {
        if self.mode == "inf" {
            self.fw_ms.or(self.e2e_ms)
        } else {
            self.e2e_ms
        }
    }
}

/// Every label JSON under `neusight/label/<GPU>/`, in path order.
pub fn read_labels(neusight: &Path) -> Result<Vec<Label>, OpModelError> {
    let root = neusight.join("label");
    let mut labels = Vec::new();
    let Ok(gpus) = std::fs::read_dir(&root) else {
        return Ok(labels);
    };
    let mut gpu_dirs: Vec<PathBuf> = gpus
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    gpu_dirs.sort();
    for dir in gpu_dirs {
        let gpu = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|source| OpModelError::Read {
                path: dir.clone(),
                source,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for path in files {
            labels.push(read_label(&path, &gpu)?);
        }
    }
    Ok(labels)
}

fn read_label(path: &Path, gpu: &str) -> Result<Label, OpModelError> {
    let bad = |reason: String| OpModelError::Parse {
        path: path.to_path_buf(),
        reason,
    };
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let parts: Vec<&str> = stem.split('-').collect();
    // The mode splits the name: a model's own name may hold dashes
    // (`gpt-neo_13-train-2048-1`), and so may an option.
    let Some(m) = (1..parts.len().saturating_sub(2)).find(|&i| matches!(parts[i], "train" | "inf")) else {
        return Err(bad(
            "the name is not <model>-<mode>-<seqlen>-<batch>[-<option>].json (mode: train or inf)".into(),
        ));
    };
    let model = parts[..m].join("-");
    let option = parts[m + 3..].join("-");
    let parts = [model.as_str(), parts[m], parts[m + 1], parts[m + 2], option.as_str()];
    let number = |s: &str, what: &str| {
        s.parse::<u32>()
            .map_err(|_| bad(format!("{what} `{s}` in the file name is not a number")))
    };
    let text = std::fs::read_to_string(path).map_err(|source| OpModelError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let num = |k: &str| {
        json.get(k)
            .and_then(serde_json::Value::as_f64)
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    Ok(Label {
        path: path.to_path_buf(),
        gpu: gpu.to_string(),
        model: parts[0].to_string(),
        mode: parts[1].to_string(),
        seqlen: number(parts[2], "sequence length")?,
        batch: number(parts[3], "batch")?,
        option: parts[4].to_string(),
        num_layer: num("num_layer"),
        e2e_ms: num("e2e_latency"),
        fw_ms: num("fw_latency"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::OpKind;

    /// Label names split at their mode, so a model or an option may hold dashes.
    #[test]
    fn label_names_split_at_their_mode() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, r#"{"num_layer": 24, "e2e_latency": 10.0, "fw_latency": 10.0}"#).unwrap();
            read_label(&path, "Tesla_T4")
        };
        let plain = write("bert_large-inf-512-8.json").unwrap();
        assert_eq!(
            (plain.model.as_str(), plain.seqlen, plain.batch, plain.option.as_str()),
            ("bert_large", 512, 8, "")
        );
        let dashed = write("gpt-neo_13-train-2048-1-pp4-2.json").unwrap();
        assert_eq!(
            (
                dashed.model.as_str(),
                dashed.mode.as_str(),
                dashed.seqlen,
                dashed.batch,
                dashed.option.as_str()
            ),
            ("gpt-neo_13", "train", 2048, 1, "pp4-2")
        );
        assert_eq!(dashed.config_stem(), "gpt-neo_13-train-2048-1");
        let err = write("bert_large-512-8.json").unwrap_err().to_string();
        assert!(err.contains("bert_large-512-8.json") && err.contains("mode"), "{err}");
    }

    /// Element-wise functions NeuSight's files do not hold yet are priced as
    /// element-wise work over (B, H), binary ones with two tensors in; an
    /// unknown layout still has no work.
    #[test]
    fn other_element_wise_functions_are_priced() {
        let sub = per_op_work("sub", &[4.0, 1024.0]).unwrap();
        let silu = per_op_work("silu", &[4.0, 1024.0]).unwrap();
        let add = per_op_work("add", &[4.0, 1024.0]).unwrap();
        assert_eq!((sub.kind, sub.elements), (OpKind::Elementwise, 4096.0));
        assert_eq!(sub.bytes, add.bytes, "two tensors in, one out");
        assert!(silu.bytes < sub.bytes, "one tensor in");
        assert!(per_op_work("silu", &[4.0]).is_none());
    }
}

//! Predictions for an evaluation directory laid out like `../shared/public`:
//! every NeuSight per-op test row, every end-to-end label, every ETS file.
//! Latencies in it are never read for predicting; where present they are
//! only compared with the predictions afterwards.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::OpModelError;
use crate::architectures::ModelConfig;
use crate::by_kind::by_kind;
use crate::collect::GpuTable;
use crate::csvio::csv_files;
use crate::ets_predict;
use crate::features::Timing;
use crate::graph::{ModelGraph, Node, read_graph};
use crate::model::OpModel;
use crate::neusight::{Label, read_labels, read_per_op, shape_columns};
use crate::scored::{Evaluation, KindScored, Scored};
use crate::scored::{create, write_err};
use crate::work::{HalfType, OpWork};

/// Shape columns of every per-op layout, in one header: bmm/linear's,
/// conv's, the vector ops' `H`, and the test files' `large` flag.
fn per_op_shape_columns() -> Vec<&'static str> {
    let mut columns: Vec<&'static str> = Vec::new();
    for op in ["bmm", "conv", "ln"] {
        for c in shape_columns(op) {
            if !columns.contains(c) {
                columns.push(c);
            }
        }
    }
    columns.push("large");
    columns
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// What of an evaluation directory is predicted.
pub struct Scope<'a> {
    /// Only these GPUs (all when empty).
    pub only: &'a [String],
    /// The per-op rows ran on 16-bit tensors; end-to-end labels and ETS
    /// files are then not predicted (they ran in float32 or say their own
    /// type).
    pub half: Option<HalfType>,
}

pub fn evaluate(
    model: &OpModel,
    calibration: &ets_predict::EtsCalibration,
    train: &Path,
    eval: &Path,
    gpus: &GpuTable,
    out: &Path,
    scope: &Scope<'_>,
) -> Result<Evaluation, OpModelError> {
    let (only, half) = (scope.only, scope.half);
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    let started = std::time::Instant::now();
    let wanted = |gpu: &str| only.is_empty() || only.iter().any(|g| g == gpu);
    let mut ev = Evaluation {
        scored: Vec::new(),
        by_kind: Vec::new(),
        ets_by_kind: Vec::new(),
        files: Vec::new(),
        notes: Vec::new(),
        ops_predicted: 0,
        predict_seconds: 0.0,
    };
    per_op(model, eval, gpus, out, &wanted, half, &mut ev)?;
    if half.is_some() {
        ev.notes.push(
            "16-bit per-op rows only: end-to-end labels and ETS files are not predicted under --precision (ops price --precision prices a model under autocast)".into(),
        );
    } else {
        end_to_end(model, train, eval, gpus, out, &wanted, &mut ev)?;
        ets_predict::predict_dir(model, calibration, eval, gpus, out, &wanted, &mut ev)?;
    }
    ev.predict_seconds = started.elapsed().as_secs_f64();
    let charts = crate::plots::write(out, &ev.scored, "")?;
    ev.files.extend(charts);
    Ok(ev)
}

fn per_op(
    model: &OpModel,
    eval: &Path,
    gpus: &GpuTable,
    out: &Path,
    wanted: &dyn Fn(&str) -> bool,
    half: Option<HalfType>,
    ev: &mut Evaluation,
) -> Result<(), OpModelError> {
    let dir = eval.join("neusight/per_op/test");
    let files = csv_files(&dir);
    let path = out.join("neusight_perop.csv");
    let mut w = create(&path)?;
    let shape_header = per_op_shape_columns();
    writeln!(w, "file,gpu,op,{},predicted_ms", shape_header.join(",")).map_err(write_err(&path))?;
    for file in files {
        // A file that cannot be read is named with its reason, and the
        // other files are still predicted.
        let (table, rows) = match read_per_op(&file, None) {
            Ok(read) => read,
            Err(e) => {
                ev.notes.push(format!("not predicted: {e}"));
                continue;
            }
        };
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let mut pairs = Vec::new();
        let mut kept = Vec::new();
        // Rows of GPUs without a spec sheet, counted per GPU: one note each.
        let mut unpriced: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, row) in rows.iter().enumerate() {
            if !wanted(&row.gpu) {
                continue;
            }
            match gpus.spec(&row.gpu) {
                Some(spec) => {
                    let work = if half.is_some() { row.work.in_half() } else { row.work };
                    pairs.push((work, spec));
                    kept.push(i);
                }
                None => *unpriced.entry(row.gpu.as_str()).or_default() += 1,
            }
        }
        for (gpu, n) in unpriced {
            ev.notes.push(format!(
                "{name}: {n} row(s) not predicted: no spec sheet or hardware profile for GPU {gpu}"
            ));
        }
        let predicted = model.predict_us(&pairs, Timing::Workload)?;
        ev.ops_predicted += predicted.len();
        let kind = name.trim_end_matches(".gz").trim_end_matches(".csv").to_string();
        for (&i, us) in kept.iter().zip(&predicted) {
            let row = &rows[i];
            let shapes: Vec<String> = shape_header.iter().map(|c| csv_cell(table.get(i, c))).collect();
            writeln!(
                w,
                "{},{},{},{},{:.6}",
                csv_cell(&name),
                csv_cell(&row.gpu),
                csv_cell(&row.op),
                shapes.join(","),
                us / 1e3
            )
            .map_err(write_err(&path))?;
            ev.scored.push(Scored {
                set: "perop",
                gpu: row.gpu.clone(),
                group: kind.clone(),
                option: String::new(),
                predicted_ms: us / 1e3,
                measured_ms: row.latency_ms,
                what: format!("{name}:{}", i + 2),
            });
        }
    }
    w.flush().map_err(write_err(&path))?;
    ev.files.push(path);
    Ok(())
}

/// Graph files by configuration stem (`bert_large-train-512-8`): the
/// evaluation set's own first, then the training set's (shapes do not depend
/// on the GPU).
fn graph_index(train: &Path, eval: &Path) -> BTreeMap<String, PathBuf> {
    let mut index = BTreeMap::new();
    for root in [train, eval] {
        let Ok(dirs) = std::fs::read_dir(root.join("neusight/label")) else {
            continue;
        };
        for dir in dirs.flatten() {
            index_files(&dir.path(), ".csv.gz", &mut index);
        }
    }
    index
}

/// Model configurations (`neusight/DLmodel_configs/<model>.json`) by model
/// name, the evaluation directory's first.
fn config_index(train: &Path, eval: &Path) -> BTreeMap<String, PathBuf> {
    let mut index = BTreeMap::new();
    for root in [train, eval] {
        index_files(&root.join("neusight/DLmodel_configs"), ".json", &mut index);
    }
    index
}

/// Indexes the files of `dir` ending in `suffix` by their name without it;
/// a later call's file replaces an earlier one's of the same name.
fn index_files(dir: &Path, suffix: &str, index: &mut BTreeMap<String, PathBuf>) {
    let Ok(files) = std::fs::read_dir(dir) else {
        return;
    };
    for f in files.flatten() {
        let p = f.path();
        if let Some(stem) = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(suffix))
        {
            index.insert(stem.to_string(), p);
        }
    }
}

/// Where a label's graph comes from.
#[derive(Debug)]
enum GraphSource {
    /// NeuSight's traced one-layer graph; the layer runs `num_layer` times.
    Traced { path: PathBuf, num_layer: u64 },
    /// Built from the model's configuration (a model or configuration with
    /// no traced graph, or a label with no layer count: Switch), with the
    /// label's layer count where it has one.
    Config { path: PathBuf, num_layer: Option<u64> },
}

fn end_to_end(
    model: &OpModel,
    train: &Path,
    eval: &Path,
    gpus: &GpuTable,
    out: &Path,
    wanted: &dyn Fn(&str) -> bool,
    ev: &mut Evaluation,
) -> Result<(), OpModelError> {
    let labels: Vec<Label> = read_labels(&eval.join("neusight"))?
        .into_iter()
        .filter(|l| wanted(&l.gpu) || wanted(&l.model_key()))
        .collect();
    let graphs = graph_index(train, eval);
    let configs = config_index(train, eval);
    // Layer counts by model, for labels whose own is missing (NeuSight's
    // multi-GPU labels write 0).
    let mut layers: BTreeMap<String, f64> = BTreeMap::new();
    for l in read_labels(&train.join("neusight"))?.iter().chain(&labels) {
        if let Some(n) = l.num_layer {
            layers.entry(l.model.clone()).or_insert(n);
        }
    }
    let path = out.join("neusight_e2e.csv");
    let mut w = create(&path)?;
    writeln!(w, "gpu,model,mode,seqlen,batch,option,predicted_ms").map_err(write_err(&path))?;
    let kinds_path = out.join("neusight_e2e_by_kind.csv");
    let mut kinds_w = create(&kinds_path)?;
    writeln!(
        kinds_w,
        "gpu,model,mode,seqlen,batch,kind,pass,nodes,predicted_ms,measured_ms"
    )
    .map_err(write_err(&kinds_path))?;
    let mut traced: BTreeMap<(PathBuf, bool), Vec<Node>> = BTreeMap::new();
    for label in &labels {
        let parallel = Parallel::of(&label.option);
        let training = label.mode == "train";
        let priced = parallel.priced_label(label, &layers);
        // Whether the graph is the label's own, timed on its GPU.
        let mut own_latencies = false;
        let graph = priced.and_then(|priced| {
            let (source, spec) = graph_for(&priced, &graphs, &configs, gpus)?;
            let graph = match source {
                GraphSource::Traced { path, num_layer } => {
                    own_latencies = path == priced.graph_path();
                    let key = (path, training);
                    if !traced.contains_key(&key) {
                        let nodes = read_graph(&key.0, training).map_err(|e| e.to_string())?;
                        traced.insert(key.clone(), nodes);
                    }
                    ModelGraph::of_layer(traced[&key].clone(), num_layer as f64)
                }
                GraphSource::Config { path, num_layer } => {
                    let mut config = ModelConfig::read(&path).map_err(|e| e.to_string())?;
                    if let Some(n) = num_layer {
                        config = config.with_layers(n as f64);
                    }
                    ev.notes.push(format!(
                        "{}: no traced graph with a layer count: built from {}",
                        label.path.display(),
                        path.display()
                    ));
                    config.graph(f64::from(priced.batch), f64::from(priced.seqlen), training)
                }
            };
            Ok((graph, spec))
        });
        let predicted = match graph {
            Ok((graph, spec)) => {
                let works = graph.works(training);
                let pairs: Vec<(OpWork, &_)> = works.iter().map(|(wk, _)| (*wk, spec)).collect();
                let us = model.predict_us(&pairs, Timing::Workload)?;
                ev.ops_predicted += us.len();
                let one_gpu = us.iter().zip(&works).map(|(t, (_, times))| t * times).sum::<f64>() / 1e3;
                if own_latencies && parallel == Parallel::One {
                    for k in by_kind(&graph, training, &us).unwrap_or_default() {
                        writeln!(
                            kinds_w,
                            "{},{},{},{},{:.6},{:.6}",
                            label_cells(label),
                            k.kind.name(),
                            k.pass.name(),
                            k.nodes,
                            k.predicted_ms,
                            k.measured_ms
                        )
                        .map_err(write_err(&kinds_path))?;
                        ev.by_kind.push(KindScored {
                            gpu: label.gpu.clone(),
                            mode: label.mode.clone(),
                            times: k,
                        });
                    }
                }
                if parallel != Parallel::One {
                    ev.notes.push(format!(
                        "{}: priced as {parallel:?} from one GPU's work, without the communication between GPUs",
                        label.path.display()
                    ));
                }
                Some(parallel.time_ms(one_gpu))
            }
            Err(reason) => {
                ev.notes
                    .push(format!("{}: not predicted: {reason}", label.path.display()));
                None
            }
        };
        writeln!(
            w,
            "{},{},{}",
            label_cells(label),
            csv_cell(&label.option),
            predicted.map_or(String::new(), |ms| format!("{ms:.6}"))
        )
        .map_err(write_err(&path))?;
        if let Some(ms) = predicted {
            ev.scored.push(Scored {
                set: "e2e",
                gpu: label.gpu.clone(),
                group: format!("{} {}", label.mode, label.model),
                option: label.option.clone(),
                predicted_ms: ms,
                measured_ms: label.measured_ms(),
                what: label.path.display().to_string(),
            });
        }
    }
    w.flush().map_err(write_err(&path))?;
    kinds_w.flush().map_err(write_err(&kinds_path))?;
    ev.files.push(path);
    ev.files.push(kinds_path);
    Ok(())
}

/// A label's `gpu,model,mode,seqlen,batch` cells, as both end-to-end files begin their rows.
fn label_cells(label: &Label) -> String {
    format!(
        "{},{},{},{},{}",
        csv_cell(&label.gpu),
        csv_cell(&label.model),
        label.mode,
        label.seqlen,
        label.batch
    )
}

/// How NeuSight ran a label with an option: one GPU (`fusion`, or none), or
/// Megatron on several (`dp4`, `tp4`, `pp4_1`: data, tensor or pipeline
/// parallel over 4 GPUs; `pp{stages}_{microbatches}`). Priced from one GPU's
/// prediction of the work each GPU does; the communication between GPUs is
/// left out (a note says so), which for these labels' sizes is a few percent.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Parallel {
    One,
    Data(u32),
    Tensor(u32),
    Pipeline { stages: u32, micro: u32 },
}

impl Parallel {
    fn of(option: &str) -> Parallel {
        let count = |s: &str| s.parse::<u32>().ok().filter(|&n| n > 0);
        if let Some(n) = option.strip_prefix("dp").and_then(count) {
            return Parallel::Data(n);
        }
        if let Some(n) = option.strip_prefix("tp").and_then(count) {
            return Parallel::Tensor(n);
        }
        if let Some((stages, micro)) = option.strip_prefix("pp").and_then(|r| r.split_once('_'))
            && let (Some(stages), Some(micro)) = (count(stages), count(micro))
        {
            return Parallel::Pipeline { stages, micro };
        }
        Parallel::One
    }

    /// The single-GPU configuration whose prediction this one is priced
    /// from: the batch each GPU (or microbatch) runs, the layer count from
    /// `layers` where the label has none.
    fn priced_label(&self, label: &Label, layers: &BTreeMap<String, f64>) -> Result<Label, String> {
        let split = match *self {
            Parallel::Data(n) => n,
            Parallel::Pipeline { micro, .. } => micro,
            Parallel::One | Parallel::Tensor(_) => 1,
        };
        if !label.batch.is_multiple_of(split) {
            return Err(format!("batch {} does not split over {split}", label.batch));
        }
        let mut priced = label.clone();
        priced.batch = label.batch / split;
        priced.num_layer = label.num_layer.or_else(|| layers.get(&label.model).copied());
        if *self != Parallel::One {
            // Its graph is the single-GPU configuration's, not one beside it.
            priced.option.clear();
            priced.path = label.path.with_file_name(format!("{}.json", priced.config_stem()));
        }
        Ok(priced)
    }

    /// The configuration's time from one GPU's time for the priced label.
    fn time_ms(&self, one_gpu_ms: f64) -> f64 {
        match *self {
            Parallel::One | Parallel::Data(_) => one_gpu_ms,
            Parallel::Tensor(n) => one_gpu_ms / f64::from(n),
            // GPipe: (microbatches + stages - 1) slots of one stage's share.
            Parallel::Pipeline { stages, micro } => one_gpu_ms * f64::from(micro + stages - 1) / f64::from(stages),
        }
    }
}

/// A label's graph and GPU, or why it cannot be predicted: the traced graph
/// beside it or of the same configuration in either directory, where the
/// label gives its layer count; else one built from the model's configuration.
fn graph_for<'a>(
    label: &Label,
    graphs: &BTreeMap<String, PathBuf>,
    configs: &BTreeMap<String, PathBuf>,
    gpus: &'a GpuTable,
) -> Result<(GraphSource, &'a crate::GpuSpec), String> {
    let spec = gpus
        .spec(&label.gpu)
        .ok_or_else(|| format!("no spec sheet for GPU {}", label.gpu))?;
    let beside = label.graph_path();
    let traced = if beside.is_file() {
        Some(beside)
    } else {
        graphs.get(&label.config_stem()).cloned()
    };
    let layers = label.num_layer.filter(|&n| n >= 1.0 && n.fract() == 0.0);
    let source = match (traced, layers) {
        (Some(path), Some(n)) => GraphSource::Traced {
            path,
            num_layer: n as u64,
        },
        (traced, layers) => match configs.get(&label.model) {
            Some(config) => GraphSource::Config {
                path: config.clone(),
                num_layer: layers.map(|n| n as u64),
            },
            None if traced.is_some() => {
                return Err(format!(
                    "its `num_layer` is missing and there is no configuration for model {} to build its graph from",
                    label.model
                ));
            }
            None => {
                return Err(format!(
                    "no per-node graph for {} in either directory, and no configuration for model {} (DLmodel_configs)",
                    label.config_stem(),
                    label.model
                ));
            }
        },
    };
    Ok((source, spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(option: &str, batch: u32, num_layer: Option<f64>) -> Label {
        Label {
            path: PathBuf::from(format!("label/GPU/gpt2_large-train-1024-{batch}-{option}.json")),
            gpu: "GPU".into(),
            model: "gpt2_large".into(),
            mode: "train".into(),
            seqlen: 1024,
            batch,
            option: option.into(),
            num_layer,
            e2e_ms: None,
            fw_ms: None,
        }
    }

    /// A label with no traced graph is built from its model's
    /// configuration, with the label's layer count where it has one.
    #[test]
    fn a_built_graph_takes_the_labels_layer_count() {
        let catalog = tracecast_schemas::hardware::builtin_catalog().unwrap();
        let mut gpus = GpuTable::default();
        gpus.insert("GPU", crate::GpuSpec::builtin(&catalog, "NVIDIA T4").unwrap());
        let config = PathBuf::from("DLmodel_configs/gpt2_large.json");
        let configs = BTreeMap::from([("gpt2_large".to_string(), config.clone())]);
        let none = BTreeMap::new();
        let built = |num_layer| match graph_for(&label("", 4, num_layer), &none, &configs, &gpus).unwrap().0 {
            GraphSource::Config { path, num_layer } => (path, num_layer),
            other => panic!("{other:?}"),
        };
        assert_eq!(built(Some(12.0)), (config.clone(), Some(12)));
        // No count, or NeuSight's 0 for multi-GPU runs: the configuration's own.
        assert_eq!(built(None), (config.clone(), None));
        assert_eq!(built(Some(0.0)), (config, None));
    }

    #[test]
    fn multi_gpu_options_are_priced_from_each_gpus_share() {
        assert_eq!(Parallel::of("dp4"), Parallel::Data(4));
        assert_eq!(Parallel::of("tp4"), Parallel::Tensor(4));
        assert_eq!(Parallel::of("pp4_1"), Parallel::Pipeline { stages: 4, micro: 1 });
        assert_eq!(Parallel::of("fusion"), Parallel::One);
        assert_eq!(Parallel::of(""), Parallel::One);
        assert_eq!(Parallel::of("dp0"), Parallel::One);

        let layers = BTreeMap::from([("gpt2_large".to_string(), 36.0)]);
        // Data parallel: each GPU runs a quarter of the batch, on the plain
        // configuration's graph; the layer count comes from another label.
        let dp = Parallel::Data(4).priced_label(&label("dp4", 4, None), &layers).unwrap();
        assert_eq!((dp.batch, dp.num_layer, dp.option.as_str()), (1, Some(36.0), ""));
        assert_eq!(dp.config_stem(), "gpt2_large-train-1024-1");
        assert!(Parallel::Data(4).priced_label(&label("dp4", 6, None), &layers).is_err());
        // Tensor parallel: the whole batch, a quarter of the work each.
        let tp = Parallel::Tensor(4)
            .priced_label(&label("tp4", 4, None), &layers)
            .unwrap();
        assert_eq!(tp.batch, 4);
        assert_eq!(Parallel::Tensor(4).time_ms(400.0), 100.0);
        // One microbatch through 4 stages: no overlap, the one-GPU time.
        assert_eq!(Parallel::Pipeline { stages: 4, micro: 1 }.time_ms(400.0), 400.0);
        // 8 microbatches: (8 + 3) slots of a quarter of one microbatch's time.
        assert_eq!(Parallel::Pipeline { stages: 4, micro: 8 }.time_ms(40.0), 110.0);
        assert_eq!(Parallel::Data(4).time_ms(120.0), 120.0);
    }
}

//! Training samples from a directory laid out like `../shared/public`:
//! NeuSight's isolated-operator latencies (`neusight/per_op/train`) and the
//! per-node latencies of its end-to-end graphs (`neusight/label`), each
//! paired with its GPU's spec sheet.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use crate::OpModelError;
use crate::csvio::csv_files;
use crate::features::Timing;
use crate::gpu::GpuSpec;
use crate::graph::{Node, read_graph};
use crate::model::Sample;
use crate::neusight::{Label, read_labels, read_per_op};
use crate::work::OpKind;

/// GPUs by NeuSight key, with a stable index for samples.
#[derive(Default, Clone)]
pub struct GpuTable {
    pub specs: Vec<GpuSpec>,
    index: BTreeMap<String, usize>,
}

impl GpuTable {
    pub fn from_map(map: &BTreeMap<String, GpuSpec>) -> GpuTable {
        let mut t = GpuTable::default();
        for (key, spec) in map {
            t.insert(key, spec.clone());
        }
        t
    }

    /// Files `spec` under `key` (one index per distinct spec).
    pub fn insert(&mut self, key: &str, spec: GpuSpec) -> usize {
        let i = self.specs.iter().position(|s| *s == spec).unwrap_or_else(|| {
            self.specs.push(spec);
            self.specs.len() - 1
        });
        self.index.insert(key.to_string(), i);
        i
    }

    pub fn get(&self, key: &str) -> Option<usize> {
        self.index.get(key).copied()
    }

    pub fn spec(&self, key: &str) -> Option<&GpuSpec> {
        self.get(key).map(|i| &self.specs[i])
    }
}

/// What went into a fit.
#[derive(Debug, Default, Clone)]
pub struct Collected {
    pub samples: Vec<Sample>,
    pub per_op_rows: usize,
    pub node_rows: usize,
    /// Files or GPUs skipped, with the reason.
    pub skipped: Vec<String>,
    pub sources: Vec<String>,
}

impl Collected {
    /// Adds another directory's samples.
    pub fn extend(&mut self, other: Collected) {
        self.samples.extend(other.samples);
        self.per_op_rows += other.per_op_rows;
        self.node_rows += other.node_rows;
        self.skipped.extend(other.skipped);
        self.sources.extend(other.sources);
    }
}

/// Per-node samples count for more than an isolated operator of the same
/// shape: they are the operators real models run.
const NODE_WEIGHT: f32 = 3.0;

/// How far a graph's measured node sum may sit from its label and still be trained on.
const GRAPH_LABEL_TOLERANCE: f64 = 0.15;

/// Measured samples under `root/neusight`, leaving out the GPUs in `holdout`.
pub fn collect(root: &Path, gpus: &GpuTable, holdout: &BTreeSet<String>) -> Result<Collected, OpModelError> {
    let neusight = root.join("neusight");
    let mut out = Collected::default();
    // Isolated operators.
    let per_op_files = csv_files(&neusight.join("per_op").join("train"));
    let per_op: Vec<_> = per_op_files
        .par_iter()
        .map(|path| {
            let stem = path
                .file_name()
                .and_then(|n| n.to_str())
                .map(|n| n.trim_end_matches(".gz").trim_end_matches(".csv").to_string());
            read_per_op(path, stem.as_deref()).map(|(_, rows)| (path.clone(), rows))
        })
        .collect::<Result<_, _>>()?;
    for (path, rows) in per_op {
        for row in rows {
            if holdout.contains(&row.gpu) {
                continue;
            }
            let (Some(ms), Some(gpu)) = (row.latency_ms, gpus.get(&row.gpu)) else {
                let note = format!("{}: no spec sheet for GPU {}", path.display(), row.gpu);
                // One note per file and GPU, not one per row.
                if gpus.get(&row.gpu).is_none() && out.skipped.last() != Some(&note) {
                    out.skipped.push(note);
                }
                continue;
            };
            out.samples.push(Sample {
                work: row.work,
                gpu,
                measured_us: ms * 1e3,
                weight: 1.0,
                timing: Timing::Sweep,
            });
            out.per_op_rows += 1;
        }
    }
    out.sources.push(format!(
        "{} isolated-operator latencies ({})",
        out.per_op_rows,
        neusight.join("per_op/train").display()
    ));
    // Per-node latencies of the end-to-end graphs, from graphs whose
    // measured nodes add up to their label: a graph timed under other
    // conditions than its label (NeuSight's A100-40GB inference graphs sum
    // to 1.2-1.5x theirs) would teach the wrong GPU speed.
    let labels = read_labels(&neusight)?;
    let graphs: Vec<(&Label, usize)> = labels
        .iter()
        .filter(|l| {
            !holdout.contains(&l.gpu)
                && !holdout.contains(&l.model_key())
                && l.option.is_empty()
                && l.num_layer.is_some()
                && l.graph_path().is_file()
        })
        .filter_map(|l| gpus.get(&l.gpu).map(|g| (l, g)))
        .collect();
    let nodes: Vec<_> = graphs
        .par_iter()
        .map(|(label, gpu)| read_graph(&label.graph_path(), label.mode == "train").map(|n| (*label, *gpu, n)))
        .collect::<Result<_, _>>()?;
    let mut used_graphs = 0;
    for (label, gpu, graph) in nodes {
        let graph: Vec<Node> = graph.into_iter().filter(|n| n.work.kind != OpKind::NoWork).collect();
        if let Some(measured) = label.measured_ms() {
            let training = label.mode == "train";
            let sum: f64 = graph
                .iter()
                .map(|n| {
                    let ms = n.fw_ms.unwrap_or(0.0) + if training { n.bw_ms.unwrap_or(0.0) } else { 0.0 };
                    if n.in_layer {
                        ms * label.num_layer.unwrap_or(1.0)
                    } else {
                        ms
                    }
                })
                .sum();
            if (sum / measured - 1.0).abs() > GRAPH_LABEL_TOLERANCE {
                out.skipped.push(format!(
                    "{}: its measured nodes add up to {sum:.1} ms, the label says {measured:.1} ms",
                    label.graph_path().display()
                ));
                continue;
            }
        }
        used_graphs += 1;
        for node in graph {
            if let Some(ms) = node.fw_ms.filter(|&m| m > 0.0) {
                out.samples.push(Sample {
                    work: node.work,
                    gpu,
                    measured_us: ms * 1e3,
                    weight: NODE_WEIGHT,
                    timing: Timing::Workload,
                });
                out.node_rows += 1;
            }
            if node.has_backward
                && let Some(ms) = node.bw_ms.filter(|&m| m > 0.0)
            {
                out.samples.push(Sample {
                    work: node.work.backward(),
                    gpu,
                    measured_us: ms * 1e3,
                    weight: NODE_WEIGHT,
                    timing: Timing::Workload,
                });
                out.node_rows += 1;
            }
        }
    }
    out.sources.push(format!(
        "{} per-node forward/backward latencies of {} end-to-end graphs ({})",
        out.node_rows,
        used_graphs,
        neusight.join("label").display()
    ));
    Ok(out)
}

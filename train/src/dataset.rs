//! Model inputs from a feature table: one row per window (the window model)
//! and one per item (the per-kernel baseline), with the target hardware's
//! figures, roofline estimates and the batch size joined in.
//!
//! Measured columns (flagged `measured` in `schemas/`: durations,
//! gaps, launch delays, time shares) are never inputs: they are what a
//! prediction for unseen hardware cannot know. Nor are identifiers, the
//! step's measured time, or the trace's own device figures (the hardware
//! profile supplies those, so another GPU's can replace them).

use std::collections::HashMap;

use arrow::array::{AsArray, RecordBatch};
use tracecast_schemas::Role;
use tracecast_schemas::features::{
    BACKWARD_PHASE, COMMUNICATION_FAMILY, FEATURE_POSITIONS, FEATURE_WINDOWS, OPTIMIZER_FAMILY, OPTIMIZER_PHASE,
    central_positions, position_column,
};
use tracecast_schemas::hardware::{Catalog, HardwareProfile};

use crate::TrainError;
use crate::hardware::{HARDWARE_INPUTS, HardwareInputs};
use crate::labels::{Labels, TraceLabel};
use crate::table::{FeatureTable, StepRow, column_f64};

/// Inputs computed here rather than read: they depend on the target hardware and batch size.
const DERIVED_INPUTS: [&str; 5] = [
    "central_flops",
    "central_bytes",
    "central_roofline_ns",
    "window_roofline_ns",
    "batch_size",
];

/// The per-position columns that are inputs.
fn position_inputs() -> impl Iterator<Item = &'static str> {
    FEATURE_POSITIONS
        .columns
        .iter()
        .filter(|c| c.role == Role::Value)
        .map(|c| c.name)
}

/// Input names of the window model for windows of `window` positions, less `exclude`.
pub fn window_input_names(window: usize, exclude: &[String]) -> Vec<String> {
    let fixed = FEATURE_WINDOWS
        .columns
        .iter()
        .filter(|c| c.role == Role::Value)
        .map(|c| c.name.to_string());
    let positions = (0..window).flat_map(|p| position_inputs().map(move |c| position_column(p, c)));
    let derived = DERIVED_INPUTS
        .iter()
        .chain(HARDWARE_INPUTS.iter())
        .map(|s| s.to_string());
    fixed
        .chain(positions)
        .chain(derived)
        .filter(|n| !exclude.contains(n))
        .collect()
}

/// Input names of the per-kernel baseline: one item's own columns, no context.
pub fn item_input_names() -> Vec<String> {
    position_inputs()
        .chain(["roofline_ns", "batch_size"])
        .chain(HARDWARE_INPUTS)
        .map(str::to_string)
        .collect()
}

/// What to price: the traces as recorded, or on another GPU and batch size.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scenario<'a> {
    pub gpu: Option<&'a HardwareProfile>,
    /// Batch size per GPU; needs the trace's own batch size (a label) to scale from.
    pub batch_size: Option<u32>,
    /// Price this trace only.
    pub only_trace: Option<&'a str>,
}

/// One trace of the table, as the scenario prices it.
#[derive(Clone, Debug)]
pub struct TraceInfo {
    pub trace_id: String,
    /// The run it belongs to; None where the lake does not say.
    pub job_id: Option<String>,
    /// The GPU it was recorded on, as the trace names it.
    pub recorded_gpu: Option<String>,
    /// The profile name it is priced on (the recorded GPU's or the scenario's); None when no profile matches.
    pub priced_gpu: Option<String>,
    pub label: TraceLabel,
    /// Batch size per GPU the rows are priced at (the label's unless the scenario sets one).
    pub batch_size: Option<u32>,
    hardware: HardwareInputs,
    batch_scale: f64,
}

/// A row-major matrix of model inputs with its targets and row identities.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub names: Vec<String>,
    pub x: Vec<f64>,
    pub target_ns: Vec<f64>,
    /// Index into [`Dataset::traces`].
    pub trace: Vec<u32>,
    pub step: Vec<i64>,
    /// Windows: measured sum of the central items' durations (the no-gap baseline). Items: the item's duration.
    pub busy_ns: Vec<f64>,
    /// Share of the central items launched in the backward phase.
    pub backward_share: Vec<f64>,
    /// Share of the central items that are collectives.
    pub communication_share: Vec<f64>,
    /// The physical estimate the model's output is relative to (see [`base_ns`]).
    pub base_ns: Vec<f64>,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.target_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.target_ns.is_empty()
    }

    pub fn width(&self) -> usize {
        self.names.len()
    }

    /// The rows whose index `keep` accepts, as a new matrix.
    pub fn subset(&self, keep: impl Fn(usize) -> bool) -> Rows {
        let w = self.width();
        let mut out = Rows {
            names: self.names.clone(),
            ..Rows::default()
        };
        for i in (0..self.len()).filter(|&i| keep(i)) {
            out.x.extend_from_slice(&self.x[i * w..(i + 1) * w]);
            out.target_ns.push(self.target_ns[i]);
            out.trace.push(self.trace[i]);
            out.step.push(self.step[i]);
            out.busy_ns.push(self.busy_ns[i]);
            out.backward_share.push(self.backward_share[i]);
            out.communication_share.push(self.communication_share[i]);
            out.base_ns.push(self.base_ns[i]);
        }
        out
    }
}

pub struct Dataset {
    pub traces: Vec<TraceInfo>,
    pub windows: Rows,
    pub items: Rows,
    pub steps: Vec<StepRow>,
    index: HashMap<String, usize>,
}

impl Dataset {
    pub fn trace_index(&self, trace_id: &str) -> Option<usize> {
        self.index.get(trace_id).copied()
    }
}

/// Builds the inputs of `names` (a model's list, or [`window_input_names`]) from `table`.
pub fn build(
    table: &FeatureTable,
    names: &[String],
    labels: &Labels,
    catalog: &Catalog,
    scenario: Scenario<'_>,
    with_items: bool,
) -> Result<Dataset, TrainError> {
    let steps: Vec<StepRow> = table
        .steps
        .iter()
        .filter(|s| scenario.only_trace.is_none_or(|only| s.trace_id == only))
        .cloned()
        .collect();
    let traces = trace_infos(table, &steps, labels, catalog, scenario)?;
    let index: HashMap<&str, u32> = traces
        .iter()
        .enumerate()
        .map(|(i, t)| (t.trace_id.as_str(), i as u32))
        .collect();
    let mut windows = Rows {
        names: names.to_vec(),
        ..Rows::default()
    };
    let mut items = Rows {
        names: item_input_names(),
        ..Rows::default()
    };
    let shape = Shape {
        window: table.window,
        central: central_positions(table.window, table.stride),
    };
    let bad = |reason: String| TrainError::Features {
        path: table.dir.join("windows"),
        reason,
    };
    for batch in &table.windows {
        let batch = match scenario.only_trace {
            Some(only) => &only_rows(batch, only).map_err(|e| bad(e.to_string()))?,
            None => batch,
        };
        let ids = batch
            .column_by_name("trace_id")
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| bad("no trace_id column".into()))?;
        let trace: Vec<u32> = (0..batch.num_rows())
            .map(|i| {
                index
                    .get(ids.value(i))
                    .copied()
                    .ok_or_else(|| bad(format!("trace {} has windows but no steps row", ids.value(i))))
            })
            .collect::<Result<_, _>>()?;
        let cols = BatchColumns::read(batch, &shape, &trace, &traces).map_err(bad)?;
        windows.append_windows(&cols, &trace, &traces, &shape).map_err(bad)?;
        if with_items {
            items.append_items(&cols, &trace, &traces, &shape);
        }
    }
    let index = traces
        .iter()
        .enumerate()
        .map(|(i, t)| (t.trace_id.clone(), i))
        .collect();
    Ok(Dataset {
        traces,
        windows,
        items,
        steps,
        index,
    })
}

/// The rows of `batch` that belong to trace `only`.
fn only_rows(batch: &RecordBatch, only: &str) -> Result<RecordBatch, arrow::error::ArrowError> {
    let ids = batch
        .column_by_name("trace_id")
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or_else(|| arrow::error::ArrowError::SchemaError("no trace_id column".into()))?;
    let mask = arrow::compute::kernels::cmp::eq(ids, &arrow::array::StringArray::new_scalar(only))?;
    arrow::compute::filter_record_batch(batch, &mask)
}

/// The ratio a batch-size what-if scales a trace's work by: the asked
/// batch over the recorded one (1 without a what-if). `dir` names the
/// feature table in the error when the recorded batch is unknown.
pub fn batch_scale(
    trace_id: &str,
    asked: Option<u32>,
    recorded: Option<u32>,
    dir: &std::path::Path,
) -> Result<f64, TrainError> {
    match (asked, recorded) {
        (None, _) => Ok(1.0),
        (Some(new), Some(old)) => Ok(f64::from(new) / f64::from(old)),
        (Some(_), None) => Err(TrainError::Features {
            path: dir.to_path_buf(),
            reason: format!(
                "trace {trace_id}: its batch size is unknown, so a batch-size what-if has nothing to scale from \
                 (give it in a labels file: trace_id,model,batch_size)"
            ),
        }),
    }
}

fn trace_infos(
    table: &FeatureTable,
    steps: &[StepRow],
    labels: &Labels,
    catalog: &Catalog,
    scenario: Scenario<'_>,
) -> Result<Vec<TraceInfo>, TrainError> {
    let mut infos: Vec<TraceInfo> = Vec::new();
    let mut seen = HashMap::new();
    for step in steps {
        if seen.contains_key(step.trace_id.as_str()) {
            continue;
        }
        seen.insert(step.trace_id.clone(), infos.len());
        let label = labels.get(&step.trace_id);
        let recorded = step.gpu_name.as_deref().and_then(|g| catalog.resolve(g));
        let priced = scenario.gpu.or(recorded);
        let batch_scale = batch_scale(&step.trace_id, scenario.batch_size, label.batch_size, &table.dir)?;
        infos.push(TraceInfo {
            trace_id: step.trace_id.clone(),
            job_id: step.job_id.clone(),
            recorded_gpu: step.gpu_name.clone(),
            priced_gpu: priced.map(|p| p.name.clone()),
            batch_size: scenario.batch_size.or(label.batch_size),
            label,
            hardware: priced.map_or_else(HardwareInputs::unknown, HardwareInputs::from_profile),
            batch_scale,
        });
    }
    Ok(infos)
}

struct Shape {
    window: usize,
    central: std::ops::Range<usize>,
}

/// One window batch's columns as f64, with the batch-size scaling applied.
struct BatchColumns {
    rows: usize,
    /// `[position][column]` for the position columns, by name without the `pNN_` prefix.
    positions: Vec<HashMap<&'static str, Vec<f64>>>,
    fixed: HashMap<String, Vec<f64>>,
}

impl BatchColumns {
    fn read(batch: &RecordBatch, shape: &Shape, trace: &[u32], traces: &[TraceInfo]) -> Result<Self, String> {
        let get = |name: &str| column_f64(batch, name).ok_or_else(|| format!("no `{name}` column"));
        let mut positions = Vec::with_capacity(shape.window);
        for p in 0..shape.window {
            let mut cols = HashMap::new();
            for c in FEATURE_POSITIONS.columns {
                cols.insert(c.name, get(&position_column(p, c.name))?);
            }
            let (phase, family) = (cols["phase"].clone(), cols["family"].clone());
            let fixed_size = |i: usize| {
                phase[i] == OPTIMIZER_PHASE || family[i] == OPTIMIZER_FAMILY || family[i] == COMMUNICATION_FAMILY
            };
            // Position columns that grow with the batch under a batch-size
            // what-if, except on optimizer work and collectives (parameters
            // and gradients do not).
            for column in FEATURE_POSITIONS.columns.iter().filter(|c| c.batch_scaled) {
                let values = cols.get_mut(column.name).expect("a position column");
                for (i, v) in values.iter_mut().enumerate() {
                    let scale = traces[trace[i] as usize].batch_scale;
                    if scale != 1.0 && !fixed_size(i) {
                        *v *= scale;
                    }
                }
            }
            positions.push(cols);
        }
        let mut fixed = HashMap::new();
        for c in FEATURE_WINDOWS.columns {
            if let Some(values) = column_f64(batch, c.name) {
                fixed.insert(c.name.to_string(), values);
            }
        }
        // Window sums follow their scaled positions.
        if trace.iter().any(|&t| traces[t as usize].batch_scale != 1.0) {
            for (sum, part) in [("window_flops", "flops"), ("window_bytes", "bytes")] {
                let total = (0..batch.num_rows())
                    .map(|i| positions.iter().map(|p| nan_to_zero(p[part][i])).sum())
                    .collect();
                fixed.insert(sum.to_string(), total);
            }
        }
        Ok(BatchColumns {
            rows: batch.num_rows(),
            positions,
            fixed,
        })
    }

    fn roofline(&self, p: usize, i: usize, hw: &HardwareInputs) -> f64 {
        let c = &self.positions[p];
        if c["family"][i].is_nan() {
            return 0.0;
        }
        hw.roofline_ns(c["family"][i], c["dtype_bytes"][i], c["flops"][i], c["bytes"][i])
    }
}

fn nan_to_zero(v: f64) -> f64 {
    if v.is_nan() { 0.0 } else { v }
}

fn batch_input(info: &TraceInfo) -> f64 {
    info.batch_size.map_or(f64::NAN, f64::from)
}

impl Rows {
    fn append_windows(
        &mut self,
        cols: &BatchColumns,
        trace: &[u32],
        traces: &[TraceInfo],
        shape: &Shape,
    ) -> Result<(), String> {
        let central = shape.central.clone();
        let step = cols.fixed.get("step_id").ok_or("no step_id column")?;
        let target = cols.fixed.get("target_ns").ok_or("no target_ns column")?;
        // Resolve every name once: a fixed column, a position column, or a derived input.
        enum Source<'a> {
            Values(&'a [f64]),
            Derived(usize),
            Hardware(usize),
        }
        let mut sources = Vec::with_capacity(self.names.len());
        for name in &self.names {
            let source = if let Some(v) = cols.fixed.get(name) {
                Source::Values(v)
            } else if let Some(d) = DERIVED_INPUTS.iter().position(|d| d == name) {
                Source::Derived(d)
            } else if let Some(h) = HARDWARE_INPUTS.iter().position(|h| h == name) {
                Source::Hardware(h)
            } else if let Some((p, c)) = parse_position(name) {
                let v = cols.positions.get(p).and_then(|m| m.get(c));
                Source::Values(
                    v.ok_or_else(|| format!("the model needs `{name}`, which windows of W={} lack", shape.window))?,
                )
            } else {
                return Err(format!(
                    "the model needs input `{name}`, which this feature table does not have"
                ));
            };
            sources.push(source);
        }
        for i in 0..cols.rows {
            let info = &traces[trace[i] as usize];
            let hw = &info.hardware;
            let sum = |f: &dyn Fn(usize) -> f64, range: std::ops::Range<usize>| -> f64 {
                range.map(|p| nan_to_zero(f(p))).sum()
            };
            // Without a hardware profile there is no roofline: missing, not zero.
            let roofline_sum = |range: std::ops::Range<usize>| {
                if hw.is_unknown() {
                    f64::NAN
                } else {
                    sum(&|p| cols.roofline(p, i, hw), range)
                }
            };
            let derived = [
                sum(&|p| cols.positions[p]["flops"][i], central.clone()),
                sum(&|p| cols.positions[p]["bytes"][i], central.clone()),
                roofline_sum(central.clone()),
                roofline_sum(0..shape.window),
                batch_input(info),
            ];
            for source in &sources {
                self.x.push(match source {
                    Source::Values(v) => v[i],
                    Source::Derived(d) => derived[*d],
                    Source::Hardware(h) => hw.values[*h],
                });
            }
            self.target_ns.push(target[i]);
            self.trace.push(trace[i]);
            self.step.push(step[i] as i64);
            self.busy_ns
                .push(sum(&|p| cols.positions[p]["dur_ns"][i], central.clone()));
            let present = central
                .clone()
                .filter(|&p| !cols.positions[p]["family"][i].is_nan())
                .count();
            self.base_ns.push(base_ns(derived[2], present));
            let share = |of: &dyn Fn(usize) -> bool| {
                let n = central.clone().filter(|&p| of(p)).count();
                if present > 0 { n as f64 / present as f64 } else { 0.0 }
            };
            self.backward_share
                .push(share(&|p| cols.positions[p]["phase"][i] == BACKWARD_PHASE));
            self.communication_share
                .push(share(&|p| cols.positions[p]["family"][i] == COMMUNICATION_FAMILY));
        }
        Ok(())
    }

    fn append_items(&mut self, cols: &BatchColumns, trace: &[u32], traces: &[TraceInfo], shape: &Shape) {
        let step = &cols.fixed["step_id"];
        let own: Vec<&'static str> = position_inputs().collect();
        for i in 0..cols.rows {
            let info = &traces[trace[i] as usize];
            for p in shape.central.clone() {
                let c = &cols.positions[p];
                if c["family"][i].is_nan() {
                    continue; // past the step's end
                }
                self.x.extend(own.iter().map(|name| c[name][i]));
                self.x.push(cols.roofline(p, i, &info.hardware));
                self.x.push(batch_input(info));
                self.x.extend_from_slice(&info.hardware.values);
                self.target_ns.push(c["dur_ns"][i] + c["gap_ns"][i]);
                self.trace.push(trace[i]);
                self.step.push(step[i] as i64);
                self.busy_ns.push(c["dur_ns"][i]);
                self.base_ns.push(base_ns(cols.roofline(p, i, &info.hardware), 1));
                self.backward_share.push(f64::from(c["phase"][i] == BACKWARD_PHASE));
                self.communication_share
                    .push(f64::from(c["family"][i] == COMMUNICATION_FAMILY));
            }
        }
    }
}

/// Time every GPU item takes at least, whatever its size: launch and
/// scheduling overhead (a few µs on current GPUs).
pub const ITEM_FLOOR_NS: f64 = 2_000.0;

/// The physical estimate of `items` items whose roofline time sums to
/// `roofline_ns`: the roofline plus the per-item floor. It grows with FLOPs
/// and bytes and shrinks with faster hardware, so a model fitted relative to
/// it carries batch-size and GPU what-ifs beyond the range of its training
/// data, which a tree model on absolute times cannot. Without a hardware
/// profile (NaN roofline) it is the floor alone.
pub fn base_ns(roofline_ns: f64, items: usize) -> f64 {
    let roofline = if roofline_ns.is_finite() { roofline_ns } else { 0.0 };
    roofline + ITEM_FLOOR_NS * items as f64
}

/// `p07_flops` -> (7, "flops").
fn parse_position(name: &str) -> Option<(usize, &'static str)> {
    let rest = name.strip_prefix('p')?;
    let (digits, column) = rest.split_once('_')?;
    let p = digits.parse().ok()?;
    FEATURE_POSITIONS
        .columns
        .iter()
        .find(|c| c.name == column)
        .map(|c| (p, c.name))
}

#[cfg(test)]
impl TraceInfo {
    pub fn for_tests(trace_id: &str, gpu: &str, label: TraceLabel) -> TraceInfo {
        TraceInfo {
            trace_id: trace_id.into(),
            job_id: None,
            recorded_gpu: Some(gpu.into()),
            priced_gpu: Some(gpu.into()),
            batch_size: label.batch_size,
            label,
            hardware: HardwareInputs::unknown(),
            batch_scale: 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_columns_are_never_inputs() {
        let names = window_input_names(4, &[]);
        for banned in [
            "target_ns",
            "step_dur_ns",
            "step_remainder_ns",
            "share_gemm",
            "p00_gap_ns",
            "p03_dur_ns",
            "p01_launch_delay_ns",
            "sm_count",
        ] {
            assert!(!names.iter().any(|n| n == banned), "{banned} is an input");
        }
        for wanted in [
            "p00_flops",
            "p03_grid",
            "count_gemm",
            "window_flops",
            "central_roofline_ns",
            "hw_peak_fp32_tflops",
            "batch_size",
        ] {
            assert!(names.iter().any(|n| n == wanted), "{wanted} is missing");
        }
        assert!(!window_input_names(4, &["p00_flops".into()]).contains(&"p00_flops".to_string()));
        assert!(!item_input_names().iter().any(|n| n == "gap_ns" || n == "dur_ns"));
    }

    /// The roles in `schemas/` give the same inputs the shipped window model
    /// was trained on (the lists they replace named them by hand).
    #[test]
    fn column_roles_give_the_shipped_models_inputs() {
        let card: serde_json::Value =
            serde_json::from_str(include_str!("../model/default/model.json")).expect("the shipped card");
        let features: Vec<String> = card["features"]
            .as_array()
            .expect("features")
            .iter()
            .map(|f| f.as_str().expect("a name").to_string())
            .collect();
        let window = card["window"].as_u64().expect("window") as usize;
        assert_eq!(window_input_names(window, &[]), features);
        let scaled: Vec<&str> = FEATURE_POSITIONS
            .columns
            .iter()
            .filter(|c| c.batch_scaled)
            .map(|c| c.name)
            .collect();
        assert_eq!(scaled, ["flops", "bytes", "in0_numel", "grid"]);
    }

    #[test]
    fn position_names_parse() {
        assert_eq!(parse_position("p07_flops"), Some((7, "flops")));
        assert_eq!(
            parse_position("p12_shared_memory_bytes"),
            Some((12, "shared_memory_bytes"))
        );
        assert_eq!(parse_position("count_gemm"), None);
        assert_eq!(parse_position("p01_nothing"), None);
    }
}

//! Bytes all-reduced per iteration under data parallelism, read off a trace's
//! windows: the parameters its optimizer updates (gradients are the same
//! size), else the bytes of its own collectives.

use std::collections::HashMap;

use tracecast_schemas::features::{COMMUNICATION_FAMILY, OPTIMIZER_PHASE, central_positions, position_column};
use tracecast_train::{FeatureTable, column_f64};

/// Where a gradient size came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradientSource {
    /// `--gradient-bytes`.
    Flag,
    /// Per step, the median over optimizer operators of each operator's
    /// total first-input bytes: most update operators touch every parameter
    /// once (a plain sum would count each parameter once per operator, and
    /// an operator used twice per parameter, as `add_` with weight decay,
    /// would double the largest). An operator that launches several kernels
    /// per call is counted once per kernel (the first input's size repeats
    /// on each): `--gradient-bytes` overrides where that misleads.
    OptimizerInputs,
    /// Per step, the bytes of the trace's communication items.
    Collectives,
}

/// Median over steps of each trace's gradient bytes, with the source used.
pub fn estimate(table: &FeatureTable) -> HashMap<String, (f64, GradientSource)> {
    // (trace, step) -> (op_code -> bytes, collective bytes)
    let mut per_step: HashMap<(String, i64), (HashMap<i64, f64>, f64)> = HashMap::new();
    for batch in &table.windows {
        let (Some(ids), Some(steps)) = (
            batch
                .column_by_name("trace_id")
                .and_then(|c| c.as_any().downcast_ref::<arrow::array::StringArray>()),
            column_f64(batch, "step_id"),
        ) else {
            continue;
        };
        for p in central_positions(table.window, table.stride) {
            let col = |name: &str| column_f64(batch, &position_column(p, name));
            let (Some(family), Some(phase), Some(op), Some(numel), Some(dtype), Some(bytes)) = (
                col("family"),
                col("phase"),
                col("op_code"),
                col("in0_numel"),
                col("dtype_bytes"),
                col("bytes"),
            ) else {
                continue;
            };
            for i in 0..batch.num_rows() {
                let entry = per_step.entry((ids.value(i).to_string(), steps[i] as i64)).or_default();
                if phase[i] == OPTIMIZER_PHASE && numel[i].is_finite() && dtype[i].is_finite() {
                    *entry.0.entry(op[i] as i64).or_default() += numel[i] * dtype[i];
                }
                if family[i] == COMMUNICATION_FAMILY && bytes[i].is_finite() {
                    entry.1 += bytes[i];
                }
            }
        }
    }
    let mut per_trace: HashMap<String, (Vec<f64>, Vec<f64>)> = HashMap::new();
    for ((trace, _), (ops, collective)) in per_step {
        let e = per_trace.entry(trace).or_default();
        if let Some(m) = median(ops.into_values().collect()) {
            e.0.push(m);
        }
        e.1.push(collective);
    }
    per_trace
        .into_iter()
        .filter_map(|(trace, (optimizer, collective))| {
            let from_optimizer = median(optimizer).filter(|v| *v > 0.0);
            let from_collectives = median(collective).filter(|v| *v > 0.0);
            let found = from_optimizer
                .map(|v| (v, GradientSource::OptimizerInputs))
                .or(from_collectives.map(|v| (v, GradientSource::Collectives)))?;
            Some((trace, found))
        })
        .collect()
}

/// The lower median.
impl GradientSource {
    pub fn name(self) -> &'static str {
        match self {
            GradientSource::Flag => "flag",
            GradientSource::OptimizerInputs => "optimizer inputs",
            GradientSource::Collectives => "collectives",
        }
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[(v.len() - 1) / 2])
}

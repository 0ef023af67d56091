//! The notes a prediction carries per trace: what a what-if moved and how,
//! how much of the priced work is idle gaps, host time or the profiler's.

use std::collections::BTreeMap;

use tracecast_train::Dataset;

use crate::{Coverage, StepPrediction};

/// What share of each trace's kernel time the op model moved from shapes,
/// from the recorded time alone, or left as recorded.
pub(crate) fn coverage_notes(data: &Dataset, coverage: &[Coverage]) -> Vec<String> {
    data.traces
        .iter()
        .zip(coverage)
        .map(|(info, c)| {
            let total = c.total_ns();
            if total <= 0.0 {
                return format!(
                    "trace {}: what-if not applied: no hardware profile with a peak FP32 rate and a memory bandwidth for its recorded GPU ({})",
                    info.trace_id,
                    info.recorded_gpu.as_deref().unwrap_or("unknown")
                );
            }
            let pct = |v: f64| 100.0 * v / total;
            let steps = data.steps.iter().filter(|s| s.trace_id == info.trace_id).count();
            let tf32 = c.tf32.map_or(String::new(), |(recorded, asked)| {
                format!(
                    "; TF32 as recorded: {}, as priced: {} (--tf32)",
                    recorded.describe(),
                    asked.describe()
                )
            });
            let half = if c.halved_ns + c.measured_ratio_ns > 0.0 {
                format!(
                    "; {:.0}% of it, float32 kernels, priced in 16 bits as autocast runs them (--precision: softmax, norms, losses and kernels with a float32 input stay float32, mixed precision keeps the optimizer's), {:.0}% at their float32 time times the 16-bit ratio measured for their kind (PyTorch's own depthwise convolutions, pooling and broadcasting arithmetic, bfloat16's batch norm), and autocast's casts add {:.2} ms a step",
                    pct(c.halved_ns),
                    pct(c.measured_ratio_ns),
                    c.cast_ns / 1e6 / steps.max(1) as f64
                )
            } else {
                String::new()
            };
            format!(
                "trace {}: the what-if moved {:.0}% of its kernel time by operator shapes, {:.0}% by kernel family and recorded time (kernels whose operator has no shapes in the trace), and left {:.0}% (collectives) as recorded{tf32}{half}",
                info.trace_id,
                pct(c.from_shapes_ns),
                pct(c.inferred_ns),
                pct(c.unmoved_ns)
            )
        })
        .collect()
}

/// Per trace whose priced GPU work is at least 1% idle gaps between
/// kernels, kept as recorded: how much, and the flag that drops them. A
/// host-bound trace gains little from a faster GPU, and says so.
pub(crate) fn idle_notes(steps: &[StepPrediction]) -> Vec<String> {
    let mut per_trace: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for s in steps {
        let e = per_trace.entry(s.trace_id.as_str()).or_default();
        e.0 += s.predicted_gpu_span_ns;
        e.1 += s.predicted_busy_ns;
    }
    per_trace
        .into_iter()
        .filter(|(_, (span, busy))| *span > 0.0 && (span - busy) / span >= 0.01)
        .map(|(trace, (span, busy))| {
            format!(
                "trace {trace}: {:.0}% of its GPU work as priced is idle gaps between kernels, kept as recorded (the same host launches them; on the recorded machine, but for the waits its longer kernels fill; --idle none drops them)",
                100.0 * (span - busy) / span
            )
        })
        .collect()
}

/// Per trace with steps priced at their host's own time (a what-if that
/// keeps the host and leaves it the slower): how many.
pub(crate) fn host_bound_notes(steps: &[StepPrediction]) -> Vec<String> {
    let mut per_trace: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for s in steps {
        let e = per_trace.entry(s.trace_id.as_str()).or_default();
        e.0 += 1;
        e.1 += usize::from(s.host_ns.is_some_and(|h| h >= s.predicted_ns));
    }
    per_trace
        .into_iter()
        .filter(|(_, (_, bound))| *bound > 0)
        .map(|(trace, (all, bound))| {
            format!(
                "trace {trace}: {bound} of its {all} steps priced at their host's own time (the recorded step less its \
                 waits on the GPU and the profiler's time; on a GPU faster than the recorded one, that times the step's \
                 speed-up): the host issues the same operators, and the GPU would wait for it"
            )
        })
        .collect()
}

/// Per trace whose steps lost at least 1% of their time, priced with the
/// profiler, as its own host time: how much, and the flag that sets it.
pub(crate) fn profiler_notes(steps: &[StepPrediction], profiler_overhead_us: f64) -> Vec<String> {
    let mut per_trace: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for s in steps {
        let e = per_trace.entry(s.trace_id.as_str()).or_default();
        e.0 += s.predicted_ns + s.profiler_overhead_ns;
        e.1 += s.profiler_overhead_ns;
    }
    per_trace
        .into_iter()
        .filter(|(_, (profiled, removed))| *profiled > 0.0 && removed / profiled >= 0.01)
        .map(|(trace, (profiled, removed))| {
            format!(
                "trace {trace}: {:.0}% of its step time as priced with the profiler is the profiler's own host time \
                 ({profiler_overhead_us} µs per CPU operator recorded, --profiler-overhead-us), taken out: the job runs without it",
                100.0 * removed / profiled
            )
        })
        .collect()
}

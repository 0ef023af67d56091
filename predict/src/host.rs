//! The host's own time for a step: the floor of a what-if.
//!
//! A step's host issues its operators at its own pace. On the GPU it was
//! recorded on (and so, for a what-if, on the same machine) a smaller batch
//! or 16-bit kernels shorten the GPU's work but not the host's: a step that
//! was host-bound stays so, and one that becomes host-bound runs at the
//! host's pace. The host's own time is the recorded step less the time its
//! runtime calls waited on the GPU (a full launch queue, a synchronisation)
//! and less the profiler's cost, the data loader's time moved with the
//! batch. On 164 H100 what-ifs of `bench/corpus` this floor took bfloat16
//! what-ifs from 22.5% / 39.5% error (language / vision models) to 13.5% /
//! 28.6% and halved batches from 15.7% / 18.8% to 12.8% / 18.4%
//! (`bench/whatif_corpus.py`). The floor is only as right as the
//! profiler's cost per operator (`--profiler-overhead-us`) is for the host
//! that recorded the trace: the lent H100 of `bench/measured` paid 8 µs or
//! more, and with the default 3.5 its bfloat16 ResNet-50 what-ifs came out
//! 30-38% slow (`bench/half_h100.sh`).
//!
//! On another GPU the host is the target machine's, whose pace a trace
//! does not tell; the machine is taken to keep the recorded one's balance.
//! A GPU no faster than the recorded one in any figure comes with a host
//! no faster either: the whole floor. A GPU faster in some figure comes
//! with a host faster in proportion: the floor times the step's speed-up
//! on it (its kernels' time there over their time on the recorded GPU, in
//! the same scenario). So a faster GPU is never priced slower, and a step
//! host-bound on its own GPU stays so on a GPU a little faster (an H200
//! beside an H100), while one far faster is bound by its kernels again.

use tracecast_opmodel::GpuSpec;
use tracecast_schemas::hardware::{Catalog, HardwareProfile};
use tracecast_train::StepRow;

use crate::StepTime;

/// How a trace's steps are floored at their host's own time on a GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostFloor {
    /// Another GPU, the recorded one without a hardware profile: no floor.
    None,
    /// The recorded GPU, or one no faster in any figure.
    Whole,
    /// A GPU faster in some figure: the floor times the step's speed-up.
    ScaledByGpu,
}

/// The floor for a trace recorded on `recorded` (as the trace names it)
/// priced on `gpu` (None: the recorded one).
pub(crate) fn floor(gpu: Option<&HardwareProfile>, recorded: Option<&str>, catalog: &Catalog) -> HostFloor {
    if crate::is_recorded_gpu(gpu, recorded, catalog) {
        return HostFloor::Whole;
    }
    let (Some(target), Some(recorded)) = (gpu, recorded.and_then(|r| catalog.resolve(r))) else {
        return HostFloor::None;
    };
    match (GpuSpec::from_profile(target), GpuSpec::from_profile(recorded)) {
        (Ok(t), Ok(r)) if no_faster(&t, &r) => HostFloor::Whole,
        (Ok(_), Ok(_)) => HostFloor::ScaledByGpu,
        _ => HostFloor::None,
    }
}

/// Whether `target` is no faster than `recorded` in any figure a kernel's
/// time depends on: peak rates (each tensor-core path where the target has
/// one), bandwidth and SMs.
pub(crate) fn no_faster(target: &GpuSpec, recorded: &GpuSpec) -> bool {
    let optional = |t: Option<f64>, r: Option<f64>| match (t, r) {
        (Some(t), Some(r)) => t <= r,
        (Some(_), None) => false,
        (None, _) => true,
    };
    let sms = !(target.sm_count.is_finite() && recorded.sm_count.is_finite()) || target.sm_count <= recorded.sm_count;
    target.peak_fp32_flops <= recorded.peak_fp32_flops
        && target.bandwidth <= recorded.bandwidth
        && sms
        && optional(target.peak_fp32_matrix_flops, recorded.peak_fp32_matrix_flops)
        && optional(target.peak_half_flops, recorded.peak_half_flops)
        && optional(target.peak_tf32_flops, recorded.peak_tf32_flops)
        && optional(target.peak_fp64_flops, recorded.peak_fp64_flops)
}

/// The host's own time for `step`, ns: its recorded time less its runtime
/// calls' waits and `profiler_ns` (the profiler's cost of its operators),
/// plus `loader_change_ns` (its data loader's time at the asked batch less
/// the recorded).
pub(crate) fn own_time_ns(step: &StepRow, profiler_ns: f64, loader_change_ns: f64) -> f64 {
    ((step.dur_ns - step.runtime_wait_ns) as f64 - profiler_ns + loader_change_ns).max(0.0)
}

/// A host's own time `own_ns` for `cpu_ops` operators, with `added_ops`
/// more at the same cost each (autocast's casts in a 16-bit what-if of a
/// float32 trace). On `bench/corpus`'s H100, where both precisions of a
/// configuration are host-bound, a bfloat16 step's added operators cost a
/// median 1.01 times the float32 step's average (`bench/autocast_host.py`).
pub(crate) fn with_added_ops(own_ns: f64, cpu_ops: i64, added_ops: f64) -> f64 {
    if cpu_ops <= 0 {
        return own_ns;
    }
    own_ns * (1.0 + added_ops / cpu_ops as f64)
}

/// `priced` raised to `host_ns` where the host is the slower: the step
/// runs at the host's pace, and with the profiler it would take the host's
/// time plus the profiler's `profiler_ns`.
pub(crate) fn floored(priced: StepTime, host_ns: f64, profiler_ns: f64) -> StepTime {
    if host_ns <= priced.ns {
        return priced;
    }
    let profiled = (priced.ns + priced.profiler_ns).max(host_ns + profiler_ns);
    StepTime {
        ns: host_ns,
        profiler_ns: profiled - host_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_operators_cost_the_hosts_average() {
        assert_eq!(with_added_ops(10e6, 1000, 500.0), 15e6);
        assert_eq!(with_added_ops(10e6, 1000, 0.0), 10e6);
        // No operators recorded: no cost per operator to go by.
        assert_eq!(with_added_ops(10e6, 0, 500.0), 10e6);
    }

    fn step(dur_ns: i64, runtime_wait_ns: i64) -> StepRow {
        StepRow {
            trace_id: "t".into(),
            step_id: 1,
            dur_ns,
            gpu_span_ns: 0,
            remainder_ns: 0,
            dataloader_ns: 0,
            cpu_op_count: 0,
            runtime_wait_ns,
            gpu_name: None,
            job_id: None,
        }
    }

    #[test]
    fn the_host_time_is_the_step_less_its_waits_and_the_profiler() {
        // 100 ms recorded, 30 of it waiting on the GPU, 10 the profiler's.
        assert_eq!(own_time_ns(&step(100, 30), 10.0, 0.0), 60.0);
        // Twice the batch: a data loader of 20 takes 20 more.
        assert_eq!(own_time_ns(&step(100, 30), 10.0, 20.0), 80.0);
        // Waits counted on several threads can exceed the step: no floor.
        assert_eq!(own_time_ns(&step(100, 150), 10.0, 0.0), 0.0);
    }

    fn gpu(fp32: f64, half: Option<f64>, bandwidth: f64, sm_count: f64) -> GpuSpec {
        GpuSpec {
            name: "x".into(),
            peak_fp32_flops: fp32,
            peak_fp32_matrix_flops: None,
            peak_half_flops: half,
            peak_tf32_flops: None,
            peak_fp64_flops: None,
            bandwidth,
            sm_count,
            l2_bytes: 0.0,
        }
    }

    #[test]
    fn only_a_gpu_no_faster_in_any_figure_keeps_the_hosts_pace() {
        let h100 = gpu(67e12, Some(989e12), 3.35e12, 132.0);
        let a100 = gpu(19.5e12, Some(312e12), 2.0e12, 108.0);
        let h200 = gpu(67e12, Some(989e12), 4.8e12, 132.0);
        assert!(no_faster(&a100, &h100));
        assert!(no_faster(&h100, &h100));
        assert!(!no_faster(&h100, &a100));
        // More bandwidth alone is faster in a figure.
        assert!(!no_faster(&h200, &h100));
        // Tensor cores the recorded GPU lacks are faster.
        assert!(!no_faster(&a100, &gpu(67e12, None, 3.35e12, 132.0)));
        // An unknown SM count decides nothing.
        assert!(no_faster(&gpu(19.5e12, None, 2.0e12, f64::NAN), &h100));
    }

    #[test]
    fn a_host_bound_step_runs_at_the_hosts_pace() {
        // Kernels priced at 40 under a host of 60: the host's 60, and the
        // profiler's 10 on top with it.
        let priced = StepTime {
            ns: 40.0,
            profiler_ns: 5.0,
        };
        assert_eq!(
            floored(priced, 60.0, 10.0),
            StepTime {
                ns: 60.0,
                profiler_ns: 10.0
            }
        );
        // A GPU-bound step keeps its price.
        let gpu_bound = StepTime {
            ns: 80.0,
            profiler_ns: 0.0,
        };
        assert_eq!(floored(gpu_bound, 60.0, 10.0), gpu_bound);
    }
}

//! The host's own time for a step: the floor of a what-if on the recorded
//! GPU.
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
//! (`bench/host_bound.py`).
//!
//! On another GPU the host is the target machine's, whose pace a trace
//! does not tell: no floor there.

use tracecast_train::StepRow;

use crate::StepTime;

/// The host's own time for `step`, ns: its recorded time less its runtime
/// calls' waits and `profiler_ns` (the profiler's cost of its operators),
/// plus `loader_change_ns` (its data loader's time at the asked batch less
/// the recorded).
pub(crate) fn own_time_ns(step: &StepRow, profiler_ns: f64, loader_change_ns: f64) -> f64 {
    ((step.dur_ns - step.runtime_wait_ns) as f64 - profiler_ns + loader_change_ns).max(0.0)
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

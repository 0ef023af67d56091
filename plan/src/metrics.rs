//! Metrics of a verified schedule (`metrics.json`, versioned in `schemas::plan`).

use serde::{Deserialize, Serialize};
use tracecast_schemas::plan::{METRICS_FORMAT, METRICS_VERSION};

use crate::verify::Replay;
use crate::workload::Workload;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Metrics {
    pub format: String,
    pub version: u32,
    pub policy: String,
    /// The rules the schedule was made and replayed under (`simple`, `elasticflow`).
    pub rules: String,
    pub jobs: usize,
    /// Jobs rejected by admission control (never run; missed deadlines).
    pub rejected: usize,
    /// JCT figures cover the jobs that ran (all but the rejected), as ElasticFlow's do.
    pub avg_jct_s: f64,
    pub median_jct_s: f64,
    pub p99_jct_s: f64,
    /// Last completion minus first submission.
    pub makespan_s: f64,
    pub deadline_jobs: usize,
    /// Share of jobs with a deadline that finished by it (`null` when none has one).
    pub deadline_hit_rate: Option<f64>,
    /// GPU-seconds held / (GPUs x makespan).
    pub gpu_utilization: f64,
    pub avg_queueing_delay_s: f64,
    pub median_queueing_delay_s: f64,
    pub p99_queueing_delay_s: f64,
    pub restarts: u64,
    pub restart_gpu_seconds: f64,
    pub segments: u64,
    pub interpolated_segments: u64,
    /// Share of the GPU-time held at counts the throughput table did not measure (0 under `elasticflow`).
    pub unmeasured_gpu_share: f64,
    /// Wall time the policy took to produce the schedule, when it was produced here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning_s: Option<f64>,
}

pub fn compute(policy: &str, w: &Workload, r: &Replay) -> Metrics {
    let n = w.jobs.len();
    let ran = |k: &usize| !r.rejected.get(*k).copied().unwrap_or(false);
    let mut jct: Vec<f64> = (0..n).filter(ran).map(|k| r.finish[k] - w.jobs[k].submit).collect();
    let mut queue: Vec<f64> = (0..n)
        .filter(ran)
        .map(|k| r.first_start[k] - w.jobs[k].submit)
        .collect();
    let t0 = w.jobs.iter().map(|j| j.submit).fold(f64::INFINITY, f64::min);
    let t1 = r.finish.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let makespan = (t1 - t0).max(0.0);
    let with_deadline: Vec<bool> = w
        .jobs
        .iter()
        .zip(&r.finish)
        .filter_map(|(j, &f)| j.deadline.map(|d| f <= d + 1e-6))
        .collect();
    let (avg_jct, med_jct, p99_jct) = summary(&mut jct);
    let (avg_q, med_q, p99_q) = summary(&mut queue);
    Metrics {
        format: METRICS_FORMAT.into(),
        version: METRICS_VERSION,
        policy: policy.into(),
        rules: w.rules.name.clone(),
        jobs: n,
        rejected: r.rejected.iter().filter(|&&x| x).count(),
        avg_jct_s: avg_jct,
        median_jct_s: med_jct,
        p99_jct_s: p99_jct,
        makespan_s: makespan,
        deadline_jobs: with_deadline.len(),
        deadline_hit_rate: (!with_deadline.is_empty())
            .then(|| with_deadline.iter().filter(|&&h| h).count() as f64 / with_deadline.len() as f64),
        gpu_utilization: if makespan > 0.0 {
            r.gpu_seconds / (w.cluster.total_gpus() as f64 * makespan)
        } else {
            0.0
        },
        avg_queueing_delay_s: avg_q,
        median_queueing_delay_s: med_q,
        p99_queueing_delay_s: p99_q,
        restarts: r.restarts,
        restart_gpu_seconds: r.restart_gpu_seconds,
        segments: r.segments,
        interpolated_segments: r.interpolated_segments,
        unmeasured_gpu_share: if r.gpu_seconds > 0.0 {
            r.unmeasured_gpu_seconds / r.gpu_seconds
        } else {
            0.0
        },
        planning_s: None,
    }
}

/// Mean, median and 99th percentile (nearest rank).
fn summary(v: &mut [f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    (mean, rank(0.5), rank(0.99))
}

#[cfg(test)]
mod tests {
    #[test]
    fn nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(super::summary(&mut v), (50.5, 50.0, 99.0));
    }
}

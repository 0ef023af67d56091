//! tracecast's offline schedule planner and simulator (DESIGN.md "The planner").
//!
//! Inputs (jobs, a cluster, a throughput table) in any accepted format are
//! priced into a [`workload::Workload`]; a [`simulator::Policy`] (the planner
//! or a baseline) is run by the discrete-event engine into a
//! [`schedule::Schedule`]; [`verify::verify`] replays a schedule against the
//! true throughputs, rejects invalid ones and yields the completion times that
//! [`metrics`] summarises.

pub mod cluster;
pub mod error;
mod index_set;
pub mod jobs;
mod jobset;
pub mod metrics;
pub mod outcome;
pub mod perturb;
pub mod placement;
pub mod planner;
pub mod policies;
pub mod registry;
pub mod render;
pub mod request;
pub mod rules;
pub mod schedule;
pub mod simulator;
mod table;
pub mod throughput;
pub mod verify;
mod waitqueue;
pub mod workload;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rayon::prelude::*;

pub use error::{PlanError, Result};
use metrics::Metrics;
use planner::PlannerConfig;
use schedule::Schedule;
use verify::Replay;
use workload::{Penalty, Workload};

/// The three inputs, read and priced.
pub struct Inputs {
    pub workload: Workload,
    pub job_format: jobs::JobFormat,
    /// Rows the job reader skipped on purpose (CPU-only jobs, ...).
    pub skipped: Vec<String>,
    pub table: throughput::ThroughputTable,
}

/// Read jobs, cluster and throughput source(s) and price the jobs. GPUs of an
/// ElasticFlow cluster CSV get `gpu_type`, else the table's only GPU type.
pub fn load(
    jobs_path: &Path,
    cluster_path: &Path,
    throughput: &[PathBuf],
    gpu_type: Option<&str>,
    penalty: Penalty,
    rules: &rules::Rules,
) -> Result<Inputs> {
    let mut table = throughput::ThroughputTable::default();
    for p in throughput {
        table.merge(throughput::read_throughput(p)?);
    }
    let default_type = match gpu_type {
        Some(t) => t.to_string(),
        None if table.gpu_type_names.len() == 1 => table.gpu_type_names[0].clone(),
        None => "A100".to_string(),
    };
    let cluster = cluster::read_cluster(cluster_path, &default_type)?;
    let set = jobs::read_jobs(jobs_path)?;
    // A job the inputs cannot price is a problem of the job file: name it.
    let workload = workload::price(&set.jobs, &cluster, &table, penalty, rules).map_err(|e| match e {
        PlanError::Inconsistent(reason) => PlanError::file(jobs_path, reason),
        e => e,
    })?;
    Ok(Inputs {
        workload,
        job_format: set.format,
        skipped: set.skipped,
        table,
    })
}

/// The workload with the planner's belief taken from another throughput table
/// (e.g. `tracecast predict` output) while the truth stays; jobs or GPU types
/// the belief table lacks keep the truth. Returns the count of such fallbacks.
/// Under rules that allow only measured counts, the belief keeps the truth's
/// counts within the planner's caps.
pub fn belief_from_table(w: &Workload, table: &throughput::ThroughputTable) -> (Workload, usize) {
    let mut cache = throughput::CurveCache::default();
    let mut fallbacks = 0;
    let mut out = w.clone();
    for job in &mut out.jobs {
        let Some(jt) = job
            .job_type
            .clone()
            .filter(|_| job.unit == workload::WorkUnit::Iterations)
        else {
            continue;
        };
        for t in 0..job.truth.len() {
            if job.truth[t].is_none() {
                continue;
            }
            let cap = w.rules.planner_cap(Some(&jt), job.batch_size);
            let believed = cache
                .get(table, &jt, t as u16, &w.cluster.gpu_types[t], job.batch_size)
                .and_then(|c| workload::restrict(&c, cap, &w.rules))
                // On the counts the planner may use (the truth's, within its caps).
                .and_then(|c| match &job.belief[t] {
                    Some(counts) if counts.discrete => counts.with_rates_of(&c).map(std::sync::Arc::new),
                    _ => Some(c),
                });
            match believed {
                Some(c) => job.belief[t] = Some(c),
                None => fallbacks += 1,
            }
        }
    }
    (out, fallbacks)
}

/// A policy's schedule, verified, with its metrics.
pub struct RunResult {
    pub schedule: Schedule,
    pub replay: Replay,
    pub metrics: Metrics,
}

/// Run a policy by name (see [`registry::POLICIES`]), verify its schedule and score it.
pub fn run_policy(w: &Workload, name: &str, cfg: &PlannerConfig) -> Result<RunResult> {
    run_policy_reporting(w, name, cfg, &|_, _| {})
}

/// [`run_policy`], reporting (jobs done, jobs) to `progress` as it goes.
pub fn run_policy_reporting(
    w: &Workload,
    name: &str,
    cfg: &PlannerConfig,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<RunResult> {
    let mut policy = registry::by_name(name, cfg).ok_or_else(|| {
        PlanError::Inconsistent(format!(
            "unknown policy `{name}` (known: {})",
            registry::POLICIES.join(", ")
        ))
    })?;
    let start = Instant::now();
    let schedule = simulator::run(
        w,
        policy.as_mut(),
        simulator::EngineOpts {
            restart_s: cfg.restart_s,
            progress,
        },
    )?;
    let planning = start.elapsed().as_secs_f64();
    let replay = verify::verify(&schedule, w, cfg.restart_s)?;
    let mut metrics = metrics::compute(&schedule.policy, w, &replay);
    metrics.planning_s = Some(planning);
    Ok(RunResult {
        schedule,
        replay,
        metrics,
    })
}

/// Run several policies in parallel; results in the order of `names`.
/// `progress` gets (jobs done, jobs) summed over the runs.
pub fn run_policies(
    w: &Workload,
    names: &[&str],
    cfg: &PlannerConfig,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Vec<Result<RunResult>> {
    let done: Vec<AtomicU64> = names.iter().map(|_| AtomicU64::new(0)).collect();
    let total = w.jobs.len() as u64 * names.len() as u64;
    names
        .par_iter()
        .enumerate()
        .map(|(i, n)| {
            run_policy_reporting(w, n, cfg, &|jobs_done, _| {
                done[i].store(jobs_done, Ordering::Relaxed);
                progress(done.iter().map(|d| d.load(Ordering::Relaxed)).sum(), total);
            })
        })
        .collect()
}

/// Read a schedule file, verify it against the workload (with the workload's
/// restart cost `restart_s`; a file made for another is rejected) and score it.
pub fn replay_file(w: &Workload, path: &Path, restart_s: f64) -> Result<RunResult> {
    let file = schedule::read_json(path)?;
    let schedule = Schedule::from_file(file, w, path)?;
    let replay = verify::verify(&schedule, w, restart_s)?;
    let metrics = metrics::compute(&schedule.policy, w, &replay);
    Ok(RunResult {
        schedule,
        replay,
        metrics,
    })
}

/// Write `schedule.json`, `schedule.csv`, `jobs.csv`, `metrics.json`,
/// `gantt.svg` and `utilization.svg` into `dir`; returns the paths.
pub fn write_outputs(dir: &Path, w: &Workload, r: &RunResult) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| PlanError::io(dir, e))?;
    let file = r.schedule.to_file(w);
    let paths: Vec<PathBuf> = [
        "schedule.json",
        "schedule.csv",
        "metrics.json",
        "gantt.svg",
        "utilization.svg",
        "jobs.csv",
    ]
    .iter()
    .map(|f| dir.join(f))
    .collect();
    let write = |p: &Path, s: String| std::fs::write(p, s).map_err(|e| PlanError::io(p, e));
    // Independent files: written at once (a big plan's JSON, CSV and
    // pictures each take a noticeable share of a run).
    let writers: [&(dyn Fn() -> Result<()> + Sync); 6] = [
        // rayon starts the first and the fourth first (one half each): the
        // two largest files, so that neither waits behind the other.
        &|| schedule::write_csv(&paths[1], &file),
        &|| write(&paths[3], render::gantt_svg(&r.schedule, w)),
        &|| write(&paths[4], render::utilization_svg(&r.schedule, w)),
        &|| schedule::write_json(&paths[0], &file),
        &|| {
            let metrics = serde_json::to_string_pretty(&r.metrics).expect("metrics serialise");
            write(&paths[2], metrics + "\n")
        },
        &|| outcome::write_jobs_csv(&paths[5], w, &r.schedule, &r.replay),
    ];
    writers.par_iter().try_for_each(|f| f())?;
    Ok(paths)
}

/// Average JCT of a policy planned on perturbed beliefs, against the same
/// policy planned on the truth (both executed on the truth).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ErrorExperiment {
    pub policy: String,
    pub error: String,
    pub true_avg_jct_s: f64,
    /// Per seed: average JCT planned with the perturbed belief.
    pub predicted_avg_jct_s: Vec<f64>,
    /// Mean over seeds of predicted / true - 1.
    pub mean_loss: f64,
    pub max_loss: f64,
}

/// `truth` is the policy's average JCT planned on the truth; `known` holds
/// (seed, average JCT) of seeds the caller already planned, which are reused.
pub fn prediction_error(
    w: &Workload,
    policy: &str,
    cfg: &PlannerConfig,
    dist: perturb::ErrorDist,
    seeds: &[u64],
    truth: f64,
    known: &[(u64, f64)],
) -> Result<ErrorExperiment> {
    let runs: Vec<Result<f64>> = seeds
        .par_iter()
        .map(|&s| -> Result<f64> {
            if let Some(&(_, avg_jct_s)) = known.iter().find(|k| k.0 == s) {
                return Ok(avg_jct_s);
            }
            Ok(run_policy(&perturb::perturb(w, dist, s), policy, cfg)?
                .metrics
                .avg_jct_s)
        })
        .collect();
    let predicted = runs.into_iter().collect::<Result<Vec<f64>>>()?;
    let losses: Vec<f64> = predicted.iter().map(|p| p / truth - 1.0).collect();
    Ok(ErrorExperiment {
        policy: policy.to_string(),
        error: dist.to_string(),
        true_avg_jct_s: truth,
        mean_loss: losses.iter().sum::<f64>() / losses.len().max(1) as f64,
        max_loss: losses.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        predicted_avg_jct_s: predicted,
    })
}

/// The comparison table (Markdown) of several policies' metrics.
pub fn comparison_table(rows: &[Metrics]) -> String {
    let mut out = String::from(
        "| policy | avg JCT (h) | median JCT (h) | p99 JCT (h) | makespan (h) | deadline hit | GPU util | avg queueing (h) | restarts | plan time (s) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for m in rows {
        out.push_str(&format!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.2} | {} | {:.1}% | {:.3} | {} | {} |\n",
            m.policy,
            m.avg_jct_s / 3600.0,
            m.median_jct_s / 3600.0,
            m.p99_jct_s / 3600.0,
            m.makespan_s / 3600.0,
            m.deadline_hit_rate.map_or("-".into(), |r| format!("{:.1}%", r * 100.0)),
            m.gpu_utilization * 100.0,
            m.avg_queueing_delay_s / 3600.0,
            m.restarts,
            m.planning_s.map_or("-".into(), |t| format!("{t:.3}")),
        ));
    }
    out
}

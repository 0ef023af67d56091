//! `tracecast plan` as one call: plan on the truth or on a belief, verify,
//! write the schedule files, and, when asked, the prediction-error experiment
//! and the comparison with the baselines. `tracecast simulate` likewise:
//! replay a schedule or run policies, and compare them.

use std::path::{Path, PathBuf};

use crate::error::{PlanError, Result};
use crate::perturb::{ErrorDist, perturb};
use crate::planner::{Objective, PlannerConfig};
use crate::registry::{BASELINES, POLICIES};
use crate::workload::Workload;
use crate::{
    ErrorExperiment, RunResult, belief_from_table, comparison_table, prediction_error, run_policies, run_policy,
    run_policy_reporting, throughput, write_outputs,
};

/// The throughputs the planner believes.
pub enum Belief {
    /// The workload's own (true) throughputs.
    Truth,
    /// The true ones perturbed by `dist`: the plan written uses seed 1; the
    /// experiment plans seeds 1..=`seeds` and compares with the truth.
    Error { dist: ErrorDist, seeds: u64 },
    /// Another throughput table (e.g. `tracecast predict`'s); pairs it lacks
    /// keep the true throughput.
    Table(PathBuf),
}

pub struct PlanRequest<'a> {
    pub workload: &'a Workload,
    pub objective: Objective,
    pub config: &'a PlannerConfig,
    pub belief: Belief,
    /// Also run every baseline and write `comparison.md`.
    pub compare: bool,
    pub out: &'a Path,
    /// Told (jobs done, jobs) while the plan written is made.
    pub progress: &'a (dyn Fn(u64, u64) + Sync),
    /// Told (jobs done, jobs) over the baselines' runs (`compare`).
    pub baselines_progress: &'a (dyn Fn(u64, u64) + Sync),
}

pub struct PlanOutcome {
    /// `plan-jct`, `plan-makespan` or `plan-deadline`.
    pub policy: String,
    /// The schedule written, verified on the true throughputs.
    pub planned: RunResult,
    /// What the plan was made on, when not the truth.
    pub belief: Option<String>,
    /// Job x GPU-type pairs a belief table lacked (they kept the truth).
    pub belief_fallbacks: usize,
    /// Average JCT of the same policy planned on the truth, when planned on a belief.
    pub truth_avg_jct_s: Option<f64>,
    /// Its deadline hit rate (jobs with a deadline), when planned on a belief.
    pub truth_deadline_hit_rate: Option<f64>,
    pub error_experiment: Option<ErrorExperiment>,
    /// The Markdown comparison with the baselines, when asked.
    pub comparison: Option<String>,
    pub files: Vec<PathBuf>,
}

pub fn plan(req: &PlanRequest<'_>) -> Result<PlanOutcome> {
    let w = req.workload;
    let policy = format!("plan-{}", req.objective.name());
    let (belief, label, fallbacks) = match &req.belief {
        Belief::Truth => (None, None, 0),
        Belief::Error { dist, seeds } => {
            if *seeds == 0 {
                return Err(PlanError::Inconsistent("--error-seeds must be at least 1".into()));
            }
            (
                Some(perturb(w, *dist, 1)),
                Some(format!("predicted with {dist} error (seed 1)")),
                0,
            )
        }
        Belief::Table(path) => {
            let table = throughput::read_throughput(path)?;
            let (believed, fallbacks) = belief_from_table(w, &table);
            (
                Some(believed),
                Some(format!("belief from {}", path.display())),
                fallbacks,
            )
        }
    };
    let planned = run_policy_reporting(belief.as_ref().unwrap_or(w), &policy, req.config, req.progress)?;
    let mut files = write_outputs(req.out, w, &planned)?;
    let write = |name: &str, text: String| -> Result<PathBuf> {
        let path = req.out.join(name);
        std::fs::write(&path, text).map_err(|e| PlanError::io(&path, e))?;
        Ok(path)
    };
    let mut truth_avg_jct_s = None;
    let mut truth_deadline_hit_rate = None;
    let mut error_experiment = None;
    if belief.is_some() {
        // Planned on the truth once; the experiment below reuses it.
        let truth_metrics = run_policy(w, &policy, req.config)?.metrics;
        let truth = truth_metrics.avg_jct_s;
        truth_avg_jct_s = Some(truth);
        truth_deadline_hit_rate = truth_metrics.deadline_hit_rate;
        if let Belief::Error { dist, seeds } = &req.belief {
            let seeds: Vec<u64> = (1..=*seeds).collect();
            // Seed 1 is the plan written above.
            let known = [(1, planned.metrics.avg_jct_s)];
            let e = prediction_error(w, &policy, req.config, *dist, &seeds, truth, &known)?;
            let json = serde_json::to_string_pretty(&e).expect("the experiment serialises");
            files.push(write("prediction_error.json", json + "\n")?);
            error_experiment = Some(e);
        }
    }
    let comparison = if req.compare {
        let mut rows = vec![planned.metrics.clone()];
        for (name, result) in BASELINES
            .iter()
            .zip(run_policies(w, &BASELINES, req.config, req.baselines_progress))
        {
            let run = result.map_err(|e| PlanError::Inconsistent(format!("baseline {name}: {e}")))?;
            rows.push(run.metrics);
        }
        let table = comparison_table(&rows);
        files.push(write("comparison.md", table.clone())?);
        Some(table)
    } else {
        None
    };
    Ok(PlanOutcome {
        policy,
        planned,
        belief: label,
        belief_fallbacks: fallbacks,
        truth_avg_jct_s,
        truth_deadline_hit_rate,
        error_experiment,
        comparison,
        files,
    })
}

/// What `tracecast simulate` runs.
pub enum Simulate {
    /// Replay a schedule file, verified against the workload, charging
    /// `restart_s` after every change.
    Replay { schedule: PathBuf, restart_s: f64 },
    /// Run these policies (names of [`crate::registry::POLICIES`]).
    Policies(Vec<String>),
}

pub struct SimulateRequest<'a> {
    pub workload: &'a Workload,
    pub what: Simulate,
    pub config: &'a PlannerConfig,
    /// Write the outputs here: one run's schedule files, or every run's
    /// `metrics-<policy>.json`; and `comparison.md`.
    pub out: Option<&'a Path>,
    /// Called now and then with (jobs done, jobs) over all the policies' runs.
    pub progress: &'a (dyn Fn(u64, u64) + Sync),
}

pub struct SimulateOutcome {
    pub results: Vec<RunResult>,
    /// The Markdown comparison of the runs' metrics.
    pub comparison: String,
    pub files: Vec<PathBuf>,
}

pub fn simulate(req: &SimulateRequest<'_>) -> Result<SimulateOutcome> {
    let w = req.workload;
    let results = match &req.what {
        Simulate::Replay { schedule, restart_s } => {
            if restart_s.is_nan() || *restart_s < 0.0 {
                return Err(PlanError::Inconsistent(format!(
                    "--restart-s must be >= 0, not {restart_s}"
                )));
            }
            vec![crate::replay_file(w, schedule, *restart_s)?]
        }
        Simulate::Policies(names) => {
            if let Some(bad) = names.iter().find(|n| !POLICIES.contains(&n.as_str())) {
                return Err(PlanError::Inconsistent(format!(
                    "unknown policy `{bad}` (known: {}, all)",
                    POLICIES.join(", ")
                )));
            }
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let mut results = Vec::new();
            for (name, r) in names.iter().zip(run_policies(w, &names, req.config, req.progress)) {
                results.push(r.map_err(|e| PlanError::Inconsistent(format!("simulate {name}: {e}")))?);
            }
            results
        }
    };
    let rows: Vec<_> = results.iter().map(|r| r.metrics.clone()).collect();
    let comparison = comparison_table(&rows);
    let mut files = Vec::new();
    if let Some(dir) = req.out {
        std::fs::create_dir_all(dir).map_err(|e| PlanError::io(dir, e))?;
        let write = |path: PathBuf, text: String| -> Result<PathBuf> {
            std::fs::write(&path, text).map_err(|e| PlanError::io(&path, e))?;
            Ok(path)
        };
        if let [one] = results.as_slice() {
            files = write_outputs(dir, w, one)?;
        } else {
            for m in &rows {
                let json = serde_json::to_string_pretty(m).expect("metrics serialise");
                files.push(write(dir.join(format!("metrics-{}.json", m.policy)), json + "\n")?);
            }
        }
        files.push(write(dir.join("comparison.md"), comparison.clone())?);
    }
    Ok(SimulateOutcome {
        results,
        comparison,
        files,
    })
}

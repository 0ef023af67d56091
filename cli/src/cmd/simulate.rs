use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use tracecast_plan::comparison_table;
use tracecast_plan::planner::Objective;
use tracecast_plan::registry::POLICIES;

use super::plan::{InputArgs, PlannerArgs, describe_inputs};

/// Score a schedule file or an online policy with the discrete-event simulator.
///
/// --schedule replays a schedule.json (from `tracecast plan` or any tool that
/// writes the format in schemas/FORMATS.md) on the true throughputs with the
/// restart cost --restart-s: it is verified first (GPU capacity per node, no
/// job overlapping itself, rigid counts kept, every job's work done, made for
/// this restart cost), then scored. --policy runs a policy
/// online: plan-jct, plan-makespan, plan-deadline (the planner), fifo,
/// sjf-oracle (shortest job first with true durations), tiresias (2D
/// least-attained-service), edf, fixed (planner order, requested counts), a
/// comma-separated list, or `all`.
///
/// Reports average, median and p99 JCT, makespan, deadline hit rate, GPU
/// utilization and queueing delay, one row per schedule.
///
/// Examples:
///   tracecast simulate --jobs fixtures/plan/jobs.csv --cluster fixtures/plan/cluster.toml \
///       --throughput fixtures/plan/throughput.csv --policy all
///   tracecast simulate --jobs fixtures/plan/jobs.csv --cluster fixtures/plan/cluster.toml \
///       --throughput fixtures/plan/throughput.csv --schedule demo-out/plan/schedule.json
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub inputs: InputArgs,
    /// Schedule to replay (schedule.json).
    #[arg(
        long,
        value_name = "F",
        conflicts_with = "policy",
        required_unless_present = "policy"
    )]
    pub schedule: Option<PathBuf>,
    /// Policy (or comma-separated policies, or `all`) to simulate.
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
    #[command(flatten)]
    pub planner: PlannerArgs,
    /// Write metrics (metrics.json for one schedule, metrics-<policy>.json for
    /// several, and comparison.md) and, for one policy, its schedule and pictures here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let inputs = args.inputs.load()?;
    let w = &inputs.workload;
    println!("{}\n", describe_inputs(&args.inputs, &inputs));
    let mut results = Vec::new();
    if let Some(path) = &args.schedule {
        let p = &args.planner;
        for (flag, given) in [
            ("--starvation-s", p.starvation_s.is_some()),
            ("--min-gain", p.min_gain.is_some()),
            ("--no-elastic", p.no_elastic),
        ] {
            if given {
                tracing::warn!("{flag} is ignored with --schedule: a replay runs no planner");
            }
        }
        if p.restart_s.is_nan() || p.restart_s < 0.0 {
            bail!("--restart-s must be >= 0, not {}", p.restart_s);
        }
        results.push(
            tracecast_plan::replay_file(w, path, p.restart_s).with_context(|| format!("replay {}", path.display()))?,
        );
        println!("{}: verified", path.display());
    } else {
        let spec = args.policy.as_deref().unwrap_or_default();
        let names: Vec<&str> = if spec == "all" {
            POLICIES.to_vec()
        } else {
            spec.split(',').map(str::trim).collect()
        };
        if let Some(bad) = names.iter().find(|n| !POLICIES.contains(n)) {
            bail!("unknown policy `{bad}` (known: {}, all)", POLICIES.join(", "));
        }
        let cfg = args.planner.config(Objective::Jct)?;
        for (name, r) in names.iter().zip(tracecast_plan::run_policies(w, &names, &cfg)) {
            results.push(r.with_context(|| format!("simulate {name}"))?);
        }
    }
    let rows: Vec<_> = results.iter().map(|r| r.metrics.clone()).collect();
    let table = comparison_table(&rows);
    println!("{table}");
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        if results.len() == 1 {
            let files = tracecast_plan::write_outputs(dir, w, &results[0])?;
            println!(
                "wrote {}",
                files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        } else {
            for m in &rows {
                std::fs::write(
                    dir.join(format!("metrics-{}.json", m.policy)),
                    serde_json::to_string_pretty(m)? + "\n",
                )?;
            }
            println!(
                "wrote metrics-<policy>.json for {} policies to {}",
                rows.len(),
                dir.display()
            );
        }
        std::fs::write(dir.join("comparison.md"), &table)?;
    }
    Ok(ExitCode::SUCCESS)
}

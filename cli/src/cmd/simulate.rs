use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tracecast_plan::planner::Objective;
use tracecast_plan::registry::ALL;
use tracecast_plan::request::{Simulate, SimulateRequest, simulate};

use super::plan::{InputArgs, PlannerArgs, describe_inputs, joined};

/// Score a schedule file or an online policy with the discrete-event simulator.
///
/// --schedule replays a schedule.json (from `tracecast plan` or any tool that
/// writes the format in schemas/FORMATS.md) on the true throughputs with the
/// restart cost --restart-s: it is verified first (GPU capacity per node, no
/// job overlapping itself, rigid counts kept, every job's work done, made for
/// this restart cost), then scored. --policy runs a policy
/// online: plan-jct, plan-makespan, plan-deadline (the planner), fifo,
/// sjf-oracle (shortest job first with true durations), tiresias (2D
/// least-attained-service), edf, fixed (planner order, requested counts);
/// ElasticFlow's edf-elastic, dlas-gpu, themis (finish-time fairness) and
/// gandiva (time-slicing in node sets); a comma-separated list, or `all`
/// (every one but themis and gandiva).
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
    /// Policy (or comma-separated policies, or `all`) to simulate: plan-jct,
    /// plan-makespan, plan-deadline, fifo, sjf-oracle, tiresias, edf,
    /// edf-elastic, dlas-gpu, fixed (these ten are `all`), and themis and
    /// gandiva (ElasticFlow's), run only when named: they are slow on a
    /// busy cluster.
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
    #[command(flatten)]
    pub planner: PlannerArgs,
    /// Write metrics (metrics.json for one schedule, metrics-<policy>.json for
    /// several, and comparison.md) and, for one policy, its schedule and pictures here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(args: SimulateArgs, ui: &crate::progress::Ui) -> anyhow::Result<ExitCode> {
    let inputs = args.inputs.load()?;
    println!("{}\n", describe_inputs(&args.inputs, &inputs));
    let p = &args.planner;
    let what = match &args.schedule {
        Some(path) => {
            for (flag, given) in [
                ("--starvation-s", p.starvation_s.is_some()),
                ("--min-gain", p.min_gain.is_some()),
                ("--no-elastic", p.no_elastic),
            ] {
                if given {
                    tracing::warn!("{flag} is ignored with --schedule: a replay runs no planner");
                }
            }
            Simulate::Replay {
                schedule: path.clone(),
                restart_s: p.restart_s,
            }
        }
        None => {
            let spec = args.policy.as_deref().unwrap_or_default();
            Simulate::Policies(if spec == "all" {
                ALL.iter().map(|s| s.to_string()).collect()
            } else {
                spec.split(',').map(|s| s.trim().to_string()).collect()
            })
        }
    };
    let cfg = args.planner.config(Objective::Jct)?;
    let outcome = simulate(&SimulateRequest {
        workload: &inputs.workload,
        what,
        config: &cfg,
        out: args.out.as_deref(),
        progress: &ui.late_bar("simulating (jobs done, all runs)"),
    })?;
    if let Some(path) = &args.schedule {
        println!("{}: verified", path.display());
    }
    println!("{}", outcome.comparison);
    if !outcome.files.is_empty() {
        println!("wrote {}", joined(&outcome.files));
    }
    Ok(ExitCode::SUCCESS)
}

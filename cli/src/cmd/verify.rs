use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::plan::InputArgs;

/// Check a schedule.json against its jobs, cluster and true throughputs.
///
/// Rejects (exit status 1, problems listed) a schedule that uses more GPUs than
/// a node has at any moment, puts a job on a GPU type it cannot use or a node
/// that does not exist, overlaps a job with itself, starts a job before its
/// submission, changes a rigid job's GPU count, does not finish a job's
/// iterations (replayed on the true throughputs, with the restart cost
/// --restart-s after every change), or records another restart_s than
/// --restart-s. Under --rules elasticflow it also rejects counts the table did
/// not measure and changes between decision rounds, and replays ElasticFlow's
/// per-round overheads; only these rules let a job be rejected by admission
/// control (it must have a deadline and hold no GPUs). Prints the metrics of a
/// valid schedule.
///
/// Example:
///   tracecast verify --jobs fixtures/plan/jobs.csv --cluster fixtures/plan/cluster.toml \
///       --throughput fixtures/plan/throughput.csv --schedule demo-out/plan/schedule.json
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub inputs: InputArgs,
    /// The schedule to check (schedule.json).
    #[arg(long, value_name = "F")]
    pub schedule: PathBuf,
    /// Seconds a job makes no progress after its GPU count, type or nodes change
    /// (the workload's checkpoint-restart cost, as given to `tracecast plan`).
    #[arg(long, default_value_t = 30.0)]
    pub restart_s: f64,
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    if args.restart_s.is_nan() || args.restart_s < 0.0 {
        anyhow::bail!("--restart-s must be >= 0, not {}", args.restart_s);
    }
    let inputs = args.inputs.load()?;
    let r = tracecast_plan::replay_file(&inputs.workload, &args.schedule, args.restart_s)?;
    let m = &r.metrics;
    println!(
        "{}: valid: {} jobs, {} segments, all work done; avg JCT {:.3}h, makespan {:.2}h, GPU utilization {:.1}%",
        args.schedule.display(),
        m.jobs,
        m.segments,
        m.avg_jct_s / 3600.0,
        m.makespan_s / 3600.0,
        m.gpu_utilization * 100.0
    );
    Ok(ExitCode::SUCCESS)
}

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::plan::InputArgs;

/// Check a schedule.json against its jobs, cluster and true throughputs.
///
/// Rejects (exit status 1, problems listed) a schedule that uses more GPUs than
/// a node has at any moment, puts a job on a GPU type it cannot use or a node
/// that does not exist, overlaps a job with itself, starts a job before its
/// submission, changes a rigid job's GPU count, or does not finish a job's
/// iterations (replayed on the true throughputs, with the schedule's restart
/// cost after every change). Prints the metrics of a valid schedule.
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
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let inputs = args.inputs.load()?;
    let r = tracecast_plan::replay_file(&inputs.workload, &args.schedule)?;
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

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tracecast_predict::scaling::Interconnect;
use tracecast_predict::scaling_check::check_scaling;

use crate::cmd::predict::NetworkArgs;

/// Check the multi-GPU scaling model against measured throughput curves.
///
/// Reads a folder of measured throughputs in ElasticFlow's layout
/// (<model>.csv: global_batch_size,1,2,4,...; iterations/s) and, for each
/// model and global batch, fits the scaling model's two parameters to the
/// curve: the gradient bytes, and the share of the one-GPU iteration that
/// does not shrink when the global batch is split over more GPUs (these
/// curves are of workloads with no trace to price the smaller per-GPU batch).
/// The GPU's link comes from its hardware profile, the overlap with the
/// backward pass from --overlap (see `tracecast predict --help`). Reports the
/// fit error (MRE of iterations/s over the multi-GPU points) and, where a
/// curve reaches past one node, the error beyond the node of a fit made on
/// the counts inside it.
///
/// Examples:
///   tracecast scaling --measured ../shared/cluster/throughputs/A100 --gpu a100-sxm4-40gb --out scaling-a100.md
///   tracecast scaling --measured ../shared/cluster/throughputs/T4 --gpu T4 --gpus-per-node 4
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct ScalingArgs {
    /// Folder of <model>.csv measured throughputs (ElasticFlow layout).
    #[arg(long)]
    measured: PathBuf,
    /// The GPU they were measured on: a hardware profile's name, alias or file stem.
    #[arg(long)]
    gpu: String,
    #[command(flatten)]
    network: NetworkArgs,
    /// Write the report (Markdown) here as well as printing it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Hardware profiles directory [default: the built-in catalog].
    #[arg(long, value_name = "DIR")]
    hardware: Option<PathBuf>,
}

pub fn run(args: ScalingArgs) -> anyhow::Result<ExitCode> {
    args.network.check()?;
    let catalog = crate::hardware::catalog(args.hardware.as_deref())?;
    let profile = tracecast_schemas::hardware::lookup_gpu(&catalog, &args.gpu).context("--gpu")?;
    let net = Interconnect::from_profile(
        &profile,
        args.network.network_gbs,
        args.network.gpus_per_node,
        args.network.latency_us / 1e6,
    )
    .with_context(|| format!("{}: the profile gives no GPU link or PCIe bandwidth", profile.name))?;
    let report = check_scaling(&args.measured, &profile.name, net, args.network.overlap)?.markdown();
    print!("{report}");
    if let Some(out) = &args.out {
        std::fs::write(out, &report).with_context(|| format!("writing {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

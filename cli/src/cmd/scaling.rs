use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tracecast_predict::elasticflow;
use tracecast_predict::scaling::{Fit, Interconnect, fit};

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
    let curves = elasticflow::read_dir(&args.measured)?;
    let fits: Vec<Fit> = curves
        .iter()
        .filter_map(|c| fit(&net, args.network.overlap, c))
        .collect();
    let report = report(&args, &profile.name, &net, &fits, curves.len());
    print!("{report}");
    if let Some(out) = &args.out {
        std::fs::write(out, &report).with_context(|| format!("writing {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn report(args: &ScalingArgs, gpu: &str, net: &Interconnect, fits: &[Fit], curves: usize) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Scaling model against {}\n\nGPU {gpu}: link {:.0} GB/s per direction inside a node of {} GPUs, {:.0} GB/s network \
         across nodes, {:.0} µs per ring step, overlap {}. {} of {curves} curves have a one-GPU point and two more to fit.\n",
        args.measured.display(),
        net.link_gbs,
        net.gpus_per_node,
        net.network_gbs,
        net.latency_s * 1e6,
        args.network.overlap,
        fits.len()
    );
    let _ = writeln!(
        md,
        "| model | global batch | points | gradient MB | fixed share | fit MRE | beyond-node MRE |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for f in fits {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.1} | {:.2} | {:.1}% | {} |",
            f.workload,
            f.global_batch,
            f.points,
            f.gradient_bytes / 1e6,
            f.fixed_share,
            100.0 * f.fit_mre,
            f.beyond_node_mre.map_or("n/a".into(), |e| format!("{:.1}%", 100.0 * e))
        );
    }
    let mean = |v: Vec<f64>| {
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let fit_mre = mean(fits.iter().map(|f| f.fit_mre).collect());
    let beyond = mean(fits.iter().filter_map(|f| f.beyond_node_mre).collect());
    let _ = writeln!(
        md,
        "\nMean fit MRE {:.1}% over {} curves; mean MRE beyond one node (fitted inside it) {:.1}%.",
        100.0 * fit_mre,
        fits.len(),
        100.0 * beyond
    );
    md
}

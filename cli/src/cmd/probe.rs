use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tracecast_probe::{ProbeError, ProbeOptions};

use crate::exit;

/// Probe the local NVIDIA GPU and write its hardware profile.
///
/// Reads the device's name, compute capability, SM count, clocks, memory
/// size, bus width and L2 through the CUDA driver, then measures
/// device-to-device copy bandwidth, FP32 FMA throughput (an NVRTC kernel) and
/// a BF16 matmul rate (cuBLAS, when libcublas is installed). The result is a
/// hardware profile in the same TOML format as fixtures/hardware/, so the
/// predictor can use a probed GPU like a catalogued one.
///
/// Needs the NVIDIA driver (libcuda) at run time, not at build time. Without
/// it, prints "no CUDA driver found" and exits with code 4.
///
/// Examples:
///   tracecast probe                       # profile to standard output
///   tracecast probe --quick --out my-gpu.toml
///   tracecast probe --device 3 --out gpu3.toml
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct ProbeArgs {
    /// Write the profile to this file instead of standard output.
    #[arg(long, value_name = "FILE.toml")]
    out: Option<PathBuf>,
    /// Shorter benchmarks (about a second each): fewer repeats, smaller sizes.
    #[arg(long)]
    quick: bool,
    /// CUDA device ordinal to probe.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

pub fn run(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let opts = ProbeOptions {
        ordinal: args.device,
        quick: args.quick,
    };
    let profile = match tracecast_probe::probe(&opts) {
        Ok(p) => p,
        // No GPU is an expected outcome on CPU machines: one line, its own exit code.
        Err(e @ (ProbeError::NoDriver | ProbeError::NoDevice)) => {
            eprintln!("{e}");
            return Ok(exit::no_gpu());
        }
        Err(e) => return Err(e).context(format!("probing GPU {}", args.device)),
    };
    match &args.out {
        Some(path) => {
            profile
                .save(path)
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("wrote the hardware profile of {} to {}", profile.name, path.display());
        }
        None => print!("{}", profile.to_toml_string().context("formatting the profile")?),
    }
    if let Some(m) = &profile.measured {
        for s in &m.skipped {
            eprintln!("note: benchmark skipped: {s}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

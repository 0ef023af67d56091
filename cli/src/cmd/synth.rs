use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use tracecast_synth::{Era, Packing, SynthSpec, write_job};

/// Generate SYNTHETIC Kineto traces for tests and benchmarks.
///
/// The traces are structurally faithful (every event category, flows,
/// correlation and External ids, ProfilerStep spans, multi-rank
/// distributedInfo, collective metadata) and are marked `synthetic:` in their
/// traceName. Their timings are made up: never use them for accuracy claims.
///
/// Example (8 ranks of 3 steps in one tarball, 2022-era format):
///   tracecast synth --out /tmp/synth --ranks 8 --steps 3 --era 2022 --pack tar-gz
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct SynthArgs {
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Jobs to generate (each with its own seed).
    #[arg(long, default_value_t = 1)]
    jobs: u32,
    /// Ranks per job.
    #[arg(long, default_value_t = 1)]
    ranks: u32,
    /// Profiler steps per rank.
    #[arg(long, default_value_t = 3)]
    steps: u32,
    /// Layers per step (each adds a forward and a backward operator).
    #[arg(long, default_value_t = 8)]
    layers: u32,
    /// Format era to imitate: 2021, 2022 or 2024.
    #[arg(long, default_value = "2024")]
    era: Era,
    /// How to store the ranks.
    #[arg(long, value_enum, default_value_t = Pack::Json)]
    pack: Pack,
    /// Write the oldest form: a bare JSON list of events.
    #[arg(long)]
    bare_list: bool,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Clone, Copy, ValueEnum)]
enum Pack {
    Json,
    Gzip,
    TarGz,
}

pub fn run(args: SynthArgs) -> anyhow::Result<ExitCode> {
    let packing = match args.pack {
        Pack::Json => Packing::Json,
        Pack::Gzip => Packing::Gzip,
        Pack::TarGz => Packing::TarGz,
    };
    let mut files = 0;
    let mut kernels = 0;
    for job in 0..args.jobs {
        let spec = SynthSpec {
            name: format!("job{:05}", args.seed + job as u64),
            era: args.era,
            ranks: args.ranks,
            steps: args.steps,
            layers: args.layers,
            seed: args.seed + job as u64,
            bare_list: args.bare_list,
            ..SynthSpec::default()
        };
        let (written, stats) = write_job(&spec, &args.out, packing)
            .with_context(|| format!("write synthetic job into {}", args.out.display()))?;
        files += written.len();
        kernels += stats.iter().map(|s| s.kernels).sum::<u64>();
    }
    println!(
        "wrote {files} synthetic trace files ({kernels} kernels) to {}",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use indicatif::ProgressBar;
use tracecast_ingest::{IngestOptions, Progress, ingest};

use crate::exit;
use crate::progress::Ui;

/// Ingest trace files into a Parquet lake (incremental and crash-safe).
///
/// PATHs are files or directories (searched recursively). Formats are told by
/// content, not name: Kineto JSON of every era (object or bare list), PyTorch
/// Execution Trace JSON, each plain, gzip or zstd, and .tar/.tar.gz archives of
/// rank files.
///
/// Re-running is safe: files already in the lake (same content hash) are
/// skipped, so a nightly run over a growing directory only adds new files.
/// A file that cannot be read, or holds no events, is recorded in the lake's
/// `_ingest_log` table with its reason and the run goes on; the run then
/// exits with code 3. Events dropped for unusable values (a timestamp that
/// is not a number, a negative duration) are counted per reason in `traces`
/// and named in a warning. Walking a directory, files that are plainly not
/// traces (.md, .txt, .py, images, ...) and lakes are not read.
/// A killed run leaves the lake as it was, or with whole files added.
///
/// Example:
///   tracecast ingest /data/traces ranks.tar.gz --lake /data/lake
///   tracecast sql --lake /data/lake "SELECT source, reason FROM _ingest_log WHERE outcome = 'failed'"
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct IngestArgs {
    /// Trace files or directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The lake directory (created if missing).
    #[arg(long)]
    lake: PathBuf,
    /// Commit to the lake every this many MiB of uncompressed input; a killed
    /// run loses at most one such chunk.
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    chunk_mib: u64,
}

struct Bars {
    bar: ProgressBar,
}

impl Progress for Bars {
    fn start(&self, files: u64, bytes: u64) {
        self.bar.set_length(bytes);
        self.bar.set_message(format!("ingesting {files} files"));
    }
    fn file_done(&self, bytes: u64) {
        self.bar.inc(bytes);
    }
}

pub fn run(args: IngestArgs, ui: &Ui) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let options = IngestOptions {
        chunk_bytes: args.chunk_mib.max(1) << 20,
    };
    let bars = Bars {
        bar: ui.bar(0, "scanning", true),
    };
    let summary = ingest(&args.paths, &args.lake, &options, &bars)
        .with_context(|| format!("ingest into {}", args.lake.display()))?;
    bars.bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    for (source, reason) in &summary.failures {
        eprintln!("failed: {source}: {reason}");
    }
    for (source, dropped) in &summary.dropped {
        eprintln!("ingested with losses: {source}: {dropped}");
    }
    let manifests = match summary.manifests {
        0 => String::new(),
        n => format!(", {n} collector manifests"),
    };
    let ignored = match summary.ignored {
        0 => String::new(),
        n => format!(", not read: {n} non-trace files or lakes in the input directories (-vv names them)"),
    };
    println!(
        "ingested {}, skipped {} already present, failed {}{} ({:.1} MB of JSON, {} kernels{manifests}{ignored}, {:.2} s)",
        summary.ingested,
        summary.skipped,
        summary.failed,
        if summary.failed > 0 {
            format!(": see {}/_ingest_log (run {})", args.lake.display(), summary.run_id)
        } else {
            String::new()
        },
        summary.uncompressed_bytes as f64 / 1e6,
        summary.kernels,
        secs,
    );
    Ok(if summary.failed > 0 {
        exit::partial()
    } else {
        ExitCode::SUCCESS
    })
}

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use tracecast_pipeline::labels_from_manifests;

/// Write a labels CSV (trace_id,model,batch_size) for a lake's traces from
/// the tracecast collector's manifests beside them.
///
/// For every trace in the lake read from a plain file (not an archive
/// member) whose file is still where it was ingested from, the
/// `*.manifest.json` in its folder that names it gives the model name and
/// the batch size per GPU. The CSV is what `tracecast train --labels` and
/// `tracecast predict --labels` read (schemas/FORMATS.md "Trace labels");
/// edit it to add what the manifests do not say.
///
/// Example:
///   tracecast labels --lake lake --out labels.csv
///   tracecast train --features features --labels labels.csv --split by-batch --out model
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct LabelsArgs {
    /// The lake directory.
    #[arg(long)]
    lake: PathBuf,
    /// The CSV to write.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: LabelsArgs) -> anyhow::Result<ExitCode> {
    let summary = labels_from_manifests(&args.lake, &args.out)?;
    println!(
        "labelled {} of {} traces from collector manifests ({} without one beside them); wrote {}",
        summary.labelled,
        summary.traces,
        summary.traces - summary.labelled,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use arrow::array::{Array, AsArray};
use clap::Args;
use tracecast_features::{LakeOptions, open_lake};
use tracecast_train::collector_label;

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
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let sources = runtime.block_on(trace_sources(&args.lake))?;
    let mut csv = String::from("trace_id,model,batch_size,source\n");
    let (mut labelled, mut without) = (0, 0);
    for (trace_id, source) in &sources {
        let Some(source) = source else {
            without += 1;
            continue;
        };
        match collector_label(Path::new(source))? {
            Some(label) => {
                labelled += 1;
                csv.push_str(&format!(
                    "{trace_id},{},{},{}\n",
                    label.model.unwrap_or_default().replace(',', ";"),
                    label.batch_size.map_or(String::new(), |b| b.to_string()),
                    source.replace(',', ";")
                ));
            }
            None => without += 1,
        }
    }
    std::fs::write(&args.out, csv).with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "labelled {labelled} of {} traces from collector manifests ({without} without one beside them); wrote {}",
        sources.len(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Every trace's id and, for traces read from a plain file, its path.
async fn trace_sources(lake: &Path) -> anyhow::Result<Vec<(String, Option<String>)>> {
    let ctx = open_lake(lake, &LakeOptions::default()).await?;
    let batches = ctx
        .sql("SELECT trace_id, source, archive_member FROM traces ORDER BY trace_id")
        .await?
        .collect()
        .await?;
    let mut out = Vec::new();
    for batch in &batches {
        let ids = batch.column(0).as_string::<i32>();
        let sources = batch.column(1).as_string::<i32>();
        let members = batch.column(2);
        for i in 0..batch.num_rows() {
            let plain_file = members.is_null(i) && !sources.is_null(i);
            out.push((
                ids.value(i).to_string(),
                plain_file.then(|| sources.value(i).to_string()),
            ));
        }
    }
    Ok(out)
}

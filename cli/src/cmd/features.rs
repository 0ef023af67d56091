use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use tracecast_features::{DEFAULT_CHUNK_ITEMS, FeatureRun, FeatureSummary, LakeOptions, WindowSpec, pipeline_sql};

use crate::progress::Ui;

/// Build sliding-window feature tables from a lake's kernel sequences.
///
/// Each step's GPU sequence (kernels, copies and sets in issue order) is cut
/// into windows of W items sliding by S; each window's target is the wall
/// time of its S central items, so a step's time is the sum of its windows'
/// targets plus a step remainder. The pipeline is SQL run by DataFusion:
/// features/sql/*.sql (pass --sql DIR to run edited copies).
///
/// OUT gets windows/*.parquet (one row per window), steps/*.parquet (one row
/// per step) and features.json (W, S, traces done, traces skipped and why).
/// Columns: schemas/TABLES.md (feature_windows, feature_steps). Running again
/// after new traces were ingested computes only the new traces.
///
/// To see where an edited pipeline spends its time, run with
/// RUST_LOG=tracecast_features=debug: the executed plan of each group is
/// logged with every operator's rows and compute time.
///
/// Examples:
///   tracecast features --lake lake --out features
///   tracecast features --lake lake --window 32 --stride 8 --out features-w32 --memory-limit 4096
///   duckdb -c "SELECT trace_id, sum(target_ns) FROM 'features/windows/*.parquet' GROUP BY 1"
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct FeaturesArgs {
    /// The lake directory.
    #[arg(long, required_unless_present = "print_sql")]
    lake: Option<PathBuf>,
    /// The output directory (created; an existing one must hold the same W and S).
    #[arg(long, required_unless_present = "print_sql")]
    out: Option<PathBuf>,
    /// Window length W: items each window sees.
    #[arg(long, short = 'w', default_value_t = 16)]
    window: usize,
    /// Stride S: central items each window predicts. W - S must be even.
    #[arg(long, short = 's', default_value_t = 4)]
    stride: usize,
    /// Memory DataFusion may use before spilling to disk (MiB). Also sizes
    /// the groups of traces computed at once, unless --chunk-items is given.
    #[arg(long, value_name = "MIB")]
    memory_limit: Option<usize>,
    /// GPU items (kernels, copies) computed at once; whole traces, so one
    /// trace larger than this is a group of its own. [default: 1000000, or
    /// --memory-limit / 4 KiB]
    #[arg(long, value_name = "N")]
    chunk_items: Option<u64>,
    /// Run the SQL files from this directory (edited copies of features/sql/) instead of the built-in ones.
    #[arg(long, value_name = "DIR")]
    sql: Option<PathBuf>,
    /// Print the SQL that would run (templates expanded for W and S) and exit.
    #[arg(long)]
    print_sql: bool,
}

/// Builds the feature tables of `lake` into `out` with a progress bar, and
/// lists the traces that give no windows, with the reason (also used by
/// `tracecast predict --trace/--lake`).
pub fn build(
    lake: &Path,
    out: &Path,
    spec: WindowSpec,
    lake_options: LakeOptions,
    sql_dir: Option<&Path>,
    chunk_items: u64,
    ui: &Ui,
) -> anyhow::Result<FeatureSummary> {
    let bar = ui.bar(0, "windows from GPU items", false);
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let run = FeatureRun {
        lake,
        out,
        spec,
        lake_options,
        sql_dir,
        chunk_items,
        progress: &progress,
    };
    let summary = tracecast_pipeline::features(&run)?;
    bar.finish_and_clear();
    for skipped in &summary.skipped {
        eprintln!(
            "no windows: {} ({}): {}",
            skipped.source, skipped.trace_id, skipped.reason
        );
    }
    Ok(summary)
}

pub fn run(args: FeaturesArgs, ui: &Ui) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let spec = WindowSpec::new(args.window, args.stride)?;
    if args.print_sql {
        for (name, sql) in pipeline_sql(args.sql.as_deref(), &spec)? {
            println!("-- {name}\n{sql}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (Some(lake), Some(out)) = (&args.lake, &args.out) else {
        unreachable!("clap requires both")
    };
    // About 4 KiB of DataFusion memory per item at W=16 (measured: 2.1 GiB
    // peak for 627 k items in one group).
    let chunk_items = args.chunk_items.unwrap_or_else(|| {
        args.memory_limit
            .map_or(DEFAULT_CHUNK_ITEMS, |mib| ((mib as u64) << 20) / 4096)
    });
    let lake_options = LakeOptions {
        memory_limit: args.memory_limit.map(|m| m << 20),
    };
    let summary = build(lake, out, spec, lake_options, args.sql.as_deref(), chunk_items, ui)?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "features W={} S={}: {} new traces, {} steps, {} windows from {} kernels/copies ({:.0} items/s); \
         {} traces already done; {} traces give no windows{}; {:.2} s",
        spec.window,
        spec.stride,
        summary.traces,
        summary.steps,
        summary.windows,
        summary.items,
        summary.items as f64 / seconds,
        summary.already_done,
        summary.skipped.len(),
        match summary.steps_without_items {
            0 => String::new(),
            n => format!(", {n} steps have no GPU work"),
        },
        seconds,
    );
    println!("wrote {} (features.json lists every trace)", out.display());
    Ok(ExitCode::SUCCESS)
}

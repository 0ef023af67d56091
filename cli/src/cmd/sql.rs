use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use tracecast_features::{ResultFormat, write_result};
use tracecast_pipeline::{SqlJob, sql, write_sql_result};

/// Query the lake with SQL (Apache DataFusion's dialect).
///
/// Every lake table is available under its own name: traces, devices, steps,
/// ops, launches, kernels, memcpy, comms, et_nodes, _ingest_log, and the view
/// et_op_links. Columns are documented in schemas/TABLES.md. Times are
/// integer nanoseconds.
///
/// Examples:
///   tracecast sql --lake lake "SELECT gpu_name, count(*) AS traces FROM traces GROUP BY 1"
///   tracecast sql --lake lake "SELECT name, sum(dur_ns)/1e6 AS ms FROM kernels GROUP BY 1 ORDER BY 2 DESC LIMIT 10"
///   tracecast sql --lake lake -f report.sql --format csv --out report.csv
///   tracecast sql --table w=features/windows "SELECT count(*) AS windows, sum(target_ns) FROM w"
///   tracecast sql --public ../shared/public "SELECT gpu, kind, count(*) AS ops, median(latency_ms) FROM neusight_per_op GROUP BY 1, 2"
///
/// Nested values (lists, structs) print as JSON text in CSV output.
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct SqlArgs {
    /// The lake directory.
    #[arg(long, required_unless_present_any = ["tables", "public"])]
    lake: Option<PathBuf>,
    /// Also query published predictors' measurements in a directory laid out
    /// like ../shared/public, as tables neusight_per_op, neusight_labels,
    /// neusight_graph_nodes and ets_ops (read from the CSVs and JSONs as
    /// they are, with tracecast's work estimates beside them). Repeatable:
    /// each table then holds every directory's rows.
    #[arg(long, value_name = "DIR")]
    public: Vec<PathBuf>,
    /// Also query a folder (or file) of Parquet as table NAME, e.g. a feature table: --table windows=features/windows.
    #[arg(long = "table", value_name = "NAME=PATH", value_parser = parse_table)]
    tables: Vec<(String, PathBuf)>,
    /// The query. Several statements separated by `;` run in order; the last one's rows are printed.
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    query: Option<String>,
    /// Read the query from a file instead.
    #[arg(short = 'f', long = "file", value_name = "FILE.sql")]
    file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    format: OutputFormat,
    /// Write the result here instead of standard output (required for parquet).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Memory DataFusion may use before spilling (MiB).
    #[arg(long, value_name = "MIB")]
    memory_limit: Option<usize>,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Table,
    Csv,
    Json,
    Parquet,
}

pub fn run(args: SqlArgs) -> anyhow::Result<ExitCode> {
    let text = match (&args.query, &args.file) {
        (Some(q), _) => q.clone(),
        (None, Some(f)) => std::fs::read_to_string(f).with_context(|| format!("read {}", f.display()))?,
        (None, None) => unreachable!("clap requires one"),
    };
    let format = match args.format {
        OutputFormat::Table => ResultFormat::Table,
        OutputFormat::Csv => ResultFormat::Csv,
        OutputFormat::Json => ResultFormat::Json,
        OutputFormat::Parquet => ResultFormat::Parquet,
    };
    if format == ResultFormat::Parquet && args.out.is_none() {
        bail!("--format parquet needs --out FILE");
    }
    let batches = sql(&SqlJob {
        lake: args.lake.as_deref(),
        memory_limit_mib: args.memory_limit,
        parquet: &args.tables,
        public: &args.public,
        sql: &text,
    })?;
    match &args.out {
        Some(path) => {
            let rows = write_sql_result(format, &batches, path)?;
            eprintln!("wrote {rows} rows to {}", path.display());
        }
        None => write_result(format, &batches, &mut io::BufWriter::new(io::stdout()))?,
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_table(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => Ok((name.to_string(), PathBuf::from(path))),
        _ => Err(format!("`{text}` is not NAME=PATH")),
    }
}

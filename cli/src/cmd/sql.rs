use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;
use tracecast_features::{LakeOptions, open_lake, table_names};

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
    /// they are, with tracecast's work estimates beside them).
    #[arg(long, value_name = "DIR")]
    public: Option<PathBuf>,
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
    let sql = match (&args.query, &args.file) {
        (Some(q), _) => q.clone(),
        (None, Some(f)) => std::fs::read_to_string(f).with_context(|| format!("read {}", f.display()))?,
        (None, None) => unreachable!("clap requires one"),
    };
    if matches!(args.format, OutputFormat::Parquet) && args.out.is_none() {
        bail!("--format parquet needs --out FILE");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let batches = runtime.block_on(query(&args, &sql))?;
    match &args.out {
        Some(path) => {
            let tmp = path.with_extension("tmp-partial");
            let mut file = io::BufWriter::new(File::create(&tmp).with_context(|| format!("create {}", tmp.display()))?);
            write(args.format, &batches, &mut file).with_context(|| format!("write {}", path.display()))?;
            std::fs::rename(&tmp, path).with_context(|| format!("rename into {}", path.display()))?;
            let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
            eprintln!("wrote {rows} rows to {}", path.display());
        }
        None => write(args.format, &batches, &mut io::BufWriter::new(io::stdout()))?,
    }
    Ok(ExitCode::SUCCESS)
}

async fn query(args: &SqlArgs, sql: &str) -> anyhow::Result<Vec<RecordBatch>> {
    let options = LakeOptions {
        memory_limit: args.memory_limit.map(|m| m << 20),
    };
    let ctx = match &args.lake {
        Some(lake) => open_lake(lake, &options).await?,
        None => SessionContext::new_with_config(SessionConfig::new().with_information_schema(true)),
    };
    for (name, path) in &args.tables {
        if !path.exists() {
            bail!("--table {name}={}: no such file or folder", path.display());
        }
        let url = if path.is_dir() {
            format!("{}/", path.display())
        } else {
            path.display().to_string()
        };
        ctx.register_parquet(name.as_str(), &url, ParquetReadOptions::default())
            .await
            .with_context(|| format!("--table {name}={}", path.display()))?;
    }
    if let Some(dir) = &args.public {
        for (def, batch) in tracecast_opmodel::public_tables(dir)? {
            let table = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
            ctx.register_table(def.name, Arc::new(table))
                .with_context(|| format!("--public {}", dir.display()))?;
        }
    }
    let statements = DFParser::parse_sql(sql).map_err(|e| anyhow::anyhow!("{e}"))?;
    if statements.is_empty() {
        bail!("no SQL statement given");
    }
    let mut last = Vec::new();
    for statement in statements {
        let plan = ctx.state().statement_to_plan(statement).await.map_err(explain)?;
        last = ctx
            .execute_logical_plan(plan)
            .await
            .map_err(explain)?
            .collect()
            .await
            .map_err(explain)?;
    }
    Ok(last)
}

fn parse_table(text: &str) -> Result<(String, PathBuf), String> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => Ok((name.to_string(), PathBuf::from(path))),
        _ => Err(format!("`{text}` is not NAME=PATH")),
    }
}

/// DataFusion's errors, with the lake's tables listed when a name is unknown.
fn explain(e: datafusion::error::DataFusionError) -> anyhow::Error {
    let text = e.to_string();
    if text.contains("not found") {
        anyhow::anyhow!("{text}\nthe lake's tables: {}", table_names().join(", "))
    } else {
        anyhow::anyhow!("{text}")
    }
}

/// The batch with every nested column (lists, structs, maps) as JSON text,
/// which CSV can hold: `[[16, 512], [1]]`.
fn nested_as_json(batch: &RecordBatch) -> anyhow::Result<RecordBatch> {
    let schema = batch.schema();
    if !schema.fields().iter().any(|f| f.data_type().is_nested()) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        if !field.data_type().is_nested() {
            fields.push(field.as_ref().clone());
            columns.push(column.clone());
            continue;
        }
        let one = RecordBatch::try_new(
            Arc::new(Schema::new(vec![field.as_ref().clone()])),
            vec![column.clone()],
        )?;
        let mut lines = Vec::new();
        {
            let mut w = datafusion::arrow::json::LineDelimitedWriter::new(&mut lines);
            w.write(&one)?;
            w.finish()?;
        }
        let mut texts: Vec<Option<String>> = Vec::with_capacity(batch.num_rows());
        for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let row: serde_json::Value = serde_json::from_slice(line)?;
            texts.push(row.get(field.name()).map(|v| v.to_string()));
        }
        fields.push(Field::new(field.name(), DataType::Utf8, true));
        columns.push(Arc::new(StringArray::from(texts)));
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
}

fn write<W: Write + Send>(format: OutputFormat, batches: &[RecordBatch], out: &mut W) -> anyhow::Result<()> {
    match format {
        OutputFormat::Table => {
            writeln!(
                out,
                "{}",
                datafusion::arrow::util::pretty::pretty_format_batches(batches)?
            )?;
        }
        OutputFormat::Csv => {
            let mut w = datafusion::arrow::csv::Writer::new(&mut *out);
            for b in batches {
                w.write(&nested_as_json(b)?)?;
            }
        }
        OutputFormat::Json => {
            let mut w = datafusion::arrow::json::ArrayWriter::new(&mut *out);
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
        }
        OutputFormat::Parquet => {
            let schema = match batches.first() {
                Some(b) => b.schema(),
                None => bail!("the query returned no batches, so there is no schema to write"),
            };
            let mut w = datafusion::parquet::arrow::ArrowWriter::try_new(&mut *out, schema, None)?;
            for b in batches {
                w.write(b)?;
            }
            w.close()?;
        }
    }
    out.flush()?;
    Ok(())
}

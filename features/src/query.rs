//! SQL over the lake (`tracecast sql`): a session with the lake's tables and
//! any extra tables, the statements run in order, and the last one's rows
//! written in the format asked.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion::sql::parser::DFParser;

use crate::{FeaturesError, LakeOptions, open_lake, table_names};

/// What a query can name.
#[derive(Default)]
pub struct QuerySources<'a> {
    /// The lake: every lake table under its own name.
    pub lake: Option<&'a Path>,
    pub lake_options: LakeOptions,
    /// Parquet files or folders, as (table name, path).
    pub parquet: &'a [(String, PathBuf)],
    /// Tables already in memory, as (table name, batches of one schema).
    pub memory: Vec<(String, Vec<RecordBatch>)>,
}

/// Runs every statement of `sql` in order; returns the last one's rows.
pub async fn run_sql(sources: &QuerySources<'_>, sql: &str) -> Result<Vec<RecordBatch>, FeaturesError> {
    let ctx = match sources.lake {
        Some(lake) => open_lake(lake, &sources.lake_options).await?,
        None => SessionContext::new_with_config(SessionConfig::new().with_information_schema(true)),
    };
    for (name, path) in sources.parquet {
        let table = |reason: String| FeaturesError::Table {
            name: name.clone(),
            path: path.clone(),
            reason,
        };
        if !path.exists() {
            return Err(table("no such file or folder".into()));
        }
        let url = if path.is_dir() {
            format!("{}/", path.display())
        } else {
            path.display().to_string()
        };
        ctx.register_parquet(name.as_str(), &url, ParquetReadOptions::default())
            .await
            .map_err(|e| table(e.to_string()))?;
    }
    for (name, batches) in &sources.memory {
        let Some(first) = batches.first() else { continue };
        let table = MemTable::try_new(first.schema(), vec![batches.clone()])?;
        ctx.register_table(name.as_str(), Arc::new(table))?;
    }
    let statements = DFParser::parse_sql(sql).map_err(|e| FeaturesError::Query(e.to_string()))?;
    if statements.is_empty() {
        return Err(FeaturesError::Query("no SQL statement given".into()));
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

/// DataFusion's errors, with the lake's tables listed when a name is unknown.
fn explain(e: datafusion::error::DataFusionError) -> FeaturesError {
    let text = e.to_string();
    if text.contains("not found") {
        FeaturesError::Query(format!("{text}\nthe lake's tables: {}", table_names().join(", ")))
    } else {
        FeaturesError::Query(text)
    }
}

/// How query results are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultFormat {
    /// Aligned text, for a terminal.
    Table,
    /// CSV; nested values (lists, structs) as JSON text.
    Csv,
    /// A JSON array of row objects.
    Json,
    Parquet,
}

/// Writes `batches` to `out` as `format`.
pub fn write_result<W: Write + Send>(
    format: ResultFormat,
    batches: &[RecordBatch],
    out: &mut W,
) -> Result<(), FeaturesError> {
    let io = |source: std::io::Error| FeaturesError::Io {
        path: "the query's output".into(),
        source,
    };
    match format {
        ResultFormat::Table => {
            let text = datafusion::arrow::util::pretty::pretty_format_batches(batches)?;
            writeln!(out, "{text}").map_err(io)?;
        }
        ResultFormat::Csv => {
            let mut w = datafusion::arrow::csv::Writer::new(&mut *out);
            for b in batches {
                w.write(&nested_as_json(b)?)?;
            }
        }
        ResultFormat::Json => {
            let mut w = datafusion::arrow::json::ArrayWriter::new(&mut *out);
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
        }
        ResultFormat::Parquet => {
            let Some(first) = batches.first() else {
                return Err(FeaturesError::Query(
                    "the query returned no batches, so there is no schema to write".into(),
                ));
            };
            let mut w = datafusion::parquet::arrow::ArrowWriter::try_new(&mut *out, first.schema(), None)
                .map_err(|e| FeaturesError::Query(e.to_string()))?;
            for b in batches {
                w.write(b).map_err(|e| FeaturesError::Query(e.to_string()))?;
            }
            w.close().map_err(|e| FeaturesError::Query(e.to_string()))?;
        }
    }
    out.flush().map_err(io)
}

/// The batch with every nested column (lists, structs, maps) as JSON text,
/// which CSV can hold: `[[16, 512], [1]]`.
fn nested_as_json(batch: &RecordBatch) -> Result<RecordBatch, FeaturesError> {
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
            let row: serde_json::Value =
                serde_json::from_slice(line).map_err(|e| FeaturesError::Query(e.to_string()))?;
            texts.push(row.get(field.name()).map(|v| v.to_string()));
        }
        fields.push(Field::new(field.name(), DataType::Utf8, true));
        columns.push(Arc::new(StringArray::from(texts)));
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
}

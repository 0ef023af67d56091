//! `tracecast sql`: the lake, Parquet tables and the published predictors'
//! measurements in one session; the result written atomically to a file.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow::record_batch::RecordBatch;
use tracecast_features::{LakeOptions, QuerySources, ResultFormat, run_sql, write_result};

use crate::PipelineError;
use crate::runtime::runtime;

pub struct SqlJob<'a> {
    pub lake: Option<&'a Path>,
    /// Memory DataFusion may use before spilling, MiB.
    pub memory_limit_mib: Option<usize>,
    /// Parquet files or folders as (table name, path).
    pub parquet: &'a [(String, PathBuf)],
    /// Directories laid out like ../shared/public: their measurements as
    /// tables (`neusight_per_op`, `neusight_labels`, ...), each table the
    /// rows of every directory.
    pub public: &'a [PathBuf],
    /// One or more statements; the last one's rows are returned.
    pub sql: &'a str,
}

/// Runs `job.sql`; returns the last statement's rows.
pub fn sql(job: &SqlJob<'_>) -> Result<Vec<RecordBatch>, PipelineError> {
    let mut memory: Vec<(String, Vec<RecordBatch>)> = Vec::new();
    for dir in job.public {
        for (def, batch) in tracecast_opmodel::public_tables(dir)? {
            match memory.iter_mut().find(|(name, _)| name == def.name) {
                Some((_, batches)) => batches.push(batch),
                None => memory.push((def.name.to_string(), vec![batch])),
            }
        }
    }
    let sources = QuerySources {
        lake: job.lake,
        lake_options: LakeOptions {
            memory_limit: job.memory_limit_mib.map(|m| m << 20),
        },
        parquet: job.parquet,
        memory,
    };
    Ok(runtime()?.block_on(run_sql(&sources, job.sql))?)
}

/// Writes `batches` to `path` as `format`, through a temporary file renamed
/// into place, so that a failed write leaves no partial file. Returns the rows.
pub fn write_sql_result(format: ResultFormat, batches: &[RecordBatch], path: &Path) -> Result<usize, PipelineError> {
    let io = |what: String| move |source| PipelineError::Io { what, source };
    let tmp = path.with_extension("tmp-partial");
    let file = File::create(&tmp).map_err(io(format!("creating {}", tmp.display())))?;
    write_result(format, batches, &mut BufWriter::new(file))?;
    std::fs::rename(&tmp, path).map_err(io(format!("renaming into {}", path.display())))?;
    Ok(batches.iter().map(RecordBatch::num_rows).sum())
}

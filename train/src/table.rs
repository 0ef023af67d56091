//! A feature directory written by `tracecast features` (`schemas/FORMATS.md`
//! "Feature directory"): its manifest, window rows and step rows. Only part
//! files the manifest lists are read (others are leftovers of a dead run).

use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, Int64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tracecast_schemas::features::{FeatureManifest, MANIFEST_FILE};

use crate::TrainError;

/// One step of the `steps/` table.
#[derive(Clone, Debug)]
pub struct StepRow {
    pub trace_id: String,
    pub step_id: i64,
    pub dur_ns: i64,
    pub gpu_span_ns: i64,
    pub remainder_ns: i64,
    /// Host time fetching the step's batch (part of the remainder).
    pub dataloader_ns: i64,
    /// CPU operators the profiler recorded in the step.
    pub cpu_op_count: i64,
    /// Time the step's runtime calls spent waiting on the GPU (beyond 5 µs each).
    pub runtime_wait_ns: i64,
    pub gpu_name: Option<String>,
    /// The run the trace belongs to (ranks of one run share it).
    pub job_id: Option<String>,
}

/// The feature directory, read whole: window rows as Arrow batches, steps as rows.
pub struct FeatureTable {
    pub dir: PathBuf,
    pub window: usize,
    pub stride: usize,
    pub windows: Vec<RecordBatch>,
    pub steps: Vec<StepRow>,
    /// blake3 of the listed part files' bytes, in name order: which data a model saw.
    pub content_hash: String,
}

impl FeatureTable {
    pub fn open(dir: &Path) -> Result<FeatureTable, TrainError> {
        let manifest_path = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&manifest_path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                TrainError::Features {
                    path: dir.to_path_buf(),
                    reason: format!(
                        "not a feature directory (no {MANIFEST_FILE}): build one with `tracecast features`"
                    ),
                }
            } else {
                TrainError::Read {
                    path: manifest_path.clone(),
                    source,
                }
            }
        })?;
        let manifest = FeatureManifest::from_json(&text).map_err(|reason| TrainError::Features {
            path: dir.to_path_buf(),
            reason: format!("{reason}: rebuild it with `tracecast features`"),
        })?;
        let mut files: Vec<&str> = manifest.files().collect();
        files.sort();
        let mut hasher = blake3::Hasher::new();
        let (mut windows, mut steps) = (Vec::new(), Vec::new());
        for name in files {
            let path = dir.join(name);
            let bytes = std::fs::read(&path).map_err(|source| TrainError::Read {
                path: path.clone(),
                source,
            })?;
            hasher.update(name.as_bytes());
            hasher.update(&bytes);
            let batches = read_parquet(&path, bytes)?;
            if name.starts_with("windows/") {
                windows.extend(batches);
            } else if name.starts_with("steps/") {
                for batch in &batches {
                    steps.extend(step_rows(batch).map_err(|reason| TrainError::Features {
                        path: path.clone(),
                        reason,
                    })?);
                }
            }
        }
        let windows = crate::window_order::sorted_windows(windows).map_err(|source| TrainError::Arrow {
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(FeatureTable {
            dir: dir.to_path_buf(),
            window: manifest.window,
            stride: manifest.stride,
            windows,
            steps,
            content_hash: hasher.finalize().to_hex()[..16].to_string(),
        })
    }

    pub fn window_rows(&self) -> usize {
        self.windows.iter().map(|b| b.num_rows()).sum()
    }
}

fn read_parquet(path: &Path, bytes: Vec<u8>) -> Result<Vec<RecordBatch>, TrainError> {
    let parquet_err = |source| TrainError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .map_err(parquet_err)?
        .with_batch_size(65_536)
        .build()
        .map_err(parquet_err)?;
    reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TrainError::Arrow {
            path: path.to_path_buf(),
            source,
        })
}

fn step_rows(batch: &RecordBatch) -> Result<Vec<StepRow>, String> {
    let col = |name: &str| {
        batch
            .column_by_name(name)
            .ok_or_else(|| format!("steps table has no `{name}` column"))
    };
    let trace = col("trace_id")?
        .as_string_opt::<i32>()
        .ok_or("trace_id is not a string")?;
    let int = |name: &str| -> Result<&arrow::array::PrimitiveArray<Int64Type>, String> {
        col(name)?
            .as_primitive_opt::<Int64Type>()
            .ok_or(format!("{name} is not Int64"))
    };
    let (step, dur, span, rem, loader, cpu_ops, waits) = (
        int("step_id")?,
        int("dur_ns")?,
        int("gpu_span_ns")?,
        int("remainder_ns")?,
        int("dataloader_ns")?,
        int("cpu_op_count")?,
        int("runtime_wait_ns")?,
    );
    let gpu = col("gpu_name")?
        .as_string_opt::<i32>()
        .ok_or("gpu_name is not a string")?;
    let job = col("job_id")?.as_string_opt::<i32>().ok_or("job_id is not a string")?;
    let text = |a: &arrow::array::StringArray, i: usize| {
        (!a.is_null(i))
            .then(|| a.value(i).to_string())
            .filter(|v| !v.is_empty())
    };
    Ok((0..batch.num_rows())
        .map(|i| StepRow {
            trace_id: trace.value(i).to_string(),
            step_id: step.value(i),
            dur_ns: dur.value(i),
            gpu_span_ns: span.value(i),
            remainder_ns: rem.value(i),
            dataloader_ns: loader.value(i),
            cpu_op_count: cpu_ops.value(i),
            runtime_wait_ns: waits.value(i),
            gpu_name: text(gpu, i),
            job_id: text(job, i),
        })
        .collect())
}

/// A column of a window batch as f64 values, nulls as NaN (LightGBM's missing value).
pub fn column_f64(batch: &RecordBatch, name: &str) -> Option<Vec<f64>> {
    let array = batch.column_by_name(name)?;
    let cast = arrow::compute::cast(array, &arrow::datatypes::DataType::Float64).ok()?;
    let values = cast.as_primitive::<Float64Type>();
    Some(
        (0..values.len())
            .map(|i| if values.is_null(i) { f64::NAN } else { values.value(i) })
            .collect(),
    )
}

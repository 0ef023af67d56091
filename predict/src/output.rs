//! Writes a prediction: `steps` and `traces` as Parquet and CSV (columns in
//! `schemas/TABLES.md`), the planner's throughput table
//! (`throughput.csv`, `plan_throughput`) and the same figures in
//! ElasticFlow's layout (`elasticflow/<gpu type>/<job type>.csv`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use tracecast_schemas::plan::THROUGHPUT;
use tracecast_schemas::predict::{PREDICTED_STEPS, PREDICTED_TRACES};
use tracecast_train::write_parquet;

use crate::{PredictError, Prediction, ThroughputRow, elasticflow, throughput_grid};

fn strings<'a>(v: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(v.collect::<StringArray>())
}
fn ints(v: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(v.collect::<Int64Array>())
}
fn floats(v: impl Iterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(v.collect::<Float64Array>())
}

fn steps_batch(p: &Prediction) -> Result<RecordBatch, arrow::error::ArrowError> {
    let s = &p.steps;
    RecordBatch::try_new(
        PREDICTED_STEPS.schema(),
        vec![
            strings(s.iter().map(|r| Some(r.trace_id.as_str()))),
            ints(s.iter().map(|r| Some(r.step_id))),
            strings(s.iter().map(|r| Some(r.gpu.as_str()))),
            ints(s.iter().map(|r| r.batch_size.map(i64::from))),
            floats(s.iter().map(|r| Some(r.predicted_ns))),
            floats(s.iter().map(|r| Some(r.predicted_gpu_span_ns))),
            ints(s.iter().map(|r| r.measured_ns)),
            ints(s.iter().map(|r| Some(r.windows as i64))),
        ],
    )
}

fn traces_batch(p: &Prediction) -> Result<RecordBatch, arrow::error::ArrowError> {
    let t = &p.traces;
    RecordBatch::try_new(
        PREDICTED_TRACES.schema(),
        vec![
            strings(t.iter().map(|r| Some(r.trace_id.as_str()))),
            strings(t.iter().map(|r| r.model.as_deref())),
            strings(t.iter().map(|r| r.recorded_gpu.as_deref())),
            strings(t.iter().map(|r| Some(r.gpu.as_str()))),
            ints(t.iter().map(|r| r.batch_size.map(i64::from))),
            ints(t.iter().map(|r| Some(i64::from(r.num_gpus)))),
            ints(t.iter().map(|r| Some(r.steps as i64))),
            floats(t.iter().map(|r| Some(r.iteration_ms))),
            floats(t.iter().map(|r| r.measured_iteration_ms)),
            floats(t.iter().map(|r| Some(r.iters_per_s()))),
            floats(t.iter().map(|r| Some(r.speedup()))),
            floats(t.iter().map(|r| r.gradient_bytes)),
            strings(t.iter().map(|r| r.gradient_source.map(|g| g.name()))),
            floats(t.iter().map(|r| Some(r.allreduce_ms))),
            floats(t.iter().map(|r| Some(r.exposed_allreduce_ms))),
            floats(t.iter().map(|r| Some(r.backward_ms))),
        ],
    )
}

fn throughput_batch(r: &[ThroughputRow]) -> Result<RecordBatch, arrow::error::ArrowError> {
    RecordBatch::try_new(
        THROUGHPUT.schema(),
        vec![
            strings(r.iter().map(|r| Some(r.job_type.as_str()))),
            strings(r.iter().map(|r| Some(r.gpu_type.as_str()))),
            ints(r.iter().map(|r| Some(r.global_batch as i64))),
            ints(r.iter().map(|r| Some(i64::from(r.num_gpus)))),
            floats(r.iter().map(|r| Some(r.iters_per_s))),
            ints(r.iter().map(|_| None)),
            strings(r.iter().map(|_| Some("predicted"))),
        ],
    )
}

fn write_csv(path: &Path, batch: &RecordBatch) -> Result<(), PredictError> {
    let file = std::fs::File::create(path).map_err(|source| PredictError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    let mut writer = arrow::csv::Writer::new(file);
    writer.write(batch).map_err(|source| PredictError::Arrow {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes every output into `dir` (created); returns the files written.
pub fn write_outputs(p: &Prediction, dir: &Path) -> Result<Vec<PathBuf>, PredictError> {
    create_dir(dir)?;
    let arrow_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PredictError::Arrow { path, source }
    };
    let mut files = Vec::new();
    for (name, batch) in [
        ("steps", steps_batch(p).map_err(arrow_err(dir))?),
        ("traces", traces_batch(p).map_err(arrow_err(dir))?),
    ] {
        let parquet = dir.join(format!("{name}.parquet"));
        let csv = dir.join(format!("{name}.csv"));
        write_parquet(&parquet, &batch)?;
        write_csv(&csv, &batch)?;
        files.extend([parquet, csv]);
    }
    if !p.throughput.is_empty() {
        files.extend(write_throughput(&p.throughput, dir)?);
    }
    Ok(files)
}

/// Writes the planner's throughput table into `dir` (created):
/// `throughput.csv` and the same figures in ElasticFlow's layout
/// (`elasticflow/<gpu type>/<job type>.csv`); returns the files written.
pub fn write_throughput(rows: &[ThroughputRow], dir: &Path) -> Result<Vec<PathBuf>, PredictError> {
    create_dir(dir)?;
    let path = dir.join("throughput.csv");
    let batch = throughput_batch(rows).map_err(|source| PredictError::Arrow {
        path: path.clone(),
        source,
    })?;
    write_csv(&path, &batch)?;
    let mut files = vec![path];
    for ((job, gpu), rates) in throughput_grid(rows) {
        let folder = dir.join("elasticflow").join(file_name(&gpu));
        create_dir(&folder)?;
        let path = folder.join(format!("{}.csv", file_name(&job)));
        elasticflow::write_file(&path, &rates)?;
        files.push(path);
    }
    Ok(files)
}

fn create_dir(dir: &Path) -> Result<(), PredictError> {
    std::fs::create_dir_all(dir).map_err(|source| PredictError::Write {
        path: dir.to_path_buf(),
        source,
    })
}

/// A name safe as one path component.
fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

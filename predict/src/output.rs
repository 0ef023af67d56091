//! Writes a prediction: `steps` and `traces` as Parquet and CSV (columns in
//! `schemas/TABLES.md`), the planner's throughput table
//! (`throughput.csv`, `plan_throughput`) and the same figures in
//! ElasticFlow's layout (`elasticflow/<gpu type>/<job type>.csv`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use tracecast_schemas::plan::THROUGHPUT;
use tracecast_schemas::predict::{PREDICTED_STEPS, PREDICTED_TRACES, PRICED_TRANSFORMER};
use tracecast_train::write_parquet;

use crate::{PredictError, Prediction, ThroughputRow, TransformerPrediction, elasticflow, throughput_grid};

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
            floats(s.iter().map(|r| Some(r.predicted_busy_ns))),
            floats(s.iter().map(|r| Some(r.profiler_overhead_ns))),
            floats(s.iter().map(|r| r.host_ns)),
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

/// `ops price`'s rows as the `priced_transformer` table.
fn priced_batch(p: &TransformerPrediction) -> Result<RecordBatch, arrow::error::ArrowError> {
    let r = &p.rows;
    let mode = if p.price.training { "train" } else { "inf" };
    let memory_gb: std::collections::HashMap<&str, Option<f64>> = p
        .price
        .gpus
        .iter()
        .map(|g| (g.name.as_str(), crate::transformer::gpu_memory_gb(g)))
        .collect();
    let kind = |name: &'static str| {
        floats(
            r.iter()
                .map(move |r| Some(r.pass.by_kind.get(name).copied().unwrap_or(0.0))),
        )
    };
    RecordBatch::try_new(
        PRICED_TRANSFORMER.schema(),
        vec![
            strings(r.iter().map(|_| Some(p.price.model.as_str()))),
            strings(r.iter().map(|r| Some(r.pass.gpu.as_str()))),
            ints(r.iter().map(|r| Some(i64::from(r.pass.batch)))),
            ints(r.iter().map(|r| Some(i64::from(r.num_gpus)))),
            ints(r.iter().map(|_| Some(i64::from(p.price.seqlen)))),
            strings(r.iter().map(|_| Some(mode))),
            floats(r.iter().map(|r| Some(r.pass.forward_ms))),
            floats(r.iter().map(|r| Some(r.pass.backward_ms))),
            floats(r.iter().map(|r| Some(r.pass.optimizer_ms))),
            floats(r.iter().map(|r| Some(r.allreduce_ms))),
            floats(r.iter().map(|r| Some(r.exposed_allreduce_ms))),
            floats(r.iter().map(|r| Some(r.iteration_ms()))),
            floats(r.iter().map(|r| Some(r.samples_per_s()))),
            floats(r.iter().map(|r| Some(r.samples_per_s() * f64::from(p.price.seqlen)))),
            kind("gemm"),
            kind("conv"),
            kind("elementwise"),
            kind("norm"),
            kind("softmax"),
            kind("reduction"),
            kind("gather"),
            kind("copy"),
            floats(r.iter().map(|_| Some(p.price.model_state_bytes() / 1e9))),
            floats(r.iter().map(|r| memory_gb.get(r.pass.gpu.as_str()).copied().flatten())),
        ],
    )
}

/// `ops price`'s rows as CSV text (`priced_transformer`).
pub fn priced_csv(p: &TransformerPrediction) -> Result<String, PredictError> {
    let origin = || p.price.model.clone().into();
    let batch = priced_batch(p).map_err(|source| PredictError::Arrow { path: origin(), source })?;
    let mut text = Vec::new();
    arrow::csv::Writer::new(&mut text)
        .write(&batch)
        .map_err(|source| PredictError::Arrow { path: origin(), source })?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// Writes `ops price`'s outputs into `dir` (created): `priced.csv`
/// (`priced_transformer`) and, for training, the planner's throughput
/// table (`write_throughput`); returns the files written.
pub fn write_price_outputs(p: &TransformerPrediction, dir: &Path) -> Result<Vec<PathBuf>, PredictError> {
    create_dir(dir)?;
    let mut files = vec![write_table(&dir.join("priced.csv"), priced_batch(p))?];
    if !p.throughput.is_empty() {
        files.extend(write_throughput(&p.throughput, dir)?);
    }
    Ok(files)
}

/// Writes a table just built as CSV at `path`; returns the path.
fn write_table(path: &Path, batch: Result<RecordBatch, arrow::error::ArrowError>) -> Result<PathBuf, PredictError> {
    let batch = batch.map_err(|source| PredictError::Arrow {
        path: path.to_path_buf(),
        source,
    })?;
    write_csv(path, &batch)?;
    Ok(path.to_path_buf())
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
    let mut files = vec![write_table(&dir.join("throughput.csv"), throughput_batch(rows))?];
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

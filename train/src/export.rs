//! The model's inputs as a Parquet file: one Float64 column per input in
//! the model's order, then `label` (the fitted, transformed target) and
//! `target_ns`. For inspecting what the model sees, and for training the
//! same model elsewhere (`bench/train.sh` times Python's LightGBM on it).

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;

use crate::TrainError;
use crate::booster::encode;
use crate::config::TargetTransform;
use crate::dataset::Rows;

pub fn write_inputs(path: &Path, rows: &Rows, transform: TargetTransform) -> Result<(), TrainError> {
    let w = rows.width();
    let mut fields: Vec<Field> = rows
        .names
        .iter()
        .map(|n| Field::new(n, DataType::Float64, true))
        .collect();
    fields.push(Field::new("label", DataType::Float64, false));
    fields.push(Field::new("target_ns", DataType::Float64, false));
    let mut columns: Vec<ArrayRef> = (0..w)
        .map(|j| {
            let values = (0..rows.len())
                .map(|i| rows.x[i * w + j])
                .map(|v| (!v.is_nan()).then_some(v));
            Arc::new(values.collect::<Float64Array>()) as ArrayRef
        })
        .collect();
    let labels = rows
        .target_ns
        .iter()
        .zip(&rows.base_ns)
        .map(|(&t, &b)| f64::from(encode(t, b, transform)));
    columns.push(Arc::new(Float64Array::from_iter_values(labels)));
    columns.push(Arc::new(Float64Array::from(rows.target_ns.clone())));
    let arrow_err = |source| TrainError::Arrow {
        path: path.to_path_buf(),
        source,
    };
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(arrow_err)?;
    write_parquet(path, &batch)
}

/// One batch as a Parquet file (also `tracecast predict`'s outputs).
pub fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<(), TrainError> {
    let file = std::fs::File::create(path).map_err(|source| TrainError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    let parquet_err = |source| TrainError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let mut writer = ArrowWriter::try_new(file, batch.schema(), None).map_err(parquet_err)?;
    writer.write(batch).map_err(parquet_err)?;
    writer.close().map_err(parquet_err)?;
    Ok(())
}

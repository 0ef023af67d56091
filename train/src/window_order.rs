//! Window rows in one order whatever order the feature pipeline wrote them
//! in: by trace, step and window. The pipeline writes traces in the lake's
//! order, which follows ingest's (parallel) order; LightGBM's bagging and
//! the folds see rows in order, so without this the same traces ingested
//! twice train two different models.

use std::collections::{BTreeSet, HashMap};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::{cast, interleave_record_batch};
use arrow::datatypes::{DataType, Int64Type};
use arrow::error::ArrowError;

/// Rows per output batch, as the Parquet reader gives them.
const BATCH_ROWS: usize = 65_536;

/// `batches` (one schema) sorted by `trace_id`, `step_id`, `window_index`.
pub fn sorted_windows(batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>, ArrowError> {
    if batches.is_empty() {
        return Ok(batches);
    }
    let column = |batch: &RecordBatch, name: &str, to: &DataType| {
        let array = batch
            .column_by_name(name)
            .ok_or_else(|| ArrowError::SchemaError(format!("window rows have no `{name}` column")))?;
        cast(array, to)
    };
    let mut traces = Vec::with_capacity(batches.len());
    for batch in &batches {
        traces.push(column(batch, "trace_id", &DataType::Utf8)?);
    }
    // Traces by rank in name order, so that a row's key is integers alone.
    let names: BTreeSet<&str> = traces
        .iter()
        .flat_map(|t| {
            let t = t.as_string::<i32>();
            (0..t.len()).map(move |row| t.value(row))
        })
        .collect();
    let rank: HashMap<&str, usize> = names.into_iter().enumerate().map(|(i, name)| (name, i)).collect();
    let mut keys: Vec<(usize, i64, i64, usize, usize)> = Vec::new();
    for (b, batch) in batches.iter().enumerate() {
        let trace = traces[b].as_string::<i32>();
        let steps = column(batch, "step_id", &DataType::Int64)?;
        let steps = steps.as_primitive::<Int64Type>();
        let windows = column(batch, "window_index", &DataType::Int64)?;
        let windows = windows.as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            keys.push((rank[trace.value(row)], steps.value(row), windows.value(row), b, row));
        }
    }
    keys.sort_unstable();
    let inputs: Vec<&RecordBatch> = batches.iter().collect();
    let order: Vec<(usize, usize)> = keys.into_iter().map(|(_, _, _, b, row)| (b, row)).collect();
    order
        .chunks(BATCH_ROWS)
        .map(|chunk| interleave_record_batch(&inputs, chunk))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    fn batch(rows: &[(&str, i64, i64, f64)]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("trace_id", DataType::Utf8, false),
            Field::new("step_id", DataType::Int64, false),
            Field::new("window_index", DataType::Int64, false),
            Field::new("target_ns", DataType::Float64, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.3))),
            ],
        )
        .unwrap()
    }

    #[test]
    fn rows_come_out_by_trace_step_and_window_whatever_the_input_order() {
        let a = batch(&[("t2", 1, 0, 1.0), ("t1", 2, 1, 2.0), ("t1", 2, 0, 3.0)]);
        let b = batch(&[("t1", 1, 0, 4.0), ("t2", 0, 5, 5.0)]);
        let one = sorted_windows(vec![a.clone(), b.clone()]).unwrap();
        let other = sorted_windows(vec![b, a]).unwrap();
        assert_eq!(one, other);
        let targets: Vec<f64> = one[0]
            .column(3)
            .as_primitive::<arrow::datatypes::Float64Type>()
            .values()
            .to_vec();
        assert_eq!(targets, [4.0, 3.0, 2.0, 5.0, 1.0]);
        assert!(sorted_windows(Vec::new()).unwrap().is_empty());
    }
}

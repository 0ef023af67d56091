//! The feature table's windows as a what-if reads them: batch by batch,
//! each row with its trace (an index into the dataset's traces) and its
//! window number, counted as `build_dataset` reads them (filtered to one
//! trace like it), so that what is worked out per window lines up with the
//! dataset's windows.

use arrow::array::{Array, AsArray, RecordBatch};
use tracecast_schemas::features::position_column;
use tracecast_train::{Dataset, FeatureTable, column_f64};

use crate::PredictError;

/// One window row read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WindowRow {
    /// Its index in the batch.
    pub row: usize,
    /// Its trace's index in the dataset.
    pub trace: usize,
    /// Its window number over the whole table.
    pub window: usize,
}

/// One record batch of windows, with the rows read from it.
pub(crate) struct WindowBatch<'a> {
    table: &'a FeatureTable,
    batch: &'a RecordBatch,
    pub step_ids: Vec<f64>,
    pub window_index: Vec<f64>,
    pub rows: Vec<WindowRow>,
}

impl WindowBatch<'_> {
    /// The per-position column `name` at position `p`.
    pub fn position(&self, p: usize, name: &str) -> Result<Vec<f64>, PredictError> {
        self.optional_position(p, name)
            .ok_or_else(|| windows_error(self.table, format!("no `{}` column", position_column(p, name))))
    }

    /// The same, where a table may lack it (one from edited SQL).
    pub fn optional_position(&self, p: usize, name: &str) -> Option<Vec<f64>> {
        column_f64(self.batch, &position_column(p, name))
    }
}

/// An error in the table's windows.
pub(crate) fn windows_error(table: &FeatureTable, reason: String) -> PredictError {
    PredictError::Input {
        path: table.dir.join("windows"),
        reason,
    }
}

/// Every batch of `table`'s windows with the rows `build_dataset` reads
/// (of `only_trace` alone where given), and the number of windows.
pub(crate) fn window_batches<'a>(
    table: &'a FeatureTable,
    data: &Dataset,
    only_trace: Option<&str>,
) -> Result<(Vec<WindowBatch<'a>>, usize), PredictError> {
    let bad = |reason: String| windows_error(table, reason);
    let mut batches = Vec::with_capacity(table.windows.len());
    let mut window = 0usize;
    for batch in &table.windows {
        let ids = batch
            .column_by_name("trace_id")
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| bad("no trace_id column".into()))?;
        let whole = |name: &str| column_f64(batch, name).ok_or_else(|| bad(format!("no `{name}` column")));
        let (step_ids, window_index) = (whole("step_id")?, whole("window_index")?);
        let mut rows = Vec::new();
        for row in 0..batch.num_rows() {
            if ids.is_null(row) || only_trace.is_some_and(|only| ids.value(row) != only) {
                continue;
            }
            let trace = data
                .trace_index(ids.value(row))
                .ok_or_else(|| bad(format!("trace {} has windows but no steps row", ids.value(row))))?;
            rows.push(WindowRow { row, trace, window });
            window += 1;
        }
        batches.push(WindowBatch {
            table,
            batch,
            step_ids,
            window_index,
            rows,
        });
    }
    Ok((batches, window))
}

//! Whether each trace of a lake ran float32 matrix work on TF32 tensor
//! cores, read off its kernel names: the recorded run's TF32 switches for a
//! what-if (`tracecast predict --tf32 auto`).

use std::collections::HashMap;
use std::path::Path;

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::DataType;

use crate::PipelineError;
use crate::sql::{SqlJob, sql};

/// cuDNN's and cuBLAS's TF32 kernels name their math (`..._tf32f32_...`);
/// CUTLASS's name their instruction shape (`tensorop_s1688gemm`: float32
/// data through 16x8x8 TF32 MMAs). Strict float32 kernels name neither.
const TF32_KERNELS: &str = "SELECT trace_id, \
     bool_or(lower(name) LIKE '%tf32%' OR lower(name) LIKE '%s1688gemm%') AS used_tf32 \
     FROM kernels GROUP BY trace_id";

/// Per trace id of `lake`, whether any of its kernels is a TF32 one.
pub(crate) fn used_tf32(lake: &Path) -> Result<HashMap<String, bool>, PipelineError> {
    let batches = sql(&SqlJob {
        lake: Some(lake),
        memory_limit_mib: None,
        parquet: &[],
        public: &[],
        sql: TF32_KERNELS,
    })?;
    let bad = |reason: String| PipelineError::Input {
        path: lake.to_path_buf(),
        reason,
    };
    let mut used = HashMap::new();
    for batch in &batches {
        let column = |name: &str, as_type: &DataType| {
            let array = batch
                .column_by_name(name)
                .ok_or_else(|| bad(format!("the TF32 query returned no `{name}` column")))?;
            cast(array, as_type).map_err(|e| bad(format!("the TF32 query's `{name}`: {e}")))
        };
        let ids = column("trace_id", &DataType::Utf8)?;
        let flags = column("used_tf32", &DataType::Boolean)?;
        let (ids, flags) = (ids.as_string::<i32>(), flags.as_boolean());
        for i in 0..batch.num_rows() {
            if !ids.is_null(i) {
                used.insert(ids.value(i).to_string(), !flags.is_null(i) && flags.value(i));
            }
        }
    }
    Ok(used)
}

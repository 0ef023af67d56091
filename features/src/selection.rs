//! `selected_trace_key(trace_id)`: the pipeline's integer key of a trace in
//! the group being computed, null for any other trace.
//!
//! The views used to join every lake table to a table of the group's
//! trace ids. A hash join on the text id copies each kernel row (its long
//! name included) into a new batch; this function looks the id up and a
//! filter keeps the rows, which costs a lookup per run of equal ids (the
//! lake stores a trace's rows together).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, RwLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int32Array, Int32Builder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{ScalarValue, exec_err};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};

/// The traces of the group being computed, each with its key. Refilled by
/// the pipeline before each group; the function reads it when it runs.
#[derive(Debug, Clone, Default)]
pub struct SelectedTraces {
    keys: Arc<RwLock<HashMap<String, i32>>>,
}

impl SelectedTraces {
    /// Makes `ids` the selection, keyed 0, 1, ... in their order.
    pub fn set<'a>(&self, ids: impl IntoIterator<Item = &'a str>) {
        let mut keys = self.keys.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        keys.clear();
        for (key, id) in ids.into_iter().enumerate() {
            keys.insert(id.to_string(), key as i32);
        }
    }

    /// The SQL function reading this selection.
    pub fn udf(&self) -> ScalarUDF {
        ScalarUDF::from(SelectedTraceKey {
            selection: self.clone(),
            signature: Signature::one_of(
                [DataType::Utf8, DataType::Utf8View, DataType::LargeUtf8]
                    .into_iter()
                    .map(|t| TypeSignature::Exact(vec![t]))
                    .collect(),
                // Stable: one query sees one selection; the pipeline plans
                // each group's query anew.
                Volatility::Stable,
            ),
        })
    }

    fn keys_of<'a>(&self, ids: impl Iterator<Item = Option<&'a str>>, rows: usize) -> Int32Array {
        let keys = self.keys.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut out = Int32Builder::with_capacity(rows);
        let mut last: Option<(&str, Option<i32>)> = None;
        for id in ids {
            let Some(id) = id else {
                out.append_null();
                continue;
            };
            let key = match last {
                Some((previous, key)) if previous == id => key,
                _ => {
                    let key = keys.get(id).copied();
                    last = Some((id, key));
                    key
                }
            };
            out.append_option(key);
        }
        out.finish()
    }
}

#[derive(Debug)]
struct SelectedTraceKey {
    selection: SelectedTraces,
    signature: Signature,
}

// One function per selection: equal when they read the same one.
impl PartialEq for SelectedTraceKey {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.selection.keys, &other.selection.keys)
    }
}

impl Eq for SelectedTraceKey {}

impl Hash for SelectedTraceKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.selection.keys).hash(state);
    }
}

impl ScalarUDFImpl for SelectedTraceKey {
    fn name(&self) -> &str {
        "selected_trace_key"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ids: ArrayRef = match &args.args[0] {
            ColumnarValue::Array(array) => array.clone(),
            ColumnarValue::Scalar(scalar) => scalar.to_array_of_size(1)?,
        };
        let rows = ids.len();
        let keys = match ids.data_type() {
            DataType::Utf8 => self.selection.keys_of(ids.as_string::<i32>().iter(), rows),
            DataType::LargeUtf8 => self.selection.keys_of(ids.as_string::<i64>().iter(), rows),
            DataType::Utf8View => self.selection.keys_of(ids.as_string_view().iter(), rows),
            other => return exec_err!("selected_trace_key(trace_id): trace_id must be text, not {other}"),
        };
        Ok(match &args.args[0] {
            ColumnarValue::Scalar(_) => ColumnarValue::Scalar(ScalarValue::try_from_array(&keys, 0)?),
            ColumnarValue::Array(_) => ColumnarValue::Array(Arc::new(keys)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;
    use datafusion::arrow::datatypes::Field;

    fn call(udf: &ScalarUDF, ids: Vec<Option<&str>>) -> Vec<Option<i32>> {
        let rows = ids.len();
        let args = ScalarFunctionArgs {
            args: vec![ColumnarValue::Array(Arc::new(StringArray::from(ids)))],
            arg_fields: vec![Arc::new(Field::new("trace_id", DataType::Utf8, true))],
            number_rows: rows,
            return_field: Arc::new(Field::new("key", DataType::Int32, true)),
            config_options: Default::default(),
        };
        let ColumnarValue::Array(keys) = udf.invoke_with_args(args).unwrap() else {
            panic!("an array in, an array out")
        };
        keys.as_primitive::<datafusion::arrow::datatypes::Int32Type>()
            .iter()
            .collect()
    }

    #[test]
    fn keys_follow_the_current_selection() {
        let selection = SelectedTraces::default();
        let udf = selection.udf();
        selection.set(["a", "b"]);
        let ids = vec![Some("b"), Some("b"), Some("x"), None, Some("a"), Some("b")];
        assert_eq!(
            call(&udf, ids.clone()),
            [Some(1), Some(1), None, None, Some(0), Some(1)]
        );
        selection.set(["x"]);
        assert_eq!(call(&udf, ids), [None, None, Some(0), None, None, None]);
    }
}

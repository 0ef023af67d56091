//! The scalar functions the feature SQL calls where SQL cannot say it
//! cleanly: shape arithmetic over nested lists and a stable name code.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int32Array, ListArray};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF, Volatility, create_udf};
use datafusion::prelude::SessionContext;
use tracecast_schemas::ColType;

use crate::estimate::{Inputs, estimate, stable_code};

/// Registers every function on the session.
pub fn register(ctx: &SessionContext) {
    for udf in [op_flops(), op_bytes(), input_numel(), dtype_bytes(), name_code()] {
        ctx.register_udf(udf);
    }
}

fn dims_type() -> DataType {
    ColType::ListListInt64.to_arrow()
}

fn types_type() -> DataType {
    ColType::ListUtf8.to_arrow()
}

/// One row's shapes: None for a null input entry.
fn shapes_at(dims: &ListArray, row: usize) -> Vec<Option<Vec<i64>>> {
    if dims.is_null(row) {
        return Vec::new();
    }
    let inner = dims.value(row);
    let inner = inner.as_list::<i32>();
    (0..inner.len())
        .map(|i| {
            (!inner.is_null(i)).then(|| {
                let shape = inner.value(i);
                shape
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|d| d.unwrap_or(0))
                    .collect()
            })
        })
        .collect()
}

/// Runs `f` on each row's inputs; rows without dims give null.
fn per_row<T>(
    arrays: &[ArrayRef],
    dims_at: usize,
    types_at: Option<usize>,
    f: impl Fn(usize, &Inputs<'_>) -> Option<T>,
    build: impl FnOnce(Vec<Option<T>>) -> ArrayRef,
) -> Result<ColumnarValue> {
    let dims = arrays[dims_at].as_list::<i32>();
    let types = types_at.map(|i| arrays[i].as_list::<i32>());
    let mut out = Vec::with_capacity(dims.len());
    for row in 0..dims.len() {
        let shapes = shapes_at(dims, row);
        let type_values = types.filter(|t| !t.is_null(row)).map(|t| t.value(row));
        let type_strings = type_values.as_ref().map(|v| v.as_string::<i32>());
        let names: Vec<Option<&str>> = match type_strings {
            Some(s) => s.iter().collect(),
            None => Vec::new(),
        };
        out.push(f(
            row,
            &Inputs {
                shapes: &shapes,
                types: &names,
            },
        ));
    }
    Ok(ColumnarValue::Array(build(out)))
}

fn estimate_udf(name: &str, pick: fn((f64, f64)) -> f64) -> ScalarUDF {
    create_udf(
        name,
        vec![DataType::Utf8, dims_type(), types_type()],
        DataType::Float64,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let names = arrays[0].as_string::<i32>();
            per_row(
                &arrays,
                1,
                Some(2),
                |row, inputs| {
                    (!names.is_null(row))
                        .then(|| estimate(names.value(row), inputs))
                        .flatten()
                        .map(pick)
                },
                |v| Arc::new(Float64Array::from(v)),
            )
        }),
    )
}

/// `op_flops(name, input_dims, input_types)`: estimated FLOPs of an operator.
fn op_flops() -> ScalarUDF {
    estimate_udf("op_flops", |(flops, _)| flops)
}

/// `op_bytes(name, input_dims, input_types)`: estimated bytes read and written.
fn op_bytes() -> ScalarUDF {
    estimate_udf("op_bytes", |(_, bytes)| bytes)
}

/// `input_numel(input_dims, n)`: elements of the n-th (from 0) tensor input.
fn input_numel() -> ScalarUDF {
    create_udf(
        "input_numel",
        vec![dims_type(), DataType::Int64],
        DataType::Float64,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let n = arrays[1].as_primitive::<Int64Type>();
            per_row(
                &arrays,
                0,
                None,
                |row, inputs| inputs.numel_of(n.value(row).max(0) as usize),
                |v| Arc::new(Float64Array::from(v)),
            )
        }),
    )
}

/// `dtype_bytes(input_dims, input_types)`: element size of the first tensor input.
fn dtype_bytes() -> ScalarUDF {
    create_udf(
        "dtype_bytes",
        vec![dims_type(), types_type()],
        DataType::Int32,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            per_row(
                &ColumnarValue::values_to_arrays(args)?,
                0,
                Some(1),
                |_, inputs| inputs.first_dtype_bytes().map(|b| b as i32),
                |v| Arc::new(Int32Array::from(v)),
            )
        }),
    )
}

/// `name_code(name)`: a stable 31-bit code of a name.
fn name_code() -> ScalarUDF {
    create_udf(
        "name_code",
        vec![DataType::Utf8],
        DataType::Int32,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let names = arrays[0].as_string::<i32>();
            let codes: Int32Array = names.iter().map(|n| n.map(stable_code)).collect();
            Ok(ColumnarValue::Array(Arc::new(codes)))
        }),
    )
}

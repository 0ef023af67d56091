//! The scalar functions the feature SQL calls where SQL cannot say it
//! cleanly: shape arithmetic over nested lists and a stable name code.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int32Array, ListArray, StringArray};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarUDF, Volatility, create_udf};
use datafusion::prelude::SessionContext;
use tracecast_schemas::ColType;
use tracecast_schemas::features::stable_code;

use crate::estimate::{Inputs, conv_group_width, estimate, product_alignment};

/// Registers every function on the session.
pub fn register(ctx: &SessionContext) {
    for udf in [
        op_flops(),
        op_bytes(),
        input_numel(),
        dtype_bytes(),
        product_alignment_udf(),
        conv_group_width_udf(),
        name_code(),
    ] {
        ctx.register_udf(udf);
    }
}

fn dims_type() -> DataType {
    ColType::ListListInt64.to_arrow()
}

fn types_type() -> DataType {
    ColType::ListUtf8.to_arrow()
}

/// Each row's input shapes and dtypes, borrowed from the Arrow buffers
/// (no allocation per row: these run once per GPU item).
struct RowInputs<'a> {
    dims: &'a ListArray,
    shapes: &'a ListArray,
    dim_values: &'a [i64],
    types: Option<(&'a ListArray, &'a StringArray)>,
}

impl<'a> RowInputs<'a> {
    fn new(dims: &'a ListArray, types: Option<&'a ListArray>) -> Self {
        let shapes = dims.values().as_list::<i32>();
        let dim_values = shapes.values().as_primitive::<Int64Type>().values();
        let types = types.map(|t| (t, t.values().as_string::<i32>()));
        RowInputs {
            dims,
            shapes,
            dim_values,
            types,
        }
    }

    /// Fills `shapes` (None for a null entry) and `types` for one row.
    fn fill(&self, row: usize, shapes: &mut Vec<Option<&'a [i64]>>, types: &mut Vec<Option<&'a str>>) {
        shapes.clear();
        types.clear();
        if !self.dims.is_null(row) {
            let offsets = self.dims.value_offsets();
            for entry in offsets[row] as usize..offsets[row + 1] as usize {
                shapes.push((!self.shapes.is_null(entry)).then(|| {
                    let bounds = self.shapes.value_offsets();
                    &self.dim_values[bounds[entry] as usize..bounds[entry + 1] as usize]
                }));
            }
        }
        if let Some((lists, strings)) = self.types.filter(|(lists, _)| !lists.is_null(row)) {
            let offsets = lists.value_offsets();
            for entry in offsets[row] as usize..offsets[row + 1] as usize {
                types.push((!strings.is_null(entry)).then(|| strings.value(entry)));
            }
        }
    }
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
    let inputs = RowInputs::new(dims, types_at.map(|i| arrays[i].as_list::<i32>()));
    let (mut shapes, mut types) = (Vec::new(), Vec::new());
    let mut out = Vec::with_capacity(dims.len());
    for row in 0..dims.len() {
        inputs.fill(row, &mut shapes, &mut types);
        out.push(f(
            row,
            &Inputs {
                shapes: &shapes,
                types: &types,
            },
        ));
    }
    Ok(ColumnarValue::Array(build(out)))
}

/// [`per_row`] for a function of an operator's name (argument 0) and its
/// input dims (argument 1); rows without a name give null.
fn per_named_row<T>(
    arrays: &[ArrayRef],
    types_at: Option<usize>,
    f: impl Fn(&str, &Inputs<'_>) -> Option<T>,
    build: impl FnOnce(Vec<Option<T>>) -> ArrayRef,
) -> Result<ColumnarValue> {
    let names = arrays[0].as_string::<i32>();
    per_row(
        arrays,
        1,
        types_at,
        |row, inputs| (!names.is_null(row)).then(|| f(names.value(row), inputs)).flatten(),
        build,
    )
}

fn estimate_udf(name: &str, pick: fn((f64, f64)) -> f64) -> ScalarUDF {
    create_udf(
        name,
        vec![DataType::Utf8, dims_type(), types_type()],
        DataType::Float64,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| {
            per_named_row(
                &ColumnarValue::values_to_arrays(args)?,
                Some(2),
                |name, inputs| estimate(name, inputs).map(pick),
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

/// `product_alignment(name, input_dims)`: the largest power of two (up to
/// 64) dividing every dimension of the matrix product an operator runs;
/// null for other operators.
fn product_alignment_udf() -> ScalarUDF {
    shape_code_udf("product_alignment", product_alignment)
}

/// `conv_group_width(name, input_dims)`: for a grouped convolution, the
/// input channels of each group (1: depthwise); null otherwise.
fn conv_group_width_udf() -> ScalarUDF {
    shape_code_udf("conv_group_width", conv_group_width)
}

/// `name(op_name, input_dims)`: an integer `f` reads from an operator's
/// name and input shapes.
fn shape_code_udf(name: &str, f: fn(&str, &Inputs<'_>) -> Option<i32>) -> ScalarUDF {
    create_udf(
        name,
        vec![DataType::Utf8, dims_type()],
        DataType::Int32,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| {
            per_named_row(&ColumnarValue::values_to_arrays(args)?, None, f, |v| {
                Arc::new(Int32Array::from(v))
            })
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

//! The aggregates that lay one step's items out as its windows:
//! `window_positions(value, seq)`, `window_sum(value, seq)` and
//! `central_sum(value, seq)`.
//!
//! SQL can say the same with one `LEAD(value, offset)` per position and
//! column and sums over those, but DataFusion then computes every LEAD for
//! every item and keeps one row in S: W x columns arrays as long as the
//! step, concatenated and filtered, and a projection of several hundred
//! terms that takes longer to plan than to run. Gathering at the window
//! starts writes each window's values once.

use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, ListArray, PrimitiveArray, StructArray, UInt32Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{concat, take};
use datafusion::arrow::datatypes::{ArrowNativeTypeOp, DataType, Field, FieldRef, Fields, Float64Type, Int64Type};
use datafusion::common::utils::SingleRowListArrayBuilder;
use datafusion::common::{ScalarValue, exec_err, plan_err};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};

use crate::WindowSpec;

/// The three aggregates for one window shape. Each runs over a group (a
/// step) whose `seq` numbers its rows 0..n-1 in issue order and returns the
/// group's ceil(n / S) windows in order, as a list:
/// - `window_positions(value, seq)`: per window, a struct with fields `p00`
///   .. `p{W-1}`, the value of the item at that position (item seq
///   j*S + p - PAD for window j), null past the step's edges;
/// - `window_sum(value, seq)`: per window, the value summed over its W
///   positions in position order, nulls and padding counting as 0;
/// - `central_sum(value, seq)`: the same over the S central positions.
pub fn window_aggregates(spec: WindowSpec) -> [AggregateUDF; 3] {
    [Output::Positions, Output::WindowSum, Output::CentralSum].map(|output| {
        AggregateUDF::from(WindowAggregate {
            spec,
            output,
            signature: Signature::any(2, Volatility::Immutable),
        })
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Output {
    Positions,
    WindowSum,
    CentralSum,
}

impl Output {
    fn function_name(self) -> &'static str {
        match self {
            Output::Positions => "window_positions",
            Output::WindowSum => "window_sum",
            Output::CentralSum => "central_sum",
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct WindowAggregate {
    spec: WindowSpec,
    output: Output,
    signature: Signature,
}

fn window_fields(spec: WindowSpec, value: &DataType) -> Fields {
    (0..spec.window)
        .map(|p| Field::new(format!("p{p:02}"), value.clone(), true))
        .collect()
}

fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(item, true)))
}

impl AggregateUDFImpl for WindowAggregate {
    fn name(&self) -> &str {
        self.output.function_name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if args[1] != DataType::Int64 {
            return plan_err!("{}(value, seq): seq must be a BIGINT, not {}", self.name(), args[1]);
        }
        match self.output {
            Output::Positions => Ok(list_of(DataType::Struct(window_fields(self.spec, &args[0])))),
            _ if matches!(args[0], DataType::Int64 | DataType::Float64) => Ok(list_of(args[0].clone())),
            _ => plan_err!(
                "{}(value, seq): value must be a BIGINT or a DOUBLE, not {} (CAST it)",
                self.name(),
                args[0]
            ),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs<'_>) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(StepAccumulator {
            spec: self.spec,
            output: self.output,
            value_type: args.expr_fields[0].data_type().clone(),
            values: Vec::new(),
            seqs: Vec::new(),
            held_bytes: 0,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs<'_>) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                "values",
                list_of(args.input_fields[0].data_type().clone()),
                true,
            )),
            Arc::new(Field::new("seqs", list_of(DataType::Int64), true)),
        ])
    }
}

/// A step's values and their seq numbers, in arrival order.
#[derive(Debug)]
struct StepAccumulator {
    spec: WindowSpec,
    output: Output,
    value_type: DataType,
    values: Vec<ArrayRef>,
    seqs: Vec<ArrayRef>,
    held_bytes: usize,
}

impl StepAccumulator {
    fn hold(&mut self, values: ArrayRef, seqs: ArrayRef) {
        // The slice's own bytes: DataFusion hands each group a slice of one
        // batch, whose whole buffers the array's memory size would count.
        let bytes = |a: &ArrayRef| a.to_data().get_slice_memory_size().unwrap_or(0);
        self.held_bytes += bytes(&values) + bytes(&seqs);
        self.values.push(values);
        self.seqs.push(seqs);
    }

    fn concatenated(&self) -> Result<(ArrayRef, ArrayRef)> {
        if self.values.is_empty() {
            let empty = |t: &DataType| datafusion::arrow::array::new_empty_array(t);
            return Ok((empty(&self.value_type), empty(&DataType::Int64)));
        }
        let join = |arrays: &[ArrayRef]| concat(&arrays.iter().map(|a| a.as_ref()).collect::<Vec<_>>());
        Ok((join(&self.values)?, join(&self.seqs)?))
    }

    /// The item (row) at each position of each window, window by window.
    fn layout(&self, seqs: &ArrayRef) -> Result<Layout> {
        let name = self.output.function_name();
        if seqs.null_count() > 0 {
            return exec_err!("{name}(value, seq): seq is null");
        }
        let n = seqs.len();
        let mut row_of = vec![u32::MAX; n];
        for (row, &seq) in seqs.as_primitive::<Int64Type>().values().iter().enumerate() {
            match usize::try_from(seq).ok().and_then(|s| row_of.get_mut(s)) {
                Some(slot) if *slot == u32::MAX => *slot = row as u32,
                _ => {
                    return exec_err!(
                        "{name}(value, seq): seq {seq} repeats or lies outside 0..{n}: \
                         seq must number a step's rows from 0 without gaps"
                    );
                }
            }
        }
        Ok(Layout {
            spec: self.spec,
            row_of,
        })
    }
}

/// Where window j's position p falls: item seq j*S + p - PAD, if any.
struct Layout {
    spec: WindowSpec,
    /// row_of[seq]: the accumulated row holding that item.
    row_of: Vec<u32>,
}

impl Layout {
    fn windows(&self) -> usize {
        self.row_of.len().div_ceil(self.spec.stride)
    }

    fn row(&self, window: usize, position: usize) -> Option<u32> {
        let item = (window * self.spec.stride + position).checked_sub(self.spec.pad())?;
        self.row_of.get(item).copied()
    }

    fn positions(&self, values: &ArrayRef, fields: Fields) -> Result<ArrayRef> {
        let columns = (0..self.spec.window)
            .map(|p| {
                let rows: UInt32Array = (0..self.windows()).map(|j| self.row(j, p)).collect();
                Ok(take(values, &rows, None)?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(StructArray::try_new(fields, columns, None)?))
    }

    /// Sums in position order, as `(v0 + v1) + v2 ...` in SQL would.
    fn sums<T: ArrowPrimitiveType>(&self, values: &PrimitiveArray<T>, positions: Range<usize>) -> ArrayRef {
        let sums: PrimitiveArray<T> = (0..self.windows())
            .map(|j| {
                positions.clone().fold(T::Native::ZERO, |sum, p| match self.row(j, p) {
                    Some(row) if values.is_valid(row as usize) => sum.add_wrapping(values.value(row as usize)),
                    _ => sum,
                })
            })
            .map(Some)
            .collect();
        Arc::new(sums)
    }
}

impl Accumulator for StepAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.hold(values[0].clone(), values[1].clone());
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (values, seqs) = (states[0].as_list::<i32>(), states[1].as_list::<i32>());
        for row in (0..values.len()).filter(|&row| values.is_valid(row)) {
            self.hold(values.value(row), seqs.value(row));
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let (values, seqs) = self.concatenated()?;
        Ok(vec![
            SingleRowListArrayBuilder::new(values).build_list_scalar(),
            SingleRowListArrayBuilder::new(seqs).build_list_scalar(),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let (values, seqs) = self.concatenated()?;
        let layout = self.layout(&seqs)?;
        let (window, pad, stride) = (self.spec.window, self.spec.pad(), self.spec.stride);
        let per_window = match (self.output, values.data_type()) {
            (Output::Positions, value) => layout.positions(&values, window_fields(self.spec, value))?,
            (Output::WindowSum, DataType::Int64) => layout.sums(values.as_primitive::<Int64Type>(), 0..window),
            (Output::WindowSum, _) => layout.sums(values.as_primitive::<Float64Type>(), 0..window),
            (Output::CentralSum, DataType::Int64) => layout.sums(values.as_primitive::<Int64Type>(), pad..pad + stride),
            (Output::CentralSum, _) => layout.sums(values.as_primitive::<Float64Type>(), pad..pad + stride),
        };
        let item = Arc::new(Field::new_list_field(per_window.data_type().clone(), true));
        let lengths = OffsetBuffer::from_lengths([per_window.len()]);
        Ok(ScalarValue::List(Arc::new(ListArray::try_new(
            item, lengths, per_window, None,
        )?)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.held_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Float64Array, Int64Array};

    /// The aggregate's list for one step, fed in two batches as an
    /// aggregate would; values are 10 * seq, seqs arrive out of order.
    fn accumulator(output: Output, spec: WindowSpec, value_type: &DataType) -> StepAccumulator {
        StepAccumulator {
            spec,
            output,
            value_type: value_type.clone(),
            values: Vec::new(),
            seqs: Vec::new(),
            held_bytes: 0,
        }
    }

    fn run(output: Output, spec: WindowSpec, seqs: &[i64], values: ArrayRef) -> Result<ArrayRef> {
        let mut acc = accumulator(output, spec, values.data_type());
        let half = seqs.len() / 2;
        for (lo, hi) in [(0, half), (half, seqs.len())] {
            acc.update_batch(&[
                values.slice(lo, hi - lo),
                Arc::new(Int64Array::from(seqs[lo..hi].to_vec())),
            ])?;
        }
        let ScalarValue::List(list) = acc.evaluate()? else {
            panic!("not a list")
        };
        Ok(list.value(0))
    }

    const SEQS: [i64; 5] = [3, 0, 4, 1, 2];

    fn tens() -> ArrayRef {
        Arc::new(Int64Array::from(SEQS.iter().map(|s| s * 10).collect::<Vec<_>>()))
    }

    #[test]
    fn positions_tile_the_step_with_padding_at_its_edges() {
        // W=4 S=2: PAD 1, windows 0..3.
        let got = run(Output::Positions, WindowSpec::new(4, 2).unwrap(), &SEQS, tens()).unwrap();
        let structs = got.as_struct();
        let rows: Vec<Vec<Option<i64>>> = (0..structs.len())
            .map(|j| {
                let column = |c: &ArrayRef| {
                    let c = c.as_primitive::<Int64Type>();
                    c.is_valid(j).then(|| c.value(j))
                };
                structs.columns().iter().map(column).collect()
            })
            .collect();
        assert_eq!(
            rows,
            vec![
                vec![None, Some(0), Some(10), Some(20)],
                vec![Some(10), Some(20), Some(30), Some(40)],
                vec![Some(30), Some(40), None, None],
            ]
        );
    }

    #[test]
    fn sums_count_nulls_and_padding_as_zero() {
        let spec = WindowSpec::new(4, 2).unwrap();
        let window = run(Output::WindowSum, spec, &SEQS, tens()).unwrap();
        assert_eq!(window.as_primitive::<Int64Type>().values(), &[30, 100, 70]);
        let central = run(Output::CentralSum, spec, &SEQS, tens()).unwrap();
        assert_eq!(central.as_primitive::<Int64Type>().values(), &[10, 50, 40]);
        // seq 0 null: counts as 0.
        let floats: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(1.5),
            None,
            Some(4.0),
            Some(2.0),
            Some(3.0),
        ]));
        let window = run(Output::WindowSum, spec, &SEQS, floats).unwrap();
        assert_eq!(window.as_primitive::<Float64Type>().values(), &[5.0, 10.5, 5.5]);
    }

    #[test]
    fn partial_states_merge_into_the_same_windows() {
        // Two partial aggregates (as after a spill) merged into a third.
        let spec = WindowSpec::new(4, 2).unwrap();
        let partial = |seqs: &[i64]| {
            let mut acc = accumulator(Output::WindowSum, spec, &DataType::Int64);
            let values: ArrayRef = Arc::new(Int64Array::from(seqs.iter().map(|s| s * 10).collect::<Vec<_>>()));
            acc.update_batch(&[values, Arc::new(Int64Array::from(seqs.to_vec()))])
                .unwrap();
            acc.state().unwrap()
        };
        let mut merged = accumulator(Output::WindowSum, spec, &DataType::Int64);
        for state in [partial(&[3, 0]), partial(&[4, 1, 2])] {
            let arrays: Vec<ArrayRef> = state.iter().map(|s| s.to_array().unwrap()).collect();
            merged.merge_batch(&arrays).unwrap();
        }
        let ScalarValue::List(list) = merged.evaluate().unwrap() else {
            panic!("not a list")
        };
        assert_eq!(list.value(0).as_primitive::<Int64Type>().values(), &[30, 100, 70]);
    }

    #[test]
    fn seq_must_number_the_rows_without_gaps() {
        let spec = WindowSpec::new(4, 2).unwrap();
        for seqs in [[0, 1, 1], [0, 1, 5], [-1, 0, 1]] {
            let values: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3]));
            let err = run(Output::WindowSum, spec, &seqs, values).unwrap_err().to_string();
            assert!(err.contains("without gaps"), "{err}");
        }
    }
}

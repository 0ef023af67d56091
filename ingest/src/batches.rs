//! A linked [`Trace`] -> one Arrow `RecordBatch` per lake table, columns in
//! the order `tracecast_schemas::lake` defines them.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, Int64Builder, ListBuilder, StringArray, StringBuilder,
};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use tracecast_schemas::TableDef;
use tracecast_schemas::lake;

use crate::comm;
use crate::model::*;

/// Who a trace is: everything the lake records that is not in the file.
#[derive(Debug, Clone)]
pub struct Identity {
    pub trace_id: String,
    pub content_hash: String,
    pub source: String,
    pub archive_member: Option<String>,
    pub job_id: String,
    pub ingest_run: String,
    pub ingested_at_ns: i64,
}

/// The batches of one trace, in `lake::TABLES` order (log excluded).
pub struct TraceBatches {
    pub tables: Vec<(&'static TableDef, RecordBatch)>,
}

fn strs<'a>(values: impl IntoIterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(StringArray::from_iter(values))
}
fn i64s(values: impl IntoIterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(Int64Array::from_iter(values))
}
fn f64s(values: impl IntoIterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(Float64Array::from_iter(values))
}
fn bools(values: impl IntoIterator<Item = Option<bool>>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(values))
}
fn idx(i: Option<usize>) -> Option<i64> {
    i.map(|i| i as i64)
}
fn constant(value: &str, n: usize) -> ArrayRef {
    strs(std::iter::repeat_n(Some(value), n))
}

fn shape_lists<'a>(values: impl IntoIterator<Item = Option<&'a Vec<Option<Vec<i64>>>>>) -> ArrayRef {
    let mut builder = ListBuilder::new(ListBuilder::new(Int64Builder::new()));
    for shapes in values {
        match shapes {
            Some(shapes) => {
                for shape in shapes {
                    match shape {
                        Some(dims) => {
                            builder.values().values().append_slice(dims);
                            builder.values().append(true);
                        }
                        None => builder.values().append(false),
                    }
                }
                builder.append(true);
            }
            None => builder.append(false),
        }
    }
    Arc::new(builder.finish())
}

fn str_lists<'a>(values: impl IntoIterator<Item = Option<&'a Vec<String>>>) -> ArrayRef {
    let mut builder = ListBuilder::new(StringBuilder::new());
    for list in values {
        match list {
            Some(list) => {
                for s in list {
                    builder.values().append_value(s);
                }
                builder.append(true);
            }
            None => builder.append(false),
        }
    }
    Arc::new(builder.finish())
}

fn batch(def: &'static TableDef, columns: Vec<ArrayRef>) -> Result<(&'static TableDef, RecordBatch), ArrowError> {
    Ok((def, RecordBatch::try_new(def.schema(), columns)?))
}

pub fn trace_batches(t: &Trace<'_>, id: &Identity) -> Result<TraceBatches, ArrowError> {
    let tid = id.trace_id.as_str();
    let mut tables = Vec::with_capacity(9);

    let d = &t.devices;
    tables.push(batch(
        &lake::DEVICES,
        vec![
            constant(tid, d.len()),
            i64s(d.iter().map(|d| Some(d.id))),
            strs(d.iter().map(|d| Some(d.name.as_str()))),
            strs(d.iter().map(|d| Some(d.vendor()))),
            i64s(d.iter().map(|d| d.compute_major)),
            i64s(d.iter().map(|d| d.compute_minor)),
            i64s(d.iter().map(|d| d.sm_count)),
            i64s(d.iter().map(|d| d.total_memory)),
            i64s(d.iter().map(|d| d.max_threads_per_sm)),
            i64s(d.iter().map(|d| d.regs_per_sm)),
            i64s(d.iter().map(|d| d.shared_memory_per_sm)),
            i64s(d.iter().map(|d| d.warp_size)),
        ],
    )?);

    let s = &t.steps;
    tables.push(batch(
        &lake::STEPS,
        vec![
            constant(tid, s.len()),
            i64s((0..s.len() as i64).map(Some)),
            strs(s.iter().map(|s| Some(s.name.as_ref()))),
            i64s(s.iter().map(|s| s.number)),
            strs(s.iter().map(|s| Some(s.source.as_str()))),
            i64s(s.iter().map(|s| Some(s.start_ns))),
            i64s(s.iter().map(|s| Some(s.end_ns))),
            i64s(s.iter().map(|s| Some(s.end_ns - s.start_ns))),
            i64s(s.iter().map(|s| Some(s.kernel_count))),
            i64s(s.iter().map(|s| Some(s.kernel_time_ns))),
            i64s(s.iter().map(|s| Some(s.gpu_busy_ns))),
            i64s(s.iter().map(|s| s.gpu_start_ns)),
            i64s(s.iter().map(|s| s.gpu_end_ns)),
        ],
    )?);

    let o = &t.ops;
    tables.push(batch(
        &lake::OPS,
        vec![
            constant(tid, o.len()),
            i64s((0..o.len() as i64).map(Some)),
            strs(o.iter().map(|o| Some(o.name.as_ref()))),
            strs(o.iter().map(|o| Some(o.category.as_str()))),
            i64s(o.iter().map(|o| o.pid)),
            i64s(o.iter().map(|o| o.tid)),
            i64s(o.iter().map(|o| Some(o.start_ns))),
            i64s(o.iter().map(|o| Some(o.dur_ns))),
            i64s(o.iter().map(|o| o.external_id)),
            i64s(o.iter().map(|o| o.record_function_id)),
            i64s(o.iter().map(|o| o.sequence_number)),
            i64s(o.iter().map(|o| o.fwd_thread_id)),
            i64s(o.iter().map(|o| idx(o.parent))),
            Arc::new(Int32Array::from_iter_values(o.iter().map(|o| o.depth))),
            i64s(o.iter().map(|o| idx(o.step))),
            shape_lists(o.iter().map(|o| o.input_dims.as_ref())),
            str_lists(o.iter().map(|o| o.input_types.as_ref())),
        ],
    )?);

    let l = &t.launches;
    tables.push(batch(
        &lake::LAUNCHES,
        vec![
            constant(tid, l.len()),
            i64s((0..l.len() as i64).map(Some)),
            strs(l.iter().map(|l| Some(l.name.as_ref()))),
            strs(l.iter().map(|l| Some(l.category))),
            i64s(l.iter().map(|l| l.pid)),
            i64s(l.iter().map(|l| l.tid)),
            i64s(l.iter().map(|l| Some(l.start_ns))),
            i64s(l.iter().map(|l| Some(l.dur_ns))),
            i64s(l.iter().map(|l| l.correlation)),
            i64s(l.iter().map(|l| l.external_id)),
            i64s(l.iter().map(|l| idx(l.op))),
            strs(l.iter().map(|l| l.op_link.map(OpLink::as_str))),
            i64s(l.iter().map(|l| idx(l.step))),
        ],
    )?);

    let k = &t.kernels;
    tables.push(batch(
        &lake::KERNELS,
        vec![
            constant(tid, k.len()),
            i64s((0..k.len() as i64).map(Some)),
            strs(k.iter().map(|k| Some(k.name.as_ref()))),
            i64s(k.iter().map(|k| k.device)),
            i64s(k.iter().map(|k| k.stream)),
            i64s(k.iter().map(|k| Some(k.start_ns))),
            i64s(k.iter().map(|k| Some(k.dur_ns))),
            i64s(k.iter().map(|k| k.correlation)),
            i64s(k.iter().map(|k| k.external_id)),
            i64s(k.iter().map(|k| idx(k.launch))),
            bools(k.iter().map(|k| Some(k.launch.is_some()))),
            i64s(k.iter().map(|k| idx(k.op))),
            i64s(k.iter().map(|k| idx(k.step))),
            i64s(k.iter().map(|k| k.grid[0])),
            i64s(k.iter().map(|k| k.grid[1])),
            i64s(k.iter().map(|k| k.grid[2])),
            i64s(k.iter().map(|k| k.block[0])),
            i64s(k.iter().map(|k| k.block[1])),
            i64s(k.iter().map(|k| k.block[2])),
            i64s(k.iter().map(|k| k.registers_per_thread)),
            i64s(k.iter().map(|k| k.shared_memory)),
            f64s(k.iter().map(|k| k.blocks_per_sm)),
            f64s(k.iter().map(|k| k.warps_per_sm)),
            f64s(k.iter().map(|k| k.occupancy_pct)),
            strs(k.iter().map(|k| k.kind.as_deref())),
            i64s(k.iter().map(|k| k.graph_id)),
            bools(k.iter().map(|k| Some(k.comm.is_some()))),
            strs(k.iter().map(|k| k.comm.as_ref().map(|c| c.collective))),
        ],
    )?);

    let m = &t.memcpys;
    tables.push(batch(
        &lake::MEMCPY,
        vec![
            constant(tid, m.len()),
            strs(m.iter().map(|m| Some(m.name.as_ref()))),
            strs(m.iter().map(|m| Some(if m.is_memset { "memset" } else { "memcpy" }))),
            strs(m.iter().map(|m| m.direction())),
            i64s(m.iter().map(|m| m.device)),
            i64s(m.iter().map(|m| m.stream)),
            i64s(m.iter().map(|m| Some(m.start_ns))),
            i64s(m.iter().map(|m| Some(m.dur_ns))),
            i64s(m.iter().map(|m| m.bytes)),
            i64s(m.iter().map(|m| m.correlation)),
            i64s(m.iter().map(|m| idx(m.launch))),
            i64s(m.iter().map(|m| idx(m.op))),
            i64s(m.iter().map(|m| idx(m.step))),
        ],
    )?);

    let comms: Vec<(usize, &Kernel<'_>, &CommInfo<'_>)> = k
        .iter()
        .enumerate()
        .filter_map(|(i, k)| Some((i, k, k.comm.as_ref()?)))
        .collect();
    tables.push(batch(
        &lake::COMMS,
        vec![
            constant(tid, comms.len()),
            i64s(comms.iter().map(|(i, _, _)| Some(*i as i64))),
            strs(comms.iter().map(|(_, _, c)| Some(c.collective))),
            strs(
                comms
                    .iter()
                    .map(|(_, _, c)| Some(if c.by_metadata { "metadata" } else { "name" })),
            ),
            i64s(comms.iter().map(|(_, _, c)| c.in_msg_nelems)),
            i64s(comms.iter().map(|(_, _, c)| c.out_msg_nelems)),
            strs(comms.iter().map(|(_, _, c)| c.dtype.as_deref())),
            i64s(comms.iter().map(|(_, _, c)| comm::message_bytes(c))),
            i64s(comms.iter().map(|(_, _, c)| c.group_size)),
            strs(comms.iter().map(|(_, _, c)| c.process_group_name.as_deref())),
            strs(comms.iter().map(|(_, _, c)| c.process_group_ranks.as_deref())),
            i64s(comms.iter().map(|(_, k, _)| Some(k.start_ns))),
            i64s(comms.iter().map(|(_, k, _)| Some(k.dur_ns))),
            i64s(comms.iter().map(|(_, k, _)| idx(k.step))),
        ],
    )?);

    let e = &t.et_nodes;
    tables.push(batch(
        &lake::ET_NODES,
        vec![
            constant(tid, e.len()),
            i64s(e.iter().map(|n| Some(n.id))),
            strs(e.iter().map(|n| Some(n.name.as_ref()))),
            i64s(e.iter().map(|n| n.parent)),
            i64s(e.iter().map(|n| n.rf_id)),
            i64s(e.iter().map(|n| n.fw_parent)),
            i64s(e.iter().map(|n| n.seq_id)),
            i64s(e.iter().map(|n| n.scope)),
            i64s(e.iter().map(|n| n.tid)),
            strs(e.iter().map(|n| n.op_schema.as_deref())),
            shape_lists(e.iter().map(|n| n.input_shapes.as_ref())),
            str_lists(e.iter().map(|n| n.input_types.as_ref())),
            shape_lists(e.iter().map(|n| n.output_shapes.as_ref())),
            str_lists(e.iter().map(|n| n.output_types.as_ref())),
            bools(e.iter().map(|n| Some(n.is_communication))),
            strs(e.iter().map(|n| n.collective_name.as_deref())),
        ],
    )?);

    let meta = &t.meta;
    let unknown = vec![meta.unknown_keys.clone()];
    tables.push(batch(
        &lake::TRACES,
        vec![
            strs([Some(tid)]),
            strs([Some(id.content_hash.as_str())]),
            strs([Some(id.source.as_str())]),
            strs([id.archive_member.as_deref()]),
            strs([Some(t.format.as_str())]),
            strs([Some(meta.era.as_str())]),
            strs([meta.schema_version.as_deref()]),
            strs([meta.gpu_name.as_deref()]),
            i64s([Some(meta.gpu_count)]),
            i64s([meta.rank]),
            i64s([meta.world_size]),
            strs([meta.backend.as_deref()]),
            strs([Some(id.job_id.as_str())]),
            i64s([meta.pid]),
            i64s([meta.base_time_ns]),
            i64s([meta.start_ns]),
            i64s([meta.end_ns]),
            i64s([Some(meta.event_count)]),
            i64s([Some(s.len() as i64)]),
            i64s([Some(k.len() as i64)]),
            str_lists(unknown.iter().map(Some)),
            strs([Some(id.ingest_run.as_str())]),
            i64s([Some(id.ingested_at_ns)]),
            strs([Some(env!("CARGO_PKG_VERSION"))]),
        ],
    )?);

    Ok(TraceBatches { tables })
}

/// One `_ingest_log` row.
#[derive(Debug, Clone)]
pub struct LogRow {
    pub ingest_run: String,
    pub at_ns: i64,
    pub source: String,
    pub archive_member: Option<String>,
    pub content_hash: Option<String>,
    pub size_bytes: i64,
    pub outcome: &'static str,
    pub reason: Option<String>,
    pub trace_id: Option<String>,
    pub format: Option<&'static str>,
}

pub fn log_batch(rows: &[LogRow]) -> Result<RecordBatch, ArrowError> {
    Ok(batch(
        &lake::INGEST_LOG,
        vec![
            strs(rows.iter().map(|r| Some(r.ingest_run.as_str()))),
            i64s(rows.iter().map(|r| Some(r.at_ns))),
            strs(rows.iter().map(|r| Some(r.source.as_str()))),
            strs(rows.iter().map(|r| r.archive_member.as_deref())),
            strs(rows.iter().map(|r| r.content_hash.as_deref())),
            i64s(rows.iter().map(|r| Some(r.size_bytes))),
            strs(rows.iter().map(|r| Some(r.outcome))),
            strs(rows.iter().map(|r| r.reason.as_deref())),
            strs(rows.iter().map(|r| r.trace_id.as_deref())),
            strs(rows.iter().map(|r| r.format)),
        ],
    )?
    .1)
}

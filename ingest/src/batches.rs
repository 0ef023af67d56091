//! A linked [`Trace`] -> one Arrow `RecordBatch` per lake table, columns given
//! by their names in `tracecast_schemas::lake`.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, Int64Builder, ListBuilder, StringArray, StringBuilder,
};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
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

/// A batch of `def` from columns given by name (see `TableDef::batch`).
fn batch(
    def: &'static TableDef,
    columns: Vec<(&str, ArrayRef)>,
) -> Result<(&'static TableDef, RecordBatch), ArrowError> {
    Ok((def, def.batch(columns).map_err(ArrowError::SchemaError)?))
}

/// One lake table's batch for a trace.
type TableBatch = Result<(&'static TableDef, RecordBatch), ArrowError>;

/// The table builders, in `lake::TABLES` order (log excluded).
const TABLE_BATCHES: [fn(&Trace, &Identity) -> TableBatch; 9] = [
    devices_batch,
    steps_batch,
    ops_batch,
    launches_batch,
    kernels_batch,
    memcpys_batch,
    comms_batch,
    et_nodes_batch,
    traces_batch,
];

/// Every table's batch, built at once: the operators', launches' and
/// kernels' take most of the time, each on its own.
pub fn trace_batches(t: &Trace, id: &Identity) -> Result<TraceBatches, ArrowError> {
    let tables = TABLE_BATCHES
        .par_iter()
        .map(|build| build(t, id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TraceBatches { tables })
}

fn devices_batch(t: &Trace, id: &Identity) -> TableBatch {
    let tid = id.trace_id.as_str();
    let d = &t.devices;
    batch(
        &lake::DEVICES,
        vec![
            ("trace_id", constant(tid, d.len())),
            ("device_id", i64s(d.iter().map(|d| Some(d.id)))),
            ("name", strs(d.iter().map(|d| Some(d.name.as_str())))),
            ("vendor", strs(d.iter().map(|d| Some(d.vendor())))),
            ("compute_major", i64s(d.iter().map(|d| d.compute_major))),
            ("compute_minor", i64s(d.iter().map(|d| d.compute_minor))),
            ("sm_count", i64s(d.iter().map(|d| d.sm_count))),
            ("total_memory_bytes", i64s(d.iter().map(|d| d.total_memory))),
            ("max_threads_per_sm", i64s(d.iter().map(|d| d.max_threads_per_sm))),
            ("regs_per_sm", i64s(d.iter().map(|d| d.regs_per_sm))),
            (
                "shared_memory_per_sm_bytes",
                i64s(d.iter().map(|d| d.shared_memory_per_sm)),
            ),
            ("warp_size", i64s(d.iter().map(|d| d.warp_size))),
        ],
    )
}

fn steps_batch(t: &Trace, id: &Identity) -> TableBatch {
    let tid = id.trace_id.as_str();
    let s = &t.steps;
    batch(
        &lake::STEPS,
        vec![
            ("trace_id", constant(tid, s.len())),
            ("step_id", i64s((0..s.len() as i64).map(Some))),
            ("name", strs(s.iter().map(|s| Some(s.name.as_ref())))),
            ("step_number", i64s(s.iter().map(|s| s.number))),
            ("source", strs(s.iter().map(|s| Some(s.source.as_str())))),
            ("start_ns", i64s(s.iter().map(|s| Some(s.start_ns)))),
            ("end_ns", i64s(s.iter().map(|s| Some(s.end_ns)))),
            ("dur_ns", i64s(s.iter().map(|s| Some(s.end_ns - s.start_ns)))),
            ("kernel_count", i64s(s.iter().map(|s| Some(s.kernel_count)))),
            ("kernel_time_ns", i64s(s.iter().map(|s| Some(s.kernel_time_ns)))),
            ("gpu_busy_ns", i64s(s.iter().map(|s| Some(s.gpu_busy_ns)))),
            ("gpu_start_ns", i64s(s.iter().map(|s| s.gpu_start_ns))),
            ("gpu_end_ns", i64s(s.iter().map(|s| s.gpu_end_ns))),
        ],
    )
}

fn ops_batch(t: &Trace, id: &Identity) -> TableBatch {
    let tid = id.trace_id.as_str();
    let o = &t.ops;
    batch(
        &lake::OPS,
        vec![
            ("trace_id", constant(tid, o.len())),
            ("op_id", i64s((0..o.len() as i64).map(Some))),
            ("name", strs(o.iter().map(|o| Some(o.name.as_ref())))),
            ("category", strs(o.iter().map(|o| Some(o.category.as_str())))),
            ("pid", i64s(o.iter().map(|o| o.pid))),
            ("tid", i64s(o.iter().map(|o| o.tid))),
            ("start_ns", i64s(o.iter().map(|o| Some(o.start_ns)))),
            ("dur_ns", i64s(o.iter().map(|o| Some(o.dur_ns)))),
            ("external_id", i64s(o.iter().map(|o| o.external_id))),
            ("record_function_id", i64s(o.iter().map(|o| o.record_function_id))),
            ("sequence_number", i64s(o.iter().map(|o| o.sequence_number))),
            ("fwd_thread_id", i64s(o.iter().map(|o| o.fwd_thread_id))),
            ("parent_op_id", i64s(o.iter().map(|o| idx(o.parent)))),
            (
                "depth",
                Arc::new(Int32Array::from_iter_values(o.iter().map(|o| o.depth))),
            ),
            ("step_id", i64s(o.iter().map(|o| idx(o.step)))),
            ("input_dims", shape_lists(o.iter().map(|o| o.input_dims.as_ref()))),
            ("input_types", str_lists(o.iter().map(|o| o.input_types.as_ref()))),
        ],
    )
}

fn launches_batch(t: &Trace, id: &Identity) -> TableBatch {
    let tid = id.trace_id.as_str();
    let l = &t.launches;
    batch(
        &lake::LAUNCHES,
        vec![
            ("trace_id", constant(tid, l.len())),
            ("launch_id", i64s((0..l.len() as i64).map(Some))),
            ("name", strs(l.iter().map(|l| Some(l.name.as_ref())))),
            ("category", strs(l.iter().map(|l| Some(l.category)))),
            ("pid", i64s(l.iter().map(|l| l.pid))),
            ("tid", i64s(l.iter().map(|l| l.tid))),
            ("start_ns", i64s(l.iter().map(|l| Some(l.start_ns)))),
            ("dur_ns", i64s(l.iter().map(|l| Some(l.dur_ns)))),
            ("correlation", i64s(l.iter().map(|l| l.correlation))),
            ("external_id", i64s(l.iter().map(|l| l.external_id))),
            ("op_id", i64s(l.iter().map(|l| idx(l.op)))),
            ("op_link", strs(l.iter().map(|l| l.op_link.map(OpLink::as_str)))),
            ("step_id", i64s(l.iter().map(|l| idx(l.step)))),
        ],
    )
}

fn kernels_batch(t: &Trace, id: &Identity) -> TableBatch {
    let tid = id.trace_id.as_str();
    let k = &t.kernels;
    batch(
        &lake::KERNELS,
        vec![
            ("trace_id", constant(tid, k.len())),
            ("kernel_id", i64s((0..k.len() as i64).map(Some))),
            ("name", strs(k.iter().map(|k| Some(k.name.as_ref())))),
            ("device", i64s(k.iter().map(|k| k.device))),
            ("stream", i64s(k.iter().map(|k| k.stream))),
            ("start_ns", i64s(k.iter().map(|k| Some(k.start_ns)))),
            ("dur_ns", i64s(k.iter().map(|k| Some(k.dur_ns)))),
            ("correlation", i64s(k.iter().map(|k| k.correlation))),
            ("external_id", i64s(k.iter().map(|k| k.external_id))),
            ("launch_id", i64s(k.iter().map(|k| idx(k.launch)))),
            ("has_launch", bools(k.iter().map(|k| Some(k.launch.is_some())))),
            ("op_id", i64s(k.iter().map(|k| idx(k.op)))),
            ("step_id", i64s(k.iter().map(|k| idx(k.step)))),
            ("grid_x", i64s(k.iter().map(|k| k.grid[0]))),
            ("grid_y", i64s(k.iter().map(|k| k.grid[1]))),
            ("grid_z", i64s(k.iter().map(|k| k.grid[2]))),
            ("block_x", i64s(k.iter().map(|k| k.block[0]))),
            ("block_y", i64s(k.iter().map(|k| k.block[1]))),
            ("block_z", i64s(k.iter().map(|k| k.block[2]))),
            ("registers_per_thread", i64s(k.iter().map(|k| k.registers_per_thread))),
            ("shared_memory_bytes", i64s(k.iter().map(|k| k.shared_memory))),
            ("blocks_per_sm", f64s(k.iter().map(|k| k.blocks_per_sm))),
            ("warps_per_sm", f64s(k.iter().map(|k| k.warps_per_sm))),
            ("occupancy_pct", f64s(k.iter().map(|k| k.occupancy_pct))),
            ("kind", strs(k.iter().map(|k| k.kind.as_deref()))),
            ("graph_id", i64s(k.iter().map(|k| k.graph_id))),
            ("is_communication", bools(k.iter().map(|k| Some(k.comm.is_some())))),
            (
                "collective",
                strs(k.iter().map(|k| k.comm.as_ref().map(|c| c.collective))),
            ),
        ],
    )
}

fn memcpys_batch(t: &Trace, id: &Identity) -> TableBatch {
    let tid = id.trace_id.as_str();
    let m = &t.memcpys;
    batch(
        &lake::MEMCPY,
        vec![
            ("trace_id", constant(tid, m.len())),
            ("name", strs(m.iter().map(|m| Some(m.name.as_ref())))),
            (
                "kind",
                strs(m.iter().map(|m| Some(if m.is_memset { "memset" } else { "memcpy" }))),
            ),
            ("direction", strs(m.iter().map(|m| m.direction()))),
            ("device", i64s(m.iter().map(|m| m.device))),
            ("stream", i64s(m.iter().map(|m| m.stream))),
            ("start_ns", i64s(m.iter().map(|m| Some(m.start_ns)))),
            ("dur_ns", i64s(m.iter().map(|m| Some(m.dur_ns)))),
            ("bytes", i64s(m.iter().map(|m| m.bytes))),
            ("correlation", i64s(m.iter().map(|m| m.correlation))),
            ("launch_id", i64s(m.iter().map(|m| idx(m.launch)))),
            ("op_id", i64s(m.iter().map(|m| idx(m.op)))),
            ("step_id", i64s(m.iter().map(|m| idx(m.step)))),
        ],
    )
}

fn comms_batch(t: &Trace, id: &Identity) -> TableBatch {
    let tid = id.trace_id.as_str();
    let k = &t.kernels;
    let comms: Vec<(usize, &Kernel, &CommInfo)> = k
        .iter()
        .enumerate()
        .filter_map(|(i, k)| Some((i, k, k.comm.as_deref()?)))
        .collect();
    batch(
        &lake::COMMS,
        vec![
            ("trace_id", constant(tid, comms.len())),
            ("kernel_id", i64s(comms.iter().map(|(i, _, _)| Some(*i as i64)))),
            ("collective", strs(comms.iter().map(|(_, _, c)| Some(c.collective)))),
            (
                "classified_by",
                strs(
                    comms
                        .iter()
                        .map(|(_, _, c)| Some(if c.by_metadata { "metadata" } else { "name" })),
                ),
            ),
            ("in_msg_nelems", i64s(comms.iter().map(|(_, _, c)| c.in_msg_nelems))),
            ("out_msg_nelems", i64s(comms.iter().map(|(_, _, c)| c.out_msg_nelems))),
            ("dtype", strs(comms.iter().map(|(_, _, c)| c.dtype.as_deref()))),
            (
                "message_bytes",
                i64s(comms.iter().map(|(_, _, c)| comm::message_bytes(c))),
            ),
            ("group_size", i64s(comms.iter().map(|(_, _, c)| c.group_size))),
            (
                "process_group_name",
                strs(comms.iter().map(|(_, _, c)| c.process_group_name.as_deref())),
            ),
            (
                "process_group_ranks",
                strs(comms.iter().map(|(_, _, c)| c.process_group_ranks.as_deref())),
            ),
            ("start_ns", i64s(comms.iter().map(|(_, k, _)| Some(k.start_ns)))),
            ("dur_ns", i64s(comms.iter().map(|(_, k, _)| Some(k.dur_ns)))),
            ("step_id", i64s(comms.iter().map(|(_, k, _)| idx(k.step)))),
        ],
    )
}

fn et_nodes_batch(t: &Trace, id: &Identity) -> TableBatch {
    let tid = id.trace_id.as_str();
    let e = &t.et_nodes;
    batch(
        &lake::ET_NODES,
        vec![
            ("trace_id", constant(tid, e.len())),
            ("node_id", i64s(e.iter().map(|n| Some(n.id)))),
            ("name", strs(e.iter().map(|n| Some(n.name.as_ref())))),
            ("parent_id", i64s(e.iter().map(|n| n.parent))),
            ("rf_id", i64s(e.iter().map(|n| n.rf_id))),
            ("fw_parent", i64s(e.iter().map(|n| n.fw_parent))),
            ("seq_id", i64s(e.iter().map(|n| n.seq_id))),
            ("scope", i64s(e.iter().map(|n| n.scope))),
            ("tid", i64s(e.iter().map(|n| n.tid))),
            ("op_schema", strs(e.iter().map(|n| n.op_schema.as_deref()))),
            ("input_shapes", shape_lists(e.iter().map(|n| n.input_shapes.as_ref()))),
            ("input_types", str_lists(e.iter().map(|n| n.input_types.as_ref()))),
            ("output_shapes", shape_lists(e.iter().map(|n| n.output_shapes.as_ref()))),
            ("output_types", str_lists(e.iter().map(|n| n.output_types.as_ref()))),
            ("is_communication", bools(e.iter().map(|n| Some(n.is_communication)))),
            ("collective_name", strs(e.iter().map(|n| n.collective_name.as_deref()))),
        ],
    )
}

fn traces_batch(t: &Trace, id: &Identity) -> TableBatch {
    let tid = id.trace_id.as_str();
    let (s, k) = (&t.steps, &t.kernels);
    let meta = &t.meta;
    let unknown = [meta.unknown_keys.clone()];
    batch(
        &lake::TRACES,
        vec![
            ("trace_id", strs([Some(tid)])),
            ("content_hash", strs([Some(id.content_hash.as_str())])),
            ("source", strs([Some(id.source.as_str())])),
            ("archive_member", strs([id.archive_member.as_deref()])),
            ("format", strs([Some(t.format.as_str())])),
            ("era", strs([Some(meta.era.as_str())])),
            ("schema_version", strs([meta.schema_version.as_deref()])),
            ("gpu_name", strs([meta.gpu_name.as_deref()])),
            ("gpu_count", i64s([Some(meta.gpu_count)])),
            ("rank", i64s([meta.rank])),
            ("world_size", i64s([meta.world_size])),
            ("backend", strs([meta.backend.as_deref()])),
            ("job_id", strs([Some(id.job_id.as_str())])),
            ("pid", i64s([meta.pid])),
            ("base_time_ns", i64s([meta.base_time_ns])),
            ("start_ns", i64s([meta.start_ns])),
            ("end_ns", i64s([meta.end_ns])),
            ("event_count", i64s([Some(meta.event_count)])),
            ("step_count", i64s([Some(s.len() as i64)])),
            ("kernel_count", i64s([Some(k.len() as i64)])),
            ("dropped_not_object", i64s([Some(meta.dropped.not_an_object)])),
            ("dropped_bad_timestamp", i64s([Some(meta.dropped.bad_timestamp)])),
            ("dropped_bad_duration", i64s([Some(meta.dropped.bad_duration)])),
            ("unknown_top_level_keys", str_lists(unknown.iter().map(Some))),
            ("ingest_run", strs([Some(id.ingest_run.as_str())])),
            ("ingested_at_ns", i64s([Some(id.ingested_at_ns)])),
            ("tracecast_version", strs([Some(env!("CARGO_PKG_VERSION"))])),
        ],
    )
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
            ("ingest_run", strs(rows.iter().map(|r| Some(r.ingest_run.as_str())))),
            ("at_ns", i64s(rows.iter().map(|r| Some(r.at_ns)))),
            ("source", strs(rows.iter().map(|r| Some(r.source.as_str())))),
            ("archive_member", strs(rows.iter().map(|r| r.archive_member.as_deref()))),
            ("content_hash", strs(rows.iter().map(|r| r.content_hash.as_deref()))),
            ("size_bytes", i64s(rows.iter().map(|r| Some(r.size_bytes)))),
            ("outcome", strs(rows.iter().map(|r| Some(r.outcome)))),
            ("reason", strs(rows.iter().map(|r| r.reason.as_deref()))),
            ("trace_id", strs(rows.iter().map(|r| r.trace_id.as_deref()))),
            ("format", strs(rows.iter().map(|r| r.format))),
        ],
    )?
    .1)
}

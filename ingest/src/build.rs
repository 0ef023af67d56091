//! Raw records -> a linked [`Trace`]: times to absolute nanoseconds, events
//! sorted, steps found, and every kernel tied to its launch, operator and step.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::comm;
use crate::json::lenient::Scalar;
use crate::json::{time::micros_text_to_ns, RawDevice, RawEtNode, RawFile};
use crate::model::*;

/// Builds the linked trace from one parsed file.
pub fn build(raw: RawFile<'_>) -> Trace<'_> {
    if raw.et_nodes.is_some() {
        build_et(raw)
    } else {
        build_kineto(raw)
    }
}

enum Kind {
    Op(OpCategory),
    Launch(&'static str),
    Kernel,
    Memcpy { memset: bool },
}

fn kind_of(cat: &str) -> Option<Kind> {
    Some(match cat {
        "cpu_op" | "Operator" => Kind::Op(OpCategory::CpuOp),
        "user_annotation" => Kind::Op(OpCategory::UserAnnotation),
        "cuda_runtime" | "Runtime" => Kind::Launch("cuda_runtime"),
        "cuda_driver" | "Driver" => Kind::Launch("cuda_driver"),
        "kernel" | "Kernel" => Kind::Kernel,
        "gpu_memcpy" | "Memcpy" => Kind::Memcpy { memset: false },
        "gpu_memset" | "Memset" => Kind::Memcpy { memset: true },
        _ => return None,
    })
}

fn devices_of(raw: &[RawDevice]) -> Vec<Device> {
    raw.iter()
        .enumerate()
        .map(|(i, d)| Device {
            id: d.id.unwrap_or(i as i64),
            name: d.name.clone().unwrap_or_default(),
            compute_major: d.compute_major,
            compute_minor: d.compute_minor,
            sm_count: d.sm_count,
            total_memory: d.total_memory,
            max_threads_per_sm: d.max_threads_per_sm,
            regs_per_sm: d.regs_per_sm,
            shared_memory_per_sm: d.shared_memory_per_sm,
            warp_size: d.warp_size,
        })
        .collect()
}

fn build_kineto(raw: RawFile<'_>) -> Trace<'_> {
    let base = raw.base_time_ns.unwrap_or(0);
    let events = raw.events.unwrap_or_default();
    let mut meta = TraceMeta {
        schema_version: raw.schema_version,
        base_time_ns: raw.base_time_ns,
        event_count: events.len() as i64,
        unknown_keys: raw.unknown_keys,
        gpu_count: raw.devices.len() as i64,
        ..TraceMeta::default()
    };
    if let Some(d) = &raw.distributed {
        meta.rank = d.rank;
        meta.world_size = d.world_size;
        meta.backend = d.backend.clone();
    }
    let devices = devices_of(&raw.devices);

    let mut legacy_categories = false;
    let mut ops = Vec::new();
    let mut launches = Vec::new();
    let mut kernels = Vec::new();
    let mut memcpys = Vec::new();
    let (mut first_ns, mut last_ns) = (i64::MAX, i64::MIN);

    for mut event in events {
        if event.ph.as_deref() != Some("X") {
            continue;
        }
        let Some(kind) = event.cat.as_deref().and_then(kind_of) else { continue };
        let Some(ts) = event.ts.and_then(|t| micros_text_to_ns(t.get())) else { continue };
        let start_ns = base + ts;
        let dur_ns = event.dur.and_then(|d| micros_text_to_ns(d.get())).unwrap_or(0).max(0);
        first_ns = first_ns.min(start_ns);
        last_ns = last_ns.max(start_ns + dur_ns);
        legacy_categories |= matches!(event.cat.as_deref(), Some("Operator" | "Kernel" | "Runtime"));
        let name = event.name.take().unwrap_or(Cow::Borrowed(""));
        match kind {
            Kind::Op(category) => {
                let args = event.args.take().unwrap_or_default();
                ops.push(Op {
                    name,
                    category,
                    pid: event.pid,
                    tid: event.tid,
                    start_ns,
                    dur_ns,
                    external_id: args.external_id,
                    record_function_id: args.record_function_id,
                    sequence_number: args.sequence_number,
                    fwd_thread_id: args.fwd_thread_id,
                    parent: None,
                    depth: 0,
                    step: None,
                    input_dims: args.input_dims,
                    input_types: args.input_types,
                });
            }
            Kind::Launch(category) => {
                let args = event.args.take().unwrap_or_default();
                launches.push(Launch {
                    name,
                    category,
                    pid: event.pid,
                    tid: event.tid,
                    start_ns,
                    dur_ns,
                    correlation: args.correlation,
                    external_id: args.external_id,
                    op: None,
                    op_link: None,
                    step: None,
                });
            }
            Kind::Kernel => {
                let comm = comm::classify(&name, &mut event);
                let args = event.args.take().unwrap_or_default();
                kernels.push(Kernel {
                    name,
                    device: args.device,
                    stream: args.stream,
                    start_ns,
                    dur_ns,
                    correlation: args.correlation,
                    external_id: args.external_id,
                    launch: None,
                    op: None,
                    step: None,
                    grid: args.grid.unwrap_or_default(),
                    block: args.block.unwrap_or_default(),
                    registers_per_thread: args.registers_per_thread,
                    shared_memory: args.shared_memory,
                    blocks_per_sm: args.blocks_per_sm,
                    warps_per_sm: args.warps_per_sm,
                    occupancy_pct: args.achieved_occupancy.or(args.theoretical_occupancy),
                    kind: args.kind,
                    graph_id: args.graph_id,
                    comm,
                });
            }
            Kind::Memcpy { memset } => {
                let args = event.args.take().unwrap_or_default();
                memcpys.push(Memcpy {
                    name,
                    is_memset: memset,
                    device: args.device,
                    stream: args.stream,
                    start_ns,
                    dur_ns,
                    bytes: args.bytes,
                    correlation: args.correlation,
                    launch: None,
                    op: None,
                    step: None,
                });
            }
        }
    }

    meta.era = if legacy_categories {
        "kineto-2021"
    } else if raw.base_time_ns.is_some() {
        "kineto-2024"
    } else {
        "kineto-2022"
    }
    .to_string();
    if first_ns <= last_ns {
        meta.start_ns = Some(first_ns);
        meta.end_ns = Some(last_ns);
    }

    // Outer spans first at equal starts, so nesting sees parents before children.
    ops.sort_by_key(|o| (o.start_ns, std::cmp::Reverse(o.dur_ns)));
    launches.sort_by_key(|l| l.start_ns);
    kernels.sort_by_key(|k| k.start_ns);
    memcpys.sort_by_key(|m| m.start_ns);

    meta.pid = most_common(ops.iter().filter_map(|o| o.pid));
    meta.gpu_name = most_common(kernels.iter().filter_map(|k| k.device))
        .and_then(|id| devices.iter().find(|d| d.id == id))
        .or(devices.first())
        .map(|d| d.name.clone())
        .filter(|n| !n.is_empty());

    let mut trace = Trace {
        format: Format::Kineto,
        meta,
        devices,
        steps: Vec::new(),
        ops,
        launches,
        kernels,
        memcpys,
        et_nodes: Vec::new(),
    };
    crate::link::link(&mut trace);
    trace
}

fn most_common(values: impl Iterator<Item = i64>) -> Option<i64> {
    let mut counts: HashMap<i64, usize> = HashMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    counts.into_iter().max_by_key(|&(v, n)| (n, std::cmp::Reverse(v))).map(|(v, _)| v)
}

fn build_et(raw: RawFile<'_>) -> Trace<'_> {
    let nodes = raw.et_nodes.unwrap_or_default();
    let schema = raw.et_schema.unwrap_or_else(|| "unknown".into());
    let meta = TraceMeta {
        era: format!("et-{schema}"),
        schema_version: Some(schema),
        pid: raw.et_pid,
        event_count: nodes.len() as i64,
        unknown_keys: raw.unknown_keys,
        ..TraceMeta::default()
    };
    let et_nodes = nodes.into_iter().map(et_node).collect();
    Trace {
        format: Format::PytorchEt,
        meta,
        devices: Vec::new(),
        steps: Vec::new(),
        ops: Vec::new(),
        launches: Vec::new(),
        kernels: Vec::new(),
        memcpys: Vec::new(),
        et_nodes,
    }
}

fn et_node(raw: RawEtNode<'_>) -> EtNode<'_> {
    let mut node = EtNode {
        id: raw.id.unwrap_or(-1),
        name: raw.name.unwrap_or(Cow::Borrowed("")),
        parent: raw.parent.or(raw.ctrl_deps),
        rf_id: raw.rf_id,
        fw_parent: raw.fw_parent,
        seq_id: raw.seq_id,
        scope: raw.scope,
        tid: raw.tid,
        op_schema: raw.op_schema,
        input_shapes: raw.input_shapes,
        input_types: raw.input_types,
        output_shapes: raw.output_shapes,
        output_types: raw.output_types,
        collective_name: None,
        is_communication: false,
    };
    // 1.0.3+: inputs/outputs are {values, shapes, types}; 1.0.1 uses flat fields.
    for (io, shapes, types) in [
        (raw.inputs, &mut node.input_shapes, &mut node.input_types),
        (raw.outputs, &mut node.output_shapes, &mut node.output_types),
    ] {
        if let Some(io) = io.filter(|v| v.get().trim_start().starts_with('{'))
            && let Ok(parsed) = serde_json::from_str::<crate::json::RawEtIo>(io.get())
        {
            *shapes = parsed.shapes;
            *types = parsed.types;
        }
    }
    for attr in raw.attrs.into_iter().flatten() {
        let value = attr.value.unwrap_or(Scalar::Other);
        match attr.name.as_deref() {
            Some("rf_id") => node.rf_id = value.as_i64(),
            Some("fw_parent") => node.fw_parent = value.as_i64(),
            Some("seq_id") => node.seq_id = value.as_i64(),
            Some("scope") => node.scope = value.as_i64(),
            Some("tid") => node.tid = value.as_i64(),
            Some("op_schema") => node.op_schema = value.into_string().map(Cow::Owned),
            Some("collective_name") => node.collective_name = value.into_string(),
            _ => {}
        }
    }
    node.is_communication = node.collective_name.is_some()
        || node.name.starts_with("nccl:")
        || node.name.starts_with("c10d::")
        || node.name == "record_param_comms";
    node
}


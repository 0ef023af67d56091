//! Raw records -> a linked [`Trace`]: times to absolute nanoseconds, events
//! sorted, steps found, and every kernel tied to its launch, operator and step.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::HashMap;

use rustc_hash::FxHashSet;

use crate::comm;
use crate::json::lenient::Scalar;
use crate::json::{self, EventSink, ParseError, RawDevice, RawEtNode, RawEvent, RawFile, time::time_ns};
use crate::model::*;

/// A trace file's records, owning their strings, before they are merged,
/// sorted and linked: the text they came from can be freed first, so that
/// it is never held beside the merged records (ingest's peak memory).
pub struct Parsed(ParsedKind);

// One value per file, moved once: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum ParsedKind {
    Kineto {
        /// The records of consecutive parts of the text (one, or as many
        /// as were read at once), in file order.
        parts: Vec<KinetoBuilder>,
        raw: RawFile<'static>,
    },
    Et(Trace),
}

/// Parses one trace file's (decompressed) bytes. A Kineto file's event
/// list is read element by element, a large one in two halves at once (see
/// `json::list`); anything that reading cannot prove goes through serde in
/// one pass.
pub fn parse(bytes: &[u8]) -> Result<Parsed, ParseError> {
    let text = json::text(bytes)?;
    if let Some(plan) = json::list::plan(text) {
        // The first builder's vectors are sized for the whole file, so that
        // taking in the second half's records seldom moves them.
        let second_bytes = if plan.is_cut() { text.len() / 2 } else { 0 };
        let (mut first, mut second) = (KinetoBuilder::sized(text.len()), KinetoBuilder::sized(second_bytes));
        if let Some(raw) = json::list::parse(text, &plan, &mut first, &mut second) {
            let parts = if plan.is_cut() {
                vec![first, second]
            } else {
                vec![first]
            };
            return Ok(Parsed::kineto(parts, raw.into_static()));
        }
        tracing::debug!("the event list could not be read element by element; parsing in one pass");
    }
    let mut builder = KinetoBuilder::sized(text.len());
    let raw = json::parse_text(text, &mut builder)?;
    Ok(Parsed(if raw.et_nodes.is_some() {
        ParsedKind::Et(build_et(raw))
    } else {
        ParsedKind::Kineto {
            parts: vec![builder],
            raw: raw.into_static(),
        }
    }))
}

impl Parsed {
    /// A Kineto file's records, from consecutive parts of its text in file
    /// order, and its metadata.
    pub(crate) fn kineto(parts: Vec<KinetoBuilder>, raw: RawFile<'static>) -> Parsed {
        Parsed(ParsedKind::Kineto { parts, raw })
    }

    /// Merges, sorts and links the records. A file that yields no events
    /// at all is an error that says why.
    pub fn build(self) -> Result<Trace, ParseError> {
        let trace = match self.0 {
            ParsedKind::Kineto { parts, raw } => {
                KinetoBuilder::joined(parts, raw.base_time_ns.unwrap_or(0)).finish(raw)
            }
            ParsedKind::Et(trace) => trace,
        };
        if trace.has_no_events() {
            let m = &trace.meta;
            let why = match (m.event_count, m.dropped.describe()) {
                (0, _) => "the file lists none".to_string(),
                (n, Some(dropped)) => format!("{n} listed; {dropped}"),
                (n, None) => {
                    format!("none of its {n} events is a complete event (`ph` X) of a category tracecast reads")
                }
            };
            return Err(ParseError::NoEvents(why));
        }
        Ok(trace)
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

/// Turns each Kineto event into a model record as soon as it is parsed,
/// its strings copied out of the text. Times stay relative to the file
/// until `finish` knows `baseTimeNanoseconds` (which may come after the
/// events).
#[derive(Default)]
pub(crate) struct KinetoBuilder {
    legacy_categories: bool,
    ops: Vec<Op>,
    launches: Vec<Launch>,
    kernels: Vec<Kernel>,
    memcpys: Vec<Memcpy>,
    first_ns: Option<i64>,
    last_ns: Option<i64>,
    dropped: DroppedEvents,
    /// Every name met so far, each stored once.
    names: FxHashSet<Name>,
}

impl<'a> EventSink<'a> for KinetoBuilder {
    fn not_an_object(&mut self) {
        self.dropped.not_an_object += 1;
    }

    fn event(&mut self, mut event: RawEvent<'a>) {
        if event.ph.as_deref() != Some("X") {
            return;
        }
        let Some(kind) = event.cat.as_deref().and_then(kind_of) else {
            return;
        };
        let Some(start_ns) = event.ts.and_then(time_ns) else {
            self.dropped.bad_timestamp += 1;
            return;
        };
        // A complete event without `dur` is an instant.
        let dur_ns = match event.dur.map(time_ns) {
            None => 0,
            Some(Some(d)) if d >= 0 => d,
            Some(_) => {
                self.dropped.bad_duration += 1;
                return;
            }
        };
        self.first_ns = Some(self.first_ns.map_or(start_ns, |f| f.min(start_ns)));
        self.last_ns = Some(self.last_ns.map_or(start_ns + dur_ns, |l| l.max(start_ns + dur_ns)));
        self.legacy_categories |= matches!(event.cat.as_deref(), Some("Operator" | "Kernel" | "Runtime"));
        let name = self.intern(event.name.as_deref().unwrap_or(""));
        match kind {
            Kind::Op(category) => {
                let args = event.args.take().unwrap_or_default();
                self.ops.push(Op {
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
                self.launches.push(Launch {
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
                let comm = comm::classify(&name, &mut event).map(Box::new);
                let args = event.args.take().unwrap_or_default();
                self.kernels.push(Kernel {
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
                    kind: args.kind.map(Cow::into_owned),
                    graph_id: args.graph_id,
                    comm,
                });
            }
            Kind::Memcpy { memset } => {
                let args = event.args.take().unwrap_or_default();
                self.memcpys.push(Memcpy {
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
}

impl KinetoBuilder {
    /// The shared copy of `name`, made on its first meeting.
    fn intern(&mut self, name: &str) -> Name {
        if let Some(shared) = self.names.get(name) {
            return shared.clone();
        }
        let shared: Name = Name::from(name);
        self.names.insert(shared.clone());
        shared
    }

    /// Real traces average 200-300 bytes an event; reserving address space
    /// is cheap, growing and copying large vectors is not.
    pub(crate) fn sized(bytes: usize) -> Self {
        let events = bytes / 256;
        KinetoBuilder {
            ops: Vec::with_capacity(events / 3),
            launches: Vec::with_capacity(events / 4),
            kernels: Vec::with_capacity(events / 8),
            ..KinetoBuilder::default()
        }
    }

    /// Adds the records another builder made from the text that follows.
    pub(crate) fn append(&mut self, other: KinetoBuilder) {
        self.legacy_categories |= other.legacy_categories;
        self.ops.extend(other.ops);
        self.launches.extend(other.launches);
        self.kernels.extend(other.kernels);
        self.memcpys.extend(other.memcpys);
        self.first_ns = [self.first_ns, other.first_ns].into_iter().flatten().min();
        self.last_ns = [self.last_ns, other.last_ns].into_iter().flatten().max();
        self.dropped.add(other.dropped);
    }

    /// Makes the times absolute and sorts each table by start (the
    /// operators beside the other three). Outer spans come first at equal
    /// starts, so nesting sees parents before children.
    fn rebase_and_sort(&mut self, base: i64) {
        rayon::join(
            || {
                rebase(&mut self.ops, base, |o| &mut o.start_ns);
                self.ops.sort_by_key(op_order);
            },
            || {
                rebase(&mut self.launches, base, |l| &mut l.start_ns);
                rebase(&mut self.kernels, base, |k| &mut k.start_ns);
                rebase(&mut self.memcpys, base, |m| &mut m.start_ns);
                self.launches.sort_by_key(|l| l.start_ns);
                self.kernels.sort_by_key(|k| k.start_ns);
                self.memcpys.sort_by_key(|m| m.start_ns);
            },
        );
    }

    /// The records of consecutive parts of one text, joined in file order,
    /// rebased and sorted.
    fn joined(parts: Vec<KinetoBuilder>, base: i64) -> KinetoBuilder {
        let mut parts = parts.into_iter();
        let mut out = parts.next().unwrap_or_default();
        for part in parts {
            out.append(part);
        }
        out.rebase_and_sort(base);
        out
    }

    fn finish(self, raw: RawFile<'static>) -> Trace {
        let KinetoBuilder {
            legacy_categories,
            ops,
            launches,
            kernels,
            memcpys,
            first_ns,
            last_ns,
            dropped,
            names: _,
        } = self;
        let base = raw.base_time_ns.unwrap_or(0);
        let mut meta = TraceMeta {
            era: if legacy_categories {
                "kineto-2021"
            } else if raw.base_time_ns.is_some() {
                "kineto-2024"
            } else {
                "kineto-2022"
            }
            .to_string(),
            schema_version: raw.schema_version,
            base_time_ns: raw.base_time_ns,
            start_ns: first_ns.map(|t| t.saturating_add(base)),
            end_ns: last_ns.map(|t| t.saturating_add(base)),
            event_count: raw.event_count.unwrap_or(0) as i64,
            unknown_keys: raw.unknown_keys,
            gpu_count: raw.devices.len() as i64,
            dropped,
            ..TraceMeta::default()
        };
        if let Some(d) = &raw.distributed {
            meta.rank = d.rank;
            meta.world_size = d.world_size;
            meta.backend = d.backend.clone();
        }
        let devices = devices_of(&raw.devices);

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
}

/// Operators by start, the longer (outer) first at equal starts.
fn op_order(o: &Op) -> (i64, Reverse<i64>) {
    (o.start_ns, Reverse(o.dur_ns))
}

fn rebase<T>(records: &mut [T], base: i64, start_ns: impl Fn(&mut T) -> &mut i64) {
    if base != 0 {
        for r in records {
            let start = start_ns(r);
            *start = start.saturating_add(base);
        }
    }
}

fn most_common(values: impl Iterator<Item = i64>) -> Option<i64> {
    let mut counts: HashMap<i64, usize> = HashMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(v, n)| (n, std::cmp::Reverse(v)))
        .map(|(v, _)| v)
}

fn build_et(raw: RawFile<'_>) -> Trace {
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

/// One ET node, its strings copied out of the file's text.
fn et_node(raw: RawEtNode<'_>) -> EtNode {
    let mut node = EtNode {
        id: raw.id.unwrap_or(-1),
        name: raw.name.unwrap_or_default().into_owned(),
        parent: raw.parent.or(raw.ctrl_deps),
        rf_id: raw.rf_id,
        fw_parent: raw.fw_parent,
        seq_id: raw.seq_id,
        scope: raw.scope,
        tid: raw.tid,
        op_schema: raw.op_schema.map(Cow::into_owned),
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
            Some("op_schema") => node.op_schema = value.into_string(),
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

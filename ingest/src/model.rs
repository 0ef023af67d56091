//! A parsed, linked trace: what one file contributes to the lake. Indices
//! (`op`, `launch`, `step`) point into the trace's own vectors; they become
//! the `*_id` columns.

use std::sync::Arc;

/// An event's name, shared by every record that has it: a trace repeats
/// a few hundred names over hundreds of thousands of events.
pub type Name = Arc<str>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Kineto,
    PytorchEt,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Kineto => "kineto",
            Format::PytorchEt => "pytorch_et",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct TraceMeta {
    pub era: String,
    pub schema_version: Option<String>,
    pub gpu_name: Option<String>,
    pub gpu_count: i64,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub backend: Option<String>,
    pub pid: Option<i64>,
    pub base_time_ns: Option<i64>,
    pub start_ns: Option<i64>,
    pub end_ns: Option<i64>,
    pub event_count: i64,
    pub unknown_keys: Vec<String>,
    pub dropped: DroppedEvents,
}

/// Events left out of the lake because a value they need is unusable,
/// counted by reason (the `dropped_*` columns of `traces`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DroppedEvents {
    /// Elements of the event list that are not JSON objects.
    pub not_an_object: i64,
    /// Complete events with no `ts`, or one that is not a number of
    /// microseconds within +-146 years of the epoch.
    pub bad_timestamp: i64,
    /// Complete events whose `dur` is negative or not a usable number.
    pub bad_duration: i64,
}

impl DroppedEvents {
    pub fn total(&self) -> i64 {
        self.not_an_object + self.bad_timestamp + self.bad_duration
    }

    /// `"3 events dropped: 2 with a bad timestamp, 1 not an object"`, or
    /// `None` when nothing was dropped.
    pub fn describe(&self) -> Option<String> {
        let parts: Vec<String> = [
            (self.not_an_object, "not a JSON object at all"),
            (self.bad_timestamp, "with a missing or unusable timestamp"),
            (self.bad_duration, "with a negative or unusable duration"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| format!("{n} {why}"))
        .collect();
        let total = self.total();
        (total > 0).then(|| {
            format!(
                "{total} event{} dropped: {}",
                if total == 1 { "" } else { "s" },
                parts.join(", ")
            )
        })
    }

    pub(crate) fn add(&mut self, other: DroppedEvents) {
        self.not_an_object += other.not_an_object;
        self.bad_timestamp += other.bad_timestamp;
        self.bad_duration += other.bad_duration;
    }
}

#[derive(Debug, Clone, Default)]
pub struct Device {
    pub id: i64,
    pub name: String,
    pub compute_major: Option<i64>,
    pub compute_minor: Option<i64>,
    pub sm_count: Option<i64>,
    pub total_memory: Option<i64>,
    pub max_threads_per_sm: Option<i64>,
    pub regs_per_sm: Option<i64>,
    pub shared_memory_per_sm: Option<i64>,
    pub warp_size: Option<i64>,
}

impl Device {
    pub fn vendor(&self) -> &'static str {
        let lower = self.name.to_ascii_lowercase();
        if lower.contains("amd") || lower.contains("radeon") || lower.contains("instinct") {
            "amd"
        } else if lower.contains("nvidia")
            || lower.contains("tesla")
            || lower.contains("geforce")
            || lower.contains("quadro")
        {
            "nvidia"
        } else {
            "unknown"
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSource {
    ProfilerStep,
    ParamAnnotation,
    OptimizerStep,
}

impl StepSource {
    pub fn as_str(self) -> &'static str {
        match self {
            StepSource::ProfilerStep => "profiler_step",
            StepSource::ParamAnnotation => "param_annotation",
            StepSource::OptimizerStep => "optimizer_step",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Step {
    pub name: Name,
    pub number: Option<i64>,
    pub source: StepSource,
    pub start_ns: i64,
    pub end_ns: i64,
    pub kernel_count: i64,
    pub kernel_time_ns: i64,
    pub gpu_busy_ns: i64,
    pub gpu_start_ns: Option<i64>,
    pub gpu_end_ns: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpCategory {
    CpuOp,
    UserAnnotation,
}

impl OpCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            OpCategory::CpuOp => "cpu_op",
            OpCategory::UserAnnotation => "user_annotation",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Op {
    pub name: Name,
    pub category: OpCategory,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    pub start_ns: i64,
    pub dur_ns: i64,
    pub external_id: Option<i64>,
    pub record_function_id: Option<i64>,
    pub sequence_number: Option<i64>,
    pub fwd_thread_id: Option<i64>,
    pub parent: Option<usize>,
    pub depth: i32,
    pub step: Option<usize>,
    pub input_dims: Option<Vec<Option<Vec<i64>>>>,
    pub input_types: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpLink {
    ExternalId,
    Nesting,
}

impl OpLink {
    pub fn as_str(self) -> &'static str {
        match self {
            OpLink::ExternalId => "external_id",
            OpLink::Nesting => "nesting",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Launch {
    pub name: Name,
    pub category: &'static str,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    pub start_ns: i64,
    pub dur_ns: i64,
    pub correlation: Option<i64>,
    pub external_id: Option<i64>,
    pub op: Option<usize>,
    pub op_link: Option<OpLink>,
    pub step: Option<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct CommInfo {
    pub collective: &'static str,
    pub by_metadata: bool,
    pub in_msg_nelems: Option<i64>,
    pub out_msg_nelems: Option<i64>,
    pub dtype: Option<String>,
    pub group_size: Option<i64>,
    pub process_group_name: Option<String>,
    pub process_group_ranks: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: Name,
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub start_ns: i64,
    pub dur_ns: i64,
    pub correlation: Option<i64>,
    pub external_id: Option<i64>,
    pub launch: Option<usize>,
    pub op: Option<usize>,
    pub step: Option<usize>,
    pub grid: [Option<i64>; 3],
    pub block: [Option<i64>; 3],
    pub registers_per_thread: Option<i64>,
    pub shared_memory: Option<i64>,
    pub blocks_per_sm: Option<f64>,
    pub warps_per_sm: Option<f64>,
    pub occupancy_pct: Option<f64>,
    pub kind: Option<String>,
    pub graph_id: Option<i64>,
    /// Boxed: few kernels are collectives, and every kernel pays for the field's size.
    pub comm: Option<Box<CommInfo>>,
}

#[derive(Debug, Clone)]
pub struct Memcpy {
    pub name: Name,
    pub is_memset: bool,
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub start_ns: i64,
    pub dur_ns: i64,
    pub bytes: Option<i64>,
    pub correlation: Option<i64>,
    pub launch: Option<usize>,
    pub op: Option<usize>,
    pub step: Option<usize>,
}

impl Memcpy {
    /// `HtoD`, `DtoH`, ... from names like `Memcpy HtoD (Pageable -> Device)`.
    pub fn direction(&self) -> Option<&'static str> {
        if self.is_memset {
            return None;
        }
        ["HtoD", "DtoH", "DtoD", "HtoH", "PtoP"]
            .into_iter()
            .find(|d| self.name.contains(d))
    }
}

#[derive(Debug, Clone)]
pub struct EtNode {
    pub id: i64,
    pub name: String,
    pub parent: Option<i64>,
    pub rf_id: Option<i64>,
    pub fw_parent: Option<i64>,
    pub seq_id: Option<i64>,
    pub scope: Option<i64>,
    pub tid: Option<i64>,
    pub op_schema: Option<String>,
    pub input_shapes: Option<Vec<Option<Vec<i64>>>>,
    pub input_types: Option<Vec<String>>,
    pub output_shapes: Option<Vec<Option<Vec<i64>>>>,
    pub output_types: Option<Vec<String>>,
    pub collective_name: Option<String>,
    pub is_communication: bool,
}

/// One trace file, parsed and linked.
#[derive(Debug, Clone)]
pub struct Trace {
    pub format: Format,
    pub meta: TraceMeta,
    pub devices: Vec<Device>,
    pub steps: Vec<Step>,
    pub ops: Vec<Op>,
    pub launches: Vec<Launch>,
    pub kernels: Vec<Kernel>,
    pub memcpys: Vec<Memcpy>,
    pub et_nodes: Vec<EtNode>,
}

impl Trace {
    /// Nothing in the file becomes a row of an event table.
    pub fn has_no_events(&self) -> bool {
        self.ops.is_empty()
            && self.launches.is_empty()
            && self.kernels.is_empty()
            && self.memcpys.is_empty()
            && self.et_nodes.is_empty()
    }
}

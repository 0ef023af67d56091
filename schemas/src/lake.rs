//! The lake's tables (DESIGN.md "The lake"). Each is a folder of Parquet
//! files under the lake directory, named as the table.

use crate::column::{opt, req, ColType::*, TableDef};

pub const TRACES: TableDef = TableDef {
    name: "traces",
    version: 1,
    doc: "One row per ingested trace file (or archive member). `trace_id` is the first 16 hex digits of `content_hash`, so the same bytes always get the same id.",
    columns: &[
        req("trace_id", Utf8, "", "Identifier of the trace, used as the join key by every other table."),
        req("content_hash", Utf8, "", "BLAKE3 of the file's bytes as stored (compressed bytes for .gz; the member's bytes for archive members)."),
        req("source", Utf8, "", "Path of the file as given to `ingest` (the archive's path for archive members)."),
        opt("archive_member", Utf8, "", "Path of the member inside a .tar/.tar.gz/.tgz archive."),
        req("format", Utf8, "", "`kineto` (PyTorch profiler JSON) or `pytorch_et` (PyTorch Execution Trace JSON)."),
        req("era", Utf8, "", "Format era: `kineto-2021` (Operator/Kernel categories), `kineto-2022` (cpu_op/kernel categories, epoch timestamps), `kineto-2024` (baseTimeNanoseconds-relative timestamps), or `et-<schema>`."),
        opt("schema_version", Utf8, "", "The file's own schema version (`schemaVersion` for Kineto, `schema` for ET)."),
        opt("gpu_name", Utf8, "", "Name of the GPU the trace's kernels ran on (else the first listed device)."),
        req("gpu_count", Int64, "count", "Devices listed in `deviceProperties`/`computeProperties`."),
        opt("rank", Int64, "", "Distributed rank (`distributedInfo.rank`)."),
        opt("world_size", Int64, "count", "Distributed world size (`distributedInfo.world_size`)."),
        opt("backend", Utf8, "", "Distributed backend (`nccl`, `gloo`, ...)."),
        req("job_id", Utf8, "", "Groups traces of one run: ranks in one archive or one directory with the same world size share it; a lone trace's job is its own trace_id."),
        opt("pid", Int64, "", "Host process id (Kineto CPU pid or ET `pid`), used to pair an ET with its Kineto trace."),
        opt("base_time_ns", Int64, "ns", "`baseTimeNanoseconds` when the trace's timestamps are relative to it."),
        opt("start_ns", Int64, "ns", "Earliest event start."),
        opt("end_ns", Int64, "ns", "Latest event end."),
        req("event_count", Int64, "count", "Events (Kineto) or nodes (ET) in the file."),
        req("step_count", Int64, "count", "Rows this trace has in `steps`."),
        req("kernel_count", Int64, "count", "Rows this trace has in `kernels`."),
        req("unknown_top_level_keys", ListUtf8, "", "Names (never values) of top-level keys tracecast does not read; some hold environment dumps, which are never stored."),
        req("ingest_run", Utf8, "", "Identifier of the `ingest` run that added the trace."),
        req("ingested_at_ns", Int64, "ns", "When the trace was ingested."),
        req("tracecast_version", Utf8, "", "Version of tracecast that ingested it."),
    ],
};

pub const DEVICES: TableDef = TableDef {
    name: "devices",
    version: 1,
    doc: "One row per device listed in a trace's `deviceProperties` (or `computeProperties`).",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        req("device_id", Int64, "", "Device index (`id`)."),
        req("name", Utf8, "", "Device name as reported."),
        req("vendor", Utf8, "", "`nvidia`, `amd` or `unknown`, from the name."),
        opt("compute_major", Int64, "", "Compute capability, major."),
        opt("compute_minor", Int64, "", "Compute capability, minor."),
        opt("sm_count", Int64, "count", "Streaming multiprocessors (compute units on AMD)."),
        opt("total_memory_bytes", Int64, "bytes", "Global memory."),
        opt("max_threads_per_sm", Int64, "count", "Maximum resident threads per SM."),
        opt("regs_per_sm", Int64, "count", "Registers per SM."),
        opt("shared_memory_per_sm_bytes", Int64, "bytes", "Shared memory per SM."),
        opt("warp_size", Int64, "count", "Threads per warp (wavefront on AMD)."),
    ],
};

pub const STEPS: TableDef = TableDef {
    name: "steps",
    version: 1,
    doc: "Training iterations. Found from `ProfilerStep#N` spans; where a trace has none, from PARAM benchmark iteration annotations (`[param|...|warmup|...]`, `[param|...|measure|...]`); else between consecutive `Optimizer.step#...` annotations.",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        req("step_id", Int64, "", "Index of the step within the trace, from 0 in time order."),
        req("name", Utf8, "", "Name of the span that defines the step."),
        opt("step_number", Int64, "", "N of `ProfilerStep#N`."),
        req("source", Utf8, "", "`profiler_step`, `param_annotation` or `optimizer_step`."),
        req("start_ns", Int64, "ns", "CPU start of the step."),
        req("end_ns", Int64, "ns", "CPU end of the step."),
        req("dur_ns", Int64, "ns", "Measured wall time of the step (`end_ns - start_ns`)."),
        req("kernel_count", Int64, "count", "Kernels assigned to the step."),
        req("kernel_time_ns", Int64, "ns", "Sum of the durations of those kernels (overlap counted twice)."),
        req("gpu_busy_ns", Int64, "ns", "Union of those kernels' intervals: time at least one kernel ran."),
        opt("gpu_start_ns", Int64, "ns", "Start of the step's first kernel."),
        opt("gpu_end_ns", Int64, "ns", "End of the step's last kernel."),
    ],
};

pub const OPS: TableDef = TableDef {
    name: "ops",
    version: 1,
    doc: "CPU-side operators and annotations (`cpu_op`/`Operator`, `user_annotation`).",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        req("op_id", Int64, "", "Index of the op within the trace."),
        req("name", Utf8, "", "Operator name (`aten::addmm`, `ProfilerStep#5`, ...)."),
        req("category", Utf8, "", "`cpu_op` or `user_annotation` (2021 `Operator` is read as `cpu_op`)."),
        opt("pid", Int64, "", "Process id."),
        opt("tid", Int64, "", "Thread id (null when the trace names the thread with a non-numeric string)."),
        req("start_ns", Int64, "ns", "Start."),
        req("dur_ns", Int64, "ns", "Duration."),
        opt("external_id", Int64, "", "`External id` (`external id` in 2021 traces)."),
        opt("record_function_id", Int64, "", "`Record function id`: equals ET `rf_id`."),
        opt("sequence_number", Int64, "", "Autograd sequence number (pairs forward and backward ops)."),
        opt("fwd_thread_id", Int64, "", "`Fwd thread id` of a backward op."),
        opt("parent_op_id", Int64, "", "The innermost op on the same thread whose span contains this one."),
        req("depth", Int32, "count", "Nesting depth on its thread: 0 for outermost."),
        opt("step_id", Int64, "", "The step whose span contains the op's start."),
        opt("input_dims", ListListInt64, "elements", "`Input Dims`: one shape per input; null entries for non-tensor or nested inputs."),
        opt("input_types", ListUtf8, "", "`Input type`: dtype or kind per input."),
    ],
};

pub const LAUNCHES: TableDef = TableDef {
    name: "launches",
    version: 1,
    doc: "CPU-side runtime and driver calls (`cuda_runtime`, `cuda_driver`, 2021 `Runtime`).",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        req("launch_id", Int64, "", "Index of the call within the trace."),
        req("name", Utf8, "", "API name (`cudaLaunchKernel`, `hipExtModuleLaunchKernel`, ...)."),
        req("category", Utf8, "", "`cuda_runtime` or `cuda_driver`."),
        opt("pid", Int64, "", "Process id."),
        opt("tid", Int64, "", "Thread id."),
        req("start_ns", Int64, "ns", "Start."),
        req("dur_ns", Int64, "ns", "Duration."),
        opt("correlation", Int64, "", "Correlation id, shared with the GPU activity it launched."),
        opt("external_id", Int64, "", "`External id` as the trace gives it."),
        opt("op_id", Int64, "", "The cpu_op that issued the call."),
        opt("op_link", Utf8, "", "How `op_id` was found: `external_id` (the op's own External id) or `nesting` (innermost op on the same thread whose span contains the call)."),
        opt("step_id", Int64, "", "The step whose span contains the call."),
    ],
};

pub const KERNELS: TableDef = TableDef {
    name: "kernels",
    version: 1,
    doc: "GPU kernels. Launch configuration columns are null where the trace (e.g. AMD) does not record them.",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        req("kernel_id", Int64, "", "Index of the kernel within the trace, in start order."),
        req("name", Utf8, "", "Kernel name as recorded (demangled by the profiler)."),
        opt("device", Int64, "", "Device index."),
        opt("stream", Int64, "", "Stream."),
        req("start_ns", Int64, "ns", "Start on the GPU."),
        req("dur_ns", Int64, "ns", "Duration."),
        opt("correlation", Int64, "", "Correlation id."),
        opt("external_id", Int64, "", "`External id` as the trace gives it."),
        opt("launch_id", Int64, "", "The runtime call that launched it (by correlation)."),
        req("has_launch", Bool, "", "False for kernels whose launch is not in the trace (launched before recording began); they are kept."),
        opt("op_id", Int64, "", "The cpu_op that launched it (through its launch)."),
        opt("step_id", Int64, "", "Step of its launch; for kernels without a launch, the step whose span contains the kernel's start."),
        opt("grid_x", Int64, "", "Grid dimension x."),
        opt("grid_y", Int64, "", "Grid dimension y."),
        opt("grid_z", Int64, "", "Grid dimension z."),
        opt("block_x", Int64, "", "Block dimension x."),
        opt("block_y", Int64, "", "Block dimension y."),
        opt("block_z", Int64, "", "Block dimension z."),
        opt("registers_per_thread", Int64, "count", "Registers per thread."),
        opt("shared_memory_bytes", Int64, "bytes", "Shared memory per block."),
        opt("blocks_per_sm", Float64, "count", "Blocks per SM."),
        opt("warps_per_sm", Float64, "count", "Warps per SM."),
        opt("occupancy_pct", Float64, "%", "`est. achieved occupancy %`, else `theoretical occupancy %`."),
        opt("kind", Utf8, "", "AMD `kind` (`Dispatch Kernel`, ...)."),
        opt("graph_id", Int64, "", "CUDA graph id for graph-launched kernels."),
        req("is_communication", Bool, "", "A collective or point-to-point communication kernel."),
        opt("collective", Utf8, "", "Normalised collective (`all_reduce`, `all_gather`, `reduce_scatter`, `broadcast`, `all_to_all`, `send_recv`, `reduce`, `other`) for communication kernels."),
    ],
};

pub const MEMCPY: TableDef = TableDef {
    name: "memcpy",
    version: 1,
    doc: "GPU memory copies and sets (`gpu_memcpy`/`gpu_memset`, 2021 `Memcpy`/`Memset`).",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        req("name", Utf8, "", "As recorded (`Memcpy HtoD (Pageable -> Device)`, `Memset (Device)`, ...)."),
        req("kind", Utf8, "", "`memcpy` or `memset`."),
        opt("direction", Utf8, "", "`HtoD`, `DtoH`, `DtoD`, `HtoH`, `PtoP` for copies."),
        opt("device", Int64, "", "Device index."),
        opt("stream", Int64, "", "Stream."),
        req("start_ns", Int64, "ns", "Start."),
        req("dur_ns", Int64, "ns", "Duration."),
        opt("bytes", Int64, "bytes", "Bytes moved or set."),
        opt("correlation", Int64, "", "Correlation id."),
        opt("launch_id", Int64, "", "The runtime call that issued it."),
        opt("op_id", Int64, "", "The cpu_op that issued it."),
        opt("step_id", Int64, "", "Step (as for kernels)."),
    ],
};

pub const COMMS: TableDef = TableDef {
    name: "comms",
    version: 1,
    doc: "One row per communication kernel, with its message metadata where the trace records it.",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        req("kernel_id", Int64, "", "The kernel (`kernels.kernel_id`)."),
        req("collective", Utf8, "", "Normalised collective, as in `kernels.collective`."),
        req("classified_by", Utf8, "", "`metadata` (the kernel's `Collective name`) or `name` (kernel name patterns)."),
        opt("in_msg_nelems", Int64, "elements", "`In msg nelems`."),
        opt("out_msg_nelems", Int64, "elements", "`Out msg nelems`."),
        opt("dtype", Utf8, "", "Element type."),
        opt("message_bytes", Int64, "bytes", "`in_msg_nelems` x the dtype's size, where both are known."),
        opt("group_size", Int64, "count", "Ranks in the process group."),
        opt("process_group_name", Utf8, "", "Process group name."),
        opt("process_group_ranks", Utf8, "", "Ranks of the process group as recorded."),
        req("start_ns", Int64, "ns", "Kernel start."),
        req("dur_ns", Int64, "ns", "Kernel duration."),
        opt("step_id", Int64, "", "Step."),
    ],
};

pub const ET_NODES: TableDef = TableDef {
    name: "et_nodes",
    version: 1,
    doc: "PyTorch Execution Trace nodes (schemas 1.0.1 flat fields; 1.0.3/1.1.x nested inputs and attrs). Pair them with Kineto ops through the `et_op_links` view (same `pid`, `rf_id` = `ops.record_function_id`).",
    columns: &[
        req("trace_id", Utf8, "", "The ET file."),
        req("node_id", Int64, "", "ET node `id`."),
        req("name", Utf8, "", "Node name."),
        opt("parent_id", Int64, "", "`parent` (1.0.1) or `ctrl_deps` (1.0.3+)."),
        opt("rf_id", Int64, "", "Record function id: equals Kineto `Record function id`."),
        opt("fw_parent", Int64, "", "Forward parent node."),
        opt("seq_id", Int64, "", "Autograd sequence id."),
        opt("scope", Int64, "", "RecordFunction scope."),
        opt("tid", Int64, "", "Thread."),
        opt("op_schema", Utf8, "", "Operator schema string."),
        opt("input_shapes", ListListInt64, "elements", "Shapes of inputs; null entries for nested or non-tensor inputs."),
        opt("input_types", ListUtf8, "", "Types of inputs."),
        opt("output_shapes", ListListInt64, "elements", "Shapes of outputs."),
        opt("output_types", ListUtf8, "", "Types of outputs."),
        req("is_communication", Bool, "", "A collective node (`nccl:*`, `c10d::*`, or with `collective_name`)."),
        opt("collective_name", Utf8, "", "`collective_name` attribute where present."),
    ],
};

pub const INGEST_LOG: TableDef = TableDef {
    name: "_ingest_log",
    version: 1,
    doc: "Every input `ingest` read and what became of it. Files already in the lake (same content hash) are skipped and not logged again.",
    columns: &[
        req("ingest_run", Utf8, "", "Identifier of the run."),
        req("at_ns", Int64, "ns", "When the outcome was recorded."),
        req("source", Utf8, "", "Path as given."),
        opt("archive_member", Utf8, "", "Member inside an archive."),
        opt("content_hash", Utf8, "", "BLAKE3 of the bytes (null when they could not be read)."),
        req("size_bytes", Int64, "bytes", "Bytes read (compressed size for .gz)."),
        req("outcome", Utf8, "", "`ingested`, `failed`, `manifest` (a collector sidecar manifest: not a trace, read by later stages), or `archive` (an archive whose every member was handled; re-runs skip it unopened)."),
        opt("reason", Utf8, "", "Why it failed."),
        opt("trace_id", Utf8, "", "Trace id for ingested files."),
        opt("format", Utf8, "", "Detected format."),
    ],
};

/// Lake tables in documentation (and commit) order; `traces` and
/// `_ingest_log` come last because their rows mark a trace as present.
pub const TABLES: [&TableDef; 10] = [
    &DEVICES, &STEPS, &OPS, &LAUNCHES, &KERNELS, &MEMCPY, &COMMS, &ET_NODES, &TRACES, &INGEST_LOG,
];


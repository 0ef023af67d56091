//! The planner's file formats (DESIGN.md "The planner"): the job table and the
//! throughput table it reads, and the schedule it writes (`schedule.csv`, one
//! row per segment). `schedule.json` and `metrics.json` are nested JSON, so
//! they are described in `schemas/FORMATS.md`; their versions live here.

use crate::column::{ColType::*, TableDef, opt, req};

/// `format` field of `schedule.json`.
pub const SCHEDULE_FORMAT: &str = "tracecast.schedule";
/// Version of `schedule.json`: bump when a field is added, removed or changes meaning.
pub const SCHEDULE_VERSION: u32 = 4;
/// `format` field of `metrics.json`.
pub const METRICS_FORMAT: &str = "tracecast.metrics";
/// Version of `metrics.json`.
pub const METRICS_VERSION: u32 = 2;
/// Version of the cluster TOML (`version = 1` at its top; optional).
pub const CLUSTER_TOML_VERSION: u32 = 1;

pub const JOBS: TableDef = TableDef {
    name: "plan_jobs",
    version: 1,
    doc: "Jobs for `tracecast plan` / `simulate`, one row per training job, as CSV (header row) or Parquet. \
          A job needs `iterations` (then its speed comes from the throughput table) or `duration_s` (then it is rigid \
          unless its `job_type` is priced, in which case iterations = duration x table throughput at `num_gpus`).",
    columns: &[
        req("job_id", Utf8, "", "Unique job identifier."),
        req(
            "submit_time_s",
            Float64,
            "s",
            "Submission time, seconds from the trace start.",
        ),
        opt(
            "job_type",
            Utf8,
            "",
            "Model / workload name: the key into the throughput table (`resnet50`, `bert`, ...).",
        ),
        opt(
            "batch_size",
            Int64,
            "samples",
            "Global batch size; a size the table lacks is interpolated.",
        ),
        opt("iterations", Float64, "count", "Training iterations to run."),
        opt(
            "duration_s",
            Float64,
            "s",
            "Run time at `num_gpus` GPUs, when iterations are not known.",
        ),
        req(
            "num_gpus",
            Int64,
            "count",
            "GPUs requested: the count of rigid jobs and of the fixed-count baselines.",
        ),
        opt(
            "deadline_s",
            Float64,
            "s",
            "Absolute deadline, seconds from the trace start.",
        ),
        opt(
            "priority",
            Int64,
            "",
            "Higher runs first under the planner (default 0).",
        ),
        opt(
            "elastic",
            Bool,
            "",
            "May the planner change its GPU count? Default: true when iterations and a priced job_type are known.",
        ),
        opt(
            "gpu_type",
            Utf8,
            "",
            "Pin the job to one GPU type (default: any type the table prices for it).",
        ),
    ],
};

pub const THROUGHPUT: TableDef = TableDef {
    name: "plan_throughput",
    version: 1,
    doc: "Training throughput per job type, GPU type, global batch size and GPU count, as CSV or Parquet \
          (`tracecast predict` writes it; measured tables work too). Missing counts and batch sizes are interpolated.",
    columns: &[
        req("job_type", Utf8, "", "Model / workload name, as in the job table."),
        req(
            "gpu_type",
            Utf8,
            "",
            "GPU type, as in the cluster spec (`A100`, `T4`, ...).",
        ),
        req("batch_size", Int64, "samples", "Global batch size."),
        req("num_gpus", Int64, "count", "Data-parallel GPU count."),
        opt(
            "iters_per_s",
            Float64,
            "1/s",
            "Iterations per second; null, 0 or NaN mean no measurement.",
        ),
        opt(
            "num_nodes",
            Int64,
            "count",
            "Nodes the figure was taken on; null means the most compact placement.",
        ),
        opt(
            "source",
            Utf8,
            "",
            "`measured`, `predicted` or `fixture`; informational.",
        ),
    ],
};

pub const SCHEDULE_SEGMENTS: TableDef = TableDef {
    name: "plan_schedule_segments",
    version: SCHEDULE_VERSION,
    doc: "`schedule.csv`: one row per segment of `schedule.json` (a job holding a fixed set of GPUs over [start_s, end_s)).",
    columns: &[
        req("job_id", Utf8, "", "The job."),
        req("segment", Int64, "", "0-based index of the segment within the job."),
        req("start_s", Float64, "s", "Segment start, seconds from the trace start."),
        req("end_s", Float64, "s", "Segment end (exclusive)."),
        req("gpu_type", Utf8, "", "GPU type of every GPU in the segment."),
        req("num_gpus", Int64, "count", "GPUs held."),
        req(
            "nodes",
            Utf8,
            "",
            "Placement as `node:gpus` pairs joined by `;` (node ids as in schedule.json's `cluster.nodes`).",
        ),
        req(
            "restart_s",
            Float64,
            "s",
            "Seconds at the start of the segment spent restarting (no progress).",
        ),
        req(
            "iters_per_s",
            Float64,
            "1/s",
            "Throughput the planner used for the segment (after any cross-node penalty).",
        ),
        req(
            "interpolated",
            Bool,
            "",
            "True when the throughput was interpolated (count or batch size not in the table).",
        ),
    ],
};

pub const SCHEDULE_JOBS: TableDef = TableDef {
    name: "plan_schedule_jobs",
    version: 1,
    doc: "`jobs.csv`, written beside `schedule.json`: one row per job with its outcome as the verifier replayed it \
          (the per-job input of metrics; `bench/plan/ef_metrics.py` reads it and ElasticFlow's `job.csv` alike).",
    columns: &[
        req("job_id", Utf8, "", "The job."),
        req(
            "submit_s",
            Float64,
            "s",
            "Submission time, seconds from the trace start.",
        ),
        opt("deadline_s", Float64, "s", "Absolute deadline, when the job has one."),
        req(
            "status",
            Utf8,
            "",
            "`done`, or `rejected` (admission control refused it: it never ran; a missed deadline).",
        ),
        opt(
            "first_start_s",
            Float64,
            "s",
            "When the job first held GPUs; null when rejected.",
        ),
        opt("finish_s", Float64, "s", "When its work was done; null when rejected."),
        opt(
            "release_s",
            Float64,
            "s",
            "When it handed its GPUs back (the end of its last segment; later than `finish_s` when decisions come in rounds).",
        ),
    ],
};

pub const TABLES: &[&TableDef] = &[&JOBS, &THROUGHPUT, &SCHEDULE_SEGMENTS, &SCHEDULE_JOBS];

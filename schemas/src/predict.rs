//! Tables written by `tracecast predict` (Parquet and CSV, same columns).

use crate::column::{ColType::*, TableDef, opt, req};

/// 2: `predicted_steps.predicted_busy_ns`; 3: `predicted_steps.profiler_overhead_ns`;
/// 4: `predicted_steps.host_ns`.
pub const PREDICTION_VERSION: u32 = 4;

pub const PREDICTED_STEPS: TableDef = TableDef {
    name: "predicted_steps",
    version: PREDICTION_VERSION,
    doc: "`tracecast predict` output `steps.parquet` / `steps.csv`: one row per step of each trace, on one GPU, \
          as the scenario prices it (one GPU; the multi-GPU figures are per trace).",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        req("step_id", Int64, "", "The step."),
        req("gpu", Utf8, "", "Hardware profile the step is priced on."),
        opt(
            "batch_size",
            Int64,
            "samples",
            "Batch size per GPU the step is priced at; null when unknown.",
        ),
        req(
            "predicted_ns",
            Float64,
            "ns",
            "Predicted step time without the profiler: the step's GPU span (the sum of its windows' times) plus its remainder (CPU time at the step's edges, as recorded; where the GPU span outlasted the CPU's step, the host having run ahead, at least the step's kernel time), less `profiler_overhead_ns`; at least `host_ns` where that is given.",
        ),
        req(
            "predicted_gpu_span_ns",
            Float64,
            "ns",
            "The step's GPU work alone: the sum of its windows' times (measured or predicted, per `--base`), moved by a what-if.",
        ),
        req(
            "predicted_busy_ns",
            Float64,
            "ns",
            "The part of `predicted_gpu_span_ns` in kernels, idle gaps left out: the recorded kernels' time moved by a what-if (under `--base model`, which does not price gaps apart, the span itself). Span less busy is idle time kept as recorded: host launch gaps that a faster GPU does not shorten.",
        ),
        req(
            "profiler_overhead_ns",
            Float64,
            "ns",
            "Host time taken out of the step as the profiler's own: `--profiler-overhead-us` per CPU operator the trace recorded in the step, never taking the step below its kernel time. `predicted_ns` plus this is the step priced with the profiler's cost kept.",
        ),
        opt(
            "host_ns",
            Float64,
            "ns",
            "The host's time below which the step is not priced: its own time (the recorded step less its runtime calls' waits on the GPU, `feature_steps.runtime_wait_ns`, and the profiler's cost, its data-loader time moved with the batch) on the recorded GPU or one no faster in any figure, and that times the step's speed-up on a GPU faster in some figure (the machine's balance kept). The same host issues the same operators, so a host-bound step stays host-bound. Null under `--idle none`, and on another GPU where the recorded one has no hardware profile.",
        ),
        opt(
            "measured_ns",
            Int64,
            "ns",
            "Measured step time, under the profiler, where the scenario is the trace as recorded (same GPU, same batch); else null.",
        ),
        req("windows", Int64, "count", "Windows summed."),
    ],
};

pub const PREDICTED_TRACES: TableDef = TableDef {
    name: "predicted_traces",
    version: PREDICTION_VERSION,
    doc: "`tracecast predict` output `traces.parquet` / `traces.csv`: one row per trace and GPU count \
          (data-parallel, batch per GPU fixed).",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        opt("model", Utf8, "", "Model name from the labels; null when unlabelled."),
        opt(
            "recorded_gpu",
            Utf8,
            "",
            "GPU the trace was recorded on, as the trace names it.",
        ),
        req("gpu", Utf8, "", "Hardware profile the prediction is for."),
        opt("batch_size", Int64, "samples", "Batch size per GPU; null when unknown."),
        req("num_gpus", Int64, "count", "Data-parallel GPUs."),
        req("steps", Int64, "count", "Steps of the trace the median is taken over."),
        req(
            "iteration_ms",
            Float64,
            "ms",
            "Predicted iteration time at `num_gpus`: the one-GPU time (the median step less its collectives) plus the exposed all-reduce time.",
        ),
        opt(
            "measured_iteration_ms",
            Float64,
            "ms",
            "Median measured step time (under the profiler), on the 1-GPU row where the scenario is the trace as recorded and the trace has no collectives (a multi-GPU trace's steps are not a one-GPU time); else null.",
        ),
        req("iters_per_s", Float64, "1/s", "1000 / iteration_ms."),
        req(
            "speedup",
            Float64,
            "",
            "Samples/s relative to one GPU at the same per-GPU batch: num_gpus * (one-GPU iteration time) / iteration_ms.",
        ),
        opt(
            "gradient_bytes",
            Float64,
            "bytes",
            "Bytes all-reduced per iteration (see `tracecast predict --help`).",
        ),
        opt(
            "gradient_source",
            Utf8,
            "",
            "Where `gradient_bytes` came from: `flag` (--gradient-bytes), `optimizer inputs` (the median optimizer operator's total first-input bytes), `collectives` (the trace's own collective bytes).",
        ),
        req(
            "allreduce_ms",
            Float64,
            "ms",
            "Ring all-reduce time of the gradients; 0 at one GPU.",
        ),
        req(
            "exposed_allreduce_ms",
            Float64,
            "ms",
            "The part of it not hidden behind the backward pass.",
        ),
        req(
            "backward_ms",
            Float64,
            "ms",
            "Predicted time of the backward-phase windows at one GPU.",
        ),
    ],
};

pub const PRICED_TRANSFORMER: TableDef = TableDef {
    name: "priced_transformer",
    // 2: `model_state_gb` and `gpu_memory_gb` (2026-11-25).
    version: 2,
    doc: "`tracecast ops price` output (`--format csv`, and `priced.csv` under `--out`): one row per GPU, \
          batch size per GPU and data-parallel GPU count of a transformer priced from its Hugging Face \
          configuration. Device time: no data loading or host time; operators do not overlap.",
    columns: &[
        req("model", Utf8, "", "The configuration file's stem."),
        req(
            "gpu",
            Utf8,
            "",
            "Hardware profile (or spec sheet) the row is priced on.",
        ),
        req("batch_size", Int64, "samples", "Sequences per GPU."),
        req("num_gpus", Int64, "count", "Data-parallel GPUs."),
        req("seqlen", Int64, "tokens", "Tokens per sequence."),
        req(
            "mode",
            Utf8,
            "",
            "`train` (forward, backward, optimizer step) or `inf` (forward only).",
        ),
        req("forward_ms", Float64, "ms", "Forward pass on one GPU."),
        req(
            "backward_ms",
            Float64,
            "ms",
            "Backward pass on one GPU; 0 in inference.",
        ),
        req(
            "optimizer_ms",
            Float64,
            "ms",
            "Optimizer step on one GPU (`--optimizer`); 0 in inference or with `none`.",
        ),
        req(
            "allreduce_ms",
            Float64,
            "ms",
            "Ring all-reduce of the gradients (4 bytes a parameter); 0 at one GPU.",
        ),
        req(
            "exposed_allreduce_ms",
            Float64,
            "ms",
            "The part of it not hidden behind the backward pass.",
        ),
        req(
            "iteration_ms",
            Float64,
            "ms",
            "forward_ms + backward_ms + optimizer_ms + exposed_allreduce_ms.",
        ),
        req(
            "samples_per_s",
            Float64,
            "1/s",
            "Sequences per second over all the GPUs.",
        ),
        req("tokens_per_s", Float64, "1/s", "samples_per_s x seqlen."),
        req("gemm_ms", Float64, "ms", "Of forward and backward: matrix products."),
        req("conv_ms", Float64, "ms", "Of forward and backward: convolutions."),
        req(
            "elementwise_ms",
            Float64,
            "ms",
            "Of forward and backward: element-wise operations, autocast's casts included (`--precision`).",
        ),
        req(
            "norm_ms",
            Float64,
            "ms",
            "Of forward and backward: layer and batch norms.",
        ),
        req("softmax_ms", Float64, "ms", "Of forward and backward: softmaxes."),
        req(
            "reduction_ms",
            Float64,
            "ms",
            "Of forward and backward: reductions and pools.",
        ),
        req(
            "gather_ms",
            Float64,
            "ms",
            "Of forward and backward: embedding lookups and gathers.",
        ),
        req(
            "copy_ms",
            Float64,
            "ms",
            "Of forward and backward: copies (`contiguous`, `clone`, `cat`).",
        ),
        req(
            "model_state_gb",
            Float64,
            "GB",
            "Float32 weights, and in training their gradients and the optimizer's state, on each GPU \
             (data parallelism replicates them); activations come on top.",
        ),
        opt(
            "gpu_memory_gb",
            Float64,
            "GB",
            "The GPU's memory as its profile or spec sheet gives it; a `model_state_gb` above it does not fit.",
        ),
    ],
};

pub const TABLES: [&TableDef; 3] = [&PREDICTED_STEPS, &PREDICTED_TRACES, &PRICED_TRANSFORMER];

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use clap::Args;
use tracecast_pipeline::{PredictInput, PredictJob, TraceFacts, predict};
use tracecast_predict::scaling::{DEFAULT_GPUS_PER_NODE, DEFAULT_LATENCY_S, DEFAULT_NETWORK_GBS};
use tracecast_predict::{DEFAULT_PROFILER_OVERHEAD_US, HalfType, IdleGaps, ScalingOptions, StepBase, Tf32};

use crate::progress::Ui;

/// Predict iteration time and throughput with a trained model.
///
/// Input: one trace file (--trace: ingested and featurized on the fly), a
/// lake (--lake: featurized with the model's W and S), or a feature table
/// already built with them (--features). Each step's time is the sum of its
/// windows' times plus the step's remainder (CPU time at its edges, kept as
/// recorded), less the profiler's own host time (--profiler-overhead-us per
/// CPU operator it recorded, never below the step's kernel time): the job
/// runs without the profiler. A window's time on the recorded GPU and batch
/// is its measured time (--base recorded, the default: a trace priced as
/// recorded gives its measured steps back, less the profiler's time, or its
/// kernels' time where that outlasted the CPU's step) or the window model's
/// prediction (--base model, ETS's approach, for checking the model against
/// the recording).
///
/// What-ifs: the trace is priced as recorded; then each kernel moves
/// by the op model's ratio between the recorded and the asked GPU and batch
/// (roofline physics with a learned utilisation, `tracecast ops`), held to
/// what the spec sheets allow (a GPU faster in every figure never makes a
/// kernel slower; more work costs at least its time at the op model's best
/// utilisation for it, at most its proportion). Idle gaps between kernels
/// stay as recorded, but on the recorded machine (its GPU or one no faster)
/// kernels that grow fill the waits their host left before its next launch,
/// as a replay of the step's launches says (--idle none drops every gap: a
/// host that keeps the GPU fed). The host time fetching the batch (the
/// profiler's `enumerate(DataLoader)` spans) follows the batch size. A step
/// takes at least its host's own time, the recorded step less its runtime
/// calls' waits on the GPU, on the recorded GPU (another batch size or
/// precision: the same machine) and on one no faster in any figure, and
/// that times the step's speed-up on a faster GPU (steps.csv `host_ns`): a
/// host-bound step stays host-bound, and under --precision its host also
/// runs autocast's casts. A note says how much kernel time was moved by
/// operator shapes and how much by kernel family and recorded time alone.
/// Float32 convolutions run on TF32 tensor cores where the asked GPU has
/// them, as PyTorch does by default, unless the trace ran in strict float32
/// on a GPU that had them (--tf32).
///   --gpu NAME        price the trace on another GPU (a hardware profile:
///                     fixtures/hardware, e.g. H100, a100-sxm4-40gb, "Tesla T4";
///                     or a spec-sheet file in NeuSight's device_configs
///                     JSON format)
///   --batch-size N    another batch size per GPU: the operators' FLOPs,
///                     bytes, first-input sizes and grids of the forward and
///                     backward passes scale by N / recorded batch (the
///                     recorded batch comes from --trace-batch-size, --labels
///                     or the collector's manifest beside the --trace);
///                     optimizer work and collectives do not scale
///   --precision bf16  the run under torch.autocast in 16 bits: matrix
///                     work on 16-bit tensor cores on inputs cast from
///                     float32 (the casts priced), softmax, norms and
///                     losses in float32, other kernels in their inputs'
///                     type, those that gain nothing from 16 bits
///                     (depthwise convolutions, pooling, broadcasts) at
///                     measured ratios; the optimizer step and collectives
///                     as recorded
///   --gpus 1,2,4,8    data-parallel GPU counts: one-GPU time (the steps
///                     less their own collectives) plus the ring all-reduce
///                     of the gradients (--gradient-bytes, else the bytes
///                     the optimizer updates, else the trace's collectives)
///                     over the GPU link inside a node and --network-gbs
///                     across nodes, less the part hidden behind the backward
///                     pass (--overlap)
///
/// A step's remainder (CPU time at its edges) is kept as recorded but for its
/// data-loader time under --batch-size; where the GPU work outlasted the
/// CPU's step (the host ran ahead), the step takes at least its kernels'
/// time. A trace's iteration time is its median step.
///
/// OUT gets steps.parquet/.csv (per step), traces.parquet/.csv (per trace and
/// GPU count) and, for traces with a known batch size, throughput.csv (the
/// planner's plan_throughput table: global batch = batch x N, run on every
/// count that divides it) and elasticflow/<gpu>/<model>.csv (ElasticFlow's
/// layout). Columns: schemas/TABLES.md.
///
/// Without --model, the built-in window model prices windows the trace has
/// no measured time for (and every window under --base model): trained on
/// the real public traces tracecast is tested on (13 runs: ResNet, DLRM,
/// linear and CNN jobs on V100, A100, RTX 2080 Ti, GP100 and MI-series GPUs;
/// its card is train/model/default/model.json). A model trained on your own
/// traces (`tracecast train`) prices yours better.
///
/// Examples:
///   tracecast predict --trace run.pt.trace.json.gz --gpu H100
///   tracecast predict --model model --trace run.json.gz --trace-batch-size 32 --gpu H100 --batch-size 64 --gpus 1,2,4,8 --out pred-h100
///   tracecast predict --model model --lake lake --labels labels.csv --gpus 1,8,16 --out pred-lake
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct PredictArgs {
    /// The model directory (`tracecast train --out`) [default: the built-in window model].
    #[arg(long)]
    model: Option<PathBuf>,
    /// A window's time on the recorded GPU and batch: its measured time
    /// (`recorded`), or the window model's prediction (`model`).
    #[arg(long, value_enum, default_value_t = BaseArg::Recorded)]
    base: BaseArg,
    /// Idle gaps between a step's kernels: as `recorded` (the same host
    /// launching them: a faster GPU waits for it at least as long, and a
    /// step takes at least its host's own time; on the recorded machine,
    /// longer kernels fill the waits before their host's next launch), or `none`
    /// (a host that keeps the GPU fed: the step's GPU work is its kernels'
    /// time alone; data loading at the step's edges stays).
    #[arg(long, value_enum, default_value_t = IdleArg::Recorded)]
    idle: IdleArg,
    /// One trace file (Kineto JSON, .gz, .zst, or a .tar.gz of ranks).
    #[arg(long, group = "input")]
    trace: Option<PathBuf>,
    /// A lake: every trace in it.
    #[arg(long, group = "input")]
    lake: Option<PathBuf>,
    /// A feature directory built with the model's W and S.
    #[arg(long, group = "input")]
    features: Option<PathBuf>,
    /// Output directory (created) for the per-step and per-trace tables
    /// (Parquet and CSV) and the throughput table the planner reads
    /// [default: none; the prediction is printed].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Target GPU: a hardware profile's name, alias, file stem or short name
    /// (H100, V100: one profile must match), or a profile / spec-sheet file [default: the recorded GPU].
    #[arg(long)]
    gpu: Option<String>,
    /// Batch size per GPU to predict for [default: the recorded one].
    #[arg(long)]
    batch_size: Option<u32>,
    /// Float32 convolutions and matrix products on TF32 tensor cores, where
    /// a GPU has them (NVIDIA Ampere and later), in the asked run: `auto`
    /// keeps the recorded run's switches where it ran on such a GPU (its
    /// kernel names say which), else PyTorch's defaults; `pytorch` is
    /// PyTorch's defaults (convolutions yes, matrix products no); `on` and
    /// `off` set both.
    #[arg(long, value_enum, default_value_t = Tf32Arg::Auto)]
    tf32: Tf32Arg,
    /// `recorded`: each kernel in its recorded precision; `bf16` or `fp16`:
    /// the asked run under `torch.autocast` in 16 bits. Matrix products and
    /// convolutions run on 16-bit tensor cores where the GPU has them, on
    /// inputs cast from float32 (the casts, which a float32 trace does not
    /// show, are added and priced); autocast's float32 list (softmax, norms,
    /// `pow`, sums, losses) stays float32; other kernels run in their
    /// inputs' type, traced by element count (a transformer's residual
    /// stream stays float32, a convolution net's activations go to 16
    /// bits); the optimizer step stays float32. A product with a dimension
    /// that is not a multiple of 8 (an LM head over GPT-2's 50257 words;
    /// the feature table's `product_alignment`) gains less, as cuBLAS runs
    /// it. Kernels that gain little or nothing from 16-bit bytes keep their
    /// float32 time times a ratio measured on bench/corpus: PyTorch's own
    /// depthwise convolutions (both passes), pooling, broadcasting
    /// arithmetic, and bfloat16's batch norm (slower than cuDNN's float32
    /// one in training); the note says how much kernel time that covers.
    /// The two price alike but for batch norm (fp16 keeps cuDNN's, which
    /// halves its bytes); on GPUs without bfloat16 tensor cores, V100
    /// and T4, PyTorch emulates bfloat16, and a note says so. Scored by
    /// bench/whatif_corpus.py and bench/half_h100.sh.
    #[arg(long, value_parser = ["recorded", "bf16", "fp16"], default_value = "recorded")]
    precision: String,
    /// The batch size per GPU the --trace was recorded with (instead of a labels file).
    #[arg(long, requires = "trace")]
    trace_batch_size: Option<u32>,
    /// Model name of the --trace, for the throughput table [default: its trace id].
    #[arg(long, requires = "trace")]
    trace_model: Option<String>,
    /// Trace labels: trace_id,model,batch_size.
    #[arg(long)]
    labels: Option<PathBuf>,
    /// Data-parallel GPU counts.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    gpus: Vec<u32>,
    #[command(flatten)]
    network: NetworkArgs,
    /// Gradient bytes per iteration, instead of the trace's own estimate.
    #[arg(long)]
    gradient_bytes: Option<f64>,
    /// GPU type name in the throughput tables [default: the profile's name], e.g. A100 to match a cluster spec.
    #[arg(long)]
    gpu_type: Option<String>,
    /// The PyTorch profiler's own host time per CPU operator it recorded,
    /// µs, taken out of each step but never below the step's kernel time:
    /// a host-bound step runs that much faster unprofiled, a GPU-bound one
    /// hid it. The default was fitted on 164 traces of one H100 host
    /// (PyTorch 2.11) against the same runs measured without the profiler
    /// (bench/profiler_overhead.py); a slower host has a larger one. 0
    /// prices every step as profiled.
    #[arg(long, value_name = "US", default_value_t = DEFAULT_PROFILER_OVERHEAD_US)]
    profiler_overhead_us: f64,
    /// Op model for --gpu/--batch-size what-ifs [default: the built-in one, trained on NeuSight's public data].
    #[arg(long, value_name = "FILE")]
    op_model: Option<PathBuf>,
    /// Hardware profiles directory [default: the built-in catalog, fixtures/hardware].
    #[arg(long, value_name = "DIR")]
    hardware: Option<PathBuf>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum BaseArg {
    Recorded,
    Model,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum IdleArg {
    Recorded,
    None,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Tf32Arg {
    Auto,
    Pytorch,
    On,
    Off,
}

/// The all-reduce model's settings, shared by `predict` and `scaling`.
#[derive(Args)]
pub struct NetworkArgs {
    /// Share of the backward pass that can hide the all-reduce (0..1).
    #[arg(long, default_value_t = 0.5)]
    pub overlap: f64,
    /// Network bandwidth per node once the ring spans nodes, GB/s.
    #[arg(long, default_value_t = DEFAULT_NETWORK_GBS)]
    pub network_gbs: f64,
    /// GPUs per node: rings up to this size stay on the GPU link.
    #[arg(long, default_value_t = DEFAULT_GPUS_PER_NODE)]
    pub gpus_per_node: u32,
    /// Latency per ring step, µs.
    #[arg(long, default_value_t = DEFAULT_LATENCY_S * 1e6)]
    pub latency_us: f64,
}

impl NetworkArgs {
    /// The multi-GPU options on these GPU counts, gradients sized from the input.
    pub fn scaling(&self, gpu_counts: Vec<u32>) -> ScalingOptions {
        ScalingOptions {
            gpu_counts,
            overlap: self.overlap,
            network_gbs: self.network_gbs,
            gpus_per_node: self.gpus_per_node,
            latency_s: self.latency_us / 1e6,
            gradient_bytes: None,
        }
    }

    pub fn check(&self) -> anyhow::Result<()> {
        if !(0.0..=1.0).contains(&self.overlap) {
            bail!("--overlap {} must be between 0 and 1", self.overlap);
        }
        if self.network_gbs.is_nan() || self.network_gbs <= 0.0 || self.gpus_per_node == 0 || self.latency_us < 0.0 {
            bail!("--network-gbs must be positive, --gpus-per-node at least 1 and --latency-us not negative");
        }
        Ok(())
    }
}

/// The 16-bit type a `--precision` value asks for; `None` for the
/// recorded precision or float32.
pub(crate) fn half_type(precision: &str) -> Option<HalfType> {
    match precision {
        "bf16" => Some(HalfType::BFloat16),
        "fp16" => Some(HalfType::Float16),
        _ => None,
    }
}

pub fn run(args: PredictArgs, ui: &Ui) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    args.network.check()?;
    if args.gpus.is_empty() || args.gpus.contains(&0) {
        bail!("--gpus must list GPU counts of at least 1");
    }
    if !(args.profiler_overhead_us.is_finite() && args.profiler_overhead_us >= 0.0) {
        bail!("--profiler-overhead-us must be 0 or more microseconds");
    }
    let input = match (&args.trace, &args.lake, &args.features) {
        (_, _, Some(dir)) => PredictInput::Features(dir.clone()),
        (Some(trace), _, _) => PredictInput::Trace(trace.clone()),
        (None, Some(lake), None) => PredictInput::Lake(lake.clone()),
        (None, None, None) => bail!("give the input: --trace FILE, --lake DIR or --features DIR"),
    };
    let bar = ui.bar(0, "windows from GPU items", false);
    let progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let outcome = predict(&PredictJob {
        model_dir: args.model.as_deref(),
        op_model_file: args.op_model.as_deref(),
        hardware_dir: args.hardware.as_deref(),
        input,
        trace_facts: TraceFacts {
            batch_size: args.trace_batch_size,
            model: args.trace_model.clone(),
        },
        labels_file: args.labels.as_deref(),
        base: match args.base {
            BaseArg::Recorded => StepBase::Recorded,
            BaseArg::Model => StepBase::Model,
        },
        idle: match args.idle {
            IdleArg::Recorded => IdleGaps::Recorded,
            IdleArg::None => IdleGaps::None,
        },
        gpu: args.gpu.as_deref(),
        batch_size: args.batch_size,
        tf32: match args.tf32 {
            Tf32Arg::Auto => Tf32::Auto,
            Tf32Arg::Pytorch => Tf32::PyTorchDefault,
            Tf32Arg::On => Tf32::On,
            Tf32Arg::Off => Tf32::Off,
        },
        half: half_type(&args.precision),
        scaling: ScalingOptions {
            gradient_bytes: args.gradient_bytes,
            ..args.network.scaling(args.gpus.clone())
        },
        gpu_type: args.gpu_type.clone(),
        profiler_overhead_us: args.profiler_overhead_us,
        out: args.out.as_deref(),
        progress: &progress,
    });
    bar.finish_and_clear();
    let outcome = outcome?;
    for reason in &outcome.no_windows {
        eprintln!("no windows: {reason}");
    }
    let prediction = &outcome.prediction;
    let seconds = started.elapsed().as_secs_f64();
    let traces = prediction
        .steps
        .iter()
        .map(|s| s.trace_id.as_str())
        .collect::<std::collections::HashSet<_>>()
        .len();
    println!(
        "predicted {} steps of {traces} trace{} in {seconds:.2} s ({:.1} traces/s), model W={} S={}",
        prediction.steps.len(),
        if traces == 1 { "" } else { "s" },
        traces as f64 / seconds,
        outcome.window,
        outcome.stride
    );
    print_table(prediction);
    for note in &prediction.notes {
        eprintln!("note: {note}");
    }
    match &args.out {
        Some(out) => {
            println!("wrote {}:", out.display());
            for f in &outcome.files {
                println!("  {}", f.display());
            }
        }
        None => eprintln!(
            "note: nothing written (--out DIR writes every step and trace, and the throughput table for the planner)"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

const SHOWN: usize = 20;

/// Per trace and GPU count; `profiled` is the median measured step, under
/// the profiler whose own time the prediction leaves out.
fn print_table(p: &tracecast_predict::Prediction) {
    println!(
        "  {:<16} {:<14} {:<28} {:>6} {:>5} {:>12} {:>12} {:>9}",
        "trace", "model", "GPU", "batch", "GPUs", "iter (ms)", "profiled", "iters/s"
    );
    for t in p.traces.iter().take(SHOWN) {
        println!(
            "  {:<16} {:<14} {:<28} {:>6} {:>5} {:>12.3} {:>12} {:>9.2}",
            t.trace_id,
            t.model.as_deref().unwrap_or("-"),
            truncate(&t.gpu, 28),
            t.batch_size.map_or("-".into(), |b| b.to_string()),
            t.num_gpus,
            t.iteration_ms,
            t.measured_iteration_ms.map_or("-".into(), |m| format!("{m:.3}")),
            t.iters_per_s()
        );
    }
    if p.traces.len() > SHOWN {
        println!("  ... {} more rows in traces.csv", p.traces.len() - SHOWN);
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}

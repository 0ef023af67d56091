//! The predict stage: a trained model and a feature table -> iteration time
//! per step and trace, on the recorded or another GPU, at the recorded or
//! another batch size, on 1..N data-parallel GPUs; and throughput tables
//! for the planner.

mod autocast_trace;
pub mod elasticflow;
mod error;
mod gradients;
mod host;
mod notes;
mod output;
mod physical;
mod replay;
pub mod scaling;
pub mod scaling_check;
mod tf32;
mod transformer;
mod window_rows;

use std::collections::{BTreeMap, HashMap, HashSet};

pub use tracecast_opmodel::HalfType;
use tracecast_opmodel::{GpuSpec, OpModel, bfloat16_emulated_note};
use tracecast_schemas::hardware::{Catalog, HardwareProfile};
use tracecast_train::{Dataset, FeatureTable, Labels, Model, Scenario, StepRow, batch_scale, build_dataset};

pub use error::PredictError;
pub use gradients::GradientSource;
use host::HostFloor;
pub use output::{priced_csv, write_outputs, write_price_outputs, write_throughput};
pub use physical::Coverage;
use scaling::Interconnect;
pub use tf32::Tf32;
pub use transformer::{TransformerJob, TransformerPrediction, TransformerRow, price_transformer};

/// Multi-GPU options (see [`scaling`]).
#[derive(Clone, Debug)]
pub struct ScalingOptions {
    pub gpu_counts: Vec<u32>,
    /// Fraction of the backward pass that can hide the all-reduce.
    pub overlap: f64,
    pub network_gbs: f64,
    pub gpus_per_node: u32,
    pub latency_s: f64,
    /// Overrides the gradient size read off each trace.
    pub gradient_bytes: Option<f64>,
}

/// What a window's time on the recorded GPU and batch is taken from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StepBase {
    /// The window's measured time where the trace recorded one (Habitat's
    /// choice: what-ifs move each kernel from its measured time), the window
    /// model's prediction for windows without one.
    #[default]
    Recorded,
    /// The window model's prediction everywhere (ETS's approach): for
    /// checking the model, or pricing tables without measured times.
    Model,
}

/// Idle time inside a step's GPU work (the gaps between its kernels) in a
/// prediction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IdleGaps {
    /// As recorded: the host that launched the kernels launches them again
    /// as it did, so a gap the GPU waited through stays (a faster GPU waits
    /// at least as long), and a step takes at least its host's own time
    /// ([`host`]). On the recorded machine, kernels that grow fill the waits
    /// before their host's next launch ([`replay`]).
    #[default]
    Recorded,
    /// None: the GPU kept fed (a host and software stack that keep ahead of
    /// it), the step's GPU work being its kernels' time alone. The host
    /// time at the step's edges (data loading) stays as recorded.
    None,
}

pub struct PredictRequest<'a> {
    pub model: &'a Model,
    pub base: StepBase,
    pub idle: IdleGaps,
    /// Moves kernels between GPUs and batch sizes (the shipped one, or
    /// `tracecast ops train`'s); a what-if without one is refused.
    pub op_model: Option<&'a OpModel>,
    pub table: &'a FeatureTable,
    pub labels: &'a Labels,
    pub catalog: &'a Catalog,
    /// Price on this GPU instead of the recorded one.
    pub gpu: Option<&'a HardwareProfile>,
    /// Batch size per GPU instead of the recorded one.
    pub batch_size: Option<u32>,
    /// Which float32 matrix work runs on TF32 tensor cores in a what-if.
    pub tf32: Tf32,
    /// The asked run in mixed precision (`torch.autocast` to bfloat16 or
    /// float16): its float32 kernels run in 16 bits, on 16-bit tensor cores
    /// where the GPU has them; the optimizer step keeps float32. `None`:
    /// each kernel as recorded.
    pub half: Option<HalfType>,
    /// Per trace id, whether its kernels ran on TF32 tensor cores (read
    /// from the lake); None where no lake was read.
    pub used_tf32: Option<&'a HashMap<String, bool>>,
    pub scaling: ScalingOptions,
    /// GPU type name in the throughput tables [default: the profile's name].
    pub gpu_type: Option<String>,
    /// The profiler's own host time per CPU operator it recorded, µs, taken
    /// out of each step (0: every step priced with the profiler's cost kept).
    pub profiler_overhead_us: f64,
}

/// `PredictRequest::profiler_overhead_us` unless asked otherwise: fitted on
/// 164 PyTorch 2.11 traces of one H100 host against the same runs measured
/// without the profiler (`bench/profiler_overhead.py`; fitted on one model
/// family alone, 2.5 µs on the language models and 3.5 on the vision ones,
/// it holds on the other).
pub const DEFAULT_PROFILER_OVERHEAD_US: f64 = 3.5;

/// Whether an explicit --tf32 or --precision asks for a run other than the
/// recorded one, even on its own GPU and batch.
pub fn asks_another_run(half: Option<HalfType>, tf32: Tf32) -> bool {
    half.is_some() || tf32 != Tf32::Auto
}

impl PredictRequest<'_> {
    /// [`asks_another_run`] of this request.
    pub fn asks_another_run(&self) -> bool {
        asks_another_run(self.half, self.tf32)
    }
}

#[derive(Clone, Debug)]
pub struct StepPrediction {
    pub trace_id: String,
    pub step_id: i64,
    pub gpu: String,
    pub batch_size: Option<u32>,
    pub predicted_ns: f64,
    pub predicted_gpu_span_ns: f64,
    /// The part of the span in kernels, idle gaps left out.
    pub predicted_busy_ns: f64,
    /// The profiler's host time taken out of the step.
    pub profiler_overhead_ns: f64,
    /// The host's time the step takes at least ([`host`]); None under
    /// `IdleGaps::None`, or on another GPU where the recorded one has no
    /// hardware profile.
    pub host_ns: Option<f64>,
    /// Under the profiler.
    pub measured_ns: Option<i64>,
    pub windows: u64,
}

#[derive(Clone, Debug)]
pub struct TracePrediction {
    pub trace_id: String,
    pub model: Option<String>,
    pub recorded_gpu: Option<String>,
    pub gpu: String,
    pub batch_size: Option<u32>,
    pub num_gpus: u32,
    pub steps: u64,
    pub iteration_ms: f64,
    /// The same trace's iteration time at one GPU (the speedup's base).
    pub one_gpu_ms: f64,
    pub measured_iteration_ms: Option<f64>,
    pub gradient_bytes: Option<f64>,
    pub gradient_source: Option<GradientSource>,
    pub allreduce_ms: f64,
    pub exposed_allreduce_ms: f64,
    pub backward_ms: f64,
}

impl TracePrediction {
    pub fn iters_per_s(&self) -> f64 {
        1e3 / self.iteration_ms
    }

    /// Samples/s relative to one GPU at the same per-GPU batch.
    pub fn speedup(&self) -> f64 {
        f64::from(self.num_gpus) * self.one_gpu_ms / self.iteration_ms
    }
}

/// One row of the planner's throughput table (`plan_throughput`).
#[derive(Clone, Debug)]
pub struct ThroughputRow {
    pub job_type: String,
    pub gpu_type: String,
    pub global_batch: u64,
    pub num_gpus: u32,
    pub iters_per_s: f64,
}

pub struct Prediction {
    pub steps: Vec<StepPrediction>,
    /// One row per trace and GPU count; the speedup column is computed on output.
    pub traces: Vec<TracePrediction>,
    pub throughput: Vec<ThroughputRow>,
    /// What could not be predicted, and why.
    pub notes: Vec<String>,
}

/// One-GPU figures of a trace under a scenario: mean step time and backward time, ns.
#[derive(Clone, Copy, Debug, Default)]
struct OneGpu {
    step_ns: f64,
    backward_ns: f64,
}

/// A step's predicted time, and the profiler's host time taken out of it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct StepTime {
    ns: f64,
    profiler_ns: f64,
}

/// A step's predicted time from its GPU span (its windows' times, idle gaps
/// included), its GPU busy time (kernels alone), its remainder (CPU time
/// at the step's edges: as recorded but for its data-loader time, which
/// follows the batch size) and the profiler's cost of the CPU operators it
/// recorded in the step.
///
/// A negative remainder means the host ran ahead of the GPU, as in a short
/// profile that starts with an empty launch queue; a run cannot stay ahead
/// of its GPU for long, so such a step takes at least its kernels' time.
/// (An H100 ResNet-50 profile at batch 64: 56.9 ms CPU steps, 70.5 ms of
/// kernels, 72.9 ms a step measured without the profiler.) Busy rather than
/// span, because a profile's step can hold an idle gap of the profiler's
/// own (37.5 ms in one H100 step).
///
/// The profiler's cost is host time: a host-bound step runs that much
/// faster without it (most small-batch and 16-bit steps of
/// `bench/corpus`), a GPU-bound one hides it. So it comes off the step but
/// never below the kernels' time, which the profiler does not slow.
fn step_time(span_ns: f64, busy_ns: f64, remainder_ns: f64, profiler_ns: f64) -> StepTime {
    let profiled = if remainder_ns >= 0.0 {
        span_ns + remainder_ns
    } else {
        (span_ns + remainder_ns).max(busy_ns)
    };
    let ns = (profiled - profiler_ns).max(busy_ns).min(profiled);
    StepTime {
        ns,
        profiler_ns: profiled - ns,
    }
}

/// A step's window predictions added up.
#[derive(Clone, Copy, Debug, Default)]
struct StepSum {
    span_ns: f64,
    /// The part of `span_ns` in kernels, gaps left out: measured (and moved
    /// by a what-if) under `StepBase::Recorded`, the span itself under
    /// `StepBase::Model` (the model does not price gaps apart).
    busy_ns: f64,
    /// The part of `span_ns` in backward-phase items.
    backward_ns: f64,
    /// The part of `span_ns` in collectives: on one GPU there are none.
    communication_ns: f64,
    windows: u64,
    /// How much the step's data-loader time (part of its recorded remainder)
    /// changes at the scenario's batch: it fetches that many more samples.
    loader_change_ns: f64,
    /// The share of the host's own time below which the step is not
    /// priced ([`host`]): 1 on the recorded GPU or a slower one, the GPU's
    /// own speed-up on a faster one; None where no floor applies.
    host_scale: Option<f64>,
    /// CPU operators the scenario adds to the step's host (autocast's
    /// casts), each taken to cost the host what its own operators do on
    /// average.
    host_added_ops: f64,
    /// The step's kernel time as recorded.
    recorded_busy_ns: f64,
}

impl StepSum {
    /// The GPU work as its kernels alone.
    fn without_idle_gaps(&mut self) {
        self.shrink_span_to(self.busy_ns);
    }

    /// The GPU span cut to `span_ns` where that is shorter (idle gaps
    /// gone); its backward and collective parts shrink in proportion.
    fn shrink_span_to(&mut self, span_ns: f64) {
        if self.span_ns > 0.0 {
            let kept = (span_ns.max(0.0) / self.span_ns).min(1.0);
            self.backward_ns *= kept;
            self.communication_ns *= kept;
        }
        self.span_ns = span_ns.max(0.0).min(self.span_ns);
    }

    /// The step's remainder under the scenario.
    fn remainder_ns(&self, step: &StepRow) -> f64 {
        step.remainder_ns as f64 + self.loader_change_ns
    }

    /// The host's time the step takes at least, where a floor applies.
    fn host_ns(&self, step: &StepRow, profiler_overhead_us: f64) -> Option<f64> {
        self.host_scale.map(|share| {
            let own = host::own_time_ns(step, profiler_ns(step, profiler_overhead_us), self.loader_change_ns);
            // Only a host that set the recorded step's pace tells what its
            // operators cost.
            let added = if own >= self.recorded_busy_ns {
                self.host_added_ops
            } else {
                0.0
            };
            share * host::with_added_ops(own, step.cpu_op_count, added)
        })
    }

    /// The step's predicted time, its collectives left out where
    /// `without_communication` (a one-GPU time).
    fn time(&self, step: &StepRow, profiler_overhead_us: f64, without_communication: bool) -> StepTime {
        let communication = if without_communication {
            self.communication_ns
        } else {
            0.0
        };
        let profiler = profiler_ns(step, profiler_overhead_us);
        let priced = step_time(
            self.span_ns - communication,
            (self.busy_ns - communication).max(0.0),
            self.remainder_ns(step),
            profiler,
        );
        match self.host_ns(step, profiler_overhead_us) {
            Some(host) => host::floored(priced, host, profiler),
            None => priced,
        }
    }
}

/// The profiler's cost of the CPU operators it recorded in `step`, ns.
fn profiler_ns(step: &StepRow, profiler_overhead_us: f64) -> f64 {
    step.cpu_op_count as f64 * profiler_overhead_us * 1e3
}

/// Per (trace index, step id).
type StepSums = HashMap<(u32, i64), StepSum>;

/// Prices every window of the table under `scenario`: the window model on
/// the trace as recorded, then, for a what-if, each window's central kernels
/// moved by the op model's ratio between the recorded and the asked
/// configuration.
fn price(req: &PredictRequest<'_>, scenario: Scenario<'_>) -> Result<(Dataset, StepSums, Vec<Coverage>), PredictError> {
    let (data, mut per_step, coverage) = price_steps(req, scenario.gpu, scenario.batch_size, scenario.only_trace)?;
    if req.idle == IdleGaps::None {
        return Ok((data, per_step, coverage));
    }
    let floors: Vec<HostFloor> = data
        .traces
        .iter()
        .map(|info| host::floor(scenario.gpu, info.recorded_gpu.as_deref(), req.catalog))
        .collect();
    // A faster GPU's floor is the host's time over the step's speed-up
    // from the recorded GPU under the same scenario, priced here.
    let on_recorded_gpu = if floors.contains(&HostFloor::ScaledByGpu) {
        Some(price_steps(req, None, scenario.batch_size, scenario.only_trace)?.1)
    } else {
        None
    };
    // Autocast's casts, counted over a trace's steps, shared evenly.
    let mut steps_of = vec![0.0_f64; coverage.len()];
    for (trace, _) in per_step.keys() {
        steps_of[*trace as usize] += 1.0;
    }
    for (key, e) in per_step.iter_mut() {
        let trace = key.0 as usize;
        e.host_added_ops = coverage[trace].cast_host_ops / steps_of[trace];
        e.host_scale = match floors[trace] {
            HostFloor::None => None,
            HostFloor::Whole => Some(1.0),
            HostFloor::ScaledByGpu => on_recorded_gpu
                .as_ref()
                .and_then(|sums| sums.get(key))
                .filter(|r| r.busy_ns > 0.0)
                .map(|r| (e.busy_ns / r.busy_ns).min(1.0)),
        };
    }
    Ok((data, per_step, coverage))
}

/// [`price`] without the host's floor.
fn price_steps(
    req: &PredictRequest<'_>,
    gpu: Option<&HardwareProfile>,
    batch_size: Option<u32>,
    only_trace: Option<&str>,
) -> Result<(Dataset, StepSums, Vec<Coverage>), PredictError> {
    let scenario = Scenario {
        gpu,
        batch_size,
        only_trace,
    };
    let recorded = Scenario {
        gpu: None,
        batch_size: None,
        only_trace: scenario.only_trace,
    };
    let mut data = build_dataset(
        req.table,
        &req.model.card.features,
        req.labels,
        req.catalog,
        recorded,
        false,
    )?;
    let (preds, measured) = base_times(req, &data)?;
    let mut scales = vec![1.0; data.traces.len()];
    let (deltas, coverage) = if scenario.gpu.is_some() || scenario.batch_size.is_some() || req.asks_another_run() {
        scales = relabel(&mut data, &scenario, req.table)?;
        let target = scenario
            .gpu
            .map(GpuSpec::from_profile)
            .transpose()
            .map_err(PredictError::TargetGpu)?;
        let op_model = req.op_model.ok_or_else(|| PredictError::Input {
            path: req.table.dir.clone(),
            reason: "a GPU, batch-size or precision what-if needs an op model".into(),
        })?;
        physical::window_deltas(
            req.table,
            &data,
            op_model,
            req.catalog,
            physical::Asked {
                gpu: target.as_ref(),
                tf32: req.tf32,
                half: req.half,
                used_tf32: req.used_tf32,
            },
            &scales,
            scenario.only_trace,
        )?
    } else {
        (
            physical::Deltas {
                per_window: vec![0.0; preds.len()],
                ..physical::Deltas::default()
            },
            vec![Coverage::default(); data.traces.len()],
        )
    };
    let mut per_step = StepSums::new();
    // Steps with a window the model priced: no recorded timeline to replay.
    let mut modelled = HashSet::new();
    for (i, p) in preds.iter().enumerate() {
        let key = (data.windows.trace[i], data.windows.step[i]);
        if !measured[i] {
            modelled.insert(key);
        }
        let p = (p + deltas.per_window[i]).max(0.0);
        let e = per_step.entry(key).or_default();
        e.span_ns += p;
        e.recorded_busy_ns += if measured[i] { data.windows.busy_ns[i] } else { preds[i] };
        e.busy_ns += if measured[i] {
            (data.windows.busy_ns[i] + deltas.per_window[i]).max(0.0)
        } else {
            p
        };
        e.backward_ns += p * data.windows.backward_share[i];
        e.communication_ns += p * data.windows.communication_share[i];
        e.windows += 1;
    }
    for s in &data.steps {
        if let Some(t) = data.trace_index(&s.trace_id)
            && let Some(e) = per_step.get_mut(&(t as u32, s.step_id))
        {
            e.loader_change_ns = s.dataloader_ns as f64 * (scales[t] - 1.0);
        }
    }
    if req.idle == IdleGaps::None {
        per_step.values_mut().for_each(StepSum::without_idle_gaps);
    } else if !deltas.per_item.is_empty() {
        replay_gaps(req, &scenario, &data, &deltas.per_item, &modelled, &mut per_step)?;
    }
    Ok((data, per_step, coverage))
}

/// The idle gaps of a what-if's steps on the machine they were recorded
/// on (the recorded GPU or one no faster: the host's floor is whole), as a
/// replay of each step's launches says ([`replay`]); other GPUs' hosts are
/// not the recorded one's, and their gaps stay as recorded.
fn replay_gaps(
    req: &PredictRequest<'_>,
    scenario: &Scenario<'_>,
    data: &Dataset,
    per_item: &HashMap<(usize, usize), f64>,
    modelled: &HashSet<(u32, i64)>,
    per_step: &mut StepSums,
) -> Result<(), PredictError> {
    let same_host: Vec<bool> = data
        .traces
        .iter()
        .map(|info| host::floor(scenario.gpu, info.recorded_gpu.as_deref(), req.catalog) == HostFloor::Whole)
        .collect();
    let steps: HashMap<(u32, i64), &StepRow> = data
        .steps
        .iter()
        .filter_map(|s| data.trace_index(&s.trace_id).map(|t| ((t as u32, s.step_id), s)))
        .collect();
    let items = replay::step_items(req.table, data, scenario.only_trace, &|t| same_host[t])?;
    for (key, items) in items {
        let (Some(e), Some(step)) = (per_step.get_mut(&key), steps.get(&key)) else {
            continue;
        };
        if modelled.contains(&key) || step.dur_ns <= 0 {
            continue;
        }
        // The host's own share of its recorded time: the profiler's cost
        // and the waits on the GPU out, as its floor has them.
        let own = host::own_time_ns(step, profiler_ns(step, req.profiler_overhead_us), 0.0);
        let host_share = (own / step.dur_ns as f64).clamp(0.0, 1.0);
        let recorded: Vec<replay::RecordedItem> = items.iter().map(|s| s.recorded).collect();
        let delta: Vec<f64> = items
            .iter()
            .map(|s| per_item.get(&s.at).copied().unwrap_or(0.0))
            .collect();
        let change = replay::gap_change_ns(&recorded, &delta, host_share);
        e.shrink_span_to(e.span_ns + change);
    }
    Ok(())
}

/// Whether pricing on `gpu` (None: the recorded one) keeps the GPU a trace
/// was recorded on (`recorded`, as the trace names it).
fn is_recorded_gpu(gpu: Option<&HardwareProfile>, recorded: Option<&str>, catalog: &Catalog) -> bool {
    gpu.is_none_or(|g| {
        recorded
            .and_then(|r| catalog.resolve(r))
            .is_some_and(|r| r.name == g.name)
    })
}

/// Each window's time on the recorded GPU and batch, per `req.base`, and
/// whether it is the measured one.
fn base_times(req: &PredictRequest<'_>, data: &Dataset) -> Result<(Vec<f64>, Vec<bool>), PredictError> {
    let targets = &data.windows.target_ns;
    let measured: Vec<bool> = targets
        .iter()
        .map(|&t| req.base == StepBase::Recorded && t.is_finite() && t >= 0.0)
        .collect();
    if measured.iter().all(|&m| m) {
        return Ok((targets.clone(), measured));
    }
    let mut times = req.model.regressor.predict(&data.windows)?;
    for ((time, &target), &m) in times.iter_mut().zip(targets).zip(&measured) {
        if m {
            *time = target;
        }
    }
    Ok((times, measured))
}

/// The traces of a dataset built as recorded, relabelled with the
/// scenario's GPU and batch size; returns each trace's batch ratio.
fn relabel(data: &mut Dataset, scenario: &Scenario<'_>, table: &FeatureTable) -> Result<Vec<f64>, PredictError> {
    let mut scales = Vec::with_capacity(data.traces.len());
    for info in &mut data.traces {
        if let Some(gpu) = scenario.gpu {
            info.priced_gpu = Some(gpu.name.clone());
        }
        let scale = batch_scale(&info.trace_id, scenario.batch_size, info.label.batch_size, &table.dir)?;
        if scenario.batch_size.is_some() {
            info.batch_size = scenario.batch_size;
        }
        scales.push(scale);
    }
    Ok(scales)
}

/// Median one-GPU step and backward time per trace: the steps without their
/// collectives (a multi-GPU trace's own all-reduce is replaced by the
/// model's). A median, because a profile's first step (profiler start-up,
/// an emptied launch queue) or a checkpointing step can be far from the rest.
fn one_gpu(data: &Dataset, per_step: &StepSums, profiler_overhead_us: f64) -> Vec<OneGpu> {
    let mut acc: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); data.traces.len()];
    for s in &data.steps {
        let Some(t) = data.trace_index(&s.trace_id) else {
            continue;
        };
        let Some(sum) = per_step.get(&(t as u32, s.step_id)) else {
            continue;
        };
        acc[t].0.push(sum.time(s, profiler_overhead_us, true).ns);
        acc[t].1.push(sum.backward_ns);
    }
    acc.into_iter()
        .map(|(steps, backward)| OneGpu {
            step_ns: median(steps),
            backward_ns: median(backward),
        })
        .collect()
}

/// The median of `values` (the mean of the middle two for an even count); 0 when empty.
fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

pub fn predict(req: &PredictRequest<'_>) -> Result<Prediction, PredictError> {
    req.model.check_table(req.table)?;
    if !(req.profiler_overhead_us.is_finite() && req.profiler_overhead_us >= 0.0) {
        return Err(PredictError::Input {
            path: req.table.dir.clone(),
            reason: format!(
                "the profiler's overhead per CPU operator must be 0 or more microseconds, not {}",
                req.profiler_overhead_us
            ),
        });
    }
    let scenario = Scenario {
        gpu: req.gpu,
        batch_size: req.batch_size,
        only_trace: None,
    };
    let (data, per_step, coverage) = price(req, scenario)?;
    let mut notes: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    let as_recorded = |t: usize| {
        let info = &data.traces[t];
        is_recorded_gpu(req.gpu, info.recorded_gpu.as_deref(), req.catalog)
            && req.batch_size.is_none_or(|b| info.label.batch_size == Some(b))
    };
    let gpu_name = |t: usize| {
        data.traces[t]
            .priced_gpu
            .clone()
            .unwrap_or_else(|| "unknown GPU".into())
    };

    let mut steps = Vec::new();
    let mut measured: Vec<Vec<f64>> = vec![Vec::new(); data.traces.len()];
    let mut has_collectives = vec![false; data.traces.len()];
    for s in &data.steps {
        let Some(t) = data.trace_index(&s.trace_id) else {
            continue;
        };
        let Some(sum) = per_step.get(&(t as u32, s.step_id)) else {
            continue;
        };
        let measured_ns = as_recorded(t).then_some(s.dur_ns);
        if let Some(m) = measured_ns {
            measured[t].push(m as f64);
        }
        has_collectives[t] |= sum.communication_ns > 0.0;
        let time = sum.time(s, req.profiler_overhead_us, false);
        steps.push(StepPrediction {
            trace_id: s.trace_id.clone(),
            step_id: s.step_id,
            gpu: gpu_name(t),
            batch_size: data.traces[t].batch_size,
            predicted_ns: time.ns,
            profiler_overhead_ns: time.profiler_ns,
            host_ns: sum.host_ns(s, req.profiler_overhead_us),
            predicted_gpu_span_ns: sum.span_ns,
            predicted_busy_ns: sum.busy_ns,
            measured_ns,
            windows: sum.windows,
        });
    }
    let step_counts = {
        let mut c = vec![0u64; data.traces.len()];
        for s in &steps {
            c[data.trace_index(&s.trace_id).expect("a trace of the table")] += 1;
        }
        c
    };

    let gradient_estimates = gradients::estimate(req.table);
    let base = one_gpu(&data, &per_step, req.profiler_overhead_us);
    let mut traces = Vec::new();
    let mut throughput = Vec::new();
    let mut batch_cache: HashMap<u32, OneGpu> = HashMap::new();
    for (t, info) in data.traces.iter().enumerate() {
        let profile = req
            .gpu
            .or_else(|| info.recorded_gpu.as_deref().and_then(|g| req.catalog.resolve(g)));
        let net = profile.and_then(|p| {
            Interconnect::from_profile(
                p,
                req.scaling.network_gbs,
                req.scaling.gpus_per_node,
                req.scaling.latency_s,
            )
        });
        let gradient = match req.scaling.gradient_bytes {
            Some(g) => Some((g, GradientSource::Flag)),
            None => gradient_estimates.get(&info.trace_id).copied(),
        };
        let multi = req.scaling.gpu_counts.iter().any(|&n| n > 1);
        let scalable = match (net, gradient) {
            (Some(net), Some((g, _))) => Some((net, g)),
            _ => {
                if multi {
                    let reason = if net.is_none() {
                        "no multi-GPU figures: no hardware profile with a GPU link or PCIe bandwidth for the GPU (give --gpu)"
                    } else {
                        "no multi-GPU figures: no optimizer inputs or collectives in the trace to size the gradients (give --gradient-bytes)"
                    };
                    notes.entry(reason).or_default().push(info.trace_id.clone());
                }
                None
            }
        };
        for &n in &req.scaling.gpu_counts {
            let (allreduce, exposed) = match scalable {
                Some((net, g)) => net.exposed_s(g, n, base[t].backward_ns / 1e9, req.scaling.overlap),
                None if n == 1 => (0.0, 0.0),
                None => continue,
            };
            traces.push(TracePrediction {
                trace_id: info.trace_id.clone(),
                model: info.label.model.clone(),
                recorded_gpu: info.recorded_gpu.clone(),
                gpu: gpu_name(t),
                batch_size: info.batch_size,
                num_gpus: n,
                steps: step_counts[t],
                iteration_ms: base[t].step_ns / 1e6 + exposed * 1e3,
                one_gpu_ms: base[t].step_ns / 1e6,
                // A trace with collectives ran on several GPUs: its measured
                // steps are not a one-GPU time.
                measured_iteration_ms: (n == 1 && !measured[t].is_empty() && !has_collectives[t])
                    .then(|| median(measured[t].clone()) / 1e6),
                gradient_bytes: gradient.map(|g| g.0),
                gradient_source: gradient.map(|g| g.1),
                allreduce_ms: allreduce * 1e3,
                exposed_allreduce_ms: exposed * 1e3,
                backward_ms: base[t].backward_ns / 1e6,
            });
        }
        // The planner's table: global batch sizes b * N for each count N, each
        // run on every count M that divides it (per-GPU batch b * N / M).
        let Some(b) = info.batch_size else {
            notes
                .entry("no throughput-table rows: batch size unknown (label it: --labels, or --trace-batch-size with --trace)")
                .or_default()
                .push(info.trace_id.clone());
            continue;
        };
        if info.priced_gpu.is_none() {
            notes
                .entry("no throughput-table rows: the GPU has no hardware profile (give --gpu)")
                .or_default()
                .push(info.trace_id.clone());
            continue;
        }
        let job_type = info.label.model.clone().unwrap_or_else(|| info.trace_id.clone());
        let gpu_type = req.gpu_type.clone().unwrap_or_else(|| gpu_name(t));
        let counts = &req.scaling.gpu_counts;
        for &n in counts {
            let global = u64::from(b) * u64::from(n);
            for &m in counts {
                if global % u64::from(m) != 0 || (m > 1 && scalable.is_none()) {
                    continue;
                }
                let per_gpu = (global / u64::from(m)) as u32;
                let one = match batch_cache.get(&per_gpu) {
                    _ if Some(per_gpu) == info.batch_size => base[t],
                    Some(&cached) => cached,
                    None => {
                        let scenario = Scenario {
                            gpu: req.gpu,
                            batch_size: Some(per_gpu),
                            only_trace: Some(&info.trace_id),
                        };
                        let (d, p, _) = price(req, scenario)?;
                        let priced = one_gpu(&d, &p, req.profiler_overhead_us)[0];
                        batch_cache.insert(per_gpu, priced);
                        priced
                    }
                };
                let exposed = scalable.map_or(0.0, |(net, g)| {
                    net.exposed_s(g, m, one.backward_ns / 1e9, req.scaling.overlap).1
                });
                throughput.push(ThroughputRow {
                    job_type: job_type.clone(),
                    gpu_type: gpu_type.clone(),
                    global_batch: global,
                    num_gpus: m,
                    iters_per_s: 1.0 / (one.step_ns / 1e9 + exposed),
                });
            }
        }
        batch_cache.clear();
    }
    throughput.sort_by(|a, b| {
        (&a.job_type, &a.gpu_type, a.global_batch, a.num_gpus).cmp(&(
            &b.job_type,
            &b.gpu_type,
            b.global_batch,
            b.num_gpus,
        ))
    });
    let throughput = merge_duplicates(throughput, &mut notes);
    let mut notes: Vec<String> = notes
        .into_iter()
        .map(|(reason, traces)| format!("{} trace(s), {reason}: {}", traces.len(), traces.join(", ")))
        .collect();
    if req.half == Some(HalfType::BFloat16) {
        // The GPUs the run is priced on: the asked one, else each trace's own.
        let mut priced_on: Vec<&HardwareProfile> = match req.gpu {
            Some(gpu) => vec![gpu],
            None => data
                .traces
                .iter()
                .filter_map(|t| t.recorded_gpu.as_deref().and_then(|g| req.catalog.resolve(g)))
                .collect(),
        };
        priced_on.sort_by(|a, b| a.name.cmp(&b.name));
        priced_on.dedup_by(|a, b| a.name == b.name);
        notes.extend(priced_on.into_iter().filter_map(bfloat16_emulated_note));
    }
    notes.extend(notes::profiler_notes(&steps, req.profiler_overhead_us));
    if req.gpu.is_some() || req.batch_size.is_some() || req.asks_another_run() {
        notes.extend(notes::coverage_notes(&data, &coverage));
        if req.idle == IdleGaps::Recorded {
            notes.extend(notes::idle_notes(&steps));
            notes.extend(notes::host_bound_notes(&steps));
        }
    }
    Ok(Prediction {
        steps,
        traces,
        throughput,
        notes,
    })
}

/// Rows with one key (traces of one model on one GPU type, or one trace's
/// batch grid meeting itself) become one row: their mean iterations/s.
/// `rows` must be sorted by key.
fn merge_duplicates(rows: Vec<ThroughputRow>, notes: &mut BTreeMap<&'static str, Vec<String>>) -> Vec<ThroughputRow> {
    let mut merged: Vec<(ThroughputRow, u32)> = Vec::new();
    for row in rows {
        match merged.last_mut() {
            Some((last, n))
                if (&last.job_type, &last.gpu_type, last.global_batch, last.num_gpus)
                    == (&row.job_type, &row.gpu_type, row.global_batch, row.num_gpus) =>
            {
                last.iters_per_s += row.iters_per_s;
                *n += 1;
            }
            _ => merged.push((row, 1)),
        }
    }
    let mut shared = Vec::new();
    let out = merged
        .into_iter()
        .map(|(mut row, n)| {
            if n > 1 {
                row.iters_per_s /= f64::from(n);
                shared.push(format!("{} on {}", row.job_type, row.gpu_type));
            }
            row
        })
        .collect();
    shared.sort();
    shared.dedup();
    if !shared.is_empty() {
        notes
            .entry("throughput rows that several traces gave are their mean")
            .or_default()
            .extend(shared);
    }
    out
}

/// (job type, GPU type) -> (global batch, GPUs) -> iterations/s, for ElasticFlow's layout.
pub fn throughput_grid(rows: &[ThroughputRow]) -> BTreeMap<(String, String), BTreeMap<(u64, u32), f64>> {
    let mut grid: BTreeMap<(String, String), BTreeMap<(u64, u32), f64>> = BTreeMap::new();
    for r in rows {
        grid.entry((r.job_type.clone(), r.gpu_type.clone()))
            .or_default()
            .insert((r.global_batch, r.num_gpus), r.iters_per_s);
    }
    grid
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_takes_at_least_its_kernels_time() {
        // 100 ms of GPU span (90 of kernels) in an 80 ms CPU step: the host ran ahead.
        assert_eq!(step_time(100.0, 90.0, -20.0, 0.0).ns, 90.0);
        // A host-bound step whose span holds a long idle gap keeps its CPU time.
        assert_eq!(step_time(100.0, 50.0, -20.0, 0.0).ns, 80.0);
        // Host time at the step's edges adds to the GPU span.
        assert_eq!(step_time(10.0, 8.0, 5.0, 0.0).ns, 15.0);
    }

    #[test]
    fn the_profilers_host_time_comes_off_down_to_the_kernels() {
        // A host-bound step: 100 of GPU span (40 of kernels) and 20 of host
        // time at its edges; the profiler's 30 all come off.
        let host_bound = step_time(100.0, 40.0, 20.0, 30.0);
        assert_eq!(
            host_bound,
            StepTime {
                ns: 90.0,
                profiler_ns: 30.0
            }
        );
        // Less is left to take than the profiler's cost: the kernels stay.
        assert_eq!(
            step_time(100.0, 90.0, 5.0, 30.0),
            StepTime {
                ns: 90.0,
                profiler_ns: 15.0
            }
        );
        // A host that ran ahead: the kernels' time, nothing to take.
        assert_eq!(
            step_time(100.0, 90.0, -20.0, 30.0),
            StepTime {
                ns: 90.0,
                profiler_ns: 0.0
            }
        );
        // Busy above a short span (a what-if's rounding) never raises the step.
        assert_eq!(
            step_time(10.0, 12.0, 0.0, 5.0),
            StepTime {
                ns: 10.0,
                profiler_ns: 0.0
            }
        );
    }

    #[test]
    fn an_outlying_step_does_not_move_the_iteration_time() {
        // A profile's first step, three times the others, as on an H100 trace.
        assert_eq!(median(vec![127.8, 72.4, 72.2]), 72.4);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(Vec::new()), 0.0);
    }
}

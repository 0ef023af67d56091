//! What-ifs through the op model (Habitat's idea, with a learned
//! utilisation): the window model prices the trace on the GPU and batch it
//! was recorded with, then every central kernel of every window moves by the
//! op model's ratio between the two configurations. Idle gaps stay as
//! recorded, but for what a replay of the step closes on the recorded
//! machine (`replay`); collectives do not move (the multi-GPU model prices
//! them).

use std::collections::HashMap;

use tracecast_opmodel::{EwFunc, GpuSpec, HalfType, OpKind, OpModel, OpWork, Tf32Path, Timing};
use tracecast_schemas::features::{
    ATTENTION_FAMILY, BACKWARD_PHASE, COMMUNICATION_FAMILY, OPTIMIZER_FAMILY, OPTIMIZER_PHASE, central_positions,
};
use tracecast_schemas::hardware::Catalog;
use tracecast_train::{Dataset, FeatureTable};

use crate::PredictError;
use crate::autocast_trace::{Autocast, Float32Ops, SixteenBitTimeRatios, TraceKernel, autocast_step, cast_us};
use crate::tf32::Tf32;
use crate::window_rows::{WindowRow, window_batches, windows_error};

/// What a what-if asks for: a GPU (None: each trace's recorded one) and
/// the TF32 switches; and what the lake says of the recorded runs.
#[derive(Clone, Copy)]
pub struct Asked<'a> {
    pub gpu: Option<&'a GpuSpec>,
    pub tf32: Tf32,
    /// Float32 kernels in 16 bits (mixed precision), but the optimizer's
    /// and those of autocast's float32 list (softmax, norms, losses).
    pub half: Option<HalfType>,
    /// Per trace id, whether its kernels ran on TF32 tensor cores; None
    /// where no lake was read (a feature table given as input).
    pub used_tf32: Option<&'a HashMap<String, bool>>,
}

/// How much of the recorded kernel time each way of pricing covered, ns.
#[derive(Clone, Copy, Debug, Default)]
pub struct Coverage {
    /// Kernels whose launching operator's shapes give their work.
    pub from_shapes_ns: f64,
    /// Kernels without shapes: work inferred from their recorded time.
    pub inferred_ns: f64,
    /// Collectives: not moved.
    pub unmoved_ns: f64,
    /// The TF32 switches of the recorded and the asked run, where either
    /// GPU has TF32 (so that they count).
    pub tf32: Option<(Tf32, Tf32)>,
    /// Of the moved time, float32 kernels priced in 16 bits.
    pub halved_ns: f64,
    /// Of the moved time, float32 kernels priced in 16 bits at their
    /// float32 time times a ratio measured for them (`SixteenBitTimeRatios`).
    pub measured_ratio_ns: f64,
    /// Autocast's casts added to a 16-bit what-if, as priced.
    pub cast_ns: f64,
    /// The CPU operators those casts add on the host ([`CAST_HOST_OPS`]).
    pub cast_host_ops: f64,
}

/// CPU operators one autocast cast adds to a step: `aten::to`, which
/// calls `aten::_to_copy`, which calls `aten::empty_strided` and
/// `aten::copy_` (whose kernel is the cast); and where the step has a
/// backward pass, the cast's own backward (the autograd engine's
/// `evaluate_function: ToCopyBackward0`, `ToCopyBackward0`, and the same
/// four casting the gradient back). So they are counted in the bfloat16
/// traces of `bench/corpus` (ResNet-50 at batch 64: 57 forward casts, 56
/// `ToCopyBackward0`, 113 each of the four).
const CAST_HOST_OPS: (f64, f64) = (4.0, 6.0);

impl Coverage {
    pub fn total_ns(&self) -> f64 {
        self.from_shapes_ns + self.inferred_ns + self.unmoved_ns
    }
}

/// The op-model kind of a feature-table kernel family.
fn kind_of(family: f64) -> OpKind {
    match family as i64 {
        0 | 2 => OpKind::Gemm,
        1 => OpKind::Conv,
        3 | 9 | 10 => OpKind::Elementwise,
        4 => OpKind::Reduction,
        5 => OpKind::Norm,
        6 => OpKind::Softmax,
        _ => OpKind::Copy,
    }
}

/// Work of one kernel on the recorded GPU. With shapes: the operator's
/// FLOPs and bytes (split evenly over its kernels by the feature pipeline).
/// Without: the work that would take its recorded time at half the
/// recorded GPU's peak (compute kinds) or bandwidth (the rest), so that its
/// ratio follows the GPUs' rates.
fn kernel_work(
    family: f64,
    flops: f64,
    bytes: f64,
    dtype_bytes: f64,
    dur_ns: f64,
    recorded: &GpuSpec,
) -> (OpWork, bool) {
    let kind = kind_of(family);
    let dtype = if dtype_bytes > 0.0 { dtype_bytes } else { 4.0 };
    let (flops, bytes) = (
        if flops.is_finite() { flops } else { 0.0 },
        if bytes.is_finite() { bytes } else { 0.0 },
    );
    // Copies and sets have bytes but no FLOPs: either is enough.
    let known = flops > 0.0 || bytes > 0.0;
    let mut work = OpWork::elementwise(EwFunc::Other, 0.0, 1.0);
    work.kind = kind;
    work.ew = (kind == OpKind::Elementwise).then_some(EwFunc::Other);
    work.fused_attention = family == ATTENTION_FAMILY;
    work.dtype_bytes = dtype;
    if known {
        work.flops = flops.max(0.0);
        work.bytes = bytes.max(0.0);
    } else {
        let seconds = dur_ns.max(0.0) / 1e9;
        if matches!(kind, OpKind::Gemm | OpKind::Conv) {
            work.flops = seconds * recorded.peak_flops(dtype) * 0.5;
            work.bytes = work.flops / 64.0;
        } else {
            work.bytes = seconds * recorded.bandwidth * 0.5;
            work.flops = work.bytes / 8.0;
        }
    }
    work.elements = work.bytes / (2.0 * dtype);
    (work, known)
}

/// A kernel a cuDNN convolution launched, priced as its share of that
/// convolution, whatever its name's family, where the what-if moves a
/// convolution recorded in strict float32 to tensor cores (16 bits, or
/// TF32 switched on). A strict float32 convolution may run an FFT or
/// Winograd algorithm, whose transforms and complex products are
/// element-wise, reduction or GEMM kernels; on tensor cores cuDNN runs
/// implicit GEMMs instead. Priced by their families, VGG-16's float32 FFT
/// and Winograd kernels at batch 16 on an H100 (`bench/corpus`) gained
/// only their halved bytes in bfloat16. The other way, a TF32 run's
/// helper kernels are layout transposes, which strict float32 drops: they
/// keep their families.
fn as_convolution(work: OpWork) -> OpWork {
    OpWork {
        kind: OpKind::Conv,
        ew: None,
        ..work
    }
}

/// The change in ns of the central kernels' time under a what-if.
#[derive(Clone, Debug, Default)]
pub(crate) struct Deltas {
    /// Per window, in the order `build_dataset` reads them (filtered to
    /// `only_trace` like it).
    pub per_window: Vec<f64>,
    /// Per kernel that moved, by (window, position): its own change and
    /// that of autocast's casts launched before it.
    pub per_item: HashMap<(usize, usize), f64>,
}

impl Deltas {
    fn add(&mut self, item: &Item, ns: f64) {
        self.per_window[item.window] += ns;
        *self.per_item.entry((item.window, item.order.2)).or_default() += ns;
    }
}

/// Per window and per kernel, the change in ns of its central kernels'
/// time ([`Deltas`]). `batch_scale[t]` is the batch ratio of trace `t` of
/// `data`.
pub fn window_deltas(
    table: &FeatureTable,
    data: &Dataset,
    op_model: &OpModel,
    catalog: &Catalog,
    asked: Asked<'_>,
    batch_scale: &[f64],
    only_trace: Option<&str>,
) -> Result<(Deltas, Vec<Coverage>), PredictError> {
    let recorded: Vec<Option<GpuSpec>> = data
        .traces
        .iter()
        .map(|t| {
            t.recorded_gpu
                .as_deref()
                .and_then(|g| catalog.resolve(g))
                .and_then(|p| GpuSpec::from_profile(p).ok())
        })
        .collect();
    let central = central_positions(table.window, table.stride);
    let convolution_codes = Tf32::convolution_codes();
    let float32_ops = Float32Ops::new();
    let sixteen_bit_time_ratios = SixteenBitTimeRatios::new();
    // Per trace: the TF32 switches of the recorded and the asked run, which
    // its coverage names where either GPU has TF32 (so that they count).
    let target_has_tf32 = asked.gpu.is_some_and(|g| g.peak_tf32_flops.is_some());
    let (switches, mut coverage): (Vec<(Tf32, Tf32)>, Vec<Coverage>) = data
        .traces
        .iter()
        .zip(&recorded)
        .map(|(trace, spec)| {
            let used = asked.used_tf32.and_then(|m| m.get(&trace.trace_id).copied());
            let has_tf32 = spec.as_ref().is_some_and(|s| s.peak_tf32_flops.is_some());
            let switches = asked.tf32.per_trace(used, has_tf32);
            let coverage = Coverage {
                tf32: (has_tf32 || target_has_tf32).then_some(switches),
                ..Coverage::default()
            };
            (switches, coverage)
        })
        .unzip();
    // Per trace: whether the what-if moves convolutions recorded in strict
    // float32 onto tensor cores ([`as_convolution`]).
    let convolutions_to_tensor_cores: Vec<bool> = switches
        .iter()
        .map(|(recorded_tf32, asked_tf32)| {
            recorded_tf32.path(OpKind::Conv, true) == Tf32Path::Off
                && (asked.half.is_some() || asked_tf32.path(OpKind::Conv, true) != Tf32Path::Off)
        })
        .collect();
    let mut items: Vec<Item> = Vec::new();
    let (batches, windows) = window_batches(table, data, only_trace)?;
    for batch in &batches {
        // Optional: a table from edited SQL without them (`features --sql`) prices no
        // casts, and its products as aligned.
        let sizes = |p: usize, name: &str| batch.optional_position(p, name);
        let mut cols = Vec::new();
        for p in central.clone() {
            cols.push(PositionColumns {
                op_code: batch.position(p, "op_code")?,
                family: batch.position(p, "family")?,
                phase: batch.position(p, "phase")?,
                flops: batch.position(p, "flops")?,
                bytes: batch.position(p, "bytes")?,
                dtype: batch.position(p, "dtype_bytes")?,
                dur: batch.position(p, "dur_ns")?,
                in0: sizes(p, "in0_numel"),
                in1: sizes(p, "in1_numel"),
                alignment: sizes(p, "product_alignment"),
                group_width: sizes(p, "conv_group_width"),
            });
        }
        for &WindowRow {
            row: i,
            trace: t,
            window,
        } in &batch.rows
        {
            let Some(rec) = &recorded[t] else {
                continue;
            };
            for (p, c) in cols.iter().enumerate() {
                let (f, d) = (c.family[i], c.dur[i]);
                if f.is_nan() || d.is_nan() || d <= 0.0 {
                    continue;
                }
                if f == COMMUNICATION_FAMILY {
                    coverage[t].unmoved_ns += d;
                    continue;
                }
                let (recorded_tf32, asked_tf32) = switches[t];
                let convolution = convolution_codes.contains(&(c.op_code[i] as i32));
                let (mut work, known) = kernel_work(f, c.flops[i], c.bytes[i], c.dtype[i], d, rec);
                if convolution && known && convolutions_to_tensor_cores[t] && work.kind != OpKind::Copy {
                    work = as_convolution(work);
                }
                work.tf32 = asked_tf32.path(work.kind, convolution);
                work.product_alignment = c.alignment.as_ref().map(|a| a[i]).filter(|a| a.is_finite());
                let as_recorded = OpWork {
                    tf32: recorded_tf32.path(work.kind, convolution),
                    ..work
                };
                if known {
                    coverage[t].from_shapes_ns += d;
                } else {
                    coverage[t].inferred_ns += d;
                }
                let scales = c.phase[i] != OPTIMIZER_PHASE && f != OPTIMIZER_FAMILY;
                let size = |v: &Option<Vec<f64>>| v.as_ref().map_or(f64::NAN, |v| v[i]);
                items.push(Item {
                    window,
                    dur_ns: d,
                    as_recorded,
                    work,
                    trace: t,
                    order: (batch.step_ids[i] as i64, batch.window_index[i] as i64, p),
                    scales,
                    kernel: TraceKernel {
                        op_code: c.op_code[i] as i32,
                        kind: if convolution { OpKind::Conv } else { work.kind },
                        backward: c.phase[i] == BACKWARD_PHASE,
                        float32: float32_ops.contains(c.op_code[i] as i32, c.phase[i] == BACKWARD_PHASE),
                        in0: size(&c.in0),
                        in1: size(&c.in1),
                        group_width: size(&c.group_width),
                        flops: c.flops[i],
                    },
                });
            }
        }
    }
    let autocast = if asked.half.is_some() {
        autocast_items(&items)
    } else {
        vec![Autocast::default(); items.len()]
    };
    let mut deltas = Deltas {
        per_window: vec![0.0; windows],
        per_item: HashMap::new(),
    };
    if items.is_empty() {
        return Ok((deltas, coverage));
    }
    let mut has_backward = vec![false; coverage.len()];
    for item in &items {
        has_backward[item.trace] |= item.kernel.backward;
    }
    // Per item: the work on the recorded GPU as recorded, the same work on
    // the target as asked, the priced (batch-scaled) work on the target;
    // where the batch changes, the work at saturation ([`SATURATING_SCALE`]).
    // Autocast's casts before it, batch-scaled, are priced apart ([`cast_us`]).
    let mut pairs = Vec::with_capacity(items.len() * 3);
    let mut casts = Vec::new();
    let mut saturating = Vec::new();
    // Per item: its work as asked, priced, and its 16-bit time over its
    // float32 time where that does not follow its bytes (its work then
    // stays float32's).
    let mut priced_works = Vec::with_capacity(items.len());
    for (item, cast) in items.iter().zip(&autocast) {
        let rec = recorded[item.trace]
            .as_ref()
            .expect("items only for traces with a recorded spec");
        let tgt = asked.gpu.unwrap_or(rec);
        // Mixed precision keeps the optimizer's float32 master weights.
        let mut work = item.work;
        let in_half = cast.half && item.scales;
        let time_ratio = asked
            .half
            .filter(|_| in_half)
            .and_then(|half| sixteen_bit_time_ratios.ratio(&item.kernel, cast, half, has_backward[item.trace]));
        if in_half && time_ratio.is_none() && work.dtype_bytes > 2.0 {
            work = work.in_half();
            coverage[item.trace].halved_ns += item.dur_ns;
        } else if time_ratio.is_some() {
            coverage[item.trace].measured_ratio_ns += item.dur_ns;
        }
        let batch = if item.scales { batch_scale[item.trace] } else { 1.0 };
        let scaled = |w: OpWork| if batch != 1.0 { w.scaled(batch) } else { w };
        let priced = scaled(work);
        pairs.push((item.as_recorded, rec));
        pairs.push((work, tgt));
        pairs.push((priced, tgt));
        if cast.cast_elements > 0.0 {
            // A forward cast of a training step has its backward, which
            // casts the gradient back (`ToCopyBackward0`; CAST_HOST_OPS).
            let passes = if !item.kernel.backward && has_backward[item.trace] {
                2.0
            } else {
                1.0
            };
            let us = cast_us(cast.cast_elements * batch, cast.cast_tensors, tgt.bandwidth);
            casts.push((item, passes * us));
        }
        if batch != 1.0 {
            saturating.push((priced_works.len(), work.scaled(SATURATING_SCALE), tgt));
        }
        priced_works.push((work, priced, time_ratio));
    }
    pairs.extend(saturating.iter().map(|(_, w, g)| (*w, *g)));
    let times = op_model
        .predict_us(&pairs, Timing::Workload)
        .map_err(|e| windows_error(table, e.to_string()))?;
    // Per item, its work's time at the utilisation the op model gives the
    // largest instances of it.
    let mut saturated_us = vec![0.0; items.len()];
    let saturated_times = &times[3 * items.len()..];
    for ((k, _, _), us) in saturating.iter().zip(saturated_times) {
        saturated_us[*k] = us / SATURATING_SCALE;
    }
    for (k, (item, (work, priced, time_ratio))) in items.iter().zip(&priced_works).enumerate() {
        let rec = recorded[item.trace]
            .as_ref()
            .expect("items only for traces with a recorded spec");
        let (on_rec, on_tgt, scaled) = (times[3 * k], times[3 * k + 1], times[3 * k + 2]);
        let tgt = asked.gpu.unwrap_or(rec);
        let gpu_ratio = physical_gpu_ratio(on_tgt / on_rec.max(1e-9), (rec, &item.as_recorded), (tgt, work));
        let scale = priced.flops.max(priced.bytes) / work.flops.max(work.bytes).max(1e-30);
        let unscaled_us = item.dur_ns * gpu_ratio / 1e3;
        let batch_ratio = physical_batch_ratio(
            size_ratio(on_tgt, scaled, unscaled_us, scale),
            scale,
            best_share(tgt.roofline_us(work).max(saturated_us[k]), unscaled_us),
        );
        let mut priced_ns = item.dur_ns * gpu_ratio * batch_ratio * time_ratio.unwrap_or(1.0);
        // cuDNN picks another algorithm for a 16-bit convolution: a
        // float32 one recorded far slower than the op model prices its
        // work (ConvNeXt's depthwise convolutions, 21x slower than in
        // bfloat16: bench/README.md, "Measured corpus") says nothing of
        // it. PyTorch's own depthwise kernel, the same in 16 bits, keeps
        // its recorded efficiency, and so do matrix products: held to the
        // op model's price too, GPT-2's came out 0.76-0.86x of their
        // bfloat16 time (bench/README.md, "Kernels whose 16-bit time").
        if autocast[k].half && work.kind == OpKind::Conv && !autocast[k].native_depthwise {
            priced_ns = priced_ns.min(scaled * 1e3);
        }
        let floor_ns = roofline_floor_ns(tgt.roofline_us(priced), item.dur_ns, rec.roofline_us(&item.as_recorded));
        priced_ns = priced_ns.max(floor_ns);
        deltas.add(item, priced_ns - item.dur_ns);
    }
    // Autocast's casts: kernels the recorded run did not have, and the
    // operators that launch them. A forward cast's backward is counted
    // with it, on the GPU and on the host.
    for (item, us) in &casts {
        deltas.add(item, us * 1e3);
        coverage[item.trace].cast_ns += us * 1e3;
    }
    for (item, cast) in items.iter().zip(&autocast) {
        if !item.kernel.backward {
            let (forward, backward) = CAST_HOST_OPS;
            let per_cast = forward + if has_backward[item.trace] { backward } else { 0.0 };
            coverage[item.trace].cast_host_ops += f64::from(cast.cast_tensors) * per_cast;
        }
    }
    Ok((deltas, coverage))
}

/// How many times a kernel's work the op model is asked to price to find
/// the utilisation that work reaches at best on the target: the bound of
/// what a batch what-if's added work can gain (`best_share`). 16, 64
/// and 256 gave the same errors within 0.4 points on `bench/corpus`.
const SATURATING_SCALE: f64 = 64.0;

/// One central kernel of a window, as the what-if prices it.
struct Item {
    window: usize,
    dur_ns: f64,
    /// Its work on the recorded GPU as recorded, and as asked (before
    /// autocast and the batch scale).
    as_recorded: OpWork,
    work: OpWork,
    trace: usize,
    /// (step, window, position): launch order within a trace.
    order: (i64, i64, usize),
    /// Not the optimizer's: it moves with the batch and with autocast.
    scales: bool,
    kernel: TraceKernel,
}

/// The per-position columns of one window batch the what-if reads.
struct PositionColumns {
    op_code: Vec<f64>,
    family: Vec<f64>,
    phase: Vec<f64>,
    flops: Vec<f64>,
    bytes: Vec<f64>,
    dtype: Vec<f64>,
    dur: Vec<f64>,
    in0: Option<Vec<f64>>,
    in1: Option<Vec<f64>>,
    alignment: Option<Vec<f64>>,
    group_width: Option<Vec<f64>>,
}

/// Autocast's decision for every item, each step of each trace passed in
/// launch order; the optimizer's kernels stay float32 and cast nothing.
fn autocast_items(items: &[Item]) -> Vec<Autocast> {
    let mut steps: HashMap<(usize, i64), Vec<usize>> = HashMap::new();
    for (k, item) in items.iter().enumerate() {
        if item.scales {
            steps.entry((item.trace, item.order.0)).or_default().push(k);
        }
    }
    let mut decisions = vec![Autocast::default(); items.len()];
    for mut members in steps.into_values() {
        members.sort_by_key(|&k| items[k].order);
        let kernels: Vec<TraceKernel> = members.iter().map(|&k| items[k].kernel).collect();
        for (k, decision) in members.into_iter().zip(autocast_step(&kernels)) {
            decisions[k] = decision;
        }
    }
    decisions
}

/// The op model's GPU ratio for one kernel, held to what the spec sheets
/// allow: a GPU at least as fast in every figure the work depends on (peak
/// rate for its dtype and TF32 switches, bandwidth, SMs where both sheets
/// give them) never makes it slower, and one at most as fast never makes
/// it faster. Each side is (GPU, the work as it runs there).
fn physical_gpu_ratio(ratio: f64, recorded: (&GpuSpec, &OpWork), target: (&GpuSpec, &OpWork)) -> f64 {
    let ((recorded, recorded_work), (target, work)) = (recorded, target);
    let sms = |g: &GpuSpec| g.sm_count.is_finite().then_some(g.sm_count);
    let figures = [
        (target.peak_for(work), recorded.peak_for(recorded_work)),
        (target.bandwidth, recorded.bandwidth),
    ]
    .into_iter()
    .chain(sms(target).zip(sms(recorded)));
    let (mut faster, mut slower) = (true, true);
    for (t, r) in figures {
        faster &= t >= r;
        slower &= t <= r;
    }
    match (faster, slower) {
        (true, true) => 1.0,
        (true, false) => ratio.min(1.0),
        (false, true) => ratio.max(1.0),
        (false, false) => ratio,
    }
}

/// The share of the time a what-if gives the unscaled kernel on the target
/// (its recorded time moved to that GPU, not the op model's own price,
/// since that recorded time is what the batch ratio scales) that its work
/// needs at best there: at the roofline, or at the utilisation the op model
/// gives the same work many times over, whichever is slower. A kernel
/// recorded near that best cannot gain much efficiency from more work,
/// whatever the model's utilisation for its own size says. With the
/// roofline alone, the op model's gains with size took over: on
/// `bench/corpus`, vision kernels at half the batch came out at a median
/// 1.18 times the time the smaller run's own kernels took, and 0.87 at
/// twice (1.13 and 0.92 with the op model's best; `bench/whatif_corpus.py`'s
/// kernel table).
fn best_share(best_us: f64, unscaled_us: f64) -> f64 {
    (best_us / unscaled_us.max(1e-9)).clamp(0.0, 1.0)
}

/// The least time a kernel can take on the target: its roofline there. The
/// op model's GPU ratio can break it on a slower GPU (a kernel recorded near
/// its roofline on an H100, moved to an A100). A kernel recorded faster than
/// its own roofline (work counted above what it did, as for Winograd
/// convolutions) may stay as far below the target's.
fn roofline_floor_ns(target_roofline_us: f64, recorded_ns: f64, recorded_roofline_us: f64) -> f64 {
    let below = (recorded_ns / 1e3 / recorded_roofline_us.max(1e-9)).min(1.0);
    target_roofline_us * 1e3 * below
}

/// A kernel's time at `scale` times its work over its time now, from the
/// op model's price of the work now (`model_us`) and scaled
/// (`model_scaled_us`), and the kernel's own time now (`kernel_us`). The
/// op model explains up to its own price, which gains efficiency with size
/// as its utilisation says; what a kernel takes beyond that (an algorithm
/// slower than the model's, as PyTorch's own bfloat16 batch norm) is taken
/// to grow in proportion with the work. With the model's gains applied to
/// the whole kernel, vision kernels at half the batch came out at a median
/// 1.13 times the smaller run's own time and 0.92 at twice; 1.06 and 0.96
/// with this (`bench/whatif_corpus.py`'s kernel table).
fn size_ratio(model_us: f64, model_scaled_us: f64, kernel_us: f64, scale: f64) -> f64 {
    let unexplained_us = (kernel_us - model_us).max(0.0);
    if unexplained_us > 0.0 {
        (model_scaled_us + unexplained_us * scale) / kernel_us
    } else {
        model_scaled_us / model_us.max(1e-9)
    }
}

/// The op model's ratio for `scale` times the work on one GPU, held to
/// physics: the work added takes at least its best time (the work removed
/// saves at least that), and fixed costs (launch, tails) make the time
/// grow at most in proportion. `share` is that best time over the
/// unscaled kernel's time ([`best_share`]).
fn physical_batch_ratio(ratio: f64, scale: f64, share: f64) -> f64 {
    if !(scale.is_finite() && scale > 0.0) || scale == 1.0 {
        return 1.0;
    }
    let (low, high) = if scale > 1.0 {
        (1.0 + (scale - 1.0) * share, scale)
    } else {
        (scale, 1.0 - (1.0 - scale) * share)
    };
    ratio.clamp(low, high)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(peak: f64, bw: f64) -> GpuSpec {
        GpuSpec {
            name: "x".into(),
            peak_fp32_flops: peak,
            peak_fp32_matrix_flops: None,
            peak_half_flops: None,
            peak_tf32_flops: None,
            peak_fp64_flops: None,
            bandwidth: bw,
            sm_count: 80.0,
            l2_bytes: 6e6,
        }
    }

    #[test]
    fn ratios_stay_physical() {
        let work = OpWork::linear(8.0, 512.0, 1024.0, 1024.0);
        let (old, new) = (spec(1e13, 1e12), spec(2e13, 2e12));
        // A GPU faster in every figure is never slower, and the reverse.
        assert_eq!(physical_gpu_ratio(1.2, (&old, &work), (&new, &work)), 1.0);
        assert_eq!(physical_gpu_ratio(0.6, (&old, &work), (&new, &work)), 0.6);
        assert_eq!(physical_gpu_ratio(0.8, (&new, &work), (&old, &work)), 1.0);
        // Mixed figures: the model decides.
        let mixed = spec(2e13, 5e11);
        assert_eq!(physical_gpu_ratio(1.3, (&old, &work), (&mixed, &work)), 1.3);
        // Twice the work: at least the added roofline time, at most twice the time.
        assert_eq!(physical_batch_ratio(0.97, 2.0, 0.0), 1.0);
        assert_eq!(physical_batch_ratio(0.97, 2.0, 0.25), 1.25);
        assert_eq!(physical_batch_ratio(2.5, 2.0, 0.25), 2.0);
        assert_eq!(physical_batch_ratio(1.4, 2.0, 0.25), 1.4);
        // Half the work: saves at least half its roofline time, at most half the time.
        assert_eq!(physical_batch_ratio(1.2, 0.5, 0.5), 0.75);
        assert_eq!(physical_batch_ratio(0.3, 0.5, 0.5), 0.5);
    }

    #[test]
    fn time_the_op_model_does_not_explain_grows_with_the_work() {
        // Priced 40 us now and 60 us at twice the work; the kernel takes
        // 100 us: its 60 unexplained us double, the model's 40 become 60.
        assert!((size_ratio(40.0, 60.0, 100.0, 2.0) - 1.8).abs() < 1e-12);
        // Half the work: 30 unexplained us and the model's 25.
        assert!((size_ratio(40.0, 25.0, 100.0, 0.5) - 0.55).abs() < 1e-12);
        // A kernel no slower than the model's price: the model's ratio.
        assert_eq!(size_ratio(40.0, 60.0, 30.0, 2.0), 1.5);
    }

    #[test]
    fn a_kernel_recorded_near_its_roofline_scales_almost_in_proportion() {
        // The model prices the kernel at half its roofline rate and doubling
        // at 1.6x; recorded at 90% of its roofline, twice the work takes at
        // least 1.9x its time, and half saves at least 45% of it.
        let share = best_share(90.0, 100.0);
        assert!((physical_batch_ratio(1.6, 2.0, share) - 1.9).abs() < 1e-12);
        assert!((physical_batch_ratio(0.7, 0.5, share) - 0.55).abs() < 1e-12);
        // A kernel recorded faster than its roofline allows (work miscounted),
        // or in no time, is held to proportion; one far from its roofline
        // keeps the model's ratio.
        assert_eq!(best_share(120.0, 100.0), 1.0);
        assert_eq!(best_share(1.0, 0.0), 1.0);
        assert_eq!(physical_batch_ratio(1.6, 2.0, best_share(10.0, 100.0)), 1.6);
    }

    #[test]
    fn no_kernel_is_priced_below_its_roofline_on_the_target() {
        // Recorded at 80 us against a 50 us roofline, moved to a GPU where
        // its roofline is 150 us: at least 150 us, whatever the ratio says.
        assert_eq!(roofline_floor_ns(150.0, 80_000.0, 50.0), 150_000.0);
        // Recorded in half its counted roofline: half the target's.
        assert_eq!(roofline_floor_ns(150.0, 25_000.0, 50.0), 75_000.0);
        // Work-free kernels have no floor.
        assert_eq!(roofline_floor_ns(0.0, 5_000.0, 0.0), 0.0);
    }

    #[test]
    fn inferred_work_takes_its_recorded_time_at_half_rate() {
        let gpu = spec(1e13, 1e12);
        let (w, known) = kernel_work(0.0, f64::NAN, f64::NAN, 4.0, 1_000.0, &gpu);
        assert!(!known);
        assert!((w.flops / 1e13 * 1e9 - 500.0).abs() < 1e-6);
        let (m, _) = kernel_work(3.0, f64::NAN, f64::NAN, 4.0, 1_000.0, &gpu);
        assert!((m.bytes / 1e12 * 1e9 - 500.0).abs() < 1e-6);
        let (k, known) = kernel_work(0.0, 1e9, 1e6, 2.0, 1_000.0, &gpu);
        assert!(known && k.flops == 1e9 && k.dtype_bytes == 2.0);
        // A copy: bytes and no FLOPs.
        let (c, known) = kernel_work(7.0, f64::NAN, 4e6, 4.0, 1_000.0, &gpu);
        assert!(known && c.bytes == 4e6 && c.flops == 0.0);
    }
}

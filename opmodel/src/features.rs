//! Model inputs for one (operator work, GPU) pair, and the roofline time the
//! model's output multiplies. Inputs are physics: the roofline's compute and
//! memory times, how the work tiles over the SMs (waves), its size against
//! the L2; plus the GPU's own figures, so utilisation can depend on them.
//! The clock is not an input: with few GPUs to learn from it only told them
//! apart (P100 and V100 share one), which costs accuracy on a GPU never seen.

use crate::gpu::GpuSpec;
use crate::work::{OpKind, OpWork};

/// Version of the input list: a model file records it and is refused by a
/// build whose list differs.
pub const INPUTS_VERSION: u32 = 2;

/// How an operator was timed. NeuSight's per-op training files come from
/// long sweeps over thousands of random shapes, run back to back: the GPU
/// runs hot and its GEMMs come out 18-43% slower than the same shapes in a
/// model's run, most of all on the 70-75 W cards (T4, P4), while its per-op
/// test shapes, timed in shorter runs, agree with the model runs. The model
/// learns the difference from both kinds of measurement; predictions are
/// asked for as a workload runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Timing {
    /// Timed inside a long randomized sweep of isolated operators, or
    /// another long back-to-back benchmark loop (ETS's).
    Sweep = 0,
    /// Timed as a workload runs it: model graphs' nodes, trace kernels, short benchmarks.
    Workload = 1,
}

/// Input names, in matrix-column order.
pub const INPUT_NAMES: [&str; 30] = [
    "timing",
    "kind",
    "pass",
    "ew_func",
    "log10_flops",
    "log10_bytes",
    "log10_intensity",
    "log10_compute_us",
    "log10_memory_us",
    "log10_roofline_us",
    "log10_compute_over_memory",
    "log2_gemm_rows",
    "log2_gemm_cols",
    "log2_gemm_inner",
    "log2_gemm_batch",
    "waves_128x128",
    "wave_eff_128x128",
    "waves_64x64",
    "wave_eff_64x64",
    "waves_256x128",
    "wave_eff_256x128",
    "log2_thread_waves",
    "thread_wave_eff",
    "log2_row_len",
    "log2_bytes_over_l2",
    "gpu_log10_peak_flops",
    "gpu_log10_bandwidth",
    "gpu_sms",
    "gpu_l2_mib",
    "gpu_log10_ridge",
];

/// The shortest roofline time, µs: a bound for work-free nodes so the
/// utilisation ratio stays finite.
const MIN_ROOFLINE_US: f64 = 1e-3;

/// Tiles of `tile_rows x tile_cols` over the SMs: (waves, share of the last
/// wave's SMs that have work, averaged over all waves).
fn waves(work: &OpWork, gpu: &GpuSpec, tile_rows: f64, tile_cols: f64) -> (f64, f64) {
    let Some(g) = work.gemm else {
        return (f64::NAN, f64::NAN);
    };
    let tiles = g.batch * (g.rows / tile_rows).ceil() * (g.cols / tile_cols).ceil();
    wave_stats(tiles, gpu.sm_count)
}

fn wave_stats(units: f64, slots: f64) -> (f64, f64) {
    if units <= 0.0 || slots.is_nan() || slots <= 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let waves = units / slots;
    (waves, waves / waves.ceil())
}

fn log10p(v: f64) -> f64 {
    (1.0 + v.max(0.0)).log10()
}

fn log2_or_nan(v: f64) -> f64 {
    if v > 0.0 { v.log2() } else { f64::NAN }
}

/// Threads an SM keeps resident: used to count element-wise "waves".
const THREADS_PER_SM: f64 = 2048.0;
/// Elements one thread handles in PyTorch's vectorised element-wise kernels.
const ELEMENTS_PER_THREAD: f64 = 4.0;

/// The inputs of one pair (in [`INPUT_NAMES`] order), and its roofline time
/// in µs, which the model's output multiplies.
pub fn inputs(work: &OpWork, gpu: &GpuSpec, timing: Timing) -> ([f64; INPUT_NAMES.len()], f64) {
    let (c, m) = gpu.compute_memory_us(work);
    let roof = c.max(m).max(MIN_ROOFLINE_US);
    let gemm = work.gemm;
    let g = |f: fn(&crate::work::GemmShape) -> f64| gemm.as_ref().map_or(f64::NAN, |s| log2_or_nan(f(s)));
    let (w128, e128) = waves(work, gpu, 128.0, 128.0);
    let (w64, e64) = waves(work, gpu, 64.0, 64.0);
    let (w256, e256) = waves(work, gpu, 256.0, 128.0);
    let (tw, te) = if work.elements > 0.0 && gemm.is_none() {
        wave_stats(work.elements / ELEMENTS_PER_THREAD, gpu.sm_count * THREADS_PER_SM)
    } else {
        (f64::NAN, f64::NAN)
    };
    let peak = gpu.peak_for(work);
    // Memory-bound kinds get no compute-side inputs: their FLOP counts are
    // nominal, and with the GPU's peak they would only fingerprint the GPU.
    let compute_bound = matches!(work.kind, OpKind::Gemm | OpKind::Conv);
    let compute = |v: f64| if compute_bound { v } else { f64::NAN };
    let row = [
        timing as u8 as f64,
        work.kind as u8 as f64,
        work.pass as u8 as f64,
        work.ew.map_or(f64::NAN, |e| e as u8 as f64),
        compute(log10p(work.flops)),
        log10p(work.bytes),
        compute(((work.flops + 1.0) / (work.bytes + 1.0)).log10()),
        compute(c.max(1e-6).log10()),
        m.max(1e-6).log10(),
        roof.log10(),
        compute((c.max(1e-6) / m.max(1e-6)).log10()),
        g(|s| s.rows),
        g(|s| s.cols),
        g(|s| s.inner),
        g(|s| s.batch),
        w128,
        e128,
        w64,
        e64,
        w256,
        e256,
        log2_or_nan(tw),
        te,
        log2_or_nan(work.row_len),
        if gpu.l2_bytes > 0.0 && work.bytes > 0.0 {
            (work.bytes / gpu.l2_bytes).log2()
        } else {
            f64::NAN
        },
        peak.log10(),
        gpu.bandwidth.log10(),
        gpu.sm_count,
        if gpu.l2_bytes > 0.0 {
            gpu.l2_bytes / (1024.0 * 1024.0)
        } else {
            f64::NAN
        },
        (peak / gpu.bandwidth).log10(),
    ];
    (row, roof)
}

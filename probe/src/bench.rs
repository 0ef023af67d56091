//! Micro-benchmarks: device-to-device copy bandwidth, FP32 FMA throughput
//! (an NVRTC-compiled kernel) and a BF16 GEMM through cuBLAS. Each sample is
//! timed with CUDA events on one stream; the figure is the median.
//!
//! A benchmark that cannot run (NVRTC or cuBLAS missing, out of memory) is
//! recorded in `measured.skipped` with its reason; the device properties are
//! still worth writing.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaStream, DevicePtr, DevicePtrMut, DriverError, LaunchConfig, PushKernelArg};
use tracecast_schemas::hardware::{Measured, Measurement};

use crate::DeviceProperties;

/// Sizes and repeat counts; `quick` trades precision for time.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub quick: bool,
    /// Timed samples per benchmark (after one warm-up).
    pub repeats: u32,
    /// Bytes per copy buffer.
    pub copy_bytes: usize,
    /// Copies per timed sample.
    pub copies_per_sample: u32,
    /// FMA loop trips per thread.
    pub fma_iters: i32,
    /// Thread blocks per SM for the FMA kernel.
    pub fma_blocks_per_sm: u32,
    /// Square GEMM size.
    pub gemm_n: usize,
}

impl BenchConfig {
    pub fn full() -> Self {
        BenchConfig {
            quick: false,
            repeats: 20,
            copy_bytes: 512 << 20,
            copies_per_sample: 4,
            fma_iters: 1 << 14,
            fma_blocks_per_sm: 8,
            gemm_n: 8192,
        }
    }

    pub fn quick() -> Self {
        BenchConfig {
            quick: true,
            repeats: 5,
            copy_bytes: 128 << 20,
            copies_per_sample: 2,
            fma_iters: 1 << 12,
            fma_blocks_per_sm: 4,
            gemm_n: 4096,
        }
    }
}

/// Run every benchmark that can run; never fails as a whole.
pub fn run_all(ctx: &Arc<CudaContext>, props: &DeviceProperties, cfg: &BenchConfig, now_unix_s: u64) -> Measured {
    let mut m = Measured {
        tool: format!("tracecast-probe {}", env!("CARGO_PKG_VERSION")),
        probed_at_unix_s: now_unix_s,
        driver_version: props.driver_version,
        quick: cfg.quick,
        d2d_copy_gbs: None,
        fp32_fma_tflops: None,
        bf16_matmul_tflops: None,
        skipped: Vec::new(),
    };
    let stream = ctx.default_stream();

    match copy_bandwidth(ctx, &stream, cfg) {
        Ok(v) => m.d2d_copy_gbs = v,
        Err(e) => m.skipped.push(format!("d2d copy: {e}")),
    }
    // SAFETY (both checks): only try to dlopen the libraries.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        match fma_throughput(ctx, &stream, props, cfg) {
            Ok(v) => m.fp32_fma_tflops = v,
            Err(e) => m.skipped.push(format!("fp32 fma: {e}")),
        }
    } else {
        m.skipped.push("fp32 fma: NVRTC library (libnvrtc) not found".into());
    }
    if unsafe { cudarc::cublas::sys::is_culib_present() } {
        match bf16_gemm(ctx, &stream, cfg) {
            Ok(v) => m.bf16_matmul_tflops = v,
            Err(e) => m.skipped.push(format!("bf16 matmul: {e}")),
        }
    } else {
        m.skipped
            .push("bf16 matmul: cuBLAS library (libcublas) not found".into());
    }
    for s in &m.skipped {
        tracing::warn!("{s}");
    }
    m
}

#[derive(Debug, thiserror::Error)]
enum BenchError {
    #[error("{0}")]
    Driver(#[from] DriverError),
    #[error("NVRTC compile failed: {0}")]
    Nvrtc(String),
    #[error("cuBLAS: {0}")]
    Cublas(String),
    #[error("{0}")]
    Other(String),
}

/// Time `samples` runs of `work`, each bracketed by events, in milliseconds.
fn time_samples(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    samples: u32,
    mut work: impl FnMut() -> Result<(), BenchError>,
) -> Result<Vec<f64>, BenchError> {
    // Warm-up: first launches pay for module loading, clocks ramping, page mapping.
    work()?;
    stream.synchronize()?;
    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let mut out = Vec::with_capacity(samples as usize);
    for _ in 0..samples {
        start.record(stream)?;
        work()?;
        end.record(stream)?;
        out.push(f64::from(start.elapsed_ms(&end)?));
    }
    Ok(out)
}

fn copy_bandwidth(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    cfg: &BenchConfig,
) -> Result<Option<Measurement>, BenchError> {
    // Stay well inside free memory on small or busy GPUs.
    let (free, _) = ctx.mem_get_info()?;
    let bytes = cfg.copy_bytes.min(free / 4) & !0xFFF;
    if bytes < (1 << 20) {
        return Err(BenchError::Other(format!("only {free} bytes free")));
    }
    let n = bytes / 4;
    let src = stream.alloc_zeros::<f32>(n)?;
    let mut dst = stream.alloc_zeros::<f32>(n)?;
    let ms = time_samples(ctx, stream, cfg.repeats, || {
        for _ in 0..cfg.copies_per_sample {
            stream.memcpy_dtod(&src, &mut dst)?;
        }
        Ok(())
    })?;
    // A copy reads and writes every byte: count both, as STREAM-style copy
    // bandwidth does, so the figure compares with the datasheet bandwidth.
    let moved = 2.0 * bytes as f64 * f64::from(cfg.copies_per_sample);
    let gbs: Vec<f64> = ms.iter().map(|t| moved / (t * 1e-3) / 1e9).collect();
    Ok(Measurement::from_samples(
        &gbs,
        format!(
            "cuMemcpyDtoD of {} MiB x {} per sample, read+write bytes counted, CUDA-event timed",
            bytes >> 20,
            cfg.copies_per_sample
        ),
    ))
}

/// Eight independent FMA chains per thread keep the FP32 pipes busy without
/// depending on memory; `a` and `b` are arguments so nothing folds at compile
/// time, and the sum is stored so the loop is not dead code.
const FMA_KERNEL: &str = r#"
extern "C" __global__ void fma_loop(float *out, int iters, float a, float b) {
    float x0 = threadIdx.x * 1e-3f, x1 = x0 + 0.1f, x2 = x0 + 0.2f, x3 = x0 + 0.3f;
    float x4 = x0 + 0.4f, x5 = x0 + 0.5f, x6 = x0 + 0.6f, x7 = x0 + 0.7f;
    #pragma unroll 16
    for (int i = 0; i < iters; ++i) {
        x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
        x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
"#;
const FMA_CHAINS: f64 = 8.0;
const FMA_THREADS: u32 = 256;

fn fma_throughput(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    props: &DeviceProperties,
    cfg: &BenchConfig,
) -> Result<Option<Measurement>, BenchError> {
    let ptx = cudarc::nvrtc::compile_ptx(FMA_KERNEL).map_err(|e| BenchError::Nvrtc(format!("{e:?}")))?;
    let module = ctx.load_module(ptx)?;
    let f = module.load_function("fma_loop")?;
    let blocks = u32::try_from(props.sm_count.max(1)).unwrap_or(1) * cfg.fma_blocks_per_sm;
    let mut out = stream.alloc_zeros::<f32>((blocks * FMA_THREADS) as usize)?;
    let (iters, a, b) = (cfg.fma_iters, 0.999_999_f32, 1e-6_f32);
    let launch_cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (FMA_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let ms = time_samples(ctx, stream, cfg.repeats, || {
        let mut builder = stream.launch_builder(&f);
        builder.arg(&mut out).arg(&iters).arg(&a).arg(&b);
        // SAFETY: the kernel's signature is (float*, int, float, float) and
        // `out` holds one float per launched thread.
        unsafe { builder.launch(launch_cfg) }?;
        Ok(())
    })?;
    let flops = 2.0 * FMA_CHAINS * f64::from(iters) * f64::from(blocks * FMA_THREADS);
    let tflops: Vec<f64> = ms.iter().map(|t| flops / (t * 1e-3) / 1e12).collect();
    Ok(Measurement::from_samples(
        &tflops,
        format!(
            "NVRTC kernel, {blocks} blocks x {FMA_THREADS} threads, {FMA_CHAINS} FMA chains x {iters} iterations, 2 FLOP per FMA"
        ),
    ))
}

/// Bit pattern of the BF16 nearest below `x` (truncation is fine for test data).
fn bf16_bits(x: f32) -> u16 {
    (x.to_bits() >> 16) as u16
}

fn bf16_gemm(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    cfg: &BenchConfig,
) -> Result<Option<Measurement>, BenchError> {
    use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};

    let n = cfg.gemm_n;
    let (free, _) = ctx.mem_get_info()?;
    if 3 * n * n * 2 > free / 2 {
        return Err(BenchError::Other(format!(
            "{n}x{n} BF16 GEMM needs more than half of the {free} free bytes"
        )));
    }
    // Non-zero data: tensor cores draw less power (and may clock higher) on zeros.
    let mut state = 0x2545_f491_u32;
    let host: Vec<u16> = (0..n * n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            bf16_bits((state as f32 / u32::MAX as f32) * 2.0 - 1.0)
        })
        .collect();
    let a = stream.clone_htod(&host)?;
    let b = stream.clone_htod(&host)?;
    let mut c = stream.alloc_zeros::<u16>(n * n)?;
    let blas = cudarc::cublas::CudaBlas::new(stream.clone()).map_err(|e| BenchError::Cublas(format!("{e:?}")))?;
    let (alpha, beta) = (1.0_f32, 0.0_f32);
    let dim = i32::try_from(n).map_err(|_| BenchError::Other(format!("GEMM size {n} too large")))?;
    let ms = time_samples(ctx, stream, cfg.repeats, || {
        let (pa, _ra) = a.device_ptr(stream);
        let (pb, _rb) = b.device_ptr(stream);
        let (pc, _wc) = c.device_ptr_mut(stream);
        // SAFETY: a, b, c are n x n BF16 matrices on this stream's device;
        // alpha/beta are f32 as CUBLAS_COMPUTE_32F requires.
        unsafe {
            cudarc::cublas::result::gemm_ex(
                *blas.handle(),
                cublasOperation_t::CUBLAS_OP_N,
                cublasOperation_t::CUBLAS_OP_N,
                dim,
                dim,
                dim,
                &alpha as *const f32 as *const c_void,
                pa as *const c_void,
                cudaDataType::CUDA_R_16BF,
                dim,
                pb as *const c_void,
                cudaDataType::CUDA_R_16BF,
                dim,
                &beta as *const f32 as *const c_void,
                pc as *mut c_void,
                cudaDataType::CUDA_R_16BF,
                dim,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| BenchError::Cublas(format!("cublasGemmEx: {e:?}")))
    })?;
    let flops = 2.0 * (n as f64).powi(3);
    let tflops: Vec<f64> = ms.iter().map(|t| flops / (t * 1e-3) / 1e12).collect();
    Ok(Measurement::from_samples(
        &tflops,
        format!("cublasGemmEx {n}x{n}x{n}, BF16 in/out, FP32 compute, default algorithm, 2n^3 FLOP"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_bit_patterns() {
        assert_eq!(bf16_bits(1.0), 0x3F80);
        assert_eq!(bf16_bits(-2.0), 0xC000);
        assert_eq!(bf16_bits(0.0), 0);
    }

    #[test]
    fn quick_is_smaller_than_full() {
        let (q, f) = (BenchConfig::quick(), BenchConfig::full());
        assert!(q.quick && !f.quick);
        assert!(q.repeats < f.repeats && q.copy_bytes < f.copy_bytes && q.gemm_n < f.gemm_n);
        assert!(q.fma_iters < f.fma_iters);
    }
}

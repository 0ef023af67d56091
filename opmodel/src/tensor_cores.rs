//! Matrix work on tensor cores (TF32, 16-bit), which no training
//! measurement ran on: priced as the same work in float32 on the FP32 path
//! (what the trees know), sped up by the tensor cores' peak over that path's
//! to a power measured for the library whose kernels run it.

use tracecast_schemas::features::product_alignment;

use crate::gpu::GpuSpec;
use crate::work::{OpKind, OpWork, Tf32Path};

/// Convolutions with TF32, measured on an H100 SXM5
/// (bench/measured/h100-sxm5/kineto, ResNet-50 at batch 32): their kernels
/// took 28.31 ms a step in float32 and 9.11 ms with TF32, 3.11x faster for
/// a peak ratio of 494.7 / 66.9 = 7.39x; ln 3.11 / ln 7.39 = 0.567.
/// `bench/tf32.sh` prints both TF32 exponents.
pub(crate) const TF32_CONVOLUTION_EXPONENT: f64 = 0.567;

/// Matrix products with TF32 of more than 10 GFLOP, measured on A100s:
/// 67.79 TFLOP/s on TF32 tensor cores in a public trace, 17.32 in float32
/// in NeuSight's model graphs, 3.92x for a peak ratio of 156 / 19.5 = 8;
/// ln 3.92 / ln 8 = 0.656. cuDNN's convolutions realise less of the tensor
/// cores' peak than cuBLAS's and CUTLASS's products do.
pub(crate) const TF32_MATRIX_PRODUCT_EXPONENT: f64 = 0.656;

/// 16-bit convolutions off the kernels TF32 runs on (a GPU without TF32
/// tensor cores: Volta, Turing, a spec sheet that does not give the TF32
/// rate; or channels off 8 elements): the 16-bit/FP32 peak ratio to this
/// power. On an H100, 389 isolated convolutions with channels off 8 ran a
/// median 3.1x faster in bfloat16 than in strict float32
/// (bench/measured/h100-bf16): 14.8 to the power 0.42. On a V100,
/// `bench/half.sh` (ResNet-50, Lambda's fp16 over fp32 throughput, 2.26x)
/// gives 3.04x at 0.43 and 2.76x at 0.33: what it overprices is outside
/// the convolutions, so it fits no exponent. The power-limited T4 realises
/// less: ETS's AlexNet convolutions ran 1.56x faster in float16 for an 8x
/// peak ratio (0.214).
pub(crate) const HALF_CONVOLUTION_EXPONENT: f64 = 0.43;

/// 16-bit matrix products, fitted on isolated operators on an H100
/// (bench/measured/h100-bf16: NeuSight's 2,523 batched and 1,040 linear
/// test shapes in bfloat16), priced from the trees' float32 price of each
/// shape. Linear layers above 1 ms run 13.7x faster than in float32
/// there (median; 14.45x those with every dimension a multiple of 8),
/// near the 14.8x peak ratio, where Lambda's V100 BERT-large had fitted
/// 0.76 (7.7x). With 0.94 for aligned products and the unaligned ones'
/// exponent below, the linear layers come out at a median +3.6% (MAPE
/// 19.9%); attention's batched products, memory-bound in 16 bits, meet
/// the floor below instead (median -0.9%, MAPE 17.4%).
/// `bench/half_h100.sh` prints both.
pub(crate) const HALF_MATRIX_PRODUCT_EXPONENT: f64 = 0.94;

/// 16-bit matrix products with a row count, column count or inner size
/// that is not a multiple of 8 elements (16 bytes): cuBLAS cannot give
/// them its fast tensor-core kernels (GPT-2's vocabulary of 50257 ran on
/// `cutlass_75_tensorop_bf16_s1688gemm` in bench/corpus, the other
/// products on `nvjet_sm90`). On NeuSight's linear test shapes above 1 ms
/// in float32 on an H100 (bench/measured/h100-bf16), such layers ran
/// 4.92x faster in bfloat16 (median of 188) and aligned ones 14.45x (567):
/// ln 4.92 / ln 14.8 = 0.59. `bench/half_h100.sh` prints both medians.
pub(crate) const HALF_UNALIGNED_MATRIX_PRODUCT_EXPONENT: f64 = 0.59;

/// 16-bit matrix products with an odd dimension: 2-byte rows, which
/// cuBLAS runs on CUTLASS's `align1` kernels, the slowest it has. On
/// `bench/corpus` (an H100, strict float32 against bfloat16) GPT-2's
/// products with its 50,257-word vocabulary ran 2.30-2.46x faster in
/// bfloat16 (8 configurations of GPT-2 small and medium, median 2.40x),
/// where BERT's with its 30,522 words (an even number, off 8) ran
/// 4.66-4.95x, as NeuSight's shapes off 8 did (all of them even), and
/// the Llama-style decoder's 32,000 and T5's 32,128 13.4-15.5x:
/// ln 2.40 / ln 14.8 = 0.32.
pub(crate) const HALF_ODD_MATRIX_PRODUCT_EXPONENT: f64 = 0.32;

/// Fused attention kernels in 16 bits, measured against float32's on an
/// H100 (`bench/corpus`, strict float32 against bfloat16 under autocast,
/// 24 pairs of 6 models): PyTorch runs float32 attention on its
/// memory-efficient kernels and bfloat16 on cuDNN's, which ran 6.74-6.82x
/// faster in BERT-base and GPT-2 small and medium, 8.07x in a Llama-style
/// decoder, 5.93x in ViT-B/16 and 4.73x in T5-small (forward and backward
/// kernels, all batch sizes); the median model's 6.75x for a 14.8x peak
/// ratio is ln 6.75 / ln 14.8 = 0.71. The softmax between the two
/// products runs on the FP32 path, not the tensor cores. A sequence length
/// off 8 (ViT's 197 tokens) costs no more: the kernels tile the sequence
/// and mask the last tile.
const HALF_ATTENTION_EXPONENT: f64 = 0.71;

/// Passes over its bytes that a 16-bit convolution spends changing their
/// memory layout: cuDNN's 16-bit tensor-core kernels take channels last
/// (NHWC), PyTorch's tensors are channels first (NCHW) unless a model asks
/// otherwise, so each tensor a convolution reads or writes goes through a
/// transpose, one read and one write of its bytes. On `bench/corpus` (an
/// H100, bfloat16, batch 64) the `nchwToNhwc` / `nhwcToNchw` kernels took
/// 1.2-2.7 times the convolutions' bytes at 80% of the bandwidth in the
/// dense nets (VGG-16 7.8 ms, ResNet-50 3.5 ms), where a float32 step has
/// next to none; depthwise and small pointwise convolutions, which cuDNN
/// runs off the tensor cores, take the streaming bound instead. Priced
/// only with the TF32-based speed-up: the exponent elsewhere was fitted on
/// whole runs that held their transposes.
const LAYOUT_PASSES: f64 = 2.0;

/// Elements per 16 bytes of 16-bit data: the alignment cuBLAS's fast
/// 16-bit tensor-core kernels need of every dimension.
const HALF_ALIGNMENT: f64 = 8.0;

/// The share of its roofline a 16-bit matrix product reaches at best: at
/// 16 bits attention's batched products are bound by memory, and the
/// H100's kernels move at most about 80% of its peak bandwidth.
const HALF_ROOFLINE_SHARE: f64 = 0.8;

/// The same for a product with a dimension off 8 elements, whose rows
/// cannot be loaded 16 bytes at a time: NeuSight's batched products above
/// 0.1 ms that are bound by memory in bfloat16 on an H100 moved 44% of its
/// peak bandwidth when unaligned (median of 228) and 82% when aligned
/// (1,538). `bench/half_h100.sh` prints both.
const HALF_UNALIGNED_ROOFLINE_SHARE: f64 = 0.44;

/// For 16-bit work that tensor cores speed up on `gpu`: the least work of
/// its kind and pass, in float32, whose price is the time of launching the
/// operator's kernels, which tensor cores do not shorten. TF32 work has
/// none: its exponents are ratios of whole steps' kernel time, launches
/// included (`bench/tf32.sh`), so they already hold its launches.
pub(crate) fn launch_twin(work: &OpWork, gpu: &GpuSpec) -> Option<OpWork> {
    (is_half(work) && speedup(work, gpu) > 1.0).then(|| OpWork {
        kind: work.kind,
        pass: work.pass,
        ..OpWork::gemm(1.0, 1.0, 1.0, 1.0, 4.0)
    })
}

/// Whether `work` is 16-bit.
pub(crate) fn is_half(work: &OpWork) -> bool {
    work.dtype_bytes <= 2.0
}

/// The same work as the trees price it: float32 on the FP32 path, bytes as
/// they are (16-bit work moves half of float32's).
pub(crate) fn as_float32(work: &OpWork) -> OpWork {
    OpWork {
        tf32: Tf32Path::Off,
        dtype_bytes: if is_half(work) { 4.0 } else { work.dtype_bytes },
        ..*work
    }
}

/// Whether pricing `work` on `gpu` goes through `as_float32` and `speedup`.
pub(crate) fn needs_float32_pricing(work: &OpWork, gpu: &GpuSpec) -> bool {
    is_half(work) || gpu.tf32_peak_for(work).is_some()
}

/// How much faster `work` runs on `gpu`'s tensor cores than its float32
/// twin (`as_float32`) on the FP32 path: the peak ratio to the measured
/// power, so tensor cores no faster than that path gain nothing. 1 for
/// work that runs on no tensor cores.
pub(crate) fn speedup(work: &OpWork, gpu: &GpuSpec) -> f64 {
    let matrix = matches!(work.kind, OpKind::Gemm | OpKind::Conv);
    let convolution = work.kind == OpKind::Conv || work.tf32 == Tf32Path::Convolution;
    let (peak, exponent) = match (gpu.tf32_peak_for(work), gpu.peak_half_flops) {
        (Some(tf32), _) => (tf32, exponent_of(work.tf32)),
        (None, Some(half)) if matrix && is_half(work) && convolution => match gpu.peak_tf32_flops {
            Some(tf32) if on_tf32s_kernels(work, gpu) => return half_convolution_over_tf32(gpu, tf32, half),
            _ => (half, HALF_CONVOLUTION_EXPONENT),
        },
        (None, Some(half)) if matrix && is_half(work) => (
            half,
            if work.fused_attention {
                HALF_ATTENTION_EXPONENT
            } else if aligned_for_half_tensor_cores(work) {
                HALF_MATRIX_PRODUCT_EXPONENT
            } else if half_alignment(work) == Some(1.0) {
                HALF_ODD_MATRIX_PRODUCT_EXPONENT
            } else {
                HALF_UNALIGNED_MATRIX_PRODUCT_EXPONENT
            },
        ),
        _ => return 1.0,
    };
    (peak / gpu.peak_gemm_flops(4.0)).max(1.0).powf(exponent)
}

/// Whether a 16-bit convolution runs on the tensor-core kernels its TF32
/// twin runs on: a GPU with TF32, and channels in multiples of 8. Those
/// kernels take channels last, hence the layout transposes
/// ([`LAYOUT_PASSES`]).
fn on_tf32s_kernels(work: &OpWork, gpu: &GpuSpec) -> bool {
    let convolution = work.kind == OpKind::Conv || work.tf32 == Tf32Path::Convolution;
    convolution && is_half(work) && gpu.peak_tf32_flops.is_some() && aligned_for_half_tensor_cores(work)
}

/// A 16-bit convolution's speed-up over float32 on a GPU with TF32 tensor
/// cores: a TF32 convolution's, times the 16-bit rate over the TF32 one.
/// From Ampere on, cuDNN runs both on the same implicit-GEMM tensor-core
/// kernels (`sm80_xmma_fprop_implicit_gemm_tf32...`, `..._bf16...`), the
/// 16-bit ones at twice the rate on half the bytes. On `bench/corpus` (an
/// H100, strict float32 against bfloat16 under autocast) the dense
/// convolution nets' convolutions ran 6.0-6.5x faster (ResNet-50 and -101
/// at batch 64 and 128, VGG-16 at 64), where TF32's 3.11x times 2 gives 6.2x;
/// the fit on the V100's whole-model throughput without TF32
/// ([`HALF_CONVOLUTION_EXPONENT`]) gives the H100 3.2x. Only with channels
/// in multiples of 8: of 400 isolated convolutions on an H100
/// (bench/measured/h100-bf16), the 11 aligned ones ran a median 4.9x
/// faster in bfloat16, the 389 others 3.1x, which that exponent prices.
fn half_convolution_over_tf32(gpu: &GpuSpec, tf32: f64, half: f64) -> f64 {
    let fp32 = gpu.peak_gemm_flops(4.0);
    let tf32_speedup = (tf32 / fp32).max(1.0).powf(TF32_CONVOLUTION_EXPONENT);
    tf32_speedup * (half / tf32.max(fp32)).max(1.0)
}

/// Whether every dimension of a matrix product is a multiple of 8
/// elements, by its shape or, for a trace's kernel, by its operator's
/// `product_alignment`; a product with neither is taken to be aligned, as
/// most are. A convolution's are its channels (its implicit GEMM's columns
/// and inner size): the positions it runs over can be any number.
fn aligned_for_half_tensor_cores(work: &OpWork) -> bool {
    half_alignment(work).is_none_or(|a| a % HALF_ALIGNMENT == 0.0)
}

/// The largest power of two (up to 64) dividing every dimension of a
/// matrix product that tensor cores load, by its shape or its operator's
/// `product_alignment`; None where neither is known.
fn half_alignment(work: &OpWork) -> Option<f64> {
    match work.gemm {
        Some(g) if work.kind == OpKind::Conv => Some(f64::from(product_alignment([g.cols, g.inner, 0.0]))),
        Some(g) => Some(f64::from(product_alignment([g.rows, g.cols, g.inner]))),
        None => work.product_alignment,
    }
}

fn exponent_of(path: Tf32Path) -> f64 {
    match path {
        Tf32Path::Off => 0.0,
        Tf32Path::Convolution => TF32_CONVOLUTION_EXPONENT,
        Tf32Path::MatrixProduct => TF32_MATRIX_PRODUCT_EXPONENT,
    }
}

/// `work`'s time on `gpu` from `float32_us`, its float32 twin's price
/// there, and `launch_us`, the price of launching its kernels
/// (`launch_twin`): the rest sped up, never below the work's own roofline.
/// Tensor cores shorten the arithmetic, not the launch: a small product's
/// price stays near its launch (bench/measured/h100-bf16: linear layers of
/// about 0.1 ms in float32 ran 3.1x faster in bfloat16, those above 3 ms
/// 13-15x). A 16-bit
/// convolution that its bytes bound at the FP32 path's rate (a depthwise
/// one) gains only their halving, which the twin's price already holds:
/// cuDNN runs it on no tensor cores (bench/README.md, "Measured corpus":
/// EfficientNet-B3's convolutions ran 1.5x faster in bfloat16 on an H100,
/// ResNet-101's 6.5x).
/// Matrix products gain more than that near the ridge (NeuSight's batched
/// products of inner size 16-64 in bench/measured/h100-bf16), so the
/// bound is the convolutions' alone.
pub(crate) fn from_float32_price(work: &OpWork, gpu: &GpuSpec, float32_us: f64, launch_us: f64) -> f64 {
    let half_matrix = is_half(work) && matches!(work.kind, OpKind::Gemm | OpKind::Conv);
    // Measured on matrix products; cuDNN's convolutions are left at the aligned share.
    let unaligned_product = work.kind == OpKind::Gemm && !work.fused_attention && !aligned_for_half_tensor_cores(work);
    let share = match (half_matrix, unaligned_product) {
        (false, _) => 1.0,
        (true, false) => HALF_ROOFLINE_SHARE,
        (true, true) => HALF_UNALIGNED_ROOFLINE_SHARE,
    };
    let streaming = if half_matrix && work.kind == OpKind::Conv {
        let (compute, memory) = gpu.compute_memory_us(&as_float32(work));
        float32_us * memory / compute.max(memory).max(f64::MIN_POSITIVE)
    } else {
        0.0
    };
    let layout = if on_tf32s_kernels(work, gpu) {
        LAYOUT_PASSES * gpu.compute_memory_us(work).1 / share
    } else {
        0.0
    };
    // min/max, not clamp: a NaN price passes through instead of panicking.
    let launch = launch_us.min(float32_us).max(0.0);
    (launch + (float32_us - launch) / speedup(work, gpu) + layout)
        .max(streaming)
        .max(gpu.roofline_us(work) / share)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::EwFunc;

    fn v100_like() -> GpuSpec {
        GpuSpec {
            name: "16-bit tensor cores at 8x FP32".into(),
            peak_fp32_flops: 15.7e12,
            peak_fp32_matrix_flops: None,
            peak_half_flops: Some(125.6e12),
            peak_tf32_flops: None,
            peak_fp64_flops: Some(7.8e12),
            bandwidth: 900e9,
            sm_count: 80.0,
            l2_bytes: 6.0 * 1024.0 * 1024.0,
        }
    }

    /// 16-bit matrix work is float32 work with half the bytes, sped up by
    /// the measured power of the peak ratio (convolutions less than matrix
    /// products); 16-bit streaming work gains only its halved bytes.
    #[test]
    fn half_matrix_work_runs_on_tensor_cores() {
        let gpu = v100_like();
        let product = OpWork::linear(1.0, 4096.0, 4096.0, 4096.0).in_half();
        assert_eq!(as_float32(&product).dtype_bytes, 4.0);
        assert_eq!(as_float32(&product).bytes, product.bytes);
        let ratio: f64 = 125.6 / 15.7;
        assert!((speedup(&product, &gpu) - ratio.powf(HALF_MATRIX_PRODUCT_EXPONENT)).abs() < 1e-9);
        let conv = OpWork::conv2d(64.0, 256.0, 256.0, 3.0, 56.0, 1.0, 1.0).in_half();
        assert!((speedup(&conv, &gpu) - ratio.powf(HALF_CONVOLUTION_EXPONENT)).abs() < 1e-9);
        assert!(speedup(&conv, &gpu) < speedup(&product, &gpu));
        let relu = OpWork::elementwise(EwFunc::Relu, 1e8, 1.0).in_half();
        assert!(needs_float32_pricing(&relu, &gpu));
        assert_eq!(speedup(&relu, &gpu), 1.0);
        // Without 16-bit tensor cores (a spec sheet that lacks the rate),
        // or in float32, no speed-up.
        let sheet = GpuSpec {
            peak_half_flops: None,
            ..gpu.clone()
        };
        assert_eq!(speedup(&product, &sheet), 1.0);
        let float32 = OpWork::linear(1.0, 4096.0, 4096.0, 4096.0);
        assert!(!needs_float32_pricing(&float32, &gpu));
        assert_eq!(speedup(&float32, &gpu), 1.0);
        // Never above 80% of the roofline; streaming work up to all of it.
        let priced = from_float32_price(&product, &gpu, 1e-3, 0.0);
        assert_eq!(priced, gpu.roofline_us(&product) / HALF_ROOFLINE_SHARE);
        assert_eq!(from_float32_price(&relu, &gpu, 1e-9, 0.0), gpu.roofline_us(&relu));
        // A convolution bound by its bytes (8 channels in and out): no
        // faster than its twin, whose price already streams 16-bit bytes;
        // a matrix product of that shape runs on tensor cores.
        let mut thin = OpWork::linear(1.0, 65536.0, 8.0, 8.0).in_half();
        assert!(from_float32_price(&thin, &gpu, 100.0, 0.0) < 50.0);
        thin.kind = OpKind::Conv;
        assert_eq!(from_float32_price(&thin, &gpu, 100.0, 0.0), 100.0);
        // Bound by its arithmetic: the tensor cores' speed-up.
        let priced = from_float32_price(&product, &gpu, 1e5, 0.0);
        assert!((priced - 1e5 / speedup(&product, &gpu)).abs() < 1e-6, "{priced}");
        // A product with a dimension off 8 elements (BERT's vocabulary)
        // gains less than an aligned one, one with an odd dimension
        // (GPT-2's) less still.
        let unaligned = OpWork::linear(1.0, 4096.0, 768.0, 30522.0).in_half();
        assert!((speedup(&unaligned, &gpu) - ratio.powf(HALF_UNALIGNED_MATRIX_PRODUCT_EXPONENT)).abs() < 1e-9);
        assert!(speedup(&unaligned, &gpu) < speedup(&OpWork::linear(1.0, 4096.0, 768.0, 30528.0).in_half(), &gpu));
        let odd = OpWork::linear(1.0, 4096.0, 768.0, 50257.0).in_half();
        assert!((speedup(&odd, &gpu) - ratio.powf(HALF_ODD_MATRIX_PRODUCT_EXPONENT)).abs() < 1e-9);
        // ... and moves its bytes at a lower share of the bandwidth; a
        // convolution of that shape keeps the aligned share.
        assert_eq!(
            from_float32_price(&unaligned, &gpu, 1e-3, 0.0),
            gpu.roofline_us(&unaligned) / HALF_UNALIGNED_ROOFLINE_SHARE
        );
        // A trace's kernel carries no dimensions, only its operator's
        // alignment: even below 8 it gains as little, odd as little as an
        // odd shape; unknown, as much as aligned.
        let kernel = OpWork {
            gemm: None,
            ..unaligned
        };
        let with = |alignment| OpWork {
            product_alignment: alignment,
            ..kernel
        };
        assert_eq!(speedup(&with(Some(1.0)), &gpu), speedup(&odd, &gpu));
        assert_eq!(speedup(&with(Some(2.0)), &gpu), speedup(&unaligned, &gpu));
        assert_eq!(speedup(&with(Some(4.0)), &gpu), speedup(&unaligned, &gpu));
        assert_eq!(speedup(&with(Some(8.0)), &gpu), speedup(&with(None), &gpu));
        assert!(speedup(&with(Some(1.0)), &gpu) < speedup(&with(Some(64.0)), &gpu));
        let unaligned_conv = OpWork {
            kind: OpKind::Conv,
            ..unaligned
        };
        assert_eq!(
            from_float32_price(&unaligned_conv, &gpu, 1e-3, 0.0),
            gpu.roofline_us(&unaligned_conv) / HALF_ROOFLINE_SHARE
        );
        // Only 16-bit matrix work has a launch twin (TF32's exponents hold
        // their launches).
        let small = OpWork::linear(1.0, 64.0, 64.0, 64.0).in_half();
        assert!(launch_twin(&small, &gpu).is_some_and(|t| t.kind == OpKind::Gemm && t.flops < 10.0));
        assert!(launch_twin(&relu, &gpu).is_none());
        assert!(launch_twin(&float32, &gpu).is_none());
        // The launch is not sped up: 10 µs of a 100 µs product stay.
        let priced = from_float32_price(&small, &gpu, 100.0, 10.0);
        assert!(
            (priced - (10.0 + 90.0 / speedup(&small, &gpu))).abs() < 1e-9,
            "{priced}"
        );
        // A launch priced above the product's own price is the whole of it.
        assert_eq!(from_float32_price(&small, &gpu, 5.0, 8.0), 5.0);
    }

    /// On GPUs whose 16-bit tensor cores are twice their TF32 ones, 16-bit
    /// matrix work is never priced slower than TF32 work.
    #[test]
    fn half_is_never_slower_than_tf32() {
        let catalog = tracecast_schemas::hardware::builtin_catalog().unwrap();
        for name in ["A100 80GB", "H100", "H200", "L4", "A10"] {
            let gpu = GpuSpec::builtin(&catalog, name).unwrap_or_else(|| panic!("{name}"));
            for (kind, path) in [
                (OpKind::Conv, Tf32Path::Convolution),
                (OpKind::Gemm, Tf32Path::MatrixProduct),
            ] {
                let mut tf32 = OpWork::linear(1.0, 4096.0, 4096.0, 4096.0);
                tf32.kind = kind;
                tf32.tf32 = path;
                let half = OpWork {
                    tf32: Tf32Path::Off,
                    ..tf32.in_half()
                };
                assert!(
                    speedup(&half, &gpu) >= speedup(&tf32, &gpu),
                    "{name} {kind:?}: 16-bit {} < TF32 {}",
                    speedup(&half, &gpu),
                    speedup(&tf32, &gpu)
                );
            }
        }
    }

    /// With TF32 tensor cores, a 16-bit convolution gains TF32's speed-up
    /// times the 16-bit rate over the TF32 one (the H100: 3.11x, then 2x);
    /// without them, the peak ratio to the fitted power.
    #[test]
    fn half_convolutions_double_tf32s_where_the_gpu_has_it() {
        let catalog = tracecast_schemas::hardware::builtin_catalog().unwrap();
        let h100 = GpuSpec::builtin(&catalog, "H100").unwrap();
        let mut tf32 = OpWork::conv2d(64.0, 256.0, 256.0, 3.0, 56.0, 1.0, 1.0);
        tf32.tf32 = Tf32Path::Convolution;
        let half = OpWork {
            tf32: Tf32Path::Off,
            ..tf32.in_half()
        };
        assert!((speedup(&tf32, &h100) - 3.11).abs() < 0.01, "{}", speedup(&tf32, &h100));
        assert!((speedup(&half, &h100) - 2.0 * speedup(&tf32, &h100)).abs() < 1e-9);
        let no_tf32 = GpuSpec {
            peak_tf32_flops: None,
            ..h100.clone()
        };
        let ratio = h100.peak_half_flops.unwrap() / h100.peak_fp32_flops;
        assert!((speedup(&half, &no_tf32) - ratio.powf(HALF_CONVOLUTION_EXPONENT)).abs() < 1e-9);
        // Channels off 8 elements: the exponent too, whatever the positions.
        let odd_channels = OpWork::conv2d(64.0, 11.0, 1906.0, 3.0, 56.0, 1.0, 1.0).in_half();
        assert!((speedup(&odd_channels, &h100) - ratio.powf(HALF_CONVOLUTION_EXPONENT)).abs() < 1e-9);
        let odd_positions = OpWork::conv2d(37.0, 64.0, 256.0, 3.0, 7.0, 1.0, 1.0).in_half();
        assert_eq!(speedup(&odd_positions, &h100), speedup(&half, &h100));
    }

    /// A fused attention kernel in 16 bits gains what cuDNN's attention
    /// gained over PyTorch's float32 one on an H100 (6.75x), less than a
    /// matrix product of its size, and whatever its sequence's alignment;
    /// a product with an odd dimension gains half what an even one does.
    #[test]
    fn fused_attention_and_odd_products_gain_less_than_a_product() {
        let catalog = tracecast_schemas::hardware::builtin_catalog().unwrap();
        let h100 = GpuSpec::builtin(&catalog, "H100").unwrap();
        let product = OpWork::linear(1.0, 8192.0, 768.0, 768.0).in_half();
        let attention = OpWork {
            fused_attention: true,
            product_alignment: Some(1.0),
            ..product
        };
        let gain = speedup(&attention, &h100);
        assert!((gain - 6.75).abs() < 0.3, "{gain}");
        assert!(speedup(&product, &h100) > 1.5 * gain);
        // An odd vocabulary (GPT-2's 50,257 words) gains least, 2.4x; a
        // trace's kernel carries its operator's alignment, no shape.
        let odd = OpWork {
            gemm: None,
            product_alignment: Some(1.0),
            ..product
        };
        let even = OpWork {
            product_alignment: Some(2.0),
            ..odd
        };
        assert!((speedup(&odd, &h100) - 2.4).abs() < 0.1, "{}", speedup(&odd, &h100));
        assert!(speedup(&even, &h100) > 1.9 * speedup(&odd, &h100));
    }

    /// TF32: float32 matrix work allowed on it, on GPUs that have it;
    /// tensor cores slower than the FP32 path gain nothing.
    #[test]
    fn tf32_speedups() {
        let gpu = GpuSpec {
            peak_tf32_flops: Some(4.0 * 15.7e12),
            ..v100_like()
        };
        let mut product = OpWork::linear(1.0, 4096.0, 4096.0, 4096.0);
        assert_eq!(speedup(&product, &gpu), 1.0, "TF32 off");
        product.tf32 = Tf32Path::MatrixProduct;
        assert!((speedup(&product, &gpu) - 4f64.powf(TF32_MATRIX_PRODUCT_EXPONENT)).abs() < 1e-9);
        let mut conv = OpWork::conv2d(64.0, 256.0, 256.0, 3.0, 56.0, 1.0, 1.0);
        conv.tf32 = Tf32Path::Convolution;
        assert!(speedup(&conv, &gpu) < speedup(&product, &gpu));
        let slow = GpuSpec {
            peak_tf32_flops: Some(0.5 * 15.7e12),
            ..v100_like()
        };
        assert_eq!(speedup(&product, &slow), 1.0);
    }
}

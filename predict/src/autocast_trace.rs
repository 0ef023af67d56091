//! A float32 trace's step as `torch.autocast` would run it in 16 bits, for
//! `predict --precision bf16|fp16`: which kernels go to 16 bits, and which
//! casts autocast adds. Matrix products and convolutions run in 16 bits on
//! inputs cast from float32; autocast's float32 list (softmax, norms,
//! losses) runs in float32 on inputs cast back; every other kernel runs in
//! its inputs' type, and in float32 when one input is float32 (PyTorch
//! promotes, converting inline). So a convolution net, whose activations
//! go from convolution to batch norm to ReLU, runs almost wholly in 16 bits
//! with few casts, while a transformer keeps its residual stream, its norms
//! and its softmaxes in float32 and casts each matrix product's input
//! (bench/README.md, "Measured corpus": `aten::copy_` kernels take 32.5 ms
//! of GPT-2 small's bfloat16 step at batch 32 on an H100).
//!
//! A trace names no tensors, only each operator's input sizes, so a
//! kernel's first input's type is that of the kernel before it when the
//! sizes agree (a matrix product's output, whose size the trace does not
//! give, is taken as the next kernel's first input; a two-dimensional
//! product's follows from its FLOPs and inputs), else that of the last
//! output of as many elements, else float32 (weights and other parameters).
//! A second input of the first's size is the other operand of a residual
//! addition: float32 where a float32 op made tensors of that size in the
//! step (a transformer's norms feed its residual stream). A smaller second
//! input is a parameter (batch norm's scale, a bias): it decides nothing,
//! and a matrix product's weight is cast.
//! In the backward pass a matrix product reads its saved 16-bit operands,
//! so only the gradient arriving from a float32 kernel is cast.

use std::collections::{HashMap, HashSet};

use tracecast_opmodel::{HalfType, OpKind};
use tracecast_schemas::features::stable_code;

/// Operators autocast runs in float32 whatever their inputs (PyTorch's
/// CUDA float32 list), by the names a trace records. Forward kernels only:
/// the backward pass runs outside autocast, in its tensors' types (the
/// backward of `pow` calls `pow` on the float32 input it saved).
const FLOAT32_OPS: [&str; 35] = [
    "aten::softmax",
    "aten::_softmax",
    "aten::log_softmax",
    "aten::_log_softmax",
    "aten::layer_norm",
    "aten::native_layer_norm",
    "aten::group_norm",
    "aten::native_group_norm",
    "aten::cross_entropy_loss",
    "aten::nll_loss",
    "aten::nll_loss_nd",
    "aten::nll_loss_forward",
    "aten::mse_loss",
    "aten::l1_loss",
    "aten::smooth_l1_loss",
    "aten::kl_div",
    "aten::binary_cross_entropy_with_logits",
    "aten::pow",
    "aten::rsqrt",
    "aten::reciprocal",
    "aten::exp",
    "aten::expm1",
    "aten::log",
    "aten::log1p",
    "aten::log2",
    "aten::log10",
    "aten::sum",
    "aten::prod",
    "aten::cumsum",
    "aten::cumprod",
    "aten::norm",
    "aten::linalg_vector_norm",
    "aten::softplus",
    "aten::cosine_similarity",
    "aten::erfinv",
];

/// The backward operators of float32-list operators that have names of
/// their own: they run on float32 tensors, the gradient cast up first.
const FLOAT32_BACKWARD_OPS: [&str; 6] = [
    "aten::_softmax_backward_data",
    "aten::_log_softmax_backward_data",
    "aten::native_layer_norm_backward",
    "aten::native_group_norm_backward",
    "aten::nll_loss_backward",
    "aten::mse_loss_backward",
];

/// Operators whose 16-bit kernels do not follow their halved bytes, by the
/// names a float32 trace records: their 16-bit kernels' time over their
/// float32 kernels' time, for the 16-bit type named (`None`: both).
/// (PyTorch's own depthwise convolution, the same kernel in both types,
/// is found by [`StreamTypes`], since its backward has no name of its own.)
/// cuDNN's batch norm takes no bfloat16 input, so under bfloat16 autocast
/// PyTorch's native batch norm replaces it: the same passes over the
/// activations in half the bytes, at about a third of cuDNN's bandwidth
/// (forward). PyTorch's pooling kernels compute each output's window and
/// index, bound by that arithmetic rather than by their bytes. On
/// `bench/corpus` (44 pairs of one training configuration in float32 and
/// bfloat16 on an H100, 11 convolution nets at 4 batch sizes) the
/// depthwise convolutions took 0.97-1.05x their float32 time, batch
/// norm's forward kernels 1.57x (median; 1.27-1.81x) and its backward
/// ones 1.12x (0.93-1.27x), max pooling 1.02x (0.95-1.03x; 20 pairs) and
/// its backward 0.99x (0.98-1.00x), average pooling 0.94x and its backward
/// 0.98x (DenseNet-121's 4 pairs). The batch-norm ratios are for training
/// steps: an inference step, which the corpus has none of, keeps its
/// float32 time (cuDNN's and PyTorch's inference kernels are one pass each).
const SIXTEEN_BIT_TIME_RATIOS: [(&str, Option<HalfType>, f64); 6] = [
    ("aten::cudnn_batch_norm", Some(HalfType::BFloat16), 1.57),
    ("aten::cudnn_batch_norm_backward", Some(HalfType::BFloat16), 1.12),
    ("aten::max_pool2d_with_indices", None, 1.0),
    ("aten::max_pool2d_with_indices_backward", None, 1.0),
    ("aten::avg_pool2d", None, 0.94),
    ("aten::avg_pool2d_backward", None, 0.98),
];

/// An element-wise arithmetic operator that broadcasts one input over the
/// other (a bias added over an image's pixels, a squeeze-excitation scale)
/// runs PyTorch's general loop, which computes each element's offsets,
/// instead of its vectorised one: bound by that arithmetic, it gains
/// little from 16-bit bytes. On `bench/corpus` such kernels (adds and
/// multiplies) took 0.92x their float32 time in bfloat16 (median over 39
/// configuration pairs of 11 models; quartiles 0.83x and 1.01x), where
/// their halved bytes priced them at about 0.6x.
const BROADCAST_TIME_RATIO: f64 = 0.92;

/// PyTorch's element-wise arithmetic on two tensors, by the names a trace
/// records: the operators [`BROADCAST_TIME_RATIO`] is for (not a norm or
/// a loss that reads a smaller tensor beside its input).
const BINARY_ARITHMETIC_OPS: [&str; 8] = [
    "aten::add",
    "aten::add_",
    "aten::sub",
    "aten::sub_",
    "aten::mul",
    "aten::mul_",
    "aten::div",
    "aten::div_",
];

/// One of autocast's cast kernels: its launch, at least (the median of the
/// casts of up to 10k elements in `bench/corpus`'s bfloat16 runs on an
/// H100, 1.6 µs, over 7k kernels) ...
const CAST_LAUNCH_US: f64 = 1.6;
/// ... and its bytes streamed at this share of the GPU's peak bandwidth
/// (the median of the casts of over 10M elements there: 2.87 TB/s of
/// 3.35, over 1.8k kernels).
const CAST_STREAM_SHARE: f64 = 0.86;

/// The GPU time, µs, of autocast's casts of `elements` in `tensors`
/// tensors (float32 to 16 bits or back: 6 bytes an element) on a GPU of
/// `bandwidth` bytes/s. Not the op model's price: it learned isolated
/// operators whose times include their harness's cost of each call, and
/// priced a cast of 16k elements at 13 µs where the corpus's took 2.
pub(crate) fn cast_us(elements: f64, tensors: u32, bandwidth: f64) -> f64 {
    f64::from(tensors) * CAST_LAUNCH_US + 6.0 * elements / (CAST_STREAM_SHARE * bandwidth) * 1e6
}

/// Two-dimensional matrix products, by the names a trace records, whose
/// inputs are their two factors: `mm(a [M, K], b [K, N])` and
/// `linear(x [.., K], w [N, K])`, so that their output, M x N elements, is
/// (FLOPs / 2)^2 / (a x b). GPT-2's LM head (an `aten::mm`) writes 823M
/// bfloat16 logits at batch 16 that the loss casts to float32 a few small
/// kernels later (the labels' shift).
const TWO_FACTOR_PRODUCT_OPS: [&str; 2] = ["aten::mm", "aten::linear"];

/// PyTorch's own depthwise convolution kernels, by the operators a trace
/// names (the backward one before PyTorch 1.11). Newer PyTorch launches
/// the backward from `aten::convolution_backward`, as it does cuDNN's.
const NATIVE_DEPTHWISE_OPS: [&str; 2] = ["aten::_conv_depthwise2d", "aten::_conv_depthwise2d_backward"];

/// The `op_code`s of the operators whose 16-bit kernels a what-if prices
/// from their float32 time ([`SIXTEEN_BIT_TIME_RATIOS`]), and of those it
/// so prices where they broadcast ([`BINARY_ARITHMETIC_OPS`]).
pub(crate) struct SixteenBitTimeRatios {
    entries: Vec<(i32, Option<HalfType>, f64)>,
    binary_arithmetic: Vec<i32>,
}

impl SixteenBitTimeRatios {
    pub fn new() -> SixteenBitTimeRatios {
        SixteenBitTimeRatios {
            entries: SIXTEEN_BIT_TIME_RATIOS
                .iter()
                .map(|&(name, half, ratio)| (stable_code(name), half, ratio))
                .collect(),
            binary_arithmetic: op_codes(&BINARY_ARITHMETIC_OPS),
        }
    }

    /// A kernel that autocast runs in `half`: its time over its float32
    /// time, where that does not follow its bytes. `training` says whether
    /// its step has a backward pass.
    pub fn ratio(&self, kernel: &TraceKernel, autocast: &Autocast, half: HalfType, training: bool) -> Option<f64> {
        if autocast.native_depthwise {
            return Some(1.0);
        }
        let named = self
            .entries
            .iter()
            .find(|(code, only, _)| *code == kernel.op_code && only.is_none_or(|h| h == half))
            .map(|&(_, _, ratio)| if training { ratio } else { ratio.min(1.0) });
        named.or_else(|| {
            (self.binary_arithmetic.contains(&kernel.op_code) && kernel.broadcasts()).then_some(BROADCAST_TIME_RATIO)
        })
    }
}

/// The feature tables' `op_code`s of operators named as a trace names them.
fn op_codes(names: &[&str]) -> Vec<i32> {
    names.iter().map(|n| stable_code(n)).collect()
}

/// The `op_code`s of the operators a 16-bit what-if keeps in float32.
pub(crate) struct Float32Ops {
    forward: Vec<i32>,
    backward: Vec<i32>,
}

impl Float32Ops {
    pub fn new() -> Float32Ops {
        Float32Ops {
            forward: op_codes(&FLOAT32_OPS),
            backward: op_codes(&FLOAT32_BACKWARD_OPS),
        }
    }

    /// Whether a kernel of the operator `op_code`, in the backward pass or
    /// not, runs in float32 under autocast whatever its inputs.
    pub fn contains(&self, op_code: i32, backward: bool) -> bool {
        self.backward.contains(&op_code) || (!backward && self.forward.contains(&op_code))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    Float32,
    Half,
}

/// One kernel of the recorded step, in launch order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TraceKernel {
    /// The launching operator's `op_code`: kernels one after another of
    /// one operator and inputs are one operator's (a convolution's layout
    /// transposes, a product's bias copy or split reduction).
    pub op_code: i32,
    /// The launching operator's kind where it says more than the kernel's
    /// family (every kernel of a convolution is the convolution's).
    pub kind: OpKind,
    pub backward: bool,
    /// Kept in float32 whatever its inputs (`Float32Ops`). The optimizer's
    /// kernels are not passed at all: they stay as recorded.
    pub float32: bool,
    /// Elements of the launching operator's first and second tensor
    /// inputs; NaN where the trace gives no shapes.
    pub in0: f64,
    pub in1: f64,
    /// For a grouped convolution, the input channels of each group (1:
    /// depthwise); NaN otherwise (the feature table's `conv_group_width`).
    pub group_width: f64,
    /// Its share of its operator's FLOPs (NaN where unknown).
    pub flops: f64,
}

impl TraceKernel {
    /// Its two tensor inputs differ in size: one is broadcast over the other.
    fn broadcasts(&self) -> bool {
        let sized = |n: f64| n.is_finite() && n > 1.0;
        sized(self.in0) && sized(self.in1) && self.in0 != self.in1
    }
}

/// What autocast does with one kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Autocast {
    /// The kernel runs in 16 bits.
    pub half: bool,
    /// Elements autocast converts before it (float32 to 16 bits for a
    /// matrix product's inputs, back for a float32-list op's).
    pub cast_elements: f64,
    /// The tensors those elements are: one `aten::to` call each.
    pub cast_tensors: u32,
    /// PyTorch's own depthwise convolution kernel (not cuDNN's), the same
    /// kernel in 16 bits: a forward `aten::_conv_depthwise2d`, or the
    /// backward of a depthwise convolution whose input one of those read.
    pub native_depthwise: bool,
}

/// The last output: its element count (None: a matrix product's, size
/// unknown, read by the next kernel whatever its size) and type.
type Last = (Option<f64>, Dtype);

/// Autocast's decision for every kernel of one step, in order. Kernels
/// one after another of one operator and inputs are decided together, as
/// a matrix product where any of them is one (a bias copied into place
/// before the product belongs to it); the casts go before the first.
pub(crate) fn autocast_step(kernels: &[TraceKernel]) -> Vec<Autocast> {
    let mut state = StreamTypes {
        native_depthwise_codes: op_codes(&NATIVE_DEPTHWISE_OPS),
        two_factor_product_codes: op_codes(&TWO_FACTOR_PRODUCT_OPS),
        ..StreamTypes::default()
    };
    let mut decisions = Vec::with_capacity(kernels.len());
    for operator in kernels.chunk_by(|a, b| {
        a.op_code == b.op_code && a.in0.to_bits() == b.in0.to_bits() && a.in1.to_bits() == b.in1.to_bits()
    }) {
        let matrix = operator.iter().find(|k| matches!(k.kind, OpKind::Gemm | OpKind::Conv));
        let deciding = matrix.unwrap_or(&operator[0]);
        let flops = operator.iter().map(|k| k.flops).sum();
        let decision = Autocast {
            native_depthwise: state.runs_native_depthwise(deciding),
            ..state.decide(deciding, flops)
        };
        decisions.push(decision);
        decisions.extend(std::iter::repeat_n(
            Autocast {
                cast_elements: 0.0,
                cast_tensors: 0,
                ..decision
            },
            operator.len() - 1,
        ));
    }
    decisions
}

/// What the step has produced so far, by element count.
#[derive(Default)]
struct StreamTypes {
    /// The type of the last output of each size (as bits).
    produced: HashMap<u64, Dtype>,
    /// Sizes some float32 kernel has produced.
    float32_sizes: HashSet<u64>,
    last: Option<Last>,
    /// `NATIVE_DEPTHWISE_OPS`'s codes, and the input sizes (as bits) their
    /// forward kernels read in the step.
    native_depthwise_codes: Vec<i32>,
    native_depthwise_inputs: HashSet<u64>,
    /// `TWO_FACTOR_PRODUCT_OPS`'s codes.
    two_factor_product_codes: Vec<i32>,
}

impl StreamTypes {
    fn stored(&self, n: f64) -> Dtype {
        self.produced.get(&n.to_bits()).copied().unwrap_or(Dtype::Float32)
    }

    /// The types of `k`'s two inputs (None: a scalar, no shapes, or a
    /// parameter that decides nothing; a matrix product's are all typed).
    fn inputs(&self, k: &TraceKernel, matrix: bool) -> [(f64, Option<Dtype>); 2] {
        let sized = |n: f64| n.is_finite() && n > 1.0;
        let first = sized(k.in0).then(|| match self.last {
            Some((None, dtype)) => dtype,
            Some((Some(size), dtype)) if size == k.in0 => dtype,
            _ => self.stored(k.in0),
        });
        // Only an operand of the first's size decides the type: a smaller
        // one is a parameter (batch norm's scale, a bias) that the kernel
        // reads in float32 without promoting its input.
        let second = (sized(k.in1) && (matrix || k.in1 == k.in0)).then(|| {
            if k.in1 == k.in0 && self.float32_sizes.contains(&k.in1.to_bits()) {
                Dtype::Float32
            } else {
                self.stored(k.in1)
            }
        });
        [(k.in0, first), (k.in1, second)]
    }

    /// Whether `k` is PyTorch's own depthwise convolution. PyTorch picks
    /// a convolution's backward kernels as it picked its forward ones, and
    /// a depthwise backward reads the forward's input as its second.
    fn runs_native_depthwise(&mut self, k: &TraceKernel) -> bool {
        if self.native_depthwise_codes.contains(&k.op_code) {
            if !k.backward {
                self.native_depthwise_inputs.insert(k.in0.to_bits());
            }
            return true;
        }
        k.backward
            && k.kind == OpKind::Conv
            && k.group_width == 1.0
            && self.native_depthwise_inputs.contains(&k.in1.to_bits())
    }

    /// The elements a matrix product writes, where its kind and shapes
    /// tell (`TWO_FACTOR_PRODUCT_OPS`); `flops` are the operator's.
    fn product_output(&self, k: &TraceKernel, flops: f64) -> Option<f64> {
        let output = (flops / 2.0).powi(2) / (k.in0 * k.in1);
        (self.two_factor_product_codes.contains(&k.op_code) && output.is_finite() && output >= 1.0)
            .then(|| output.round())
    }

    /// `k` decides for its operator, of `flops` FLOPs.
    fn decide(&mut self, k: &TraceKernel, flops: f64) -> Autocast {
        let matrix = !k.float32 && matches!(k.kind, OpKind::Gemm | OpKind::Conv);
        let inputs = self.inputs(k, matrix);
        let elements_of = |inputs: &[(f64, Option<Dtype>)], dtype: Dtype| {
            inputs.iter().filter(|(_, t)| *t == Some(dtype)).map(|(n, _)| n).sum()
        };
        let tensors_of = |inputs: &[(f64, Option<Dtype>)], dtype: Dtype| {
            inputs.iter().filter(|(_, t)| *t == Some(dtype)).count() as u32
        };
        if matrix {
            let arriving = if k.backward { &inputs[..1] } else { &inputs[..] };
            // The next kernel reads the output, whatever its size (a
            // chunk of it: the queries of a fused projection); a later one
            // finds it by its size where that is known.
            if let Some(n) = self.product_output(k, flops) {
                self.produced.insert(n.to_bits(), Dtype::Half);
            }
            self.last = Some((None, Dtype::Half));
            return Autocast {
                half: true,
                cast_elements: elements_of(arriving, Dtype::Float32),
                cast_tensors: tensors_of(arriving, Dtype::Float32),
                ..Autocast::default()
            };
        }
        let output = k.in0.max(k.in1);
        if !(output.is_finite() && output > 0.0) {
            // No shapes: it runs in the type of the kernel before it.
            let half = !k.float32 && self.last.is_some_and(|(_, t)| t == Dtype::Half);
            return Autocast {
                half,
                ..Autocast::default()
            };
        }
        let decision = if k.float32 {
            Autocast {
                half: false,
                cast_elements: elements_of(&inputs, Dtype::Half),
                cast_tensors: tensors_of(&inputs, Dtype::Half),
                ..Autocast::default()
            }
        } else {
            let half = inputs.iter().all(|(_, t)| *t != Some(Dtype::Float32))
                && inputs.iter().any(|(_, t)| *t == Some(Dtype::Half));
            Autocast {
                half,
                ..Autocast::default()
            }
        };
        let dtype = if decision.half { Dtype::Half } else { Dtype::Float32 };
        self.produced.insert(output.to_bits(), dtype);
        if dtype == Dtype::Float32 {
            self.float32_sizes.insert(output.to_bits());
        }
        self.last = Some((Some(output), dtype));
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Softmax, norms, `pow` and the loss stay float32 under autocast;
    /// batch norm, matrix products and activations go to 16 bits; in the
    /// backward pass only the float32 ops' own backward names do.
    #[test]
    fn autocast_keeps_its_float32_list_in_float32() {
        let ops = Float32Ops::new();
        let code = |name: &str| stable_code(name);
        for name in ["aten::_softmax", "aten::pow", "aten::nll_loss_forward"] {
            assert!(ops.contains(code(name), false), "{name}");
        }
        assert!(ops.contains(code("aten::native_layer_norm_backward"), true));
        assert!(!ops.contains(code("aten::pow"), true));
        for name in ["aten::addmm", "aten::native_batch_norm", "aten::gelu"] {
            assert!(!ops.contains(code(name), false), "{name}");
        }
    }

    /// Batch norm in bfloat16 is PyTorch's own, slower than cuDNN's
    /// float32 in training and no faster in inference (cuDNN's float16
    /// batch norm stays); pooling, a broadcasting element-wise kernel and
    /// PyTorch's own depthwise convolution gain (almost) nothing, in both
    /// 16-bit types.
    #[test]
    fn pytorchs_own_kernels_are_priced_from_their_float32_time() {
        let ratios = SixteenBitTimeRatios::new();
        let half = Autocast {
            half: true,
            ..Autocast::default()
        };
        let named = |name: &str, kind: OpKind, in0: f64, in1: f64| TraceKernel {
            op_code: stable_code(name),
            ..kernel(kind, false, in0, in1)
        };
        let (act, channels) = (1e6, 64.0);
        let bias_add = named("aten::add_", OpKind::Elementwise, act, channels);
        let residual_add = named("aten::add_", OpKind::Elementwise, act, act);
        let convolution = named("aten::cudnn_convolution", OpKind::Conv, act, 1e4);
        let pool = named(
            "aten::max_pool2d_with_indices_backward",
            OpKind::Elementwise,
            act / 4.0,
            act,
        );
        let depthwise = Autocast {
            native_depthwise: true,
            ..half
        };
        for h in [HalfType::BFloat16, HalfType::Float16] {
            assert_eq!(ratios.ratio(&convolution, &half, h, true), None);
            assert_eq!(ratios.ratio(&residual_add, &half, h, true), None);
            assert_eq!(ratios.ratio(&bias_add, &half, h, true), Some(BROADCAST_TIME_RATIO));
            assert_eq!(ratios.ratio(&pool, &half, h, true), Some(1.0));
            assert_eq!(ratios.ratio(&convolution, &depthwise, h, true), Some(1.0));
        }
        // Batch norm reads its scale [C] beside the activations: its own
        // ratio, not the broadcast one.
        let norm = named("aten::cudnn_batch_norm", OpKind::Elementwise, act, channels);
        let norm_backward = named("aten::cudnn_batch_norm_backward", OpKind::Elementwise, act, act);
        let forward = ratios.ratio(&norm, &half, HalfType::BFloat16, true);
        let backward = ratios.ratio(&norm_backward, &half, HalfType::BFloat16, true);
        assert!(forward.is_some_and(|r| r > 1.5) && backward.is_some_and(|r| r > 1.0 && r < 1.5));
        assert_eq!(ratios.ratio(&norm, &half, HalfType::BFloat16, false), Some(1.0));
        assert_eq!(ratios.ratio(&norm, &half, HalfType::Float16, true), None);
    }

    /// A weight's cast costs its launch; an activation's streams its bytes.
    #[test]
    fn a_cast_is_a_launch_and_a_stream_of_its_bytes() {
        let h100 = 3.35e12;
        assert!((cast_us(16_384.0, 1, h100) - 1.63).abs() < 0.01);
        // GPT-2 small's activations at batch 16: 12.6M elements, 28 µs.
        let activations = cast_us(16.0 * 1024.0 * 768.0, 1, h100);
        assert!(activations > 27.0 && activations < 30.0, "{activations}");
        assert_eq!(cast_us(0.0, 2, h100), 2.0 * CAST_LAUNCH_US);
    }

    fn kernel(kind: OpKind, float32: bool, in0: f64, in1: f64) -> TraceKernel {
        TraceKernel {
            op_code: kind as i32,
            kind,
            backward: false,
            float32,
            in0,
            in1,
            group_width: f64::NAN,
            flops: f64::NAN,
        }
    }

    /// A depthwise convolution on PyTorch's own kernel, and its backward,
    /// keep their float32 time; cuDNN's depthwise backward (ConvNeXt's,
    /// whose forward was cuDNN's) and a pointwise one reading the same
    /// input (EfficientNet's projection after a depthwise of stride 1) do
    /// not.
    #[test]
    fn pytorchs_own_depthwise_convolution_is_found_in_both_passes() {
        let (act, weight) = (1e6, 864.0);
        let mut native = kernel(OpKind::Conv, false, act, weight);
        native.op_code = stable_code("aten::_conv_depthwise2d");
        let mut cudnn = kernel(OpKind::Conv, false, 2.0 * act, weight);
        cudnn.op_code = stable_code("aten::cudnn_convolution");
        let backward = |grad: f64, input: f64, group_width: f64| TraceKernel {
            op_code: stable_code("aten::convolution_backward"),
            backward: true,
            group_width,
            ..kernel(OpKind::Conv, false, grad, input)
        };
        let step = [
            native,
            cudnn,
            backward(act / 6.0, act, f64::NAN),
            backward(act, act, 1.0),
            backward(2.0 * act, 2.0 * act, 1.0),
        ];
        let got: Vec<bool> = autocast_step(&step).iter().map(|a| a.native_depthwise).collect();
        assert_eq!(got, [true, false, false, true, false]);
    }

    /// conv -> batch norm -> ReLU -> conv: the activations stay in 16 bits;
    /// only the first input and the weights are cast.
    #[test]
    fn a_convolution_net_runs_in_16_bits_with_few_casts() {
        let (act, weight) = (1e6, 1e4);
        // Batch norm reads its float32 scale (64 channels) beside the
        // 16-bit activations, and stays 16-bit.
        let step = [
            kernel(OpKind::Conv, false, act, weight),
            kernel(OpKind::Norm, false, act, 64.0),
            kernel(OpKind::Elementwise, false, act, f64::NAN),
            kernel(OpKind::Conv, false, act, weight),
            kernel(OpKind::Norm, false, act, 64.0),
        ];
        let got = autocast_step(&step);
        assert!(got.iter().all(|a| a.half), "{got:?}");
        assert_eq!(got[0].cast_elements, act + weight);
        assert_eq!(got[3].cast_elements, weight);
        // Two tensors (input and weight), then the weight alone.
        assert_eq!((got[0].cast_tensors, got[3].cast_tensors), (2, 1));
        assert_eq!(got[1].cast_elements + got[2].cast_elements + got[4].cast_elements, 0.0);
    }

    /// layer norm (float32) -> linear -> GELU's pow (float32 list) ->
    /// multiply -> linear -> residual add with the float32 stream.
    #[test]
    fn a_transformer_block_keeps_its_stream_in_float32_and_casts_matrix_inputs() {
        let (act, wide, bias) = (1e6, 4e6, 4e3);
        let step = [
            kernel(OpKind::Norm, true, act, f64::NAN),
            kernel(OpKind::Gemm, false, bias, act),
            kernel(OpKind::Elementwise, true, wide, f64::NAN),
            kernel(OpKind::Elementwise, false, wide, wide),
            kernel(OpKind::Gemm, false, bias / 4.0, wide),
            kernel(OpKind::Elementwise, false, act, act),
        ];
        let got = autocast_step(&step);
        assert!(!got[0].half && got[1].half && !got[2].half && !got[3].half && got[4].half);
        // The norm's float32 output and the bias are cast for the first
        // product; pow's input (the product's 16-bit output) goes back to
        // float32; the multiply's float32 output is cast for the second.
        assert_eq!(got[1].cast_elements, bias + act);
        assert_eq!(got[2].cast_elements, wide);
        assert_eq!(got[4].cast_elements, bias / 4.0 + wide);
        assert_eq!(
            (got[1].cast_tensors, got[2].cast_tensors, got[4].cast_tensors),
            (2, 1, 2)
        );
        // The residual add reads the product's 16-bit output and the
        // float32 stream (the norm's input size): float32.
        assert!(!got[5].half);
    }

    /// A product whose bias is copied into place first: both kernels are
    /// the product's, in 16 bits, and its inputs are cast once.
    #[test]
    fn the_kernels_of_one_operator_are_decided_together() {
        let mut bias_copy = kernel(OpKind::Copy, false, 4e3, 1e6);
        let mut product = kernel(OpKind::Gemm, false, 4e3, 1e6);
        (bias_copy.op_code, product.op_code) = (7, 7);
        let got = autocast_step(&[bias_copy, product]);
        assert!(got[0].half && got[1].half, "{got:?}");
        assert_eq!(got[0].cast_elements + got[1].cast_elements, 4e3 + 1e6);
    }

    /// GPT-2's LM head writes 16-bit logits; the labels are shifted by
    /// small float32 kernels; then the loss's log-softmax (float32) reads
    /// the logits, which autocast casts up.
    #[test]
    fn a_products_output_is_known_from_its_flops_and_cast_where_read() {
        let (tokens, width, vocabulary) = (16_384.0, 768.0, 50_257.0);
        let head = TraceKernel {
            op_code: stable_code("aten::mm"),
            flops: 2.0 * tokens * width * vocabulary,
            ..kernel(OpKind::Gemm, false, tokens * width, width * vocabulary)
        };
        let labels = kernel(OpKind::Copy, false, tokens, tokens);
        let loss = kernel(OpKind::Softmax, true, tokens * vocabulary, f64::NAN);
        let got = autocast_step(&[head, labels, loss]);
        assert_eq!(got[2].cast_elements, tokens * vocabulary);
        // A batched product's output is not known: the next kernel reads it.
        let batched = TraceKernel {
            op_code: stable_code("aten::bmm"),
            ..head
        };
        let got = autocast_step(&[batched, labels, loss]);
        assert_eq!(got[2].cast_elements, 0.0);
        // The kernel right after a product reads its output whatever the
        // size: the queries, a third of a fused projection's output.
        let projection = TraceKernel {
            op_code: stable_code("aten::mm"),
            flops: 2.0 * tokens * width * 3.0 * width,
            ..kernel(OpKind::Gemm, false, tokens * width, width * 3.0 * width)
        };
        let queries = kernel(OpKind::Elementwise, false, tokens * width, f64::NAN);
        let got = autocast_step(&[projection, queries]);
        assert!(got[1].half && got[1].cast_elements == 0.0, "{got:?}");
    }

    #[test]
    fn kernels_without_shapes_follow_the_kernel_before() {
        let step = [
            kernel(OpKind::Gemm, false, f64::NAN, f64::NAN),
            kernel(OpKind::Elementwise, false, f64::NAN, f64::NAN),
            kernel(OpKind::Softmax, true, f64::NAN, f64::NAN),
        ];
        let got = autocast_step(&step);
        assert_eq!(
            got[0],
            Autocast {
                half: true,
                ..Autocast::default()
            }
        );
        assert!(got[1].half && !got[2].half);
    }
}

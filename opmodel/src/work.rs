//! What an operator has to do, from its shapes alone: FLOPs, bytes moved,
//! and the GEMM problem or element count that decides how it tiles the GPU.
//! Nothing here depends on a GPU.

use serde::{Deserialize, Serialize};

/// Operator kinds the model tells apart. The code (`as f64`) is a
/// categorical model input: append new kinds, never reorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum OpKind {
    /// Matrix products: linear, matmul, bmm, addmm, baddbmm.
    Gemm = 0,
    /// Convolutions (implicit GEMM).
    Conv = 1,
    /// Element-wise arithmetic and activations.
    Elementwise = 2,
    /// Layer/batch norm.
    Norm = 3,
    Softmax = 4,
    /// Reductions and pooling.
    Reduction = 5,
    /// Embedding lookups and gathers.
    Gather = 6,
    /// Copies and type casts (contiguous, to).
    Copy = 7,
    /// Python-level or metadata-only nodes (view, size, getitem): no GPU work,
    /// but a fixed host cost when timed alone.
    NoWork = 8,
}

impl OpKind {
    /// Whether the kind's time is set by moving bytes, not by arithmetic.
    pub fn streams_memory(self) -> bool {
        matches!(
            self,
            OpKind::Elementwise | OpKind::Norm | OpKind::Softmax | OpKind::Reduction | OpKind::Gather | OpKind::Copy
        )
    }

    /// The kind's name in tables and reports.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Gemm => "gemm",
            OpKind::Conv => "conv",
            OpKind::Elementwise => "elementwise",
            OpKind::Norm => "norm",
            OpKind::Softmax => "softmax",
            OpKind::Reduction => "reduction",
            OpKind::Gather => "gather",
            OpKind::Copy => "copy",
            OpKind::NoWork => "nowork",
        }
    }
}

/// The element-wise function, for element-wise kinds: how much arithmetic
/// each element costs differs (a `pow` or `gelu` is not an `add`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EwFunc {
    Add = 0,
    Mul = 1,
    Div = 2,
    Pow = 3,
    Relu = 4,
    Gelu = 5,
    Tanh = 6,
    Dropout = 7,
    Other = 8,
}

impl EwFunc {
    /// FLOPs per output element (transcendentals counted as a few).
    pub fn flops_per_element(self) -> f64 {
        match self {
            EwFunc::Add | EwFunc::Mul | EwFunc::Relu | EwFunc::Other => 1.0,
            EwFunc::Div => 4.0,
            EwFunc::Dropout => 3.0,
            EwFunc::Pow => 8.0,
            EwFunc::Tanh => 10.0,
            EwFunc::Gelu => 14.0,
        }
    }

    /// From an operator name as PyTorch, NeuSight or FX writes it
    /// (`add`, `aten::mul_`, `<built-in function truediv>`, `gelu`).
    pub fn from_name(name: &str) -> EwFunc {
        let n = name.to_ascii_lowercase();
        let has = |w: &str| n.contains(w);
        if has("gelu") {
            EwFunc::Gelu
        } else if has("tanh") {
            EwFunc::Tanh
        } else if has("relu") {
            EwFunc::Relu
        } else if has("pow") || has("sqrt") || has("exp") || has("rsqrt") {
            EwFunc::Pow
        } else if has("div") {
            EwFunc::Div
        } else if has("dropout") {
            EwFunc::Dropout
        } else if has("mul") {
            EwFunc::Mul
        } else if has("add") || has("sub") {
            EwFunc::Add
        } else {
            EwFunc::Other
        }
    }
}

/// A GEMM as the GPU tiles it: `batch` independent (rows x cols) outputs,
/// each a sum over `inner` products.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GemmShape {
    pub batch: f64,
    pub rows: f64,
    pub cols: f64,
    pub inner: f64,
}

/// Whether the work is a forward pass, or the backward of one (which the
/// model prices apart: other kernels, other access patterns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Pass {
    Forward = 0,
    Backward = 1,
}

impl Pass {
    /// The pass's name in tables and reports.
    pub fn name(self) -> &'static str {
        match self {
            Pass::Forward => "forward",
            Pass::Backward => "backward",
        }
    }
}

/// One operator's work.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpWork {
    pub kind: OpKind,
    pub pass: Pass,
    pub ew: Option<EwFunc>,
    pub flops: f64,
    /// Bytes read plus written, each tensor once.
    pub bytes: f64,
    /// Bytes per element (4 for float32).
    pub dtype_bytes: f64,
    pub gemm: Option<GemmShape>,
    /// Output elements (element-wise, norm, softmax, copies).
    pub elements: f64,
    /// Length of the reduced dimension (norm, softmax), else 0.
    pub row_len: f64,
    /// Whether float32 matrix work may run on TF32 tensor cores (PyTorch's
    /// `allow_tf32` switches), on a GPU that has them, and whose kernels.
    #[serde(default)]
    pub tf32: Tf32Path,
    /// For a matrix product whose dimensions `gemm` does not carry (a
    /// trace's kernel): the largest power of two dividing them all, from
    /// its launching operator's shapes (the feature table's
    /// `product_alignment`). `None` where unknown.
    #[serde(default)]
    pub product_alignment: Option<f64>,
    /// A fused attention kernel (memory-efficient, flash, cuDNN's): its
    /// two matrix products and the softmax between them in one kernel,
    /// which tensor cores speed up less than a product alone
    /// (`tensor_cores`).
    #[serde(default)]
    pub fused_attention: bool,
}

/// The 16-bit type of a mixed-precision run (`torch.autocast`'s dtype).
/// Both price alike; a GPU without bfloat16 tensor cores (V100, T4) runs
/// bfloat16 emulated, which `bfloat16_emulated_note` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalfType {
    Float16,
    BFloat16,
}

/// Why a bfloat16 run on `profile` is slower than priced, if it is: the
/// profile gives no bfloat16 rate (V100, T4), and PyTorch emulates
/// bfloat16 math there.
pub fn bfloat16_emulated_note(profile: &tracecast_schemas::hardware::HardwareProfile) -> Option<String> {
    profile.peak_bf16_flops().is_none().then(|| {
        format!(
            "{}: no bfloat16 tensor cores in its profile; PyTorch emulates bfloat16 there, so a bf16 run is slower than priced (priced as fp16; ask for --precision fp16)",
            profile.name
        )
    })
}

/// Which of PyTorch's TF32 switches lets float32 matrix work run on TF32
/// tensor cores: each library's kernels realise another share of their
/// peak (`OpModel::predict_us`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tf32Path {
    /// Strict float32.
    #[default]
    Off,
    /// The kernels a cuDNN convolution launches, the GEMM-named ones
    /// included (`torch.backends.cudnn.allow_tf32`).
    Convolution,
    /// Matrix products: cuBLAS and CUTLASS (`torch.backends.cuda.matmul.allow_tf32`).
    MatrixProduct,
}

impl Tf32Path {
    /// The switch whose kernels work of `kind` runs as, were it on:
    /// `convolution` says a cuDNN convolution launched it, whose switch
    /// covers every kernel it launches. `Off` for work no switch covers.
    pub fn of(kind: OpKind, convolution: bool) -> Tf32Path {
        match kind {
            OpKind::Conv => Tf32Path::Convolution,
            OpKind::Gemm if convolution => Tf32Path::Convolution,
            OpKind::Gemm => Tf32Path::MatrixProduct,
            _ => Tf32Path::Off,
        }
    }
}

const F32: f64 = 4.0;

impl OpWork {
    fn new(kind: OpKind, flops: f64, bytes: f64, elements: f64) -> OpWork {
        OpWork {
            kind,
            pass: Pass::Forward,
            ew: None,
            flops,
            bytes,
            dtype_bytes: F32,
            gemm: None,
            elements,
            row_len: 0.0,
            tf32: Tf32Path::Off,
            product_alignment: None,
            fused_attention: false,
        }
    }

    /// The same work on 16-bit elements: half of float32's bytes.
    pub fn in_half(self) -> OpWork {
        OpWork {
            bytes: self.bytes * 2.0 / self.dtype_bytes,
            dtype_bytes: 2.0,
            ..self
        }
    }

    /// `batch` products of (rows x inner) by (inner x cols).
    pub fn gemm(batch: f64, rows: f64, inner: f64, cols: f64, dtype_bytes: f64) -> OpWork {
        let flops = 2.0 * batch * rows * inner * cols;
        let bytes = dtype_bytes * batch * (rows * inner + inner * cols + rows * cols);
        let mut w = OpWork::new(OpKind::Gemm, flops, bytes, batch * rows * cols);
        w.dtype_bytes = dtype_bytes;
        w.gemm = Some(GemmShape {
            batch,
            rows,
            cols,
            inner,
        });
        w
    }

    /// A float32 `[.., m, n] x [.., n, k]` matrix product (`matmul`, `bmm`):
    /// a 2-D right operand is a weight shared by every row of the left one;
    /// otherwise `batch` products (the leading dims of the output). `None`
    /// where an operand has fewer than two dims.
    pub fn matmul(a: &[f64], b: &[f64], batch: f64) -> Option<OpWork> {
        if a.len() < 2 || b.len() < 2 {
            return None;
        }
        let (m, n, k) = (a[a.len() - 2], a[a.len() - 1], b[b.len() - 1]);
        if b.len() == 2 {
            let rows: f64 = a[..a.len() - 1].iter().product();
            return Some(OpWork::gemm(1.0, rows, n, k, F32));
        }
        Some(OpWork::gemm(batch.max(1.0), m, n, k, F32))
    }

    /// NeuSight's `bmm` row: (B,M,N) x (B,N,K).
    pub fn bmm(b: f64, m: f64, n: f64, k: f64) -> OpWork {
        OpWork::gemm(b, m, n, k, F32)
    }

    /// NeuSight's `linear` row: input (B,M,N), N -> K features, with bias.
    /// The weight is shared across the batch: read once.
    pub fn linear(b: f64, m: f64, n: f64, k: f64) -> OpWork {
        let rows = b * m;
        let mut w = OpWork::gemm(1.0, rows, n, k, F32);
        w.bytes += F32 * k;
        w
    }

    /// 2-D convolution, square input and kernel; implicit GEMM of
    /// (batch x out^2) rows, `c_out` columns and `c_in x k^2` inner.
    pub fn conv2d(batch: f64, c_in: f64, c_out: f64, kernel: f64, size: f64, stride: f64, pad: f64) -> OpWork {
        let out = ((size + 2.0 * pad - kernel) / stride.max(1.0)).floor() + 1.0;
        let out = out.max(1.0);
        let rows = batch * out * out;
        let inner = c_in * kernel * kernel;
        let flops = 2.0 * rows * c_out * inner;
        let bytes = F32 * (batch * c_in * size * size + c_out * inner + rows * c_out);
        let mut w = OpWork::new(OpKind::Conv, flops, bytes, rows * c_out);
        w.gemm = Some(GemmShape {
            batch: 1.0,
            rows,
            cols: c_out,
            inner,
        });
        w
    }

    /// An element-wise op over `elements` outputs reading `inputs` tensors of
    /// the same size (a scalar operand counts as none).
    pub fn elementwise(func: EwFunc, elements: f64, inputs: f64) -> OpWork {
        let bytes = F32 * elements * (inputs + 1.0);
        let mut w = OpWork::new(
            OpKind::Elementwise,
            elements * func.flops_per_element(),
            bytes,
            elements,
        );
        w.ew = Some(func);
        w
    }

    /// Layer norm over rows of `row_len` (mean, variance, scale and shift).
    pub fn layer_norm(elements: f64, row_len: f64) -> OpWork {
        let mut w = OpWork::new(
            OpKind::Norm,
            8.0 * elements,
            F32 * (2.0 * elements + 2.0 * row_len),
            elements,
        );
        w.row_len = row_len;
        w
    }

    /// Softmax over rows of `row_len` (max, exp, sum, divide).
    pub fn softmax(elements: f64, row_len: f64) -> OpWork {
        let mut w = OpWork::new(OpKind::Softmax, 5.0 * elements, F32 * 2.0 * elements, elements);
        w.row_len = row_len;
        w
    }

    /// A reduction or pooling reading `in_elements`, writing `out_elements`.
    pub fn reduction(in_elements: f64, out_elements: f64) -> OpWork {
        OpWork::new(
            OpKind::Reduction,
            in_elements,
            F32 * (in_elements + out_elements),
            out_elements,
        )
    }

    /// A gather of `elements` values (embedding lookup) plus its indices.
    pub fn gather(elements: f64, indices: f64) -> OpWork {
        OpWork::new(OpKind::Gather, 0.0, F32 * 2.0 * elements + 8.0 * indices, elements)
    }

    /// A copy or cast of `elements` values.
    pub fn copy(elements: f64) -> OpWork {
        OpWork::new(OpKind::Copy, 0.0, F32 * 2.0 * elements, elements)
    }

    /// A conversion of `elements` between float32 and 16 bits: reads one
    /// type, writes the other (autocast's casts). PyTorch runs it as an
    /// element-wise kernel of one input (`bfloat16_copy_kernel` is a
    /// `vectorized_elementwise_kernel`), so it is priced as one, the
    /// cheapest: the trees know those on every GPU they trained on, where
    /// copies come only from model graphs.
    pub fn cast(elements: f64) -> OpWork {
        let mut w = OpWork::elementwise(EwFunc::Relu, elements, 1.0);
        w.bytes = (F32 + 2.0) * elements;
        w
    }

    /// A node that launches nothing.
    pub fn no_work() -> OpWork {
        OpWork::new(OpKind::NoWork, 0.0, 0.0, 0.0)
    }

    /// The same work's backward pass: a GEMM's backward is two GEMMs of the
    /// same size (input and weight gradients); element-wise and norm
    /// backwards read the output gradient and the saved inputs.
    pub fn backward(&self) -> OpWork {
        let mut b = *self;
        b.pass = Pass::Backward;
        match self.kind {
            OpKind::Gemm | OpKind::Conv => {
                b.flops *= 2.0;
                b.bytes *= 2.0;
            }
            OpKind::NoWork => {}
            _ => {
                b.flops *= 2.0;
                b.bytes *= 1.5;
            }
        }
        b
    }

    /// The work at another batch size: FLOPs, bytes and elements scale, and
    /// so do a GEMM's batch (bmm) or rows (linear, conv). Bytes include the
    /// weights, which do not grow with the batch: for weight-heavy GEMMs this
    /// overstates the memory side (their compute side dominates).
    pub fn scaled(&self, factor: f64) -> OpWork {
        let mut s = *self;
        s.flops *= factor;
        s.bytes *= factor;
        s.elements *= factor;
        if let Some(g) = &mut s.gemm {
            if g.batch > 1.0 {
                g.batch *= factor;
            } else {
                g.rows *= factor;
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_counts() {
        let w = OpWork::bmm(2.0, 3.0, 4.0, 5.0);
        assert_eq!(w.flops, 2.0 * 2.0 * 3.0 * 4.0 * 5.0);
        assert_eq!(w.bytes, 4.0 * 2.0 * (12.0 + 20.0 + 15.0));
        let l = OpWork::linear(2.0, 3.0, 4.0, 5.0);
        assert_eq!(l.flops, 2.0 * 6.0 * 4.0 * 5.0);
        assert_eq!(l.gemm.unwrap().rows, 6.0);
    }

    #[test]
    fn conv_output_size_and_flops() {
        // 3x3 conv, pad 1, stride 1 keeps 32x32.
        let w = OpWork::conv2d(8.0, 16.0, 32.0, 3.0, 32.0, 1.0, 1.0);
        assert_eq!(w.gemm.unwrap().rows, 8.0 * 32.0 * 32.0);
        assert_eq!(w.flops, 2.0 * 8.0 * 1024.0 * 32.0 * 16.0 * 9.0);
        // stride 2 halves it.
        assert_eq!(
            OpWork::conv2d(1.0, 1.0, 1.0, 3.0, 32.0, 2.0, 1.0).gemm.unwrap().rows,
            256.0
        );
    }

    #[test]
    fn backward_and_batch_scaling() {
        let w = OpWork::linear(4.0, 128.0, 1024.0, 1024.0);
        assert_eq!(w.backward().flops, 2.0 * w.flops);
        let s = w.scaled(2.0);
        assert_eq!(s.flops, 2.0 * w.flops);
        assert_eq!(s.gemm.unwrap().rows, 2.0 * w.gemm.unwrap().rows);
    }

    #[test]
    fn function_names() {
        assert_eq!(EwFunc::from_name("<built-in function truediv>"), EwFunc::Div);
        assert_eq!(EwFunc::from_name("aten::gelu"), EwFunc::Gelu);
        assert_eq!(EwFunc::from_name("addu"), EwFunc::Add);
        assert_eq!(EwFunc::from_name("powu"), EwFunc::Pow);
    }
}

//! FLOPs and bytes of an operator, estimated from its input shapes and
//! dtypes as the profiler records them (`Input Dims`, `Input type`).
//!
//! Shapes are what the trace gives, not the output: where an output size
//! depends on arguments the trace does not keep (a convolution's stride and
//! padding), the estimate assumes stride 1 and "same" padding. Backward ops
//! whose first input is the gradient of the output use that gradient's shape,
//! which is exact. These are features, not measurements: consistent
//! estimates matter more than exact ones.

use tracecast_schemas::features;

/// One operator's tensor inputs: shape (None for non-tensor inputs) and
/// element size in bytes.
pub struct Inputs<'a> {
    pub shapes: &'a [Option<&'a [i64]>],
    pub types: &'a [Option<&'a str>],
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Matmul,
    Linear,
    Conv,
    ConvBackward,
    Attention,
    Norm,
    Softmax,
    Reduction,
    DataMovement,
    Elementwise,
}

fn kind_of(name: &str) -> Kind {
    let op = name.strip_prefix("aten::").unwrap_or(name);
    let backward = op.contains("backward");
    if op.contains("scaled_dot_product")
        || op.contains("flash_attention")
        || op.contains("efficient_attention")
        || op.contains("cudnn_attention")
    {
        return Kind::Attention;
    }
    if op.contains("conv") {
        return if backward { Kind::ConvBackward } else { Kind::Conv };
    }
    match op {
        "mm" | "addmm" | "bmm" | "baddbmm" | "matmul" | "addbmm" | "_addmm_activation" => return Kind::Matmul,
        "linear" => return Kind::Linear,
        _ => {}
    }
    if op.contains("norm") {
        return Kind::Norm;
    }
    if op.contains("softmax") {
        return Kind::Softmax;
    }
    const REDUCTIONS: [&str; 14] = [
        "sum",
        "mean",
        "amax",
        "amin",
        "max",
        "min",
        "prod",
        "var",
        "std",
        "argmax",
        "argmin",
        "nll_loss",
        "cross_entropy",
        "mse_loss",
    ];
    if REDUCTIONS.iter().any(|r| is_variant(op, r, "_.")) {
        return Kind::Reduction;
    }
    const MOVES: [&str; 22] = [
        "to",
        "_to_copy",
        "copy_",
        "contiguous",
        "clone",
        "cat",
        "stack",
        "index",
        "index_select",
        "embedding",
        "gather",
        "scatter",
        "zero_",
        "fill_",
        "zeros",
        "ones",
        "empty",
        "full",
        "repeat",
        "pad",
        "constant_pad_nd",
        "embedding_dense_backward",
    ];
    if MOVES.iter().any(|m| is_variant(op, m, "_")) {
        return Kind::DataMovement;
    }
    Kind::Elementwise
}

/// `op` is `base` itself or `base` followed by one of `separators` and more
/// (`sum_`, `max.dim`): the variants of an op, without allocating per call.
fn is_variant(op: &str, base: &str, separators: &str) -> bool {
    op.strip_prefix(base)
        .is_some_and(|rest| rest.chars().next().is_none_or(|c| separators.contains(c)))
}

/// Bytes per element of a dtype as the profiler names it.
pub fn dtype_size(dtype: &str) -> Option<i64> {
    // The names PyTorch's profiler writes, first: this runs for every tensor
    // of every operator, and the rules search many substrings.
    match COMMON_DTYPES.iter().find(|(name, _)| *name == dtype) {
        Some(&(_, size)) => Some(size),
        None => dtype_size_by_rules(dtype),
    }
}

/// The profiler's usual dtype names and their sizes, as the rules give them.
const COMMON_DTYPES: [(&str, i64); 11] = [
    ("float", 4),
    ("c10::Half", 2),
    ("c10::BFloat16", 2),
    ("long int", 8),
    ("int", 4),
    ("bool", 1),
    ("double", 8),
    ("unsigned int", 4),
    ("short int", 2),
    ("signed char", 1),
    ("unsigned char", 1),
];

fn dtype_size_by_rules(dtype: &str) -> Option<i64> {
    let lower = dtype.to_ascii_lowercase();
    let t = lower.as_str();
    Some(match t {
        _ if t.contains("float8")
            || t.contains("bool")
            || t.contains("char")
            || t.contains("byte")
            || t.contains("int8") =>
        {
            1
        }
        _ if t.contains("half") || t.contains("bfloat16") || t.contains("int16") || t == "short int" => 2,
        _ if t.contains("complex<double>") => 16,
        _ if t.contains("double") || t.contains("long") || t.contains("int64") || t.contains("complex") => 8,
        "float" | "int" | "unsigned int" | "int32" | "c10::float" => 4,
        _ => return None,
    })
}

fn numel(shape: &[i64]) -> f64 {
    shape.iter().map(|&d| d.max(0) as f64).product()
}

impl Inputs<'_> {
    fn tensors(&self) -> impl Iterator<Item = (usize, &[i64])> {
        // An empty shape is a scalar or a non-tensor argument; no data to move.
        self.shapes
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.filter(|s| !s.is_empty()).map(|s| (i, s)))
    }

    fn elem(&self, i: usize) -> f64 {
        self.types.get(i).copied().flatten().and_then(dtype_size).unwrap_or(4) as f64
    }

    fn tensor(&self, n: usize) -> Option<(usize, &[i64])> {
        self.tensors().nth(n)
    }

    /// Elements of the `n`th tensor input.
    pub fn numel_of(&self, n: usize) -> Option<f64> {
        self.tensor(n).map(|(_, s)| numel(s))
    }

    /// Element size of the first tensor input.
    pub fn first_dtype_bytes(&self) -> Option<i64> {
        let (i, _) = self.tensor(0)?;
        self.types.get(i).copied().flatten().and_then(dtype_size)
    }

    fn input_bytes(&self) -> f64 {
        self.tensors().map(|(i, s)| numel(s) * self.elem(i)).sum()
    }

    fn largest(&self) -> Option<(usize, f64)> {
        self.tensors()
            .map(|(i, s)| (i, numel(s)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// Estimated (FLOPs, bytes) of the operator, or None when its inputs carry no shapes.
pub fn estimate(name: &str, inputs: &Inputs<'_>) -> Option<(f64, f64)> {
    let (big, big_numel) = inputs.largest()?;
    let e = inputs.elem(big);
    let input_bytes = inputs.input_bytes();
    let backward = name.contains("backward");
    let estimate = match kind_of(name) {
        Kind::Matmul | Kind::Linear => product(name, inputs).map(|p| p.estimate()),
        Kind::Conv => conv(inputs, false),
        Kind::ConvBackward => conv(inputs, true),
        Kind::Attention => attention(name, inputs, backward),
        Kind::Norm => Some((5.0 * big_numel, input_bytes + big_numel * e)),
        Kind::Softmax => Some((5.0 * big_numel, input_bytes + big_numel * e)),
        Kind::Reduction => Some((big_numel, input_bytes)),
        Kind::DataMovement => Some((0.0, input_bytes + big_numel * e)),
        Kind::Elementwise => None,
    };
    // Elementwise, and the fallback where a shape rule does not fit: one
    // operation per output element, inputs read and the output written once.
    Some(estimate.unwrap_or((big_numel, input_bytes + big_numel * e)))
}

/// A matrix product's dimensions: `batch` products of `[rows, inner] x
/// [inner, cols]`, and the element sizes of its two factors.
struct Product {
    batch: f64,
    rows: f64,
    cols: f64,
    inner: f64,
    elem_a: f64,
    elem_b: f64,
}

impl Product {
    /// (FLOPs, bytes): two FLOPs per multiply-add; the factors read and
    /// the output (in the first factor's type) written once.
    fn estimate(&self) -> (f64, f64) {
        let Product {
            batch,
            rows,
            cols,
            inner,
            elem_a,
            elem_b,
        } = *self;
        (
            2.0 * batch * rows * inner * cols,
            batch * (rows * inner * elem_a + inner * cols * elem_b + rows * cols * elem_a),
        )
    }
}

/// The product a matrix-product operator (`mm`, `addmm`, `bmm`, `baddbmm`,
/// `matmul`, `linear`, in either pass) runs, where the trace gives its shapes.
fn product(name: &str, inputs: &Inputs<'_>) -> Option<Product> {
    match kind_of(name) {
        Kind::Matmul => matmul(inputs),
        Kind::Linear => linear(inputs),
        _ => None,
    }
}

/// The operator's `product_alignment` (`tracecast_schemas::features::product_alignment`):
/// the largest power of two, up to 64, dividing every dimension of the
/// matrix product it runs; `None` for other operators and products without
/// shapes. Tensor-core kernels need aligned dimensions (cuBLAS's fast
/// 16-bit ones a multiple of 8): the op model prices a float32 trace's
/// product in 16 bits by it (GPT-2's LM head over its 50257-word vocabulary
/// has alignment 1).
pub fn product_alignment(name: &str, inputs: &Inputs<'_>) -> Option<i32> {
    let p = product(name, inputs)?;
    Some(features::product_alignment([p.rows, p.cols, p.inner]))
}

/// `mm`, `addmm`, `bmm`, `baddbmm`, `matmul`: the last two tensor inputs are the factors.
fn matmul(inputs: &Inputs<'_>) -> Option<Product> {
    let tensors: Vec<(usize, &[i64])> = inputs.tensors().collect();
    let [.., (ia, a), (ib, b)] = tensors.as_slice() else {
        return None;
    };
    let (rows, inner) = match a.len() {
        1 => (1.0, a[0] as f64),
        n => (a[n - 2] as f64, a[n - 1] as f64),
    };
    let cols = if b.len() >= 2 { b[b.len() - 1] as f64 } else { 1.0 };
    let batch_a = if a.len() > 2 { numel(&a[..a.len() - 2]) } else { 1.0 };
    let batch_b = if b.len() > 2 { numel(&b[..b.len() - 2]) } else { 1.0 };
    Some(Product {
        batch: batch_a.max(batch_b),
        rows,
        cols,
        inner,
        elem_a: inputs.elem(*ia),
        elem_b: inputs.elem(*ib),
    })
}

/// `linear(input [..., K], weight [N, K], bias)`: one product of all the input's rows.
fn linear(inputs: &Inputs<'_>) -> Option<Product> {
    let (ix, x) = inputs.tensor(0)?;
    let (iw, w) = inputs.tensor(1)?;
    let (&inner, rows) = x.split_last()?;
    Some(Product {
        batch: 1.0,
        rows: numel(rows),
        cols: *w.first()? as f64,
        inner: inner as f64,
        elem_a: inputs.elem(ix),
        elem_b: inputs.elem(iw),
    })
}

/// The operator's `conv_group_width` (`tracecast_schemas::features`
/// FEATURE_POSITIONS): for a grouped convolution, in either pass, the
/// input channels each group reads (1: depthwise); `None` for an
/// ungrouped one, other operators and convolutions without shapes.
/// PyTorch runs many depthwise convolutions on its own kernels rather than
/// cuDNN's, the same kernel in 16 bits as in float32.
pub fn conv_group_width(name: &str, inputs: &Inputs<'_>) -> Option<i32> {
    let backward = match kind_of(name) {
        Kind::Conv => false,
        Kind::ConvBackward => true,
        _ => return None,
    };
    let (_, x, w) = conv_tensors(inputs, backward)?;
    let (channels, width) = (x[1], w[1]);
    (width > 0 && channels > width && channels % width == 0)
        .then(|| i32::try_from(width).ok())
        .flatten()
}

/// A convolution's output spatial size, input and weight shapes:
/// forward `(input [N, C, spatial..], weight [O, C/g, kernel..])`;
/// backward `(grad_output [N, O, out..], input, weight)`.
fn conv_tensors<'b>(inputs: &'b Inputs<'_>, backward: bool) -> Option<(f64, &'b [i64], &'b [i64])> {
    let tensors: Vec<(usize, &[i64])> = inputs.tensors().collect();
    let (out_spatial, x, w) = if backward {
        let [(_, g), (_, x), (_, w), ..] = tensors.as_slice() else {
            return None;
        };
        (numel(g.get(2..)?), *x, *w)
    } else {
        let [(_, x), (_, w), ..] = tensors.as_slice() else {
            return None;
        };
        (numel(x.get(2..)?), *x, *w)
    };
    (x.len() >= 3 && w.len() >= 3).then_some((out_spatial, x, w))
}

/// Convolutions (`conv_tensors`'s inputs): grad input and weight backward.
fn conv(inputs: &Inputs<'_>, backward: bool) -> Option<(f64, f64)> {
    let (out_spatial, x, w) = conv_tensors(inputs, backward)?;
    let (batch, out_channels, in_per_group) = (x[0] as f64, w[0] as f64, w[1] as f64);
    let kernel = numel(&w[2..]);
    let forward = 2.0 * batch * out_spatial * out_channels * in_per_group * kernel;
    let e = inputs.elem(inputs.tensor(0)?.0);
    let bytes = (numel(x) + numel(w) + batch * out_channels * out_spatial) * e;
    Some(if backward {
        (2.0 * forward, 2.0 * bytes)
    } else {
        (forward, bytes)
    })
}

/// Fused attention `(q, k, v, ..)`, a backward's after the output's
/// gradient, each [B, H, L, D] or [B, L, H, D] by the operator: QK^T and
/// PV; backward about twice that.
fn attention(name: &str, inputs: &Inputs<'_>, backward: bool) -> Option<(f64, f64)> {
    // A backward operator takes the output's gradient first, then the
    // queries and keys.
    let first = usize::from(backward);
    let (iq, q) = inputs.tensor(first)?;
    let (_, k) = inputs.tensor(first + 1)?;
    if q.len() != 4 || k.len() != 4 {
        return None;
    }
    // PyTorch's kernel-level entry points (`_efficient_attention_forward`,
    // `_flash_attention_forward` and their backwards) take [batch, length,
    // heads, dim]; the `scaled_dot_product` operators and cuDNN's
    // `_cudnn_attention_*` take [batch, heads, length, dim].
    let op = name.strip_prefix("aten::").unwrap_or(name);
    let length_axis = if op.starts_with("_efficient_attention") || op.starts_with("_flash_attention") {
        1
    } else {
        2
    };
    let heads_axis = 3 - length_axis;
    let d = q[3] as f64;
    let l = q[length_axis] as f64;
    let s = k[length_axis] as f64;
    let heads = (q[0] * q[heads_axis]) as f64;
    let forward = 4.0 * heads * l * s * d;
    let bytes = inputs.input_bytes() + numel(q) * inputs.elem(iq);
    Some(if backward {
        (2.0 * forward, 2.0 * bytes)
    } else {
        (forward, bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(name: &str, shapes: &[&[i64]], types: &[&str]) -> (f64, f64) {
        let shapes: Vec<Option<&[i64]>> = shapes.iter().map(|s| Some(*s)).collect();
        let types: Vec<Option<&str>> = types.iter().map(|t| Some(*t)).collect();
        estimate(
            name,
            &Inputs {
                shapes: &shapes,
                types: &types,
            },
        )
        .unwrap()
    }

    #[test]
    fn matmuls_count_two_flops_per_multiply_add() {
        assert_eq!(
            est("aten::mm", &[&[64, 128], &[128, 32]], &["float", "float"]).0,
            2.0 * 64.0 * 128.0 * 32.0
        );
        // addmm(bias, a, b): the bias is not a factor.
        let (flops, bytes) = est("aten::addmm", &[&[32], &[64, 128], &[128, 32]], &["float"; 3]);
        assert_eq!(flops, 2.0 * 64.0 * 128.0 * 32.0);
        assert_eq!(bytes, (64.0 * 128.0 + 128.0 * 32.0 + 64.0 * 32.0) * 4.0);
        assert_eq!(
            est("aten::bmm", &[&[8, 64, 128], &[8, 128, 32]], &["c10::BFloat16"; 2]).0,
            8.0 * 2.0 * 64.0 * 128.0 * 32.0
        );
        assert_eq!(
            est("aten::linear", &[&[4, 16, 512], &[1024, 512], &[1024]], &["float"; 3]).0,
            2.0 * 64.0 * 512.0 * 1024.0
        );
    }

    /// `read` of an operator with float32 inputs of these shapes.
    fn of_float32(read: fn(&str, &Inputs<'_>) -> Option<i32>, name: &str, shapes: &[&[i64]]) -> Option<i32> {
        let shapes: Vec<Option<&[i64]>> = shapes.iter().map(|s| Some(*s)).collect();
        let types = vec![Some("float"); shapes.len()];
        read(
            name,
            &Inputs {
                shapes: &shapes,
                types: &types,
            },
        )
    }

    fn alignment(name: &str, shapes: &[&[i64]]) -> Option<i32> {
        of_float32(product_alignment, name, shapes)
    }

    #[test]
    fn a_products_alignment_is_the_largest_power_of_two_dividing_its_dimensions() {
        // GPT-2's LM head: 50257 columns.
        assert_eq!(alignment("aten::mm", &[&[4096, 768], &[768, 50257]]), Some(1));
        assert_eq!(alignment("aten::mm", &[&[4096, 768], &[768, 50304]]), Some(64));
        assert_eq!(alignment("aten::linear", &[&[8, 512, 1024], &[30522, 1024]]), Some(2));
        assert_eq!(
            alignment("aten::addmm", &[&[1024], &[4100, 1024], &[1024, 1024]]),
            Some(4)
        );
        // The batch of a batched product is not a dimension of each product.
        assert_eq!(alignment("aten::bmm", &[&[12, 72, 128], &[12, 128, 64]]), Some(8));
        assert_eq!(alignment("aten::add", &[&[10], &[10]]), None);
        assert_eq!(alignment("aten::convolution", &[&[3, 3, 7, 7], &[64, 3, 7, 7]]), None);
    }

    #[test]
    fn convolutions_use_the_weight_and_the_gradient_shape() {
        let forward = est(
            "aten::cudnn_convolution",
            &[&[32, 64, 56, 56], &[128, 64, 3, 3]],
            &["float"; 2],
        )
        .0;
        assert_eq!(forward, 2.0 * 32.0 * 56.0 * 56.0 * 128.0 * 64.0 * 9.0);
        let backward = est(
            "aten::convolution_backward",
            &[&[32, 128, 28, 28], &[32, 64, 56, 56], &[128, 64, 3, 3]],
            &["float"; 3],
        )
        .0;
        assert_eq!(backward, 2.0 * 2.0 * 32.0 * 28.0 * 28.0 * 128.0 * 64.0 * 9.0);
    }

    fn group_width(name: &str, shapes: &[&[i64]]) -> Option<i32> {
        of_float32(conv_group_width, name, shapes)
    }

    #[test]
    fn a_grouped_convolution_has_the_channels_of_each_group() {
        // EfficientNet's depthwise 3x3 over 96 channels, in both passes.
        let (x, dw): (&[i64], &[i64]) = (&[32, 96, 56, 56], &[96, 1, 3, 3]);
        assert_eq!(group_width("aten::_conv_depthwise2d", &[x, dw]), Some(1));
        assert_eq!(group_width("aten::convolution_backward", &[x, x, dw]), Some(1));
        // RegNet's groups of 24 channels; an ungrouped convolution (a
        // single input channel too) and other operators have none.
        assert_eq!(
            group_width("aten::cudnn_convolution", &[&[8, 48, 28, 28], &[48, 24, 3, 3]]),
            Some(24)
        );
        assert_eq!(
            group_width("aten::cudnn_convolution", &[&[8, 3, 224, 224], &[64, 3, 7, 7]]),
            None
        );
        assert_eq!(
            group_width("aten::cudnn_convolution", &[&[8, 1, 28, 28], &[16, 1, 3, 3]]),
            None
        );
        assert_eq!(group_width("aten::mm", &[&[64, 128], &[128, 32]]), None);
        assert_eq!(group_width("aten::convolution_backward", &[&[1, 2]]), None);
    }

    #[test]
    fn attention_elementwise_and_copies() {
        let q: &[i64] = &[2, 8, 128, 64];
        assert_eq!(
            est(
                "aten::_scaled_dot_product_flash_attention",
                &[q, q, q],
                &["c10::Half"; 3]
            )
            .0,
            4.0 * 16.0 * 128.0 * 128.0 * 64.0
        );
        // The kernel-level entry points take [batch, length, heads, dim]
        // (BERT-base at batch 16: 16 x 12 heads of 512 x 512 x 64), and a
        // backward takes the output's gradient before the queries and keys
        // (T5's cross-attention: 128 queries over 512 keys).
        let bert = 4.0 * 16.0 * 12.0 * 512.0 * 512.0 * 64.0;
        let blhd: &[i64] = &[16, 512, 12, 64];
        for name in ["aten::_efficient_attention_forward", "aten::_flash_attention_forward"] {
            assert_eq!(est(name, &[blhd, blhd, blhd], &["float"; 3]).0, bert, "{name}");
        }
        let bhld: &[i64] = &[16, 12, 512, 64];
        assert_eq!(
            est(
                "aten::_cudnn_attention_forward",
                &[bhld, bhld, bhld],
                &["c10::BFloat16"; 3]
            )
            .0,
            bert
        );
        let (queries, keys): (&[i64], &[i64]) = (&[8, 128, 8, 64], &[8, 512, 8, 64]);
        assert_eq!(
            est(
                "aten::_efficient_attention_backward",
                &[queries, queries, keys, keys],
                &["float"; 4]
            )
            .0,
            2.0 * 4.0 * 64.0 * 128.0 * 512.0 * 64.0
        );
        let (flops, bytes) = est("aten::add_", &[&[1000], &[1000]], &["float", "float"]);
        assert_eq!((flops, bytes), (1000.0, 3.0 * 4000.0));
        assert_eq!(est("aten::copy_", &[&[10], &[10]], &["c10::Half", "float"]).0, 0.0);
        assert_eq!(est("aten::native_layer_norm", &[&[4, 10]], &["float"]).0, 200.0);
    }

    #[test]
    fn no_shapes_no_estimate_and_scalars_are_not_tensors() {
        assert!(
            estimate(
                "aten::mm",
                &Inputs {
                    shapes: &[None, Some(&[])],
                    types: &[None, None]
                }
            )
            .is_none()
        );
        assert_eq!(dtype_size("c10::BFloat16"), Some(2));
        assert_eq!(dtype_size("long int"), Some(8));
        assert_eq!(dtype_size("Scalar"), None);
        for (name, size) in COMMON_DTYPES {
            assert_eq!(dtype_size_by_rules(name), Some(size), "{name}");
        }
    }

    #[test]
    fn op_variants_need_a_separator() {
        assert!(is_variant("sum", "sum", "_."));
        assert!(is_variant("max_pool2d", "max", "_."));
        assert!(is_variant("sum.dim_IntList", "sum", "_."));
        assert!(!is_variant("maximum", "max", "_."));
        assert!(!is_variant("to.dtype", "to", "_"));
        // A reduction reads its input and writes little; an elementwise op also writes its output.
        assert_eq!(est("aten::sum.dim_IntList", &[&[10]], &["float"]).1, 40.0);
        assert_eq!(est("aten::maximum", &[&[10]], &["float"]).1, 80.0);
    }
}

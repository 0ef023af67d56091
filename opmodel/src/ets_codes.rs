//! PyProf's operator codes (ETS's `opCodes.dict`, the `op` column of its
//! CSVs) as the work each launches, from the row's `params`: the GEMMs,
//! convolutions, norms, softmaxes, gathers, copies and element-wise
//! functions of the op model, so that models other than AlexNet (ResNet's
//! batch norms, transformers' matmuls) are priced as what they are.

use crate::work::{EwFunc, OpKind, OpWork};

const LAYER_NORM: i64 = 0;
const LOCAL_RESPONSE_NORM: i64 = 1;
const ADD_INPLACE: i64 = 12;
const MUL_INPLACE: i64 = 16;
const SIGMOID: i64 = 156;
const TANH: i64 = 158;
const RELU: i64 = 152;
const GELU: i64 = 166;
const SOFTMAX: i64 = 224;
const LOG_SOFTMAX: i64 = 225;
const CROSS_ENTROPY: i64 = 181;
const LINEAR: i64 = 201;
const CONV2D: i64 = 203;
const BATCH_NORM: i64 = 205;
const EMBEDDING: i64 = 208;
const DROPOUT: i64 = 212;
const MULTI_HEAD_ATTENTION: i64 = 172;
const MSE_LOSS: i64 = 226;
/// `__matmul__`, `matmul`, `addmm`, `addmm_`, `mm`, `bmm`.
const MATMULS: [i64; 6] = [206, 207, 220, 221, 222, 223];
/// Casts (`byte` .. `short`, `to`), copies (`cat`, `reshape`, `pad`,
/// `roll`, `copy_`, `clone`, `aten::clone`, `contiguous`) and indexing
/// (`gather`, `index_select`, `aten::index`), each a pass over its tensors.
const COPIES: [i64; 20] = [
    137, 138, 139, 140, 141, 142, 143, 144, 242, 213, 214, 229, 231, 237, 238, 239, 240, 216, 218, 233,
];
/// `softmin`, `softmax2d`, `logsoftmax` besides `softmax` and `log_softmax`.
const SOFTMAXES: [i64; 5] = [SOFTMAX, LOG_SOFTMAX, 176, 178, 179];
/// `normalize` (an L2 norm over the last dim).
const NORMALIZE: i64 = 230;
/// `sum`, `mean`, `norm` (a vector norm), and the pools (182-200).
const REDUCTIONS: [i64; 3] = [209, 210, 211];
const POOLS: std::ops::RangeInclusive<i64> = 182..=200;

/// The element-wise function of an element-wise code (abs .. tanh_, the
/// activations 151-175, hardswish and hardsigmoid), `None` for any other.
fn elementwise_func(op: i64) -> Option<EwFunc> {
    Some(match op {
        11..=12 | 19..=22 | 27..=28 | 35..=36 => EwFunc::Add,
        15..=16 | 23 | 29 | 37 | 67..=70 => EwFunc::Mul,
        13..=14 | 24..=26 | 30..=34 | 38 | 180 => EwFunc::Div,
        71..=90 => EwFunc::Pow,
        RELU | 151 | 153..=155 | 168 => EwFunc::Relu,
        // `bernoulli_`: dropout's mask.
        234 => EwFunc::Dropout,
        GELU => EwFunc::Gelu,
        MULTI_HEAD_ATTENTION => return None,
        TANH | 126 => EwFunc::Tanh,
        // ... and the fills (`ones` .. `zeros_like`, `new_zeros`, `fill_`,
        // `full`) and `mse_loss`.
        2..=10
        | 39..=66
        | 91..=136
        | 146..=150
        | SIGMOID
        | 157
        | 159..=165
        | 167
        | 169..=175
        | MSE_LOSS
        | 232
        | 235
        | 236
        | 243
        | 244 => EwFunc::Other,
        _ => return None,
    })
}

/// The tensors PyProf packs into `params` for most ops: groups of 10, each
/// an element size followed by the non-zero dims.
fn tensors(params: &[f64]) -> Vec<Vec<f64>> {
    params
        .chunks(10)
        .filter(|c| c.first().is_some_and(|&e| e > 0.0))
        .map(|c| c[1..].iter().copied().filter(|&d| d > 0.0).collect::<Vec<f64>>())
        .filter(|dims| !dims.is_empty())
        .collect()
}

fn numel(dims: &[f64]) -> f64 {
    dims.iter().product()
}

/// A matrix product of the last two tensors (`addmm` lists its bias
/// first), batched as the left one's leading dims: PyProf gives no output.
fn matmul(t: &[Vec<f64>]) -> Option<OpWork> {
    let [.., a, b] = t else { return None };
    OpWork::matmul(a, b, numel(&a[..a.len().saturating_sub(2)]))
}

/// The first tensor's dims in a row's params (empty when they give none).
pub(crate) fn first_tensor(params: &[f64]) -> Vec<f64> {
    tensors(params).into_iter().next().unwrap_or_default()
}

/// Whether a row's params give no tensor shape (PyProf records
/// `multi_head_attention_forward` as `[0, 0]`).
pub(crate) fn is_shapeless(op: i64, params: &[f64]) -> bool {
    op != CONV2D && tensors(params).is_empty()
}

/// `multi_head_attention_forward` over an input of `input` dims (batch,
/// tokens, embedding; the row before it, a layer norm, has them): the
/// input projection to queries, keys and values, the two attention
/// products and the output projection, as one matrix product of their
/// FLOPs (8 B L E^2 + 4 B L^2 E, whatever the head count): B L rows, E
/// inner, 4 E + 2 L columns. `None` for another operator or no input.
pub(crate) fn attention_work(op: i64, input: &[f64], element_bytes: f64) -> Option<OpWork> {
    let [.., tokens, embedding] = input else { return None };
    if op != MULTI_HEAD_ATTENTION || input.len() < 3 {
        return None;
    }
    let rows = numel(&input[..input.len() - 1]);
    let mut work = OpWork::gemm(1.0, rows, *embedding, 4.0 * embedding + 2.0 * tokens, 4.0);
    work.bytes *= element_bytes / 4.0;
    work.dtype_bytes = element_bytes;
    Some(work)
}

/// Whether `op` is the loss (`cross_entropy`, `mse_loss`): after its
/// forward row the host waits for the GPU before the backward pass.
pub(crate) fn is_loss(op: i64) -> bool {
    op == CROSS_ENTROPY || op == MSE_LOSS
}

/// Whether ETS's analyzer records no backward row for `op` even though its
/// backward launches kernels: the matrix products (`linear` and the
/// matmuls), whose backward kernels PyProf attributes to no operator.
/// Element-wise additions have no backward row either, but no kernel.
pub(crate) fn has_unrecorded_backward(op: i64) -> bool {
    op == LINEAR || MATMULS.contains(&op)
}

/// Element sizes a float tensor can have: half, single, double.
const FLOAT_BYTES: [f64; 3] = [2.0, 4.0, 8.0];

/// Bytes per element of a row's math: a convolution's params end with it,
/// other ops lead each tensor with it (the first tensor is the data; a
/// loss's second holds the labels). `file_bytes` (from the file's
/// `input_type`) where the params give no float size.
pub(crate) fn element_bytes(op: i64, p: &[f64], file_bytes: f64) -> f64 {
    let from_params = if op == CONV2D { p.get(16) } else { p.first() };
    from_params
        .copied()
        .filter(|b| FLOAT_BYTES.contains(b))
        .unwrap_or(file_bytes)
}

/// The forward work of one row from its op code and params, in elements of
/// `element_bytes`, counted as the op model's training rows count them.
/// PyProf's own FLOP and byte estimates (`flops`, `bytes`) follow other
/// conventions (a batch norm's bytes count four passes over its input, the
/// op model's two), so they only stand in where the params give no shape:
/// a forward batch norm's, which PyProf counts at 8 FLOPs an element.
pub(crate) fn forward_work(op: i64, p: &[f64], flops: f64, bytes: f64, element_bytes: f64) -> OpWork {
    let t = tensors(p);
    let first = t.first().cloned().unwrap_or_default();
    let n = numel(&first);
    let row_len = *first.last().unwrap_or(&1.0);
    let mut work = match op {
        CONV2D if p.len() >= 16 => convolution(p),
        LINEAR => match (t.first(), t.get(1)) {
            (Some(x), Some(wt)) if wt.len() == 2 => {
                let inner = *x.last().unwrap_or(&1.0);
                OpWork::linear(1.0, numel(x) / inner.max(1.0), inner, wt[0])
            }
            _ => OpWork::elementwise(EwFunc::Other, n, 1.0),
        },
        op if MATMULS.contains(&op) => matmul(&t).unwrap_or_else(|| OpWork::elementwise(EwFunc::Other, n, 1.0)),
        // Batch norm normalises over all but the channel dim; layer norm over the last.
        BATCH_NORM if first.len() >= 2 => OpWork::layer_norm(n, n / first[1].max(1.0)),
        BATCH_NORM => OpWork::layer_norm(flops / 8.0, flops / 8.0 / UNKNOWN_CHANNELS),
        LAYER_NORM | LOCAL_RESPONSE_NORM | NORMALIZE => OpWork::layer_norm(n, row_len),
        CROSS_ENTROPY => OpWork::softmax(n, row_len),
        op if SOFTMAXES.contains(&op) => OpWork::softmax(n, row_len),
        EMBEDDING => OpWork::gather(numel(t.last().unwrap_or(&first)), n),
        DROPOUT => OpWork::elementwise(EwFunc::Dropout, n, 1.0),
        ADD_INPLACE => OpWork::elementwise(EwFunc::Add, n, 2.0),
        MUL_INPLACE => OpWork::elementwise(EwFunc::Mul, n, 2.0),
        op if COPIES.contains(&op) => OpWork::copy(t.iter().map(|d| numel(d)).sum::<f64>().max(n)),
        op if REDUCTIONS.contains(&op) || POOLS.contains(&op) => OpWork::reduction(n, n / 4.0),
        op => match elementwise_func(op) {
            Some(func) => OpWork::elementwise(func, n, t.len().max(1) as f64),
            // Anything else: a pass over the first input.
            None => OpWork::reduction(n, n / 4.0),
        },
    };
    // The estimates above count float32 elements.
    work.bytes *= element_bytes / 4.0;
    work.dtype_bytes = element_bytes;
    let shapeless = t.is_empty() && op != CONV2D && op != BATCH_NORM;
    if shapeless {
        // PyProf's estimates are all there is.
        if flops > 0.0 {
            work.flops = flops;
        }
        if bytes > 0.0 {
            work.bytes = bytes;
        }
    }
    work
}

/// Channels a batch norm is taken to have where its params give no shape.
const UNKNOWN_CHANNELS: f64 = 64.0;

/// conv2d params: N, C_in, H, W, C_out, H_out, W_out, kH, kW, pad_h, pad_w,
/// stride_h, stride_w, dil_h, dil_w, groups, element size. A 1x1
/// convolution without groups is a matrix product of the (N x H_out x
/// W_out) pixels by C_in -> C_out, and cuDNN runs it as one (GEMM kernels):
/// priced as one, since the op model's convolutions are all 3x3.
fn convolution(p: &[f64]) -> OpWork {
    let (nb, c_in, h, w, c_out, ho, wo, kh, kw, groups) =
        (p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[15].max(1.0));
    let rows = nb * ho * wo;
    let inner = c_in / groups * kh * kw;
    let mut work = OpWork::gemm(1.0, rows, inner, c_out, 4.0);
    if kh * kw > 1.0 || groups > 1.0 {
        work.kind = OpKind::Conv;
        work.bytes = 4.0 * (nb * c_in * h * w + c_out * inner + rows * c_out);
    }
    work
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(text: &str) -> Vec<f64> {
        text.split(',').map(|v| v.trim().parse().unwrap()).collect()
    }

    #[test]
    fn conv_and_linear_params() {
        let conv = params("16, 3, 256, 256, 64, 63, 63, 11, 11, 2, 2, 4, 4, 1, 1, 1, 4, 0, 0, 0");
        let w = forward_work(CONV2D, &conv, 0.0, 0.0, 4.0);
        assert_eq!(w.gemm.unwrap().rows, 16.0 * 63.0 * 63.0);
        assert_eq!(w.flops, 2.0 * 16.0 * 63.0 * 63.0 * 64.0 * 3.0 * 121.0);
        let lin = params("4, 16, 9216, 0, 0, 0, 0, 0, 0, 0, 4, 4096, 9216, 0, 0, 0, 0, 0, 0, 0, 4, 4096, 0");
        let l = forward_work(LINEAR, &lin, 0.0, 0.0, 4.0);
        let g = l.gemm.unwrap();
        assert_eq!((g.rows, g.inner, g.cols), (16.0, 9216.0, 4096.0));
        // The params' shape wins over PyProf's estimates, which count
        // otherwise than the op model's training rows.
        assert_eq!(forward_work(LINEAR, &lin, 123.0, 456.0, 4.0), l);
        // A 1x1 convolution is the matrix product cuDNN runs it as; a 3x3
        // or grouped one stays a convolution.
        let pointwise = forward_work(
            CONV2D,
            &params("64, 96, 16, 16, 576, 16, 16, 1, 1, 0, 0, 1, 1, 1, 1, 1, 4"),
            0.0,
            0.0,
            4.0,
        );
        assert_eq!(pointwise.kind, OpKind::Gemm);
        let g = pointwise.gemm.unwrap();
        assert_eq!((g.rows, g.inner, g.cols), (64.0 * 16.0 * 16.0, 96.0, 576.0));
        let depthwise = forward_work(
            CONV2D,
            &params("64, 576, 16, 16, 576, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 576, 4"),
            0.0,
            0.0,
            4.0,
        );
        assert_eq!(depthwise.kind, OpKind::Conv);
        assert_eq!(depthwise.flops, 2.0 * 64.0 * 256.0 * 576.0 * 9.0);
    }

    /// Rows whose params give no shape: a forward batch norm (PyProf's
    /// FLOPs, 8 an element, give its size) and a multi-head attention
    /// (from its input's dims); any other takes PyProf's estimates.
    #[test]
    fn shapeless_rows() {
        let empty = params("4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0");
        let bn = forward_work(BATCH_NORM, &empty, 268435456.0, 536870912.0, 4.0);
        assert_eq!((bn.kind, bn.elements), (OpKind::Norm, 33554432.0));
        assert_eq!(bn.bytes, OpWork::layer_norm(33554432.0, 33554432.0 / 64.0).bytes);
        let other = forward_work(999, &empty, 10.0, 20.0, 4.0);
        assert_eq!((other.flops, other.bytes), (10.0, 20.0));
        assert!(is_shapeless(MULTI_HEAD_ATTENTION, &params("0, 0")));
        let (b, l, e) = (64.0, 257.0, 768.0);
        let mha = attention_work(MULTI_HEAD_ATTENTION, &[b, l, e], 4.0).unwrap();
        assert_eq!(mha.flops, 8.0 * b * l * e * e + 4.0 * b * l * l * e);
        assert!(attention_work(MULTI_HEAD_ATTENTION, &[], 4.0).is_none());
        assert!(attention_work(RELU, &[b, l, e], 4.0).is_none());
        assert!(has_unrecorded_backward(LINEAR) && !has_unrecorded_backward(ADD_INPLACE));
    }

    /// Codes beyond AlexNet's are priced as the work they launch.
    #[test]
    fn other_models_codes_map_to_their_kinds() {
        // A ResNet batch norm over (32, 64, 56, 56): per-channel statistics.
        let bn = forward_work(BATCH_NORM, &params("4, 32, 64, 56, 56, 0, 0, 0, 0, 0"), 0.0, 0.0, 4.0);
        assert_eq!(bn.kind, OpKind::Norm);
        assert_eq!(bn.row_len, 32.0 * 56.0 * 56.0);
        // A batched matmul of (8, 128, 64) x (8, 64, 128), and addmm's bias first.
        let bmm = forward_work(
            223,
            &params("4, 8, 128, 64, 0, 0, 0, 0, 0, 0, 4, 8, 64, 128, 0, 0, 0, 0, 0, 0"),
            0.0,
            0.0,
            4.0,
        );
        assert_eq!(bmm.flops, 2.0 * 8.0 * 128.0 * 64.0 * 128.0);
        let addmm = forward_work(
            220,
            &params(
                "4, 512, 0, 0, 0, 0, 0, 0, 0, 0, 4, 32, 256, 0, 0, 0, 0, 0, 0, 0, 4, 256, 512, 0, 0, 0, 0, 0, 0, 0",
            ),
            0.0,
            0.0,
            4.0,
        );
        let g = addmm.gemm.unwrap();
        assert_eq!((g.rows, g.inner, g.cols), (32.0, 256.0, 512.0));
        let kind = |op: i64| forward_work(op, &params("4, 1024, 1024, 0, 0, 0, 0, 0, 0, 0"), 0.0, 0.0, 4.0).kind;
        assert_eq!(kind(243), OpKind::Elementwise); // hardswish
        assert_eq!(kind(213), OpKind::Copy); // cat
        assert_eq!(kind(239), OpKind::Copy); // aten::clone (ShuffleNet's channel shuffle)
        assert_eq!(kind(231), OpKind::Copy); // roll (Swin's shifted windows)
        assert_eq!(kind(179), OpKind::Softmax); // logsoftmax
        assert_eq!(kind(NORMALIZE), OpKind::Norm);
        assert_eq!(kind(235), OpKind::Elementwise); // fill_
        assert_eq!(kind(LAYER_NORM), OpKind::Norm);
        assert_eq!(kind(SOFTMAX), OpKind::Softmax);
        assert_eq!(kind(199), OpKind::Reduction); // adaptive_avg_pool2d
        assert_eq!(kind(EMBEDDING), OpKind::Gather);
    }

    /// ETS runs every configuration in float16, float32 and float64: the
    /// element size comes from the row, PyProf's byte counts keep theirs.
    #[test]
    fn element_size_comes_from_the_row() {
        let conv16 = params("64, 64, 31, 31, 192, 31, 31, 5, 5, 2, 2, 1, 1, 1, 1, 1, 2, 0, 0, 0");
        assert_eq!(element_bytes(CONV2D, &conv16, 4.0), 2.0);
        let w = forward_work(CONV2D, &conv16, 0.0, 0.0, 2.0);
        let w32 = forward_work(CONV2D, &conv16, 0.0, 0.0, 4.0);
        assert_eq!((w.dtype_bytes, w.flops), (2.0, w32.flops));
        assert_eq!(w.bytes * 2.0, w32.bytes);
        let relu64 = params("8, 64, 64, 63, 63, 0, 0, 0, 0, 0");
        assert_eq!(element_bytes(RELU, &relu64, 4.0), 8.0);
        let relu = forward_work(RELU, &relu64, 0.0, 0.0, 8.0);
        assert_eq!(relu.bytes, 2.0 * forward_work(RELU, &relu64, 0.0, 0.0, 4.0).bytes);
        // No float size in the params: the file's.
        assert_eq!(element_bytes(RELU, &params("0, 0, 0"), 8.0), 8.0);
    }
}

//! Llama and the models built like it (`LlamaForCausalLM`, Mistral, Qwen2;
//! eager attention): RMSNorm, rotary positions, grouped-query attention,
//! a gated SiLU MLP, no dropout (their attention dropout is 0).

use super::{Builder, Fields, Shape};
use crate::OpModelError;

#[derive(Clone, Debug, PartialEq)]
pub struct Llama {
    pub hidden: f64,
    pub heads: f64,
    /// Key and value heads (grouped-query attention); `heads` where absent.
    pub kv_heads: f64,
    pub head_dim: f64,
    pub layers: f64,
    pub ffn: f64,
    pub vocab: f64,
    pub activation: String,
    /// Biases on the query, key and value projections (Qwen2, or Llama's
    /// `attention_bias`, which adds one to the output projection too).
    pub qkv_bias: bool,
    pub out_bias: bool,
    pub mlp_bias: bool,
    /// The output head shares the token embeddings' weights.
    pub tied_head: bool,
}

impl Llama {
    pub(crate) fn from_fields(f: &Fields<'_>, model_type: &str) -> Result<Llama, OpModelError> {
        let hidden = f.count("hidden_size")?;
        let heads = f.count("num_attention_heads")?;
        let attention_bias = f.flag("attention_bias").unwrap_or(false);
        Ok(Llama {
            hidden,
            heads,
            kv_heads: f.optional("num_key_value_heads")?.unwrap_or(heads),
            head_dim: f.optional("head_dim")?.unwrap_or(hidden / heads),
            layers: f.count("num_hidden_layers")?,
            ffn: f.count("intermediate_size")?,
            vocab: f.count("vocab_size")?,
            activation: f.text("hidden_act").unwrap_or("silu").to_string(),
            qkv_bias: model_type == "qwen2" || attention_bias,
            out_bias: attention_bias,
            mlp_bias: f.flag("mlp_bias").unwrap_or(false),
            tied_head: f.flag("tie_word_embeddings").unwrap_or(false),
        })
    }

    /// Trainable parameters: token embeddings, each block's two norms,
    /// projections and MLP, the final norm, and the head unless tied.
    pub(crate) fn parameters(&self) -> f64 {
        let (d, f) = (self.hidden, self.ffn);
        let q = self.heads * self.head_dim;
        let kv = self.kv_heads * self.head_dim;
        let bias = |on: bool, n: f64| if on { n } else { 0.0 };
        let attention = d * q + 2.0 * d * kv + q * d + bias(self.qkv_bias, q + 2.0 * kv) + bias(self.out_bias, d);
        let mlp = 3.0 * d * f + bias(self.mlp_bias, 2.0 * f + d);
        let block = attention + mlp + 2.0 * d;
        let head = if self.tied_head { 0.0 } else { self.vocab * d };
        self.vocab * d + self.layers * block + d + head
    }

    /// `LlamaRMSNorm` on `x`: x * rsqrt(mean(x^2) + eps) * weight.
    fn rms_norm(g: &mut Builder, x: &[f64]) {
        let mut row = x.to_vec();
        *row.last_mut().expect("a hidden dimension") = 1.0;
        g.unary("pow", x);
        g.function("mean", &[x], &row);
        g.unary("add", &row);
        g.unary("rsqrt", &row);
        g.function("mul", &[x, &row], x);
        g.binary("mul", x);
    }

    /// Rotary positions on queries or keys of shape `x`:
    /// x * cos + rotate_half(x) * sin.
    fn rotate(g: &mut Builder, x: &[f64]) {
        let mut half = x.to_vec();
        *half.last_mut().expect("a head dimension") /= 2.0;
        g.unary("mul", x);
        g.unary("neg", &half);
        g.function("cat", &[&half, &half], x);
        g.unary("mul", x);
        g.binary("add", x);
    }

    pub(crate) fn build(&self, g: &mut Builder, x: Shape) {
        let (b, s, d, h, kv, dh) = (x.batch, x.seq, self.hidden, self.heads, self.kv_heads, self.head_dim);
        let hidden = [b, s, d];
        let mlp = [b, s, self.ffn];
        g.module("Embedding", &[&[b, s]], &hidden);
        // The causal mask, and the rotary tables shared by every layer.
        let mask = [b, 1.0, s, s];
        g.function("full", &[], &[s, s]);
        g.method("masked_fill", &[&mask, &mask], &mask);
        g.function("matmul", &[&[b, dh / 2.0, 1.0], &[b, 1.0, s]], &[b, dh / 2.0, s]);
        g.function("cat", &[&[b, s, dh / 2.0], &[b, s, dh / 2.0]], &[b, s, dh]);
        g.unary("cos", &[b, s, dh]);
        g.unary("sin", &[b, s, dh]);
        // Each projection is a `Linear` module, with or without its bias
        // (the bias is a few bytes of a large matrix product).
        let projection = |g: &mut Builder, inner: f64, cols: f64| g.linear(&[b, s], inner, cols);
        g.repeated(self.layers, |g| {
            Self::rms_norm(g, &hidden);
            projection(g, d, h * dh);
            projection(g, d, kv * dh);
            projection(g, d, kv * dh);
            Self::rotate(g, &[b, h, s, dh]);
            Self::rotate(g, &[b, kv, s, dh]);
            if kv < h {
                // repeat_kv: keys and values expanded to every query head.
                g.method("contiguous", &[&[b, h, s, dh]], &[b, h, s, dh]);
                g.method("contiguous", &[&[b, h, s, dh]], &[b, h, s, dh]);
            }
            let scores = [b, h, s, s];
            g.function("matmul", &[&[b, h, s, dh], &[b, h, dh, s]], &scores);
            g.unary("truediv", &scores);
            g.function("add", &[&scores, &mask], &scores);
            g.unary("softmax", &scores);
            g.cast_to_query_type(&scores);
            g.function("matmul", &[&scores, &[b, h, s, dh]], &[b, h, s, dh]);
            g.method("contiguous", &[&[b, s, h, dh]], &[b, s, h, dh]);
            projection(g, h * dh, d);
            g.residual(&hidden);
            Self::rms_norm(g, &hidden);
            projection(g, d, self.ffn);
            projection(g, d, self.ffn);
            g.activation(&self.activation, &mlp);
            g.binary("mul", &mlp);
            projection(g, self.ffn, d);
            g.residual(&hidden);
        });
        Self::rms_norm(g, &hidden);
        projection(g, d, self.vocab);
    }
}

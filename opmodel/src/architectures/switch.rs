//! Switch Transformers (`SwitchTransformersForConditionalGeneration`, T5's
//! encoder-decoder with mixture-of-experts feed-forward layers), run as
//! NeuSight runs it: encoder and decoder inputs of the same length, and
//! NeuSight's own expert dispatch, which runs every expert on a buffer of
//! `batch x expert_capacity` tokens whatever the router chose.

use super::{Builder, Fields, Shape};
use crate::OpModelError;

#[derive(Clone, Debug, PartialEq)]
pub struct Switch {
    pub d_model: f64,
    pub d_kv: f64,
    pub d_ff: f64,
    pub heads: f64,
    pub encoder_layers: f64,
    pub decoder_layers: f64,
    pub experts: f64,
    pub expert_capacity: f64,
    /// Every how many layers one is sparse (0: none).
    pub encoder_sparse_step: f64,
    pub decoder_sparse_step: f64,
    pub vocab: f64,
    /// Buckets of T5's relative-position table (one per head, in each stack's first layer).
    pub position_buckets: f64,
    pub activation: String,
    pub gated: bool,
    /// Dropout probability, everywhere T5 drops out.
    pub dropout: f64,
}

/// Element-wise operations T5's relative-position bucketing runs over the
/// (query, key) grid, once per stack.
const BUCKET_OPS: [&str; 17] = [
    "sub",
    "gt",
    "long",
    "mul",
    "add",
    "neg",
    "lt",
    "float",
    "truediv",
    "log",
    "truediv",
    "mul",
    "long",
    "add",
    "full_like",
    "min",
    "where",
];

impl Switch {
    pub(crate) fn from_fields(f: &Fields<'_>) -> Result<Switch, OpModelError> {
        let encoder_layers = f.count("num_layers")?;
        // 0 is a valid step: no sparse layer.
        let step = |key: &str| f.whole(key, 0.0).map(|v| v.unwrap_or(0.0));
        Ok(Switch {
            d_model: f.count("d_model")?,
            d_kv: f.count("d_kv")?,
            d_ff: f.count("d_ff")?,
            heads: f.count("num_heads")?,
            encoder_layers,
            decoder_layers: f.optional("num_decoder_layers")?.unwrap_or(encoder_layers),
            experts: f.count("num_experts")?,
            expert_capacity: f.count("expert_capacity")?,
            encoder_sparse_step: step("encoder_sparse_step")?,
            decoder_sparse_step: step("decoder_sparse_step")?,
            vocab: f.count("vocab_size")?,
            position_buckets: f.optional("relative_attention_num_buckets")?.unwrap_or(32.0),
            activation: f
                .text("dense_act_fn")
                .or_else(|| f.text("feed_forward_proj"))
                .unwrap_or("relu")
                .trim_start_matches("gated-")
                .to_string(),
            gated: f.flag("is_gated_act").unwrap_or(false),
            dropout: f.probability("dropout_rate", 0.1)?,
        })
    }

    /// Sparse layers of a stack of `layers` with this step, as Hugging Face
    /// places them (layer `i` is sparse where `i % step == 1`, or every
    /// layer where the step is 1).
    pub(crate) fn sparse_layers(layers: f64, step: f64) -> f64 {
        if step < 1.0 {
            return 0.0;
        }
        if step == 1.0 {
            return layers;
        }
        (0..layers as u64).filter(|i| i % step as u64 == 1).count() as f64
    }

    /// Trainable parameters: the shared embeddings (the head is tied to
    /// them), each stack's attention (the decoder's twice), dense and sparse
    /// feed-forward layers (a router and every expert), norms, and the
    /// relative-position table of each stack's first layer.
    pub(crate) fn parameters(&self) -> f64 {
        let d = self.d_model;
        let attention = 4.0 * d * self.heads * self.d_kv + d;
        let up = if self.gated { 2.0 } else { 1.0 };
        let dense = (up + 1.0) * d * self.d_ff + d;
        let sparse = d * self.experts + self.experts * (up + 1.0) * d * self.d_ff + d;
        let stack = |layers: f64, step: f64, attentions: f64| {
            let s = Switch::sparse_layers(layers, step);
            layers * attentions * attention + (layers - s) * dense + s * sparse + d + self.position_buckets * self.heads
        };
        self.vocab * d
            + stack(self.encoder_layers, self.encoder_sparse_step, 1.0)
            + stack(self.decoder_layers, self.decoder_sparse_step, 2.0)
    }

    pub(crate) fn build(&self, g: &mut Builder, x: Shape) {
        let (b, s, d, h) = (x.batch, x.seq, self.d_model, self.heads);
        let hidden = [b, s, d];
        let grid = [s, s];
        // Encoder.
        g.module("Embedding", &[&[b, s]], &hidden);
        g.dropout(self.dropout, &hidden);
        self.position_bias(g, x, &[b, 1.0, 1.0, s]);
        self.stack(g, x, self.encoder_layers, self.encoder_sparse_step, false);
        // Decoder: a causal mask, then self- and cross-attention biases.
        g.module("Embedding", &[&[b, s]], &hidden);
        g.dropout(self.dropout, &hidden);
        for op in ["le", "to", "mul", "sub", "mul"] {
            g.unary(op, &[b, 1.0, s, s]);
        }
        g.unary("min", &grid);
        self.position_bias(g, x, &[b, 1.0, s, s]);
        g.function("zeros", &[], &[1.0, h, s, s]);
        g.function("add", &[&[1.0, h, s, s], &[b, 1.0, 1.0, s]], &[b, h, s, s]);
        self.stack(g, x, self.decoder_layers, self.decoder_sparse_step, true);
        // The tied head scales its input by d_model^-0.5.
        g.unary("mul", &hidden);
        g.linear(&[b, s], d, self.vocab);
    }

    /// T5's relative-position bias of one stack: buckets over the
    /// (query, key) grid, looked up per head, plus the mask.
    fn position_bias(&self, g: &mut Builder, x: Shape, mask: &[f64]) {
        let (b, s, h) = (x.batch, x.seq, self.heads);
        g.function("arange", &[], &[s]);
        g.function("arange", &[], &[s]);
        for op in BUCKET_OPS {
            g.unary(op, &[s, s]);
        }
        g.module("Embedding", &[&[s, s]], &[s, s, h]);
        g.function("add", &[&[1.0, h, s, s], mask], &[b, h, s, s]);
    }

    /// A stack of `layers` blocks, `step` saying which are sparse, then its
    /// final norm and dropout. Decoder blocks attend to the encoder too.
    fn stack(&self, g: &mut Builder, x: Shape, layers: f64, step: f64, decoder: bool) {
        let sparse = Switch::sparse_layers(layers, step);
        g.repeated(layers, |g| {
            self.attention(g, x);
            if decoder {
                self.attention(g, x);
            }
        });
        g.repeated(layers - sparse, |g| self.dense_ff(g, x));
        g.repeated(sparse, |g| self.sparse_ff(g, x));
        let hidden = [x.batch, x.seq, self.d_model];
        self.layer_norm(g, &hidden);
        g.dropout(self.dropout, &hidden);
    }

    /// T5's norm: scale by the root mean square, no mean, no bias.
    fn layer_norm(&self, g: &mut Builder, x: &[f64]) {
        let mut rows = x.to_vec();
        if let Some(last) = rows.last_mut() {
            *last = 1.0;
        }
        g.unary("pow", x);
        g.function("mean", &[x], &rows);
        g.unary("add", &rows);
        g.unary("rsqrt", &rows);
        g.function("mul", &[x, &rows], x);
        g.function("mul", &[&[self.d_model], x], x);
    }

    /// One attention sub-layer (self or cross: the same shapes, since NeuSight
    /// feeds encoder and decoder sequences of one length), with its norm and
    /// residual. T5 does not scale the scores; the bias is added to them.
    fn attention(&self, g: &mut Builder, x: Shape) {
        let (b, s, d, h, dk) = (x.batch, x.seq, self.d_model, self.heads, self.d_kv);
        let hidden = [b, s, d];
        let inner = h * dk;
        let scores = [b, h, s, s];
        self.layer_norm(g, &hidden);
        for _ in 0..3 {
            g.linear(&[b, s], d, inner);
        }
        g.function("matmul", &[&[b, h, s, dk], &[b, h, dk, s]], &scores);
        g.binary("add", &scores);
        g.unary("softmax", &scores);
        g.cast_to_query_type(&scores);
        g.dropout(self.dropout, &scores);
        g.function("matmul", &[&scores, &[b, h, s, dk]], &[b, h, s, dk]);
        g.method("contiguous", &[&[b, s, h, dk]], &[b, s, h, dk]);
        g.linear(&[b, s], inner, d);
        g.dropout(self.dropout, &hidden);
        g.residual(&hidden);
    }

    /// The expert network on `rows` tokens: up, activation, dropout, down.
    fn expert(&self, g: &mut Builder, rows: &[f64]) {
        let mut wide = rows.to_vec();
        wide.push(self.d_ff);
        g.linear(rows, self.d_model, self.d_ff);
        if self.gated {
            g.linear(rows, self.d_model, self.d_ff);
            g.activation(&self.activation, &wide);
            g.binary("mul", &wide);
        } else {
            g.activation(&self.activation, &wide);
        }
        g.dropout(self.dropout, &wide);
        g.linear(rows, self.d_ff, self.d_model);
    }

    fn dense_ff(&self, g: &mut Builder, x: Shape) {
        let hidden = [x.batch, x.seq, self.d_model];
        self.layer_norm(g, &hidden);
        self.expert(g, &[x.batch, x.seq]);
        g.dropout(self.dropout, &hidden);
        g.residual(&hidden);
    }

    /// The router, then NeuSight's dispatch: each expert runs on a padded
    /// buffer of `batch x expert_capacity` rows; the tokens it was given are
    /// gathered into it and scattered back.
    fn sparse_ff(&self, g: &mut Builder, x: Shape) {
        let (b, s, d, e) = (x.batch, x.seq, self.d_model, self.experts);
        let hidden = [b, s, d];
        let routes = [b, s, e];
        self.layer_norm(g, &hidden);
        if g.training {
            // Jitter: the inputs times uniform noise.
            g.function("full_like", &[&hidden], &hidden);
            g.binary("mul", &hidden);
        }
        g.linear(&[b, s], d, e);
        g.unary("softmax", &routes);
        g.function("cumsum", &[&routes], &routes);
        g.unary("le", &routes);
        g.binary("mul", &routes);
        g.function("max", &[&routes], &[b, s]);
        g.method("clone", &[&hidden], &hidden);
        let buffer = [b * self.expert_capacity, d];
        g.function("zeros", &[], &buffer);
        // Every sequence sends at most `expert_capacity` tokens to an expert.
        let given = [b * self.expert_capacity.min(s), d];
        g.repeated(e, |g| {
            g.method("bool", &[&[b, s]], &[b, s]);
            g.method("clone", &[&given], &given);
            self.expert(g, &[buffer[0]]);
            g.method("clone", &[&given], &given);
        });
        g.function("mul", &[&[b, s, 1.0], &hidden], &hidden);
        g.dropout(self.dropout, &hidden);
        g.residual(&hidden);
    }
}

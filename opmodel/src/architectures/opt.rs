//! OPT (`OPTForCausalLM`, eager attention).

use super::{Builder, Fields, Shape};
use crate::OpModelError;

#[derive(Clone, Debug, PartialEq)]
pub struct Opt {
    pub hidden: f64,
    pub heads: f64,
    pub layers: f64,
    pub ffn: f64,
    pub vocab: f64,
    /// Width of the token embeddings; projected to and from `hidden` where it differs.
    pub embed: f64,
    pub positions: f64,
    pub activation: String,
    /// Layer norm before each block (and a final one), else after.
    pub norm_before: bool,
    /// Dropout probabilities: residual branches; attention weights (0 in OPT's configurations).
    pub dropout: f64,
    pub attention_dropout: f64,
}

impl Opt {
    pub(crate) fn from_fields(f: &Fields<'_>) -> Result<Opt, OpModelError> {
        let hidden = f.count("hidden_size")?;
        Ok(Opt {
            hidden,
            heads: f.count("num_attention_heads")?,
            layers: f.count("num_hidden_layers")?,
            ffn: f.count("ffn_dim")?,
            vocab: f.count("vocab_size")?,
            embed: f.optional("word_embed_proj_dim")?.unwrap_or(hidden),
            positions: f.optional("max_position_embeddings")?.unwrap_or(2048.0),
            activation: f.text("activation_function").unwrap_or("relu").to_string(),
            norm_before: f.flag("do_layer_norm_before").unwrap_or(true),
            dropout: f.probability("dropout", 0.1)?,
            attention_dropout: f.probability("attention_dropout", 0.0)?,
        })
    }

    /// Trainable parameters: token embeddings (the head is tied to them),
    /// learned positions (two offset rows), the projections where the
    /// embedding width differs, each block, the final norm.
    pub(crate) fn parameters(&self) -> f64 {
        let (d, f) = (self.hidden, self.ffn);
        let projections = if self.embed != d { 2.0 * self.embed * d } else { 0.0 };
        let block = 4.0 * (d * d + d) + 4.0 * d + (d * f + f) + (f * d + d);
        let final_norm = if self.norm_before { 2.0 * d } else { 0.0 };
        self.vocab * self.embed + (self.positions + 2.0) * d + projections + self.layers * block + final_norm
    }

    pub(crate) fn build(&self, g: &mut Builder, x: Shape) {
        let (b, s, d, h) = (x.batch, x.seq, self.hidden, self.heads);
        let t = x.tokens();
        let dh = d / h;
        let hidden = [b, s, d];
        g.module("Embedding", &[&[b, s]], &[b, s, self.embed]);
        if self.embed != d {
            g.linear(&[b, s], self.embed, d);
        }
        // The causal mask, combined with an all-ones padding mask.
        let mask = [b, 1.0, s, s];
        g.function("ones", &[], &[b, s]);
        g.function("full", &[], &[s, s]);
        g.function("lt", &[&[s], &[s, 1.0]], &[s, s]);
        g.method("masked_fill_", &[&[s, s], &[s, s]], &[s, s]);
        g.unary("sub", &mask);
        g.method("to", &[&mask], &mask);
        g.method("masked_fill", &[&mask, &mask], &mask);
        g.method("bool", &[&mask], &mask);
        g.method("masked_fill", &[&mask, &mask], &mask);
        // Learned positions from the mask's cumulative sum.
        g.function("cumsum", &[&[b, s]], &[b, s]);
        g.binary("mul", &[b, s]);
        g.function("embedding", &[&[b, s], &[self.positions + 2.0, d]], &hidden);
        g.binary("add", &hidden);
        g.repeated(self.layers, |g| {
            g.module("LayerNorm", &[&hidden], &hidden);
            g.linear(&[b, s], d, d);
            g.unary("mul", &hidden);
            for _ in 0..2 {
                g.linear(&[b, s], d, d);
                g.method("contiguous", &[&[b, h, s, dh]], &[b, h, s, dh]);
            }
            g.method("contiguous", &[&[b, h, s, dh]], &[b, h, s, dh]);
            let scores = [b, h, s, s];
            g.function("bmm", &[&[b * h, s, dh], &[b * h, dh, s]], &[b * h, s, s]);
            g.function("add", &[&scores, &mask], &scores);
            g.function("max", &[&scores], &scores);
            g.unary("softmax", &[b * h, s, s]);
            g.cast_to_query_type(&[b * h, s, s]);
            g.dropout(self.attention_dropout, &[b * h, s, s]);
            g.function("bmm", &[&[b * h, s, s], &[b * h, s, dh]], &[b * h, s, dh]);
            g.linear(&[b, s], d, d);
            g.dropout(self.dropout, &hidden);
            g.residual(&hidden);
            g.module("LayerNorm", &[&[t, d]], &[t, d]);
            g.linear(&[t], d, self.ffn);
            g.activation(&self.activation, &[t, self.ffn]);
            g.linear(&[t], self.ffn, d);
            g.dropout(self.dropout, &[t, d]);
            g.residual(&[t, d]);
        });
        if self.norm_before {
            g.module("LayerNorm", &[&hidden], &hidden);
        }
        if self.embed != d {
            g.linear(&[b, s], d, self.embed);
        }
        g.linear(&[b, s], self.embed, self.vocab);
    }
}

//! GPT-2 (`GPT2LMHeadModel`, eager attention): NeuSight's GPT-2 and GPT-3
//! configurations.

use super::{Builder, Fields, Shape};
use crate::OpModelError;

#[derive(Clone, Debug, PartialEq)]
pub struct Gpt2 {
    pub hidden: f64,
    pub heads: f64,
    pub layers: f64,
    pub inner: f64,
    pub vocab: f64,
    pub positions: f64,
    pub activation: String,
    /// Dropout probabilities: embeddings, attention weights, residual branches.
    pub embedding_dropout: f64,
    pub attention_dropout: f64,
    pub residual_dropout: f64,
}

impl Gpt2 {
    pub(crate) fn from_fields(f: &Fields<'_>) -> Result<Gpt2, OpModelError> {
        let hidden = f.count("n_embd")?;
        Ok(Gpt2 {
            hidden,
            heads: f.count("n_head")?,
            layers: f.count("n_layer")?,
            inner: f.optional("n_inner")?.unwrap_or(4.0 * hidden),
            vocab: f.count("vocab_size")?,
            positions: f.optional("n_positions")?.unwrap_or(1024.0),
            activation: f.text("activation_function").unwrap_or("gelu_new").to_string(),
            embedding_dropout: f.probability("embd_pdrop", 0.1)?,
            attention_dropout: f.probability("attn_pdrop", 0.1)?,
            residual_dropout: f.probability("resid_pdrop", 0.1)?,
        })
    }

    /// Trainable parameters: token and position embeddings (the head is
    /// tied to the former), each block's two norms, attention and MLP, the
    /// final norm.
    pub(crate) fn parameters(&self) -> f64 {
        let (d, i) = (self.hidden, self.inner);
        let block = 4.0 * d + (3.0 * d * d + 3.0 * d) + (d * d + d) + (d * i + i) + (i * d + d);
        self.vocab * d + self.positions * d + self.layers * block + 2.0 * d
    }

    pub(crate) fn build(&self, g: &mut Builder, x: Shape) {
        let (b, s, d, h) = (x.batch, x.seq, self.hidden, self.heads);
        let t = x.tokens();
        let dh = d / h;
        let act = [b, s, self.inner];
        g.module("Embedding", &[&[b, s]], &[b, s, d]);
        g.module("Embedding", &[&[1.0, s]], &[1.0, s, d]);
        g.function("add", &[&[b, s, d], &[1.0, s, d]], &[b, s, d]);
        g.dropout(self.embedding_dropout, &[b, s, d]);
        g.repeated(self.layers, |g| {
            g.module("LayerNorm", &[&[b, s, d]], &[b, s, d]);
            g.function("addmm", &[&[3.0 * d], &[t, d], &[d, 3.0 * d]], &[t, 3.0 * d]);
            let scores = [b, h, s, s];
            g.function("matmul", &[&[b, h, s, dh], &[b, h, dh, s]], &scores);
            g.unary("truediv", &scores);
            g.function("where", &[&[1.0, 1.0, s, s], &scores], &scores);
            g.unary("softmax", &scores);
            g.cast_to_query_type(&scores);
            g.dropout(self.attention_dropout, &scores);
            g.function("matmul", &[&scores, &[b, h, s, dh]], &[b, h, s, dh]);
            g.method("contiguous", &[&[b, s, h, dh]], &[b, s, h, dh]);
            g.function("addmm", &[&[d], &[t, d], &[d, d]], &[t, d]);
            g.dropout(self.residual_dropout, &[b, s, d]);
            g.residual(&[b, s, d]);
            g.module("LayerNorm", &[&[b, s, d]], &[b, s, d]);
            g.function("addmm", &[&[self.inner], &[t, d], &[d, self.inner]], &[t, self.inner]);
            g.activation(&self.activation, &act);
            g.function("addmm", &[&[d], &[t, self.inner], &[self.inner, d]], &[t, d]);
            g.dropout(self.residual_dropout, &[b, s, d]);
            g.residual(&[b, s, d]);
        });
        g.module("LayerNorm", &[&[b, s, d]], &[b, s, d]);
        g.linear(&[b, s], d, self.vocab);
    }
}

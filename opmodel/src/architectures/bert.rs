//! BERT, as NeuSight runs it: `BertForPreTraining` (masked-LM and
//! next-sentence heads) in training, `BertForSequenceClassification` (two
//! labels) in inference.

use super::{Builder, Fields, Shape};
use crate::OpModelError;

#[derive(Clone, Debug, PartialEq)]
pub struct Bert {
    pub hidden: f64,
    pub heads: f64,
    pub layers: f64,
    pub intermediate: f64,
    pub vocab: f64,
    pub positions: f64,
    pub token_types: f64,
    pub activation: String,
    /// Dropout probabilities: embeddings, residual branches and the classifier; attention weights.
    pub hidden_dropout: f64,
    pub attention_dropout: f64,
}

impl Bert {
    pub(crate) fn from_fields(f: &Fields<'_>) -> Result<Bert, OpModelError> {
        Ok(Bert {
            hidden: f.count("hidden_size")?,
            heads: f.count("num_attention_heads")?,
            layers: f.count("num_hidden_layers")?,
            intermediate: f.count("intermediate_size")?,
            vocab: f.count("vocab_size")?,
            positions: f.optional("max_position_embeddings")?.unwrap_or(512.0),
            token_types: f.optional("type_vocab_size")?.unwrap_or(2.0),
            activation: f.text("hidden_act").unwrap_or("gelu").to_string(),
            hidden_dropout: f.probability("hidden_dropout_prob", 0.1)?,
            attention_dropout: f.probability("attention_probs_dropout_prob", 0.1)?,
        })
    }

    /// Trainable parameters of the model as NeuSight runs it in `training`
    /// (pre-training heads; the vocabulary projection tied to the word
    /// embeddings) or not (a two-label classifier).
    pub(crate) fn parameters(&self, training: bool) -> f64 {
        let (d, i) = (self.hidden, self.intermediate);
        let embeddings = (self.vocab + self.positions + self.token_types) * d + 2.0 * d;
        let block = 4.0 * (d * d + d) + 4.0 * d + (d * i + i) + (i * d + d);
        let pooler = d * d + d;
        let heads = if training {
            (d * d + d) + 2.0 * d + self.vocab + (2.0 * d + 2.0)
        } else {
            2.0 * d + 2.0
        };
        embeddings + self.layers * block + pooler + heads
    }

    pub(crate) fn build(&self, g: &mut Builder, x: Shape) {
        let (b, s, d, h) = (x.batch, x.seq, self.hidden, self.heads);
        let dh = d / h;
        let hidden = [b, s, d];
        // The attention mask from an all-ones mask: (1 - mask) * min.
        g.function("ones", &[], &[b, s]);
        g.unary("sub", &[b, 1.0, 1.0, s]);
        g.unary("mul", &[b, 1.0, 1.0, s]);
        // Word, token-type and position embeddings.
        g.module("Embedding", &[&[b, s]], &hidden);
        g.module("Embedding", &[&[b, s]], &hidden);
        g.binary("add", &hidden);
        g.module("Embedding", &[&[1.0, s]], &[1.0, s, d]);
        g.function("add", &[&hidden, &[1.0, s, d]], &hidden);
        g.module("LayerNorm", &[&hidden], &hidden);
        g.dropout(self.hidden_dropout, &hidden);
        g.repeated(self.layers, |g| {
            for _ in 0..3 {
                g.linear(&[b, s], d, d);
            }
            let scores = [b, h, s, s];
            g.function("matmul", &[&[b, h, s, dh], &[b, h, dh, s]], &scores);
            g.unary("truediv", &scores);
            g.function("add", &[&scores, &[b, 1.0, 1.0, s]], &scores);
            g.unary("softmax", &scores);
            g.dropout(self.attention_dropout, &scores);
            g.function("matmul", &[&scores, &[b, h, s, dh]], &[b, h, s, dh]);
            g.method("contiguous", &[&[b, s, h, dh]], &[b, s, h, dh]);
            g.linear(&[b, s], d, d);
            g.dropout(self.hidden_dropout, &hidden);
            g.residual(&hidden);
            g.module("LayerNorm", &[&hidden], &hidden);
            g.linear(&[b, s], d, self.intermediate);
            g.activation(&self.activation, &[b, s, self.intermediate]);
            g.linear(&[b, s], self.intermediate, d);
            g.dropout(self.hidden_dropout, &hidden);
            g.residual(&hidden);
            g.module("LayerNorm", &[&hidden], &hidden);
        });
        // The pooler: the first token through a dense layer and tanh.
        g.linear(&[b], d, d);
        g.module("Tanh", &[&[b, d]], &[b, d]);
        if g.training {
            // Masked-LM head (transform, then the vocabulary) and next-sentence head.
            g.linear(&[b, s], d, d);
            g.activation(&self.activation, &hidden);
            g.module("LayerNorm", &[&hidden], &hidden);
            g.linear(&[b, s], d, self.vocab);
            g.linear(&[b], d, 2.0);
        } else {
            g.dropout(self.hidden_dropout, &[b, d]);
            g.linear(&[b], d, 2.0);
        }
    }
}

//! Per-node graphs built from a model's Hugging Face configuration
//! (NeuSight's `DLmodel_configs/*.json`), for models and configurations that
//! have no traced graph: the nodes a forward (and backward) pass runs, with
//! their shapes, as PyTorch's eager Hugging Face code runs them. Each node's
//! work comes from the same mapping as a traced graph's
//! (`graph::call_work`), so both price alike.
//!
//! Architectures: GPT-2 (`gpt2`, which NeuSight's GPT-3 configurations
//! use), BERT (`bert`), OPT (`opt`), Switch Transformers
//! (`switch_transformers`, with NeuSight's patched expert dispatch), and
//! Llama with the models built like it (`llama`, `mistral`, `qwen2`).

mod bert;
mod gpt2;
mod llama;
mod opt;
mod switch;

use std::path::Path;

use serde_json::Value;

use crate::OpModelError;
use crate::graph::{ModelGraph, Node};

/// A model's configuration, as far as its graph needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelConfig {
    /// The file's stem (`gpt3_xl`), which NeuSight's label names use.
    pub name: String,
    pub architecture: Architecture,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Architecture {
    Gpt2(gpt2::Gpt2),
    Bert(bert::Bert),
    Opt(opt::Opt),
    Switch(switch::Switch),
    Llama(llama::Llama),
}

/// One configuration field, read as a number.
pub(crate) struct Fields<'a> {
    json: &'a Value,
    origin: &'a Path,
}

impl Fields<'_> {
    fn bad(&self, reason: String) -> OpModelError {
        OpModelError::Parse {
            path: self.origin.to_path_buf(),
            reason,
        }
    }

    /// A positive whole number.
    pub(crate) fn count(&self, key: &str) -> Result<f64, OpModelError> {
        self.optional(key)?
            .ok_or_else(|| self.bad(format!("no `{key}`: a model configuration needs it")))
    }

    /// A positive whole number, or `None` where the key is absent or null.
    pub(crate) fn optional(&self, key: &str) -> Result<Option<f64>, OpModelError> {
        self.whole(key, 1.0)
    }

    /// A whole number of at least `min`, or `None` where the key is absent or null.
    pub(crate) fn whole(&self, key: &str, min: f64) -> Result<Option<f64>, OpModelError> {
        match self.json.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_f64() {
                Some(n) if n >= min && n.fract() == 0.0 => Ok(Some(n)),
                _ => Err(self.bad(format!("`{key}` is {v}, not a whole number of at least {min}"))),
            },
        }
    }

    /// A dropout probability in [0, 1], `default` where the key is absent or null.
    pub(crate) fn probability(&self, key: &str, default: f64) -> Result<f64, OpModelError> {
        match self.json.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => match v.as_f64() {
                Some(p) if (0.0..=1.0).contains(&p) => Ok(p),
                _ => Err(self.bad(format!("`{key}` is {v}, not a probability between 0 and 1"))),
            },
        }
    }

    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        self.json.get(key).and_then(Value::as_str)
    }

    pub(crate) fn flag(&self, key: &str) -> Option<bool> {
        self.json.get(key).and_then(Value::as_bool)
    }
}

impl ModelConfig {
    /// Reads a Hugging Face `config.json`; the model's name is the file's stem.
    pub fn read(path: &Path) -> Result<ModelConfig, OpModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| OpModelError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        ModelConfig::parse(&name, &text, path)
    }

    /// Parses a configuration's JSON; `origin` names it in errors.
    pub fn parse(name: &str, text: &str, origin: &Path) -> Result<ModelConfig, OpModelError> {
        let json: Value = serde_json::from_str(text).map_err(|e| OpModelError::Parse {
            path: origin.to_path_buf(),
            reason: format!("not a JSON model configuration: {e}"),
        })?;
        let fields = Fields { json: &json, origin };
        let architecture = match fields.text("model_type") {
            Some("gpt2") => Architecture::Gpt2(gpt2::Gpt2::from_fields(&fields)?),
            Some("bert") => Architecture::Bert(bert::Bert::from_fields(&fields)?),
            Some("opt") => Architecture::Opt(opt::Opt::from_fields(&fields)?),
            Some("switch_transformers") => Architecture::Switch(switch::Switch::from_fields(&fields)?),
            Some(t @ ("llama" | "mistral" | "qwen2")) => Architecture::Llama(llama::Llama::from_fields(&fields, t)?),
            other => {
                return Err(fields.bad(format!(
                    "model_type {}: graphs are built for gpt2, bert, opt, switch_transformers, llama, mistral and qwen2",
                    other.map_or("missing".to_string(), |t| format!("`{t}`"))
                )));
            }
        };
        Ok(ModelConfig {
            name: name.to_string(),
            architecture,
        })
    }

    /// Trainable parameters of the model as the graph runs it (`training`:
    /// BERT's pre-training heads, else its classifier): what the optimizer
    /// updates and data-parallel training all-reduces each step.
    pub fn parameters(&self, training: bool) -> f64 {
        match &self.architecture {
            Architecture::Gpt2(m) => m.parameters(),
            Architecture::Bert(m) => m.parameters(training),
            Architecture::Opt(m) => m.parameters(),
            Architecture::Switch(m) => m.parameters(),
            Architecture::Llama(m) => m.parameters(),
        }
    }

    /// The architecture and its size, in a few words (`gpt2, 24 layers`).
    pub fn describe(&self) -> String {
        match &self.architecture {
            Architecture::Gpt2(m) => format!("gpt2, {} layers, hidden {}", m.layers, m.hidden),
            Architecture::Bert(m) => format!("bert, {} layers, hidden {}", m.layers, m.hidden),
            Architecture::Opt(m) => format!("opt, {} layers, hidden {}", m.layers, m.hidden),
            Architecture::Switch(m) => format!(
                "switch_transformers, {}+{} layers, {} experts, d_model {}",
                m.encoder_layers, m.decoder_layers, m.experts, m.d_model
            ),
            Architecture::Llama(m) => format!(
                "llama, {} layers, hidden {}, {} of {} heads for keys and values",
                m.layers, m.hidden, m.kv_heads, m.heads
            ),
        }
    }

    /// The same model with `layers` transformer layers, where the
    /// architecture has one stack of them: a NeuSight label's `num_layer`
    /// says how many layers the timed model had, which may differ from its
    /// configuration's. Switch's encoder and decoder stacks keep their own
    /// counts (its labels give none).
    pub fn with_layers(mut self, layers: f64) -> ModelConfig {
        match &mut self.architecture {
            Architecture::Gpt2(m) => m.layers = layers,
            Architecture::Bert(m) => m.layers = layers,
            Architecture::Opt(m) => m.layers = layers,
            Architecture::Llama(m) => m.layers = layers,
            Architecture::Switch(_) => {}
        }
        self
    }

    /// The nodes one forward pass (and, in training, its backward) runs on
    /// `batch` sequences of `seqlen` tokens, each with its count.
    pub fn graph(&self, batch: f64, seqlen: f64, training: bool) -> ModelGraph {
        let mut b = Builder::new(training);
        let shape = Shape { batch, seq: seqlen };
        match &self.architecture {
            Architecture::Gpt2(m) => m.build(&mut b, shape),
            Architecture::Bert(m) => m.build(&mut b, shape),
            Architecture::Opt(m) => m.build(&mut b, shape),
            Architecture::Switch(m) => m.build(&mut b, shape),
            Architecture::Llama(m) => m.build(&mut b, shape),
        }
        b.graph
    }
}

/// The input's batch and sequence length.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    pub batch: f64,
    pub seq: f64,
}

impl Shape {
    pub(crate) fn tokens(&self) -> f64 {
        self.batch * self.seq
    }
}

/// Collects the nodes of a graph in the order the model runs them.
pub(crate) struct Builder {
    pub(crate) training: bool,
    times: f64,
    graph: ModelGraph,
}

impl Builder {
    fn new(training: bool) -> Builder {
        Builder {
            training,
            times: 1.0,
            graph: ModelGraph::default(),
        }
    }

    fn push(&mut self, op: &str, called: &str, inputs: &[&[f64]], output: &[f64]) {
        let node = Node::call(
            op,
            called,
            inputs.iter().map(|s| s.to_vec()).collect(),
            output.to_vec(),
            self.training,
        );
        self.graph.nodes.push((node, self.times));
    }

    /// A module call (`Linear`, `LayerNorm`, `Embedding`, `Dropout`, ...).
    pub(crate) fn module(&mut self, class: &str, inputs: &[&[f64]], output: &[f64]) {
        self.push("call_module", class, inputs, output);
    }

    /// A function call (`add`, `matmul`, `softmax`, ...); scalar operands are left out.
    pub(crate) fn function(&mut self, name: &str, inputs: &[&[f64]], output: &[f64]) {
        self.push("call_function", name, inputs, output);
    }

    /// A tensor method call (`contiguous`, `masked_fill`, ...).
    pub(crate) fn method(&mut self, name: &str, inputs: &[&[f64]], output: &[f64]) {
        self.push("call_method", name, inputs, output);
    }

    /// The nodes `body` adds run `times` times per pass (a stack of layers).
    pub(crate) fn repeated(&mut self, times: f64, body: impl FnOnce(&mut Builder)) {
        let outer = self.times;
        self.times = outer * times;
        body(self);
        self.times = outer;
    }

    /// Dropout with probability `p` on `x`. PyTorch returns the input itself
    /// where `p` is 0 (OPT's attention dropout), so that launches nothing.
    pub(crate) fn dropout(&mut self, p: f64, x: &[f64]) {
        if p > 0.0 {
            self.module("Dropout", &[x], x);
        }
    }

    /// An element-wise function of one tensor of shape `x`.
    pub(crate) fn unary(&mut self, name: &str, x: &[f64]) {
        self.function(name, &[x], x);
    }

    /// An element-wise function of two tensors of shape `x`.
    pub(crate) fn binary(&mut self, name: &str, x: &[f64]) {
        self.function(name, &[x, x], x);
    }

    /// A block's output of shape `x` added into the residual stream.
    pub(crate) fn residual(&mut self, x: &[f64]) {
        self.binary("add", x);
        if let Some((node, _)) = self.graph.nodes.last_mut() {
            node.residual = true;
        }
    }

    /// Attention weights of shape `x` cast back to the queries' type after
    /// a float32 softmax (`softmax(.., dtype=float32).to(query.dtype)`):
    /// nothing in float32, a cast under autocast.
    pub(crate) fn cast_to_query_type(&mut self, x: &[f64]) {
        self.method(crate::graph::CAST_TO_QUERY_TYPE, &[x], x);
        if let Some((node, _)) = self.graph.nodes.last_mut() {
            node.work = crate::work::OpWork::no_work();
            node.has_backward = false;
        }
    }

    /// `Linear` from `[.., inner]` to `[.., cols]`.
    pub(crate) fn linear(&mut self, rows: &[f64], inner: f64, cols: f64) {
        let mut input = rows.to_vec();
        input.push(inner);
        let mut output = rows.to_vec();
        output.push(cols);
        self.module("Linear", &[&input], &output);
    }

    /// The activation Hugging Face's `ACT2FN[name]` runs on `x`.
    pub(crate) fn activation(&mut self, name: &str, x: &[f64]) {
        match name {
            // NewGELUActivation, traced into its operations:
            // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => {
                self.unary("mul", x);
                self.unary("pow", x);
                self.unary("mul", x);
                self.binary("add", x);
                self.unary("mul", x);
                self.unary("tanh", x);
                self.unary("add", x);
                self.binary("mul", x);
            }
            "relu" => self.module("ReLU", &[x], x),
            other => self.unary(other, x),
        }
    }
}

#[cfg(test)]
mod tests;

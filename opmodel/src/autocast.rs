//! A graph run under `torch.autocast` in 16 bits, as mixed-precision
//! training runs it (Hugging Face's `--bf16`/`--fp16`, Lightning's
//! `16-mixed`): matrix products in 16 bits on inputs cast from float32,
//! the ops autocast keeps in float32 (softmax, norms, `pow`, reductions)
//! on inputs cast back, everything else in its input's type, and the
//! residual stream in float32. The casts are kernels of their own: on an
//! H100, BERT-large's take as long as its matrix products
//! (bench/measured/h100-bf16).
//!
//! A configuration's graph names no tensors, only shapes, so an input's
//! type is that of the last node whose output has as many elements. Where
//! that guess fails in a transformer, the graph says more: the builders
//! mark residual additions (`Node::residual`), and projections run one
//! after another read one input (Q, K and V from a norm).

use std::collections::HashMap;

use crate::graph::{CAST_TO_QUERY_TYPE, ModelGraph, Node};
use crate::work::{OpKind, OpWork, Pass};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    Float32,
    Half,
}

/// Ops that autocast runs in float32 whatever their inputs (PyTorch's
/// CUDA float32 list), by the lower-case name a graph node calls.
const FLOAT32_OPS: [&str; 13] = [
    "softmax",
    "log_softmax",
    "layernorm",
    "layer_norm",
    "group_norm",
    "pow",
    "rsqrt",
    "exp",
    "log",
    "sum",
    "cumsum",
    "cross_entropy",
    "nll_loss",
];

fn numel(shape: &[f64]) -> f64 {
    shape.iter().product()
}

/// The work of every node of `graph` under autocast, with its count, and
/// in training every backward: the casts' backwards cast the gradients.
pub(crate) fn works(graph: &ModelGraph, training: bool) -> Vec<(OpWork, f64)> {
    AutocastPass::of(graph).works(training)
}

#[derive(Default)]
struct AutocastPass {
    /// The type of the last output of each element count (as bits).
    produced: HashMap<u64, Dtype>,
    /// The input shape and type the last matrix product read, while no
    /// other node has run since: Q, K and V projections all read the norm's
    /// float32 output, though each writes a 16-bit one of that size.
    sibling: Option<(Vec<f64>, Dtype)>,
    /// Forward works, each with its count and its backward, if any.
    forward: Vec<(OpWork, f64, Option<OpWork>)>,
    /// Elements the forward pass casts, counts applied.
    cast_elements: f64,
}

impl AutocastPass {
    /// The pass over every node of `graph`, in order.
    fn of(graph: &ModelGraph) -> AutocastPass {
        let mut pass = AutocastPass::default();
        for (node, times) in &graph.nodes {
            pass.node(node, *times);
        }
        pass
    }

    /// Its works, each forward one followed by its backward in training.
    fn works(self, training: bool) -> Vec<(OpWork, f64)> {
        let mut works = Vec::with_capacity(self.forward.len() * 2);
        for (work, times, backward) in self.forward {
            works.push((work, times));
            if training && let Some(b) = backward {
                works.push((b, times));
            }
        }
        works
    }

    fn type_of(&self, shape: &[f64]) -> Dtype {
        self.produced
            .get(&numel(shape).to_bits())
            .copied()
            .unwrap_or(Dtype::Float32)
    }

    fn emit(&mut self, work: OpWork, times: f64, backward: bool) {
        let b = backward.then(|| work.backward());
        self.forward.push((work, times, b));
    }

    /// A conversion of `elements` between float32 and 16 bits, and the
    /// same conversion of their gradient in the backward pass.
    fn cast(&mut self, elements: f64, times: f64) {
        if elements > 1.0 {
            self.cast_elements += elements * times;
            let work = OpWork::cast(elements);
            let backward = OpWork {
                pass: Pass::Backward,
                ..work
            };
            self.forward.push((work, times, Some(backward)));
        }
    }

    fn node(&mut self, node: &Node, times: f64) {
        let called = node.target.to_ascii_lowercase();
        let tensors: Vec<&Vec<f64>> = node.input_shapes.iter().filter(|s| numel(s) > 1.0).collect();
        let output = if node.work.kind == OpKind::Gemm || node.work.kind == OpKind::Conv {
            self.matrix_product(node, &called, times);
            Dtype::Half
        } else {
            self.sibling = None;
            let inputs: Vec<Dtype> = tensors.iter().map(|s| self.type_of(s)).collect();
            let output = if called == CAST_TO_QUERY_TYPE {
                if inputs.first() == Some(&Dtype::Float32) {
                    self.cast(numel(tensors[0]), times);
                }
                Dtype::Half
            } else if FLOAT32_OPS.contains(&called.as_str()) {
                if inputs.first() == Some(&Dtype::Half) {
                    self.cast(numel(tensors[0]), times);
                }
                Dtype::Float32
            } else if node.residual || inputs.is_empty() || called == "embedding" {
                Dtype::Float32
            } else if called == "where" {
                // The condition is boolean: the values decide.
                *inputs.last().expect("a tensor input")
            } else if inputs.contains(&Dtype::Float32) {
                Dtype::Float32
            } else {
                Dtype::Half
            };
            if node.work.kind != OpKind::NoWork {
                let work = match output {
                    Dtype::Half => node.work.in_half(),
                    Dtype::Float32 => node.work,
                };
                self.emit(work, times, node.has_backward);
            }
            output
        };
        self.produced.insert(numel(&node.output_shape).to_bits(), output);
    }

    /// A matrix product in 16 bits: its float32 activations cast first,
    /// and its float32 weight (a `Linear`'s, `addmm`'s) cast once a pass.
    fn matrix_product(&mut self, node: &Node, called: &str, times: f64) {
        let shapes = &node.input_shapes;
        let (activations, weight): (Vec<&Vec<f64>>, f64) = match called {
            "linear" | "conv1d" => {
                let inner = shapes.first().and_then(|s| s.last()).copied().unwrap_or(0.0);
                let cols = node.output_shape.last().copied().unwrap_or(0.0);
                (shapes.iter().take(1).collect(), inner * cols + cols)
            }
            "addmm" if shapes.len() >= 3 => (vec![&shapes[1]], numel(&shapes[2]) + numel(&shapes[0])),
            _ => (shapes.iter().take(2).collect(), 0.0),
        };
        let first = activations.first().map(|s| s.to_vec()).unwrap_or_default();
        let first_type = match &self.sibling {
            Some((shape, dtype)) if *shape == first => *dtype,
            _ => self.type_of(&first),
        };
        for (i, shape) in activations.iter().enumerate() {
            let dtype = if i == 0 { first_type } else { self.type_of(shape) };
            if dtype == Dtype::Float32 {
                self.cast(numel(shape), times);
            }
        }
        self.cast(weight, times);
        self.emit(node.work.in_half(), times, node.has_backward);
        self.sibling = Some((first, first_type));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::architectures::ModelConfig;
    use std::path::Path;

    fn bert_large() -> ModelConfig {
        let json = r#"{"model_type": "bert", "hidden_size": 1024, "num_attention_heads": 16,
            "num_hidden_layers": 24, "intermediate_size": 4096, "vocab_size": 30522}"#;
        ModelConfig::parse("bert_large", json, Path::new("bert_large.json")).expect("a configuration")
    }

    #[test]
    fn matrix_products_run_in_half_and_norms_in_float32() {
        let graph = bert_large().graph(8.0, 512.0, true);
        let works = works(&graph, true);
        for (w, _) in &works {
            match w.kind {
                OpKind::Gemm => assert_eq!(w.dtype_bytes, 2.0, "{w:?}"),
                OpKind::Norm | OpKind::Softmax => assert_eq!(w.dtype_bytes, 4.0, "{w:?}"),
                _ => {}
            }
        }
    }

    /// Per layer: the attention probabilities (b x h x s x s, softmax's
    /// float32 output, cast for the next product), the norm's output cast
    /// once for Q, K and V and once for the up-projection, and the 12.6 M
    /// weights of the layer; the embeddings, pooler and head add little.
    #[test]
    fn casts_follow_the_types_tensors_have() {
        let (b, s, d, h, i) = (8.0, 512.0, 1024.0, 16.0, 4096.0);
        let per_layer = b * h * s * s + 2.0 * b * s * d + (4.0 * (d * d + d) + (d * i + i) + (i * d + d));
        let layers = 24.0 * per_layer;
        let cast = AutocastPass::of(&bert_large().graph(b, s, false)).cast_elements;
        assert!(
            cast >= layers && cast < layers * 1.2,
            "{cast} elements cast for {layers} in the layers"
        );
        // Training casts every gradient back: each cast has a backward twin.
        let pass = AutocastPass::of(&bert_large().graph(b, s, true));
        let casts = pass
            .forward
            .iter()
            .filter(|(w, _, _)| w.bytes == 6.0 * w.elements)
            .count();
        let training = pass.works(true);
        let backward_casts = training
            .iter()
            .filter(|(w, _)| w.pass == Pass::Backward && w.bytes == 6.0 * w.elements)
            .count();
        assert!(backward_casts >= casts, "{backward_casts} backward casts for {casts}");
    }
}

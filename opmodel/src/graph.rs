//! NeuSight's per-node FX graphs: one transformer layer plus the layers
//! around it, one row per node with its shapes (and, where measured, its
//! forward and backward latency). Each node becomes the work it launches;
//! the full model is the graph with its layer repeated `num_layer` times.

use std::collections::HashMap;
use std::path::Path;

use crate::OpModelError;
use crate::csvio::CsvTable;
use crate::work::{EwFunc, OpKind, OpWork};

/// What a configuration's graph calls the cast of attention weights back
/// to the queries' type (`Builder::cast_to_query_type`): a node with no
/// work of its own in float32, a cast under autocast (`autocast.rs`).
pub(crate) const CAST_TO_QUERY_TYPE: &str = "cast_to_query_type";

/// One graph node as work.
#[derive(Clone, Debug)]
pub struct Node {
    /// The FX node's `Name`.
    pub name: String,
    /// FX op: call_module, call_function or call_method.
    pub fx_op: String,
    /// The function or method called, or the module's class.
    pub target: String,
    pub input_shapes: Vec<Vec<f64>>,
    pub output_shape: Vec<f64>,
    pub work: OpWork,
    /// In the repeated transformer layer (layer 0 of the graph).
    pub in_layer: bool,
    /// Measured forward latency, ms.
    pub fw_ms: Option<f64>,
    /// Measured backward plus gradient-accumulation latency, ms.
    pub bw_ms: Option<f64>,
    /// Whether training runs a backward kernel for it: additions pass the
    /// gradient through, copies and casts, comparisons and tensor creation
    /// have none (NeuSight's graphs time no backward for them).
    pub has_backward: bool,
    /// Adds a block's output into the residual stream, which stays float32
    /// under autocast (it starts at the embeddings and every norm reads it).
    /// Only graphs built from a configuration mark it; a traced graph's
    /// nodes leave it false.
    pub residual: bool,
}

impl Node {
    /// A node of a graph built from a model's configuration: `called` as
    /// [`call_work`] takes it, no measured latency.
    pub(crate) fn call(op: &str, called: &str, inputs: Vec<Vec<f64>>, output: Vec<f64>, training: bool) -> Node {
        let work = call_work(op, called, &inputs, &output, training);
        Node {
            name: called.to_string(),
            fx_op: op.to_string(),
            target: called.to_string(),
            input_shapes: inputs,
            output_shape: output,
            work,
            in_layer: false,
            fw_ms: None,
            bw_ms: None,
            has_backward: has_backward(&work, &called.to_ascii_lowercase()),
            residual: false,
        }
    }
}

/// A whole model's nodes, each with how many times one pass runs it.
#[derive(Clone, Debug, Default)]
pub struct ModelGraph {
    pub nodes: Vec<(Node, f64)>,
}

impl ModelGraph {
    /// NeuSight's one-layer graphs: the layer's nodes run `num_layer` times,
    /// the others (embeddings, head) once.
    pub fn of_layer(nodes: Vec<Node>, num_layer: f64) -> ModelGraph {
        ModelGraph {
            nodes: nodes
                .into_iter()
                .map(|n| {
                    let times = if n.in_layer { num_layer } else { 1.0 };
                    (n, times)
                })
                .collect(),
        }
    }

    /// The work of every node that launches some, with its count; in
    /// training, the backward of every node that has one. Nodes that launch
    /// nothing cost nothing in a real run (timed alone, each shows ~10 µs of
    /// host time that a running model hides).
    pub fn works(&self, training: bool) -> Vec<(OpWork, f64)> {
        let mut works = Vec::with_capacity(self.nodes.len() * 2);
        for (n, times) in self.nodes.iter().filter(|(n, _)| n.work.kind != OpKind::NoWork) {
            works.push((n.work, *times));
            if training && n.has_backward {
                works.push((n.work.backward(), *times));
            }
        }
        works
    }
}

/// A tensor shape list as FX writes it: `[[16, 512], [1]]`, `(16, 512)`, `[]`.
fn parse_shapes(text: &str) -> Vec<Vec<f64>> {
    let mut shapes = Vec::new();
    let mut depth = 0;
    let mut current: Option<Vec<f64>> = None;
    let mut number = String::new();
    let inner_depth = if text.trim_start().starts_with("[[") { 2 } else { 1 };
    for ch in text.chars() {
        match ch {
            '[' | '(' => {
                depth += 1;
                if depth == inner_depth {
                    current = Some(Vec::new());
                }
            }
            ']' | ')' => {
                if let Some(c) = current.as_mut()
                    && let Ok(v) = number.trim().parse::<f64>()
                {
                    c.push(v);
                }
                number.clear();
                if depth == inner_depth
                    && let Some(c) = current.take()
                    && !c.is_empty()
                {
                    shapes.push(c);
                }
                depth -= 1;
            }
            ',' => {
                if let Some(c) = current.as_mut()
                    && let Ok(v) = number.trim().parse::<f64>()
                {
                    c.push(v);
                }
                number.clear();
            }
            _ if depth == inner_depth => number.push(ch),
            _ => {}
        }
    }
    shapes
}

fn numel(shape: &[f64]) -> f64 {
    shape.iter().product()
}

/// Whether the node's module stack places it in the graph's first
/// transformer layer (`...layer.0`, `transformer.h.0`, `...layers.0`, `block.0`).
fn in_first_layer(meta: &str, target: &str) -> bool {
    const MARKERS: [&str; 4] = [".layer.0", ".h.0", ".layers.0", ".block.0"];
    let hit = |text: &str| {
        MARKERS.iter().any(|m| {
            text.match_indices(m).any(|(i, _)| {
                matches!(
                    text[i + m.len()..].chars().next(),
                    None | Some('.') | Some('\'') | Some('"')
                )
            })
        })
    };
    hit(meta) || hit(&format!(".{target}"))
}

/// The module class of a `call_module` node: the last class in its stack.
fn module_class(meta: &str) -> &str {
    meta.rsplit("<class '")
        .next()
        .and_then(|s| s.split('\'').next())
        .and_then(|s| s.rsplit('.').next())
        .unwrap_or("")
}

/// The function or method a node calls: `add` from `<built-in function
/// add>`, `matmul` from `<built-in method matmul of type object at 0x..>`,
/// `softmax` from `<function softmax at 0x..>`, `finfo` from
/// `<class 'torch.finfo'>`; a method's target is its name already.
fn function_name(target: &str) -> &str {
    let t = target.trim();
    for prefix in ["<built-in function ", "<built-in method ", "<function "] {
        if let Some(rest) = t.strip_prefix(prefix) {
            return rest.split([' ', '>']).next().unwrap_or(rest);
        }
    }
    if let Some(rest) = t.strip_prefix("<class '") {
        return rest
            .split('\'')
            .next()
            .and_then(|c| c.rsplit('.').next())
            .unwrap_or(rest);
    }
    t
}

/// What a node calls: the module's class for `call_module` (`Linear`,
/// `LayerNorm`), else the function or method name in lower case (`add`,
/// `matmul`, `softmax`).
fn called_name(op: &str, target: &str, meta: &str) -> String {
    if op == "call_module" {
        module_class(meta).to_string()
    } else {
        function_name(target).to_ascii_lowercase()
    }
}

/// The work of one node. `training`: dropout does work (in inference it is
/// the identity).
fn node_work(op: &str, target: &str, meta: &str, inputs: &[Vec<f64>], output: &[f64], training: bool) -> OpWork {
    call_work(op, &called_name(op, target, meta), inputs, output, training)
}

/// The work of a call of `called` (see [`called_name`]) with these shapes:
/// the one mapping from an FX node to work, for NeuSight's traced graphs and
/// for graphs built from a model's configuration alike.
pub(crate) fn call_work(op: &str, called: &str, inputs: &[Vec<f64>], output: &[f64], training: bool) -> OpWork {
    let out_n = numel(output);
    let first = inputs.first().map(Vec::as_slice).unwrap_or(&[]);
    let tensor_inputs = inputs.iter().filter(|s| numel(s) > 1.0).count() as f64;
    let elementwise = |func: EwFunc| {
        if out_n > 1.0 {
            OpWork::elementwise(func, out_n, tensor_inputs.max(1.0))
        } else {
            OpWork::no_work()
        }
    };
    let linear = |inner: f64, cols: f64| {
        let rows = if cols > 0.0 { out_n / cols } else { 0.0 };
        if rows >= 1.0 && inner >= 1.0 {
            OpWork::linear(1.0, rows, inner, cols)
        } else {
            OpWork::no_work()
        }
    };
    let name = called;
    let is = |names: &[&str]| names.contains(&name);
    match op {
        "call_module" => match called {
            "Linear" | "Conv1D" => linear(
                first.last().copied().unwrap_or(0.0),
                output.last().copied().unwrap_or(0.0),
            ),
            "LayerNorm" => OpWork::layer_norm(out_n, output.last().copied().unwrap_or(1.0)),
            "Embedding" => OpWork::gather(out_n, numel(first)),
            "Dropout" if training => elementwise(EwFunc::Dropout),
            "Dropout" => OpWork::no_work(),
            class => elementwise(EwFunc::from_name(class)),
        },
        "call_function" | "call_method" => {
            if name == "addmm" && inputs.len() >= 3 {
                let (a, b) = (&inputs[1], &inputs[2]);
                let mut w = OpWork::gemm(
                    1.0,
                    a.first().copied().unwrap_or(1.0),
                    a.last().copied().unwrap_or(1.0),
                    b.last().copied().unwrap_or(1.0),
                    4.0,
                );
                w.bytes += 4.0 * numel(&inputs[0]);
                w
            } else if is(&["matmul", "bmm", "baddbmm", "mm"]) {
                matmul(inputs, output)
            } else if name == "linear" {
                // `torch.nn.functional.linear(x, weight, bias)`: weight is (out, in).
                linear(
                    first.last().copied().unwrap_or(0.0),
                    output.last().copied().unwrap_or(0.0),
                )
            } else if name == "scaled_dot_product_attention" {
                attention(inputs, output)
            } else if is(&["softmax", "log_softmax"]) {
                OpWork::softmax(out_n, output.last().copied().unwrap_or(1.0))
            } else if name == "layer_norm" {
                OpWork::layer_norm(out_n, output.last().copied().unwrap_or(1.0))
            } else if name == "embedding" {
                OpWork::gather(out_n, numel(first))
            } else if name == "dropout" {
                if training {
                    elementwise(EwFunc::Dropout)
                } else {
                    OpWork::no_work()
                }
            } else if is(&[
                "contiguous",
                "to",
                "type",
                "type_as",
                "float",
                "long",
                "bool",
                "half",
                "clone",
                "cat",
                "stack",
            ]) {
                if out_n > 1.0 {
                    OpWork::copy(out_n)
                } else {
                    OpWork::no_work()
                }
            } else if is(&["cumsum", "max", "sum", "mean", "min"]) {
                if out_n > 1.0 || numel(first) > 1.0 {
                    OpWork::reduction(numel(first), out_n)
                } else {
                    OpWork::no_work()
                }
            } else if is(&CREATION) {
                if out_n > 1.0 {
                    OpWork::elementwise(EwFunc::Other, out_n, 0.0)
                } else {
                    OpWork::no_work()
                }
            } else if is(&[
                "add",
                "iadd",
                "sub",
                "isub",
                "rsub",
                "mul",
                "imul",
                "truediv",
                "div",
                "floordiv",
                "pow",
                "gelu",
                "tanh",
                "relu",
                "sigmoid",
                "silu",
                "where",
                "masked_fill",
                "masked_fill_",
                "gt",
                "lt",
                "ge",
                "le",
                "eq",
                "ne",
                "neg",
                "rsqrt",
                "sqrt",
                "exp",
                "abs",
                "log",
                "sin",
                "cos",
                "erf",
                "clamp",
                "minimum",
                "maximum",
                "reciprocal",
            ]) {
                elementwise(EwFunc::from_name(name))
            } else if is(&VIEWS) {
                OpWork::no_work()
            } else {
                // A function this list does not know that makes a tensor
                // (another model's operator): one pass over its tensors,
                // rather than free.
                elementwise(EwFunc::Other)
            }
        }
        _ => OpWork::no_work(),
    }
}

/// Calls that return a view of their input or metadata: no kernel.
const VIEWS: [&str; 24] = [
    "getitem",
    "getattr",
    "size",
    "dim",
    "numel",
    "finfo",
    "iinfo",
    "view",
    "view_as",
    "reshape",
    "permute",
    "transpose",
    "t",
    "expand",
    "expand_as",
    "unsqueeze",
    "squeeze",
    "flatten",
    "unflatten",
    "split",
    "chunk",
    "unbind",
    "narrow",
    "detach",
];

/// `scaled_dot_product_attention(q, k, v)`: the scores' and the output's
/// products, with the fused kernels' traffic (queries, keys, values and the
/// output read or written once; no score matrix in memory).
fn attention(inputs: &[Vec<f64>], output: &[f64]) -> OpWork {
    let (Some(q), Some(k)) = (inputs.first(), inputs.get(1)) else {
        return OpWork::no_work();
    };
    if q.len() < 2 || k.len() < 2 {
        return OpWork::no_work();
    }
    let (rows, inner) = (q[q.len() - 2], q[q.len() - 1]);
    let keys = k[k.len() - 2];
    let batch = numel(&q[..q.len() - 2]).max(1.0);
    let mut w = OpWork::bmm(batch, rows, inner, keys);
    // The second product, probabilities x values, has as many FLOPs when
    // values are as wide as queries.
    let value_width = inputs.get(2).and_then(|v| v.last().copied()).unwrap_or(inner);
    w.flops *= 1.0 + value_width / inner;
    w.bytes = w.dtype_bytes * (numel(q) + numel(k) + inputs.get(2).map_or(numel(k), |v| numel(v)) + numel(output));
    w
}

/// `matmul`/`bmm` of the first two inputs, batched as the output is.
fn matmul(inputs: &[Vec<f64>], output: &[f64]) -> OpWork {
    let (Some(a), Some(b)) = (inputs.first(), inputs.get(1)) else {
        return OpWork::no_work();
    };
    OpWork::matmul(a, b, numel(&output[..output.len().saturating_sub(2)])).unwrap_or_else(OpWork::no_work)
}

/// Methods that convert a tensor's dtype; a no-op when it has that dtype already.
const CONVERSIONS: [&str; 9] = [
    "to", "type", "type_as", "float", "half", "long", "bool", "int", "double",
];

/// The first node named in an FX `_args` tuple: `truediv` from `(truediv, getattr_8)`.
fn first_arg(args: &str) -> &str {
    args.trim()
        .trim_start_matches('(')
        .split([',', ')'])
        .next()
        .unwrap_or("")
        .trim()
}

/// The first flag of an `input_contiguous` list: `[False, True]` -> false.
fn first_flag(list: &str) -> Option<bool> {
    match list.trim().trim_start_matches('[').split([',', ']']).next()?.trim() {
        "True" => Some(true),
        "False" => Some(false),
        _ => None,
    }
}

/// A number among a node's keyword arguments: `p` in `{'p': 0.0,
/// 'training': True}` -> 0.
fn keyword_number(kwargs: &str, key: &str) -> Option<f64> {
    let quoted = format!("'{key}':");
    let start = kwargs.find(&quoted)? + quoted.len();
    kwargs[start..].split([',', '}']).next()?.trim().parse().ok()
}

/// The nodes of one graph CSV that launch or are timed (placeholders,
/// attributes and the output node are neither).
pub fn read_graph(path: &Path, training: bool) -> Result<Vec<Node>, OpModelError> {
    let table = CsvTable::read(path)?;
    for column in ["op", "target", "input_shapes", "output_shape"] {
        if !table.has(column) {
            return Err(OpModelError::Parse {
                path: path.to_path_buf(),
                reason: format!("no `{column}` column: not a NeuSight per-node graph"),
            });
        }
    }
    // Output dtype of every node by name: a conversion to the dtype its
    // input already has returns the input itself.
    let dtypes: HashMap<&str, &str> = (0..table.rows.len())
        .map(|i| (table.get(i, "Name"), table.get(i, "dtype")))
        .filter(|(name, dtype)| !name.is_empty() && !dtype.is_empty())
        .collect();
    let mut nodes = Vec::new();
    for i in 0..table.rows.len() {
        let op = table.get(i, "op");
        if !matches!(op, "call_module" | "call_function" | "call_method") {
            continue;
        }
        let target = table.get(i, "target");
        let meta = table.get(i, "meta");
        let inputs = parse_shapes(table.get(i, "input_shapes"));
        let output = parse_shapes(table.get(i, "output_shape"))
            .into_iter()
            .next()
            .unwrap_or_default();
        let function = function_name(target);
        let returns_input = match function {
            "contiguous" => first_flag(table.get(i, "input_contiguous")) == Some(true),
            name if CONVERSIONS.contains(&name) => {
                let dtype = table.get(i, "dtype");
                !dtype.is_empty() && dtypes.get(first_arg(table.get(i, "_args"))) == Some(&dtype)
            }
            // PyTorch's dropout returns its input where p is 0 (OPT's attention).
            "dropout" => keyword_number(table.get(i, "_kwargs"), "p") == Some(0.0),
            _ => false,
        };
        let work = if returns_input {
            OpWork::no_work()
        } else {
            node_work(op, target, meta, &inputs, &output, training)
        };
        let bw = match (table.number(i, "bw_latency"), table.number(i, "acc_latency")) {
            (None, None) => None,
            (b, a) => Some(b.unwrap_or(0.0) + a.unwrap_or(0.0)),
        };
        let called = if op == "call_module" {
            module_class(meta).to_string()
        } else {
            function.to_string()
        };
        nodes.push(Node {
            name: table.get(i, "Name").to_string(),
            fx_op: op.to_string(),
            target: called,
            input_shapes: inputs,
            output_shape: output,
            work,
            in_layer: in_first_layer(meta, target),
            fw_ms: table.number(i, "fw_latency"),
            bw_ms: bw,
            has_backward: has_backward(&work, &function.to_ascii_lowercase()),
            residual: false,
        });
    }
    Ok(nodes)
}

/// Functions that create a tensor from nothing but sizes and values.
const CREATION: [&str; 8] = [
    "full",
    "ones",
    "zeros",
    "arange",
    "tensor",
    "ones_like",
    "zeros_like",
    "full_like",
];

/// Comparisons: their boolean results carry no gradient.
const COMPARISONS: [&str; 6] = ["gt", "lt", "ge", "le", "eq", "ne"];

/// Whether training runs a backward kernel for a node of this work and
/// function (see [`Node::has_backward`]).
fn has_backward(work: &OpWork, function: &str) -> bool {
    match work.kind {
        OpKind::NoWork | OpKind::Copy => false,
        // Additions (and subtractions) pass the gradient through.
        OpKind::Elementwise if work.ew == Some(EwFunc::Add) => false,
        // cumsum runs on integer positions.
        _ => !(function == "cumsum" || CREATION.contains(&function) || COMPARISONS.contains(&function)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_are_matched_whole() {
        assert_eq!(function_name("<built-in function getitem>"), "getitem");
        assert_eq!(
            function_name("<built-in method matmul of type object at 0x7f30>"),
            "matmul"
        );
        assert_eq!(function_name("<function softmax at 0x7f30>"), "softmax");
        assert_eq!(function_name("<class 'torch.finfo'>"), "finfo");
        // `getitem` of a big tensor is a view, not element-wise work ("built-in" holds "lt").
        let w = node_work(
            "call_function",
            "<built-in function getitem>",
            "",
            &[vec![4.0, 1024.0, 1280.0]],
            &[4.0, 1024.0, 1280.0],
            true,
        );
        assert_eq!(w.kind, OpKind::NoWork);
        let e = node_work(
            "call_method",
            "expand",
            "",
            &[vec![2.0, 2048.0]],
            &[2.0, 2048.0, 2048.0],
            true,
        );
        assert_eq!(e.kind, OpKind::NoWork);
        let add = node_work(
            "call_function",
            "<built-in function add>",
            "",
            &[vec![4.0, 8.0], vec![4.0, 8.0]],
            &[4.0, 8.0],
            true,
        );
        assert_eq!((add.kind, add.ew), (OpKind::Elementwise, Some(EwFunc::Add)));
    }

    /// Other models' graphs: `F.linear`, `mm` and fused attention are
    /// priced as the products they are, and a function the lists do not
    /// know is one pass over its tensors, not free; views stay free.
    #[test]
    fn other_models_operators_are_priced() {
        let call =
            |name: &str, inputs: &[Vec<f64>], output: &[f64]| call_work("call_function", name, inputs, output, false);
        let f_linear = call(
            "linear",
            &[vec![8.0, 512.0, 1024.0], vec![4096.0, 1024.0]],
            &[8.0, 512.0, 4096.0],
        );
        assert_eq!(f_linear.kind, OpKind::Gemm);
        assert_eq!(f_linear.flops, 2.0 * 8.0 * 512.0 * 1024.0 * 4096.0);
        let mm = call("mm", &[vec![64.0, 32.0], vec![32.0, 16.0]], &[64.0, 16.0]);
        assert_eq!((mm.kind, mm.flops), (OpKind::Gemm, 2.0 * 64.0 * 32.0 * 16.0));
        // (batch 2, 16 heads, 1024 queries, 64 wide) against 1024 keys.
        let qkv = vec![2.0, 16.0, 1024.0, 64.0];
        let sdpa = call(
            "scaled_dot_product_attention",
            &[qkv.clone(), qkv.clone(), qkv.clone()],
            &qkv,
        );
        assert_eq!(sdpa.kind, OpKind::Gemm);
        assert_eq!(sdpa.flops, 2.0 * (2.0 * 32.0 * 1024.0 * 1024.0 * 64.0), "two products");
        assert_eq!(sdpa.bytes, 4.0 * 4.0 * numel(&qkv), "no score matrix in memory");
        let unknown = call(
            "rms_norm",
            &[vec![8.0, 512.0, 1024.0], vec![1024.0]],
            &[8.0, 512.0, 1024.0],
        );
        assert_eq!((unknown.kind, unknown.ew), (OpKind::Elementwise, Some(EwFunc::Other)));
        assert!(unknown.bytes >= 4.0 * 2.0 * 8.0 * 512.0 * 1024.0);
        for view in ["permute", "reshape", "unsqueeze", "chunk"] {
            assert_eq!(
                call(view, std::slice::from_ref(&qkv), &qkv).kind,
                OpKind::NoWork,
                "{view}"
            );
        }
    }

    #[test]
    fn conversions_to_the_same_dtype_and_contiguous_inputs_are_free() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.csv");
        std::fs::write(
            &path,
            "op,target,meta,input_shapes,input_contiguous,output_shape,dtype,Name,_args,fw_latency,bw_latency,acc_latency\n\
             call_function,<built-in function truediv>,,\"[[4, 8, 16], [1]]\",\"[True, True]\",\"(4, 8, 16)\",torch.float32,truediv,\"(x, 2)\",0.1,0.1,0\n\
             call_method,to,,\"[[4, 8, 16], [1]]\",\"[True, True]\",\"(4, 8, 16)\",torch.float32,to,\"(truediv, getattr_8)\",0.01,0,0\n\
             call_method,to,,\"[[4, 8, 16], [1]]\",\"[True, True]\",\"(4, 8, 16)\",torch.float16,to_1,\"(truediv, getattr_9)\",0.05,0,0\n\
             call_method,contiguous,,\"[[4, 8, 16]]\",[True],\"(4, 8, 16)\",torch.float32,contiguous,\"(to,)\",0.01,0,0\n\
             call_method,contiguous,,\"[[4, 8, 16]]\",[False],\"(4, 8, 16)\",torch.float32,contiguous_1,\"(permute,)\",0.07,0,0\n\
             call_function,<built-in function add>,,\"[[4, 8, 16], [4, 8, 16]]\",\"[True, True]\",\"(4, 8, 16)\",torch.float32,add,\"(a, b)\",0.1,0.01,0\n",
        )
        .unwrap();
        let nodes = read_graph(&path, true).unwrap();
        let kinds: Vec<OpKind> = nodes.iter().map(|n| n.work.kind).collect();
        assert_eq!(
            kinds,
            [
                OpKind::Elementwise,
                OpKind::NoWork,
                OpKind::Copy,
                OpKind::NoWork,
                OpKind::Copy,
                OpKind::Elementwise
            ]
        );
        // A division has a backward; casts, copies and additions do not.
        let backward: Vec<bool> = nodes.iter().map(|n| n.has_backward).collect();
        assert_eq!(backward, [true, false, false, false, false, false]);
    }

    #[test]
    fn dropout_with_probability_zero_is_free() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.csv");
        std::fs::write(
            &path,
            "op,target,meta,input_shapes,output_shape,dtype,Name,_kwargs\n\
             call_function,<function dropout at 0x7f>,,\"[[32, 64, 64]]\",\"(32, 64, 64)\",torch.float32,dropout,\"{'p': 0.0, 'training': True, 'inplace': False}\"\n\
             call_function,<function dropout at 0x7f>,,\"[[32, 64, 64]]\",\"(32, 64, 64)\",torch.float32,dropout_1,\"{'p': 0.1, 'training': True, 'inplace': False}\"\n",
        )
        .unwrap();
        let kinds: Vec<OpKind> = read_graph(&path, true).unwrap().iter().map(|n| n.work.kind).collect();
        assert_eq!(kinds, [OpKind::NoWork, OpKind::Elementwise]);
        assert_eq!(keyword_number("{'p': 0.25}", "p"), Some(0.25));
        assert_eq!(keyword_number("{'dim': -1}", "p"), None);
    }

    #[test]
    fn shapes_parse() {
        assert_eq!(parse_shapes("[[16, 512], [1]]"), vec![vec![16.0, 512.0], vec![1.0]]);
        assert_eq!(parse_shapes("(16, 512)"), vec![vec![16.0, 512.0]]);
        assert_eq!(parse_shapes("(1,)"), vec![vec![1.0]]);
        assert!(parse_shapes("[]").is_empty());
    }

    #[test]
    fn layer_membership() {
        let meta = "{'nn_module_stack': OrderedDict([('bert.encoder.layer.0', <class 'x.BertLayer'>)])}";
        assert!(in_first_layer(meta, "add"));
        assert!(!in_first_layer("('bert.encoder.layer.10', <class 'x'>)", "add"));
        assert!(in_first_layer("", "transformer.h.0.attn.c_attn"));
        assert!(!in_first_layer("('transformer.h', <class 'x'>)", "lm_head"));
    }

    #[test]
    fn linear_and_matmul_nodes() {
        let meta = "OrderedDict([('q', <class 'torch.nn.modules.linear.Linear'>)])";
        let w = node_work(
            "call_module",
            "q",
            meta,
            &[vec![16.0, 512.0, 1024.0]],
            &[16.0, 512.0, 4096.0],
            false,
        );
        assert_eq!(w.kind, OpKind::Gemm);
        assert_eq!(w.flops, 2.0 * 16.0 * 512.0 * 1024.0 * 4096.0);
        let m = node_work(
            "call_function",
            "<built-in method matmul of type object at 0x1>",
            "",
            &[vec![2.0, 16.0, 512.0, 64.0], vec![2.0, 16.0, 64.0, 512.0]],
            &[2.0, 16.0, 512.0, 512.0],
            false,
        );
        assert_eq!(m.gemm.unwrap().batch, 32.0);
        assert_eq!(m.flops, 2.0 * 32.0 * 512.0 * 64.0 * 512.0);
        let view = node_work("call_method", "view", "", &[vec![2.0, 3.0]], &[6.0], false);
        assert_eq!(view.kind, OpKind::NoWork);
        let drop = node_work(
            "call_module",
            "d",
            "<class 'torch.nn.modules.dropout.Dropout'>",
            &[vec![8.0, 8.0]],
            &[8.0, 8.0],
            false,
        );
        assert_eq!(drop.kind, OpKind::NoWork);
    }
}

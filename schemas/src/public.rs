//! Tables tracecast reads from published predictors' measurements, in the
//! layout of `../shared/public` (`neusight/`, `ets/`): `tracecast sql
//! --public DIR` queries them, and the op model trains on the same readers.
//! Each row keeps the file it came from; tracecast's own estimates of an
//! operator's work (`kind`, `flops`, `bytes`) sit beside the measured values.

use crate::column::{ColType::*, TableDef, opt, req};

pub const PUBLIC_VERSION: u32 = 1;

pub const NEUSIGHT_PER_OP: TableDef = TableDef {
    name: "neusight_per_op",
    version: PUBLIC_VERSION,
    doc: "NeuSight's isolated-operator latencies (`neusight/per_op/{train,test}/...csv.gz`): one row per CSV row. \
          Shape columns are null where the operator family has none.",
    columns: &[
        req("file", Utf8, "", "The CSV, relative to `neusight/per_op/`."),
        req("line", Int64, "", "Line in the file (the header is line 1)."),
        req(
            "gpu",
            Utf8,
            "",
            "GPU: the `Device` column with spaces as `_`, else the file name.",
        ),
        req(
            "op",
            Utf8,
            "",
            "`OPName`: bmm, linear, conv, ln, softmax, add, addu, mul, ...",
        ),
        opt("b", Float64, "count", "`B`: batch (bmm, linear, vector ops, conv)."),
        opt("m", Float64, "count", "`M`: rows (bmm, linear)."),
        opt(
            "n",
            Float64,
            "count",
            "`N`: inner dimension of bmm; input features of linear.",
        ),
        opt("k", Float64, "count", "`K`: columns of bmm; output features of linear."),
        opt(
            "h",
            Float64,
            "count",
            "`H`: row length of the vector ops (element-wise, ln, softmax).",
        ),
        opt("input_channel", Float64, "count", "`Input_Channel` (conv)."),
        opt("output_channel", Float64, "count", "`Output_Channel` (conv)."),
        opt(
            "kernel_size",
            Float64,
            "count",
            "`Kernel_Szie` (conv; NeuSight's spelling).",
        ),
        opt("input_size", Float64, "count", "`Input_Size` (conv; square input)."),
        opt("stride", Float64, "count", "`Stride` (conv)."),
        opt("padding", Float64, "count", "`Padding` (conv)."),
        opt(
            "latency_ms",
            Float64,
            "ms",
            "`Latency`: mean of the 5 fastest of 25 timed calls; null where removed.",
        ),
        opt(
            "kernel_name",
            Utf8,
            "",
            "`Kernel Name`: the main kernel of one call, where recorded.",
        ),
        req(
            "kind",
            Utf8,
            "",
            "tracecast's operator kind for the row (gemm, conv, elementwise, norm, softmax).",
        ),
        req("flops", Float64, "FLOP", "tracecast's FLOP count for the shape."),
        req(
            "bytes",
            Float64,
            "bytes",
            "tracecast's bytes moved for the shape (each tensor once).",
        ),
    ],
};

pub const NEUSIGHT_LABELS: TableDef = TableDef {
    name: "neusight_labels",
    version: PUBLIC_VERSION,
    doc: "NeuSight's end-to-end labels (`neusight/label/<GPU>/<model>-<mode>-<seqlen>-<batch>[-<option>].json`): \
          one row per JSON.",
    columns: &[
        req("file", Utf8, "", "The JSON, relative to `neusight/label/`."),
        req("gpu", Utf8, "", "The GPU folder."),
        req("model", Utf8, "", "Model (from the file name)."),
        req("mode", Utf8, "", "`train` (forward + backward) or `inf` (forward)."),
        req("seqlen", Int64, "tokens", "Sequence length."),
        req("batch", Int64, "samples", "Batch size."),
        opt(
            "option",
            Utf8,
            "",
            "`fusion`, `dp4`, `tp4`, `pp4_1`; null for plain runs.",
        ),
        opt(
            "num_layer",
            Float64,
            "count",
            "Transformer layers of the full model; null where the JSON has none.",
        ),
        opt("e2e_ms", Float64, "ms", "`e2e_latency` = forward + backward."),
        opt("fw_ms", Float64, "ms", "`fw_latency`."),
        opt(
            "measured_ms",
            Float64,
            "ms",
            "What a prediction is scored against: forward + backward for `train`, forward for `inf`.",
        ),
        req(
            "has_graph",
            Bool,
            "",
            "Whether the per-node graph CSV sits beside the JSON.",
        ),
    ],
};

pub const NEUSIGHT_GRAPH_NODES: TableDef = TableDef {
    name: "neusight_graph_nodes",
    version: PUBLIC_VERSION,
    doc: "Nodes of NeuSight's per-node graphs (the CSV beside a label JSON: the model with one transformer layer) \
          that call a module, function or method: one row per node.",
    columns: &[
        req("file", Utf8, "", "The graph CSV, relative to `neusight/label/`."),
        req("gpu", Utf8, "", "The GPU folder."),
        req("model", Utf8, "", "Model (from the file name)."),
        req("mode", Utf8, "", "`train` or `inf`."),
        req("seqlen", Int64, "tokens", "Sequence length."),
        req("batch", Int64, "samples", "Batch size."),
        req(
            "node",
            Int64,
            "",
            "Position of the node among the graph's calling nodes.",
        ),
        req("name", Utf8, "", "The FX node's `Name`."),
        req("fx_op", Utf8, "", "FX op: call_module, call_function or call_method."),
        req(
            "target",
            Utf8,
            "",
            "The function or method called (`matmul`, `view`), or the module's class.",
        ),
        req(
            "input_shapes",
            ListListInt64,
            "elements",
            "`input_shapes`: one shape per input.",
        ),
        req("output_shape", ListInt64, "elements", "`output_shape`."),
        req(
            "in_layer",
            Bool,
            "",
            "In the repeated transformer layer: the full model runs it `num_layer` times.",
        ),
        opt("fw_ms", Float64, "ms", "`fw_latency`; null where removed."),
        opt(
            "bw_ms",
            Float64,
            "ms",
            "`bw_latency` + `acc_latency`; null where removed.",
        ),
        req(
            "kind",
            Utf8,
            "",
            "tracecast's operator kind (`nowork` for views, shape queries, no-op casts).",
        ),
        req("flops", Float64, "FLOP", "tracecast's forward FLOPs."),
        req("bytes", Float64, "bytes", "tracecast's forward bytes moved."),
        req(
            "has_backward",
            Bool,
            "",
            "Whether training runs a backward kernel for it, as tracecast reads the node.",
        ),
    ],
};

pub const ETS_OPS: TableDef = TableDef {
    name: "ets_ops",
    version: PUBLIC_VERSION,
    doc: "ETS's per-iteration operator sequences (`ets/datasets/<GPU>CPUALL/<model>.<idx>_7.csv`): the forward \
          and backward rows, in GPU order (optimizer rows are not part of ETS's label and are left out).",
    columns: &[
        req("gpu_folder", Utf8, "", "The GPU folder, e.g. `T4CPUALL`."),
        req("file", Utf8, "", "The CSV's file name."),
        req("row", Int64, "", "Position among the file's forward and backward rows."),
        req(
            "op",
            Int64,
            "",
            "PyProf's operator code (203 conv2d, 201 linear, 152 relu, ...).",
        ),
        req("dir", Int64, "", "1 forward, 2 backward."),
        req("batch", Int64, "samples", "`batch`."),
        req("h", Int64, "pixels", "`h` (= `w`): input size."),
        opt(
            "kernel_ns",
            Float64,
            "ns",
            "`kduration`: the row's kernel time; null where zeroed.",
        ),
        opt(
            "wall_ns",
            Float64,
            "ns",
            "`kduration + max(space, 0)`: the row's share of ETS's label; null where zeroed.",
        ),
        req("kind", Utf8, "", "tracecast's operator kind for the row."),
        req(
            "flops",
            Float64,
            "FLOP",
            "FLOPs of the row's work (PyProf's estimate where it made one).",
        ),
        req(
            "bytes",
            Float64,
            "bytes",
            "Bytes of the row's work (PyProf's estimate where it made one).",
        ),
    ],
};

pub const TABLES: [&TableDef; 4] = [&NEUSIGHT_PER_OP, &NEUSIGHT_LABELS, &NEUSIGHT_GRAPH_NODES, &ETS_OPS];

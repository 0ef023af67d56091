//! The public measurements as Arrow tables (`schemas/src/public.rs`), from
//! the same readers the op model trains with, so that SQL sees what the
//! model sees: `tracecast sql --public DIR`.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, Int64Builder, ListBuilder, RecordBatch, StringArray,
};
use tracecast_schemas::TableDef;
use tracecast_schemas::public::{ETS_OPS, NEUSIGHT_GRAPH_NODES, NEUSIGHT_LABELS, NEUSIGHT_PER_OP};

use crate::OpModelError;
use crate::csvio::csv_files;
use crate::ets::read_ets_dir;
use crate::graph::read_graph;
use crate::neusight::{read_labels, read_per_op};

/// Per-op shape columns: the table's name and NeuSight's header.
const SHAPE_COLUMNS: [(&str, &str); 11] = [
    ("b", "B"),
    ("m", "M"),
    ("n", "N"),
    ("k", "K"),
    ("h", "H"),
    ("input_channel", "Input_Channel"),
    ("output_channel", "Output_Channel"),
    ("kernel_size", "Kernel_Szie"),
    ("input_size", "Input_Size"),
    ("stride", "Stride"),
    ("padding", "Padding"),
];

fn text(values: Vec<String>) -> ArrayRef {
    Arc::new(StringArray::from(values))
}

fn text_opt(values: Vec<Option<String>>) -> ArrayRef {
    Arc::new(StringArray::from(values))
}

fn int(values: Vec<i64>) -> ArrayRef {
    Arc::new(Int64Array::from(values))
}

fn float(values: Vec<f64>) -> ArrayRef {
    Arc::new(Float64Array::from(values))
}

fn float_opt(values: Vec<Option<f64>>) -> ArrayRef {
    Arc::new(Float64Array::from(values))
}

fn flag(values: Vec<bool>) -> ArrayRef {
    Arc::new(BooleanArray::from(values))
}

fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).display().to_string()
}

fn batch(def: &TableDef, columns: Vec<(&str, ArrayRef)>, origin: &Path) -> Result<RecordBatch, OpModelError> {
    def.batch(columns).map_err(|reason| OpModelError::Layout {
        path: origin.to_path_buf(),
        reason,
    })
}

/// Refuses a directory that holds neither `neusight/` nor `ets/datasets/`,
/// naming it, so that a mistyped path is not read as an empty one.
pub(crate) fn check_public_layout(root: &Path) -> Result<(), OpModelError> {
    if !root.join("neusight").is_dir() && !root.join("ets/datasets").is_dir() {
        return Err(OpModelError::Layout {
            path: root.to_path_buf(),
            reason: "no `neusight/` or `ets/datasets/` folder: not laid out like ../shared/public".into(),
        });
    }
    Ok(())
}

/// Every public table with rows under `root` (laid out like `../shared/public`).
pub fn public_tables(root: &Path) -> Result<Vec<(&'static TableDef, RecordBatch)>, OpModelError> {
    check_public_layout(root)?;
    let neusight = root.join("neusight");
    Ok(vec![
        (&NEUSIGHT_PER_OP, per_op_table(&neusight.join("per_op"))?),
        (&NEUSIGHT_LABELS, labels_table(&neusight)?),
        (&NEUSIGHT_GRAPH_NODES, graph_nodes_table(&neusight)?),
        (&ETS_OPS, ets_table(root)?),
    ])
}

fn per_op_table(dir: &Path) -> Result<RecordBatch, OpModelError> {
    let (mut file, mut line, mut gpu, mut op, mut latency, mut kernel) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut kind, mut flops, mut bytes) = (Vec::new(), Vec::new(), Vec::new());
    let mut shapes: Vec<Vec<Option<f64>>> = vec![Vec::new(); SHAPE_COLUMNS.len()];
    for path in csv_files(dir) {
        let stem = path
            .file_name()
            .and_then(|n| n.to_str())
            .map(|n| n.trim_end_matches(".gz").trim_end_matches(".csv").to_string());
        let (table, rows) = read_per_op(&path, stem.as_deref())?;
        let name = relative(&path, dir);
        for (i, row) in rows.into_iter().enumerate() {
            file.push(name.clone());
            line.push(i as i64 + 2);
            for (values, (_, header)) in shapes.iter_mut().zip(SHAPE_COLUMNS) {
                values.push(table.number(i, header));
            }
            kernel.push(Some(table.get(i, "Kernel Name").trim().to_string()).filter(|k| !k.is_empty()));
            latency.push(row.latency_ms);
            kind.push(row.work.kind.name().to_string());
            flops.push(row.work.flops);
            bytes.push(row.work.bytes);
            gpu.push(row.gpu);
            op.push(row.op);
        }
    }
    let mut columns = vec![
        ("file", text(file)),
        ("line", int(line)),
        ("gpu", text(gpu)),
        ("op", text(op)),
        ("latency_ms", float_opt(latency)),
        ("kernel_name", text_opt(kernel)),
        ("kind", text(kind)),
        ("flops", float(flops)),
        ("bytes", float(bytes)),
    ];
    for ((name, _), values) in SHAPE_COLUMNS.iter().zip(shapes) {
        columns.push((name, float_opt(values)));
    }
    batch(&NEUSIGHT_PER_OP, columns, dir)
}

fn labels_table(neusight: &Path) -> Result<RecordBatch, OpModelError> {
    let labels = read_labels(neusight)?;
    let base = neusight.join("label");
    batch(
        &NEUSIGHT_LABELS,
        vec![
            ("file", text(labels.iter().map(|l| relative(&l.path, &base)).collect())),
            ("gpu", text(labels.iter().map(|l| l.gpu.clone()).collect())),
            ("model", text(labels.iter().map(|l| l.model.clone()).collect())),
            ("mode", text(labels.iter().map(|l| l.mode.clone()).collect())),
            ("seqlen", int(labels.iter().map(|l| i64::from(l.seqlen)).collect())),
            ("batch", int(labels.iter().map(|l| i64::from(l.batch)).collect())),
            (
                "option",
                text_opt(
                    labels
                        .iter()
                        .map(|l| Some(l.option.clone()).filter(|o| !o.is_empty()))
                        .collect(),
                ),
            ),
            ("num_layer", float_opt(labels.iter().map(|l| l.num_layer).collect())),
            ("e2e_ms", float_opt(labels.iter().map(|l| l.e2e_ms).collect())),
            ("fw_ms", float_opt(labels.iter().map(|l| l.fw_ms).collect())),
            (
                "measured_ms",
                float_opt(labels.iter().map(|l| l.measured_ms()).collect()),
            ),
            (
                "has_graph",
                flag(labels.iter().map(|l| l.graph_path().is_file()).collect()),
            ),
        ],
        &base,
    )
}

fn graph_nodes_table(neusight: &Path) -> Result<RecordBatch, OpModelError> {
    let base = neusight.join("label");
    let (mut file, mut gpu, mut model, mut mode, mut seqlen, mut batch_size) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut node, mut name, mut fx_op, mut target, mut in_layer) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut fw, mut bw, mut kind, mut flops, mut bytes, mut backward) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut inputs = ListBuilder::new(ListBuilder::new(Int64Builder::new()));
    let mut output = ListBuilder::new(Int64Builder::new());
    for label in read_labels(neusight)? {
        let path = label.graph_path();
        if !path.is_file() {
            continue;
        }
        let graph_file = relative(&path, &base);
        for (i, n) in read_graph(&path, label.mode == "train")?.into_iter().enumerate() {
            file.push(graph_file.clone());
            gpu.push(label.gpu.clone());
            model.push(label.model.clone());
            mode.push(label.mode.clone());
            seqlen.push(i64::from(label.seqlen));
            batch_size.push(i64::from(label.batch));
            node.push(i as i64);
            for shape in &n.input_shapes {
                let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
                inputs.values().values().append_slice(&dims);
                inputs.values().append(true);
            }
            inputs.append(true);
            output
                .values()
                .append_slice(&n.output_shape.iter().map(|&d| d as i64).collect::<Vec<_>>());
            output.append(true);
            in_layer.push(n.in_layer);
            fw.push(n.fw_ms);
            bw.push(n.bw_ms);
            kind.push(n.work.kind.name().to_string());
            flops.push(n.work.flops);
            bytes.push(n.work.bytes);
            backward.push(n.has_backward);
            name.push(n.name);
            fx_op.push(n.fx_op);
            target.push(n.target);
        }
    }
    batch(
        &NEUSIGHT_GRAPH_NODES,
        vec![
            ("file", text(file)),
            ("gpu", text(gpu)),
            ("model", text(model)),
            ("mode", text(mode)),
            ("seqlen", int(seqlen)),
            ("batch", int(batch_size)),
            ("node", int(node)),
            ("name", text(name)),
            ("fx_op", text(fx_op)),
            ("target", text(target)),
            ("input_shapes", Arc::new(inputs.finish())),
            ("output_shape", Arc::new(output.finish())),
            ("in_layer", flag(in_layer)),
            ("fw_ms", float_opt(fw)),
            ("bw_ms", float_opt(bw)),
            ("kind", text(kind)),
            ("flops", float(flops)),
            ("bytes", float(bytes)),
            ("has_backward", flag(backward)),
        ],
        &base,
    )
}

fn ets_table(root: &Path) -> Result<RecordBatch, OpModelError> {
    let files = read_ets_dir(root)?;
    let rows = || {
        files
            .iter()
            .flat_map(|f| f.rows.iter().enumerate().map(move |(i, r)| (f, i, r)))
    };
    batch(
        &ETS_OPS,
        vec![
            ("gpu_folder", text(rows().map(|(f, ..)| f.gpu_folder.clone()).collect())),
            ("file", text(rows().map(|(f, ..)| f.file.clone()).collect())),
            ("row", int(rows().map(|(_, i, _)| i as i64).collect())),
            ("op", int(rows().map(|(.., r)| r.op).collect())),
            ("dir", int(rows().map(|(.., r)| r.dir).collect())),
            ("batch", int(rows().map(|(f, ..)| f.batch).collect())),
            ("h", int(rows().map(|(f, ..)| f.h).collect())),
            (
                "kernel_ns",
                float_opt(rows().map(|(.., r)| r.kernel_us.map(|u| u * 1e3)).collect()),
            ),
            (
                "wall_ns",
                float_opt(rows().map(|(.., r)| r.wall_us.map(|u| u * 1e3)).collect()),
            ),
            (
                "kind",
                text(rows().map(|(.., r)| r.work.kind.name().to_string()).collect()),
            ),
            ("flops", float(rows().map(|(.., r)| r.work.flops).collect())),
            ("bytes", float(rows().map(|(.., r)| r.work.bytes).collect())),
        ],
        &root.join("ets/datasets"),
    )
}

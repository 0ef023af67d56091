//! The sliding-window feature tables written by `tracecast features`
//! (DESIGN.md "The predictor").
//!
//! A step's GPU sequence is its kernels and memory copies/sets in issue
//! order: by GPU start time, ties broken by kernel id, copies after kernels.
//! Item `i`'s wall time is `start[i+1] - start[i]` (its duration plus the
//! idle gap after it, the gap negative where the next item overlaps it); the
//! last item's runs to the end of the step's GPU work. Windows tile the
//! sequence: window `j` covers the central items `j*S .. j*S+S-1`, sees `W`
//! positions `j*S - (W-S)/2 .. j*S + (W+S)/2 - 1`, and positions outside the
//! step are padding (null). So a step's measured wall time is the sum of its
//! windows' `target_ns` plus its `remainder_ns`.

use std::sync::Arc;

use arrow::datatypes::{Field, Schema, SchemaRef};

use crate::column::{ColType::*, Column, TableDef, opt, req};

/// Format version of the feature directory (`features.json`, both tables).
pub const FORMAT_VERSION: u32 = 7;
/// The oldest feature format whose window rows mean what this one's do: a
/// window model trained on it still predicts (versions 5 and 6 only added
/// the steps' `cpu_op_count` and `runtime_wait_ns`, version 7 the
/// per-position `conv_group_width`, which is not a window-model input).
pub const WINDOW_INPUTS_SINCE: u32 = 4;
/// `format` field of `features.json`.
pub const MANIFEST_FORMAT: &str = "tracecast.features";
/// The manifest's file name in a feature directory: the commit point (part
/// files it does not list are leftovers of a run that died).
pub const MANIFEST_FILE: &str = "features.json";

/// `features.json` (`schemas/FORMATS.md` "Feature directory"): written by
/// `tracecast features`, read by it and by `tracecast train` / `predict`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct FeatureManifest {
    pub format: String,
    pub format_version: u32,
    pub window: usize,
    pub stride: usize,
    /// Traces whose windows are in the directory.
    pub traces: Vec<TraceEntry>,
    /// Traces that gave no windows, with the reason.
    pub skipped: Vec<SkippedTrace>,
    /// Part files written by each committed run.
    pub runs: Vec<RunEntry>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TraceEntry {
    pub trace_id: String,
    pub steps: u64,
    pub windows: u64,
    pub items: u64,
    /// Steps of the trace whose GPU sequence is empty: they give no windows.
    pub steps_without_items: u64,
    pub run_id: String,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SkippedTrace {
    pub trace_id: String,
    pub source: String,
    pub reason: String,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RunEntry {
    pub run_id: String,
    pub files: Vec<String>,
    pub tracecast_version: String,
}

impl FeatureManifest {
    pub fn new(window: usize, stride: usize) -> Self {
        FeatureManifest {
            format: MANIFEST_FORMAT.to_string(),
            format_version: FORMAT_VERSION,
            window,
            stride,
            traces: Vec::new(),
            skipped: Vec::new(),
            runs: Vec::new(),
        }
    }

    /// Parses `features.json` and checks it is a format this build reads;
    /// the error says what the file is instead.
    pub fn from_json(text: &str) -> Result<FeatureManifest, String> {
        let manifest: FeatureManifest = serde_json::from_str(text).map_err(|e| format!("{MANIFEST_FILE}: {e}"))?;
        if manifest.format != MANIFEST_FORMAT || manifest.format_version != FORMAT_VERSION {
            return Err(format!(
                "{MANIFEST_FILE} is {} version {}; this tracecast reads and writes {MANIFEST_FORMAT} version {FORMAT_VERSION}",
                manifest.format, manifest.format_version
            ));
        }
        Ok(manifest)
    }

    /// Every part file the committed runs wrote, relative to the directory.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.runs.iter().flat_map(|r| r.files.iter().map(String::as_str))
    }
}

/// Kernel families, in code order: a position's `family` is the index here.
pub const FAMILIES: [&str; 11] = [
    "gemm",
    "conv",
    "attention",
    "elementwise",
    "reduction",
    "norm",
    "softmax",
    "copy_memset",
    "communication",
    "optimizer",
    "other",
];

/// Phases of the launching operator, in code order.
pub const PHASES: [&str; 3] = ["forward", "backward", "optimizer"];

/// `phase` code of backward work.
pub const BACKWARD_PHASE: f64 = 1.0;
/// `phase` code of optimizer work.
pub const OPTIMIZER_PHASE: f64 = 2.0;
/// `family` code of collectives.
pub const COMMUNICATION_FAMILY: f64 = 8.0;
/// `family` code of fused attention kernels (flash, memory-efficient, cuDNN's).
pub const ATTENTION_FAMILY: f64 = 2.0;
/// `family` code of optimizer kernels.
pub const OPTIMIZER_FAMILY: f64 = 9.0;

/// Positions of a window's central items: PAD = (W - S) / 2 up to PAD + S.
pub fn central_positions(window: usize, stride: usize) -> std::ops::Range<usize> {
    let pad = (window - stride) / 2;
    pad..pad + stride
}

pub const FEATURE_STEPS: TableDef = TableDef {
    name: "feature_steps",
    version: FORMAT_VERSION,
    doc: "`tracecast features` output folder `steps/`: one row per step that gave windows. \
          `dur_ns = gpu_span_ns + remainder_ns`, and `gpu_span_ns` is the sum of the step's windows' `target_ns`.",
    columns: &[
        req("trace_id", Utf8, "", "The trace."),
        req("step_id", Int64, "", "The step (`steps.step_id`)."),
        req(
            "dur_ns",
            Int64,
            "ns",
            "Measured wall time of the step (`steps.dur_ns`): the quantity the windows add up to.",
        ),
        req(
            "item_count",
            Int64,
            "count",
            "Kernels, copies and sets in the step's GPU sequence.",
        ),
        req(
            "gpu_span_ns",
            Int64,
            "ns",
            "From the first item's start to the end of the step's last-ending item; the sum of the step's window targets.",
        ),
        req(
            "remainder_ns",
            Int64,
            "ns",
            "`dur_ns - gpu_span_ns`: step time no window predicts (CPU-side time before the first kernel and after the GPU work; negative where the GPU work outlasts the CPU span).",
        ),
        req(
            "dataloader_ns",
            Int64,
            "ns",
            "Host time in the step's data-loader iterator (operators named `enumerate(DataLoader)...`): per-sample work that a batch-size what-if scales; 0 where the trace records none.",
        ),
        req(
            "cpu_op_count",
            Int64,
            "count",
            "CPU operators the profiler recorded in the step (`ops.category = 'cpu_op'`, nested ones included): `predict` removes the profiler's own host time per operator (`--profiler-overhead-us`).",
        ),
        req(
            "runtime_wait_ns",
            Int64,
            "ns",
            "Time the step's CUDA/HIP runtime and driver calls (`launches`) took beyond 5 us each: the host waiting on the GPU (a full launch queue, a synchronisation) rather than working. `dur_ns` less this (and less the profiler's cost) is the host's own time for the step, the floor of `predict`'s what-ifs (`predicted_steps.host_ns`).",
        ),
        req(
            "window_count",
            Int64,
            "count",
            "Windows of the step: ceil(item_count / S).",
        ),
        opt("gpu_name", Utf8, "", "`traces.gpu_name`."),
        opt(
            "job_id",
            Utf8,
            "",
            "`traces.job_id`: the run the trace belongs to (the ranks of one run share it).",
        ),
    ],
};

pub const FEATURE_WINDOWS: TableDef = TableDef {
    name: "feature_windows",
    version: FORMAT_VERSION,
    doc: "`tracecast features` output folder `windows/`: one row per window. These fixed columns come first, \
          then the per-position columns of `feature_windows.positions` for positions 0..W-1. \
          Columns marked *measured* were timed on the recorded GPU: they describe the trace but are not predictor inputs \
          for pricing a trace on other hardware.",
    columns: &[
        req("trace_id", Utf8, "", "The trace.").identifier(),
        req("step_id", Int64, "", "The step.").identifier(),
        req(
            "window_index",
            Int64,
            "",
            "Index of the window within the step, from 0.",
        )
        .identifier(),
        req(
            "first_item",
            Int64,
            "",
            "Sequence index of the window's first central item.",
        )
        .identifier(),
        req(
            "central_count",
            Int64,
            "count",
            "Central items: S, fewer in the step's last window.",
        ),
        req(
            "target_ns",
            Int64,
            "ns",
            "The target: wall time of the central items (durations plus the gaps after them).",
        )
        .target(),
        req(
            "window_items",
            Int64,
            "count",
            "Positions holding an item (W less the padding).",
        ),
        opt(
            "window_flops",
            Float64,
            "FLOP",
            "Estimated FLOPs of the window's items (see `p*_flops`); 0 where none has an estimate.",
        ),
        opt(
            "window_bytes",
            Float64,
            "bytes",
            "Estimated bytes moved by the window's items (see `p*_bytes`); 0 where none has an estimate.",
        ),
        req("count_gemm", Int64, "count", "Items of family gemm in the window."),
        req("count_conv", Int64, "count", "Items of family conv."),
        req("count_attention", Int64, "count", "Items of family attention."),
        req("count_elementwise", Int64, "count", "Items of family elementwise."),
        req("count_reduction", Int64, "count", "Items of family reduction."),
        req("count_norm", Int64, "count", "Items of family norm."),
        req("count_softmax", Int64, "count", "Items of family softmax."),
        req("count_copy_memset", Int64, "count", "Items of family copy_memset."),
        req("count_communication", Int64, "count", "Items of family communication."),
        req("count_optimizer", Int64, "count", "Items of family optimizer."),
        req("count_other", Int64, "count", "Items of family other."),
        opt(
            "share_gemm",
            Float64,
            "fraction",
            "*Measured*: share of the window's summed item duration spent in gemm items.",
        )
        .measured(),
        opt(
            "share_conv",
            Float64,
            "fraction",
            "*Measured*: duration share of conv items.",
        )
        .measured(),
        opt(
            "share_attention",
            Float64,
            "fraction",
            "*Measured*: duration share of attention items.",
        )
        .measured(),
        opt(
            "share_elementwise",
            Float64,
            "fraction",
            "*Measured*: duration share of elementwise items.",
        )
        .measured(),
        opt(
            "share_reduction",
            Float64,
            "fraction",
            "*Measured*: duration share of reduction items.",
        )
        .measured(),
        opt(
            "share_norm",
            Float64,
            "fraction",
            "*Measured*: duration share of norm items.",
        )
        .measured(),
        opt(
            "share_softmax",
            Float64,
            "fraction",
            "*Measured*: duration share of softmax items.",
        )
        .measured(),
        opt(
            "share_copy_memset",
            Float64,
            "fraction",
            "*Measured*: duration share of copy_memset items.",
        )
        .measured(),
        opt(
            "share_communication",
            Float64,
            "fraction",
            "*Measured*: duration share of communication items.",
        )
        .measured(),
        opt(
            "share_optimizer",
            Float64,
            "fraction",
            "*Measured*: duration share of optimizer items.",
        )
        .measured(),
        opt(
            "share_other",
            Float64,
            "fraction",
            "*Measured*: duration share of other items.",
        )
        .measured(),
        req(
            "step_items",
            Int64,
            "count",
            "Step context: items in the step's sequence.",
        ),
        req(
            "step_dur_ns",
            Int64,
            "ns",
            "*Measured*: step context: wall time of the step.",
        )
        .measured(),
        req(
            "step_remainder_ns",
            Int64,
            "ns",
            "*Measured*: step context: the step's `remainder_ns` (the same on every window of the step).",
        )
        .measured(),
        opt("gpu_name", Utf8, "", "Hardware: `traces.gpu_name`.").recorded_hardware(),
        opt(
            "sm_count",
            Int64,
            "count",
            "Hardware: SMs (compute units on AMD) of the trace's GPU (its `devices` row named as `gpu_name`).",
        )
        .few_values()
        .recorded_hardware(),
        opt(
            "compute_capability",
            Int32,
            "",
            "Hardware: compute capability as major*10 + minor (80 for 8.0).",
        )
        .few_values()
        .recorded_hardware(),
    ],
};

/// The features of one window position; column `p{NN}_{name}` for position NN.
pub const FEATURE_POSITIONS: TableDef = TableDef {
    name: "feature_windows.positions",
    version: FORMAT_VERSION,
    doc: "Per-position columns of `feature_windows`, repeated for each position NN = 00..W-1 as `pNN_<column>`. \
          Position (W-S)/2 is the first central item. Every column is null at padding positions.",
    columns: &[
        opt(
            "family",
            Int32,
            "",
            "Kernel family code, an index into gemm, conv, attention, elementwise, reduction, norm, softmax, copy_memset, communication, optimizer, other (from the kernel's name; collectives from ingest's classification).",
        ).few_values(),
        opt(
            "op_code",
            Int32,
            "",
            "The launching operator's name as a stable 31-bit FNV-1a code (`aten::addmm` has the same code in every trace).",
        ).few_values(),
        opt(
            "phase",
            Int32,
            "",
            "Phase of the launching operator: 0 forward, 1 backward, 2 optimizer: its own name's, else optimizer inside an optimizer-named operator, else backward inside a backward-named one, else forward.",
        ).few_values(),
        opt(
            "op_depth",
            Int32,
            "count",
            "Nesting depth of the launching operator on its thread.",
        ).few_values(),
        opt(
            "flops",
            Float64,
            "FLOP",
            "FLOPs estimated from the launching operator's input dims (matmul/linear/bmm/addmm/conv/attention/elementwise/norm/reduction/softmax), divided evenly over the kernels the operator launched.",
        )
        .batch_scaled(),
        opt(
            "bytes",
            Float64,
            "bytes",
            "Bytes read and written estimated from the operator's input dims and dtypes, divided like `flops`; for copies and sets, the bytes the trace records.",
        )
        .batch_scaled(),
        opt(
            "in0_numel",
            Float64,
            "elements",
            "Elements of the operator's first tensor input.",
        )
        .batch_scaled(),
        opt(
            "in1_numel",
            Float64,
            "elements",
            "Elements of the operator's second tensor input.",
        ),
        opt(
            "dtype_bytes",
            Int32,
            "bytes",
            "Element size of the operator's first tensor input.",
        ).few_values(),
        opt(
            "product_alignment",
            Int32,
            "elements",
            "For a matrix product (mm, addmm, bmm, baddbmm, matmul, linear): the largest power of two, up to 64, that divides its rows, columns and inner dimension; null for other operators. A 16-bit what-if prices products whose alignment is below 8 on cuBLAS's slower kernels. Not a window-model input.",
        )
        .few_values()
        .op_model_only(),
        opt(
            "conv_group_width",
            Int32,
            "channels",
            "For a grouped convolution, forward or backward (more than one group): the input channels each group reads, the weight's second dimension (1: depthwise); null for an ungrouped convolution and other operators. A 16-bit what-if prices the backward of a depthwise convolution whose forward ran on PyTorch's own kernel (`aten::_conv_depthwise2d`) at its float32 time, as that kernel is the same in both types. Not a window-model input.",
        )
        .few_values()
        .op_model_only(),
        opt("grid", Int64, "count", "Blocks in the grid (x*y*z).")
            .few_values()
            .batch_scaled(),
        opt("block", Int64, "count", "Threads per block (x*y*z).").few_values(),
        opt("registers", Int64, "count", "Registers per thread.").few_values(),
        opt("shared_memory_bytes", Int64, "bytes", "Shared memory per block.").few_values(),
        opt("occupancy_pct", Float64, "%", "Occupancy the trace records.").few_values(),
        opt(
            "launch_delay_ns",
            Int64,
            "ns",
            "*Measured*: GPU start minus the start of the runtime call that launched it.",
        ).measured(),
        opt(
            "gap_ns",
            Int64,
            "ns",
            "*Measured*: the next item's start minus this item's end (negative where they overlap).",
        ).measured(),
        opt(
            "dur_ns",
            Int64,
            "ns",
            "*Measured*: the item's duration. `dur_ns + gap_ns` is the item's wall time; the central ones add up to `target_ns`.",
        ).measured(),
    ],
};

pub const TABLES: [&TableDef; 3] = [&FEATURE_STEPS, &FEATURE_WINDOWS, &FEATURE_POSITIONS];

/// The largest `product_alignment` a feature table holds.
pub const MAX_PRODUCT_ALIGNMENT: i32 = 64;

/// The `product_alignment` of a matrix product from its rows, columns and
/// inner size: the largest power of two, up to 64, that divides all three.
/// An empty dimension (0) constrains nothing; one that is not a whole
/// number (a batch-scaled shape) has alignment 1. The feature pipeline
/// writes it for a trace's products, and the op model reads the same rule
/// from a product's shape, so the two cannot disagree.
pub fn product_alignment(dims: [f64; 3]) -> i32 {
    dims.iter().fold(MAX_PRODUCT_ALIGNMENT, |alignment, &d| {
        let d = d.abs();
        if d == 0.0 {
            alignment
        } else if d.fract() == 0.0 && d < 9.0e15 {
            alignment.min(1 << (d as i64).trailing_zeros().min(MAX_PRODUCT_ALIGNMENT.trailing_zeros()))
        } else {
            1
        }
    })
}

/// The `op_code` of an operator name: a stable 31-bit code (FNV-1a), the
/// same in every run and trace.
pub fn stable_code(name: &str) -> i32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in name.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    (hash & 0x7fff_ffff) as i32
}

/// Name of the per-position column `name` at position `p`.
pub fn position_column(p: usize, name: &str) -> String {
    format!("p{p:02}_{name}")
}

/// Every column of `feature_windows` for windows of `w` positions, in
/// order, with its definition.
fn window_columns(w: usize) -> impl Iterator<Item = (String, &'static Column)> {
    let fixed = FEATURE_WINDOWS.columns.iter().map(|c| (c.name.to_string(), c));
    let positions = (0..w).flat_map(|p| {
        FEATURE_POSITIONS
            .columns
            .iter()
            .map(move |c| (position_column(p, c.name), c))
    });
    fixed.chain(positions)
}

/// The columns of `window_schema(w)` that hold few distinct values.
pub fn few_value_columns(w: usize) -> Vec<String> {
    window_columns(w)
        .filter(|(_, c)| c.few_values)
        .map(|(name, _)| name)
        .collect()
}

/// The full `feature_windows` schema for windows of `w` positions.
pub fn window_schema(w: usize) -> SchemaRef {
    let fixed = FEATURE_WINDOWS.schema();
    let fields: Vec<Field> = window_columns(w)
        .map(|(name, c)| Field::new(name, c.ty.to_arrow(), c.nullable))
        .collect();
    let mut metadata = fixed.metadata().clone();
    metadata.insert("tracecast.window".to_string(), w.to_string());
    Arc::new(Schema::new_with_metadata(fields, metadata))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::Role;

    #[test]
    fn a_products_alignment_is_the_largest_power_of_two_dividing_its_dimensions() {
        assert_eq!(product_alignment([4096.0, 50257.0, 768.0]), 1);
        assert_eq!(product_alignment([4096.0, 30522.0, 1024.0]), 2);
        assert_eq!(product_alignment([72.0, 64.0, 128.0]), 8);
        assert_eq!(product_alignment([4096.0, 50304.0, 768.0]), MAX_PRODUCT_ALIGNMENT);
        // An empty dimension constrains nothing; a fractional one is unaligned.
        assert_eq!(product_alignment([0.0, 16.0, 32.0]), 16);
        assert_eq!(product_alignment([16.5, 16.0, 32.0]), 1);
        assert_eq!(product_alignment([f64::NAN, 16.0, 32.0]), 1);
    }

    #[test]
    fn op_codes_are_stable() {
        // Lakes and feature tables written before keep their meaning.
        assert_eq!(stable_code("aten::addmm"), 460605484);
        assert_ne!(stable_code("aten::addmm"), stable_code("aten::mm"));
        assert!(stable_code("x") >= 0);
    }

    #[test]
    fn window_schema_has_every_position() {
        let schema = window_schema(4);
        assert_eq!(
            schema.fields().len(),
            FEATURE_WINDOWS.columns.len() + 4 * FEATURE_POSITIONS.columns.len()
        );
        assert!(schema.field_with_name("p03_gap_ns").is_ok());
        assert!(schema.field_with_name("p04_gap_ns").is_err());
    }

    #[test]
    fn manifest_round_trips_and_refuses_other_versions() {
        let mut m = FeatureManifest::new(16, 4);
        m.runs.push(RunEntry {
            run_id: "1".into(),
            files: vec!["windows/part-1.parquet".into()],
            tracecast_version: "0.1.0".into(),
        });
        let text = serde_json::to_string(&m).unwrap();
        let back = FeatureManifest::from_json(&text).unwrap();
        assert_eq!(
            (back.window, back.files().collect::<Vec<_>>()),
            (16, vec!["windows/part-1.parquet"])
        );
        let old = text.replace(&format!("\"format_version\":{FORMAT_VERSION}"), "\"format_version\":1");
        assert!(FeatureManifest::from_json(&old).unwrap_err().contains("version 1"));
    }

    #[test]
    fn codes_match_their_names() {
        assert_eq!(PHASES[BACKWARD_PHASE as usize], "backward");
        assert_eq!(PHASES[OPTIMIZER_PHASE as usize], "optimizer");
        assert_eq!(FAMILIES[COMMUNICATION_FAMILY as usize], "communication");
        assert_eq!(FAMILIES[ATTENTION_FAMILY as usize], "attention");
        assert_eq!(FAMILIES[OPTIMIZER_FAMILY as usize], "optimizer");
        assert_eq!(central_positions(16, 4), 6..10);
    }

    #[test]
    fn measured_flag_and_doc_agree() {
        for def in TABLES {
            for c in def.columns {
                assert_eq!(
                    c.role == Role::Measured,
                    c.doc.starts_with("*Measured*"),
                    "{}.{}",
                    def.name,
                    c.name
                );
            }
        }
    }

    #[test]
    fn every_family_has_its_aggregates() {
        for f in FAMILIES {
            assert!(
                FEATURE_WINDOWS.columns.iter().any(|c| c.name == format!("count_{f}")),
                "count_{f}"
            );
            assert!(
                FEATURE_WINDOWS.columns.iter().any(|c| c.name == format!("share_{f}")),
                "share_{f}"
            );
        }
    }
}

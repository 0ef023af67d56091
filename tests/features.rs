//! `tracecast features`: windows tile every step exactly, runs are
//! incremental, bad input is refused clearly, and an independent pandas
//! implementation (`bench/features_check.py`) computes the same windows.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use arrow::array::AsArray;
use arrow::datatypes::{DataType, Int32Type, Int64Type};
use arrow::record_batch::RecordBatch;
use common::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn features(lake: &Path, out: &Path, extra: &[&str]) -> (bool, String, String) {
    let mut args = vec![
        "features",
        "--lake",
        lake.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = tracecast(&args);
    let (stdout, stderr) = text(&output);
    (output.status.success(), stdout, stderr)
}

fn fixture_lake(dir: &Path) -> PathBuf {
    let lake = dir.join("lake");
    let out = tracecast(&[
        "ingest",
        fixtures().join("traces").to_str().unwrap(),
        "--lake",
        lake.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{:?}", text(&out));
    lake
}

fn read_table(dir: &Path) -> Vec<RecordBatch> {
    let mut batches = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let file = std::fs::File::open(entry.unwrap().path()).unwrap();
        for batch in ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap() {
            batches.push(batch.unwrap());
        }
    }
    batches
}

fn int_column<'a>(batch: &'a RecordBatch, name: &str) -> &'a arrow::array::Int64Array {
    batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_primitive::<Int64Type>()
}

/// The distinct non-null `pNN_product_alignment` values of a feature table.
fn product_alignments(out: &Path) -> Vec<i32> {
    let mut seen = std::collections::BTreeSet::new();
    for batch in read_table(&out.join("windows")) {
        let schema = batch.schema();
        let columns: Vec<&str> = schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|n| n.ends_with("_product_alignment"))
            .collect();
        assert!(!columns.is_empty(), "no product_alignment columns");
        for name in columns {
            let column = arrow::compute::cast(batch.column_by_name(name).unwrap(), &DataType::Int32).unwrap();
            seen.extend(column.as_primitive::<Int32Type>().iter().flatten());
        }
    }
    seen.into_iter().collect()
}

fn manifest(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("features.json")).unwrap()).unwrap()
}

/// For every step of every computed trace: window targets + remainder = the
/// lake's measured step time, and every item is central in exactly one window.
fn assert_windows_tile_steps(lake: &Path, out: &Path, stride: i64) -> usize {
    let mut per_step: HashMap<(String, i64), (i64, i64, i64)> = HashMap::new();
    for batch in read_table(&out.join("windows")) {
        let ids = batch.column_by_name("trace_id").unwrap().as_string::<i32>();
        let (step, target, central, first) = (
            int_column(&batch, "step_id"),
            int_column(&batch, "target_ns"),
            int_column(&batch, "central_count"),
            int_column(&batch, "first_item"),
        );
        let remainder = int_column(&batch, "step_remainder_ns");
        for i in 0..batch.num_rows() {
            assert_eq!(first.value(i) % stride, 0);
            let e = per_step
                .entry((ids.value(i).to_string(), step.value(i)))
                .or_insert((0, 0, remainder.value(i)));
            e.0 += target.value(i);
            e.1 += central.value(i);
            assert_eq!(e.2, remainder.value(i), "one remainder per step");
        }
    }
    let measured = query(lake, "SELECT trace_id, step_id, dur_ns FROM steps");
    let measured: HashMap<(String, i64), i64> = measured
        .iter()
        .map(|r| ((string(r, "trace_id"), int(r, "step_id")), int(r, "dur_ns")))
        .collect();
    for batch in read_table(&out.join("steps")) {
        let ids = batch.column_by_name("trace_id").unwrap().as_string::<i32>();
        let (step, items, span) = (
            int_column(&batch, "step_id"),
            int_column(&batch, "item_count"),
            int_column(&batch, "gpu_span_ns"),
        );
        for i in 0..batch.num_rows() {
            let key = (ids.value(i).to_string(), step.value(i));
            let (targets, centrals, remainder) = per_step[&key];
            assert_eq!(
                targets + remainder,
                measured[&key],
                "step {key:?}: windows + remainder = measured time"
            );
            assert_eq!(targets, span.value(i), "step {key:?}");
            assert_eq!(centrals, items.value(i), "step {key:?}: every item central once");
        }
    }
    per_step.len()
}

/// The pandas cross-check, where Python with pandas and pyarrow is found
/// (`make test` provides bench/.venv; CI requires it).
fn cross_check(lake: &Path, out: &Path) {
    let root = workspace_root();
    let venv = root.join("bench/.venv/bin/python");
    let python = if venv.exists() { venv } else { PathBuf::from("python3") };
    let has_pandas = Command::new(&python)
        .args(["-c", "import pandas, pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_pandas {
        if std::env::var_os("TRACECAST_REQUIRE_SHARED").is_some() {
            panic!("pandas and pyarrow are needed for the cross-check in CI (make test installs them in bench/.venv)");
        }
        eprintln!("SKIP: no Python with pandas and pyarrow; the pandas cross-check did not run");
        return;
    }
    let check = Command::new(&python)
        .arg(root.join("bench/features_check.py"))
        .args([lake, out])
        .output()
        .expect("run features_check.py");
    let (stdout, stderr) = text(&check);
    assert!(check.status.success(), "cross-check failed:\n{stdout}{stderr}");
    assert!(stdout.contains("all equal"), "{stdout}");
}

#[test]
fn fixture_windows_tile_steps_and_runs_are_incremental() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = fixture_lake(tmp.path());
    let out = tmp.path().join("features");
    let (ok, stdout, stderr) = features(&lake, &out, &["--window", "8", "--stride", "2"]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.starts_with("features W=8 S=2: "), "{stdout}");
    // The Execution Trace gives no windows, and says why.
    assert!(stderr.contains("an Execution Trace"), "{stderr}");
    let m = manifest(&out);
    assert_eq!((m["window"].as_u64(), m["stride"].as_u64()), (Some(8), Some(2)));
    let done = m["traces"].as_array().unwrap().len();
    assert!(done >= 4, "{m}");
    let steps = assert_windows_tile_steps(&lake, &out, 2);
    assert!(steps > 0);
    cross_check(&lake, &out);
    // The synthetic traces' products are [32, 1024] x [1024, 1024].
    assert_eq!(product_alignments(&out), [32]);

    // Computed one trace at a time (--chunk-items 1), the windows and the
    // steps (whose operator counts read every trace's, not the last chunk's)
    // are the same.
    let one_by_one = tmp.path().join("features-one-by-one");
    let (ok, _, stderr) = features(
        &lake,
        &one_by_one,
        &["--window", "8", "--stride", "2", "--chunk-items", "1"],
    );
    assert!(ok, "{stderr}");
    assert_same_rows(&out, &one_by_one, "windows");
    assert_same_rows(&out, &one_by_one, "steps");
    assert_step_host_columns(&lake, &out);

    // Nothing new: nothing computed, nothing written.
    let files_before = std::fs::read_dir(out.join("windows")).unwrap().count();
    let (ok, stdout, _) = features(&lake, &out, &["--window", "8", "--stride", "2"]);
    assert!(ok);
    assert!(
        stdout.contains(": 0 new traces") && stdout.contains(&format!("{done} traces already done")),
        "{stdout}"
    );
    assert_eq!(std::fs::read_dir(out.join("windows")).unwrap().count(), files_before);

    // A new trace: only it is computed.
    let synth = tmp.path().join("synth");
    let made = tracecast(&[
        "synth",
        "--out",
        synth.to_str().unwrap(),
        "--jobs",
        "1",
        "--ranks",
        "1",
        "--seed",
        "7",
    ]);
    assert!(made.status.success(), "{:?}", text(&made));
    let added = tracecast(&["ingest", synth.to_str().unwrap(), "--lake", lake.to_str().unwrap()]);
    assert!(added.status.success(), "{:?}", text(&added));
    let (ok, stdout, stderr) = features(&lake, &out, &["--window", "8", "--stride", "2"]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(": 1 new traces") && stdout.contains(&format!("{done} traces already done")),
        "{stdout}"
    );
    assert_eq!(manifest(&out)["traces"].as_array().unwrap().len(), done + 1);
    assert!(assert_windows_tile_steps(&lake, &out, 2) > steps);
}

/// Every step's `cpu_op_count` is the lake's CPU operators in that step, and
/// its `runtime_wait_ns` its runtime calls' time beyond 5 µs each.
fn assert_step_host_columns(lake: &Path, features: &Path) {
    let steps = format!("fs={}", features.join("steps").display());
    let query = "SELECT fs.trace_id, fs.step_id, fs.cpu_op_count, COALESCE(c.n, 0) AS in_lake, \
                 fs.runtime_wait_ns, COALESCE(w.wait, 0) AS wait_in_lake FROM fs \
                 LEFT JOIN (SELECT trace_id, step_id, count(*) AS n FROM ops WHERE category = 'cpu_op' \
                 GROUP BY trace_id, step_id) c ON c.trace_id = fs.trace_id AND c.step_id = fs.step_id \
                 LEFT JOIN (SELECT trace_id, step_id, sum(dur_ns - 5000) AS wait FROM launches WHERE dur_ns > 5000 \
                 GROUP BY trace_id, step_id) w ON w.trace_id = fs.trace_id AND w.step_id = fs.step_id";
    let output = tracecast(&[
        "sql",
        "--lake",
        lake.to_str().unwrap(),
        "--table",
        &steps,
        "--format",
        "json",
        query,
    ]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&stdout).unwrap();
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["cpu_op_count"] == r["in_lake"]), "{stdout}");
    assert!(rows.iter().any(|r| r["cpu_op_count"].as_i64() > Some(0)), "{stdout}");
    assert!(
        rows.iter().all(|r| r["runtime_wait_ns"] == r["wait_in_lake"]),
        "{stdout}"
    );
    assert!(rows.iter().any(|r| r["runtime_wait_ns"].as_i64() > Some(0)), "{stdout}");
}

/// Both feature directories hold the same rows in `table` (`windows` or
/// `steps`), column for column.
fn assert_same_rows(a: &Path, b: &Path, table: &str) {
    let a = format!("a={}", a.join(table).display());
    let b = format!("b={}", b.join(table).display());
    let compare = "SELECT (SELECT count(*) FROM a) AS rows_a, (SELECT count(*) FROM b) AS rows_b, \
                   (SELECT count(*) FROM (SELECT * FROM a EXCEPT SELECT * FROM b)) AS only_a, \
                   (SELECT count(*) FROM (SELECT * FROM b EXCEPT SELECT * FROM a)) AS only_b";
    let output = tracecast(&["sql", "--table", &a, "--table", &b, "--format", "json", compare]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let row: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(row[0]["rows_a"], row[0]["rows_b"], "{stdout}");
    assert_eq!(
        (row[0]["only_a"].as_i64(), row[0]["only_b"].as_i64()),
        (Some(0), Some(0)),
        "{stdout}"
    );
}

/// A copy of the built-in SQL files, with `edit` applied to one of them.
fn edited_sql(dir: &Path, file: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let sql = dir.join(format!("sql-{file}"));
    std::fs::create_dir_all(&sql).unwrap();
    for entry in std::fs::read_dir(workspace_root().join("features/sql")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap();
        let text = if name == file { edit(&text) } else { text };
        std::fs::write(sql.join(name), text).unwrap();
    }
    sql
}

#[test]
fn edited_sql_copies_run_and_outdated_ones_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = fixture_lake(tmp.path());
    let built_in = tmp.path().join("built-in");
    let (ok, _, stderr) = features(&lake, &built_in, &[]);
    assert!(ok, "{stderr}");

    // Columns selected in another order than the table's come out in the
    // table's order, with the same values.
    let reordered = edited_sql(tmp.path(), "04_windows.sql", |text| {
        let swapped = text.replace("central_count, target_ns,", "target_ns, central_count,");
        assert_ne!(swapped, text, "the built-in 04_windows.sql changed: update this edit");
        swapped
    });
    let out = tmp.path().join("reordered");
    let (ok, _, stderr) = features(&lake, &out, &["--sql", reordered.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert_same_rows(&built_in, &out, "windows");

    // A copy made before selected_trace_key: refused, with what replaced it.
    let outdated = edited_sql(tmp.path(), "01_selection.sql", |_| {
        "CREATE VIEW fx_kernels AS SELECT s.trace_key, k.* FROM fx_selected s JOIN kernels k USING (trace_id);".into()
    });
    let out = tmp.path().join("outdated");
    let (ok, _, stderr) = features(&lake, &out, &["--sql", outdated.to_str().unwrap()]);
    assert!(
        !ok && stderr.contains("01_selection.sql") && stderr.contains("selected_trace_key"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written for refused SQL");
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = fixture_lake(tmp.path());
    let out = tmp.path().join("f");

    let (ok, _, stderr) = features(&lake, &out, &["--window", "16", "--stride", "3"]);
    assert!(
        !ok && stderr.contains("W=16 S=3") && stderr.contains("W - S must be even"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written for a bad window shape");
    let (ok, _, stderr) = features(&lake, &out, &["--window", "2", "--stride", "4"]);
    assert!(!ok && stderr.contains("W >= S"), "{stderr}");

    let empty = tmp.path().join("empty-lake");
    std::fs::create_dir(&empty).unwrap();
    let (ok, _, stderr) = features(&empty, &out, &[]);
    assert!(!ok && stderr.contains("the lake has no traces"), "{stderr}");
    let (ok, _, stderr) = features(&tmp.path().join("nowhere"), &out, &[]);
    assert!(!ok && stderr.contains("no such lake"), "{stderr}");

    // An output directory of another window shape is not mixed into.
    let (ok, _, stderr) = features(&lake, &out, &[]);
    assert!(ok, "{stderr}");
    let before = snapshot(&out);
    let (ok, _, stderr) = features(&lake, &out, &["--window", "8", "--stride", "4"]);
    assert!(
        !ok && stderr.contains("holds windows of W=16 S=4, not W=8 S=4"),
        "{stderr}"
    );
    assert_eq!(snapshot(&out), before);

    // Nor is a directory that is not a feature directory.
    let (ok, _, stderr) = features(&lake, &tmp.path().join("lake"), &[]);
    assert!(!ok && stderr.contains("not a tracecast feature directory"), "{stderr}");

    // A part file a dead run left behind is removed, not counted.
    std::fs::write(out.join("windows/part-dead.parquet"), b"half a file").unwrap();
    let (ok, _, stderr) = features(&lake, &out, &[]);
    assert!(ok, "{stderr}");
    assert!(!out.join("windows/part-dead.parquet").exists());
}

#[test]
fn every_shared_trace_step_is_tiled_exactly() {
    let Some(lake) = shared_lake() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("features");
    let (ok, stdout, stderr) = features(lake, &out, &[]);
    assert!(ok, "{stdout}{stderr}");
    let m = manifest(&out);
    let skipped: Vec<String> = m["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{} {}", s["source"], s["reason"]))
        .collect();
    // The three ETs, the CPU-only trace, the CUPTI range-profiler trace (no
    // kernels) and the two traces with kernels but no iterations to cut.
    for (fragment, reason) in [
        ("resnet_et", "an Execution Trace"),
        ("linear_et", "an Execution Trace"),
        ("simple_add_et", "an Execution Trace"),
        ("cpu_only", "no kernels"),
        ("cupti_profiler", "no kernels"),
        ("before_fix_trace", "no steps"),
        ("gpu_only_trace", "no steps"),
    ] {
        assert!(
            skipped.iter().any(|s| s.contains(fragment) && s.contains(reason)),
            "{fragment}: {skipped:?}"
        );
    }
    assert_eq!(m["traces"].as_array().unwrap().len() + skipped.len(), 20, "{m}");
    // The 84 steps of the 13 traces that give windows (2+4+5+3+5+5+2+4+4+6+1+4+39,
    // see tests/shared_traces.rs), less the 5 with no GPU work in them.
    let steps = assert_windows_tile_steps(lake, &out, 4);
    assert_eq!(steps, 79);
    let empty: u64 = m["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["steps_without_items"].as_u64().unwrap())
        .sum();
    assert_eq!(empty, 5);
    cross_check(lake, &out);
}

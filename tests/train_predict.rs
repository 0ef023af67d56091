//! `tracecast train`, `predict` and `scaling`: the model directory and its
//! report, honest folds, predictions for another GPU, batch size and GPU
//! count, throughput tables the planner reads, and clear refusals.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use common::*;

fn run_ok(args: &[&str]) -> String {
    let out = tracecast(args);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "tracecast {args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

/// The shared ResNet-50 training trace (V100, batch 32, FP32), under ../shared/traces.
const SHARED_RESNET50: &str =
    "pytorch__kineto/tb_plugin__samples__resnet50_num_workers_0__worker0.1623143089861.pt.trace.json.gz";

/// `tracecast predict ARGS --out OUT`: the first trace's iteration time, ms.
fn predicted_iteration_ms(out: &Path, args: &[&str]) -> f64 {
    let mut all = vec!["predict"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", s(out)]);
    run_ok(&all);
    f(&csv_rows(&out.join("traces.csv"))[0], "iteration_ms")
}

fn run_err(args: &[&str]) -> String {
    let out = tracecast(args);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "tracecast {args:?} should fail:\n{stdout}");
    stderr
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Fixture traces -> lake -> features (W=16, S=4) in `dir`.
fn fixture_features(dir: &Path) -> PathBuf {
    let (lake, features) = (dir.join("lake"), dir.join("features"));
    run_ok(&["ingest", s(&fixtures().join("traces")), "--lake", s(&lake)]);
    run_ok(&["features", "--lake", s(&lake), "--out", s(&features)]);
    features
}

fn train_fixture(dir: &Path, features: &Path) -> PathBuf {
    let model = dir.join("model");
    run_ok(&[
        "train",
        "--features",
        s(features),
        "--folds",
        "3",
        "--num-iterations",
        "30",
        "--out",
        s(&model),
    ]);
    model
}

/// `tracecast predict --model MODEL --features FEATURES ARGS --out OUT`.
fn predict_features(model: &Path, features: &Path, args: &[&str], out: &Path) -> std::process::Output {
    let mut all = vec!["predict", "--model", s(model), "--features", s(features)];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", s(out)]);
    tracecast(&all)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The profiled trace of a `bench/corpus` configuration (`model__bsN__precision`).
fn corpus_trace(config: &str) -> PathBuf {
    workspace_root().join(format!("bench/corpus/h100-80gb-hbm3/{config}.pt.trace.json.zst"))
}

/// `predict`'s steps.csv for a `bench/corpus` configuration recorded at
/// `batch`, with `extra` arguments, written under `dir`.
fn corpus_steps(dir: &Path, config: &str, batch: &str, extra: &[&str]) -> Vec<HashMap<String, String>> {
    let out = dir.join(format!("{config}-{}", extra.join("-").replace("--", "")));
    let trace = corpus_trace(config);
    let mut args = vec!["predict", "--trace", s(&trace), "--trace-batch-size", batch];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", s(&out)]);
    let run = tracecast(&args);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stdout}{stderr}");
    csv_rows(&out.join("steps.csv"))
}

/// The mean of `column` over `rows` of a steps.csv.
fn steps_mean(rows: &[HashMap<String, String>], column: &str) -> f64 {
    rows.iter().map(|r| f(r, column)).sum::<f64>() / rows.len() as f64
}

/// The mean over its steps of `column` in `predict`'s steps.csv for a
/// `bench/corpus` configuration ([`corpus_steps`]).
fn corpus_step_mean(dir: &Path, config: &str, batch: &str, extra: &[&str], column: &str) -> f64 {
    steps_mean(&corpus_steps(dir, config, batch, extra), column)
}

/// Asserts that a what-if's priced kernel time a step (`what_if`: a
/// `bench/corpus` configuration, its recorded batch and the what-if's
/// arguments), over the kernel time priced as recorded of the
/// configuration it aims at (`target`: configuration and batch), lies
/// strictly between `low` and `high`.
fn assert_kernels_within(dir: &Path, what_if: (&str, &str, &[&str]), target: (&str, &str), low: f64, high: f64) {
    let busy_ms = |config: &str, batch: &str, extra: &[&str]| {
        corpus_step_mean(dir, config, batch, extra, "predicted_busy_ns") / 1e6
    };
    let priced = busy_ms(what_if.0, what_if.1, what_if.2);
    let recorded = busy_ms(target.0, target.1, &[]);
    let ratio = priced / recorded;
    assert!(
        ratio > low && ratio < high,
        "{priced} ms of kernels against {recorded} recorded"
    );
}

/// The median step of a `bench/corpus` configuration measured without the profiler, ms.
fn corpus_step_ms(config: &str) -> f64 {
    let manifest = workspace_root().join(format!("bench/corpus/h100-80gb-hbm3/{config}.manifest.json"));
    json(&manifest)["step_time"]["median"].as_f64().unwrap()
}

fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| {
            headers
                .iter()
                .map(str::to_string)
                .zip(r.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

fn f(row: &HashMap<String, String>, key: &str) -> f64 {
    row[key].parse().unwrap_or_else(|_| panic!("{key} = {:?}", row[key]))
}

#[test]
fn train_writes_the_model_directory_and_an_honest_report() {
    let dir = tempfile::tempdir().unwrap();
    let features = fixture_features(dir.path());
    let model = train_fixture(dir.path(), &features);
    for file in [
        "model.txt",
        "model.json",
        "report.md",
        "metrics.json",
        "scatter.svg",
        "importance.svg",
        "importance.csv",
    ] {
        assert!(model.join(file).is_file(), "{file} missing");
    }
    let card = json(&model.join("model.json"));
    assert_eq!(card["format"], "tracecast.model");
    assert_eq!((card["window"].as_u64(), card["stride"].as_u64()), (Some(16), Some(4)));
    let inputs: Vec<&str> = card["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(inputs.contains(&"p06_flops") && inputs.contains(&"hw_memory_bandwidth_gbs"));
    for measured in [
        "target_ns",
        "step_dur_ns",
        "p06_gap_ns",
        "p06_dur_ns",
        "share_gemm",
        "p00_launch_delay_ns",
    ] {
        assert!(!inputs.contains(&measured), "{measured} must not be an input");
    }
    // importance.csv: every input once, largest gain first, shares summing to 1.
    let importance = csv_rows(&model.join("importance.csv"));
    assert_eq!(importance.len(), inputs.len());
    let mut listed: Vec<&str> = importance.iter().map(|r| r["input"].as_str()).collect();
    assert!(importance.windows(2).all(|p| f(&p[0], "gain") >= f(&p[1], "gain")));
    let shares: f64 = importance.iter().map(|r| f(r, "share")).sum();
    assert!((shares - 1.0).abs() < 1e-9, "{shares}");
    listed.sort_unstable();
    let mut expected = inputs.clone();
    expected.sort_unstable();
    assert_eq!(listed, expected);
    assert_eq!(card["training_data"]["content_hash"].as_str().unwrap().len(), 16);
    assert_eq!(
        card["metrics"].as_array().unwrap().len(),
        4,
        "the window model and three baselines"
    );

    // Every step predicted exactly once, by a fold that did not train on its trace.
    let metrics = json(&model.join("metrics.json"));
    let steps = metrics["evaluation"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 13, "the fixture lake's 13 steps");
    let mut fold_of_trace: HashMap<&str, &str> = HashMap::new();
    let mut seen = HashSet::new();
    for step in steps {
        let (trace, fold) = (step["trace_id"].as_str().unwrap(), step["fold"].as_str().unwrap());
        assert_eq!(
            *fold_of_trace.entry(trace).or_insert(fold),
            fold,
            "trace {trace} in two folds"
        );
        assert!(
            seen.insert((trace, step["step_id"].as_i64().unwrap())),
            "step predicted twice"
        );
        assert!(step["predicted_ns"][0].as_f64().unwrap() > 0.0);
    }
    let report = std::fs::read_to_string(model.join("report.md")).unwrap();
    assert!(report.contains("Small corpus: 6 traces"), "{report}");
    assert!(report.contains("the kernel sum baseline") && report.contains("the per-kernel model baseline"));
    let svg = std::fs::read_to_string(model.join("scatter.svg")).unwrap();
    assert_eq!(svg.matches("<circle").count(), 13, "one point per held-out step");
}

#[test]
fn predict_prices_another_gpu_batch_and_gpu_count_and_feeds_the_planner() {
    let dir = tempfile::tempdir().unwrap();
    let features = fixture_features(dir.path());
    let model = train_fixture(dir.path(), &features);
    let trace = fixtures().join("traces/synthetic-2024-single.pt.trace.json.gz");
    let out = dir.path().join("pred");
    let stdout = run_ok(&[
        "predict",
        "--model",
        s(&model),
        "--trace",
        s(&trace),
        "--trace-batch-size",
        "16",
        "--trace-model",
        "mlp",
        "--gpu",
        "H100",
        "--batch-size",
        "32",
        "--gpus",
        "1,2,4,16",
        "--gradient-bytes",
        "4e8",
        "--gpu-type",
        "H100",
        "--out",
        s(&out),
    ]);
    assert!(stdout.contains("NVIDIA H100 SXM5 80GB"), "{stdout}");
    let traces = csv_rows(&out.join("traces.csv"));
    assert_eq!(traces.len(), 4, "one row per GPU count");
    let one = f(&traces[0], "iteration_ms");
    for row in &traces {
        let n = f(row, "num_gpus");
        assert_eq!(row["batch_size"], "32");
        assert!(
            row["measured_iteration_ms"].is_empty(),
            "another GPU: nothing measured to compare"
        );
        // Ring all-reduce of 400 MB: 2 (N-1)/N * 400 MB over the H100's 450 GB/s link direction.
        let expected_ar = if n == 1.0 {
            0.0
        } else if n <= 8.0 {
            2.0 * (n - 1.0) / n * 4e8 / 450e9 * 1e3 + 2.0 * (n - 1.0) * 0.01
        } else {
            2.0 * (n - 1.0) / n * 4e8 / 25e9 * 1e3 + 2.0 * (n - 1.0) * 0.01
        };
        assert!((f(row, "allreduce_ms") - expected_ar).abs() < 1e-6, "{row:?}");
        assert!(
            f(row, "iteration_ms") >= one - 1e-9 && f(row, "speedup") <= n + 1e-9,
            "{row:?}"
        );
        assert!((f(row, "iteration_ms") - one - f(row, "exposed_allreduce_ms")).abs() < 1e-6);
    }
    // The planner's throughput table: global batch 32 * N on every count dividing it.
    let table = csv_rows(&out.join("throughput.csv"));
    assert!(table.iter().any(|r| r["batch_size"] == "64" && r["num_gpus"] == "2"));
    assert!(
        table
            .iter()
            .all(|r| r["job_type"] == "mlp" && r["gpu_type"] == "H100" && r["source"] == "predicted")
    );
    let ef = std::fs::read_to_string(out.join("elasticflow/H100/mlp.csv")).unwrap();
    assert!(ef.starts_with("global_batch_size,1,2,4,16\n32,"), "{ef}");
    // ... which `tracecast plan` takes as it is.
    let jobs = dir.path().join("jobs.csv");
    std::fs::write(
        &jobs,
        "job_id,submit_time_s,num_gpus,job_type,batch_size,iterations\n1,0,2,mlp,64,1000\n2,10,4,mlp,128,500\n",
    )
    .unwrap();
    let cluster = dir.path().join("cluster.toml");
    std::fs::write(
        &cluster,
        "[[group]]\nname = \"h100\"\ngpu_type = \"H100\"\nnodes = 1\ngpus_per_node = 8\n",
    )
    .unwrap();
    let plan_out = dir.path().join("plan");
    run_ok(&[
        "plan",
        "--jobs",
        s(&jobs),
        "--cluster",
        s(&cluster),
        "--throughput",
        s(&out.join("throughput.csv")),
        "--out",
        s(&plan_out),
    ]);
    assert!(plan_out.join("schedule.json").is_file());

    // As recorded, from the recorded window times (the default), with the
    // profiler's cost kept: each step comes back as measured, or as its GPU
    // span where that outlasted the CPU's step (the fixture's spans have no
    // idle gaps longer than the step's overhang).
    let profiled = dir.path().join("profiled");
    let kept = predict_features(&model, &features, &["--profiler-overhead-us", "0"], &profiled);
    assert!(kept.status.success(), "{:?}", text(&kept));
    let profiled = csv_rows(&profiled.join("steps.csv"));
    assert_eq!(profiled.len(), 13);
    for r in &profiled {
        let (p, m) = (f(r, "predicted_ns"), f(r, "measured_ns"));
        let span = f(r, "predicted_gpu_span_ns");
        let expected = m.max(span);
        assert!(m > 0.0 && (p - expected).abs() <= 1e-6 * expected, "{r:?}");
        assert_eq!(f(r, "profiler_overhead_ns"), 0.0, "{r:?}");
        // The kernels' own time, inside the span that holds them and their gaps.
        let busy = f(r, "predicted_busy_ns");
        assert!(busy > 0.0 && busy <= span * (1.0 + 1e-9), "{r:?}");
    }
    // By default the profiler's own host time comes off each step, down to
    // no less than its kernels' time; the rest of the step is as profiled.
    let same = dir.path().join("same");
    let default_run = predict_features(&model, &features, &[], &same);
    let (stdout, stderr) = text(&default_run);
    assert!(default_run.status.success(), "{stdout}{stderr}");
    let steps = csv_rows(&same.join("steps.csv"));
    assert_eq!(steps.len(), profiled.len());
    for (r, kept) in steps.iter().zip(&profiled) {
        let (p, removed) = (f(r, "predicted_ns"), f(r, "profiler_overhead_ns"));
        let with_profiler = f(kept, "predicted_ns");
        assert!(
            removed >= 0.0 && (p + removed - with_profiler).abs() <= 1e-6 * with_profiler,
            "{r:?}"
        );
        assert!(p >= f(r, "predicted_busy_ns") * (1.0 - 1e-9), "{r:?}");
    }
    assert!(
        steps.iter().any(|r| f(r, "profiler_overhead_ns") > 0.0),
        "no step lost any profiler time: {steps:?}"
    );
    assert!(stderr.contains("is the profiler's own host time"), "{stdout}{stderr}");
    let refused = predict_features(
        &model,
        &features,
        &["--profiler-overhead-us=-1"],
        &dir.path().join("refused"),
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused).1.contains("--profiler-overhead-us"),
        "{:?}",
        text(&refused)
    );
    // From the window model (ETS's approach): the model's own estimate,
    // with the measured time beside it.
    let modelled = dir.path().join("modelled");
    run_ok(&[
        "predict",
        "--model",
        s(&model),
        "--features",
        s(&features),
        "--base",
        "model",
        "--out",
        s(&modelled),
    ]);
    let steps = csv_rows(&modelled.join("steps.csv"));
    assert_eq!(steps.len(), 13);
    assert!(
        steps
            .iter()
            .all(|r| !r["measured_ns"].is_empty() && f(r, "predicted_ns") > 0.0)
    );
    // The window model prices spans, not gaps apart: busy is the span.
    assert!(
        steps
            .iter()
            .all(|r| f(r, "predicted_busy_ns") == f(r, "predicted_gpu_span_ns"))
    );
    assert!(
        steps
            .iter()
            .any(|r| (f(r, "predicted_ns") - f(r, "measured_ns")).abs() > 1e-3 * f(r, "measured_ns")),
        "the window model reproduced every step exactly: {steps:?}"
    );
}

/// Without --gpu or --batch-size, the throughput grid still prices the
/// global batch on other GPU counts, i.e. at other per-GPU batches: the op
/// model moves those kernels too.
#[test]
fn predict_as_recorded_still_fills_the_throughput_grid() {
    let dir = tempfile::tempdir().unwrap();
    let features = fixture_features(dir.path());
    let model = train_fixture(dir.path(), &features);
    let trace = fixtures().join("traces/synthetic-2024-single.pt.trace.json.gz");
    let out = dir.path().join("pred");
    run_ok(&[
        "predict",
        "--model",
        s(&model),
        "--trace",
        s(&trace),
        "--trace-batch-size",
        "16",
        "--trace-model",
        "mlp",
        "--gpus",
        "1,2,4",
        "--gradient-bytes",
        "1e8",
        "--out",
        s(&out),
    ]);
    let table = csv_rows(&out.join("throughput.csv"));
    let one_gpu = |batch: &str| {
        table
            .iter()
            .find(|r| r["batch_size"] == batch && r["num_gpus"] == "1")
            .map(|r| f(r, "iters_per_s"))
            .unwrap_or_else(|| panic!("no one-GPU row at global batch {batch}: {table:?}"))
    };
    // Four times the batch on one GPU: fewer iterations per second.
    assert!(one_gpu("64") < one_gpu("16"), "{table:?}");
}

/// Right after install, with no `train` step: the built-in window model
/// prices a trace, and the built-in op model moves it to another GPU.
#[test]
fn predict_without_a_model_uses_the_built_in_one() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fixtures().join("traces/synthetic-2024-single.pt.trace.json.gz");
    let price = |gpu: &str| {
        let out = dir.path().join(format!("pred-{gpu}"));
        run_ok(&["predict", "--trace", s(&trace), "--gpu", gpu, "--out", s(&out)]);
        let rows = csv_rows(&out.join("traces.csv"));
        assert_eq!(rows.len(), 1, "{rows:?}");
        f(&rows[0], "iteration_ms")
    };
    let (t4, h100) = (price("T4"), price("H100"));
    assert!(h100 > 0.0 && t4 > h100, "T4 {t4} ms, H100 {h100} ms");

    // The first command, no output directory: the same price is
    // printed, and the note says nothing was written.
    let shown = tracecast(&["predict", "--trace", s(&trace), "--gpu", "H100"]);
    let (stdout, stderr) = text(&shown);
    assert!(shown.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("{h100:.3}")), "{h100} ms not in:\n{stdout}");
    assert!(
        stderr.contains("nothing written") && !stdout.contains("wrote"),
        "{stdout}\n{stderr}"
    );

    // A batch what-if on a trace whose batch nothing states: the error
    // names the file and the flag that states it, which then works.
    let out = dir.path().join("pred-b64");
    let err = run_err(&["predict", "--trace", s(&trace), "--batch-size", "64", "--out", s(&out)]);
    assert!(
        err.contains("synthetic-2024-single.pt.trace.json.gz") && err.contains("--trace-batch-size"),
        "{err}"
    );
    run_ok(&[
        "predict",
        "--trace",
        s(&trace),
        "--trace-batch-size",
        "32",
        "--batch-size",
        "64",
        "--out",
        s(&out),
    ]);
}

#[test]
fn predict_and_train_refuse_what_they_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let features = fixture_features(dir.path());
    let model = train_fixture(dir.path(), &features);

    // A feature table of another shape.
    let w8 = dir.path().join("features-w8");
    run_ok(&[
        "features",
        "--lake",
        s(&dir.path().join("lake")),
        "--window",
        "8",
        "--stride",
        "4",
        "--out",
        s(&w8),
    ]);
    let err = run_err(&[
        "predict",
        "--model",
        s(&model),
        "--features",
        s(&w8),
        "--out",
        s(&dir.path().join("p")),
    ]);
    assert!(
        err.contains("built with W=8 S=4, and the model needs W=16 S=4"),
        "{err}"
    );

    let err = run_err(&[
        "predict",
        "--model",
        s(&model),
        "--features",
        s(&features),
        "--gpu",
        "Voodoo 5",
        "--out",
        s(&dir.path().join("p")),
    ]);
    assert!(err.contains("no hardware profile by that name"), "{err}");

    // A profile without the figures a what-if needs (the H800's has no
    // datasheet figures): the error names the GPU and the way out, not
    // the feature table.
    let err = run_err(&[
        "predict",
        "--model",
        s(&model),
        "--features",
        s(&features),
        "--gpu",
        "h800-sxm5-80gb",
    ]);
    assert!(
        err.contains("--gpu: GPU `NVIDIA H800 SXM5 80GB`: the profile gives no peak FP32 rate")
            && err.contains("spec-sheet file")
            && !err.contains(s(&features)),
        "{err}"
    );

    // A model trained on an older feature format with the same window
    // inputs still predicts; one whose inputs meant something else does not.
    let card_path = model.join("model.json");
    let mut card = json(&card_path);
    card["feature_format_version"] = 4.into();
    std::fs::write(&card_path, card.to_string()).unwrap();
    let v4 = predict_features(&model, &features, &[], &dir.path().join("p4"));
    assert!(v4.status.success(), "{:?}", text(&v4));
    card["feature_format_version"] = 1.into();
    std::fs::write(&card_path, card.to_string()).unwrap();
    let err = run_err(&[
        "predict",
        "--model",
        s(&model),
        "--features",
        s(&features),
        "--out",
        s(&dir.path().join("p")),
    ]);
    assert!(
        err.contains("feature format version 1") && err.contains("model.json"),
        "{err}"
    );

    // Training input that cannot work says why.
    let err = run_err(&["train", "--features", s(dir.path()), "--out", s(&dir.path().join("m"))]);
    assert!(err.contains("not a feature directory"), "{err}");
    let err = run_err(&[
        "train",
        "--features",
        s(&features),
        "--split",
        "by-batch",
        "--out",
        s(&dir.path().join("m")),
    ]);
    assert!(err.contains("labels file"), "{err}");
    let config = dir.path().join("train.toml");
    std::fs::write(&config, "[lightgbm]\nnum_leafs = 8\n").unwrap();
    let err = run_err(&[
        "train",
        "--features",
        s(&features),
        "--config",
        s(&config),
        "--out",
        s(&dir.path().join("m")),
    ]);
    assert!(err.contains("train.toml") && err.contains("num_leafs"), "{err}");
    // A misspelt or measured input to exclude is refused, not ignored.
    std::fs::write(&config, "[model]\nexclude = [\"p06_gap_ns\", \"p06_flops\"]\n").unwrap();
    let err = run_err(&[
        "train",
        "--features",
        s(&features),
        "--config",
        s(&config),
        "--out",
        s(&dir.path().join("m")),
    ]);
    assert!(err.contains("p06_gap_ns") && err.contains("not inputs"), "{err}");
}

#[test]
fn shared_traces_by_model_split_and_cross_gpu_prediction() {
    let Some(traces) = shared("traces") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (lake, features, model) = (
        dir.path().join("lake"),
        dir.path().join("features"),
        dir.path().join("model"),
    );
    let mut ingest = vec!["ingest".to_string()];
    for sub in [
        "AMD-AGI__TraceLens",
        "facebookresearch__HolisticTraceAnalysis",
        "facebookresearch__param",
        "pytorch__kineto",
    ] {
        ingest.push(traces.join(sub).to_string_lossy().into_owned());
    }
    ingest.extend(["--lake".into(), lake.to_string_lossy().into_owned()]);
    run_ok(&ingest.iter().map(String::as_str).collect::<Vec<_>>());
    run_ok(&["features", "--lake", s(&lake), "--out", s(&features)]);
    let labels = fixtures().join("labels/shared-traces.csv");
    run_ok(&[
        "train",
        "--features",
        s(&features),
        "--labels",
        s(&labels),
        "--split",
        "by-model",
        "--num-iterations",
        "40",
        "--out",
        s(&model),
    ]);
    let metrics = json(&model.join("metrics.json"));
    let evaluation = &metrics["evaluation"];
    assert_eq!(
        evaluation["steps"].as_array().unwrap().len(),
        79,
        "every step of the 13 traces with windows"
    );
    let groups: Vec<&str> = evaluation["by_model"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["model"].as_str().unwrap())
        .collect();
    for family in ["resnet", "dlrm", "linear"] {
        assert!(groups.contains(&family), "{groups:?}");
    }
    // A held-out family is never in its own training set: resnet's two traces share a fold.
    let folds: HashSet<&str> = evaluation["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["model"] == "resnet")
        .map(|s| s["fold"].as_str().unwrap())
        .collect();
    assert_eq!(folds, HashSet::from(["model=resnet"]));

    // ResNet-50 (V100, batch 32) priced on an H100 at batch 64 on 1 and 8 GPUs.
    let resnet = traces.join(SHARED_RESNET50);
    let out = dir.path().join("pred");
    run_ok(&[
        "predict",
        "--model",
        s(&model),
        "--trace",
        s(&resnet),
        "--labels",
        s(&labels),
        "--gpu",
        "H100",
        "--batch-size",
        "64",
        "--gpus",
        "1,8",
        "--out",
        s(&out),
    ]);
    let rows = csv_rows(&out.join("traces.csv"));
    assert_eq!(rows.len(), 2);
    // The labels file gave the recorded batch (32) and the model name.
    assert_eq!(
        (rows[0]["model"].as_str(), rows[0]["batch_size"].as_str()),
        ("resnet", "64")
    );
    let table = csv_rows(&out.join("throughput.csv"));
    assert!(
        table
            .iter()
            .any(|r| r["job_type"] == "resnet" && r["batch_size"] == "512" && r["num_gpus"] == "8")
    );
    // Gradient bytes read off the optimizer: ResNet-50 has 25,557,032 parameters (102.2 MB in FP32).
    let gradient = f(&rows[0], "gradient_bytes");
    assert!((gradient - 102_228_128.0).abs() < 1e3, "gradient bytes {gradient}");
    assert!(f(&rows[1], "allreduce_ms") > 0.0 && f(&rows[1], "iteration_ms") >= f(&rows[0], "iteration_ms"));

    // What-ifs are physical: the compute-heavy ResNet-50 step is faster on
    // each newer GPU, and doubling its batch costs 1.3x to 2.1x.
    let one_gpu_ms = |gpu: &str, batch: &str| {
        let out = dir.path().join(format!("pred-{gpu}-{batch}").replace(' ', "_"));
        run_ok(&[
            "predict",
            "--model",
            s(&model),
            "--trace",
            s(&resnet),
            "--labels",
            s(&labels),
            "--gpu",
            gpu,
            "--batch-size",
            batch,
            "--out",
            s(&out),
        ]);
        f(&csv_rows(&out.join("traces.csv"))[0], "iteration_ms")
    };
    let times: Vec<(&str, f64)> = ["T4", "V100", "A100 80GB", "H100"]
        .into_iter()
        .map(|g| (g, one_gpu_ms(g, "32")))
        .collect();
    for pair in times.windows(2) {
        assert!(
            pair[0].1 > pair[1].1,
            "{} should be slower than {}: {times:?}",
            pair[0].0,
            pair[1].0
        );
    }
    // Its steps fetch their batch on the host (num_workers=0, about 70 of
    // 175 ms): that time follows the batch too, so doubling costs as much on
    // an H100, where the kernels are short, as on the V100.
    for gpu in ["V100", "H100"] {
        let doubled = one_gpu_ms(gpu, "64") / one_gpu_ms(gpu, "32");
        assert!((1.3..=2.1).contains(&doubled), "{gpu}: batch 32 -> 64 costs {doubled}x");
    }
}

#[test]
fn scaling_model_fits_the_measured_a100_curves() {
    let Some(throughputs) = shared("cluster/throughputs") else {
        return;
    };
    let stdout = run_ok(&[
        "scaling",
        "--measured",
        s(&throughputs.join("A100")),
        "--gpu",
        "a100-sxm4-40gb",
    ]);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Mean fit MRE"))
        .expect("a summary line");
    let mre: f64 = line
        .split_whitespace()
        .nth(3)
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(mre < 10.0, "{line}");
    assert!(stdout.contains("| resnet50 | 64 |"), "{stdout}");
}

#[test]
fn predict_reads_the_collector_manifest_beside_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let features = fixture_features(dir.path());
    let model = train_fixture(dir.path(), &features);
    // A collector run: the trace and its manifest side by side.
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let trace = run.join("mlp__bs16__fp32.pt.trace.json.gz");
    std::fs::copy(fixtures().join("traces/synthetic-2024-single.pt.trace.json.gz"), &trace).unwrap();
    let manifest = serde_json::json!({
        "format": "tracecast-collector-manifest", "format_version": 1,
        "trace_file": "mlp__bs16__fp32.pt.trace.json.gz",
        "run": {"model_name": "mlp", "batch_size": 16, "optimizer": "sgd", "precision": "fp32", "extra": {}},
    });
    std::fs::write(run.join("mlp__bs16__fp32.manifest.json"), manifest.to_string()).unwrap();
    let out = dir.path().join("pred");
    run_ok(&[
        "predict",
        "--model",
        s(&model),
        "--trace",
        s(&trace),
        "--batch-size",
        "32",
        "--out",
        s(&out),
    ]);
    let rows = csv_rows(&out.join("traces.csv"));
    assert_eq!(
        (rows[0]["model"].as_str(), rows[0]["batch_size"].as_str()),
        ("mlp", "32")
    );
    assert!(
        csv_rows(&out.join("throughput.csv"))
            .iter()
            .all(|r| r["job_type"] == "mlp")
    );

    // And for training: a lake's labels from the manifests beside its traces.
    let lake = dir.path().join("run-lake");
    run_ok(&["ingest", s(&run), "--lake", s(&lake)]);
    let labels = dir.path().join("labels.csv");
    let stdout = run_ok(&["labels", "--lake", s(&lake), "--out", s(&labels)]);
    assert!(stdout.contains("labelled 1 of 1 traces"), "{stdout}");
    let rows = csv_rows(&labels);
    assert_eq!(
        (rows[0]["model"].as_str(), rows[0]["batch_size"].as_str()),
        ("mlp", "16")
    );
}

/// ResNet-50 steps traced on an H100 (PyTorch 2.11, CUDA 13: the newest
/// profiler field set; bench/measured/h100-sxm5): ingested whole, priced as
/// recorded from their measured windows, and moved physically: slower on a
/// V100, and between 1.3x and 2.1x the time at twice the batch.
#[test]
fn h100_traces_price_as_recorded_and_move_physically() {
    let kineto = workspace_root().join("bench/measured/h100-sxm5/kineto");
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let out = run_ok(&["ingest", s(&kineto), "--lake", s(&lake)]);
    assert!(out.contains("ingested 4") && out.contains("failed 0"), "{out}");
    let trace = kineto.join("resnet50-b32-fp32.pt.trace.json.gz");
    let one_gpu_ms = |name: &str, extra: &[&str]| {
        let pred = dir.path().join(name);
        let mut args = vec!["predict", "--trace", s(&trace), "--trace-batch-size", "32"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", s(&pred)]);
        run_ok(&args);
        let rows = csv_rows(&pred.join("traces.csv"));
        (f(&rows[0], "iteration_ms"), rows[0]["recorded_gpu"].clone())
    };
    let (recorded, gpu) = one_gpu_ms("same", &[]);
    assert_eq!(gpu, "NVIDIA H100 80GB HBM3");
    // Its steps' median: 38.5 ms, its kernels' time, which outlasted the
    // CPU's step in two of its three steps (40.2 ms measured without the
    // profiler). The first step's span also holds 164 kernels launched in
    // the profiler's warm-up; they are not its work.
    assert!((recorded - 38.50).abs() < 0.1, "{recorded}");
    let (v100, _) = one_gpu_ms("v100", &["--gpu", "v100-sxm2-32gb"]);
    assert!(v100 > recorded * 1.2, "V100 {v100} ms vs H100 {recorded} ms");
    let (double, _) = one_gpu_ms("b64", &["--batch-size", "64"]);
    let ratio = double / recorded;
    assert!((1.3..=2.1).contains(&ratio), "batch 64 / batch 32 = {ratio}");
}

/// `--idle none` drops the idle gaps between a step's kernels and keeps
/// its kernels' time: the shared V100 ResNet-50 trace has 17.9 ms of them a
/// step, and priced on an H100 its GPU span falls to its kernels' time.
#[test]
fn idle_none_prices_a_step_as_its_kernels_alone() {
    let Some(traces) = shared("traces") else {
        return;
    };
    let trace = traces.join(SHARED_RESNET50);
    let dir = tempfile::tempdir().unwrap();
    let steps = |idle: &str| {
        let out = dir.path().join(idle);
        let run = tracecast(&[
            "predict",
            "--trace",
            s(&trace),
            "--gpu",
            "H100",
            "--idle",
            idle,
            "--out",
            s(&out),
        ]);
        let (_, stderr) = text(&run);
        assert!(run.status.success(), "{stderr}");
        // The what-if says how much of the priced GPU work is kept idle time.
        assert_eq!(
            stderr.contains("idle gaps between kernels, kept as recorded"),
            idle == "recorded",
            "{stderr}"
        );
        csv_rows(&out.join("steps.csv"))
    };
    let (recorded, fed) = (steps("recorded"), steps("none"));
    assert_eq!(recorded.len(), fed.len());
    for (r, n) in recorded.iter().zip(&fed) {
        let busy = f(r, "predicted_busy_ns");
        assert!(
            busy < f(r, "predicted_gpu_span_ns"),
            "this trace idles between kernels: {r:?}"
        );
        assert_eq!(f(n, "predicted_busy_ns"), busy, "the kernels are priced alike");
        assert_eq!(f(n, "predicted_gpu_span_ns"), busy, "{n:?}");
        assert!(f(n, "predicted_ns") < f(r, "predicted_ns"), "{n:?} against {r:?}");
    }
}

/// The shared ResNet-50 trace (V100, FP32), priced on each newer GPU by the
/// built-in models under PyTorch's TF32 defaults, never gets slower going
/// up a generation: T4 > L4 > V100 > RTX A6000 > L40S (the A6000's Ada
/// successor) > A100 > H100 > H200 > B200.
/// The L4's ridge point (about 100 FLOP per byte) is far above any GPU the
/// op model trained on; before the ridge guard it came out slower than the
/// T4. In strict float32 the A6000 came out slower than the V100.
#[test]
fn newer_gpus_price_the_shared_resnet50_trace_faster() {
    let Some(traces) = shared("traces") else {
        return;
    };
    let trace = traces.join(SHARED_RESNET50);
    let dir = tempfile::tempdir().unwrap();
    let gpus = [
        "T4",
        "L4",
        "V100",
        "RTX A6000",
        "L40S",
        "A100 SXM4 80GB",
        "H100",
        "H200",
        "B200",
    ];
    let times: Vec<f64> = gpus
        .iter()
        .enumerate()
        .map(|(k, gpu)| predicted_iteration_ms(&dir.path().join(k.to_string()), &["--trace", s(&trace), "--gpu", gpu]))
        .collect();
    for (pair, t) in gpus.windows(2).zip(times.windows(2)) {
        assert!(
            t[0] > t[1],
            "{} {} ms is not slower than {} {} ms",
            pair[0],
            t[0],
            pair[1],
            t[1]
        );
    }
}

/// `--tf32`: PyTorch's defaults put float32 convolutions on TF32 tensor
/// cores where a GPU has them (the H100), so strict float32 prices the
/// shared ResNet-50 trace slower there, and changes nothing on the V100,
/// which has none (nor on the trace as recorded).
#[test]
fn tf32_defaults_speed_convolutions_only_on_gpus_with_tf32() {
    let Some(traces) = shared("traces") else {
        return;
    };
    let trace = traces.join(SHARED_RESNET50);
    let dir = tempfile::tempdir().unwrap();
    let price = |gpu: &str, tf32: &str| {
        let out = dir.path().join(format!("{gpu}-{tf32}"));
        predicted_iteration_ms(&out, &["--trace", s(&trace), "--gpu", gpu, "--tf32", tf32])
    };
    let (h100_default, h100_strict) = (price("H100", "pytorch"), price("H100", "off"));
    assert!(
        h100_default < h100_strict * 0.95,
        "H100: {h100_default} ms with TF32, {h100_strict} without"
    );
    assert_eq!(price("V100", "pytorch"), price("V100", "off"));
}

/// `--tf32 auto` reads the recorded run's switches off its kernel names: the
/// H100 profiles recorded in strict float32 and with TF32 (bench/measured)
/// price on an A100 as `off` and as `on` respectively, and the two agree
/// when both are asked in strict float32.
#[test]
fn tf32_auto_reads_the_recorded_runs_switches_from_its_kernels() {
    let kineto = workspace_root().join("bench/measured/h100-sxm5/kineto");
    let dir = tempfile::tempdir().unwrap();
    let price = |precision: &str, tf32: &str| {
        let out = dir.path().join(format!("{precision}-{tf32}"));
        let trace = kineto.join(format!("resnet50-b32-{precision}.pt.trace.json.gz"));
        predicted_iteration_ms(
            &out,
            &[
                "--trace",
                s(&trace),
                "--trace-batch-size",
                "32",
                "--gpu",
                "A100 80GB",
                "--tf32",
                tf32,
            ],
        )
    };
    let (strict_auto, strict_off, strict_on) = (price("fp32", "auto"), price("fp32", "off"), price("fp32", "on"));
    assert_eq!(strict_auto, strict_off);
    assert!(
        strict_on < strict_off * 0.8,
        "TF32 asked of a strict trace: {strict_on} ms vs {strict_off} ms"
    );
    // The note says which switches it read and priced with.
    let run = tracecast(&[
        "predict",
        "--trace",
        s(&kineto.join("resnet50-b32-tf32.pt.trace.json.gz")),
        "--trace-batch-size",
        "32",
        "--gpu",
        "A100 80GB",
        "--out",
        s(&dir.path().join("noted")),
    ]);
    let (stdout, stderr) = text(&run);
    assert!(
        format!("{stdout}{stderr}").contains("TF32 as recorded: on, as priced: on"),
        "{stdout}\n{stderr}"
    );
    let (tf32_auto, tf32_on, tf32_off) = (price("tf32", "auto"), price("tf32", "on"), price("tf32", "off"));
    assert_eq!(tf32_auto, tf32_on);
    // Within 10%, not closer: the TF32 profile's kernels priced back in
    // float32 come out 11% under the float32 profile's own on the H100
    // itself (34.4 against 38.5 ms a step, `bench/whatif_measured.sh`'s
    // traces), which the TF32 profile's idle gaps hid until the profiler's
    // own host time came out of the steps.
    assert!(
        (tf32_off / strict_off - 1.0).abs() < 0.10,
        "both profiles in strict float32 on the A100: {tf32_off} ms and {strict_off} ms"
    );
}

/// A float32 GPT-2 small step (bench/corpus, H100, batch 32) priced under
/// autocast in bfloat16 comes within 15% of the bfloat16 step measured
/// there without the profiler (244.6 ms): its residual stream, norms and
/// GELU's `pow` stay float32, the casts are priced, and its LM head (a
/// vocabulary of 50257, the feature table's `product_alignment` 1) runs
/// on cuBLAS's slower unaligned kernels. Every float32 kernel in 16 bits
/// with no casts, it had been 38% fast; with the LM head priced as
/// aligned, 17.5% fast.
#[test]
fn a_bfloat16_what_if_prices_a_transformers_float32_stream() {
    let dir = tempfile::tempdir().unwrap();
    let trace = corpus_trace("gpt2_small__bs32__fp32");
    let measured = corpus_step_ms("gpt2_small__bs32__bf16");
    let args = ["--trace", s(&trace), "--trace-batch-size", "32", "--precision", "bf16"];
    let priced = predicted_iteration_ms(&dir.path().join("bf16"), &args);
    assert!(
        (priced / measured - 1.0).abs() < 0.15,
        "priced {priced:.1} ms, measured {measured:.1} ms"
    );
}

/// Autocast's casts, as `predict`'s note gives them, against the cast
/// kernels the bfloat16 runs recorded (`aten::copy_` under
/// `aten::_to_copy`, a step's mean over the corpus lake): GPT-2 small at
/// batch 32, 30.7 ms (its activations, both ways, its LM head's logits to
/// float32 for the loss, and every cast's backward); ResNet-50 at batch
/// 64, 0.37 ms (its weights, each cast about a launch's time). Priced by
/// the op model, which learned isolated operators with their harness's
/// cost of each call, and without the backward casts or the logits, they
/// had come to 18.2 ms and 0.94 ms.
#[test]
fn a_bfloat16_what_ifs_casts_cost_what_the_runs_casts_took() {
    let dir = tempfile::tempdir().unwrap();
    for (config, batch, recorded_ms) in [
        ("gpt2_small__bs32__fp32", "32", 30.7),
        ("resnet50__bs64__fp32", "64", 0.37),
    ] {
        let out = dir.path().join(config);
        let trace = corpus_trace(config);
        let run = tracecast(&[
            "predict",
            "--trace",
            s(&trace),
            "--trace-batch-size",
            batch,
            "--precision",
            "bf16",
            "--out",
            s(&out),
        ]);
        let (stdout, stderr) = text(&run);
        let casts: f64 = format!("{stdout}{stderr}")
            .split("autocast's casts add ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("no casts in the note:\n{stdout}\n{stderr}"));
        let ratio = casts / recorded_ms;
        assert!(
            ratio > 0.8 && ratio < 1.25,
            "{config}: {casts} ms of casts a step, {recorded_ms} recorded"
        );
    }
}

/// A doubled batch on the recorded machine fills the waits its host left
/// between kernels instead of adding to them (`predict/src/replay.rs`):
/// T5-small in bfloat16 at batch 16 is host-bound on an H100, and at
/// batch 32 its longer kernels run in those gaps; that step measured 67.4
/// ms without the profiler. With the gaps kept as recorded it was priced
/// 83.3 ms.
#[test]
fn a_doubled_batch_fills_the_waits_its_host_left() {
    let dir = tempfile::tempdir().unwrap();
    let mean_step = |extra: &[&str]| {
        let rows = corpus_steps(dir.path(), "t5_small__bs16__bf16", "16", extra);
        let ms = |column: &str| steps_mean(&rows, column) / 1e6;
        (ms("predicted_gpu_span_ns"), ms("predicted_busy_ns"), ms("predicted_ns"))
    };
    let (span, busy, _) = mean_step(&[]);
    let (doubled_span, doubled_busy, doubled_step) = mean_step(&["--batch-size", "32"]);
    let grown = doubled_busy - busy;
    assert!(grown > 0.3 * busy, "{busy} -> {doubled_busy} ms of kernels");
    assert!(
        doubled_span < span + 0.5 * grown,
        "gaps kept: span {span} -> {doubled_span} ms for {grown} ms more kernels"
    );
    let measured = corpus_step_ms("t5_small__bs32__bf16");
    assert!(
        (doubled_step / measured - 1.0).abs() < 0.1,
        "{doubled_step} ms against {measured} measured"
    );
}

/// A what-if on the recorded GPU keeps its host: DenseNet-121 at batch 16
/// is host-bound on an H100 (48.9 ms a step in float32 for 27.3 ms of
/// kernels), and in bfloat16 its kernels shrink but its host does not
/// (70.0 ms measured), so the step is priced at the host's own time. A
/// slower GPU keeps the whole floor, a faster one (an H200) the floor
/// times its speed-up, so that no GPU is priced out of order; a host that
/// keeps ahead (`--idle none`) sets none.
#[test]
fn a_what_if_on_the_recorded_gpu_keeps_its_hosts_pace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = corpus_trace("densenet121__bs16__fp32");
    let measured = corpus_step_ms("densenet121__bs16__bf16");
    let steps = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            "predict",
            "--trace",
            s(&trace),
            "--trace-batch-size",
            "16",
            "--precision",
            "bf16",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", s(&out)]);
        let run = tracecast(&args);
        let (stdout, stderr) = text(&run);
        assert!(run.status.success(), "{stdout}{stderr}");
        (csv_rows(&out.join("steps.csv")), stderr)
    };
    for (name, extra) in [("recorded", &[][..]), ("h100", &["--gpu", "H100"][..])] {
        let (rows, stderr) = steps(name, extra);
        assert!(!rows.is_empty());
        for r in &rows {
            let (priced, host) = (f(r, "predicted_ns"), f(r, "host_ns"));
            assert!(host > f(r, "predicted_busy_ns"), "host-bound: {r:?}");
            assert_eq!(priced, host, "{r:?}");
            assert!(
                (priced / 1e6 / measured - 1.0).abs() < 0.25,
                "{priced} ns against {measured} ms"
            );
        }
        assert!(stderr.contains("priced at their host's own time"), "{stderr}");
    }
    let (fed, stderr) = steps("fed", &["--idle", "none"]);
    assert!(fed.iter().all(|r| r["host_ns"].is_empty()), "{fed:?}");
    assert!(!stderr.contains("priced at their host's own time"), "{stderr}");
    let host_ns = |rows: &[HashMap<String, String>]| rows.iter().map(|r| f(r, "host_ns")).sum::<f64>();
    let (on_h100, _) = steps("h100-sum", &[]);
    let (on_a100, on_h200) = (
        steps("a100", &["--gpu", "A100-80GB"]).0,
        steps("h200", &["--gpu", "H200"]).0,
    );
    assert_eq!(
        host_ns(&on_a100),
        host_ns(&on_h100),
        "a slower GPU keeps the whole floor"
    );
    let scaled = host_ns(&on_h200) / host_ns(&on_h100);
    assert!(
        scaled > 0.5 && scaled < 1.0,
        "the H200's floor is the H100's times {scaled}"
    );

    // ViT-B/16 at batch 8 in bfloat16: host-bound on the H100. The A100 is
    // slower in every figure, the H200 faster in one: their prices stay in
    // that order (without the floor on the A100 it came out faster).
    let vit = corpus_trace("vit_b_16__bs8__fp32");
    let iteration_ms = |gpu: &str| {
        let args = [
            "--trace",
            s(&vit),
            "--trace-batch-size",
            "8",
            "--precision",
            "bf16",
            "--gpu",
            gpu,
        ];
        predicted_iteration_ms(&dir.path().join(format!("vit-{gpu}")), &args)
    };
    let (h200, h100, a100) = (iteration_ms("H200"), iteration_ms("H100"), iteration_ms("A100-80GB"));
    assert!(
        h200 <= h100 && h100 <= a100,
        "H200 {h200} ms, H100 {h100} ms, A100 {a100} ms"
    );
}

/// A batch what-if's added work gains at most up to the utilisation the op
/// model gives that work at its largest, and a kernel's time beyond the op
/// model's price grows in proportion: DenseNet-121's bfloat16 kernels at
/// twice the batch come out near the larger run's own kernels (0.92 of
/// them; 0.82 when the added work could run at the roofline and the
/// model's gains applied to the whole kernel).
#[test]
fn doubling_the_batch_prices_kernels_near_the_larger_runs_own() {
    let dir = tempfile::tempdir().unwrap();
    assert_kernels_within(
        dir.path(),
        ("densenet121__bs16__bf16", "16", &["--batch-size", "32"]),
        ("densenet121__bs32__bf16", "32"),
        0.85,
        1.1,
    );
}

/// A bfloat16 what-if of a float32 trace whose convolutions ran cuDNN's
/// FFT and Winograd algorithms: every kernel a convolution launched is
/// priced as that convolution on tensor cores (the TF32 speed-up times
/// two on an H100, plus the layout transposes), so VGG-16's kernels at
/// batch 16 come out near the bfloat16 run's own (0.98 of them; 1.59 when
/// the FFT kernels gained only their halved bytes and the convolutions
/// the 0.43 exponent).
#[test]
fn a_bfloat16_what_if_prices_a_float32_convolutions_every_kernel_on_tensor_cores() {
    let dir = tempfile::tempdir().unwrap();
    assert_kernels_within(
        dir.path(),
        ("vgg16__bs16__fp32", "16", &["--precision", "bf16"]),
        ("vgg16__bs16__bf16", "16"),
        0.85,
        1.15,
    );
}

/// Autocast's casts are CPU operators too: a `--precision` what-if of a
/// host-bound step adds them to its host's floor, at the step's own cost
/// per operator; a step its kernels paced keeps its floor.
#[test]
fn autocasts_casts_cost_a_host_bound_host_its_pace() {
    let dir = tempfile::tempdir().unwrap();
    let host_ns = |config: &str, batch: &str, extra: &[&str]| -> f64 {
        corpus_step_mean(dir.path(), config, batch, extra, "host_ns")
    };
    // DenseNet-121 at batch 16: host-bound in float32 (48.9 ms against
    // about 27 of kernels), 70.0 ms in bfloat16.
    let bf16 = ["--precision", "bf16"];
    let added = host_ns("densenet121__bs16__fp32", "16", &bf16) / host_ns("densenet121__bs16__fp32", "16", &[]);
    assert!(added > 1.1 && added < 2.0, "the casts add {added}x to the host");
    // ConvNeXt-T at batch 64: its kernels paced the float32 step.
    let (kept, recorded) = (
        host_ns("convnext_tiny__bs64__fp32", "64", &bf16),
        host_ns("convnext_tiny__bs64__fp32", "64", &[]),
    );
    assert_eq!(kept, recorded);
}

/// EfficientNet-B0's batch norms and depthwise convolutions are PyTorch's
/// own kernels in bfloat16: the depthwise ones, in both passes, no faster
/// than in float32, the batch norms slower than cuDNN's float32 ones. Its
/// bfloat16 step at batch 128 measured 69.4 ms on an H100; the float32
/// trace priced with every kernel's bytes halved gave 38.2 ms, with the
/// batch norms and forward depthwise kernels at their float32 time 57.2 ms
/// (0.84 of the bfloat16 run's own kernel time), and with the depthwise
/// backward kernels too (found by their forward's input) 68.5 ms.
#[test]
fn bfloat16_batch_norm_is_slower_and_depthwise_convolutions_gain_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let trace = corpus_trace("efficientnet_b0__bs128__fp32");
    let measured = corpus_step_ms("efficientnet_b0__bs128__bf16");
    let args = ["--trace", s(&trace), "--trace-batch-size", "128", "--precision", "bf16"];
    let priced = predicted_iteration_ms(&dir.path().join("bf16"), &args);
    assert!(
        (priced / measured - 1.0).abs() < 0.1,
        "priced {priced:.1} ms, measured {measured:.1} ms"
    );
    assert_kernels_within(
        dir.path(),
        ("efficientnet_b0__bs128__fp32", "128", &["--precision", "bf16"]),
        ("efficientnet_b0__bs128__bf16", "128"),
        0.9,
        1.1,
    );
    // The note says how much of the kernel time those ratios priced.
    let noted = dir.path().join("noted");
    let run = tracecast(&[&["predict"], &args[..], &["--out", s(&noted)]].concat());
    let (stdout, stderr) = text(&run);
    let note = format!("{stdout}{stderr}");
    let share: f64 = note
        .split("% at their float32 time times")
        .next()
        .and_then(|before| before.rsplit(' ').next())
        .and_then(|pct| pct.parse().ok())
        .unwrap_or_else(|| panic!("no measured-ratio share in the note:\n{note}"));
    assert!(share > 30.0 && share < 90.0, "{share}% at measured ratios");
}

/// `--precision bf16` asks for the recorded float32 run in mixed precision:
/// on the GPU it was recorded on (an H100), and moved to an A100, it is
/// faster than in float32, by more on the H100 than a TF32 run gains
/// there, and the note says how much of the kernel time went to 16 bits.
#[test]
fn mixed_precision_what_if_speeds_a_float32_run() {
    let kineto = workspace_root().join("bench/measured/h100-sxm5/kineto");
    let dir = tempfile::tempdir().unwrap();
    let trace = kineto.join("resnet50-b32-fp32.pt.trace.json.gz");
    let price = |name: &str, args: &[&str]| {
        let mut all = vec!["--trace", s(&trace), "--trace-batch-size", "32", "--idle", "none"];
        all.extend_from_slice(args);
        predicted_iteration_ms(&dir.path().join(name), &all)
    };
    let (float32, tf32, bf16) = (
        price("f32", &["--tf32", "off"]),
        price("tf32", &["--tf32", "on"]),
        price("bf16", &["--precision", "bf16"]),
    );
    assert!(
        bf16 < tf32 && tf32 < float32,
        "H100: bf16 {bf16} ms, TF32 {tf32} ms, float32 {float32} ms"
    );
    let (a100_float32, a100_bf16) = (
        price("a100-f32", &["--gpu", "A100 80GB", "--tf32", "off"]),
        price("a100-bf16", &["--gpu", "A100 80GB", "--precision", "bf16"]),
    );
    assert!(
        a100_bf16 < a100_float32 * 0.6,
        "A100: bf16 {a100_bf16} ms, float32 {a100_float32} ms"
    );
    let run = tracecast(&[
        "predict",
        "--trace",
        s(&trace),
        "--trace-batch-size",
        "32",
        "--precision",
        "fp16",
        "--out",
        s(&dir.path().join("noted")),
    ]);
    let (stdout, stderr) = text(&run);
    assert!(
        format!("{stdout}{stderr}").contains("float32 kernels, priced in 16 bits as autocast runs them"),
        "{stdout}\n{stderr}"
    );
}

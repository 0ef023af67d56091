//! `tracecast ops` and `--gpu` lookup: the op model on NeuSight's and ETS's
//! public data (../shared/public), and spec sheets as GPUs.

mod common;

use std::path::{Path, PathBuf};

use common::*;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `tracecast ops bench --train TRAIN --eval EVAL --out OUT`, then `more`.
fn ops_bench(train: &Path, eval: &Path, out: &Path, more: &[&str]) -> std::process::Output {
    let mut args = vec!["ops", "bench", "--train", s(train), "--eval", s(eval), "--out", s(out)];
    args.extend_from_slice(more);
    tracecast(&args)
}

/// The fields of the lines of `csv` that start with `prefix`.
fn rows_starting<'a>(csv: &'a str, prefix: &str) -> Vec<Vec<&'a str>> {
    csv.lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| l.split(',').collect())
        .collect()
}

/// Leave one GPU out on the real data: the T4's labels and per-op rows are
/// predicted from its spec sheet by a model that never saw a T4.
#[test]
fn bench_holds_a_gpu_out_and_predicts_it_from_its_spec_sheet() {
    let Some(public) = shared("public") else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = ops_bench(
        &public,
        &public,
        &out,
        &[
            "--holdout",
            "Tesla_T4,T4CPUALL",
            "--only",
            "Tesla_T4,T4CPUALL",
            "--num-iterations",
            "120",
        ],
    );
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    let e2e = std::fs::read_to_string(out.join("neusight_e2e.csv")).unwrap();
    assert_eq!(
        e2e.lines().next().unwrap(),
        "gpu,model,mode,seqlen,batch,option,predicted_ms"
    );
    assert_eq!(e2e.lines().count(), 1 + 5, "the T4's five labels:\n{e2e}");
    // Each within 25% of the measured forward latency: a model that
    // memorised the T4 would be near 0; a broken one far off.
    let mut worst: f64 = 0.0;
    for line in e2e.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let label = public.join(format!(
            "neusight/label/{}/{}-{}-{}-{}.json",
            f[0], f[1], f[2], f[3], f[4]
        ));
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(label).unwrap()).unwrap();
        let measured = json["fw_latency"].as_f64().unwrap();
        let predicted: f64 = f[6].parse().unwrap();
        worst = worst.max((predicted - measured).abs() / measured);
    }
    assert!(worst < 0.25, "worst T4 label error {worst}");
    // Per kind and pass, the predictions add up to each label's, beside the
    // latencies NeuSight measured for the same nodes on the T4.
    let kinds = std::fs::read_to_string(out.join("neusight_e2e_by_kind.csv")).unwrap();
    assert_eq!(
        kinds.lines().next().unwrap(),
        "gpu,model,mode,seqlen,batch,kind,pass,nodes,predicted_ms,measured_ms"
    );
    for line in e2e.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let label = f[..5].join(",");
        let rows = rows_starting(&kinds, &format!("{label},"));
        assert!(
            rows.iter().any(|r| r[5] == "gemm" && r[6] == "forward"),
            "{label}:\n{kinds}"
        );
        assert!(
            rows.iter().all(|r| r[9].parse::<f64>().unwrap() > 0.0),
            "{label}:\n{kinds}"
        );
        let summed: f64 = rows.iter().map(|r| r[8].parse::<f64>().unwrap()).sum();
        let predicted: f64 = f[6].parse().unwrap();
        assert!(
            (summed - predicted).abs() < 1e-3 * predicted,
            "{label}: kinds add up to {summed} ms, the label to {predicted}"
        );
    }
    let ets = std::fs::read_to_string(out.join("ets.csv")).unwrap();
    assert_eq!(ets.lines().filter(|l| l.starts_with("T4CPUALL,")).count(), 4, "{ets}");
    // Per kind and pass, each file's kernels: measured where ETS recorded
    // them, and priced at no more than the label, which adds the host's gaps.
    let ets_kinds = std::fs::read_to_string(out.join("ets_by_kind.csv")).unwrap();
    assert_eq!(
        ets_kinds.lines().next().unwrap(),
        "gpu_folder,file,kind,pass,rows,model_ms,priced_ms,measured_ms"
    );
    for line in ets.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let rows = rows_starting(&ets_kinds, &format!("{},{},", f[0], f[1]));
        assert!(
            rows.iter()
                .any(|r| r[2] == "conv" && r[3] == "backward" && r[7].parse::<f64>().unwrap() > 0.0),
            "{line}:\n{ets_kinds}"
        );
        assert!(
            rows.iter().all(|r| r[7].is_empty() == (r[3] == "backward_unrecorded")),
            "{ets_kinds}"
        );
        let priced: f64 = rows.iter().map(|r| r[6].parse::<f64>().unwrap()).sum();
        let label: f64 = f[4].parse().unwrap();
        assert!(
            priced > 0.3 * label && priced <= label * (1.0 + 1e-9),
            "{line}: kernels {priced} ms"
        );
    }
    let perop = std::fs::read_to_string(out.join("neusight_perop.csv")).unwrap();
    let rows: Vec<&str> = perop.lines().skip(1).collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|l| l.contains(",Tesla_T4,")),
        "{perop}"
    );
    assert!(
        stdout.contains("End-to-end error")
            && stdout.contains("Where each ETS file's kernel time goes")
            && stdout.contains("prediction speed"),
        "{stdout}"
    );
}

/// A NeuSight spec sheet of a GPU no built-in profile describes, in `dir`.
fn rtx_6000_ada_sheet(dir: &Path) -> std::path::PathBuf {
    let sheet = dir.join("NVIDIA_RTX_6000_Ada_Generation.json");
    std::fs::write(
        &sheet,
        r#"{"Device":"NVIDIA RTX 6000 Ada Generation","Dev_Mem":48,"Mem_Bw":960,"Num_Sm":142,"Core_Per_SM":128,"Freq":2505,"SingleFLOPs":91062,"L2Cache":96}"#,
    )
    .unwrap();
    sheet
}

#[test]
fn gpu_short_names_and_spec_sheets() {
    let dir = tempfile::tempdir().unwrap();
    let sheet = rtx_6000_ada_sheet(dir.path());
    // An ambiguous short name lists the candidates.
    let run = tracecast(&["scaling", "--measured", s(dir.path()), "--gpu", "A100"]);
    let (_, stderr) = text(&run);
    assert!(!run.status.success());
    assert!(
        stderr.contains("ambiguous") && stderr.contains("A100 SXM4 40GB") && stderr.contains("A100 SXM4 80GB"),
        "{stderr}"
    );
    // A spec sheet is a GPU: the scaling verb gets past the lookup and
    // stops at what the sheet lacks (a GPU link), naming the GPU.
    let run = tracecast(&["scaling", "--measured", s(dir.path()), "--gpu", s(&sheet)]);
    let (_, stderr) = text(&run);
    assert!(stderr.contains("NVIDIA RTX 6000 Ada Generation"), "{stderr}");
}

/// The public measurements as SQL tables: ETS's labels add up from its rows
/// exactly as its index says, and nested shapes print as JSON in CSV.
#[test]
fn sql_queries_the_public_measurements() {
    let Some(public) = shared("public") else { return };
    let run = tracecast(&[
        "sql",
        "--public",
        s(&public),
        "SELECT gpu_folder, batch, h, round(sum(wall_ns) / 1e6, 6) AS label_ms FROM ets_ops \
         GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        "--format",
        "csv",
    ]);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    let index = std::fs::read_to_string(public.join("ets/datasets/index.csv")).unwrap();
    let mut expected: Vec<String> = index
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let ms: f64 = f[12].parse().unwrap();
            format!("{},{},{},{}", f[0], f[4], f[5], (ms * 1e6).round() / 1e6)
        })
        .collect();
    expected.sort();
    let mut got: Vec<String> = stdout.lines().skip(1).map(String::from).collect();
    got.sort();
    assert_eq!(got, expected);

    let run = tracecast(&[
        "sql",
        "--public",
        s(&public),
        "SELECT count(*) AS labels, sum(CASE WHEN has_graph THEN 1 ELSE 0 END) AS graphs FROM neusight_labels",
        "--format",
        "csv",
    ]);
    let (stdout, _) = text(&run);
    assert_eq!(stdout.lines().nth(1), Some("100,85"), "{stdout}");
    let run = tracecast(&[
        "sql",
        "--public",
        s(&public),
        "SELECT input_shapes, output_shape FROM neusight_graph_nodes \
         WHERE file = 'Tesla_V100-PCIE-32GB/gpt2_large-inf-1024-4.csv.gz' AND name = 'addmm'",
        "--format",
        "csv",
    ]);
    let (stdout, stderr) = text(&run);
    assert_eq!(
        stdout, "input_shapes,output_shape\n\"[[3840],[4096,1280],[1280,3840]]\",\"[4096,3840]\"\n",
        "{stderr}"
    );
}

/// A sweep over one GPU's measurements has nothing left to train on once
/// that GPU is held out: the error names the directory, the GPU and what a
/// sweep needs, instead of LightGBM's empty fit.
#[test]
fn sweep_of_a_single_gpu_says_what_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let h100 = workspace_root().join("bench/measured/h100-sxm5");
    let run = tracecast(&["ops", "sweep", "--public", s(&h100), "--out", s(dir.path())]);
    let (_, stderr) = text(&run);
    assert!(!run.status.success());
    assert!(
        stderr.contains("h100-sxm5")
            && stderr.contains("holding out NVIDIA_H100_80GB_HBM3")
            && stderr.contains("two GPUs or more"),
        "{stderr}"
    );
}

/// Several public-layout directories query as one: each table holds every
/// directory's rows (here our two Hopper measurement folders, which ship
/// with the repository, so this runs without ../shared).
#[test]
fn sql_unions_several_public_directories() {
    let measured = workspace_root().join("bench/measured");
    let run = tracecast(&[
        "sql",
        "--public",
        s(&measured.join("h100-sxm5")),
        "--public",
        s(&measured.join("h200")),
        "SELECT gpu, count(*) AS labels FROM neusight_labels GROUP BY 1 ORDER BY 1",
        "--format",
        "csv",
    ]);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stdout, "gpu,labels\nNVIDIA_H100_80GB_HBM3,18\nNVIDIA_H200,18\n",
        "{stderr}"
    );
}

/// A graph built from a model's configuration does the work of NeuSight's
/// traced graph of the same configuration: the same matrix FLOPs, and
/// within a few percent the same bytes, forward and backward, for every
/// traced configuration of the shared data (BERT, GPT-2, GPT-3, OPT).
#[test]
fn graphs_built_from_configurations_match_the_traced_ones() {
    use std::collections::BTreeMap;
    use tracecast_opmodel::OpKind;
    use tracecast_opmodel::architectures::ModelConfig;
    use tracecast_opmodel::graph::{ModelGraph, read_graph};

    let Some(public) = shared("public") else { return };
    let neusight = public.join("neusight");
    // Work per kind and pass: (FLOPs, bytes).
    let totals = |graph: &ModelGraph, training: bool| {
        let mut by: BTreeMap<(&'static str, u8), (f64, f64)> = BTreeMap::new();
        for (w, times) in graph.works(training) {
            let e = by.entry((w.kind.name(), w.pass as u8)).or_default();
            e.0 += w.flops * times;
            e.1 += w.bytes * times;
        }
        by
    };
    let mut checked = 0;
    let mut configs = BTreeMap::new();
    for gpu in std::fs::read_dir(neusight.join("label")).unwrap().flatten() {
        for file in std::fs::read_dir(gpu.path()).unwrap().flatten() {
            let path = file.path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            let Some(stem) = name.strip_suffix(".csv.gz") else {
                continue;
            };
            let parts: Vec<&str> = stem.split('-').collect();
            if parts.len() != 4 {
                continue;
            }
            let label: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(path.with_file_name(format!("{stem}.json"))).unwrap())
                    .unwrap();
            let Some(layers) = label["num_layer"].as_f64().filter(|&n| n > 0.0) else {
                continue;
            };
            let training = parts[1] == "train";
            let (seq, batch): (f64, f64) = (parts[2].parse().unwrap(), parts[3].parse().unwrap());
            let config = configs.entry(parts[0].to_string()).or_insert_with(|| {
                ModelConfig::read(&neusight.join(format!("DLmodel_configs/{}.json", parts[0]))).unwrap()
            });
            let traced = totals(
                &ModelGraph::of_layer(read_graph(&path, training).unwrap(), layers),
                training,
            );
            let built = totals(&config.graph(batch, seq, training), training);
            for (key, (flops, bytes)) in &traced {
                let (bf, bb) = built.get(key).copied().unwrap_or_default();
                let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0);
                if key.0 == "gemm" {
                    assert!(
                        close(*flops, bf, 1e-9),
                        "{name}: {key:?} FLOPs {flops} traced, {bf} built"
                    );
                }
                assert!(
                    close(*bytes, bb, 0.05),
                    "{name}: {key:?} bytes {bytes} traced, {bb} built"
                );
            }
            assert!(
                built.keys().all(|k| traced.contains_key(k)),
                "{name}: built kinds {:?} beyond the traced {:?}",
                built.keys().collect::<Vec<_>>(),
                traced.keys().collect::<Vec<_>>()
            );
            let gemm = |t: &BTreeMap<(&str, u8), (f64, f64)>| t.get(&(OpKind::Gemm.name(), 0)).map(|v| v.0);
            assert_eq!(gemm(&traced).is_some(), gemm(&built).is_some());
            checked += 1;
        }
    }
    assert!(checked >= 80, "only {checked} traced graphs compared");
}

/// `ops price`: a model priced from its configuration on GPUs named or
/// given as spec sheets; newer GPUs are faster, a doubled batch costs more
/// but less than twice where the GPU is busy, and errors name the file.
/// The `column` of the first row of `ops price --format csv` output whose
/// columns hold the given values (`gpu` by substring: profile names are
/// long; the others exactly).
fn priced(csv_text: &str, row: &[(&str, &str)], column: &str) -> f64 {
    let mut rows = csv::Reader::from_reader(csv_text.as_bytes());
    let header = rows.headers().unwrap().clone();
    let at = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    let found = rows.records().map(|r| r.unwrap()).find(|r| {
        row.iter().all(|(name, value)| match *name {
            "gpu" => r[at(name)].contains(value),
            _ => &r[at(name)] == *value,
        })
    });
    let found = found.unwrap_or_else(|| panic!("no row {row:?}:\n{csv_text}"));
    found[at(column)].parse().unwrap()
}

/// GPT-2 Medium's configuration, written into `dir` (a test may overwrite it).
fn gpt2_medium(dir: &Path) -> PathBuf {
    let config = dir.join("gpt2_med.json");
    std::fs::write(
        &config,
        r#"{"model_type": "gpt2", "n_embd": 1024, "n_head": 16, "n_layer": 24, "vocab_size": 50257,
            "activation_function": "gelu_new"}"#,
    )
    .unwrap();
    config
}

#[test]
fn ops_price_prices_a_configuration_on_several_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let config = gpt2_medium(dir.path());
    let sheet = rtx_6000_ada_sheet(dir.path());
    let run = tracecast(&[
        "ops",
        "price",
        "--config",
        s(&config),
        "--gpu",
        "T4",
        "--gpu",
        "V100",
        "--gpu",
        "H100",
        "--gpu",
        s(&sheet),
        "--batch-size",
        "4,8",
        "--seqlen",
        "1024",
        "--mode",
        "train",
        "--format",
        "csv",
    ]);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stderr}");
    let total = |gpu: &str, batch: &str| priced(&stdout, &[("gpu", gpu), ("batch_size", batch)], "iteration_ms");
    assert_eq!(
        csv::Reader::from_reader(stdout.as_bytes()).records().count(),
        8,
        "{stdout}"
    );
    for batch in ["4", "8"] {
        assert!(total("T4", batch) > total("V100", batch), "{stdout}");
        assert!(total("V100", batch) > total("H100", batch), "{stdout}");
        assert!(total("6000 Ada", batch) > 0.0, "{stdout}");
    }
    for gpu in ["T4", "V100", "H100"] {
        let ratio = total(gpu, "8") / total(gpu, "4");
        assert!(
            (1.3..=2.1).contains(&ratio),
            "{gpu}: batch 8 / batch 4 = {ratio}\n{stdout}"
        );
    }
    // Llama-3-8B (grouped-query attention, gated MLP) from its fixture: the
    // same order of GPUs (its parameter count is checked in opmodel's
    // tests); trained in float32 with Adam, 16 bytes a parameter fit on no
    // single GPU, and the run says so.
    let llama = fixtures().join("models/llama-3-8b.json");
    let run = tracecast(&[
        "ops",
        "price",
        "--config",
        s(&llama),
        "--gpu",
        "T4",
        "--gpu",
        "V100",
        "--gpu",
        "H100",
        "--seqlen",
        "2048",
        "--format",
        "csv",
    ]);
    let (llama_csv, stderr) = text(&run);
    assert!(run.status.success(), "{stderr}");
    let llama_ms = |gpu: &str| priced(&llama_csv, &[("gpu", gpu)], "iteration_ms");
    assert!(
        llama_ms("T4") > llama_ms("V100") && llama_ms("V100") > llama_ms("H100"),
        "{llama_csv}"
    );
    let state = priced(&llama_csv, &[], "model_state_gb");
    assert!((state - 8_030_261_248.0 * 16.0 / 1e9).abs() < 1e-6, "{state}");
    assert!(stderr.contains("H100") && stderr.contains("does not fit"), "{stderr}");
    // No throughput rows where it does not fit: a plan cannot run it there.
    let table_dir = dir.path().join("llama-priced");
    let run = tracecast(&[
        "ops",
        "price",
        "--config",
        s(&llama),
        "--gpu",
        "H100",
        "--seqlen",
        "2048",
        "--gpus",
        "1,8",
        "--out",
        s(&table_dir),
    ]);
    assert!(run.status.success(), "{}", text(&run).1);
    let table = std::fs::read_to_string(table_dir.join("throughput.csv")).unwrap_or_default();
    assert!(table.lines().count() <= 1, "{table}");
    // A configuration tracecast cannot build a graph for names the file and the type.
    std::fs::write(&config, r#"{"model_type": "mamba", "hidden_size": 4096}"#).unwrap();
    let run = tracecast(&[
        "ops",
        "price",
        "--config",
        s(&config),
        "--gpu",
        "H100",
        "--seqlen",
        "128",
    ]);
    let (_, stderr) = text(&run);
    assert!(!run.status.success());
    assert!(
        stderr.contains("gpt2_med.json") && stderr.contains("`mamba`"),
        "{stderr}"
    );
}

/// `ops price` of GPT-2 medium at batch 8, 1024 tokens, on `gpus`, as CSV.
fn gpt2_price_csv(config: &Path, gpus: &[&str], extra: &[&str]) -> String {
    let mut args = vec!["ops", "price", "--config", s(config)];
    for gpu in gpus {
        args.extend(["--gpu", gpu]);
    }
    args.extend(["--batch-size", "8", "--seqlen", "1024", "--format", "csv"]);
    args.extend(extra);
    let run = tracecast(&args);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stderr}");
    stdout
}

/// `ops price --precision bf16`: autocast runs matrix products on 16-bit
/// tensor cores, so a GPU with fast ones (H100) gains more than one with
/// slow ones (T4); softmax, the norms and the optimizer step stay float32
/// and do not move, and the casts keep element-wise work from halving.
#[test]
fn ops_price_mixed_precision_gains_most_where_tensor_cores_are_fastest() {
    let dir = tempfile::tempdir().unwrap();
    let config = gpt2_medium(dir.path());
    let price = |precision: &str| gpt2_price_csv(&config, &["T4", "H100"], &["--precision", precision]);
    let (float32, half) = (price("fp32"), price("bf16"));
    assert_eq!(half, price("fp16"), "fp16 and bf16 price alike");
    // ... but the T4 has no bfloat16 tensor cores, and a note says so.
    let notes = |precision: &str| {
        let run = tracecast(&[
            "ops",
            "price",
            "--config",
            s(&config),
            "--gpu",
            "T4",
            "--gpu",
            "H100",
            "--seqlen",
            "128",
            "--precision",
            precision,
        ]);
        text(&run).1
    };
    let bf16_notes = notes("bf16");
    assert!(
        bf16_notes.contains("NVIDIA T4: no bfloat16 tensor cores")
            && !bf16_notes.contains("H100 SXM5 80GB: no bfloat16"),
        "{bf16_notes}"
    );
    assert!(!notes("fp16").contains("bfloat16"));
    let column = |csv_text: &str, gpu: &str, column: &str| priced(csv_text, &[("gpu", gpu)], column);
    let gain = |gpu: &str| column(&float32, gpu, "gemm_ms") / column(&half, gpu, "gemm_ms");
    assert!(gain("T4") > 1.5, "T4 GEMMs {}x faster in 16 bits", gain("T4"));
    assert!(gain("H100") > gain("T4"), "H100 {}x, T4 {}x", gain("H100"), gain("T4"));
    for gpu in ["T4", "H100"] {
        let (f, h) = (
            column(&float32, gpu, "iteration_ms"),
            column(&half, gpu, "iteration_ms"),
        );
        assert!(h < f, "{gpu}: {h} ms an iteration in 16 bits, {f} ms in float32");
        // 16 bits halve an element-wise op's bytes at best, and autocast
        // adds its casts, which are element-wise kernels.
        let (f, h) = (
            column(&float32, gpu, "elementwise_ms"),
            column(&half, gpu, "elementwise_ms"),
        );
        assert!(h > f * 0.5, "{gpu}: element-wise {h} ms in 16 bits, {f} ms in float32");
        // Autocast keeps softmax and the norms in float32, and mixed
        // precision the optimizer step.
        for kind in ["softmax_ms", "norm_ms", "optimizer_ms"] {
            assert_eq!(column(&half, gpu, kind), column(&float32, gpu, kind), "{gpu} {kind}");
        }
    }
}

/// `ops price --tf32 on`: matrix products on TF32 tensor cores speed up
/// the GPUs that have them (A100, H100) and leave the others (V100, T4) as
/// they were; element-wise work and the optimizer step do not move.
#[test]
fn ops_price_tf32_speeds_matrix_products_only_where_the_gpu_has_tf32() {
    let dir = tempfile::tempdir().unwrap();
    let config = gpt2_medium(dir.path());
    let price = |tf32: &str| gpt2_price_csv(&config, &["T4", "V100", "A100 80GB", "H100"], &["--tf32", tf32]);
    let (strict, tf32) = (price("off"), price("on"));
    let column = |csv_text: &str, gpu: &str, column: &str| priced(csv_text, &[("gpu", gpu)], column);
    for gpu in ["T4", "V100"] {
        assert_eq!(
            column(&tf32, gpu, "iteration_ms"),
            column(&strict, gpu, "iteration_ms"),
            "{gpu}"
        );
    }
    for gpu in ["A100", "H100"] {
        let (on, off) = (column(&tf32, gpu, "gemm_ms"), column(&strict, gpu, "gemm_ms"));
        assert!(on < off / 2.0, "{gpu}: GEMMs {on} ms with TF32, {off} ms without");
        for same in ["elementwise_ms", "optimizer_ms"] {
            assert_eq!(column(&tf32, gpu, same), column(&strict, gpu, same), "{gpu} {same}");
        }
    }
}

/// `ops price` on several GPU counts: the all-reduce shows once the ring
/// leaves the node, the throughput table runs each global batch on every
/// count that divides it, and `tracecast plan` schedules jobs from it.
#[test]
fn ops_price_writes_a_throughput_table_the_planner_reads() {
    let dir = tempfile::tempdir().unwrap();
    let config = gpt2_medium(dir.path());
    let out = dir.path().join("pred");
    let run = tracecast(&[
        "ops",
        "price",
        "--config",
        s(&config),
        "--gpu",
        "a100-sxm4-40gb",
        "--gpu-type",
        "A100",
        "--batch-size",
        "1,4",
        "--seqlen",
        "256",
        "--gpus",
        "1,2,8,16",
        "--format",
        "csv",
        "--out",
        s(&out),
    ]);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stderr}");
    let get =
        |batch: &str, gpus: &str, column: &str| priced(&stdout, &[("batch_size", batch), ("num_gpus", gpus)], column);
    assert_eq!(
        csv::Reader::from_reader(stdout.as_bytes()).records().count(),
        8,
        "{stdout}"
    );
    // 355 M parameters: 1.4 GB of gradients all-reduce over NVLink inside a
    // node and over the 25 GB/s network beyond it, where the backward pass
    // no longer hides them: 16 GPUs gain over 8 at 4 sequences per GPU, and
    // nothing at 1, whose short backward hides too little.
    assert!(
        get("4", "16", "allreduce_ms") > 5.0 * get("4", "8", "allreduce_ms"),
        "{stdout}"
    );
    assert!(get("4", "16", "exposed_allreduce_ms") > 0.0, "{stdout}");
    assert!(get("4", "16", "samples_per_s") > get("4", "8", "samples_per_s"));
    assert!(get("4", "16", "samples_per_s") < 2.0 * get("4", "8", "samples_per_s"));
    assert!(
        get("1", "16", "samples_per_s") < 1.1 * get("1", "8", "samples_per_s"),
        "{stdout}"
    );
    assert!(get("4", "1", "optimizer_ms") > 0.0);
    // The table runs global batch 16 (1 per GPU on 16) on every asked count
    // that divides it, at 16, 8, 2 and 1 sequences per GPU.
    // The same rows as a file, columns as schemas/TABLES.md (`priced_transformer`) defines them.
    assert_eq!(std::fs::read_to_string(out.join("priced.csv")).unwrap(), stdout);
    let table = std::fs::read_to_string(out.join("throughput.csv")).unwrap();
    let counts_of = |global: &str| -> Vec<String> {
        table
            .lines()
            .filter(|l| l.split(',').nth(2) == Some(global))
            .map(|l| l.split(',').nth(3).unwrap().to_string())
            .collect()
    };
    assert_eq!(counts_of("16"), ["1", "2", "8", "16"], "{table}");
    assert!(
        table.lines().skip(1).all(|l| l.starts_with("gpt2_med,A100,")),
        "{table}"
    );
    // The planner prices jobs of this model from the table.
    let jobs = dir.path().join("jobs.csv");
    std::fs::write(
        &jobs,
        "job_id,submit_time_s,job_type,batch_size,iterations,num_gpus\n\
         a,0,gpt2_med,32,2000,8\nb,60,gpt2_med,16,4000,4\nc,120,gpt2_med,64,1000,16\n",
    )
    .unwrap();
    let plan_out = dir.path().join("plan");
    let cluster = fixtures().join("plan/cluster.toml");
    let run = tracecast(&[
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
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(plan_out.join("schedule.json").is_file());
    // Inference replicas share no gradients: N GPUs serve N times the sequences.
    let run = tracecast(&[
        "ops",
        "price",
        "--config",
        s(&config),
        "--gpu",
        "a100-sxm4-40gb",
        "--mode",
        "inf",
        "--seqlen",
        "256",
        "--gpus",
        "1,16",
        "--format",
        "csv",
    ]);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stderr}");
    let samples: Vec<f64> = csv::Reader::from_reader(stdout.as_bytes())
        .deserialize::<std::collections::HashMap<String, String>>()
        .map(|r| r.unwrap()["samples_per_s"].parse().unwrap())
        .collect();
    assert!((samples[1] / samples[0] - 16.0).abs() < 1e-9, "{stdout}");
    // One type name for several GPUs would merge their rows: refused.
    let run = tracecast(&[
        "ops",
        "price",
        "--config",
        s(&config),
        "--gpu",
        "H100",
        "--gpu",
        "T4",
        "--gpu-type",
        "A100",
        "--seqlen",
        "128",
    ]);
    let (_, stderr) = text(&run);
    assert!(!run.status.success() && stderr.contains("--gpu-type"), "{stderr}");
}

/// Mixed precision as Hugging Face runs it under autocast, priced against
/// bfloat16 runs measured on an H100 (bench/measured/h100-bf16): the
/// inference configurations, which keep the GPU busy, within 10%. Pricing
/// every node in 16 bits without autocast's casts and float32 softmax put
/// them 23-44% fast.
#[test]
fn mixed_precision_prices_autocast_as_measured_on_an_h100() {
    let Some(public) = shared("public") else { return };
    let labels = workspace_root().join("bench/measured/h100-bf16/neusight/label/NVIDIA_H100_80GB_HBM3");
    for name in [
        "gpt2_large-inf-1024-8",
        "gpt3_xl-inf-2048-2",
        "gpt3_27-inf-2048-2",
        "opt_13-inf-2048-2",
    ] {
        let f: Vec<&str> = name.split('-').collect();
        let config = public.join(format!("neusight/DLmodel_configs/{}.json", f[0]));
        let run = tracecast(&[
            "ops",
            "price",
            "--config",
            s(&config),
            "--gpu",
            "H100",
            "--mode",
            f[1],
            "--seqlen",
            f[2],
            "--batch-size",
            f[3],
            "--optimizer",
            "none",
            "--precision",
            "bf16",
            "--format",
            "csv",
        ]);
        let (stdout, stderr) = text(&run);
        assert!(run.status.success(), "{stdout}\n{stderr}");
        let label = labels.join(format!("{name}.json"));
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(label).unwrap()).unwrap();
        let measured = json["e2e_latency"].as_f64().unwrap();
        let predicted = priced(&stdout, &[], "iteration_ms");
        assert!(
            (predicted - measured).abs() / measured < 0.10,
            "{name}: priced {predicted:.1} ms, measured {measured:.1} ms"
        );
    }
}

/// `ops bench --precision bf16`: the H100's bfloat16 operators
/// (bench/measured/h100-bf16) priced as 16-bit work, from a model fitted
/// on the same GPU's float32 operators (bench/measured/h100-sxm5; both
/// ship with the repository); end-to-end labels are left to `ops price`. Priced as
/// float32 (no tensor-core rates in the spec sheet), the batched products
/// had a 452% MAPE.
#[test]
fn bench_prices_sixteen_bit_operators_on_tensor_cores() {
    let measured = workspace_root().join("bench/measured");
    let (train, eval) = (measured.join("h100-sxm5"), measured.join("h100-bf16"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = ops_bench(&train, &eval, &out, &["--precision", "bf16", "--num-iterations", "120"]);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("16-bit per-op rows only"), "{stderr}");
    let e2e = std::fs::read_to_string(out.join("neusight_e2e.csv")).unwrap_or_default();
    assert!(e2e.lines().count() <= 1, "no end-to-end label is priced: {e2e}");
    let bmm_row = stdout
        .lines()
        .find(|l| l.starts_with("| bmm |"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let mape: f64 = bmm_row
        .split('|')
        .nth(2)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(mape < 40.0, "batched products in bfloat16: {mape}% MAPE");
}

/// An evaluation directory in NeuSight's layout with an element-wise
/// operator NeuSight's files do not hold (`sub`) and a per-op file of a
/// layout tracecast cannot read: the operator is priced, the file is named
/// with its reason, and the run goes on.
#[test]
fn bench_prices_other_element_wise_operators_and_names_an_unreadable_file() {
    let Some(public) = shared("public") else { return };
    let dir = tempfile::tempdir().unwrap();
    let eval = dir.path().join("eval");
    let test_dir = eval.join("neusight/per_op/test");
    std::fs::create_dir_all(&test_dir).unwrap();
    let header = "OPName,Latency,Device,Torch Version,CUDNN Version,Kernel Name,Warps per SM,Blocks per SM,\
                  Grid x,Grid y,Grid z,Block x,Block y,Block z,CUDA Version,B,H,large";
    let rows: Vec<String> = ["add", "sub", "silu"]
        .iter()
        .map(|op| format!("{op},0.5,Tesla T4,p2.1.0,8902,,,,,,,,,,cu121,32768,1600,True"))
        .collect();
    std::fs::write(test_dir.join("elem.csv"), format!("{header}\n{}\n", rows.join("\n"))).unwrap();
    std::fs::write(
        test_dir.join("conv1d.csv"),
        "OPName,Latency,Device,X\nconv1d,0.5,Tesla T4,3\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = ops_bench(&public, &eval, &out, &["--num-iterations", "20"]);
    let (stdout, stderr) = text(&run);
    assert!(run.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("conv1d.csv") && stderr.contains("not predicted"),
        "{stderr}"
    );
    let perop = std::fs::read_to_string(out.join("neusight_perop.csv")).unwrap();
    let priced: Vec<&str> = perop.lines().skip(1).collect();
    assert_eq!(priced.len(), 3, "{perop}");
    assert!(priced.iter().any(|l| l.contains(",sub,")), "{perop}");
}

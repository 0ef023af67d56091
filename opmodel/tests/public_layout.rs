//! The op model end to end on small public-layout directories written here:
//! spec sheets, per-op CSVs, a label with its graph, an ETS file.

use std::io::Write;
use std::path::Path;

use tracecast_opmodel::{
    FitParams, GpuSpec, OpModel, OpWork, PublicOptions, PublicRun, Sample, Timing, public_tables, run_public,
    spec_sheets, sweep, train_public,
};

/// A made-up GPU family: time = roofline / utilisation + 6 µs launch, with a
/// utilisation that grows with the work's size.
fn spec(name: &str, tflops: f64, gbs: f64, sms: f64) -> GpuSpec {
    GpuSpec {
        name: name.into(),
        peak_fp32_flops: tflops * 1e12,
        peak_fp32_matrix_flops: None,
        peak_half_flops: None,
        peak_tf32_flops: None,
        peak_fp64_flops: None,
        bandwidth: gbs * 1e9,
        sm_count: sms,
        l2_bytes: 6.0 * 1024.0 * 1024.0,
    }
}

fn true_us(w: &OpWork, g: &GpuSpec) -> f64 {
    let roof = (w.flops / g.peak_fp32_flops).max(w.bytes / g.bandwidth) * 1e6;
    let util = 0.3 + 0.5 * (w.flops.log10() / 14.0).clamp(0.0, 1.0);
    roof / util + 6.0
}

fn works() -> Vec<OpWork> {
    let mut v = Vec::new();
    for b in [1.0, 4.0, 16.0] {
        for m in [64.0, 256.0, 1024.0, 2048.0] {
            for n in [64.0, 512.0, 2048.0] {
                v.push(OpWork::bmm(b, m, n, 1024.0));
                v.push(OpWork::linear(b, m, n, 4096.0));
            }
        }
    }
    v
}

#[test]
fn fitted_model_carries_to_an_unseen_gpu_and_survives_a_round_trip() {
    let gpus = vec![
        spec("small", 8.0, 300.0, 40.0),
        spec("mid", 14.0, 900.0, 80.0),
        spec("big", 19.5, 1555.0, 108.0),
    ];
    let mut samples = Vec::new();
    for w in works() {
        for (i, g) in gpus.iter().enumerate() {
            samples.push(Sample {
                work: w,
                gpu: i,
                measured_us: true_us(&w, g),
                weight: 1.0,
                timing: Timing::Sweep,
            });
        }
    }
    let params = FitParams {
        num_iterations: 150,
        min_data_in_leaf: 5,
        num_threads: 1,
        ..FitParams::default()
    };
    let model = OpModel::fit(&samples, &gpus, &params, vec!["synthetic".into()]).unwrap();
    // An unseen GPU between the trained ones.
    let unseen = spec("unseen", 12.0, 700.0, 68.0);
    let ws = works();
    let pairs: Vec<_> = ws.iter().map(|w| (*w, &unseen)).collect();
    let predicted = model.predict_us(&pairs, Timing::Sweep).unwrap();
    let mape: f64 = ws
        .iter()
        .zip(&predicted)
        .map(|(w, p)| (p - true_us(w, &unseen)).abs() / true_us(w, &unseen))
        .sum::<f64>()
        / ws.len() as f64;
    assert!(mape < 0.15, "unseen-GPU error {mape}");
    // A faster GPU is never slower on a large GEMM.
    let big = OpWork::bmm(16.0, 2048.0, 2048.0, 1024.0);
    let t = model
        .predict_us(&[(big, &gpus[0]), (big, &gpus[2])], Timing::Sweep)
        .unwrap();
    assert!(t[1] < t[0], "{t:?}");
    // The file round-trips to the same predictions.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    model.save(&path).unwrap();
    let back = OpModel::load(&path).unwrap();
    assert_eq!(back.predict_us(&pairs, Timing::Sweep).unwrap(), predicted);
    assert_eq!(back.card.trained_gpus, vec!["big", "mid", "small"]);
    // A file of another format is refused with its path.
    std::fs::write(&path, r#"{"format":"other"}"#).unwrap();
    let err = OpModel::load(&path).err().unwrap().to_string();
    assert!(err.contains("m.json"), "{err}");
}

fn gz(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut e = flate2::write::GzEncoder::new(std::fs::File::create(path).unwrap(), flate2::Compression::fast());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap();
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const HEADER: &str = "OPName,Latency,Device,Torch Version,CUDNN Version,Kernel Name,Warps per SM,Blocks per SM,Grid x,Grid y,Grid z,Block x,Block y,Block z,CUDA Version,Kernels,B,M,N,K";

/// A public-layout directory: two GPUs with per-op data, one label + graph on each.
fn public_dir(root: &Path, with_latency: bool) {
    let ns = root.join("neusight");
    for (key, device, flops, bw, sms) in [
        ("GPU_A", "GPU A", 8000.0, 320.0, 40),
        ("GPU_B", "GPU B", 19500.0, 1555.0, 108),
    ] {
        write(
            &ns.join(format!("device_configs/{key}.json")),
            &format!(
                r#"{{"Device":"{device}","Dev_Mem":16,"Mem_Bw":{bw},"Num_Sm":{sms},"Core_Per_SM":64,"Freq":1500,"SingleFLOPs":{flops},"L2Cache":6}}"#
            ),
        );
        let g = spec(device, flops / 1e3, bw, sms as f64);
        let mut csv = String::from(HEADER);
        csv.push('\n');
        for w in [64, 256, 1024] {
            for b in [1, 8] {
                let work = OpWork::bmm(b as f64, w as f64, w as f64, w as f64);
                let ms = if with_latency {
                    format!("{}", true_us(&work, &g) / 1e3)
                } else {
                    String::new()
                };
                csv.push_str(&format!(
                    "bmm,{ms},{device},p2.1.0,8902,k,1,1,1,1,1,1,1,1,cu121,,{b},{w},{w},{w}\n"
                ));
            }
        }
        gz(&ns.join(format!("per_op/train/bmm/{key}.csv.gz")), &csv);
        // An evaluation set keeps only `num_layer` in its labels.
        let label = if with_latency {
            r#"{"num_layer": 4, "e2e_latency": 0.97, "fw_latency": 0.32, "bwall_latency": 0.65}"#
        } else {
            r#"{"num_layer": 4}"#
        };
        write(&ns.join(format!("label/{key}/tiny-train-128-2.json")), label);
        let graph = "op,target,meta,input_shapes,output_shape,fw_latency,bw_latency,acc_latency,Name\n\
placeholder,x,{},[],\"(2, 128, 256)\",0,0,0,x\n\
call_module,m.layer.0.fc,\"OrderedDict([('m.layer.0', <class 'a.Layer'>), ('m.layer.0.fc', <class 'torch.nn.modules.linear.Linear'>)])\",\"[[2, 128, 256]]\",\"(2, 128, 1024)\",0.05,0.1,0.01,fc\n\
call_function,<built-in function gelu>,\"OrderedDict([('m.layer.0', <class 'a.Layer'>)])\",\"[[2, 128, 1024]]\",\"(2, 128, 1024)\",0.02,0.03,0,gelu\n\
call_method,view,{},\"[[2, 128, 1024]]\",\"(256, 1024)\",0.01,0,0,view\n\
call_module,head,\"OrderedDict([('head', <class 'torch.nn.modules.linear.Linear'>)])\",\"[[256, 1024]]\",\"(256, 512)\",0.04,0.08,0.01,head\n";
        gz(&ns.join(format!("label/{key}/tiny-train-128-2.csv.gz")), graph);
    }
    // An ETS file on a GPU of the built-in catalog.
    let ets = "op,dir,params,grid,block,flops,bytes,rStartTime,rEndTime,kStartTime,kEndTime,staticSharedMemory,space,space1,seq,kernels,rduration,kduration,batch,h,w,input_type\n\
203,1,\"[16, 3, 64, 64, 64, 15, 15, 11, 11, 2, 2, 4, 4, 1, 1, 1, 4, 0]\",1,1,0,0,0,0,0,0,0,5000,5000,1,1,1,200000,16,64,64,1\n\
152,1,\"[4, 16, 64, 15, 15, 0, 0, 0, 0, 0]\",1,1,0,0,0,0,0,0,0,90000,90000,2,1,1,10000,16,64,64,1\n\
203,2,\"[16, 3, 64, 64, 64, 15, 15, 11, 11, 2, 2, 4, 4, 1, 1, 1, 4, 0]\",1,1,0,0,0,0,0,0,0,0,0,1,2,1,400000,16,64,64,1\n\
12,3,\"[4, 64, 0, 0, 0, 0, 0, 0, 0, 0]\",1,1,0,0,0,0,0,0,0,0,0,-1,1,1,3000,16,64,64,1\n";
    let ets = if with_latency {
        ets.to_string()
    } else {
        ets.replace(",200000,", ",0,")
            .replace(",10000,", ",0,")
            .replace(",400000,", ",0,")
    };
    write(&root.join("ets/datasets/T4CPUALL/alexnet.1_7.csv"), &ets);
}

/// `ops bench` on these tiny directories: a small fit, every GPU.
fn small_run(train: &Path, eval: &Path, out: &Path) -> PublicRun {
    run_public(&PublicOptions {
        train: train.to_path_buf(),
        extra_train: vec![],
        eval: eval.to_path_buf(),
        out: out.to_path_buf(),
        params: FitParams {
            num_iterations: 30,
            min_data_in_leaf: 1,
            num_threads: 1,
            ..FitParams::default()
        },
        holdout: vec![],
        only: vec![],
        measure_speed: false,
        half: None,
    })
    .unwrap()
}

#[test]
fn bench_writes_every_prediction_file_and_never_reads_eval_latencies() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train");
    public_dir(&train, true);
    let run = |eval: &Path, out: &Path| small_run(&train, eval, out);
    // The same evaluation set with and without its latencies; its GPU_B
    // label has no graph beside it, so the train set's is used.
    let (measured, blind) = (dir.path().join("measured"), dir.path().join("blind"));
    public_dir(&measured, true);
    public_dir(&blind, false);
    for eval in [&measured, &blind] {
        std::fs::remove_file(eval.join("neusight/label/GPU_B/tiny-train-128-2.csv.gz")).unwrap();
    }
    let (out_measured, out_blind) = (dir.path().join("out-measured"), dir.path().join("out-blind"));
    let scored = run(&measured, &out_measured);
    let blind_run = run(&blind, &out_blind);
    for file in ["neusight_e2e.csv", "neusight_perop.csv", "ets.csv"] {
        assert_eq!(
            std::fs::read(out_measured.join(file)).unwrap(),
            std::fs::read(out_blind.join(file)).unwrap(),
            "{file}: predictions changed with the evaluation set's latencies"
        );
    }
    let e2e = std::fs::read_to_string(out_blind.join("neusight_e2e.csv")).unwrap();
    let lines: Vec<&str> = e2e.lines().collect();
    assert_eq!(lines[0], "gpu,model,mode,seqlen,batch,option,predicted_ms");
    assert_eq!(lines.len(), 3, "{e2e}");
    assert!(lines[1].starts_with("GPU_A,tiny,train,128,2,,"), "{e2e}");
    let ms: f64 = lines[2].rsplit(',').next().unwrap().parse().unwrap();
    assert!(ms > 0.0 && ms.is_finite());
    let ets = std::fs::read_to_string(out_blind.join("ets.csv")).unwrap();
    assert!(
        ets.starts_with("gpu_folder,file,batch,h,predicted_ms\nT4CPUALL,alexnet.1_7.csv,16,64,"),
        "{ets}"
    );
    // Scored only where the evaluation set kept measurements.
    assert!(blind_run.evaluation.scored.iter().all(|s| s.measured_ms.is_none()));
    assert!(blind_run.report.contains("predictions only"), "{}", blind_run.report);
    assert!(
        scored
            .evaluation
            .scored
            .iter()
            .filter(|s| s.measured_ms.is_some())
            .count()
            >= 3
    );
    assert!(scored.report.contains("End-to-end error"), "{}", scored.report);
    // Every scored label has its own row; a blind set has none to score.
    assert!(
        scored.per_configuration.contains("| GPU_A | tiny-train-128-2 | 0.97 |"),
        "{}",
        scored.per_configuration
    );
    assert!(blind_run.per_configuration.is_empty());
    assert!(blind_run.collected.per_op_rows == 12 && blind_run.collected.node_rows > 0);
    // A chart of predicted against measured only where something was
    // measured (these directories have no per-op test rows to chart).
    let chart = "neusight_e2e.svg";
    let svg = std::fs::read_to_string(out_measured.join(chart)).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("measured latency (ms)"),
        "{svg}"
    );
    assert!(
        scored.evaluation.files.contains(&out_measured.join(chart)),
        "{chart} listed"
    );
    assert!(!out_measured.join("neusight_perop.svg").exists());
    assert!(!out_blind.join(chart).exists(), "nothing to chart in a blind set");
    // The library writes the report too, so that a service gets the CLI's files.
    let report = std::fs::read_to_string(out_measured.join("report.md")).unwrap();
    assert!(report.starts_with(&scored.report), "{report}");
    assert!(scored.evaluation.files.contains(&out_measured.join("report.md")));
}

/// The readers' rows as Arrow tables, columns by name: what `tracecast sql
/// --public` queries.
#[test]
fn public_measurements_read_as_tables() {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float64Type, Int64Type};
    let dir = tempfile::tempdir().unwrap();
    public_dir(dir.path(), true);
    let tables = public_tables(dir.path()).unwrap();
    let table = |name: &str| {
        tables
            .iter()
            .find(|(def, _)| def.name == name)
            .map(|(_, b)| b.clone())
            .unwrap_or_else(|| panic!("no table {name}"))
    };
    let per_op = table("neusight_per_op");
    assert_eq!(per_op.num_rows(), 12);
    let files = per_op.column_by_name("file").unwrap().as_string::<i32>();
    assert_eq!(files.value(0), "train/bmm/GPU_A.csv.gz");
    let k = per_op.column_by_name("k").unwrap().as_primitive::<Float64Type>();
    let flops = per_op.column_by_name("flops").unwrap().as_primitive::<Float64Type>();
    assert_eq!((k.value(0), flops.value(0)), (64.0, 2.0 * 64.0f64.powi(3)));
    assert!(per_op.column_by_name("h").unwrap().is_null(0));

    let labels = table("neusight_labels");
    assert_eq!(labels.num_rows(), 2);
    let measured = labels
        .column_by_name("measured_ms")
        .unwrap()
        .as_primitive::<Float64Type>();
    assert_eq!(measured.value(0), 0.97);

    // Graph nodes that call something (the placeholder is not one), with shapes.
    let nodes = table("neusight_graph_nodes");
    assert_eq!(nodes.num_rows(), 8);
    let targets = nodes.column_by_name("target").unwrap().as_string::<i32>();
    assert_eq!(
        (0..4).map(|i| targets.value(i)).collect::<Vec<_>>(),
        ["Linear", "gelu", "view", "Linear"]
    );
    let kinds = nodes.column_by_name("kind").unwrap().as_string::<i32>();
    assert_eq!(kinds.value(2), "nowork");
    let shapes = nodes.column_by_name("output_shape").unwrap().as_list::<i32>();
    let first = shapes.value(0);
    assert_eq!(first.as_primitive::<Int64Type>().values().to_vec(), [2, 128, 1024]);

    // ETS: forward and backward rows only, with ETS's label parts.
    let ets = table("ets_ops");
    assert_eq!(ets.num_rows(), 3);
    let wall = ets.column_by_name("wall_ns").unwrap().as_primitive::<Float64Type>();
    assert_eq!(wall.value(0), 205_000.0);

    // A folder of something else is refused with its path, not read as empty tables.
    let err = public_tables(&dir.path().join("neusight")).err().unwrap().to_string();
    assert!(err.contains("neusight") && err.contains("not laid out like"), "{err}");
}

/// A label folder without a spec sheet is priced from the built-in profile
/// its name resolves to (`NVIDIA_H100_80GB_HBM3`: the H100 SXM5).
#[test]
fn a_label_folder_without_a_spec_sheet_uses_the_built_in_profile() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train");
    public_dir(&train, true);
    let eval = dir.path().join("eval");
    write(
        &eval.join("neusight/label/NVIDIA_H100_80GB_HBM3/tiny-train-128-2.json"),
        r#"{"num_layer": 4}"#,
    );
    let out = dir.path().join("out");
    let run = small_run(&train, &eval, &out);
    let e2e = std::fs::read_to_string(out.join("neusight_e2e.csv")).unwrap();
    let line = e2e.lines().nth(1).unwrap();
    assert!(line.starts_with("NVIDIA_H100_80GB_HBM3,tiny,train,128,2,,"), "{e2e}");
    let h100: f64 = line.rsplit(',').next().unwrap().parse().unwrap();
    assert!(h100 > 0.0, "{e2e}\n{:?}", run.evaluation.notes);
}

/// An ETS folder whose GPU no spec sheet or profile names keeps one row per
/// file, its prediction empty, and a note says why.
#[test]
fn an_ets_folder_of_an_unknown_gpu_keeps_its_rows_empty() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train");
    public_dir(&train, true);
    let eval = dir.path().join("eval");
    public_dir(&eval, false);
    let known = eval.join("ets/datasets/T4CPUALL/alexnet.1_7.csv");
    let unknown = eval.join("ets/datasets/Voodoo5CPUALL/alexnet.1_7.csv");
    std::fs::create_dir_all(unknown.parent().unwrap()).unwrap();
    std::fs::copy(&known, &unknown).unwrap();
    let out = dir.path().join("out");
    let run = small_run(&train, &eval, &out);
    let ets = std::fs::read_to_string(out.join("ets.csv")).unwrap();
    assert!(ets.contains("\nVoodoo5CPUALL,alexnet.1_7.csv,16,64,\n"), "{ets}");
    let t4 = ets.lines().find(|l| l.starts_with("T4CPUALL,")).unwrap();
    assert!(t4.rsplit(',').next().unwrap().parse::<f64>().unwrap() > 0.0, "{ets}");
    assert!(
        run.evaluation
            .notes
            .iter()
            .any(|n| n.contains("not predicted") && n.contains("Voodoo5CPUALL")),
        "{:?}",
        run.evaluation.notes
    );
}

/// A label with no traced graph anywhere (a model only its configuration
/// describes) is priced from a graph built from that configuration, which
/// the evaluation directory may carry; a label whose model has neither is
/// reported as not predicted, with the reason, and its row left empty.
#[test]
fn a_model_without_a_traced_graph_is_priced_from_its_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train");
    public_dir(&train, true);
    let eval = dir.path().join("eval");
    write(
        &eval.join("neusight/DLmodel_configs/tinygpt.json"),
        r#"{"model_type": "gpt2", "n_embd": 256, "n_head": 4, "n_layer": 2, "vocab_size": 1000}"#,
    );
    for name in ["tinygpt-inf-128-2", "tinygpt-train-128-2", "mystery-inf-128-2"] {
        write(
            &eval.join(format!("neusight/label/GPU_A/{name}.json")),
            r#"{"num_layer": null}"#,
        );
    }
    let out = dir.path().join("out");
    let run = small_run(&train, &eval, &out);
    let e2e = std::fs::read_to_string(out.join("neusight_e2e.csv")).unwrap();
    let ms = |prefix: &str| -> Option<f64> {
        let line = e2e
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {e2e}"));
        line.rsplit(',').next().unwrap().parse().ok()
    };
    let inference = ms("GPU_A,tinygpt,inf,128,2,,").expect("inference priced");
    let training = ms("GPU_A,tinygpt,train,128,2,,").expect("training priced");
    assert!(inference > 0.0 && training > inference, "{e2e}");
    assert_eq!(ms("GPU_A,mystery,inf,128,2,,"), None, "{e2e}");
    let notes = run.evaluation.notes.join("\n");
    assert!(notes.contains("tinygpt.json"), "{notes}");
    assert!(
        notes.contains("mystery-inf-128-2.json: not predicted") && notes.contains("DLmodel_configs"),
        "{notes}"
    );
}

/// `--extra`: a second directory's measurements join the fit, its GPUs
/// join the card, and a held-out GPU stays out of both directories.
#[test]
fn extra_directories_are_trained_on_too() {
    let dir = tempfile::tempdir().unwrap();
    let (main, extra) = (dir.path().join("main"), dir.path().join("extra"));
    public_dir(&main, true);
    public_dir(&extra, true);
    // The extra directory's GPU_B is another GPU (a new key and name).
    let ns = extra.join("neusight");
    let sheet = std::fs::read_to_string(ns.join("device_configs/GPU_B.json")).unwrap();
    write(&ns.join("device_configs/GPU_C.json"), &sheet.replace("GPU B", "GPU C"));
    std::fs::remove_file(ns.join("device_configs/GPU_B.json")).unwrap();
    let rows = String::from_utf8({
        let mut text = Vec::new();
        let file = std::fs::File::open(ns.join("per_op/train/bmm/GPU_B.csv.gz")).unwrap();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(file), &mut text).unwrap();
        text
    })
    .unwrap();
    gz(
        &ns.join("per_op/train/bmm/GPU_C.csv.gz"),
        &rows.replace("GPU B", "GPU C"),
    );
    std::fs::remove_file(ns.join("per_op/train/bmm/GPU_B.csv.gz")).unwrap();

    let params = FitParams {
        num_iterations: 10,
        min_data_in_leaf: 1,
        num_threads: 1,
        ..FitParams::default()
    };
    let gpus = spec_sheets(&[&main, &extra]).unwrap();
    let (alone, alone_rows) = train_public(&[&main], &gpus, &[], &params).unwrap();
    let (both, collected) = train_public(&[&main, &extra], &gpus, &[], &params).unwrap();
    assert_eq!(alone.card.trained_gpus, ["GPU A", "GPU B"]);
    assert_eq!(both.card.trained_gpus, ["GPU A", "GPU B", "GPU C"]);
    // 6 isolated operators per GPU and directory.
    assert_eq!((alone_rows.per_op_rows, collected.per_op_rows), (12, 24));
    assert!(
        both.card.trained_on.iter().any(|s| s.contains("extra")),
        "{:?}",
        both.card.trained_on
    );
    let (held, _) = train_public(&[&main, &extra], &gpus, &["GPU_A".to_string()], &params).unwrap();
    assert_eq!(held.card.trained_gpus, ["GPU B", "GPU C"]);
    // A mistyped directory is refused, named, rather than trained on as nothing.
    let typo = dir.path().join("extar");
    let err = train_public(&[&main, &typo], &gpus, &[], &params)
        .err()
        .expect("a directory without neusight/ is refused")
        .to_string();
    assert!(err.contains("extar") && err.contains("neusight/"), "{err}");
}

/// `ops sweep --extra`: the extra directory's GPU is trained on while the
/// others are held out, and held out itself in a run of its own that
/// predicts its labels from its spec sheet.
#[test]
fn sweep_holds_out_the_extra_directories_gpus_too() {
    let dir = tempfile::tempdir().unwrap();
    let (main, extra) = (dir.path().join("main"), dir.path().join("extra"));
    public_dir(&main, true);
    // The extra directory: one GPU of its own (GPU_C), with a label.
    let ns = extra.join("neusight");
    let main_ns = main.join("neusight");
    let sheet = std::fs::read_to_string(main_ns.join("device_configs/GPU_B.json")).unwrap();
    write(
        &ns.join("device_configs/GPU_C.json"),
        &sheet.replace("GPU B", "GPU C").replace("1555", "3000"),
    );
    for file in ["tiny-train-128-2.json", "tiny-train-128-2.csv.gz"] {
        let bytes = std::fs::read(main_ns.join("label/GPU_B").join(file)).unwrap();
        std::fs::create_dir_all(ns.join("label/GPU_C")).unwrap();
        std::fs::write(ns.join("label/GPU_C").join(file), bytes).unwrap();
    }
    let params = FitParams {
        num_iterations: 10,
        min_data_in_leaf: 1,
        num_threads: 1,
        ..FitParams::default()
    };
    let result = sweep(
        &main,
        std::slice::from_ref(&extra),
        &dir.path().join("out"),
        &params,
        &|_| {},
    )
    .unwrap();
    let held: Vec<&str> = result.runs.iter().map(|(unit, _, _)| unit.as_str()).collect();
    assert!(held.contains(&"GPU_C"), "{held:?}");
    let c_rows: Vec<_> = result
        .scored
        .iter()
        .filter(|s| s.gpu == "GPU_C" && s.set == "e2e")
        .collect();
    assert_eq!(c_rows.len(), 1, "GPU_C's one label predicted");
    assert!(c_rows[0].measured_ms.is_some() && c_rows[0].predicted_ms > 0.0);
    assert!(result.report.contains("GPU_C"), "{}", result.report);
    // The held-out labels charted together, every held-out GPU a series.
    let chart = dir.path().join("out/neusight_e2e.svg");
    assert!(result.files.contains(&chart), "{:?}", result.files);
    let sweep_md = std::fs::read_to_string(dir.path().join("out/sweep.md")).unwrap();
    assert_eq!(sweep_md, result.report, "the library writes its report");
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(
        svg.contains("GPU_C") && svg.contains("each held out of training"),
        "{svg}"
    );
}

//! End-to-end tests of `tracecast plan`, `simulate` and `verify`: every
//! schedule a test produces is checked by `tracecast verify`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn tracecast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracecast"))
        .current_dir(root())
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = tracecast(args);
    assert!(
        out.status.success(),
        "{args:?} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn fails(args: &[&str]) -> String {
    let out = tracecast(args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{args:?} should fail: stdout {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const FIX: [&str; 6] = [
    "--jobs",
    "fixtures/plan/jobs.csv",
    "--cluster",
    "fixtures/plan/cluster.toml",
    "--throughput",
    "fixtures/plan/throughput.csv",
];

/// The three inputs plus extra arguments.
fn with(inputs: &[&str], extra: &[&str]) -> Vec<String> {
    inputs.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn run_ok(verb: &str, inputs: &[&str], extra: &[&str]) -> String {
    let mut a = vec![verb.to_string()];
    a.extend(with(inputs, extra));
    ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn verify(inputs: &[&str], schedule: &Path) {
    let out = run_ok("verify", inputs, &["--schedule", schedule.to_str().unwrap()]);
    assert!(out.contains("valid"), "{out}");
}

fn shared(rel: &str) -> Option<String> {
    let p = root().join("../shared/cluster").join(rel);
    if p.exists() {
        Some(format!("../shared/cluster/{rel}"))
    } else {
        eprintln!("SKIP: ../shared/cluster missing: {}", p.display());
        None
    }
}

#[test]
fn plan_on_fixtures_writes_a_verified_elastic_heterogeneous_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan");
    let stdout = run_ok(
        "plan",
        &FIX,
        &["--objective", "jct", "--out", out.to_str().unwrap(), "--compare"],
    );
    for f in [
        "schedule.json",
        "schedule.csv",
        "metrics.json",
        "gantt.svg",
        "utilization.svg",
        "comparison.md",
        "jobs.csv",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    verify(&FIX, &out.join("schedule.json"));
    for p in ["| plan-jct", "| fifo", "| sjf-oracle", "| tiresias", "| edf", "| fixed"] {
        assert!(stdout.contains(p), "comparison lacks {p}:\n{stdout}");
    }
    let s = json(&out.join("schedule.json"));
    assert_eq!(s["format"], "tracecast.schedule");
    assert_eq!(s["version"], 4);
    assert_eq!(s["rules"]["name"], "simple");
    let jobs = s["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 120);
    // Elastic scaling changed some job's count; both GPU types were used.
    let rescaled = jobs.iter().any(|j| {
        let counts: std::collections::BTreeSet<u64> = j["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["gpus"].as_u64().unwrap())
            .collect();
        counts.len() > 1
    });
    assert!(rescaled, "no job changed its GPU count");
    let types: std::collections::BTreeSet<String> = jobs
        .iter()
        .flat_map(|j| {
            j["segments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g["gpu_type"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(types.into_iter().collect::<Vec<_>>(), vec!["A100", "T4"]);
    // The fixture table lacks some cells: the schedule says which were interpolated.
    assert!(!s["interpolated"].as_array().unwrap().is_empty());
    let csv = std::fs::read_to_string(out.join("schedule.csv")).unwrap();
    let segs: usize = jobs.iter().map(|j| j["segments"].as_array().unwrap().len()).sum();
    assert_eq!(csv.lines().count(), segs + 1);
    assert!(csv.starts_with("job_id,segment,start_s,end_s,gpu_type,num_gpus,nodes,"));
    let m = json(&out.join("metrics.json"));
    assert_eq!(m["format"], "tracecast.metrics");
    assert!(
        std::fs::read_to_string(out.join("gantt.svg"))
            .unwrap()
            .contains("<rect")
    );
    // The planner beats FIFO on average JCT on this load (deterministic).
    let table = std::fs::read_to_string(out.join("comparison.md")).unwrap();
    let jct = |p: &str| -> f64 {
        let row = table.lines().find(|l| l.starts_with(&format!("| {p} |"))).unwrap();
        row.split('|').nth(2).unwrap().trim().parse().unwrap()
    };
    assert!(jct("plan-jct") < jct("fifo"), "{table}");
}

#[test]
fn simulate_replays_a_plan_to_the_same_metrics_and_runs_every_policy() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p");
    run_ok("plan", &FIX, &["--out", out.to_str().unwrap()]);
    let planned = json(&out.join("metrics.json"));
    let sim = dir.path().join("sim");
    run_ok(
        "simulate",
        &FIX,
        &[
            "--schedule",
            out.join("schedule.json").to_str().unwrap(),
            "--out",
            sim.to_str().unwrap(),
        ],
    );
    let replayed = json(&sim.join("metrics.json"));
    assert_eq!(planned["avg_jct_s"], replayed["avg_jct_s"]);
    assert_eq!(planned["makespan_s"], replayed["makespan_s"]);
    let all = dir.path().join("all");
    let stdout = run_ok("simulate", &FIX, &["--policy", "all", "--out", all.to_str().unwrap()]);
    for p in [
        "plan-jct",
        "plan-makespan",
        "plan-deadline",
        "fifo",
        "sjf-oracle",
        "tiresias",
        "edf",
        "fixed",
    ] {
        assert!(all.join(format!("metrics-{p}.json")).is_file(), "{p}: {stdout}");
    }
}

#[test]
fn deadline_and_makespan_objectives_produce_verified_plans() {
    let dir = tempfile::tempdir().unwrap();
    for obj in ["deadline", "makespan"] {
        let out = dir.path().join(obj);
        run_ok("plan", &FIX, &["--objective", obj, "--out", out.to_str().unwrap()]);
        verify(&FIX, &out.join("schedule.json"));
    }
    let m = |obj: &str| json(&dir.path().join(obj).join("metrics.json"));
    // Each objective wins its own metric against the other.
    assert!(m("deadline")["deadline_hit_rate"].as_f64() >= m("makespan")["deadline_hit_rate"].as_f64());
    assert!(m("makespan")["makespan_s"].as_f64() <= m("deadline")["makespan_s"].as_f64());
}

#[test]
fn verify_rejects_overbooked_overlapping_and_unfinished_schedules() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p");
    run_ok("plan", &FIX, &["--out", out.to_str().unwrap()]);
    let good = json(&out.join("schedule.json"));
    let write = |name: &str, v: &serde_json::Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_string(v).unwrap()).unwrap();
        p
    };
    let check = |p: &Path, needle: &str| {
        let mut a = vec!["verify".to_string()];
        a.extend(with(&FIX, &["--schedule", p.to_str().unwrap()]));
        let err = fails(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(err.contains(needle), "expected `{needle}` in: {err}");
    };
    // Unfinished: cut the last segment of the first job in half.
    let mut v = good.clone();
    let seg = v["jobs"][0]["segments"].as_array_mut().unwrap().last_mut().unwrap();
    let (s, e) = (seg["start_s"].as_f64().unwrap(), seg["end_s"].as_f64().unwrap());
    seg["end_s"] = serde_json::json!((s + e) / 2.0);
    check(&write("short.json", &v), "does not finish");
    // Self-overlap: duplicate a job's first segment.
    let mut v = good.clone();
    let first = v["jobs"][1]["segments"][0].clone();
    v["jobs"][1]["segments"].as_array_mut().unwrap().insert(0, first);
    check(&write("overlap.json", &v), "overlaps the job's previous segment");
    // Over capacity: move every job onto node 0 for its whole life.
    let mut v = good.clone();
    for j in v["jobs"].as_array_mut().unwrap() {
        for g in j["segments"].as_array_mut().unwrap() {
            if g["gpu_type"] == "A100" {
                let n = g["gpus"].clone();
                g["nodes"] = serde_json::json!([{"node": 0, "gpus": n}]);
            }
        }
    }
    check(&write("over.json", &v), "node 0 (a100-0) holds");
    // A negative restart_s would credit work the GPUs never did: the replay uses --restart-s.
    let mut v = good.clone();
    v["restart_s"] = serde_json::json!(-10_000.0);
    check(
        &write("restart.json", &v),
        "restart_s is -10000 s, not the workload's restart cost of 30 s",
    );
}

#[test]
fn planning_with_prediction_errors_reports_the_loss() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("e");
    let stdout = run_ok(
        "plan",
        &FIX,
        &[
            "--out",
            out.to_str().unwrap(),
            "--error",
            "normal:0.05",
            "--error-seeds",
            "2",
        ],
    );
    assert!(stdout.contains("planning with predictions"), "{stdout}");
    verify(&FIX, &out.join("schedule.json"));
    let e = json(&out.join("prediction_error.json"));
    assert_eq!(e["predicted_avg_jct_s"].as_array().unwrap().len(), 2);
    // A wrong belief can only be as good as the truth by luck; it must stay close at 5%.
    assert!(e["max_loss"].as_f64().unwrap().abs() < 0.25, "{e}");
    // A belief table equal to the truth loses nothing.
    let out2 = dir.path().join("b");
    let stdout = run_ok(
        "plan",
        &FIX,
        &[
            "--out",
            out2.to_str().unwrap(),
            "--belief-throughput",
            "fixtures/plan/throughput.csv",
        ],
    );
    assert!(stdout.contains("+0.00%"), "{stdout}");
}

#[test]
fn bad_inputs_name_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.csv");
    std::fs::write(
        &jobs,
        "job_id,submit_time_s,job_type,batch_size,iterations,num_gpus\na,0,bert,32,100,1\nb,5,bert,32,100,abc\n",
    )
    .unwrap();
    let j = jobs.to_str().unwrap();
    let err = fails(&[
        "plan",
        "--jobs",
        j,
        "--cluster",
        FIX[3],
        "--throughput",
        FIX[5],
        "--out",
        dir.path().join("o").to_str().unwrap(),
    ]);
    assert!(
        err.contains("jobs.csv line 3: column `num_gpus`: `abc` is not an integer"),
        "{err}"
    );
    std::fs::write(
        &jobs,
        "job_id,submit_time_s,job_type,batch_size,iterations,num_gpus\na,0,nosuchmodel,32,100,1\n",
    )
    .unwrap();
    let err = fails(&[
        "plan",
        "--jobs",
        j,
        "--cluster",
        FIX[3],
        "--throughput",
        FIX[5],
        "--out",
        dir.path().join("o").to_str().unwrap(),
    ]);
    assert!(err.contains("job type `nosuchmodel`"), "{err}");
    // Planner settings out of range are refused before anything is planned.
    let out = dir.path().join("o2");
    for bad in ["--starved-share=0", "--starved-share=1.5", "--starvation-factor=-1"] {
        let mut args = vec!["plan"];
        args.extend(FIX);
        args.push(bad);
        args.extend(["--out", out.to_str().unwrap()]);
        let err = fails(&args);
        assert!(err.contains("--starved-share in (0, 1]"), "{bad}: {err}");
    }
    assert!(!out.exists());
}

#[test]
fn foreign_job_and_throughput_formats_plan_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    // Helios-style log with timestamps (CPU-only rows are skipped); Gavel throughput JSON.
    let helios = dir.path().join("cluster_log.csv");
    std::fs::write(
        &helios,
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration\n\
         h1,u,vc1,8,8,1,COMPLETED,2020-04-01 00:00:07,x,x,3600\n\
         h2,u,vc1,0,4,1,COMPLETED,2020-04-01 00:01:00,x,x,100\n\
         h3,u,vc1,16,8,2,FAILED,2020-04-01 00:02:00,x,x,600\n\
         h4,u,vc1,1,8,1,COMPLETED,2020-04-01 00:03:00,x,x,60\n",
    )
    .unwrap();
    let gavel = dir.path().join("gavel.json");
    std::fs::write(&gavel, r#"{"v100": {"('ResNet-50 (batch size 64)', 1)": {"null": 3.0}, "('ResNet-50 (batch size 64)', 2)": {"null": 5.5}}}"#).unwrap();
    let cluster = dir.path().join("c.toml");
    std::fs::write(
        &cluster,
        "[[group]]\nname='v'\ngpu_type='v100'\nnodes=2\ngpus_per_node=8\n",
    )
    .unwrap();
    let inputs = [
        helios.to_str().unwrap(),
        cluster.to_str().unwrap(),
        gavel.to_str().unwrap(),
    ];
    let inp = ["--jobs", inputs[0], "--cluster", inputs[1], "--throughput", inputs[2]];
    let out = dir.path().join("h");
    let stdout = run_ok("plan", &inp, &["--out", out.to_str().unwrap()]);
    assert!(
        stdout.contains("3 (Philly/Helios format: 0 elastic, 3 rigid"),
        "{stdout}"
    );
    verify(&inp, &out.join("schedule.json"));
    let s = json(&out.join("schedule.json"));
    assert_eq!(s["jobs"][0]["segments"][0]["gpus"], 8);
    assert_eq!(s["jobs"][0]["segments"][0]["start_s"], 0.0);

    // ElasticFlow jobs + cluster_specs CSV + ElasticFlow throughput folder; raw ITP (rigid).
    let (Some(ef), Some(itp), Some(spec), Some(tp)) = (
        shared("elasticflow-itp/cluster10.csv"),
        shared("itp-raw/cluster10.csv"),
        shared("cluster_specs/n4g8.csv"),
        shared("throughputs/A100"),
    ) else {
        return;
    };
    for (jobs, tag) in [(ef.as_str(), "ElasticFlow"), (itp.as_str(), "ITP raw")] {
        let inp = ["--jobs", jobs, "--cluster", spec.as_str(), "--throughput", tp.as_str()];
        let out = dir.path().join(tag.replace(' ', "_"));
        let stdout = run_ok(
            "plan",
            &inp,
            &["--out", out.to_str().unwrap(), "--objective", "deadline"],
        );
        assert!(stdout.contains(&format!("260 ({tag} format")), "{stdout}");
        verify(&inp, &out.join("schedule.json"));
    }
}

#[test]
fn elasticflow_rules_plan_verify_and_report_rejections() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ef");
    let o = out.to_str().unwrap();
    let stdout = run_ok(
        "plan",
        &FIX,
        &["--objective", "deadline", "--rules", "elasticflow", "--out", o],
    );
    assert!(stdout.contains("rules:      elasticflow"), "{stdout}");
    assert!(stdout.contains("rejected by admission control"), "{stdout}");
    let m = json(&out.join("metrics.json"));
    assert_eq!(m["rules"], "elasticflow");
    assert_eq!(m["unmeasured_gpu_share"], 0.0);
    let rejected = m["rejected"].as_u64().unwrap();
    assert!(rejected >= 1, "{m}");
    let s = json(&out.join("schedule.json"));
    assert_eq!(s["rules"]["round_gap_s"], 60.0);
    // jobs.csv: one row per job, the rejected ones marked, with no times.
    let jobs = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
    assert_eq!(jobs.lines().count(), 121);
    let rows: Vec<&str> = jobs.lines().filter(|l| l.contains(",rejected,")).collect();
    assert_eq!(rows.len() as u64, rejected);
    assert!(rows[0].ends_with(",rejected,,,"), "{}", rows[0]);
    // The verifier replays it under the same rules, and only under them.
    let sched = out.join("schedule.json");
    let v = run_ok(
        "verify",
        &FIX,
        &["--rules", "elasticflow", "--schedule", sched.to_str().unwrap()],
    );
    assert!(v.contains("valid"), "{v}");
    let mut a = vec!["verify".to_string()];
    a.extend(with(&FIX, &["--schedule", sched.to_str().unwrap()]));
    let e = fails(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        e.contains("made under rules `elasticflow`, the replay is under `simple`"),
        "{e}"
    );
    let svg = std::fs::read_to_string(out.join("gantt.svg")).unwrap();
    assert!(svg.contains(&format!("{rejected} rejected (red ticks at arrival)")));

    // A model the table does not price is an error under these rules, not a rigid job.
    let jobs = dir.path().join("ef.csv");
    std::fs::write(
        &jobs,
        "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n\
         j1,0,100,lstm,1000,64,1,50\nj2,0,100,mystery,1000,64,1,50\n",
    )
    .unwrap();
    let e = fails(&[
        "plan",
        "--jobs",
        jobs.to_str().unwrap(),
        "--cluster",
        "fixtures/plan/cluster.toml",
        "--throughput",
        "fixtures/plan/throughput.csv",
        "--rules",
        "elasticflow",
        "--out",
        o,
    ]);
    assert!(e.contains("job `j2`: job type `mystery`"), "{e}");
    assert!(e.contains("ef.csv: job `j2`"), "the error names the job file: {e}");
    assert!(e.contains("which rules `elasticflow` need"), "{e}");
}

#[test]
fn single_rules_can_be_overridden_and_verify_holds_to_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("measured");
    let o = out.to_str().unwrap();
    let rules = ["--counts", "measured", "--admission", "reject"];
    let mut extra = vec!["--objective", "deadline", "--out", o];
    extra.extend(rules);
    let stdout = run_ok("plan", &FIX, &extra);
    assert!(
        stdout.contains("rules:      simple+counts=measured+admission=reject"),
        "{stdout}"
    );
    let m = json(&out.join("metrics.json"));
    assert_eq!(m["unmeasured_gpu_share"], 0.0);
    assert_eq!(m["interpolated_segments"], 0);
    let sched = out.join("schedule.json");
    let mut v = vec!["--schedule", sched.to_str().unwrap()];
    v.extend(rules);
    assert!(run_ok("verify", &FIX, &v).contains("valid"));
    // Without the overrides the replay is under other rules, and says so.
    let mut a = vec!["verify".to_string()];
    a.extend(with(&FIX, &["--schedule", sched.to_str().unwrap()]));
    let e = fails(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(e.contains("the replay is under `simple`"), "{e}");
}

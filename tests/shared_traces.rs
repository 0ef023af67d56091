//! Every real trace in `../shared/traces` ingests, and what the lake holds
//! agrees with the catalog's figures and with an independent computation
//! (a plain serde_json reading of each file, done here in the test).

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use common::*;

/// (file name fragment, kernels, communication kernels, steps, kernels with a launch).
/// Kernel, communication and launch counts are the catalog's. Steps are the
/// catalog's ProfilerStep counts; where a trace has none, tracecast finds
/// iterations the catalog does not count: PARAM `warmup`/`measure`
/// annotations (4 in each PARAM benchmark trace) or the spans between
/// `Optimizer.step#` annotations (n annotations give n - 1 steps).
const CATALOG: [(&str, i64, i64, i64, i64); 17] = [
    ("mi250_minitoy", 14, 0, 2, 14),
    ("critical_path__alexnet", 79, 0, 4, 79),
    ("cupti_profiler", 0, 0, 4, 0),
    ("df_index_resolver", 19370, 2020, 5, 19370),
    ("nccl_parser_config", 2700, 21, 3, 2700),
    ("negative_queue_length", 6080, 80, 5, 5375),
    ("ns_resolution_trace", 4350, 0, 5, 4350),
    ("trace_filter__sampled", 1154, 10, 2, 1154),
    ("benchmark_simple_add_trace", 4, 0, 4, 4),
    ("cpu_only", 0, 0, 1, 0),
    ("with_gpu_user_annotation", 130, 0, 4, 130),
    ("resnet50_num_workers_0", 8772, 0, 6, 8772),
    ("gpu_metrics_input", 30, 0, 1, 30),
    ("before_fix_trace", 1, 0, 0, 1),
    ("ddp_resnet18_no_pool", 2360, 0, 4, 2360),
    ("gpu_only_trace", 562, 0, 0, 562),
    ("linear_kineto", 8716, 0, 39, 8716),
];

fn read_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap();
    let mut text = Vec::new();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut text)
            .unwrap();
    } else {
        text = bytes;
    }
    serde_json::from_slice(&text).unwrap()
}

fn trace_row(lake: &Path, fragment: &str) -> serde_json::Map<String, serde_json::Value> {
    let rows = query(
        lake,
        &format!("SELECT * FROM traces WHERE source LIKE '%{fragment}%' AND format = 'kineto'"),
    );
    assert_eq!(rows.len(), 1, "{fragment}");
    rows.into_iter().next().unwrap()
}

#[test]
fn counts_agree_with_the_catalog() {
    let Some(lake) = shared_lake() else { return };
    for (fragment, kernels, comm, steps, launched) in CATALOG {
        let t = trace_row(lake, fragment);
        let id = string(&t, "trace_id");
        assert_eq!(int(&t, "kernel_count"), kernels, "{fragment}: kernels");
        assert_eq!(int(&t, "step_count"), steps, "{fragment}: steps");
        let k = &query(
            lake,
            &format!(
                "SELECT count(*) AS n, coalesce(sum(CASE WHEN is_communication THEN 1 ELSE 0 END), 0) AS comm,
                    coalesce(sum(CASE WHEN has_launch THEN 1 ELSE 0 END), 0) AS launched
             FROM kernels WHERE trace_id = '{id}'"
            ),
        )[0];
        assert_eq!(int(k, "n"), kernels, "{fragment}");
        assert_eq!(int(k, "comm"), comm, "{fragment}: communication kernels");
        assert_eq!(int(k, "launched"), launched, "{fragment}: kernels linked to a launch");
    }
    let et = query(
        lake,
        "SELECT era, event_count FROM traces WHERE format = 'pytorch_et' ORDER BY event_count",
    );
    let et: Vec<(String, i64)> = et.iter().map(|r| (string(r, "era"), int(r, "event_count"))).collect();
    assert_eq!(
        et,
        [
            ("et-1.0.1".into(), 38),
            ("et-1.0.1".into(), 931),
            ("et-1.1.0-chakra.0.0.4".into(), 14392)
        ]
    );
    let comm_nodes = query(
        lake,
        "SELECT count(*) AS n FROM et_nodes e JOIN traces t USING (trace_id) WHERE t.event_count = 14392 AND e.is_communication AND e.name LIKE 'nccl:%'",
    );
    assert!(int(&comm_nodes[0], "n") > 0);
}

#[test]
fn durations_agree_with_an_independent_reading() {
    let Some(lake) = shared_lake() else { return };
    let traces = shared("traces").unwrap();
    for (fragment, ..) in CATALOG {
        let path = walk(&traces)
            .into_iter()
            .find(|p| p.to_string_lossy().contains(fragment))
            .unwrap();
        let json = read_json(&path);
        let events = json.get("traceEvents").unwrap_or(&json).as_array().unwrap();
        let ns = |v: &serde_json::Value| (v.as_f64().unwrap_or(0.0) * 1000.0).round() as i64;
        let mut want_steps = BTreeMap::new();
        let mut want_family: BTreeMap<bool, (i64, i64)> = BTreeMap::new();
        for e in events {
            let (cat, name) = (e["cat"].as_str().unwrap_or(""), e["name"].as_str().unwrap_or(""));
            if e["ph"] != "X" {
                continue;
            }
            if matches!(cat, "kernel" | "Kernel") {
                let comm = name.to_lowercase().contains("nccl");
                let f = want_family.entry(comm).or_default();
                f.0 += 1;
                f.1 += ns(&e["dur"]);
            }
            if matches!(cat, "user_annotation" | "Operator" | "cpu_op") && name.starts_with("ProfilerStep#") {
                want_steps.entry(name.to_string()).or_insert(ns(&e["dur"]));
            }
        }
        let id = string(&trace_row(lake, fragment), "trace_id");
        let rows = query(
            lake,
            &format!(
                "SELECT is_communication AS c, count(*) AS n, sum(dur_ns) AS d FROM kernels WHERE trace_id = '{id}' GROUP BY 1"
            ),
        );
        let got: BTreeMap<bool, (i64, i64)> = rows
            .iter()
            .map(|r| (r["c"].as_bool().unwrap(), (int(r, "n"), int(r, "d"))))
            .collect();
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want_family.keys().collect::<Vec<_>>(),
            "{fragment}"
        );
        for (family, (n, d)) in &want_family {
            let (gn, gd) = got[family];
            assert_eq!(gn, *n, "{fragment}: kernel count, communication={family}");
            // Exact decimal parsing vs f64 rounding may differ by 1 ns per kernel at most.
            assert!(
                (gd - d).abs() <= *n,
                "{fragment}: kernel time {gd} ns vs {d} ns, communication={family}"
            );
        }
        let steps = query(
            lake,
            &format!("SELECT name, dur_ns FROM steps WHERE trace_id = '{id}' AND source = 'profiler_step'"),
        );
        let got_steps: BTreeMap<String, i64> = steps.iter().map(|r| (string(r, "name"), int(r, "dur_ns"))).collect();
        assert_eq!(got_steps.len(), want_steps.len(), "{fragment}");
        for (name, d) in &want_steps {
            assert!(
                (got_steps[name] - d).abs() <= 1,
                "{fragment} {name}: {} vs {d}",
                got_steps[name]
            );
        }
    }
}

#[test]
fn timestamps_are_absolute_and_exact() {
    let Some(lake) = shared_lake() else { return };
    // H100 trace: baseTimeNanoseconds 1775078550000000000, kernel ts 88437691101.749 us.
    let id = string(&trace_row(lake, "before_fix_trace"), "trace_id");
    let k = query(
        lake,
        &format!("SELECT start_ns, dur_ns FROM kernels WHERE trace_id = '{id}'"),
    );
    assert_eq!(int(&k[0], "start_ns"), 1_775_078_550_000_000_000 + 88_437_691_101_749);
    assert_eq!(int(&k[0], "dur_ns"), 20);
    // 2021 trace: epoch microsecond integers.
    let id = string(&trace_row(lake, "resnet50_num_workers_0"), "trace_id");
    let s = query(
        lake,
        &format!("SELECT start_ns, dur_ns FROM steps WHERE trace_id = '{id}' AND name = 'ProfilerStep#5'"),
    );
    assert_eq!(int(&s[0], "start_ns"), 1_623_142_623_460_172_000);
    assert_eq!(int(&s[0], "dur_ns"), 176_078_000);
}

#[test]
fn metadata_is_read_across_eras() {
    let Some(lake) = shared_lake() else { return };
    for (fragment, era, gpu, rank, world) in [
        (
            "resnet50_num_workers_0",
            "kineto-2021",
            "Tesla V100-DGXS-32GB",
            None,
            None,
        ),
        ("gpu_metrics_input", "kineto-2021", "Tesla V100-DGXS-32GB", None, None),
        (
            "df_index_resolver",
            "kineto-2022",
            "Tesla V100-SXM2-32GB",
            Some(1),
            Some(2),
        ),
        (
            "nccl_parser_config",
            "kineto-2024",
            "NVIDIA A100-PG509-200",
            Some(0),
            Some(2),
        ),
        ("ddp_resnet18_no_pool", "kineto-2024", "AMD Instinct MI300X", None, None),
        ("cpu_only", "kineto-2024", "", Some(34), Some(300)),
    ] {
        let t = trace_row(lake, fragment);
        assert_eq!(string(&t, "era"), era, "{fragment}");
        // The JSON output leaves out null columns.
        assert_eq!(
            t.get("gpu_name").and_then(|v| v.as_str()).unwrap_or(""),
            gpu,
            "{fragment}"
        );
        assert_eq!(t.get("rank").and_then(|v| v.as_i64()), rank, "{fragment}");
        assert_eq!(t.get("world_size").and_then(|v| v.as_i64()), world, "{fragment}");
    }
    // Collective metadata is preferred where present.
    let id = string(&trace_row(lake, "nccl_parser_config"), "trace_id");
    let c = query(
        lake,
        &format!(
            "SELECT classified_by, collective, count(*) AS n, max(message_bytes) AS b FROM comms WHERE trace_id = '{id}' GROUP BY 1, 2 ORDER BY 3 DESC"
        ),
    );
    assert_eq!(string(&c[0], "classified_by"), "metadata");
    assert!(int(&c[0], "b") > 0);
    // The environment dump in the Meta trace is never stored, only its key's name.
    let t = trace_row(lake, "ns_resolution_trace");
    assert!(t["unknown_top_level_keys"].to_string().contains("mast_job_environment"));
}

#[test]
fn launches_link_to_operators() {
    let Some(lake) = shared_lake() else { return };
    // 2021 trace: the runtime's `external id` is its operator's.
    let id = string(&trace_row(lake, "resnet50_num_workers_0"), "trace_id");
    let r = query(
        lake,
        &format!("SELECT op_link, count(*) AS n FROM launches WHERE trace_id = '{id}' GROUP BY 1 ORDER BY 2 DESC"),
    );
    assert_eq!(string(&r[0], "op_link"), "external_id");
    // 2023-era trace: External id on kernels equals the correlation, so nesting links.
    let id = string(&trace_row(lake, "df_index_resolver"), "trace_id");
    let r = query(
        lake,
        &format!(
            "SELECT count(*) AS n, sum(CASE WHEN op_id IS NOT NULL THEN 1 ELSE 0 END) AS linked FROM kernels WHERE trace_id = '{id}'"
        ),
    );
    assert!(int(&r[0], "linked") * 10 >= int(&r[0], "n") * 9, "{r:?}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

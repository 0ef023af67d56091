//! Helpers shared by the end-to-end tests: running the binary, finding
//! `../shared`, reading the lake back through `tracecast sql`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the binary. The tests run side by side, each `tracecast` training
/// LightGBM with as many OpenMP threads as there are cores; OpenMP's
/// threads spin while they wait, so two trainings at once starve each
/// other (`cargo test --release --test ops` on 2 cores: 110 s). Sleeping
/// at once (`OMP_WAIT_POLICY=passive`) made that 22 s, but a training
/// alone 4x slower (a by-model split of the shared traces: 51.7 s against
/// 12.8, one futex wake-up per parallel region); a short spin
/// ([`SPIN_COUNT`]) keeps both fast: `ops` 16.8 s, `train_predict` 48 s
/// against 60-67 s sleeping. A policy or spin count the caller set is kept.
pub fn tracecast(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tracecast"));
    command.args(args).env_remove("RUST_LOG");
    if std::env::var_os("OMP_WAIT_POLICY").is_none() && std::env::var_os("GOMP_SPINCOUNT").is_none() {
        command.env("GOMP_SPINCOUNT", SPIN_COUNT);
    }
    command.output().expect("run tracecast")
}

/// Iterations an idle OpenMP thread spins before it sleeps (GNU libgomp's
/// `GOMP_SPINCOUNT`; its default is 300,000).
const SPIN_COUNT: &str = "3000";

pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub fn fixtures() -> PathBuf {
    workspace_root().join("fixtures")
}

/// `../shared/<sub>` from the repository root. Missing: a visible skip on a
/// user's machine, a failure in CI (`.ci/run` sets TRACECAST_REQUIRE_SHARED).
pub fn shared(sub: &str) -> Option<PathBuf> {
    let dir = workspace_root().parent().unwrap().join("shared").join(sub);
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var_os("TRACECAST_REQUIRE_SHARED").is_some() {
        panic!("{} is missing, and TRACECAST_REQUIRE_SHARED is set", dir.display());
    }
    eprintln!("SKIP: {} is missing; the real-trace tests did not run", dir.display());
    None
}

/// Rows of a query as JSON objects.
pub fn query(lake: &Path, sql: &str) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let out = tracecast(&["sql", "--lake", lake.to_str().unwrap(), "--format", "json", sql]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "query failed: {sql}\n{stderr}");
    let value: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_object().unwrap().clone())
        .collect()
}

pub fn int(row: &serde_json::Map<String, serde_json::Value>, key: &str) -> i64 {
    row.get(key)
        .and_then(|v| v.as_i64())
        .unwrap_or_else(|| panic!("{key} in {row:?}"))
}

pub fn string(row: &serde_json::Map<String, serde_json::Value>, key: &str) -> String {
    row.get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_else(|| panic!("{key} in {row:?}"))
        .to_string()
}

/// Every file under a directory with its bytes, to show a lake did not change.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != ".ingest.lock" {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Snapshot of the data tables only (everything but `_ingest_log`).
pub fn data_snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    snapshot(dir)
        .into_iter()
        .filter(|(p, _)| !p.to_string_lossy().contains("_ingest_log"))
        .collect()
}

/// The lake of all shared traces (their four source folders; the catalog
/// beside them is not a trace), built once per test binary.
pub fn shared_lake() -> Option<&'static Path> {
    static LAKE: std::sync::OnceLock<Option<(tempfile::TempDir, PathBuf)>> = std::sync::OnceLock::new();
    let built = LAKE.get_or_init(|| {
        let traces = shared("traces")?;
        let dir = tempfile::tempdir().unwrap();
        let lake = dir.path().join("lake");
        let mut args = vec!["ingest".to_string()];
        for sub in std::fs::read_dir(&traces).unwrap() {
            let sub = sub.unwrap().path();
            if sub.is_dir() {
                args.push(sub.display().to_string());
            }
        }
        args.extend(["--lake".to_string(), lake.display().to_string()]);
        let out = tracecast(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let (stdout, stderr) = text(&out);
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(
            stdout.starts_with("ingested 20, skipped 0 already present, failed 0"),
            "{stdout}"
        );
        Some((dir, lake))
    });
    built.as_ref().map(|(_, lake)| lake.as_path())
}

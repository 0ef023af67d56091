//! Ingest under fuzzing: real traces (the bundled fixtures, and the small
//! ones of `../shared/traces` where present) truncated, corrupted, shuffled
//! and re-compressed. Nothing may panic; every file is either ingested whole
//! or named in `_ingest_log` with a reason; no run leaves staging behind.
//!
//! Mutations come from a seeded generator, so a failure names the seed that
//! reproduces it. `FUZZ_CASES` sets how many (`make fuzz` runs 20,000); the
//! suite's default keeps it to about a second. No fuzzing crate: proptest's
//! random-number features would change the feature set datafusion is built
//! with in test builds, and rebuild it.

use std::io::Write;
use std::path::{Path, PathBuf};

use tracecast_ingest::batches::{Identity, trace_batches};
use tracecast_ingest::lake::table_files;
use tracecast_ingest::{IngestOptions, Progress, ingest, read_traces};
use tracecast_schemas::{TableDef, lake as tables};

/// Real traces under this size are fuzzed; larger ones only slow each case.
const MAX_SOURCE_BYTES: u64 = 50_000;

fn cases(default: u64) -> u64 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn sources() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut paths = files_under(&root.join("fixtures/traces"));
    paths.extend(
        files_under(&root.join("../shared/traces"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "gz" || e == "json"))
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_SOURCE_BYTES)),
    );
    let out: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(out.len() >= 6, "the bundled fixtures are missing");
    out
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(bytes), &mut out) {
        Ok(_) => out,
        Err(_) => bytes.to_vec(),
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

/// Bytes that make JSON go wrong in interesting ways.
const JSON_BYTES: &[u8] = b"{}[],:\"0-e.xN\\ \n";

/// Breaks `text` in one of five ways.
fn mutate(rng: &mut Rng, mut text: Vec<u8>) -> Vec<u8> {
    let len = text.len();
    match rng.below(5) {
        0 => text.truncate(rng.below(len + 1)),
        1 if len > 0 => {
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(len);
                text[at] = rng.next() as u8;
            }
        }
        2 => {
            let at = rng.below(len + 1);
            let bytes: Vec<u8> = (0..1 + rng.below(16))
                .map(|_| JSON_BYTES[rng.below(JSON_BYTES.len())])
                .collect();
            text.splice(at..at, bytes);
        }
        3 => {
            // Lines shuffled, first and last kept: most writers put one event a line.
            let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
            for i in (2..lines.len().saturating_sub(1)).rev() {
                let j = 1 + rng.below(i);
                lines.swap(i, j);
            }
            text = lines.join(&b'\n');
        }
        _ if len > 2 => {
            // Two byte ranges of the same length swapped.
            let n = 1 + rng.below(len / 5 + 1);
            let (a, b) = (rng.below(len - n + 1), rng.below(len - n + 1));
            let (lo, hi) = (a.min(b), a.max(b));
            if hi >= lo + n {
                let (left, right) = text.split_at_mut(hi);
                left[lo..lo + n].swap_with_slice(&mut right[..n]);
            }
        }
        _ => text.clear(),
    }
    text
}

/// A broken file: a source, mutated as stored (gzip's and tar's own checks
/// must catch it) or decompressed, then maybe re-compressed.
fn broken_file(rng: &mut Rng, sources: &[Vec<u8>]) -> Vec<u8> {
    let source = &sources[rng.below(sources.len())];
    if rng.chance(4) {
        return mutate(rng, source.clone());
    }
    let broken = mutate(rng, gunzip(source));
    if rng.chance(2) { gzip(&broken) } else { broken }
}

fn identity() -> Identity {
    Identity {
        trace_id: "0123456789abcdef".into(),
        content_hash: "0123456789abcdef".into(),
        source: "fuzz".into(),
        archive_member: None,
        job_id: "fuzz".into(),
        ingest_run: "fuzz".into(),
        ingested_at_ns: 0,
    }
}

/// Rows of one lake table, from its Parquet footers.
fn rows(lake: &Path, def: &TableDef) -> i64 {
    table_files(lake, def)
        .unwrap()
        .iter()
        .map(|p| {
            let file = std::fs::File::open(p).unwrap();
            let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
            parquet::file::reader::FileReader::metadata(&reader)
                .file_metadata()
                .num_rows()
        })
        .sum()
}

struct Quiet;
impl Progress for Quiet {
    fn start(&self, _: u64, _: u64) {}
    fn file_done(&self, _: u64) {}
}

/// Parsing, linking and the Arrow conversion never panic, a trace that
/// parses converts whole, and a refusal always says why.
#[test]
fn broken_traces_never_panic() {
    let sources = sources();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.json");
    for seed in 0..cases(300) {
        let bytes = broken_file(&mut Rng::new(seed), &sources);
        std::fs::write(&path, &bytes).unwrap();
        let outcome = std::panic::catch_unwind(|| {
            let mut refusals = Vec::new();
            let read = read_traces(&path, |_, trace| match trace {
                Ok(t) => {
                    let batches = trace_batches(t, &identity()).expect("a parsed trace converts to Arrow");
                    let kernels = batches.tables.iter().find(|(def, _)| def.name == "kernels").unwrap();
                    assert_eq!(kernels.1.num_rows(), t.kernels.len());
                }
                Err(reason) => refusals.push(reason),
            });
            if let Err(e) = read {
                refusals.push(e.to_string());
            }
            refusals
        });
        match outcome {
            Ok(refusals) => assert!(
                refusals.iter().all(|r| !r.is_empty()),
                "seed {seed}: a refusal without a reason"
            ),
            Err(_) => panic!(
                "seed {seed}: reading the broken trace panicked (FUZZ_CASES={} reproduces)",
                seed + 1
            ),
        }
    }
}

/// Whole runs over directories of broken files: each is ingested or logged
/// as failed with a reason, the lake holds a `traces` row for exactly the
/// ingested ones, and nothing is left staged.
#[test]
fn every_broken_file_is_ingested_or_named() {
    let sources = sources();
    for seed in 0..cases(300) / 30 {
        let mut rng = Rng::new(1 << 32 | seed);
        let dir = tempfile::tempdir().unwrap();
        let inputs = dir.path().join("in");
        std::fs::create_dir(&inputs).unwrap();
        let files = 1 + rng.below(8);
        for i in 0..files {
            std::fs::write(inputs.join(format!("t{i:02}.json")), broken_file(&mut rng, &sources)).unwrap();
        }
        let lake_dir = dir.path().join("lake");
        let summary = ingest(&[inputs], &lake_dir, &IngestOptions::default(), &Quiet).unwrap();
        // An archive counts once per member; a second identical file is skipped.
        let accounted = summary.ingested + summary.failed + summary.skipped + summary.manifests;
        assert!(accounted >= files, "seed {seed}: {files} files, {summary:?}");
        assert_eq!(summary.failures.len(), summary.failed, "seed {seed}");
        for (source, reason) in &summary.failures {
            assert!(
                source.contains("/in/t") && !reason.is_empty(),
                "seed {seed}: {source}: {reason}"
            );
        }
        assert_eq!(rows(&lake_dir, &tables::TRACES), summary.ingested as i64, "seed {seed}");
        let log_rows = rows(&lake_dir, &tables::INGEST_LOG);
        assert!(
            log_rows >= (summary.ingested + summary.failed) as i64,
            "seed {seed}: {log_rows} log rows, {summary:?}"
        );
        let staging = lake_dir.join("_staging");
        assert!(
            std::fs::read_dir(&staging).map_or(true, |mut entries| entries.next().is_none()),
            "seed {seed}: staging left behind"
        );
    }
}

//! The `ingest` run: files in parallel (rayon), one writer thread that owns
//! the lake and commits chunks of whole files.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use tracecast_schemas::lake as tables;

use crate::batches::{self, Identity, LogRow, TraceBatches};
use crate::json::ParseError;
use crate::lake::{Lake, LakeError};
use crate::source::{self, Contents, InputFile};
use crate::{IngestError, build, stream};

/// Tuning for an ingest run.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// Commit to the lake after this many input bytes (uncompressed): bounds
    /// what a killed run loses and how long readers wait for new data.
    pub chunk_bytes: u64,
}

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions { chunk_bytes: 1 << 30 }
    }
}

/// Progress reporting, implemented by the CLI's bars.
pub trait Progress: Sync {
    fn start(&self, files: u64, bytes: u64);
    fn file_done(&self, bytes: u64);
}

#[derive(Debug, Default, Clone)]
pub struct IngestSummary {
    pub run_id: String,
    pub ingested: usize,
    pub skipped: usize,
    pub failed: usize,
    /// Collector manifests seen beside the traces (logged, not ingested).
    pub manifests: usize,
    /// Files in the input directories that are plainly not traces (by
    /// name), and lakes inside them: not read, not failures.
    pub ignored: usize,
    /// `(source, what was dropped)` of each ingested trace that lost events
    /// to unusable values (their counts are in `traces.dropped_*`).
    pub dropped: Vec<(String, String)>,
    /// `(source, reason)` of each failure, in the order they happened.
    pub failures: Vec<(String, String)>,
    /// Bytes of the input files as stored.
    pub input_bytes: u64,
    pub uncompressed_bytes: u64,
    pub kernels: u64,
}

enum Message {
    Trace {
        hash: String,
        batches: TraceBatches,
        log: LogRow,
        uncompressed: u64,
        kernels: u64,
    },
    Skipped,
    Log(LogRow),
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Ingests every trace under `paths` into the lake at `lake_dir`.
pub fn ingest(
    paths: &[PathBuf],
    lake_dir: &Path,
    options: &IngestOptions,
    progress: &dyn Progress,
) -> Result<IngestSummary, IngestError> {
    let lake = Lake::open(lake_dir)?;
    let known = lake.known_hashes()?;
    let found = source::discover(paths, lake_dir).map_err(|(path, source)| IngestError::Input { path, source })?;
    let run_id = format!("{}-{}", now_ns() / 1_000_000, std::process::id());

    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    for f in found.files {
        match f {
            Ok(f) => files.push(f),
            Err((path, e)) => unreadable.push(failure(&run_id, &path, None, None, 0, e.to_string())),
        }
    }
    progress.start(files.len() as u64, files.iter().map(|f| f.size).sum());

    let (tx, rx) = sync_channel::<Message>(2);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| write_all(&lake, rx, &known, &run_id, options));
        for row in unreadable {
            tx.send(Message::Log(row)).ok();
        }
        let context = Context {
            known: &known,
            run_id: &run_id,
        };
        files.par_iter().for_each_with(tx, |tx, file| {
            context.file(file, tx);
            progress.file_done(file.size);
        });
        writer.join().expect("the lake writer does not panic")
    })
    .map(|summary| IngestSummary {
        input_bytes: files.iter().map(|f| f.size).sum(),
        ignored: found.ignored.len(),
        ..summary
    })
}

struct Context<'a> {
    known: &'a HashSet<String>,
    run_id: &'a str,
}

fn log_row(
    run: &str,
    path: &Path,
    member: Option<String>,
    hash: Option<String>,
    size: u64,
    outcome: &'static str,
    reason: Option<String>,
) -> LogRow {
    LogRow {
        ingest_run: run.to_string(),
        at_ns: now_ns(),
        source: path.display().to_string(),
        archive_member: member,
        content_hash: hash,
        size_bytes: size as i64,
        outcome,
        reason,
        trace_id: None,
        format: None,
    }
}

fn failure(run: &str, path: &Path, member: Option<String>, hash: Option<String>, size: u64, reason: String) -> LogRow {
    log_row(run, path, member, hash, size, "failed", Some(reason))
}

/// Reads one archive entry: `Ok(None)` for directories and links.
pub(crate) fn read_member<R: Read>(
    entry: std::io::Result<tar::Entry<'_, R>>,
) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut entry = entry?;
    if !entry.header().entry_type().is_file() {
        return Ok(None);
    }
    let name = entry.path()?.display().to_string();
    let size = entry.size();
    let mut data = Vec::with_capacity(size as usize);
    entry
        .read_to_end(&mut data)
        .map_err(|e| std::io::Error::new(e.kind(), format!("member {name}: {e}")))?;
    // A cut-off archive yields a short member rather than an error.
    if data.len() as u64 != size {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "member {name}: the archive ends after {} of its {size} bytes",
                data.len()
            ),
        ));
    }
    Ok(Some((name, data)))
}

impl Context<'_> {
    fn file(&self, file: &InputFile, tx: &SyncSender<Message>) {
        let path = &file.path;
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                tx.send(Message::Log(failure(
                    self.run_id,
                    path,
                    None,
                    None,
                    file.size,
                    e.to_string(),
                )))
                .ok();
                return;
            }
        };
        let hash = blake3::hash(&bytes).to_hex().to_string();
        if self.known.contains(&hash) {
            tx.send(Message::Skipped).ok();
            return;
        }
        match source::open(&bytes) {
            Ok(Contents::Single) => {}
            Err(e) => {
                let row = failure(self.run_id, path, None, Some(hash), file.size, e.to_string());
                tx.send(Message::Log(row)).ok();
                return;
            }
            Ok(Contents::Archive(mut archive)) => {
                let mut all_ok = true;
                let entries = match archive.entries() {
                    Ok(e) => e,
                    Err(e) => {
                        let row = failure(self.run_id, path, None, Some(hash), file.size, format!("archive: {e}"));
                        tx.send(Message::Log(row)).ok();
                        return;
                    }
                };
                for entry in entries {
                    match read_member(entry) {
                        Ok(Some((name, data))) => {
                            let member_hash = blake3::hash(&data).to_hex().to_string();
                            if self.known.contains(&member_hash) {
                                tx.send(Message::Skipped).ok();
                            } else {
                                all_ok &= self.member(path, Some(name), data, member_hash, tx);
                            }
                        }
                        Ok(None) => {}
                        Err(e) => {
                            // A broken member ends the archive: tar has no way to resync.
                            let reason = format!("broken archive member: {e}");
                            tx.send(Message::Log(failure(self.run_id, path, None, None, file.size, reason)))
                                .ok();
                            all_ok = false;
                            break;
                        }
                    }
                }
                if all_ok {
                    let row = log_row(self.run_id, path, None, Some(hash), file.size, "archive", None);
                    tx.send(Message::Log(row)).ok();
                }
                return;
            }
        }
        // A single trace: its bytes go to `member`, which frees them as soon as it can.
        self.member(path, None, bytes, hash, tx);
    }

    /// Parses one trace and hands its batches to the writer. False on failure.
    ///
    /// Memory: the stored bytes are freed once decompressed, and the text
    /// once parsed (the records then own their strings), so at most the
    /// text and the records are held at once, never the text and the tables.
    fn member(
        &self,
        path: &Path,
        member: Option<String>,
        bytes: Vec<u8>,
        hash: String,
        tx: &SyncSender<Message>,
    ) -> bool {
        let stored_size = bytes.len() as u64;
        let fail = |member: Option<String>, hash: String, reason: String| {
            tx.send(Message::Log(failure(
                self.run_id,
                path,
                member,
                Some(hash),
                stored_size,
                reason,
            )))
            .ok();
            false
        };
        let started = std::time::Instant::now();
        let (uncompressed, parsed) = match stream::inflate_and_parse(bytes) {
            Ok(read) => read,
            Err(e) => return fail(member, hash, format!("decompressing: {e}")),
        };
        let read = started.elapsed();
        let trace = match parsed.and_then(build::Parsed::build) {
            Ok(trace) => trace,
            Err(ParseError::Manifest) => {
                // The collector's sidecar: not a trace, not a failure.
                let row = log_row(self.run_id, path, member, Some(hash), stored_size, "manifest", None);
                tx.send(Message::Log(row)).ok();
                return true;
            }
            Err(e) => return fail(member, hash, e.to_string()),
        };
        let linked = started.elapsed();
        let trace_id = hash[..16].to_string();
        let job_id = job_id(path, member.is_some(), trace.meta.world_size, &trace_id);
        let identity = Identity {
            trace_id: trace_id.clone(),
            content_hash: hash.clone(),
            source: path.display().to_string(),
            archive_member: member.clone(),
            job_id,
            ingest_run: self.run_id.to_string(),
            ingested_at_ns: now_ns(),
        };
        let batches = match batches::trace_batches(&trace, &identity) {
            Ok(b) => b,
            Err(e) => return fail(member, hash, format!("internal error converting to Arrow: {e}")),
        };
        tracing::debug!(
            "{}: {} MB; inflate and parse {:?}, link {:?}, arrow {:?}",
            path.display(),
            uncompressed / 1_000_000,
            read,
            linked - read,
            started.elapsed() - linked,
        );
        let log = LogRow {
            ingest_run: self.run_id.to_string(),
            at_ns: identity.ingested_at_ns,
            source: identity.source,
            archive_member: member,
            content_hash: Some(hash.clone()),
            size_bytes: stored_size as i64,
            outcome: "ingested",
            // Events lost to unusable values: the file is in, with a word said.
            reason: trace.meta.dropped.describe(),
            trace_id: Some(trace_id),
            format: Some(trace.format.as_str()),
        };
        let message = Message::Trace {
            hash,
            batches,
            log,
            uncompressed,
            kernels: trace.kernels.len() as u64,
        };
        // The records go before the writer encodes the tables made of them.
        drop(trace);
        tx.send(message).is_ok()
    }
}

/// Ranks of one run share a job: the archive they came in, or the directory
/// they sit in together with the same world size. A lone trace is its own job.
fn job_id(path: &Path, in_archive: bool, world_size: Option<i64>, trace_id: &str) -> String {
    let group = if in_archive {
        Some(path.to_path_buf())
    } else if world_size.is_some_and(|w| w > 1) {
        path.parent().map(Path::to_path_buf)
    } else {
        None
    };
    match group {
        Some(dir) => {
            let key = format!("{}|{}", dir.display(), world_size.unwrap_or(0));
            blake3::hash(key.as_bytes()).to_hex()[..16].to_string()
        }
        None => trace_id.to_string(),
    }
}

/// The writer thread: owns the staging chunk, drops in-run duplicates,
/// commits every `chunk_bytes` and at the end.
fn write_all(
    lake: &Lake,
    rx: Receiver<Message>,
    known: &HashSet<String>,
    run_id: &str,
    options: &IngestOptions,
) -> Result<IngestSummary, IngestError> {
    let mut summary = IngestSummary {
        run_id: run_id.to_string(),
        ..IngestSummary::default()
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut chunk_index = 0;
    let mut chunk = None;
    let mut chunk_bytes = 0u64;
    let mut log = Vec::new();

    let flush = |chunk: &mut Option<crate::lake::ChunkWriter>, log: &mut Vec<LogRow>| -> Result<(), LakeError> {
        let Some(mut writer) = chunk.take() else { return Ok(()) };
        if !log.is_empty() {
            let batch = batches::log_batch(log).expect("log rows match the schema");
            writer.write(&[(&tables::INGEST_LOG, batch)])?;
            log.clear();
        }
        writer.commit()
    };

    for message in rx {
        if chunk.is_none() {
            chunk = Some(lake.chunk(&format!("{run_id}-{chunk_index:05}"))?);
            chunk_index += 1;
        }
        match message {
            Message::Skipped => summary.skipped += 1,
            Message::Log(row) => {
                if row.outcome == "manifest" {
                    summary.manifests += 1;
                }
                if row.outcome == "failed" {
                    summary.failed += 1;
                    summary
                        .failures
                        .push((source_label(&row), row.reason.clone().unwrap_or_default()));
                    tracing::warn!("{}: {}", source_label(&row), row.reason.as_deref().unwrap_or(""));
                }
                log.push(row);
            }
            Message::Trace {
                hash,
                batches,
                log: row,
                uncompressed,
                kernels,
            } => {
                if known.contains(&hash) || !seen.insert(hash) {
                    summary.skipped += 1;
                    continue;
                }
                chunk.as_mut().expect("opened above").write(&batches.tables)?;
                tracing::info!("ingested {}", source_label(&row));
                if let Some(dropped) = &row.reason {
                    tracing::warn!("{}: {dropped}", source_label(&row));
                    summary.dropped.push((source_label(&row), dropped.clone()));
                }
                log.push(row);
                summary.ingested += 1;
                summary.uncompressed_bytes += uncompressed;
                summary.kernels += kernels;
                chunk_bytes += uncompressed;
                if chunk_bytes >= options.chunk_bytes {
                    flush(&mut chunk, &mut log)?;
                    chunk_bytes = 0;
                }
            }
        }
    }
    if log.is_empty() && summary.ingested == 0 {
        if let Some(writer) = chunk.take() {
            writer.abandon()?;
        }
    } else {
        flush(&mut chunk, &mut log)?;
    }
    Ok(summary)
}

fn source_label(row: &LogRow) -> String {
    match &row.archive_member {
        Some(m) => format!("{} [{}]", row.source, m),
        None => row.source.clone(),
    }
}

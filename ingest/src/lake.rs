//! The lake on disk: one folder per table, Parquet files that appear whole.
//!
//! Commit protocol (a killed run leaves the lake as it was, or with whole
//! chunks added): a chunk's files are written under `_staging/<chunk>/`,
//! then a `COMMITTED` marker is renamed into place (the commit point), then
//! the files are renamed into their table folders, `traces` and
//! `_ingest_log` last. On open, a staged chunk with its marker is finished;
//! one without is deleted.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, StringArray};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;
use tracecast_schemas::{TableDef, lake};

const STAGING: &str = "_staging";
const MARKER: &str = "COMMITTED";
const LOCK: &str = ".ingest.lock";

#[derive(Debug, thiserror::Error)]
pub enum LakeError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: {source}")]
    Parquet {
        path: PathBuf,
        source: parquet::errors::ParquetError,
    },
    #[error("{0}: another `tracecast ingest` is writing to this lake")]
    Busy(PathBuf),
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> LakeError + '_ {
    move |source| LakeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn pq_err(path: &Path) -> impl FnOnce(parquet::errors::ParquetError) -> LakeError + '_ {
    move |source| LakeError::Parquet {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether `dir` is a tracecast lake (it has the lock file every writer
/// creates, or an ingest log): directory walks never descend into one.
pub fn is_lake(dir: &Path) -> bool {
    dir.join(LOCK).is_file() || dir.join(lake::INGEST_LOG.name).is_dir()
}

/// A lake opened for writing; holds the lake's lock until dropped.
pub struct Lake {
    root: PathBuf,
    _lock: File,
    /// Encodes a chunk's tables in parallel. Its own pool: the global one is
    /// full of parsers that block until the writer takes their batches.
    encoders: Arc<rayon::ThreadPool>,
}

impl Lake {
    pub fn open(root: &Path) -> Result<Lake, LakeError> {
        fs::create_dir_all(root).map_err(io_err(root))?;
        let lock_path = root.join(LOCK);
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        // An OS lock dies with its process, so a killed run never blocks the next.
        lock.try_lock().map_err(|_| LakeError::Busy(root.to_path_buf()))?;
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let encoders = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("parquet-encoder-{i}"))
            .build()
            .map_err(|e| LakeError::Io {
                path: root.to_path_buf(),
                source: io::Error::other(e),
            })?;
        let lake = Lake {
            root: root.to_path_buf(),
            _lock: lock,
            encoders: Arc::new(encoders),
        };
        lake.recover()?;
        Ok(lake)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn recover(&self) -> Result<(), LakeError> {
        let staging = self.root.join(STAGING);
        let Ok(entries) = fs::read_dir(&staging) else {
            return Ok(());
        };
        let mut chunks: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        chunks.sort();
        for chunk in chunks {
            if chunk.join(MARKER).exists() {
                tracing::warn!("finishing chunk {} left by an interrupted run", chunk.display());
                publish(&self.root, &chunk)?;
            } else {
                tracing::warn!(
                    "discarding uncommitted chunk {} left by an interrupted run",
                    chunk.display()
                );
                fs::remove_dir_all(&chunk).map_err(io_err(&chunk))?;
            }
        }
        Ok(())
    }

    /// Content hashes already in the lake: every ingested trace, every
    /// archive whose members were all handled, every collector manifest.
    pub fn known_hashes(&self) -> Result<HashSet<String>, LakeError> {
        let mut known = HashSet::new();
        read_strings(&self.root, &lake::TRACES, "content_hash", |_| true, &mut known)?;
        read_strings(
            &self.root,
            &lake::INGEST_LOG,
            "content_hash",
            |outcome| matches!(outcome, "archive" | "manifest"),
            &mut known,
        )?;
        Ok(known)
    }

    pub fn chunk(&self, name: &str) -> Result<ChunkWriter, LakeError> {
        let dir = self.root.join(STAGING).join(name);
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        Ok(ChunkWriter {
            lake_root: self.root.clone(),
            dir,
            name: name.to_string(),
            writers: Vec::new(),
            encoders: Arc::clone(&self.encoders),
        })
    }
}

/// Reads one string column of a table, keeping values whose row passes
/// `keep_outcome` (applied to `outcome` where the table has it).
fn read_strings(
    root: &Path,
    def: &TableDef,
    column: &str,
    keep_outcome: impl Fn(&str) -> bool,
    out: &mut HashSet<String>,
) -> Result<(), LakeError> {
    for path in table_files(root, def)? {
        let file = File::open(&path).map_err(io_err(&path))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(pq_err(&path))?;
        let schema = builder.parquet_schema();
        let wanted: Vec<usize> = [
            Some(column),
            def.columns.iter().any(|c| c.name == "outcome").then_some("outcome"),
        ]
        .into_iter()
        .flatten()
        .filter_map(|name| schema.columns().iter().position(|c| c.name() == name))
        .collect();
        let mask = ProjectionMask::leaves(schema, wanted);
        let reader = builder.with_projection(mask).build().map_err(pq_err(&path))?;
        for batch in reader {
            let batch = batch.map_err(|e| LakeError::Parquet {
                path: path.clone(),
                source: e.into(),
            })?;
            let values = string_column(&batch, column);
            let outcomes = string_column(&batch, "outcome");
            for row in 0..batch.num_rows() {
                let keep = outcomes.is_none_or(|o| keep_outcome(o.value(row)));
                if let Some(values) = values
                    && keep
                    && values.is_valid(row)
                {
                    out.insert(values.value(row).to_string());
                }
            }
        }
    }
    Ok(())
}

fn string_column<'b>(batch: &'b RecordBatch, name: &str) -> Option<&'b StringArray> {
    batch.column_by_name(name)?.as_any().downcast_ref::<StringArray>()
}

/// Parquet files of a table, in name order.
pub fn table_files(root: &Path, def: &TableDef) -> Result<Vec<PathBuf>, LakeError> {
    let dir = root.join(def.name);
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LakeError::Io { path: dir, source: e }),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    Ok(files)
}

/// Files of one chunk being written in the staging area.
pub struct ChunkWriter {
    lake_root: PathBuf,
    dir: PathBuf,
    name: String,
    writers: Vec<(&'static TableDef, ArrowWriter<File>)>,
    encoders: Arc<rayon::ThreadPool>,
}

impl ChunkWriter {
    fn writer_for(&mut self, def: &'static TableDef) -> Result<usize, LakeError> {
        if let Some(pos) = self.writers.iter().position(|(d, _)| d.name == def.name) {
            return Ok(pos);
        }
        let table_dir = self.dir.join(def.name);
        fs::create_dir_all(&table_dir).map_err(io_err(&table_dir))?;
        let path = table_dir.join(format!("part-{}.parquet", self.name));
        let file = File::create(&path).map_err(io_err(&path))?;
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("valid level")))
            .set_max_row_group_row_count(Some(256 * 1024));
        // Integers are delta-encoded rather than put in a dictionary: times
        // and ids are mostly distinct, so interning every value is wasted
        // work, and sorted times, running ids and repeated values (thread
        // ids, depths) shrink to a few bits (the lake is a third the size).
        for column in def.columns.iter().filter(|c| c.ty.is_flat_integer()) {
            let path = ColumnPath::from(column.name);
            props = props
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
        }
        let props = props.build();
        let writer = ArrowWriter::try_new(file, def.schema(), Some(props)).map_err(pq_err(&path))?;
        self.writers.push((def, writer));
        Ok(self.writers.len() - 1)
    }

    /// Appends one trace's batches, encoding the tables in parallel.
    pub fn write(&mut self, tables: &[(&'static TableDef, RecordBatch)]) -> Result<(), LakeError> {
        let mut work: Vec<(usize, &RecordBatch)> = Vec::with_capacity(tables.len());
        for (def, batch) in tables.iter().filter(|(_, b)| b.num_rows() > 0) {
            work.push((self.writer_for(def)?, batch));
        }
        let dir = &self.dir;
        let mut writers: Vec<Option<&mut (&'static TableDef, ArrowWriter<File>)>> =
            self.writers.iter_mut().map(Some).collect();
        let jobs: Vec<(&mut (&'static TableDef, ArrowWriter<File>), &RecordBatch)> = work
            .into_iter()
            .map(|(pos, batch)| (writers[pos].take().expect("one batch per table"), batch))
            .collect();
        self.encoders.install(|| {
            jobs.into_par_iter()
                .try_for_each(|((def, writer), batch)| writer.write(batch).map_err(|e| pq_err(&dir.join(def.name))(e)))
        })
    }

    /// Closes the files (in parallel: encoding the last row groups and
    /// fsync), marks the chunk committed and publishes it.
    pub fn commit(self) -> Result<(), LakeError> {
        let dir = &self.dir;
        let writers = self.writers;
        self.encoders.install(|| {
            writers.into_par_iter().try_for_each(|(def, writer)| {
                let path = dir.join(def.name);
                let file = writer.into_inner().map_err(pq_err(&path))?;
                file.sync_all().map_err(io_err(&path))
            })
        })?;
        let marker_tmp = self.dir.join(format!("{MARKER}.tmp"));
        File::create(&marker_tmp)
            .and_then(|f| f.sync_all())
            .map_err(io_err(&marker_tmp))?;
        fs::rename(&marker_tmp, self.dir.join(MARKER)).map_err(io_err(&marker_tmp))?;
        publish(&self.lake_root, &self.dir)
    }

    /// Drops the staged files (used when nothing was written).
    pub fn abandon(self) -> Result<(), LakeError> {
        drop(self.writers);
        fs::remove_dir_all(&self.dir).map_err(io_err(&self.dir))
    }
}

/// Moves a committed chunk's files into their tables, in `lake::TABLES`
/// order, so `traces` and `_ingest_log` (which mark traces as present) land last.
fn publish(root: &Path, chunk: &Path) -> Result<(), LakeError> {
    for def in lake::TABLES {
        let staged = chunk.join(def.name);
        let Ok(entries) = fs::read_dir(&staged) else { continue };
        let target_dir = root.join(def.name);
        fs::create_dir_all(&target_dir).map_err(io_err(&target_dir))?;
        for entry in entries.filter_map(Result::ok) {
            let target = target_dir.join(entry.file_name());
            fs::rename(entry.path(), &target).map_err(io_err(&target))?;
        }
    }
    fs::remove_dir_all(chunk).map_err(io_err(chunk))
}

//! One Parquet part file of a feature table: written under a temporary
//! name and renamed whole, its columns encoded in parallel.

use std::fs::File;
use std::path::{Path, PathBuf};

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::arrow::arrow_writer::{ArrowColumnChunk, ArrowRowGroupWriterFactory, compute_leaves};
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::errors::ParquetError;
use datafusion::parquet::file::properties::WriterProperties;
use datafusion::parquet::file::writer::SerializedFileWriter;
use datafusion::parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use crate::FeaturesError;

/// Rows buffered before they are encoded as one row group.
const ROW_GROUP_ROWS: usize = 65_536;

pub struct PartWriter {
    path: PathBuf,
    tmp: PathBuf,
    schema: SchemaRef,
    file: SerializedFileWriter<File>,
    columns: ArrowRowGroupWriterFactory,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    row_groups: usize,
    rows: u64,
}

impl PartWriter {
    /// `dictionary_columns`: columns with few distinct values, stored
    /// dictionary-encoded (text columns always are).
    pub fn create(path: &Path, schema: &SchemaRef, dictionary_columns: &[String]) -> Result<Self, FeaturesError> {
        let tmp = path.with_extension("parquet.tmp");
        // The other numeric columns are mostly distinct: interning every
        // value would buy no smaller file.
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("valid level")))
            .set_dictionary_enabled(false);
        for field in schema.fields() {
            if field.data_type() == &DataType::Utf8 || dictionary_columns.contains(field.name()) {
                props = props.set_column_dictionary_enabled(ColumnPath::from(field.name().as_str()), true);
            }
        }
        let file = File::create(&tmp).map_err(|source| io_error(&tmp, source))?;
        // ArrowWriter sets up the file as pandas and DuckDB expect it (the
        // Arrow schema in its metadata); its parts then encode in parallel.
        let (file, columns) = ArrowWriter::try_new(file, schema.clone(), Some(props.build()))
            .and_then(ArrowWriter::into_serialized_writer)
            .map_err(|e| parquet_error(&tmp, e))?;
        Ok(PartWriter {
            path: path.to_path_buf(),
            tmp,
            schema: schema.clone(),
            file,
            columns,
            pending: Vec::new(),
            pending_rows: 0,
            row_groups: 0,
            rows: 0,
        })
    }

    pub fn write(&mut self, batch: RecordBatch) -> Result<(), FeaturesError> {
        // Re-labelled with the declared schema, which also checks that no
        // column declared non-null holds a null.
        let batch = RecordBatch::try_new(self.schema.clone(), batch.columns().to_vec())?;
        self.rows += batch.num_rows() as u64;
        self.pending_rows += batch.num_rows();
        self.pending.push(batch);
        if self.pending_rows >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Encodes the buffered rows as one row group, a column per task.
    fn flush(&mut self) -> Result<(), FeaturesError> {
        if self.pending_rows == 0 {
            return Ok(());
        }
        let batches = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        let writers = self
            .columns
            .create_column_writers(self.row_groups)
            .map_err(|e| parquet_error(&self.tmp, e))?;
        // Our schemas are flat: one writer (leaf) per field.
        if writers.len() != self.schema.fields().len() {
            return Err(parquet_error(
                &self.tmp,
                ParquetError::General("a nested column: the part writer takes flat schemas only".into()),
            ));
        }
        let chunks: Vec<ArrowColumnChunk> = writers
            .into_par_iter()
            .zip(self.schema.fields().par_iter().enumerate())
            .map(|(mut writer, (i, field))| {
                for batch in &batches {
                    for leaf in compute_leaves(field, batch.column(i))? {
                        writer.write(&leaf)?;
                    }
                }
                writer.close()
            })
            .collect::<Result<_, ParquetError>>()
            .map_err(|e| parquet_error(&self.tmp, e))?;
        let mut row_group = self.file.next_row_group().map_err(|e| parquet_error(&self.tmp, e))?;
        for chunk in chunks {
            chunk
                .append_to_row_group(&mut row_group)
                .map_err(|e| parquet_error(&self.tmp, e))?;
        }
        row_group.close().map_err(|e| parquet_error(&self.tmp, e))?;
        self.row_groups += 1;
        Ok(())
    }

    /// Closes the file and puts it in place; returns the rows written.
    pub fn finish(mut self) -> Result<u64, FeaturesError> {
        self.flush()?;
        self.file.close().map_err(|e| parquet_error(&self.tmp, e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|source| io_error(&self.tmp, source))?;
        Ok(self.rows)
    }
}

pub fn io_error(path: &Path, source: std::io::Error) -> FeaturesError {
    FeaturesError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn parquet_error(path: &Path, e: ParquetError) -> FeaturesError {
    io_error(path, std::io::Error::other(e))
}

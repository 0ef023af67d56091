//! Row-wise reading of the tabular inputs (CSV with a header row, or Parquet)
//! with cell parsers whose errors name the file, line and column.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::{PlanError, Result};

/// A table read into strings: header names and rows, each with its line
/// number in the source (1-based, the header is line 1; for Parquet, row + 1).
pub struct Rows {
    pub path: PathBuf,
    pub header: Vec<String>,
    index: HashMap<String, usize>,
    pub rows: Vec<(u64, Vec<String>)>,
}

impl Rows {
    pub fn read(path: &Path) -> Result<Rows> {
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet")) {
            Self::read_parquet(path)
        } else {
            Self::read_csv(path)
        }
    }

    fn read_csv(path: &Path) -> Result<Rows> {
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .trim(csv::Trim::All)
            .from_path(path)
            .map_err(|e| csv_err(path, e))?;
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| csv_err(path, e))?
            .iter()
            .map(|h| h.trim_start_matches('\u{feff}').to_string())
            .collect();
        let mut rows = Vec::new();
        for rec in reader.records() {
            let rec = rec.map_err(|e| csv_err(path, e))?;
            let line = rec.position().map_or(0, |p| p.line());
            if rec.iter().all(|c| c.is_empty()) {
                continue;
            }
            rows.push((line, rec.iter().map(str::to_string).collect()));
        }
        Ok(Self::new(path, header, rows))
    }

    fn read_parquet(path: &Path) -> Result<Rows> {
        let file = File::open(path).map_err(|e| PlanError::io(path, e))?;
        let pq = |e: parquet::errors::ParquetError| PlanError::file(path, format!("not a readable Parquet file: {e}"));
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(pq)?
            .build()
            .map_err(pq)?;
        let mut header = Vec::new();
        let mut rows = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|e| PlanError::file(path, e.to_string()))?;
            if header.is_empty() {
                header = batch.schema().fields().iter().map(|f| f.name().clone()).collect();
            }
            let n = batch.num_rows();
            let base = rows.len();
            rows.extend((0..n).map(|i| ((base + i + 2) as u64, Vec::with_capacity(header.len()))));
            for col in batch.columns() {
                for i in 0..n {
                    rows[base + i].1.push(cell_string(col.as_ref(), i));
                }
            }
        }
        Ok(Self::new(path, header, rows))
    }

    fn new(path: &Path, header: Vec<String>, rows: Vec<(u64, Vec<String>)>) -> Rows {
        let index = header
            .iter()
            .enumerate()
            .map(|(i, h)| (h.to_ascii_lowercase(), i))
            .collect();
        Rows {
            path: path.to_path_buf(),
            header,
            index,
            rows,
        }
    }

    pub fn has(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    pub fn col(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The index of a column the format requires.
    pub fn need(&self, name: &str) -> Result<usize> {
        self.col(name).ok_or_else(|| {
            PlanError::file(
                &self.path,
                format!("missing column `{name}` (columns: {})", self.header.join(", ")),
            )
        })
    }

    pub fn cell<'a>(&self, row: &'a [String], col: usize) -> &'a str {
        row.get(col).map_or("", String::as_str)
    }

    pub fn field_err(&self, line: u64, col: usize, reason: impl Into<String>) -> PlanError {
        PlanError::Field {
            path: self.path.clone(),
            line,
            column: self.header[col].clone(),
            reason: reason.into(),
        }
    }

    pub fn f64_opt(&self, line: u64, row: &[String], col: Option<usize>) -> Result<Option<f64>> {
        let Some(col) = col else { return Ok(None) };
        let s = self.cell(row, col);
        if is_null(s) {
            return Ok(None);
        }
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            Ok(_) => Ok(None),
            Err(_) => Err(self.field_err(line, col, format!("`{s}` is not a number"))),
        }
    }

    pub fn f64_req(&self, line: u64, row: &[String], col: usize) -> Result<f64> {
        self.f64_opt(line, row, Some(col))?
            .ok_or_else(|| self.field_err(line, col, "value is missing"))
    }

    pub fn int_opt(&self, line: u64, row: &[String], col: Option<usize>) -> Result<Option<i64>> {
        let Some(col) = col else { return Ok(None) };
        let s = self.cell(row, col);
        if is_null(s) {
            return Ok(None);
        }
        if let Ok(v) = s.parse::<i64>() {
            return Ok(Some(v));
        }
        // "8.0" from tools that write every number as a float.
        match s.parse::<f64>() {
            Ok(v) if v.fract() == 0.0 && v.abs() < 9e15 => Ok(Some(v as i64)),
            _ => Err(self.field_err(line, col, format!("`{s}` is not an integer"))),
        }
    }

    pub fn int_req(&self, line: u64, row: &[String], col: usize) -> Result<i64> {
        self.int_opt(line, row, Some(col))?
            .ok_or_else(|| self.field_err(line, col, "value is missing"))
    }

    pub fn bool_opt(&self, line: u64, row: &[String], col: Option<usize>) -> Result<Option<bool>> {
        let Some(col) = col else { return Ok(None) };
        let s = self.cell(row, col);
        match s.to_ascii_lowercase().as_str() {
            "" | "null" | "none" | "na" => Ok(None),
            "true" | "1" | "yes" | "y" => Ok(Some(true)),
            "false" | "0" | "no" | "n" => Ok(Some(false)),
            _ => Err(self.field_err(line, col, format!("`{s}` is not a boolean (true/false)"))),
        }
    }

    pub fn str_opt(&self, row: &[String], col: Option<usize>) -> Option<String> {
        let s = self.cell(row, col?);
        (!is_null(s)).then(|| s.to_string())
    }
}

fn is_null(s: &str) -> bool {
    matches!(s, "" | "null" | "NULL" | "None" | "NA" | "nan" | "NaN")
}

fn csv_err(path: &Path, e: csv::Error) -> PlanError {
    let line = e.position().map(|p| p.line());
    match (e.kind(), line) {
        (csv::ErrorKind::Io(_), _) => PlanError::file(path, e.to_string()),
        (_, Some(line)) => PlanError::Line {
            path: path.into(),
            line,
            reason: e.to_string(),
        },
        _ => PlanError::file(path, e.to_string()),
    }
}

/// A Parquet cell as the string a CSV would hold, so one parser serves both.
fn cell_string(col: &dyn Array, i: usize) -> String {
    if col.is_null(i) {
        return String::new();
    }
    use arrow::datatypes::*;
    match col.data_type() {
        DataType::Utf8 => col.as_string::<i32>().value(i).to_string(),
        DataType::LargeUtf8 => col.as_string::<i64>().value(i).to_string(),
        DataType::Utf8View => col.as_string_view().value(i).to_string(),
        DataType::Boolean => col.as_boolean().value(i).to_string(),
        DataType::Int8 => col.as_primitive::<Int8Type>().value(i).to_string(),
        DataType::Int16 => col.as_primitive::<Int16Type>().value(i).to_string(),
        DataType::Int32 => col.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::Int64 => col.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::UInt8 => col.as_primitive::<UInt8Type>().value(i).to_string(),
        DataType::UInt16 => col.as_primitive::<UInt16Type>().value(i).to_string(),
        DataType::UInt32 => col.as_primitive::<UInt32Type>().value(i).to_string(),
        DataType::UInt64 => col.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::Float32 => col.as_primitive::<Float32Type>().value(i).to_string(),
        DataType::Float64 => col.as_primitive::<Float64Type>().value(i).to_string(),
        _ => arrow::util::display::array_value_to_string(col, i).unwrap_or_default(),
    }
}

//! CSV input, plain or gzip (told apart by the magic bytes), with columns
//! looked up by header name.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::OpModelError;

/// Every `.csv` and `.csv.gz` file under `dir` (recursively), in path
/// order; none when `dir` does not exist.
pub(crate) fn csv_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() {
            out.extend(csv_files(&path));
        } else if path
            .to_str()
            .is_some_and(|s| s.ends_with(".csv") || s.ends_with(".csv.gz"))
        {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The names of the folders in `dir`, sorted; none when `dir` does not exist.
pub(crate) fn subfolders(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .collect();
    names.sort();
    names
}

/// A CSV file's rows, each cell looked up by its header's name.
pub struct CsvTable {
    index: HashMap<String, usize>,
    pub rows: Vec<csv::StringRecord>,
}

impl CsvTable {
    pub fn read(path: &Path) -> Result<CsvTable, OpModelError> {
        let bytes = std::fs::read(path).map_err(|source| OpModelError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = if bytes.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(bytes.as_slice())
                .read_to_end(&mut out)
                .map_err(|e| OpModelError::Parse {
                    path: path.to_path_buf(),
                    reason: format!("not a valid gzip file: {e}"),
                })?;
            out
        } else {
            bytes
        };
        let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_slice());
        let bad = |e: csv::Error| OpModelError::Parse {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let index = reader
            .headers()
            .map_err(bad)?
            .iter()
            .enumerate()
            .map(|(i, h)| (h.to_string(), i))
            .collect();
        let rows = reader.records().collect::<Result<Vec<_>, _>>().map_err(bad)?;
        Ok(CsvTable { index, rows })
    }

    pub fn has(&self, column: &str) -> bool {
        self.index.contains_key(column)
    }

    /// The cell of `column` in row `row` ("" where the row is short or the column absent).
    pub fn get<'a>(&'a self, row: usize, column: &str) -> &'a str {
        self.index
            .get(column)
            .and_then(|&i| self.rows[row].get(i))
            .unwrap_or("")
    }

    /// A number in `column`; `None` when empty or absent (latencies removed
    /// from an evaluation set).
    pub fn number(&self, row: usize, column: &str) -> Option<f64> {
        let cell = self.get(row, column).trim();
        if cell.is_empty() {
            return None;
        }
        cell.parse::<f64>().ok().filter(|v| v.is_finite())
    }

    /// A required number, with an error naming the file, line and column.
    pub fn require(&self, row: usize, column: &str, path: &Path) -> Result<f64, OpModelError> {
        self.number(row, column).ok_or_else(|| OpModelError::Parse {
            path: path.to_path_buf(),
            reason: format!(
                "line {}: column `{column}` is `{}`, not a number",
                row + 2,
                self.get(row, column)
            ),
        })
    }
}

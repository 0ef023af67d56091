//! ElasticFlow's throughput layout (pkusys/ElasticFlow `scheduler/throughputs_*`):
//! one CSV per model, `global_batch_size,1,2,4,...`, one row per global
//! batch size, iterations/s per GPU count; empty, `nan` and `0` cells are
//! "not measured". Read to validate the scaling model, written so
//! ElasticFlow-style simulators can take tracecast's predictions.

use std::collections::BTreeMap;
use std::path::Path;

use crate::PredictError;
use crate::scaling::MeasuredCurve;

/// Every curve of a folder of `<model>.csv` files.
pub fn read_dir(dir: &Path) -> Result<Vec<MeasuredCurve>, PredictError> {
    let read_err = |source| PredictError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(PredictError::Input {
            path: dir.to_path_buf(),
            reason: "no <model>.csv throughput files".into(),
        });
    }
    let mut curves = Vec::new();
    for file in files {
        curves.extend(read_file(&file)?);
    }
    Ok(curves)
}

pub fn read_file(path: &Path) -> Result<Vec<MeasuredCurve>, PredictError> {
    let bad = |reason: String| PredictError::Input {
        path: path.to_path_buf(),
        reason,
    };
    let workload = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut reader = csv::Reader::from_path(path).map_err(|e| bad(e.to_string()))?;
    let headers = reader.headers().map_err(|e| bad(e.to_string()))?.clone();
    if headers.get(0) != Some("global_batch_size") {
        return Err(bad(
            "the first column is not global_batch_size: not ElasticFlow's throughput layout".into(),
        ));
    }
    let counts: Vec<u32> = headers
        .iter()
        .skip(1)
        .map(|h| {
            h.trim()
                .parse()
                .map_err(|_| bad(format!("column `{h}` is not a GPU count")))
        })
        .collect::<Result<_, _>>()?;
    let mut curves = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| bad(e.to_string()))?;
        let batch: u32 = record.get(0).and_then(|b| b.trim().parse().ok()).ok_or_else(|| {
            bad(format!(
                "batch size `{}` is not a positive integer",
                record.get(0).unwrap_or("")
            ))
        })?;
        let points = counts
            .iter()
            .zip(record.iter().skip(1))
            .filter_map(|(&n, cell)| {
                cell.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .map(|v| (n, v))
            })
            .collect();
        curves.push(MeasuredCurve {
            workload: workload.clone(),
            global_batch: batch,
            points,
        });
    }
    Ok(curves)
}

/// Writes `<dir>/<model>.csv` from (global batch, GPUs) -> iterations/s.
pub fn write_file(path: &Path, rates: &BTreeMap<(u64, u32), f64>) -> Result<(), PredictError> {
    let mut counts: Vec<u32> = rates.keys().map(|k| k.1).collect();
    counts.sort();
    counts.dedup();
    let mut batches: Vec<u64> = rates.keys().map(|k| k.0).collect();
    batches.dedup();
    let mut text = String::from("global_batch_size");
    for n in &counts {
        text.push_str(&format!(",{n}"));
    }
    text.push('\n');
    for b in batches {
        text.push_str(&b.to_string());
        for n in &counts {
            match rates.get(&(b, *n)) {
                Some(r) => text.push_str(&format!(",{r}")),
                None => text.push_str(",nan"),
            }
        }
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|source| PredictError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_the_layout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("resnet.csv");
        let rates = BTreeMap::from([((64, 1), 6.5), ((64, 2), 11.0), ((128, 2), 6.0)]);
        write_file(&path, &rates).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "global_batch_size,1,2\n64,6.5,11\n128,nan,6\n");
        let curves = read_file(&path).unwrap();
        assert_eq!(curves.len(), 2);
        assert_eq!(curves[0].workload, "resnet");
        assert_eq!(curves[0].points, vec![(1, 6.5), (2, 11.0)]);
        assert_eq!(curves[1].points, vec![(2, 6.0)], "nan is not measured");
    }
}

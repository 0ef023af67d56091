//! Throughput readers: tracecast's table (CSV/Parquet), ElasticFlow's
//! throughput CSV folders and Gavel's throughput JSON.

use std::path::Path;

use tracecast_schemas::plan::THROUGHPUT;

use super::{Point, ThroughputTable};
use crate::error::{PlanError, Result};
use crate::table::Rows;

/// Read one throughput source, by its shape:
/// - a folder of `<model>.csv` files (ElasticFlow; the folder name is the GPU
///   type) or a folder of such folders (one per GPU type);
/// - a `.json` file (Gavel: worker type -> "('<model> (batch size N)', count)" -> {"null": steps/s});
/// - a `.csv`/`.parquet` file in tracecast's `plan_throughput` table format.
pub fn read_throughput(path: &Path) -> Result<ThroughputTable> {
    let mut table = if path.is_dir() {
        read_elasticflow_tree(path)?
    } else if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
        read_gavel(path)?
    } else {
        read_own(path)?
    };
    if table.is_empty() {
        return Err(PlanError::file(
            path,
            "no throughput figures (every cell empty, 0 or NaN?)",
        ));
    }
    table.sources.push(path.display().to_string());
    tracing::info!(path = %path.display(), figures = table.len(), "read throughput");
    Ok(table)
}

fn read_own(path: &Path) -> Result<ThroughputTable> {
    let rows = Rows::read(path)?;
    let need = |name: &str| rows.need(THROUGHPUT.columns[THROUGHPUT.index_of(name)].name);
    let (jt, gt, bs, n) = (
        need("job_type")?,
        need("gpu_type")?,
        need("batch_size")?,
        need("num_gpus")?,
    );
    let (ips, nodes) = (need("iters_per_s")?, rows.col("num_nodes"));
    let mut t = ThroughputTable::default();
    for (line, row) in &rows.rows {
        let line = *line;
        let positive = |col: usize, v: i64| -> Result<u32> {
            u32::try_from(v)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| rows.field_err(line, col, format!("`{v}` is not a positive integer")))
        };
        let job_type = rows
            .str_opt(row, Some(jt))
            .ok_or_else(|| rows.field_err(line, jt, "value is missing"))?;
        let gpu_type = rows
            .str_opt(row, Some(gt))
            .ok_or_else(|| rows.field_err(line, gt, "value is missing"))?;
        let batch = positive(bs, rows.int_req(line, row, bs)?)?;
        let gpus = positive(n, rows.int_req(line, row, n)?)?;
        let nodes = match rows.int_opt(line, row, nodes)? {
            Some(v) => Some(positive(nodes.unwrap(), v)?),
            None => None,
        };
        if let Some(v) = rows.f64_opt(line, row, Some(ips))? {
            if v < 0.0 {
                return Err(rows.field_err(line, ips, format!("`{v}` is negative")));
            }
            t.insert(
                &job_type,
                &gpu_type,
                batch,
                Point {
                    gpus,
                    nodes,
                    iters_per_s: v,
                },
            );
        }
    }
    Ok(t)
}

fn read_elasticflow_tree(dir: &Path) -> Result<ThroughputTable> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| PlanError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let csvs: Vec<_> = entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    let mut t = ThroughputTable::default();
    if !csvs.is_empty() {
        let gpu_type = dir
            .file_name()
            .map_or("gpu".into(), |s| s.to_string_lossy().to_string());
        for p in csvs {
            read_elasticflow_csv(p, &gpu_type, &mut t)?;
        }
    } else {
        for sub in entries.iter().filter(|p| p.is_dir()) {
            t.merge(read_elasticflow_tree(sub)?);
        }
    }
    if t.is_empty() {
        return Err(PlanError::file(
            dir,
            "no throughput CSVs (expected <model>.csv files, or one folder of them per GPU type)",
        ));
    }
    Ok(t)
}

/// `global_batch_size,1,2,4,...`: one row per batch size, one column per GPU count.
fn read_elasticflow_csv(path: &Path, gpu_type: &str, t: &mut ThroughputTable) -> Result<()> {
    let rows = Rows::read(path)?;
    let model = path.file_stem().unwrap().to_string_lossy().to_string();
    let bs_col = rows.need("global_batch_size")?;
    let mut counts = Vec::new();
    for (i, h) in rows.header.iter().enumerate() {
        if i == bs_col {
            continue;
        }
        let n: u32 = h.trim().parse().map_err(|_| PlanError::Line {
            path: path.into(),
            line: 1,
            reason: format!("column `{h}` is not a GPU count"),
        })?;
        counts.push((i, n));
    }
    for (line, row) in &rows.rows {
        let bs = rows.int_req(*line, row, bs_col)?;
        let bs = u32::try_from(bs)
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| rows.field_err(*line, bs_col, format!("`{bs}` is not a batch size")))?;
        for &(col, gpus) in &counts {
            // Empty, `nan` and `0` cells mean "not measured"; insert drops them.
            if let Some(v) = rows.f64_opt(*line, row, Some(col))? {
                t.insert(
                    &model,
                    gpu_type,
                    bs,
                    Point {
                        gpus,
                        nodes: None,
                        iters_per_s: v,
                    },
                );
            }
        }
    }
    Ok(())
}

/// Gavel `simulation_throughputs.json`: `{worker: {"('ResNet-18 (batch size 64)', 2)": {"null": 12.3, ...}}}`.
/// Only the isolated figure (`null`) is used; co-location figures are ignored.
fn read_gavel(path: &Path) -> Result<ThroughputTable> {
    let text = std::fs::read_to_string(path).map_err(|e| PlanError::io(path, e))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| PlanError::Line {
        path: path.into(),
        line: e.line() as u64,
        reason: format!("not JSON: {e}"),
    })?;
    let workers = json
        .as_object()
        .ok_or_else(|| PlanError::file(path, "expected an object of worker types"))?;
    let mut t = ThroughputTable::default();
    for (worker, jobs) in workers {
        let jobs = jobs
            .as_object()
            .ok_or_else(|| PlanError::file(path, format!("`{worker}`: expected an object of job types")))?;
        for (key, figs) in jobs {
            let (model, bs, gpus) = parse_gavel_key(key).ok_or_else(|| {
                PlanError::file(
                    path,
                    format!("`{worker}`: job key `{key}` is not \"('<model> (batch size N)', <count>)\""),
                )
            })?;
            let Some(v) = figs.get("null").and_then(serde_json::Value::as_f64) else {
                continue;
            };
            t.insert(
                &model,
                worker,
                bs,
                Point {
                    gpus,
                    nodes: None,
                    iters_per_s: v,
                },
            );
        }
    }
    Ok(t)
}

/// `('ResNet-18 (batch size 64)', 2)` -> ("ResNet-18", 64, 2). Models without a
/// batch size (`('A3C', 1)`) get batch size 1.
fn parse_gavel_key(key: &str) -> Option<(String, u32, u32)> {
    let inner = key.trim().strip_prefix('(')?.strip_suffix(')')?;
    let (name, count) = inner.rsplit_once(',')?;
    let gpus: u32 = count.trim().parse().ok()?;
    let name = name.trim().trim_matches(|c| c == '\'' || c == '"');
    match name.split_once(" (batch size ") {
        Some((model, rest)) => Some((model.to_string(), rest.strip_suffix(')')?.trim().parse().ok()?, gpus)),
        None => Some((name.to_string(), 1, gpus)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gavel_keys() {
        assert_eq!(
            parse_gavel_key("('ResNet-18 (batch size 64)', 2)"),
            Some(("ResNet-18".into(), 64, 2))
        );
        assert_eq!(parse_gavel_key("('A3C', 1)"), Some(("A3C".into(), 1, 1)));
        assert_eq!(parse_gavel_key("ResNet"), None);
    }

    #[test]
    fn gavel_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tp.json");
        std::fs::write(
            &p,
            r#"{"v100": {"('ResNet-18 (batch size 64)', 1)": {"null": 10.0, "('A3C', 1)": [5.0, 1.0]},
                         "('ResNet-18 (batch size 64)', 2)": {"null": 19.0}},
                "k80": {"('ResNet-18 (batch size 64)', 1)": {"null": 2.5}}}"#,
        )
        .unwrap();
        let t = read_throughput(&p).unwrap();
        assert_eq!(t.gpu_types(), vec!["k80", "v100"]);
        assert_eq!(t.curve("resnet-18", "V100", Some(64)).unwrap().r(2), 19.0);
    }

    #[test]
    fn own_table_error_names_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tp.csv");
        std::fs::write(
            &p,
            "job_type,gpu_type,batch_size,num_gpus,iters_per_s\nbert,A100,64,1,3.5\nbert,A100,64,two,6\n",
        )
        .unwrap();
        let e = read_throughput(&p).unwrap_err().to_string();
        assert!(
            e.contains("tp.csv line 3: column `num_gpus`: `two` is not an integer"),
            "{e}"
        );
    }
}

//! `tracecast features`: runs the SQL pipeline over the lake's new traces
//! and writes the window and step tables.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{Int64Type, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::logical_expr::{cast, ident};
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::{DataFrame, ParquetReadOptions, SessionContext};
use futures::StreamExt;
use tracecast_schemas::features::{FEATURE_STEPS, few_value_columns, window_schema};

use tracecast_schemas::features::{FeatureManifest, MANIFEST_FILE, RunEntry, SkippedTrace, TraceEntry};

use crate::manifest;
use crate::part_writer::{PartWriter, io_error};
use crate::selection::SelectedTraces;
use crate::{FeaturesError, LakeOptions, WindowSpec, open_lake, template};

/// One `features` run.
pub struct FeatureRun<'a> {
    pub lake: &'a Path,
    pub out: &'a Path,
    pub spec: WindowSpec,
    pub lake_options: LakeOptions,
    /// A directory of edited copies of the pipeline's SQL files.
    pub sql_dir: Option<&'a Path>,
    /// Traces are computed in groups of about this many GPU items (a trace
    /// is never split): memory grows with the group, not with the lake.
    pub chunk_items: u64,
    /// Called with (items done, items to do) after each group.
    pub progress: &'a (dyn Fn(u64, u64) + Sync),
}

/// GPU items computed in one group when the caller does not say: about 4 GiB
/// of DataFusion memory at W=16 (2.1 GiB measured for 627 k items).
pub const DEFAULT_CHUNK_ITEMS: u64 = 1_000_000;

#[derive(Debug, Default)]
pub struct FeatureSummary {
    /// Traces computed by this run.
    pub traces: usize,
    /// Traces already in the output directory (not recomputed).
    pub already_done: usize,
    pub steps: u64,
    pub windows: u64,
    /// GPU sequence items (kernels, copies, sets) the windows were built from.
    pub items: u64,
    /// Traces that cannot give windows, newly found by this run.
    pub skipped: Vec<SkippedTrace>,
    /// Steps (of computed traces) with an empty GPU sequence.
    pub steps_without_items: u64,
    /// Files written by this run.
    pub files: Vec<PathBuf>,
}

const WINDOWS_DIR: &str = "windows";
const STEPS_DIR: &str = "steps";

struct LakeTrace {
    trace_id: String,
    source: String,
    format: String,
    steps: i64,
    items_in_steps: i64,
}

pub async fn build_features(run: &FeatureRun<'_>) -> Result<FeatureSummary, FeaturesError> {
    let out = run.out;
    let sql = pipeline_sql(run.sql_dir, &run.spec)?;
    let ctx = open_lake(run.lake, &run.lake_options).await?;
    for aggregate in crate::positions::window_aggregates(run.spec) {
        ctx.register_udaf(aggregate);
    }
    let lake_traces = lake_traces(&ctx).await?;
    if lake_traces.is_empty() {
        return Err(FeaturesError::EmptyLake(run.lake.display().to_string()));
    }
    let mut manifest = prepare_output(out, &run.spec)?;

    let known: HashSet<&str> = manifest
        .traces
        .iter()
        .map(|t| t.trace_id.as_str())
        .chain(manifest.skipped.iter().map(|t| t.trace_id.as_str()))
        .collect();
    let mut summary = FeatureSummary {
        already_done: manifest.traces.len(),
        ..FeatureSummary::default()
    };
    let mut selected = Vec::new();
    for t in lake_traces.iter().filter(|t| !known.contains(t.trace_id.as_str())) {
        match unusable(t) {
            Some(reason) => summary.skipped.push(SkippedTrace {
                trace_id: t.trace_id.clone(),
                source: t.source.clone(),
                reason: reason.to_string(),
            }),
            None => selected.push(t),
        }
    }
    drop(known);

    let run_id = format!("{}-{}", now_ms(), std::process::id());
    if !selected.is_empty() {
        let selection = SelectedTraces::default();
        ctx.register_udf(selection.udf());
        let (steps_sql, view_sql) = sql.split_last().expect("five files");
        for (name, text) in view_sql {
            run_statements(&ctx, name, text).await?;
        }

        let windows_path = out.join(WINDOWS_DIR).join(format!("part-{run_id}.parquet"));
        let schema = window_schema(run.spec.window);
        let mut writer = PartWriter::create(&windows_path, &schema, &few_value_columns(run.spec.window))?;
        let total: u64 = selected.iter().map(|t| t.items_in_steps as u64).sum();
        let mut done = 0;
        for chunk in chunks(&selected, run.chunk_items) {
            // The views call selected_trace_key when they run, so a new
            // selection points the whole pipeline at the next group.
            selection.set(chunk.iter().map(|t| t.trace_id.as_str()));
            let started = std::time::Instant::now();
            append(&mut writer, conform(ctx.table("fx_windows").await?, &schema)?).await?;
            done += chunk.iter().map(|t| t.items_in_steps as u64).sum::<u64>();
            tracing::debug!(
                "{} traces ({done} of {total} items) in {:?}",
                chunk.len(),
                started.elapsed()
            );
            (run.progress)(done, total);
        }
        summary.windows = writer.finish()?;

        let read = ParquetReadOptions::default().schema(&schema);
        ctx.register_parquet("fx_new_windows", windows_path.display().to_string(), read)
            .await?;
        // The steps read the lake's operators of every trace this run
        // computed, not only the last chunk's.
        selection.set(selected.iter().map(|t| t.trace_id.as_str()));
        run_statements(&ctx, &steps_sql.0, &steps_sql.1).await?;
        let steps_path = out.join(STEPS_DIR).join(format!("part-{run_id}.parquet"));
        let steps_schema = FEATURE_STEPS.schema();
        let steps = conform(
            ctx.table("fx_steps")
                .await?
                .sort_by(vec![ident("trace_id"), ident("step_id")])?,
            &steps_schema,
        )?;
        // One row per step: small enough to keep, so it is computed once
        // for both the file and the manifest's counts.
        let step_rows = steps.collect().await?;
        let mut steps_writer = PartWriter::create(&steps_path, &steps_schema, &[])?;
        for batch in &step_rows {
            steps_writer.write(batch.clone())?;
        }
        steps_writer.finish()?;
        let per_trace = per_trace_counts(&step_rows);
        for t in &selected {
            let (steps, windows, items) = per_trace.get(&t.trace_id).copied().unwrap_or_default();
            let entry = TraceEntry {
                trace_id: t.trace_id.clone(),
                steps,
                windows,
                items,
                steps_without_items: (t.steps as u64).saturating_sub(steps),
                run_id: run_id.clone(),
            };
            summary.steps += entry.steps;
            summary.items += entry.items;
            summary.steps_without_items += entry.steps_without_items;
            manifest.traces.push(entry);
        }
        summary.traces = selected.len();
        summary.files = vec![windows_path.clone(), steps_path.clone()];
        manifest.runs.push(RunEntry {
            run_id: run_id.clone(),
            files: [&windows_path, &steps_path].iter().map(|p| relative(out, p)).collect(),
            tracecast_version: env!("CARGO_PKG_VERSION").to_string(),
        });
    }
    manifest.skipped.extend(summary.skipped.iter().cloned());
    manifest::write(&manifest, out)?;
    Ok(summary)
}

/// The pipeline's SQL files, expanded for a window shape, in run order.
pub fn pipeline_sql(sql_dir: Option<&Path>, spec: &WindowSpec) -> Result<Vec<(String, String)>, FeaturesError> {
    template::load(sql_dir)?
        .into_iter()
        .map(|(name, text)| template::expand(&name, &text, spec).map(|sql| (name, sql)))
        .collect()
}

/// Why a trace cannot give windows, if it cannot.
fn unusable(t: &LakeTrace) -> Option<&'static str> {
    if t.format != "kineto" {
        Some("an Execution Trace: it records operators, not GPU kernels")
    } else if t.steps == 0 {
        Some("no steps: no ProfilerStep#N, PARAM iteration or Optimizer.step annotations to cut it into iterations")
    } else if t.items_in_steps == 0 {
        Some("no kernels, copies or sets inside its steps")
    } else {
        None
    }
}

/// Creates the output directory, or checks the one there and clears what a
/// dead run left in it.
fn prepare_output(out: &Path, spec: &WindowSpec) -> Result<FeatureManifest, FeaturesError> {
    let manifest = match manifest::read(out)? {
        Some(m) if (m.window, m.stride) != (spec.window, spec.stride) => {
            return Err(FeaturesError::BadOutput {
                dir: out.display().to_string(),
                reason: format!(
                    "it holds windows of W={} S={}, not W={} S={}: use another --out for a new window shape",
                    m.window, m.stride, spec.window, spec.stride
                ),
            });
        }
        Some(m) => m,
        None => {
            // Empty table folders are what a run that died before its
            // first commit leaves; anything else is someone else's.
            let foreign = std::fs::read_dir(out).into_iter().flatten().flatten().any(|e| {
                let table_folder = [WINDOWS_DIR, STEPS_DIR].iter().any(|d| e.file_name() == *d) && e.path().is_dir();
                !table_folder
            });
            if foreign {
                return Err(FeaturesError::BadOutput {
                    dir: out.display().to_string(),
                    reason: format!("not empty and has no {MANIFEST_FILE}: not a tracecast feature directory"),
                });
            }
            FeatureManifest::new(spec.window, spec.stride)
        }
    };
    let committed: HashSet<&str> = manifest.files().collect();
    for sub in [WINDOWS_DIR, STEPS_DIR] {
        let dir = out.join(sub);
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        for entry in std::fs::read_dir(&dir).map_err(|e| io_error(&dir, e))? {
            let path = entry.map_err(|e| io_error(&dir, e))?.path();
            if !committed.contains(relative(out, &path).as_str()) {
                tracing::warn!("removing {}: left by a run that did not finish", path.display());
                std::fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
            }
        }
    }
    Ok(manifest)
}

fn relative(out: &Path, path: &Path) -> String {
    path.strip_prefix(out).unwrap_or(path).display().to_string()
}

async fn lake_traces(ctx: &SessionContext) -> Result<Vec<LakeTrace>, FeaturesError> {
    let sql = "SELECT t.trace_id, \
                      COALESCE(t.source || '!' || t.archive_member, t.source) AS source, \
                      t.format, t.step_count, COALESCE(k.n, 0) + COALESCE(m.n, 0) AS items \
               FROM traces t \
               LEFT JOIN (SELECT trace_id, count(*) AS n FROM kernels WHERE step_id IS NOT NULL GROUP BY 1) k \
                 ON k.trace_id = t.trace_id \
               LEFT JOIN (SELECT trace_id, count(*) AS n FROM memcpy WHERE step_id IS NOT NULL GROUP BY 1) m \
                 ON m.trace_id = t.trace_id \
               ORDER BY t.trace_id";
    let mut traces = Vec::new();
    for batch in ctx.sql(sql).await?.collect().await? {
        let column = |name: &str| {
            batch
                .column_by_name(name)
                .ok_or_else(|| FeaturesError::Query(format!("the lake's trace list has no `{name}` column")))
        };
        let ids = column("trace_id")?.as_string::<i32>();
        let sources = column("source")?.as_string::<i32>();
        let formats = column("format")?.as_string::<i32>();
        let steps = column("step_count")?.as_primitive::<Int64Type>();
        let items = column("items")?.as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            traces.push(LakeTrace {
                trace_id: ids.value(i).to_string(),
                source: sources.value(i).to_string(),
                format: formats.value(i).to_string(),
                steps: steps.value(i),
                items_in_steps: items.value(i),
            });
        }
    }
    Ok(traces)
}

async fn run_statements(ctx: &SessionContext, file: &str, sql: &str) -> Result<(), FeaturesError> {
    let in_file = |e| FeaturesError::Sql {
        file: file.to_string(),
        source: Box::new(e),
    };
    for statement in sql.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        ctx.sql(statement)
            .await
            .map_err(in_file)?
            .collect()
            .await
            .map_err(in_file)?;
    }
    Ok(())
}

/// The frame with exactly the schema's columns, in its order and types.
/// The built-in SQL already selects them so: the frame is then passed on
/// as it is (a projection of some 300 casts costs planning time); edited
/// SQL may select them in any order and type that casts.
fn conform(frame: DataFrame, schema: &SchemaRef) -> Result<DataFrame, FeaturesError> {
    let fields = frame.schema().fields();
    let matches = fields.len() == schema.fields().len()
        && fields
            .iter()
            .zip(schema.fields())
            .all(|(have, want)| have.name() == want.name() && have.data_type() == want.data_type());
    if matches {
        return Ok(frame);
    }
    let columns = schema
        .fields()
        .iter()
        .map(|f| cast(ident(f.name()), f.data_type().clone()).alias(f.name()));
    Ok(frame.select(columns.collect::<Vec<_>>())?)
}

/// Streams the frame's rows into the part file. At debug level
/// (RUST_LOG=tracecast_features=debug) logs the executed plan with each
/// operator's metrics (rows, compute time): where to look when an edited
/// pipeline is slow.
async fn append(writer: &mut PartWriter, frame: DataFrame) -> Result<(), FeaturesError> {
    let task = Arc::new(frame.task_ctx());
    let plan = frame.create_physical_plan().await?;
    // Only kept for the log: a plan holds its joins' hash tables until it
    // is dropped.
    let logged = tracing::enabled!(tracing::Level::DEBUG).then(|| plan.clone());
    let mut stream = execute_stream(plan, task)?;
    while let Some(batch) = stream.next().await {
        writer.write(batch?)?;
    }
    if let Some(plan) = logged {
        tracing::debug!(
            "windows plan with metrics:\n{}",
            DisplayableExecutionPlan::with_metrics(plan.as_ref()).indent(true)
        );
    }
    Ok(())
}

/// Consecutive groups of traces of about `max_items` GPU items each.
fn chunks<'t>(traces: &[&'t LakeTrace], max_items: u64) -> Vec<Vec<&'t LakeTrace>> {
    let mut groups: Vec<Vec<&LakeTrace>> = Vec::new();
    let mut items = 0;
    for &t in traces {
        let n = t.items_in_steps as u64;
        match groups.last_mut() {
            Some(group) if items + n <= max_items.max(1) => group.push(t),
            _ => {
                groups.push(vec![t]);
                items = 0;
            }
        }
        items += n;
    }
    groups
}

/// (steps, windows, items) per trace from the step table.
fn per_trace_counts(steps: &[RecordBatch]) -> HashMap<String, (u64, u64, u64)> {
    let mut counts: HashMap<String, (u64, u64, u64)> = HashMap::new();
    for batch in steps {
        let ids = batch.column_by_name("trace_id").expect("conformed").as_string::<i32>();
        let windows = batch
            .column_by_name("window_count")
            .expect("conformed")
            .as_primitive::<Int64Type>();
        let items = batch
            .column_by_name("item_count")
            .expect("conformed")
            .as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            let entry = counts.entry(ids.value(i).to_string()).or_default();
            entry.0 += 1;
            entry.1 += windows.value(i) as u64;
            entry.2 += items.value(i) as u64;
        }
    }
    counts
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(items: i64) -> LakeTrace {
        LakeTrace {
            trace_id: items.to_string(),
            source: String::new(),
            format: "kineto".into(),
            steps: 1,
            items_in_steps: items,
        }
    }

    #[test]
    fn traces_are_grouped_whole_up_to_the_item_budget() {
        let traces: Vec<LakeTrace> = [5, 5, 3, 20, 1].into_iter().map(trace).collect();
        let refs: Vec<&LakeTrace> = traces.iter().collect();
        let sizes: Vec<Vec<i64>> = chunks(&refs, 10)
            .iter()
            .map(|g| g.iter().map(|t| t.items_in_steps).collect())
            .collect();
        assert_eq!(sizes, vec![vec![5, 5], vec![3], vec![20], vec![1]]);
        assert_eq!(chunks(&refs, u64::MAX).len(), 1);
    }
}

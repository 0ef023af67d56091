//! Job readers. Each accepted format is recognised by its header; all produce
//! [`Job`]s on one clock (seconds from the trace start).

mod elasticflow;
mod itp;
mod own;
mod philly;

use std::path::Path;

use crate::error::{PlanError, Result};
use crate::table::Rows;

/// One training job as read, before it is priced against a throughput table.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub id: String,
    pub submit: f64,
    pub job_type: Option<String>,
    pub batch_size: Option<u32>,
    pub iterations: Option<f64>,
    /// Run time at `gpus` GPUs, when known (foreign traces; jobs without iterations).
    pub duration: Option<f64>,
    pub gpus: u32,
    pub deadline: Option<f64>,
    pub priority: i64,
    /// `None`: decided when priced (elastic when iterations and a priced type are known).
    pub elastic: Option<bool>,
    pub gpu_type: Option<String>,
}

/// The job formats `read_jobs` recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobFormat {
    /// tracecast's `plan_jobs` table (CSV or Parquet).
    Tracecast,
    /// ElasticFlow trace CSV: `job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration`.
    ElasticFlow,
    /// Raw ITP CSV: `job_id,submission_time,duration,num_gpu` (rigid jobs).
    Itp,
    /// Philly / Helios job logs: `job_id, ..., gpu_num, submit_time, duration`.
    PhillyHelios,
}

impl JobFormat {
    pub fn name(self) -> &'static str {
        match self {
            JobFormat::Tracecast => "tracecast plan_jobs",
            JobFormat::ElasticFlow => "ElasticFlow",
            JobFormat::Itp => "ITP raw",
            JobFormat::PhillyHelios => "Philly/Helios",
        }
    }
}

#[derive(Debug)]
pub struct JobSet {
    pub format: JobFormat,
    pub jobs: Vec<Job>,
    /// Rows skipped on purpose (CPU-only jobs, zero durations), with the reason.
    pub skipped: Vec<String>,
}

/// Read a job file in any accepted format (chosen by its columns).
pub fn read_jobs(path: &Path) -> Result<JobSet> {
    let rows = Rows::read(path)?;
    let format = detect(&rows).ok_or_else(|| {
        PlanError::file(
            path,
            format!(
                "unrecognised job file: columns {} match none of tracecast plan_jobs (job_id, submit_time_s, num_gpus, ...), \
                 ElasticFlow (num_iteration, model_name, ...), ITP (job_id, submission_time, duration, num_gpu), \
                 Philly/Helios (gpu_num, submit_time, duration)",
                rows.header.join(", ")
            ),
        )
    })?;
    let mut skipped = Vec::new();
    let jobs = match format {
        JobFormat::Tracecast => own::read(&rows)?,
        JobFormat::ElasticFlow => elasticflow::read(&rows)?,
        JobFormat::Itp => itp::read(&rows)?,
        JobFormat::PhillyHelios => philly::read(&rows, &mut skipped)?,
    };
    check_unique(path, &jobs)?;
    if jobs.is_empty() {
        return Err(PlanError::file(path, "no jobs"));
    }
    tracing::info!(path = %path.display(), format = format.name(), jobs = jobs.len(), skipped = skipped.len(), "read jobs");
    Ok(JobSet { format, jobs, skipped })
}

fn detect(rows: &Rows) -> Option<JobFormat> {
    let has = |cols: &[&str]| cols.iter().all(|c| rows.has(c));
    if has(&["job_id", "submit_time_s", "num_gpus"]) {
        Some(JobFormat::Tracecast)
    } else if has(&["job_id", "submission_time", "num_iteration", "model_name", "num_gpu"]) {
        Some(JobFormat::ElasticFlow)
    } else if has(&["job_id", "submission_time", "duration", "num_gpu"]) {
        Some(JobFormat::Itp)
    } else if has(&["gpu_num", "submit_time", "duration"]) {
        Some(JobFormat::PhillyHelios)
    } else {
        None
    }
}

fn check_unique(path: &Path, jobs: &[Job]) -> Result<()> {
    let mut seen = std::collections::HashSet::with_capacity(jobs.len());
    for j in jobs {
        if !seen.insert(j.id.as_str()) {
            return Err(PlanError::file(
                path,
                format!("job id `{}` appears more than once", j.id),
            ));
        }
    }
    Ok(())
}

/// A GPU count cell: a positive integer.
pub(crate) fn gpus(rows: &Rows, line: u64, row: &[String], col: usize) -> Result<u32> {
    let v = rows.int_req(line, row, col)?;
    u32::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| rows.field_err(line, col, format!("`{v}` is not a positive GPU count")))
}

pub(crate) fn nonneg(rows: &Rows, line: u64, col: usize, v: f64) -> Result<f64> {
    if v < 0.0 {
        Err(rows.field_err(line, col, format!("`{v}` is negative")))
    } else {
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
    use arrow::record_batch::RecordBatch;
    use tracecast_schemas::plan::JOBS;

    use super::*;

    #[test]
    fn parquet_jobs_in_the_schema_of_the_table_definition() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobs.parquet");
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec!["a", "b"])),
            Arc::new(Float64Array::from(vec![0.0, 12.5])),
            Arc::new(StringArray::from(vec![Some("bert"), None])),
            Arc::new(Int64Array::from(vec![Some(64), None])),
            Arc::new(Float64Array::from(vec![Some(1000.0), None])),
            Arc::new(Float64Array::from(vec![None, Some(3600.0)])),
            Arc::new(Int64Array::from(vec![4, 8])),
            Arc::new(Float64Array::from(vec![Some(900.0), None])),
            Arc::new(Int64Array::from(vec![None, Some(2)])),
            Arc::new(BooleanArray::from(vec![Some(true), None])),
            Arc::new(StringArray::from(vec![None, Some("T4")])),
        ];
        let batch = RecordBatch::try_new(JOBS.schema(), cols).unwrap();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), JOBS.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let set = read_jobs(&path).unwrap();
        assert_eq!(set.format, JobFormat::Tracecast);
        let (a, b) = (&set.jobs[0], &set.jobs[1]);
        assert_eq!(
            (a.job_type.as_deref(), a.batch_size, a.iterations, a.gpus, a.deadline),
            (Some("bert"), Some(64), Some(1000.0), 4, Some(900.0))
        );
        assert_eq!(
            (b.duration, b.priority, b.elastic, b.gpu_type.as_deref(), b.submit),
            (Some(3600.0), 2, None, Some("T4"), 12.5)
        );
    }

    #[test]
    fn csv_errors_name_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("jobs.csv");
        std::fs::write(&p, "job_id,submission_time,duration,num_gpu\nx,0,10,1\ny,5,-3,2\n").unwrap();
        let e = read_jobs(&p).unwrap_err().to_string();
        assert!(
            e.ends_with("jobs.csv line 3: column `duration`: `-3` is not a positive duration"),
            "{e}"
        );
        std::fs::write(&p, "job_id,submission_time,duration,num_gpu\nx,0,10,1\nx,5,3,2\n").unwrap();
        assert!(
            read_jobs(&p)
                .unwrap_err()
                .to_string()
                .contains("job id `x` appears more than once")
        );
        std::fs::write(&p, "a,b\n1,2\n").unwrap();
        assert!(read_jobs(&p).unwrap_err().to_string().contains("unrecognised job file"));
    }
}

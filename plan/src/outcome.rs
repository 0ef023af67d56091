//! `jobs.csv`: each job's outcome from the verified replay
//! (`schemas::plan::SCHEDULE_JOBS`), the per-job input of the metrics.

use std::path::Path;

use tracecast_schemas::plan::SCHEDULE_JOBS;

use crate::error::{PlanError, Result};
use crate::schedule::Schedule;
use crate::verify::Replay;
use crate::workload::Workload;

/// Write `jobs.csv` for a schedule of `w` and its replay.
pub fn write_jobs_csv(path: &Path, w: &Workload, s: &Schedule, r: &Replay) -> Result<()> {
    let io = |e: csv::Error| PlanError::file(path, e.to_string());
    let mut wr = csv::Writer::from_path(path).map_err(io)?;
    wr.write_record(SCHEDULE_JOBS.columns.iter().map(|c| c.name))
        .map_err(io)?;
    let opt = |v: Option<f64>| v.filter(|x| x.is_finite()).map_or(String::new(), |x| x.to_string());
    for (j, job) in w.jobs.iter().enumerate() {
        let rejected = r.rejected.get(j).copied().unwrap_or(false);
        let release = s.segments[j].last().map(|g| g.end);
        wr.write_record([
            job.id.clone(),
            job.submit.to_string(),
            opt(job.deadline),
            if rejected { "rejected" } else { "done" }.to_string(),
            opt(Some(r.first_start[j])),
            opt(Some(r.finish[j])),
            opt(release),
        ])
        .map_err(io)?;
    }
    wr.flush().map_err(|e| PlanError::io(path, e))
}

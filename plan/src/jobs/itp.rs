//! Raw ITP traces (microsoft/elasticflow-traces `raw-traces`):
//! `job_id,submission_time,duration,num_gpu`. Only a duration and a GPU count
//! are known, so the jobs are rigid.

use super::{Job, gpus, nonneg};
use crate::error::Result;
use crate::table::Rows;

pub fn read(rows: &Rows) -> Result<Vec<Job>> {
    let (id, submit, dur, n) = (
        rows.need("job_id")?,
        rows.need("submission_time")?,
        rows.need("duration")?,
        rows.need("num_gpu")?,
    );
    let mut jobs = Vec::with_capacity(rows.rows.len());
    for (line, row) in &rows.rows {
        let line = *line;
        let duration = rows.f64_req(line, row, dur)?;
        if duration <= 0.0 {
            return Err(rows.field_err(line, dur, format!("`{duration}` is not a positive duration")));
        }
        jobs.push(Job {
            id: rows
                .str_opt(row, Some(id))
                .ok_or_else(|| rows.field_err(line, id, "value is missing"))?,
            submit: nonneg(rows, line, submit, rows.f64_req(line, row, submit)?)?,
            job_type: None,
            batch_size: None,
            iterations: None,
            duration: Some(duration),
            gpus: gpus(rows, line, row, n)?,
            deadline: None,
            priority: 0,
            elastic: Some(false),
            gpu_type: None,
        });
    }
    Ok(jobs)
}

//! tracecast's own job table (`schemas::plan::JOBS`), CSV or Parquet.

use tracecast_schemas::plan::JOBS;

use super::{Job, gpus, nonneg};
use crate::error::Result;
use crate::table::Rows;

pub fn read(rows: &Rows) -> Result<Vec<Job>> {
    let c = |name: &str| rows.col(JOBS.columns[JOBS.index_of(name)].name);
    let (id, submit, n) = (
        rows.need("job_id")?,
        rows.need("submit_time_s")?,
        rows.need("num_gpus")?,
    );
    let (ty, bs, it, dur) = (c("job_type"), c("batch_size"), c("iterations"), c("duration_s"));
    let (dl, prio, el, gt) = (c("deadline_s"), c("priority"), c("elastic"), c("gpu_type"));
    let mut jobs = Vec::with_capacity(rows.rows.len());
    for (line, row) in &rows.rows {
        let line = *line;
        let job = Job {
            id: rows
                .str_opt(row, Some(id))
                .ok_or_else(|| rows.field_err(line, id, "value is missing"))?,
            submit: nonneg(rows, line, submit, rows.f64_req(line, row, submit)?)?,
            job_type: rows.str_opt(row, ty),
            batch_size: match rows.int_opt(line, row, bs)? {
                Some(v) if v > 0 && v <= u32::MAX as i64 => Some(v as u32),
                Some(v) => {
                    return Err(rows.field_err(line, bs.unwrap(), format!("`{v}` is not a positive batch size")));
                }
                None => None,
            },
            iterations: rows.f64_opt(line, row, it)?,
            duration: rows.f64_opt(line, row, dur)?,
            gpus: gpus(rows, line, row, n)?,
            deadline: rows.f64_opt(line, row, dl)?,
            priority: rows.int_opt(line, row, prio)?.unwrap_or(0),
            elastic: rows.bool_opt(line, row, el)?,
            gpu_type: rows.str_opt(row, gt),
        };
        if job.iterations.is_none_or(|v| v <= 0.0) && job.duration.is_none_or(|v| v <= 0.0) {
            let col = it.or(dur).unwrap_or(id);
            return Err(rows.field_err(line, col, "a job needs positive `iterations` or `duration_s`"));
        }
        jobs.push(job);
    }
    Ok(jobs)
}

//! ElasticFlow trace CSVs (ASPLOS'23 artifact):
//! `job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration`.
//! Times are seconds on the trace clock; `deadline` is absolute; `duration` is
//! the run time at `num_gpu` GPUs.

use super::{Job, gpus, nonneg};
use crate::error::Result;
use crate::table::Rows;

pub fn read(rows: &Rows) -> Result<Vec<Job>> {
    let (id, submit, iters) = (
        rows.need("job_id")?,
        rows.need("submission_time")?,
        rows.need("num_iteration")?,
    );
    let (model, n) = (rows.need("model_name")?, rows.need("num_gpu")?);
    let (dl, bs, dur) = (rows.col("deadline"), rows.col("batch_size"), rows.col("duration"));
    let mut jobs = Vec::with_capacity(rows.rows.len());
    for (line, row) in &rows.rows {
        let line = *line;
        let iterations = rows.f64_req(line, row, iters)?;
        if iterations <= 0.0 {
            return Err(rows.field_err(line, iters, format!("`{iterations}` is not a positive iteration count")));
        }
        jobs.push(Job {
            id: rows
                .str_opt(row, Some(id))
                .ok_or_else(|| rows.field_err(line, id, "value is missing"))?,
            submit: nonneg(rows, line, submit, rows.f64_req(line, row, submit)?)?,
            job_type: Some(
                rows.str_opt(row, Some(model))
                    .ok_or_else(|| rows.field_err(line, model, "value is missing"))?,
            ),
            batch_size: rows.int_opt(line, row, bs)?.map(|v| v.max(1) as u32),
            iterations: Some(iterations),
            duration: rows.f64_opt(line, row, dur)?,
            gpus: gpus(rows, line, row, n)?,
            deadline: rows.f64_opt(line, row, dl)?,
            priority: 0,
            elastic: None,
            gpu_type: None,
        });
    }
    Ok(jobs)
}

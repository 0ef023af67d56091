//! Philly / Helios style job logs: `job_id, ..., gpu_num, submit_time, duration`
//! (Helios `cluster_log.csv` also has user, vc, state, start/end times, which
//! are ignored). `submit_time` is seconds or a `YYYY-MM-DD HH:MM:SS` timestamp;
//! timestamps are turned into seconds from the earliest submission. Rows with
//! `gpu_num = 0` (CPU jobs) or a zero duration are skipped and counted.

use super::{Job, nonneg};
use crate::error::Result;
use crate::table::Rows;

pub fn read(rows: &Rows, skipped: &mut Vec<String>) -> Result<Vec<Job>> {
    let id = rows.col("job_id").or(rows.col("jobid"));
    let (n, submit, dur) = (rows.need("gpu_num")?, rows.need("submit_time")?, rows.need("duration")?);
    let mut jobs = Vec::with_capacity(rows.rows.len());
    let mut stamped = false;
    for (i, (line, row)) in rows.rows.iter().enumerate() {
        let line = *line;
        let gpus = rows.int_req(line, row, n)?;
        if gpus < 0 {
            return Err(rows.field_err(line, n, format!("`{gpus}` is not a GPU count")));
        }
        let duration = nonneg(rows, line, dur, rows.f64_req(line, row, dur)?)?;
        let id = rows.str_opt(row, id).unwrap_or_else(|| format!("row{}", i + 1));
        if gpus == 0 || duration == 0.0 {
            skipped.push(format!(
                "{} line {line}: job {id}: {}",
                rows.path.display(),
                if gpus == 0 { "no GPUs" } else { "zero duration" }
            ));
            continue;
        }
        let cell = rows.cell(row, submit);
        let submit_s = match cell.parse::<f64>() {
            Ok(v) if v.is_finite() => v,
            _ => {
                stamped = true;
                parse_timestamp(cell).ok_or_else(|| {
                    rows.field_err(
                        line,
                        submit,
                        format!("`{cell}` is neither seconds nor a `YYYY-MM-DD HH:MM:SS` timestamp"),
                    )
                })?
            }
        };
        jobs.push(Job {
            id,
            submit: submit_s,
            job_type: None,
            batch_size: None,
            iterations: None,
            duration: Some(duration),
            gpus: gpus as u32,
            deadline: None,
            priority: 0,
            elastic: Some(false),
            gpu_type: None,
        });
    }
    if stamped || jobs.iter().any(|j| j.submit < 0.0) {
        let t0 = jobs.iter().map(|j| j.submit).fold(f64::INFINITY, f64::min);
        jobs.iter_mut().for_each(|j| j.submit -= t0);
    }
    Ok(jobs)
}

/// `YYYY-MM-DD HH:MM:SS` (or with `T`) as seconds since 1970, ignoring time zones.
fn parse_timestamp(s: &str) -> Option<f64> {
    let s = s.trim();
    let (date, time) = s.split_once([' ', 'T']).unwrap_or((s, "00:00:00"));
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.trim_end_matches('Z').split(':');
    let h = t.next()?.parse::<i64>().ok()?;
    let mi = t.next().unwrap_or("0").parse::<i64>().ok()?;
    let sec = t.next().unwrap_or("0").parse::<f64>().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    Some((days_from_civil(y, m, day) * 86400 + h * 3600 + mi * 60) as f64 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("1970-01-02 00:00:01"), Some(86401.0));
        assert_eq!(parse_timestamp("2020-04-01 00:00:07"), Some(1_585_699_207.0));
        assert_eq!(parse_timestamp("2020-13-01 00:00:07"), None);
    }
}

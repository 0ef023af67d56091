//! Deadline objective: admission control and the fewest GPUs that meet a deadline.
//!
//! A job with a deadline is admitted on arrival if, together with the admitted
//! jobs still running, every deadline prefix (earliest-deadline-first) fits:
//! for each admitted deadline D, the GPU-time the jobs due by D need at their
//! fewest sufficient counts is at most the cluster's GPUs x (D - now). Jobs
//! not admitted, and admitted jobs that can no longer make it, run best-effort.

use crate::simulator::Ctx;
use crate::throughput::Curve;
use crate::workload::PJob;

/// Fewest GPUs on `curve` finishing `rem` work within `slack` seconds after a `restart`.
pub fn min_count(curve: &Curve, rem: f64, slack: f64, restart: f64) -> Option<u32> {
    let run = slack - restart;
    if run <= 0.0 {
        return None;
    }
    let need = rem / run;
    let best = curve.best_count();
    if curve.r(best) < need {
        return None;
    }
    // Throughput rises up to `best`: binary search the first count that suffices.
    let (mut lo, mut hi) = (1u32, best);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if curve.r(mid) >= need {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// The fewest GPUs, on the fastest type with room that can make it, meeting the deadline.
pub fn fewest_gpus(
    job: &PJob,
    cur: Option<u16>,
    rem: f64,
    slack: f64,
    restart: f64,
    free: &[u32],
) -> Option<(u16, u32)> {
    let mut best: Option<(u16, u32)> = None;
    for (t, c) in job.belief.iter().enumerate() {
        let Some(c) = c else { continue };
        let Some(g) = min_count(c, rem, slack, restart) else {
            continue;
        };
        if g > free[t] {
            continue;
        }
        // Prefer the current type (no move), then fewer GPUs.
        let better = match best {
            None => true,
            Some((bt, bg)) => (Some(t as u16) == cur && Some(bt) != cur) || (Some(bt) != cur && g < bg),
        };
        if better {
            best = Some((t as u16, g));
        }
    }
    best
}

pub fn still_possible(job: &PJob, rem: f64, slack: f64) -> bool {
    job.belief
        .iter()
        .flatten()
        .any(|c| min_count(c, rem, slack, 0.0).is_some())
}

/// Decide admission for jobs seen for the first time.
pub fn admit_new(ctx: &Ctx<'_>, admitted: &mut [Option<bool>], restart_s: f64) {
    let now = ctx.now;
    let total: f64 = ctx.w.cluster.total_gpus() as f64;
    // (deadline, GPU-seconds needed) of admitted jobs still active.
    let need = |j: usize| -> Option<(f64, f64)> {
        let job = &ctx.w.jobs[j];
        let d = job.deadline?;
        let rem = ctx.st[j].remaining(now);
        let restart = if ctx.st[j].started && ctx.st[j].alloc.is_none() {
            restart_s
        } else {
            0.0
        };
        job.belief
            .iter()
            .enumerate()
            .filter_map(|(t, c)| {
                let c = c.as_ref()?;
                let g = min_count(c, rem, d - now, restart)?;
                (g <= ctx.w.cluster.capacity[t]).then(|| g as f64 * (restart + rem / c.r(g)))
            })
            .min_by(f64::total_cmp)
            .map(|gs| (d, gs))
    };
    let mut committed: Option<Vec<(f64, f64)>> = None;
    for &j in ctx.active {
        if admitted[j].is_some() {
            continue;
        }
        let Some(mine) = need(j) else {
            // No deadline, or one no allocation can meet.
            admitted[j] = Some(false);
            continue;
        };
        let list = committed.get_or_insert_with(|| {
            ctx.active
                .iter()
                .filter(|&&i| admitted[i] == Some(true))
                .filter_map(|&i| need(i))
                .collect()
        });
        let mut trial = list.clone();
        trial.push(mine);
        trial.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut sum = 0.0;
        let ok = trial.iter().all(|&(d, gs)| {
            sum += gs;
            sum <= total * (d - now)
        });
        admitted[j] = Some(ok);
        if ok {
            *list = trial;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewest_sufficient_count() {
        let c = Curve::new(vec![(1, 10.0), (2, 18.0), (4, 30.0), (8, 40.0)], vec![], false).unwrap();
        // 1000 iterations in 40 s need 25 it/s: 3 GPUs (interpolated 24) are not enough, 4 are.
        assert_eq!(min_count(&c, 1000.0, 40.0, 0.0), Some(4));
        assert_eq!(min_count(&c, 1000.0, 110.0, 0.0), Some(1));
        assert_eq!(min_count(&c, 1000.0, 20.0, 0.0), None);
        // A restart eats into the slack.
        assert_eq!(min_count(&c, 1000.0, 110.0, 20.0), Some(2));
    }
}

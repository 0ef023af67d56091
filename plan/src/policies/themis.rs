//! Themis (finish-time fairness, NSDI'20) as ElasticFlow's simulator
//! implements it (`themis_sim_jobs`, scheduler.py:2316-2460 of the copy in
//! ../shared/peers/elasticflow): at every round, for all active jobs, find
//! time shares x in [0, 1] with sum(requested GPUs x share) <= cluster GPUs
//! that minimise the largest ratio of "expected time with this share" to
//! "expected isolated time"; then run jobs at their requested counts in
//! decreasing share while they fit (skipping those that do not).
//!
//! ElasticFlow's formulas, kept as it computes them:
//! - share time: `(now - submit) + iterations left / (throughput at the
//!   requested count x share)`;
//! - isolated time: the isolated work done so far, plus `iterations left /
//!   a`, where `a = min(ceil(GPUs / active jobs) / requested GPUs, 1)`:
//!   ElasticFlow's `get_isolated_throughputs` returns this fair-share
//!   fraction, not a throughput, so the "isolated time" is iterations over a
//!   fraction (its units differ from the share time's). The isolated work
//!   accumulates `(iterations done since the last round) / last round's a`.
//!
//! ElasticFlow solves the program with cvxpy/ECOS. The problem is
//! quasi-convex in the largest ratio `s`: each job's least share meeting
//! `s` has a closed form, and their GPU total falls as `s` grows, so a
//! bisection on `s` finds the optimum. Where the GPUs bind there, the
//! optimum is unique (every job at its least share). Where they leave room,
//! every share between a job's least share and 1 is optimal, and ECOS, an
//! interior-point solver, returns the analytic center of that set under
//! the barrier of cvxpy's formulation (`inv_pos` as a rotated cone):
//! per job `2 ln(x - least) + ln(1 - x)`, plus `ln(GPUs left)`. Its
//! optimality condition, `2 / (x - least) - 1 / (1 - x) = GPUs / GPUs left`,
//! is solved here by nested bisection. Which jobs run depends on that
//! order: a job asking for many GPUs sits lower than at its least share.
//!
//! Rounds: at every arrival and completion, and every `lease_s` (60 s,
//! ElasticFlow's `--scheduling_slot`) while a job waits, or under
//! ElasticFlow's rules while any job is active; under those rules on a grid
//! of 60 s from the first round, as ElasticFlow's loop advances its clock
//! one slot at a time even while the cluster is idle.

use crate::rules::{EfCharge, Overhead};
use crate::simulator::{Alloc, Changes, Ctx, Policy};

/// ElasticFlow's scheduling slot (`run.sh` passes `--scheduling_slot=60`).
pub const LEASE_S: f64 = 60.0;

/// Bisection steps on the largest ratio (relative precision 2^-60 of the bracket).
const BISECTION_STEPS: u32 = 60;

pub struct Themis {
    lease_s: f64,
    /// Per job: isolated time accumulated so far.
    isolated: Vec<f64>,
    /// Per job at the last round: (work left, fair-share fraction `a`).
    last: Vec<Option<(f64, f64)>>,
}

impl Default for Themis {
    fn default() -> Self {
        Themis {
            lease_s: LEASE_S,
            isolated: Vec::new(),
            last: Vec::new(),
        }
    }
}

/// One job's terms in the program.
#[derive(Clone, Copy, Debug)]
pub struct Terms {
    /// Seconds since submission.
    pub elapsed: f64,
    /// Work left over the throughput at the requested count: seconds at share 1.
    pub run_s: f64,
    /// The expected isolated time.
    pub isolated: f64,
    /// GPUs requested.
    pub gpus: f64,
}

impl Terms {
    /// The least share at which the job's ratio is at most `s` (infinite if none).
    fn least_share(&self, s: f64) -> f64 {
        if self.run_s <= 0.0 {
            return 0.0;
        }
        let room = s * self.isolated - self.elapsed;
        if room > 0.0 { self.run_s / room } else { f64::INFINITY }
    }
}

/// The shares minimising the largest ratio, as an interior-point solver
/// returns them (see the module comment); `gpus` is the cluster's total.
pub fn fair_shares(terms: &[Terms], gpus: f64) -> Vec<f64> {
    if terms.is_empty() {
        return Vec::new();
    }
    let feasible = |s: f64| {
        let mut used = 0.0;
        for t in terms {
            let x = t.least_share(s);
            if x > 1.0 {
                return false;
            }
            used += t.gpus * x;
        }
        used <= gpus
    };
    // Every share at 1 bounds the ratio from below.
    let mut lo = terms
        .iter()
        .map(|t| (t.elapsed + t.run_s) / t.isolated)
        .fold(f64::NEG_INFINITY, f64::max);
    let s = if feasible(lo) {
        lo
    } else {
        let mut hi = lo.abs().max(1e-12);
        while !feasible(hi) {
            lo = hi;
            hi *= 2.0;
        }
        // The feasible end of the bracket.
        bisect(lo, hi, |s| !feasible(s)).1
    };
    let least: Vec<f64> = terms.iter().map(|t| t.least_share(s).min(1.0)).collect();
    let used: f64 = terms.iter().zip(&least).map(|(t, l)| t.gpus * l).sum();
    if used >= gpus {
        return least;
    }
    // The analytic center: each share from the GPUs left, then those from
    // the shares (the GPUs the shares leave fall as the GPUs left grow).
    let share = |least: f64, job_gpus: f64, left: f64| {
        if least >= 1.0 {
            return 1.0;
        }
        // The root in (least, 1) of c x^2 - (c (1 + least) + 3) x + (c least + least + 2),
        // c = GPUs / GPUs left, in the form that stays exact as c falls to 0.
        let c = job_gpus / left;
        let b = c * (1.0 + least) + 3.0;
        let disc = (b * b - 4.0 * c * (c * least + least + 2.0)).max(0.0);
        (c * least + least + 2.0) / (0.5 * (b + disc.sqrt()))
    };
    let shares_at = |left: f64| terms.iter().zip(&least).map(move |(t, &l)| share(l, t.gpus, left));
    let (lo, hi) = bisect(0.0, gpus - used, |left| {
        gpus - terms.iter().zip(shares_at(left)).map(|(t, x)| t.gpus * x).sum::<f64>() > left
    });
    shares_at(0.5 * (lo + hi)).collect()
}

/// The bracket, narrowed to 2^-60 of its width, around the point in
/// `(lo, hi)` where `below` turns false (true below it).
fn bisect(mut lo: f64, mut hi: f64, below: impl Fn(f64) -> bool) -> (f64, f64) {
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (lo + hi);
        if below(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo, hi)
}

impl Policy for Themis {
    fn name(&self) -> String {
        "themis".into()
    }

    fn decide(&mut self, ctx: &Ctx<'_>, changes: &mut Changes) {
        let (w, now) = (ctx.w, ctx.now);
        if self.isolated.len() != w.jobs.len() {
            self.isolated = vec![0.0; w.jobs.len()];
            self.last = vec![None; w.jobs.len()];
        }
        let active = ctx.active;
        if active.is_empty() {
            return;
        }
        let total = w.cluster.total_gpus() as f64;
        let fair = (total / active.len() as f64).ceil();
        let terms: Vec<Terms> = active
            .iter()
            .map(|&j| {
                let job = &w.jobs[j];
                let left = ctx.st[j].remaining(now);
                let a = (fair / job.req as f64).min(1.0);
                if let Some((left_then, a_then)) = self.last[j] {
                    self.isolated[j] += (left_then - left) / a_then;
                }
                self.last[j] = Some((left, a));
                let rate = job.belief_rate(job.best_type(job.req), job.req);
                let isolated = self.isolated[j] + left / a;
                // A job with no work left or no rate puts no bound on the ratio.
                let bounded = rate > 0.0 && isolated > 0.0;
                Terms {
                    elapsed: now - job.submit,
                    run_s: if bounded { left / rate } else { 0.0 },
                    isolated: if bounded { isolated } else { 1.0 },
                    gpus: job.req as f64,
                }
            })
            .collect();
        let shares = fair_shares(&terms, total);
        let mut order: Vec<usize> = (0..active.len()).collect();
        // Largest share first; equal shares by job index.
        order.sort_by(|&a, &b| shares[b].total_cmp(&shares[a]).then(active[a].cmp(&active[b])));
        let mut free = w.cluster.capacity.clone();
        let mut next: Vec<Option<Alloc>> = vec![None; active.len()];
        for k in order {
            let j = active[k];
            let job = &w.jobs[j];
            if let Some(t) = super::pick_type(job, ctx.st[j].alloc.map(|a| a.0), job.req, &free, 0.0) {
                free[t as usize] -= job.req;
                next[k] = Some((t, job.req));
            }
        }
        for (k, &j) in active.iter().enumerate() {
            if ctx.st[j].alloc != next[k] {
                changes.push((j, next[k]));
            }
        }
    }

    /// The next round, while some job waits; under ElasticFlow's rules
    /// every lease while a job is active, as ElasticFlow re-plans (a round
    /// that changes nothing ends a job's overheads there). Otherwise, with
    /// every active job running at its requested count, a round would decide
    /// the same.
    fn wakeup(&self, ctx: &Ctx<'_>) -> Option<f64> {
        let every_lease = ctx.w.rules.overhead == Overhead::ElasticFlow && !ctx.active.is_empty();
        (every_lease || ctx.active.len() > ctx.running.len()).then_some(ctx.now + self.lease_s)
    }

    fn rounds_on_grid(&self) -> bool {
        true
    }

    fn ef_charge(&self) -> EfCharge {
        EfCharge::UntilSteady
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(elapsed: f64, run_s: f64, isolated: f64, gpus: f64) -> Terms {
        Terms {
            elapsed,
            run_s,
            isolated,
            gpus,
        }
    }

    #[test]
    fn shares_meet_the_smallest_largest_ratio() {
        // Room for both at share 1: the bound is the worse job's ratio at share 1.
        let t = [terms(0.0, 10.0, 10.0, 1.0), terms(10.0, 10.0, 10.0, 1.0)];
        let x = fair_shares(&t, 2.0);
        assert_eq!(x[1], 1.0);
        // Job 0 needs only the share that gives it ratio 2: 10 / (2 x 10) =
        // 0.5; with room left it takes the analytic center, where
        // 2 / (x - 0.5) - 1 / (1 - x) = 1 / (GPUs left = 1 - x): x = 0.75.
        assert!((x[0] - 0.75).abs() < 1e-9, "{x:?}");

        // One GPU for two equal one-GPU jobs: half each, ratio 2.
        let t = [terms(0.0, 10.0, 10.0, 1.0), terms(0.0, 10.0, 10.0, 1.0)];
        let x = fair_shares(&t, 1.0);
        assert!(x.iter().all(|&v| (v - 0.5).abs() < 1e-9), "{x:?}");
        assert!((x.iter().sum::<f64>() - 1.0).abs() < 1e-9);

        // The job that waited longer needs the larger share.
        let t = [terms(0.0, 10.0, 10.0, 1.0), terms(5.0, 10.0, 10.0, 1.0)];
        let x = fair_shares(&t, 1.0);
        assert!(x[1] > x[0] && (x[0] + x[1] - 1.0).abs() < 1e-9, "{x:?}");
        // Both at the same ratio: (elapsed + run / x) / isolated.
        let ratio = |k: usize| (t[k].elapsed + t[k].run_s / x[k]) / t[k].isolated;
        assert!((ratio(0) - ratio(1)).abs() < 1e-6);
    }

    #[test]
    fn room_left_goes_less_to_jobs_that_ask_for_more_gpus() {
        // The bound is job 2's ratio at share 1; jobs 0 and 1 have the same
        // least share (0.5) but ask for 1 and 4 GPUs of 8.
        let t = [
            terms(0.0, 10.0, 10.0, 1.0),
            terms(0.0, 10.0, 10.0, 4.0),
            terms(10.0, 10.0, 10.0, 1.0),
        ];
        let x = fair_shares(&t, 8.0);
        assert_eq!(x[2], 1.0);
        assert!(0.5 < x[1] && x[1] < x[0] && x[0] < 1.0, "{x:?}");
        assert!(x[0] + 4.0 * x[1] + x[2] < 8.0);
    }
}

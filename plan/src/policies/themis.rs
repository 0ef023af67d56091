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
//! bisection on `s` finds the optimum. Where the optimum leaves room, ECOS
//! returns some interior shares; here each job takes its least share, which
//! orders the jobs the same way while room is left (the interior point
//! moves every share towards the middle of its range, in order).
//!
//! Rounds: at every arrival and completion, and every `lease_s` (60 s,
//! ElasticFlow's `--scheduling_slot`) while a job waits.

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

/// The shares minimising the largest ratio, each job at its least share for
/// the optimum (see the module comment); `gpus` is the cluster's total.
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
        for _ in 0..BISECTION_STEPS {
            let mid = 0.5 * (lo + hi);
            if feasible(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    };
    terms.iter().map(|t| t.least_share(s).min(1.0)).collect()
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

    /// The next round, while some job waits: with every active job running
    /// at its requested count a round would decide the same, and under
    /// ElasticFlow's rules each round charges every running job.
    fn wakeup(&self, ctx: &Ctx<'_>) -> Option<f64> {
        (ctx.active.len() > ctx.running.len()).then_some(ctx.now + self.lease_s)
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
        // Job 0 needs only the share that gives it ratio 2: 10 / (2 x 10) = 0.5.
        assert!((x[0] - 0.5).abs() < 1e-12, "{x:?}");

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
}

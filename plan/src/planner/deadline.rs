//! Deadline objective: admission control and the fewest GPUs that meet a deadline.
//!
//! A job with a deadline is admitted on arrival if a plan of it and the
//! admitted jobs still active, earliest deadline first, each at the fewest
//! GPUs that meet its deadline on what the earlier ones leave free over time,
//! meets every deadline. Jobs not admitted run best effort, or, under rules
//! that allow it, are rejected. An admitted job that can no longer make its
//! deadline is given a new due time ([`late_due`]) and keeps its place by
//! it: run best effort, it starved behind every later admission (on
//! ElasticFlow's cluster04 on 32 GPUs, 1,801 such jobs averaged 206 h).

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
    if curve.discrete {
        return curve.counts_up_to(best).find(|&g| curve.r(g) >= need);
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

/// The margin grows by the share of admitted jobs that turned late so far,
/// up to this: what the plan does not see shows in the jobs it let down
/// (figures in bench/plan/RESULTS.md, "Late admitted jobs").
const MARGIN_MAX: f64 = 0.2;
/// Admissions counted as on time before any is seen, so that a few early
/// late jobs do not swing the margin.
const LATE_SHARE_PRIOR: f64 = 100.0;

/// The share of slack to keep in reserve: the rules' `base`, plus the share
/// of the `admissions` so far that `turned_late`, up to [`MARGIN_MAX`].
pub fn learned_margin(base: f64, admissions: usize, turned_late: usize) -> f64 {
    let late_share = turned_late as f64 / (admissions as f64 + LATE_SHARE_PRIOR);
    (base + late_share).min(MARGIN_MAX.max(base))
}

/// Share of its original slack (deadline less submission) a late job is
/// given again, beyond its shortest remaining run: a stretch tied to the
/// job's size instead gave the largest late jobs days (4x: 64 h on average
/// on cluster02/n4g8), and a shorter one let late jobs crowd out the jobs
/// still on time (bench/plan/RESULTS.md, "Late admitted jobs").
const LATE_SLACK_SHARE: f64 = 0.5;

/// The new due time of an admitted job that can no longer make its
/// deadline: its shortest remaining run (at its best count on its fastest
/// type, after a `restart`) from `now`, plus [`LATE_SLACK_SHARE`] of the
/// slack it was submitted with.
pub fn late_due(job: &PJob, rem: f64, now: f64, restart: f64, capacity: &[u32]) -> f64 {
    let fastest = job
        .belief
        .iter()
        .zip(capacity)
        .filter_map(|(c, &cap)| c.as_deref().map(|c| c.r(c.best_count().min(cap.max(1)))))
        .fold(0.0, f64::max);
    let run = if fastest > 0.0 { rem / fastest } else { 0.0 };
    let slack = job.deadline.map_or(0.0, |d| (d - job.submit).max(0.0));
    now + run + restart + LATE_SLACK_SHARE * slack
}

pub fn still_possible(job: &PJob, rem: f64, slack: f64) -> bool {
    job.belief
        .iter()
        .flatten()
        .any(|c| min_count(c, rem, slack, 0.0).is_some())
}

/// What admission planning assumes about time lost to changes and rounds.
#[derive(Clone, Copy)]
pub struct Costs {
    /// The flat restart cost.
    pub restart_s: f64,
    /// Share of the throughput lost to per-round charges (0 under flat rules).
    pub derate: f64,
    /// ElasticFlow's overhead formula applies (`restart_s` is then ignored).
    pub ef: Option<crate::rules::EfOverhead>,
    /// Share of the slack kept in reserve.
    pub margin: f64,
    /// How long after its work is done a job may hold its GPUs (the gap
    /// between decision rounds): the planner aims to be done that much early.
    pub release_lag: f64,
}

impl Costs {
    /// Seconds from `now` a job due at `deadline` may plan to run: its GPUs
    /// handed back by the deadline, less the margin.
    pub fn slack(&self, deadline: f64, now: f64) -> f64 {
        (deadline - self.release_lag - now) * (1.0 - self.margin)
    }

    /// Seconds a (re)start to `gpus` GPUs costs.
    pub fn change_cost(&self, gpus: u32) -> f64 {
        self.ef.map_or(self.restart_s, |ef| ef.change_cost(gpus))
    }
}

/// Free GPUs of one type from `now` on, as steps `(from, free)`; the last lasts forever.
#[derive(Clone)]
struct Profile {
    steps: Vec<(f64, u32)>,
    /// Steps before this one have no GPU free: no job can use them.
    first_free: usize,
}

impl Profile {
    fn new(now: f64, gpus: u32) -> Profile {
        Profile {
            steps: vec![(now, gpus)],
            first_free: 0,
        }
    }

    /// Run `rem` work at up to `g` GPUs (as many as are free, at a count the
    /// curve allows) from the start until it is done; if that is by `due`, take
    /// those GPUs and return true; else change nothing and return false.
    fn take(&mut self, curve: &Curve, g: u32, rem: f64, due: f64, derate: f64) -> bool {
        let count = |n: u32| -> u32 {
            if n < curve.first_count() {
                0
            } else {
                curve.floor_count(n)
            }
        };
        // Most steps have all `g` free: their count is looked up once (a
        // measured curve's lookup walks its points; admission runs this for
        // every job of every plan).
        let full = count(g);
        let at = |free: u32| -> u32 { if free >= g { full } else { count(free) } };
        let mut left = rem;
        let mut finish = None;
        // The rate at the last count seen: counts repeat from step to step.
        let mut last_rate = (0, 0.0);
        for (i, &(from, free)) in self.steps.iter().enumerate().skip(self.first_free) {
            if from >= due {
                break;
            }
            let to = self.steps.get(i + 1).map_or(due, |s| s.0.min(due));
            let a = at(free);
            if a == 0 {
                continue;
            }
            if last_rate.0 != a {
                last_rate = (a, curve.r(a) * derate);
            }
            let rate = last_rate.1;
            if rate * (to - from) >= left {
                finish = Some((i, from + left / rate));
                break;
            }
            left -= rate * (to - from);
        }
        let Some((last, end)) = finish else {
            return false;
        };
        // Split the step the job ends in, then take the GPUs up to `end`.
        let next = self.steps.get(last + 1).map(|s| s.0);
        if next != Some(end) && end > self.steps[last].0 {
            self.steps.insert(last + 1, (end, self.steps[last].1));
        }
        for step in &mut self.steps[self.first_free..=last] {
            if step.0 < end {
                step.1 -= at(step.1);
            }
        }
        while self.steps.get(self.first_free).is_some_and(|s| s.1 == 0) {
            self.first_free += 1;
        }
        true
    }
}

/// A deadline job as admission plans it.
struct Demand {
    j: usize,
    deadline: f64,
    rem: f64,
    /// Seconds lost before it can run (a restart), counted against its slack.
    delay: f64,
}

/// Plan `jobs` earliest deadline first, each at the fewest GPUs that meet its
/// deadline with the GPUs the earlier ones left; the jobs that cannot. With
/// `tolerated`, planning stops at the first job that cannot and is not
/// listed there: a caller that asks only whether there is one has its answer.
fn plan_edf(ctx: &Ctx<'_>, jobs: &mut [Demand], costs: &Costs, tolerated: Option<&[usize]>) -> Vec<usize> {
    jobs.sort_by(|a, b| a.deadline.total_cmp(&b.deadline).then(a.j.cmp(&b.j)));
    let now = ctx.now;
    let mut profiles: Vec<Profile> = ctx.w.cluster.capacity.iter().map(|&g| Profile::new(now, g)).collect();
    let mut failed = Vec::new();
    for d in jobs.iter() {
        let job = &ctx.w.jobs[d.j];
        let due = now + costs.slack(d.deadline, now) - d.delay;
        let mut placed = false;
        // Types fastest first at the job's request.
        let mut types: Vec<(usize, &Curve)> = job
            .belief
            .iter()
            .enumerate()
            .filter_map(|(t, c)| c.as_deref().map(|c| (t, c)))
            .collect();
        types.sort_by(|a, b| b.1.r(job.req).total_cmp(&a.1.r(job.req)));
        'types: for (t, c) in types {
            for g in c.counts_up_to(c.best_count().min(ctx.w.cluster.capacity[t])) {
                // `take` leaves the profile as it was when the job does not fit.
                if profiles[t].take(c, g, d.rem, due, 1.0 - costs.derate) {
                    placed = true;
                    break 'types;
                }
            }
        }
        if !placed {
            failed.push(d.j);
            if tolerated.is_some_and(|t| !t.contains(&d.j)) {
                break;
            }
        }
    }
    failed
}

/// What one round's admission decided.
#[derive(Default)]
pub struct Admission {
    /// Newcomers with a deadline that were not admitted.
    pub refused: Vec<usize>,
    /// Admitted jobs whose due time moved.
    pub moved: Vec<usize>,
    /// Newcomers admitted.
    pub admitted: usize,
    /// Admitted jobs found unable to make their deadline for the first time.
    pub turned_late: usize,
}

/// Decide admission for jobs seen for the first time: a job is admitted when
/// every admitted job that could still make its deadline still can with it
/// (planned earliest deadline first on the free GPUs over time, at counts the
/// rules allow). Newcomers are tried smallest first. `due` holds each
/// admitted job's due time (its deadline, or a [`late_due`]); admitted jobs
/// that cannot make theirs get a new one.
pub fn admit_new(ctx: &Ctx<'_>, admitted: &mut [Option<bool>], due: &mut [f64], costs: &Costs) -> Admission {
    let now = ctx.now;
    let delay = |j: usize| match ctx.st[j].alloc {
        Some(_) => 0.0,
        None => costs.change_cost(ctx.w.jobs[j].req),
    };
    let demand = |j: usize, deadline: f64| Demand {
        j,
        deadline,
        rem: ctx.st[j].remaining(now),
        delay: delay(j),
    };
    let mut newcomers: Vec<(f64, usize)> = Vec::new();
    for &j in ctx.active {
        if admitted[j].is_some() {
            continue;
        }
        let Some(deadline) = ctx.w.jobs[j].deadline else {
            admitted[j] = Some(false);
            continue;
        };
        due[j] = deadline;
        // Smallest first: GPU-seconds at the request on its best type.
        let job = &ctx.w.jobs[j];
        let r = job.belief_rate(job.best_type(job.req), job.req).max(1e-12);
        newcomers.push((ctx.st[j].remaining(now) / r * job.req as f64, j));
    }
    if newcomers.is_empty() {
        return Admission::default();
    }
    newcomers.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut kept: Vec<Demand> = ctx
        .active
        .iter()
        .filter(|&&i| admitted[i] == Some(true))
        .map(|&i| demand(i, due[i]))
        .collect();
    // Admitted jobs that cannot make it any more are due again later, and
    // stay in the plan: they run by that due time, so newcomers must leave
    // them their GPUs. Those that cannot make even that fail again in every
    // plan; only a newcomer that makes another job fail is refused.
    let moved = plan_edf(ctx, &mut kept, costs, None);
    let turned_late = moved
        .iter()
        .filter(|&&j| ctx.w.jobs[j].deadline == Some(due[j]))
        .count();
    for &late in &moved {
        due[late] = late_due(
            &ctx.w.jobs[late],
            ctx.st[late].remaining(now),
            now,
            delay(late),
            &ctx.w.cluster.capacity,
        );
        if let Some(d) = kept.iter_mut().find(|d| d.j == late) {
            d.deadline = due[late];
        }
    }
    // With no job late, the plan with the new due times is the one just made.
    let hopeless = if moved.is_empty() {
        Vec::new()
    } else {
        plan_edf(ctx, &mut kept, costs, None)
    };
    let mut refused = Vec::new();
    let tried = newcomers.len();
    for (_, j) in newcomers {
        kept.push(demand(j, due[j]));
        let ok = plan_edf(ctx, &mut kept, costs, Some(&hopeless))
            .iter()
            .all(|f| hopeless.contains(f));
        admitted[j] = Some(ok);
        if !ok {
            kept.retain(|d| d.j != j);
            refused.push(j);
        }
    }
    Admission {
        admitted: tried - refused.len(),
        refused,
        moved,
        turned_late,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_grows_with_the_admitted_jobs_that_turned_late() {
        // Nothing late: the rules' margin.
        assert_eq!(learned_margin(0.06, 500, 0), 0.06);
        // 50 of 400 late: 50 / 500 on top.
        assert!((learned_margin(0.06, 400, 50) - 0.16).abs() < 1e-12);
        // A few early late jobs barely move it; many are capped.
        assert!(learned_margin(0.06, 3, 2) < 0.08);
        assert_eq!(learned_margin(0.06, 1000, 900), 0.2);
        // A base above the cap stays.
        assert_eq!(learned_margin(0.25, 1000, 900), 0.25);
    }

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

//! Earliest deadline first: with requested counts (preemptive, backfilling;
//! jobs without a deadline come last, in submission order), and elastic as
//! ElasticFlow implements it.

use super::ordered::{Key, Order};
use crate::rules::EfCharge;
use crate::simulator::{Alloc, Ctx};
use crate::waitqueue::ordered_bits;
use crate::workload::PJob;

pub struct Edf;

/// By deadline (none last), then submission, then job.
fn deadline_key(ctx: &Ctx<'_>, j: usize) -> Key {
    let job = &ctx.w.jobs[j];
    (
        ordered_bits(job.deadline.unwrap_or(f64::INFINITY)),
        ordered_bits(job.submit),
        0,
        j,
    )
}

impl Order for Edf {
    fn name(&self) -> String {
        "edf".into()
    }

    fn key(&self, ctx: &Ctx<'_>, j: usize, _running: bool) -> Key {
        deadline_key(ctx, j)
    }
}

/// ElasticFlow's EDF baseline (`edf_sim_allocation`, scheduler.py:766-925):
/// every round, in deadline order, each job takes its largest allowed GPU
/// count if that many are free, else the largest allowed count that fits,
/// else waits. Elastic, no admission control.
pub struct EdfElastic;

impl Order for EdfElastic {
    fn name(&self) -> String {
        "edf-elastic".into()
    }

    /// ElasticFlow's EDF pays no overhead (its charge is commented out).
    fn ef_charge(&self) -> EfCharge {
        EfCharge::Never
    }

    fn key(&self, ctx: &Ctx<'_>, j: usize, _running: bool) -> Key {
        deadline_key(ctx, j)
    }

    fn fewest(&self, job: &PJob) -> u32 {
        if !job.elastic {
            return job.req;
        }
        job.truth
            .iter()
            .flatten()
            .map(|c| c.first_count())
            .min()
            .unwrap_or(job.req)
    }

    fn take(&self, ctx: &Ctx<'_>, j: usize, free: &[u32]) -> Option<Alloc> {
        let job = &ctx.w.jobs[j];
        if !job.elastic {
            return super::pick_type(job, None, job.req, free, 0.0).map(|t| (t, job.req));
        }
        // The type where the count that fits runs fastest. The largest count
        // is the largest the rules allow (the true curve's), not the
        // planner's own caps.
        job.belief
            .iter()
            .zip(&job.truth)
            .enumerate()
            .filter_map(|(t, (b, c))| {
                let (b, c) = (b.as_deref()?, c.as_deref()?);
                let n = c.floor_count(c.largest_count().min(free[t]));
                (n >= c.first_count() && n <= free[t]).then(|| (t, n, b.r(n)))
            })
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(t, n, _)| (t as u16, n))
    }
}

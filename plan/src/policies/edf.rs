//! Earliest deadline first: with requested counts (preemptive, backfilling;
//! jobs without a deadline come last, in submission order), and elastic as
//! ElasticFlow implements it.

use super::fill_requested;
use crate::simulator::{Alloc, Ctx, DensePolicy};

pub struct Edf;

/// Positions in `ctx.active` by deadline (none last), then submission, then job.
fn deadline_order(ctx: &Ctx<'_>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ctx.active.len()).collect();
    order.sort_by(|&a, &b| {
        let (ja, jb) = (&ctx.w.jobs[ctx.active[a]], &ctx.w.jobs[ctx.active[b]]);
        let da = ja.deadline.unwrap_or(f64::INFINITY);
        let db = jb.deadline.unwrap_or(f64::INFINITY);
        da.total_cmp(&db)
            .then(ja.submit.total_cmp(&jb.submit))
            .then(ctx.active[a].cmp(&ctx.active[b]))
    });
    order
}

impl DensePolicy for Edf {
    fn name(&self) -> String {
        "edf".into()
    }

    fn allocate(&mut self, ctx: &Ctx<'_>, out: &mut [Option<Alloc>]) {
        fill_requested(ctx, &deadline_order(ctx), out, false);
    }
}

/// ElasticFlow's EDF baseline (`edf_sim_allocation`, scheduler.py:766-925):
/// every round, in deadline order, each job takes its largest allowed GPU
/// count if that many are free, else the largest allowed count that fits,
/// else waits. Elastic, no admission control.
pub struct EdfElastic;

impl DensePolicy for EdfElastic {
    fn name(&self) -> String {
        "edf-elastic".into()
    }

    fn allocate(&mut self, ctx: &Ctx<'_>, out: &mut [Option<Alloc>]) {
        let mut free = ctx.w.cluster.capacity.clone();
        for k in deadline_order(ctx) {
            let job = &ctx.w.jobs[ctx.active[k]];
            if !job.elastic {
                if let Some(t) = super::pick_type(job, None, job.req, &free, 0.0) {
                    free[t as usize] -= job.req;
                    out[k] = Some((t, job.req));
                }
                continue;
            }
            // The type where the count that fits runs fastest. The largest
            // count is the largest the rules allow (the true curve's), not the
            // planner's own caps.
            let best = job
                .belief
                .iter()
                .zip(&job.truth)
                .enumerate()
                .filter_map(|(t, (b, c))| {
                    let (b, c) = (b.as_deref()?, c.as_deref()?);
                    let n = c.floor_count(c.largest_count().min(free[t]));
                    (n >= c.first_count() && n <= free[t]).then(|| (t, n, b.r(n)))
                })
                .max_by(|a, b| a.2.total_cmp(&b.2));
            if let Some((t, n, _)) = best {
                free[t] -= n;
                out[k] = Some((t as u16, n));
            }
        }
    }
}

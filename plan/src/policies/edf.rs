//! Earliest deadline first with requested counts: preemptive, backfilling;
//! jobs without a deadline come last, in submission order.

use super::fill_requested;
use crate::simulator::{Alloc, Ctx, Policy};

pub struct Edf;

impl Policy for Edf {
    fn name(&self) -> String {
        "edf".into()
    }

    fn allocate(&mut self, ctx: &Ctx<'_>, out: &mut [Option<Alloc>]) {
        let mut order: Vec<usize> = (0..ctx.active.len()).collect();
        order.sort_by(|&a, &b| {
            let (ja, jb) = (&ctx.w.jobs[ctx.active[a]], &ctx.w.jobs[ctx.active[b]]);
            let da = ja.deadline.unwrap_or(f64::INFINITY);
            let db = jb.deadline.unwrap_or(f64::INFINITY);
            da.total_cmp(&db)
                .then(ja.submit.total_cmp(&jb.submit))
                .then(ctx.active[a].cmp(&ctx.active[b]))
        });
        fill_requested(ctx, &order, out, false);
    }
}

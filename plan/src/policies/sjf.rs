//! Shortest job first with the true durations (an oracle no real scheduler
//! has): non-preemptive; waiting jobs start shortest-first, backfilling any
//! that fits.

use super::fill_requested;
use crate::simulator::{Alloc, Ctx, DensePolicy};

pub struct SjfOracle;

impl DensePolicy for SjfOracle {
    fn name(&self) -> String {
        "sjf-oracle".into()
    }

    fn allocate(&mut self, ctx: &Ctx<'_>, out: &mut [Option<Alloc>]) {
        // Running jobs first (non-preemptive), then by true remaining run time at the requested count.
        let key = |k: usize| {
            let j = ctx.active[k];
            let job = &ctx.w.jobs[j];
            let running = ctx.st[j].alloc.is_some();
            let rate = (0..job.truth.len())
                .map(|t| job.true_rate(t as u16, job.req))
                .fold(0.0, f64::max);
            (!running, ctx.st[j].remaining(ctx.now) / rate, j)
        };
        let mut order: Vec<(bool, f64, usize, usize)> = (0..ctx.active.len())
            .map(|k| {
                let (a, b, c) = key(k);
                (a, b, c, k)
            })
            .collect();
        order.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
        let order: Vec<usize> = order.into_iter().map(|o| o.3).collect();
        fill_requested(ctx, &order, out, false);
    }
}

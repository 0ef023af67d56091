//! First in, first out, no backfilling: a job waits until every earlier job runs.

use super::fill_requested;
use crate::simulator::{Alloc, Ctx, DensePolicy};

pub struct Fifo;

impl DensePolicy for Fifo {
    fn name(&self) -> String {
        "fifo".into()
    }

    fn allocate(&mut self, ctx: &Ctx<'_>, out: &mut [Option<Alloc>]) {
        let mut order: Vec<usize> = (0..ctx.active.len()).collect();
        order.sort_by(|&a, &b| {
            let (ja, jb) = (ctx.active[a], ctx.active[b]);
            ctx.w.jobs[ja]
                .submit
                .total_cmp(&ctx.w.jobs[jb].submit)
                .then(ja.cmp(&jb))
        });
        fill_requested(ctx, &order, out, true);
    }
}

//! Shortest job first with the true durations (an oracle no real scheduler
//! has): non-preemptive; waiting jobs start shortest-first, backfilling any
//! that fits.

use super::ordered::{Key, Order};
use crate::simulator::Ctx;
use crate::waitqueue::ordered_bits;

pub struct SjfOracle;

impl Order for SjfOracle {
    fn name(&self) -> String {
        "sjf-oracle".into()
    }

    /// Running jobs first (non-preemptive), then by true remaining run time
    /// at the requested count on the job's fastest type.
    fn key(&self, ctx: &Ctx<'_>, j: usize, running: bool) -> Key {
        let job = &ctx.w.jobs[j];
        let rate = (0..job.truth.len())
            .map(|t| job.true_rate(t as u16, job.req))
            .fold(0.0, f64::max);
        (
            u64::from(!running),
            ordered_bits(ctx.st[j].remaining(ctx.now) / rate),
            0,
            j,
        )
    }
}

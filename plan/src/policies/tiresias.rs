//! Tiresias-style two-dimensional least-attained-service (NSDI'19): a job's
//! attained service is GPUs x time; jobs sit in priority queues by attained
//! service (thresholds in GPU-seconds), FIFO within a queue, preemptive, with
//! requested counts. Needs no duration knowledge. ElasticFlow's version of
//! it, `dlas-gpu`, is `super::dlas`.

use super::ordered::{Key, Order};
use crate::simulator::Ctx;
use crate::waitqueue::ordered_bits;

pub struct Tiresias {
    /// Attained GPU-seconds at which a job drops to the next queue.
    pub thresholds: Vec<f64>,
}

impl Default for Tiresias {
    fn default() -> Self {
        // One GPU-hour and ten GPU-hours: three queues.
        Tiresias {
            thresholds: vec![3600.0, 36000.0],
        }
    }
}

impl Tiresias {
    fn queue(&self, attained: f64) -> usize {
        // The slack keeps a job that reaches a threshold exactly from waking the engine again.
        self.thresholds.iter().take_while(|&&t| attained + 1e-6 >= t).count()
    }
}

impl Order for Tiresias {
    fn name(&self) -> String {
        "tiresias".into()
    }

    /// By queue (attained service), then submission.
    fn key(&self, ctx: &Ctx<'_>, j: usize, _running: bool) -> Key {
        let attained = ctx.st[j].attained(ctx.now);
        (self.queue(attained) as u64, ordered_bits(ctx.w.jobs[j].submit), 0, j)
    }

    /// The next time a running job crosses a queue threshold.
    fn wakeup(&self, ctx: &Ctx<'_>) -> Option<f64> {
        ctx.running
            .iter()
            .filter_map(|&j| {
                let s = &ctx.st[j];
                let (_, g) = s.alloc?;
                let a = s.attained(ctx.now);
                let next = self.thresholds.get(self.queue(a))?;
                Some(ctx.now + (next - a) / g as f64)
            })
            .min_by(f64::total_cmp)
    }
}

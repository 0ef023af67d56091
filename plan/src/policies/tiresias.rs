//! Tiresias-style two-dimensional least-attained-service (NSDI'19): a job's
//! attained service is GPUs x time; jobs sit in priority queues by attained
//! service (thresholds in GPU-seconds), FIFO within a queue, preemptive, with
//! requested counts. Needs no duration knowledge. `dlas-gpu` is the same
//! policy with ElasticFlow's thresholds (`jobs.py:108`, 3 queues at 3,250
//! and 7,200 GPU-seconds), as ElasticFlow's `dlas_sim_jobs(gputime=True)` runs it.

use super::ordered::{Key, Order};
use crate::rules::EfCharge;
use crate::simulator::Ctx;
use crate::waitqueue::ordered_bits;

pub struct Tiresias {
    /// Attained GPU-seconds at which a job drops to the next queue.
    pub thresholds: Vec<f64>,
    pub name: &'static str,
    /// How ElasticFlow's rules charge it (its `dlas_sim_jobs` charges apart).
    pub ef_charge: EfCharge,
}

impl Default for Tiresias {
    fn default() -> Self {
        // One GPU-hour and ten GPU-hours: three queues.
        Tiresias {
            thresholds: vec![3600.0, 36000.0],
            name: "tiresias",
            ef_charge: EfCharge::Remembered,
        }
    }
}

impl Tiresias {
    /// ElasticFlow's `dlas-gpu` baseline.
    pub fn dlas_gpu() -> Tiresias {
        Tiresias {
            thresholds: vec![3250.0, 7200.0],
            name: "dlas-gpu",
            ef_charge: EfCharge::AtStartsAndFlushes,
        }
    }

    fn queue(&self, attained: f64) -> usize {
        // The slack keeps a job that reaches a threshold exactly from waking the engine again.
        self.thresholds.iter().take_while(|&&t| attained + 1e-6 >= t).count()
    }
}

impl Order for Tiresias {
    fn name(&self) -> String {
        self.name.into()
    }

    fn ef_charge(&self) -> EfCharge {
        self.ef_charge
    }

    /// By queue (attained service), then submission.
    fn key(&self, ctx: &Ctx<'_>, j: usize, _running: bool) -> Key {
        let queue = self.queue(ctx.st[j].attained(ctx.now));
        (queue as u64, ordered_bits(ctx.w.jobs[j].submit), 0, j)
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

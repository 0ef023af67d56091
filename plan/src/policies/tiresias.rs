//! Tiresias-style two-dimensional least-attained-service (NSDI'19): a job's
//! attained service is GPUs x time; jobs sit in priority queues by attained
//! service (thresholds in GPU-seconds), FIFO within a queue, preemptive, with
//! requested counts. Needs no duration knowledge. `dlas-gpu` is the same
//! policy with ElasticFlow's thresholds (`jobs.py:108`, 3 queues at 3,250
//! and 7,200 GPU-seconds), as ElasticFlow's `dlas_sim_jobs(gputime=True)` runs it:
//! its queues are lists that a job joins at the end (on arrival or on
//! dropping a queue), and after each round the waiting jobs move behind the
//! running ones, so a running job is never preempted by a waiting one of its
//! own queue.

use std::sync::Mutex;

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
    /// ElasticFlow's queues: within a queue, jobs in the order they entered
    /// it, running ones ahead of waiting ones (else by submission).
    pub entry_order: bool,
    /// Per job: (queue, when it entered that queue), for `entry_order`.
    entered: Mutex<Vec<Option<(usize, f64)>>>,
}

impl Default for Tiresias {
    fn default() -> Self {
        // One GPU-hour and ten GPU-hours: three queues.
        Tiresias {
            thresholds: vec![3600.0, 36000.0],
            name: "tiresias",
            ef_charge: EfCharge::Remembered,
            entry_order: false,
            entered: Mutex::new(Vec::new()),
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
            entry_order: true,
            entered: Mutex::new(Vec::new()),
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

    /// By queue (attained service), then submission; or, in ElasticFlow's
    /// order, running jobs first, then by when the job entered its queue.
    fn key(&self, ctx: &Ctx<'_>, j: usize, running: bool) -> Key {
        let s = &ctx.st[j];
        let attained = s.attained(ctx.now);
        let queue = self.queue(attained);
        let submit = ctx.w.jobs[j].submit;
        if !self.entry_order {
            return (queue as u64, ordered_bits(submit), 0, j);
        }
        let entered = if queue == 0 {
            submit
        } else {
            let mut entered = self.entered.lock().unwrap_or_else(|e| e.into_inner());
            if entered.len() != ctx.w.jobs.len() {
                *entered = vec![None; ctx.w.jobs.len()];
            }
            match entered[j] {
                Some((q, t)) if q == queue => t,
                _ => {
                    // It crossed the threshold while running: in its current segment
                    // (a crossing is recorded at the latest when the segment ends).
                    let over = attained - self.thresholds[queue - 1];
                    let t = match s.alloc {
                        Some((_, g)) if running => ctx.now - over / g as f64,
                        _ => ctx.now,
                    };
                    entered[j] = Some((queue, t));
                    t
                }
            }
        };
        (queue as u64, u64::from(!running), ordered_bits(entered), j)
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

//! What the baselines share: a baseline is an order over the active jobs (a
//! key that does not change while a job waits) and a rule for what a job
//! takes from the free GPUs. GPUs are handed out in that order, to running
//! and waiting jobs alike (a running job passed over stops); a strict order
//! stops at the first job that gets nothing (FIFO), the others backfill.
//! The waiting jobs are kept in order from one event to the next, so an
//! event costs the running jobs and the waiting jobs the GPUs reach, not
//! the whole queue.

use crate::rules::EfCharge;
use crate::simulator::{Alloc, Changes, Ctx, Policy};
use crate::waitqueue::{Floor, WaitQueue, first_in_order};
use crate::workload::PJob;

/// A job's place in a baseline's order; it ends in the job index.
pub type Key = (u64, u64, u64, usize);

pub trait Order: Send {
    fn name(&self) -> String;
    /// Job `j`'s place; `running` says whether it holds GPUs now. A waiting
    /// job's place must not change while it waits.
    fn key(&self, ctx: &Ctx<'_>, j: usize, running: bool) -> Key;
    /// The fewest GPUs the job can start with.
    fn fewest(&self, job: &PJob) -> u32 {
        job.req
    }
    /// What job `j` takes from `free`: by default its requested count, on
    /// the GPU type [`super::pick_type`] chooses.
    fn take(&self, ctx: &Ctx<'_>, j: usize, free: &[u32]) -> Option<Alloc> {
        let job = &ctx.w.jobs[j];
        super::pick_type(job, ctx.st[j].alloc.map(|a| a.0), job.req, free, 0.0).map(|t| (t, job.req))
    }
    /// Stop at the first job that gets nothing (no backfilling).
    fn strict(&self) -> bool {
        false
    }
    /// An extra event time the order needs.
    fn wakeup(&self, _ctx: &Ctx<'_>) -> Option<f64> {
        None
    }
    /// How ElasticFlow charges its overhead to this order (`Policy::ef_charge`).
    fn ef_charge(&self) -> EfCharge {
        EfCharge::Remembered
    }
}

/// A baseline run as a policy.
pub struct Ordered<O> {
    order: O,
    queue: WaitQueue<Key>,
}

impl<O: Order> Ordered<O> {
    pub fn new(order: O) -> Ordered<O> {
        Ordered {
            order,
            queue: WaitQueue::default(),
        }
    }

    fn wait(&mut self, ctx: &Ctx<'_>, j: usize) {
        let place = (self.order.fewest(&ctx.w.jobs[j]), self.order.key(ctx, j, false));
        self.queue.set(j, Some(place));
    }
}

impl<O: Order> Policy for Ordered<O> {
    fn name(&self) -> String {
        self.order.name()
    }

    fn decide(&mut self, ctx: &Ctx<'_>, changes: &mut Changes) {
        for &j in ctx.arrived {
            self.wait(ctx, j);
        }
        let mut sorted: Vec<Key> = ctx.running.iter().map(|&j| self.order.key(ctx, j, true)).collect();
        sorted.sort_unstable();
        let strict = self.order.strict();
        let mut free = ctx.w.cluster.capacity.clone();
        let mut decided: Vec<(usize, Option<Alloc>)> = Vec::new();
        let mut waiting = self.queue.merge();
        let mut next_sorted = 0;
        // The limit only falls within this loop (see `Floor`).
        let mut floor: Floor<Key> = None;
        loop {
            let limit = free.iter().copied().max().unwrap_or(0);
            if limit == 0 {
                break;
            }
            // A strict order must meet the next waiting job even if it cannot fit.
            let Some(((_, _, _, j), _)) = first_in_order(
                sorted.get(next_sorted).copied(),
                &mut next_sorted,
                &mut [(&mut waiting, if strict { u32::MAX } else { limit })],
                &mut floor,
            ) else {
                break;
            };
            let got = self.order.take(ctx, j, &free);
            if let Some((t, g)) = got {
                free[t as usize] -= g;
            }
            decided.push((j, got));
            if got.is_none() && strict {
                break;
            }
        }
        drop(waiting);
        for (j, got) in decided {
            let held = ctx.st[j].alloc;
            if got != held {
                changes.push((j, got));
            }
            match (held, got) {
                (None, Some(_)) => self.queue.set(j, None),
                (Some(_), None) => self.wait(ctx, j),
                _ => {}
            }
        }
        // Running jobs the GPUs did not reach stop.
        for &(_, _, _, j) in &sorted[next_sorted..] {
            changes.push((j, None));
            self.wait(ctx, j);
        }
    }

    fn wakeup(&self, ctx: &Ctx<'_>) -> Option<f64> {
        self.order.wakeup(ctx)
    }

    fn ef_charge(&self) -> EfCharge {
        self.order.ef_charge()
    }
}

//! ElasticFlow's Tiresias baseline, `dlas-gpu` (`dlas_sim_jobs(gputime=True)`,
//! scheduler.py), as its loop runs it: three queues by attained GPU-seconds
//! (thresholds 3,250 and 7,200, `jobs.py:108`), each a list that jobs join at
//! the end, walked in order with backfilling at the requested counts.
//! What its loop does, and this follows:
//! - a job joins queue 0 on arrival; a running job whose GPU-seconds reached
//!   its queue's limit drops one queue when an event notices it, joining
//!   the end (running jobs are looked at by GPU count, most first, then
//!   arrival);
//! - after each round the waiting jobs of every queue move behind its
//!   running ones, in their order;
//! - it decides at arrivals, at a running job's end and at the next
//!   threshold jump, each no sooner than one slot after the last decision;
//!   it computes the jump as `ceil((limit - executed seconds) / GPUs)` from
//!   the round: seconds where GPU-seconds are meant, so a jump falls late
//!   unless another event comes first;
//! - a job asking for more GPUs than the cluster has waits forever (the
//!   run ends with it pending): under rules that allow rejection such a job
//!   with a deadline is rejected on arrival, which counts the same (a missed
//!   deadline, no JCT); otherwise it runs at the cluster's size.

use super::pick_type;
use crate::rules::{Admission, EfCharge};
use crate::simulator::{Changes, Ctx, Policy};

/// Attained GPU-seconds at which a job leaves queue 0 and queue 1.
const LIMITS: [f64; 2] = [3250.0, 7200.0];

#[derive(Default)]
pub struct DlasGpu {
    /// Each queue's jobs in their list order.
    queues: [Vec<usize>; 3],
    /// Per job: its queue (while active).
    queue_of: Vec<u8>,
    /// Per job: its place in arrival order.
    arrival: Vec<usize>,
    arrived: usize,
    /// Jobs rejected in the last round (asking for more GPUs than there are).
    rejected: Vec<usize>,
}

impl DlasGpu {
    /// Seconds the job has run, its pauses left out (ElasticFlow's
    /// `executed_time`): its work done at its current rate, exact on one GPU
    /// type, as ElasticFlow's clusters are.
    fn executed_s(ctx: &Ctx<'_>, j: usize) -> f64 {
        let s = &ctx.st[j];
        if s.rate > 0.0 {
            (ctx.w.jobs[j].total - s.remaining(ctx.now)) / s.rate
        } else {
            0.0
        }
    }

    fn leave_queue(&mut self, j: usize) {
        let q = &mut self.queues[self.queue_of[j] as usize];
        if let Some(at) = q.iter().position(|&k| k == j) {
            q.remove(at);
        }
    }
}

impl Policy for DlasGpu {
    fn name(&self) -> String {
        "dlas-gpu".into()
    }

    fn decide(&mut self, ctx: &Ctx<'_>, changes: &mut Changes) {
        let n = ctx.w.jobs.len();
        if self.queue_of.len() != n {
            self.queue_of = vec![0; n];
            self.arrival = vec![usize::MAX; n];
        }
        // Finished jobs leave their queues (they held GPUs until this round).
        for q in &mut self.queues {
            q.retain(|&j| ctx.st[j].done.is_none());
        }
        // A job runs on one GPU type: the most it can get is the largest type's count.
        let most = ctx.w.cluster.capacity.iter().copied().max().unwrap_or(0);
        let may_reject = ctx.w.rules.admission == Admission::Reject;
        for &j in ctx.arrived {
            let job = &ctx.w.jobs[j];
            if may_reject && job.deadline.is_some() && job.asked > most {
                self.rejected.push(j);
                continue;
            }
            self.queue_of[j] = 0;
            self.arrival[j] = self.arrived;
            self.arrived += 1;
            self.queues[0].push(j);
        }
        // Demotions, in ElasticFlow's `runnable_jobs` order.
        let mut running: Vec<usize> = ctx.running.to_vec();
        running.sort_by_key(|&j| (std::cmp::Reverse(ctx.st[j].alloc.map_or(0, |a| a.1)), self.arrival[j]));
        for j in running {
            let q = self.queue_of[j] as usize;
            let gpus = f64::from(ctx.st[j].alloc.map_or(0, |a| a.1));
            // ElasticFlow counts whole seconds: a crossing met at its jump is
            // not lost to rounding here.
            if q < LIMITS.len() && Self::executed_s(ctx, j) * gpus >= LIMITS[q] - 1e-6 {
                self.leave_queue(j);
                self.queue_of[j] += 1;
                self.queues[q + 1].push(j);
            }
        }
        let mut free = ctx.w.cluster.capacity.clone();
        for q in &mut self.queues {
            let mut runs = Vec::with_capacity(q.len());
            for &j in q.iter() {
                let job = &ctx.w.jobs[j];
                let held = ctx.st[j].alloc;
                let got = pick_type(job, held.map(|a| a.0), job.req, &free, 0.0).map(|t| (t, job.req));
                if let Some((t, g)) = got {
                    free[t as usize] -= g;
                }
                if got != held {
                    changes.push((j, got));
                }
                runs.push(got.is_some());
            }
            // Waiting jobs move behind the running ones, keeping their order.
            let side = |running: bool| {
                q.iter()
                    .zip(&runs)
                    .filter(move |&(_, &r)| r == running)
                    .map(|(&j, _)| j)
            };
            let reordered: Vec<usize> = side(true).chain(side(false)).collect();
            *q = reordered;
        }
    }

    /// ElasticFlow's next threshold jump (see the module's note on its units).
    fn wakeup(&self, ctx: &Ctx<'_>) -> Option<f64> {
        ctx.running
            .iter()
            .filter_map(|&j| {
                let q = *self.queue_of.get(j)? as usize;
                let limit = *LIMITS.get(q)?;
                let gpus = f64::from(ctx.st[j].alloc?.1);
                Some(ctx.now + ((limit - Self::executed_s(ctx, j)) / gpus).ceil())
            })
            .min_by(f64::total_cmp)
    }

    fn take_rejected(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.rejected)
    }

    fn ef_charge(&self) -> EfCharge {
        EfCharge::DeferredStarts
    }
}

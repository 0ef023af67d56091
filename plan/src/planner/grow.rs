//! Step 3 of the planner: elastic jobs grow from their base counts, first
//! back to what they hold, then by marginal throughput per GPU.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Objective, Planner, deadline};
use crate::simulator::{Alloc, Ctx};
use crate::waitqueue::ordered_bits;

/// A candidate step for the expansion heap: (score as ordered bits, job,
/// index in the planning order). Equal scores go to the lower job index, so
/// the result does not depend on the order's arrangement where it is not sorted.
type Step = (u64, Reverse<usize>, usize);

impl Planner {
    /// 3. Elastic jobs in `order` grow from their base counts in `out`.
    pub(super) fn grow(
        &self,
        ctx: &Ctx<'_>,
        costs: &deadline::Costs,
        order: &[usize],
        out: &mut [Option<Alloc>],
        free: &mut [u32],
    ) {
        let (w, now, obj) = (ctx.w, ctx.now, self.cfg.objective);
        // 3a. Running elastic jobs keep what they hold, in order, as far as GPUs remain.
        for (i, &j) in order.iter().enumerate() {
            if let (Some((t, g)), Some((ct, cg))) = (out[i], ctx.st[j].alloc)
                && w.jobs[j].elastic
                && t == ct
                && cg > g
            {
                let mut to = g + (cg - g).min(free[t as usize]);
                if let Some(c) = &w.jobs[j].belief[t as usize] {
                    to = c.floor_count(to).max(g);
                }
                free[t as usize] -= to - g;
                out[i] = Some((t, to));
            }
        }
        // 3b. Expansion by marginal throughput per GPU (none without a free GPU).
        if free.iter().all(|&f| f == 0) {
            return;
        }
        let free_placement = !w.rules.placement_penalty;
        let min_gain = self
            .cfg
            .min_gain
            .unwrap_or(if obj == Objective::Deadline && free_placement {
                0.0
            } else {
                0.1
            });
        let step = |i: usize, cur: Alloc, free: &[u32]| -> Option<(f64, u32)> {
            let j = order[i];
            let job = &w.jobs[j];
            let (t, g) = cur;
            let curve = job.belief[t as usize].as_ref()?;
            let (mut next, mut r1, r0) = curve.hull_step(g)?;
            if next > g + free[t as usize] {
                // Interpolating: as far as the free GPUs go; measured counts only: not at all.
                if curve.discrete {
                    return None;
                }
                next = g + free[t as usize];
                r1 = curve.r(next);
            }
            if next <= g {
                return None;
            }
            let eff = (r1 - r0) / (next - g) as f64 / curve.one_gpu_rate();
            if eff < min_gain {
                return None;
            }
            let rem = ctx.st[j].remaining(now);
            // Growing a job that would otherwise run on unchanged costs a restart: only if it pays twice over.
            if ctx.st[j].alloc == Some(cur) && rem / r0 - rem / r1 < 2.0 * costs.change_cost(next) {
                return None;
            }
            let time = rem / r0;
            let score = if obj == Objective::Makespan {
                eff * time
            } else {
                eff / time.max(1e-9)
            };
            Some((score, next))
        };
        let candidates: Vec<Step> = order
            .iter()
            .enumerate()
            .filter_map(|(i, &j)| {
                let a = out[i].filter(|_| w.jobs[j].elastic)?;
                step(i, a, free).map(|(score, _)| (ordered_bits(score), Reverse(j), i))
            })
            .collect();
        let mut heap = BinaryHeap::from(candidates);
        // Once no GPU is free no step can be taken: the rest are not looked at.
        while free.iter().any(|&f| f > 0)
            && let Some((_, j, i)) = heap.pop()
        {
            let cur = out[i].unwrap();
            // Free GPUs may have shrunk since the score was computed: recompute.
            let Some((_, next)) = step(i, cur, free) else {
                continue;
            };
            free[cur.0 as usize] -= next - cur.1;
            out[i] = Some((cur.0, next));
            if let Some((score, _)) = step(i, (cur.0, next), free) {
                heap.push((ordered_bits(score), j, i));
            }
        }
    }
}

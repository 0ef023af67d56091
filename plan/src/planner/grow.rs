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

/// A job found unable to grow from what it holds, for a reason that lasts
/// while it holds it: no curve or no hull step beyond its count (`next`
/// None), or a step to `next` too inefficient or not worth a restart. The
/// job's remaining work only shrinks, so neither verdict can turn while the
/// step to `next` fits; a later event skips it (on the 100k-job problem,
/// planning 9.1 s to 8.3 s with the same schedules: bench/plan/RESULTS.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Stuck {
    alloc: Alloc,
    next: Option<u32>,
}

impl Stuck {
    /// Whether the verdict still holds for a job planned at `cur` that holds `held`.
    fn holds(self, cur: Alloc, held: Option<Alloc>, free: &[u32]) -> bool {
        held == Some(cur) && cur == self.alloc && self.next.is_none_or(|next| cur.1 + free[cur.0 as usize] >= next)
    }
}

impl Planner {
    /// 3. Elastic jobs in `order` grow from their base counts in `out`.
    pub(super) fn grow(
        &mut self,
        ctx: &Ctx<'_>,
        costs: &deadline::Costs,
        order: &[usize],
        out: &mut [Option<Alloc>],
        free: &mut [u32],
    ) {
        let (w, now, obj) = (ctx.w, ctx.now, self.cfg.objective);
        // 3a. Running elastic jobs keep what they hold, in order, as far as GPUs remain.
        for (i, &j) in order.iter().enumerate() {
            if let (Some((t, g)), Some((ct, cg))) = (out[i], self.held[j])
                && self.consts[j].elastic
                && t == ct
                && cg > g
            {
                let mut to = g + (cg - g).min(free[t as usize]);
                if let Some(c) = self.consts[j].belief(&w.jobs[j], t) {
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
        // A step from `cur`, or why there is none: `Err(Some(stuck))` where
        // the reason lasts (see `Stuck`), `Err(None)` where it may not.
        let (consts, held) = (&self.consts, &self.held);
        let step = |i: usize, cur: Alloc, free: &[u32]| -> Result<(f64, u32), Option<Stuck>> {
            let j = order[i];
            let job = &w.jobs[j];
            let (t, g) = cur;
            let stuck = |next| Err(Some(Stuck { alloc: cur, next }));
            let Some(curve) = consts[j].belief(job, t) else {
                return stuck(None);
            };
            let Some((mut next, mut r1, r0)) = curve.hull_step(g) else {
                return stuck(None);
            };
            let hull_next = next;
            let capped = next > g + free[t as usize];
            if capped {
                // Interpolating: as far as the free GPUs go; measured counts only: not at all.
                if curve.discrete {
                    return Err(None);
                }
                next = g + free[t as usize];
                r1 = curve.r(next);
            }
            if next <= g {
                return Err(None);
            }
            // Where the whole hull step fits, the checks below read only
            // the job's curve, its count and its remaining work, which only
            // shrinks: their verdict lasts while the job holds `cur`.
            let why_not = || {
                (!capped && held[j] == Some(cur)).then_some(Stuck {
                    alloc: cur,
                    next: Some(hull_next),
                })
            };
            let eff = (r1 - r0) / (next - g) as f64 / curve.one_gpu_rate();
            if eff < min_gain {
                return Err(why_not());
            }
            let rem = ctx.st[j].remaining(now);
            // Growing a job that would otherwise run on unchanged costs a restart: only if it pays twice over.
            if held[j] == Some(cur) && rem / r0 - rem / r1 < 2.0 * costs.change_cost(next) {
                return Err(why_not());
            }
            let time = rem / r0;
            let score = if obj == Objective::Makespan {
                eff * time
            } else {
                eff / time.max(1e-9)
            };
            Ok((score, next))
        };
        let mut candidates: Vec<Step> = Vec::new();
        for (i, &j) in order.iter().enumerate() {
            let Some(a) = out[i].filter(|_| self.consts[j].elastic) else {
                continue;
            };
            if self.stuck[j].is_some_and(|s| s.holds(a, self.held[j], free)) {
                continue;
            }
            match step(i, a, free) {
                Ok((score, _)) => candidates.push((ordered_bits(score), Reverse(j), i)),
                Err(stuck) => {
                    if stuck.is_some() {
                        self.stuck[j] = stuck;
                    }
                }
            }
        }
        let mut heap = BinaryHeap::from(candidates);
        // Once no GPU is free no step can be taken: the rest are not looked at.
        while free.iter().any(|&f| f > 0)
            && let Some((_, j, i)) = heap.pop()
        {
            let cur = out[i].unwrap();
            // Free GPUs may have shrunk since the score was computed: recompute.
            let Ok((_, next)) = step(i, cur, free) else {
                continue;
            };
            free[cur.0 as usize] -= next - cur.1;
            out[i] = Some((cur.0, next));
            if let Ok((score, _)) = step(i, (cur.0, next), free) {
                heap.push((ordered_bits(score), j, i));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Stuck;

    #[test]
    fn a_verdict_holds_only_while_the_job_keeps_its_gpus_and_the_step_fits() {
        let at = |g, next| Stuck { alloc: (0, g), next };
        // Held and planned at 4, the step to 8 fits in 4 free GPUs: skip.
        assert!(at(4, Some(8)).holds((0, 4), Some((0, 4)), &[4]));
        // With 3 free the step would be cut short: a different step, look again.
        assert!(!at(4, Some(8)).holds((0, 4), Some((0, 4)), &[3]));
        // It moved to another count or type, or stopped: look again.
        assert!(!at(4, Some(8)).holds((0, 8), Some((0, 8)), &[8]));
        assert!(!at(4, Some(8)).holds((0, 4), None, &[8]));
        assert!(!at(4, Some(8)).holds((0, 4), Some((1, 4)), &[8, 8]));
        // No step at all from 4: nothing free changes that.
        assert!(at(4, None).holds((0, 4), Some((0, 4)), &[0]));
    }
}

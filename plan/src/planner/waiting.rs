//! The planner's record of its waiting jobs: each job's place in the
//! planning order, the two queues (promoted past the starvation bound, and
//! the rest), and the watch for the starvation bound.

use super::{Objective, Planner, STARVATION_FACTOR};
use crate::simulator::{Alloc, Changes, Ctx};
use crate::waitqueue::ordered_bits;

impl Planner {
    /// Starving jobs, admitted deadline jobs, the rest.
    fn class_of(&self, j: usize) -> u8 {
        if self.promoted[j] {
            0
        } else if self.admitted[j] == Some(true) {
            1
        } else {
            2
        }
    }

    /// Job `j`'s place in the planning order: (class, -priority, key).
    /// `waiting_since` is `Some` for a job that waits from then on, `None`
    /// for one that holds GPUs.
    pub(super) fn place(&self, ctx: &Ctx<'_>, j: usize, waiting_since: Option<f64>) -> (u8, i64, f64) {
        let class = self.class_of(j);
        let key = match class {
            0 => waiting_since.unwrap_or(ctx.st[j].waiting_since),
            1 => self.due[j],
            _ => {
                let g = self.remaining_gpu_time(ctx, j);
                match self.cfg.objective {
                    Objective::Makespan => -g,
                    _ if waiting_since.is_none() => g * self.cfg.keep_factor,
                    _ => g,
                }
            }
        };
        (class, -self.consts[j].priority, key)
    }

    /// Job `j` waits from `since` on: in the queue at its place, and watched
    /// for the starvation bound.
    pub(super) fn wait(&mut self, ctx: &Ctx<'_>, j: usize, since: f64) {
        let (class, prio, key) = self.place(ctx, j, Some(since));
        let entry = Some((self.consts[j].base, (u64::from(class), prio, ordered_bits(key), j)));
        let (into, other) = if class == 0 {
            (&mut self.starved, &mut self.queue)
        } else {
            (&mut self.queue, &mut self.starved)
        };
        other.set(j, None);
        into.set(j, entry);
        self.watch(ctx, j, since);
    }

    /// Watch waiting job `j` (waiting since `since`) for the starvation bound:
    /// the fixed bound, or a multiple of the job's predicted run time if that
    /// is longer. A fixed bound alone turns the plan into FIFO on an
    /// overloaded cluster, where every job waits past it: a long job waits in
    /// proportion to its length before it goes ahead of shorter ones.
    pub(super) fn watch(&mut self, ctx: &Ctx<'_>, j: usize, since: f64) {
        if self.cfg.objective == Objective::Makespan || self.promoted[j] {
            return;
        }
        let factor = self.cfg.starvation_factor.unwrap_or(match self.cfg.objective {
            Objective::Jct => STARVATION_FACTOR,
            _ => 0.0,
        });
        let run_s = self.remaining_gpu_time(ctx, j) / self.consts[j].req as f64;
        let at = since + self.cfg.starvation_s.max(factor * run_s);
        self.unwatch(j);
        self.starve_at[j] = at;
        self.starving.insert((ordered_bits(at), j));
    }

    fn unwatch(&mut self, j: usize) {
        let at = std::mem::replace(&mut self.starve_at[j], f64::NAN);
        if !at.is_nan() {
            self.starving.remove(&(ordered_bits(at), j));
        }
    }

    /// Job `j` stops waiting.
    pub(super) fn unwait(&mut self, j: usize) {
        self.queue.set(j, None);
        self.starved.set(j, None);
        self.unwatch(j);
    }

    /// Decisions `out` for the jobs in `order` become `changes`; the queue and
    /// the running set follow them. `due_moved` jobs (admitted, found unable to
    /// make their due time, which moved) wait again at their new place.
    pub(super) fn settle(
        &mut self,
        ctx: &Ctx<'_>,
        order: &[usize],
        out: &[Option<Alloc>],
        due_moved: &[usize],
        changes: &mut Changes,
    ) {
        for (i, &j) in order.iter().enumerate() {
            let held = self.held[j];
            debug_assert_eq!(held, ctx.st[j].alloc, "the planner's record of what job {j} holds");
            if out[i] != held {
                changes.push((j, out[i]));
                self.set_held(j, out[i]);
            }
            match (held, out[i]) {
                (None, Some(_)) => self.unwait(j),
                (Some(_), None) => self.wait(ctx, j, ctx.now),
                (None, None) if due_moved.contains(&j) => self.wait(ctx, j, ctx.st[j].waiting_since),
                _ => {}
            }
        }
    }

    /// Promote the waiting jobs that reached the starvation bound by `now`.
    pub(super) fn promote(&mut self, ctx: &Ctx<'_>) {
        while let Some(&(_, j)) = self.starving.first() {
            if ctx.now < self.starve_at[j] {
                break;
            }
            self.unwatch(j);
            self.promoted[j] = true;
            if self.queue.place_of(j).is_some() {
                self.wait(ctx, j, ctx.st[j].waiting_since);
            }
        }
    }
}

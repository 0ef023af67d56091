//! The planner: ordering, elastic scaling and (through the engine) placement.
//!
//! At every arrival and completion it decides every active job's GPU type
//! and count afresh, on its *belief* of the throughputs. It keeps the waiting
//! jobs in order from one event to the next (`waiting`) and the running ones in
//! a set, and reads the order only as far as GPUs last, so an event costs
//! the running jobs and the jobs reached, not the whole queue:
//! 1. Order. `jct`: starving jobs first (waited past the bound; on at most
//!    `starved_share` of the GPUs, the rest of them after everyone else),
//!    then shortest predicted remaining GPU-time (a running job's key is
//!    scaled by `keep_factor`, so only a clearly shorter job preempts it). `deadline`:
//!    admitted jobs earliest-deadline-first, then the rest as for `jct`.
//!    `makespan`: longest predicted remaining GPU-time first.
//! 2. Base counts in that order, backfilling: rigid jobs their request,
//!    admitted deadline jobs the fewest GPUs that still meet the deadline,
//!    other elastic jobs one GPU. With several GPU types a job takes the
//!    fastest type with room, a slower one only if it reaches
//!    `type_min_ratio` of its best type's speed (the ratio differs per job);
//!    `makespan` assigns types by comparative advantage instead.
//! 3. Elastic scaling: running elastic jobs first get back the GPUs they hold
//!    (no change, no restart), then free GPUs go, one step along each job's
//!    concave hull at a time, to the best marginal throughput per GPU
//!    (normalised by the job's one-GPU throughput), weighted by 1/remaining
//!    time (`jct`, `deadline`) or by remaining time (`makespan`); a step is
//!    taken only if its efficiency is at least `min_gain`, and a step that
//!    would change a running job only if it saves at least twice the restart.

mod deadline;
mod fits;
mod grow;
mod job_consts;
mod waiting;

use std::collections::BTreeSet;

use crate::jobset::JobSet;
use crate::policies::pick_type;
use crate::rules::{Admission, EfOverhead, Overhead};
use crate::simulator::{Alloc, Changes, Ctx, Policy};
use job_consts::JobConsts;

use crate::waitqueue::{Floor, WaitQueue, first_in_order, ordered_bits};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Objective {
    Jct,
    Makespan,
    Deadline,
}

impl Objective {
    pub fn name(self) -> &'static str {
        match self {
            Objective::Jct => "jct",
            Objective::Makespan => "makespan",
            Objective::Deadline => "deadline",
        }
    }
}

#[derive(Clone, Debug)]
pub struct PlannerConfig {
    pub objective: Objective,
    /// Change GPU counts of elastic jobs (false: everyone keeps the requested count).
    pub elastic: bool,
    /// A job waiting this long (seconds) is served before all others (`jct`, `deadline`)...
    pub starvation_s: f64,
    /// ...or, if longer, this many times its predicted run time at its
    /// request; `None`: [`STARVATION_FACTOR`] for `jct`, 0 for `deadline`
    /// (on ElasticFlow's traces a factor moved the deadline share by -0.1 to
    /// +3.7 points and average JCT by -0.4 to +0.8 h: no consistent gain, so
    /// the deadline planner keeps the fixed bound).
    pub starvation_factor: Option<f64>,
    /// Promoted jobs go ahead of all others on at most this share of the
    /// GPUs, and after all others on the rest. Where the cluster is overloaded
    /// every job waits past the bound; with no cap the plan would then be
    /// FIFO. On the busy 82k-job load on 128 GPUs (bench/plan/busy.sh) 0.5
    /// cuts the average JCT from 1539 h to 347 h at about the same p99.
    pub starved_share: f64,
    /// Restart cost the engine charges; the planner weighs changes against it.
    pub restart_s: f64,
    /// Least marginal efficiency (extra one-GPU-equivalents per extra GPU) worth a
    /// GPU; `None`: 0.1, but 0 for `deadline` where placement costs nothing
    /// (ElasticFlow's rules: an idle GPU that makes an admitted job finish early
    /// frees the future for admissions; where spreading costs throughput, the
    /// small gains do not pay).
    pub min_gain: Option<f64>,
    /// A running job's ordering key is multiplied by this (< 1 resists preemption).
    pub keep_factor: f64,
    /// A job takes a slower GPU type only if it reaches this share of its best type's throughput.
    pub type_min_ratio: f64,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        PlannerConfig {
            objective: Objective::Jct,
            elastic: true,
            starvation_s: 86_400.0,
            starvation_factor: None,
            starved_share: 0.5,
            restart_s: 30.0,
            min_gain: None,
            keep_factor: 0.5,
            type_min_ratio: 0.3,
        }
    }
}

/// A waiting job's place in the planning order: (class, -priority, key as
/// ordered bits, job). The class is a whole word: as a `u8` it left seven
/// bytes of padding, copied as two overlapping moves that stalled the load
/// after them (`perf annotate` on the 100k-job problem, bench/plan/RESULTS.md).
type Place = (u64, i64, u64, usize);

/// Under `jct`, a job goes ahead of all others once it has waited the fixed
/// bound or this many times its predicted run time, whichever is longer (see
/// `Planner::watch`). On the busy 82k-job load (bench/plan/busy.sh) 10 cuts
/// the average JCT on 512 GPUs from 137 h to 3.5 h; on the ten ITP traces it
/// never raised it (`--starvation-factor 0` against 10).
pub const STARVATION_FACTOR: f64 = 10.0;

/// Share of a deadline job's remaining slack kept in reserve (admission and
/// GPU counts) for placement penalties and restarts the plan does not see.
const DEADLINE_MARGIN: f64 = 0.1;
/// The same where placement costs nothing and the overheads are modelled
/// (ElasticFlow's rules).
const DEADLINE_MARGIN_MODELLED: f64 = 0.06;

pub struct Planner {
    cfg: PlannerConfig,
    /// Reported instead of `plan-<objective>[-fixed]` (the `fixed` baseline).
    name: Option<&'static str>,
    /// Per job: what stays fixed and is read at every event.
    consts: Vec<JobConsts>,
    /// Jobs past the starvation bound; they keep the promotion until they finish.
    promoted: Vec<bool>,
    /// Deadline admission decisions (`None`: not decided yet).
    admitted: Vec<Option<bool>>,
    /// Per admitted job: when it is due (its deadline, or later once it can
    /// no longer make that: `deadline::late_due`).
    due: Vec<f64>,
    /// Jobs admitted so far, and how many of them turned late.
    admissions: usize,
    turned_late: usize,
    /// Jobs rejected in the last round (rules that allow rejection only).
    rejected: Vec<usize>,
    /// What changes and rounds cost under the workload's rules.
    costs: Option<deadline::Costs>,
    /// Seconds every round charges each running job (0 without per-round overheads).
    round_base: f64,
    /// When the last round was, and the running mean of the time between rounds.
    last_round: Option<f64>,
    round_interval: f64,
    /// Waiting jobs in order, kept across events: those promoted past the
    /// starvation bound, and the others.
    starved: WaitQueue<Place>,
    queue: WaitQueue<Place>,
    /// Jobs holding GPUs, as this planner last decided, kept in the last
    /// planning order (not the engine's `Ctx::running`): sorting them at the
    /// next event then costs about one pass.
    running: JobSet,
    /// Waiting jobs not yet promoted, by when they reach the starvation
    /// bound (ordered bits), the first first; and that time per job (NaN: not watched).
    starving: BTreeSet<(u64, usize)>,
    starve_at: Vec<f64>,
    /// Per job: why it could not grow from what it holds, while that lasts.
    stuck: Vec<Option<grow::Stuck>>,
    /// Per job: what it holds, as this planner decided it (the engine applies
    /// every change as given). The passes over the running jobs at every
    /// event read it here, densely, instead of from the engine's job states.
    /// Set through `set_held`, which keeps `running` (the jobs holding
    /// something) in step.
    held: Vec<Option<Alloc>>,
    /// The running jobs' demand: each at the larger of its base count and
    /// what it holds, kept as `held` changes instead of summed at every event.
    running_demand: u64,
}

impl Planner {
    /// Job `j` at its base count on the GPU type `pick_type` chooses, taken
    /// from `free`. Inlined: its allocation returned through memory was
    /// read back with a stalled load, once per job and event.
    #[inline(always)]
    fn take_base(&self, ctx: &Ctx<'_>, j: usize, free: &mut [u32]) -> Option<Alloc> {
        let JobConsts {
            base,
            base_on_only_type,
            ..
        } = self.consts[j];
        if let Some(runs) = base_on_only_type {
            if !(runs && free[0] >= base) {
                return None;
            }
            free[0] -= base;
            return Some((0, base));
        }
        let t = pick_type(
            &ctx.w.jobs[j],
            self.held[j].map(|a| a.0),
            base,
            free,
            self.cfg.type_min_ratio,
        )?;
        free[t as usize] -= base;
        Some((t, base))
    }

    /// What stays fixed for a workload: believed rates, base counts, costs.
    fn init(&mut self, ctx: &Ctx<'_>) {
        let (w, cfg) = (ctx.w, &self.cfg);
        let n = w.jobs.len();
        self.promoted = vec![false; n];
        self.starve_at = vec![f64::NAN; n];
        self.stuck = vec![None; n];
        self.held = vec![None; n];
        self.running_demand = 0;
        self.admitted = vec![None; n];
        self.due = vec![f64::INFINITY; n];
        self.admissions = 0;
        self.turned_late = 0;
        self.running = JobSet::new(n);
        self.consts = w.jobs.iter().map(|j| JobConsts::of(j, cfg.elastic)).collect();
        let ef = (w.rules.overhead == Overhead::ElasticFlow).then(|| EfOverhead::new(w.cluster.total_gpus()));
        // Per-round charges: the base (2 s, 7 s on 256+ GPUs) every round.
        self.round_base = match ef {
            Some(_) if w.cluster.total_gpus() >= 256 => 7.0,
            Some(_) => 2.0,
            None => 0.0,
        };
        self.round_interval = w.rules.round_gap_s.max(1.0);
        let margin = if w.rules.placement_penalty {
            DEADLINE_MARGIN
        } else {
            DEADLINE_MARGIN_MODELLED
        };
        self.costs = Some(deadline::Costs {
            restart_s: cfg.restart_s,
            derate: 0.0,
            ef,
            margin,
            release_lag: w.rules.round_gap_s,
        });
    }

    pub fn new(cfg: PlannerConfig) -> Planner {
        Planner {
            cfg,
            name: None,
            consts: Vec::new(),
            promoted: Vec::new(),
            admitted: Vec::new(),
            due: Vec::new(),
            admissions: 0,
            turned_late: 0,
            rejected: Vec::new(),
            costs: None,
            round_base: 0.0,
            last_round: None,
            round_interval: 0.0,
            starved: WaitQueue::default(),
            queue: WaitQueue::default(),
            running: JobSet::default(),
            starving: BTreeSet::new(),
            starve_at: Vec::new(),
            stuck: Vec::new(),
            held: Vec::new(),
            running_demand: 0,
        }
    }

    /// A planner that reports itself as `name`.
    pub fn named(cfg: PlannerConfig, name: &'static str) -> Planner {
        Planner {
            name: Some(name),
            ..Planner::new(cfg)
        }
    }

    /// Job `j` now holds `a`, as this planner decided: in the running set
    /// (at the end when it joins) while it holds something.
    fn set_held(&mut self, j: usize, a: Option<Alloc>) {
        self.running_demand = self.running_demand - self.demand_of(j, self.held[j]) + self.demand_of(j, a);
        self.held[j] = a;
        if a.is_some() {
            self.running.insert(j);
        } else {
            self.running.remove(j);
        }
    }

    /// What job `j` holding `a` adds to the running jobs' demand: the larger
    /// of its base count and what it holds; nothing where it holds nothing.
    fn demand_of(&self, j: usize, a: Option<Alloc>) -> u64 {
        a.map_or(0, |(_, g)| u64::from(self.consts[j].base.max(g)))
    }

    /// Predicted remaining GPU-time at the requested count on the job's best type.
    fn remaining_gpu_time(&self, ctx: &Ctx<'_>, j: usize) -> f64 {
        let c = &self.consts[j];
        ctx.st[j].remaining(ctx.now) / c.req_rate * c.req as f64
    }
}

/// Sort `v`, which is expected to be nearly sorted: insertion sort, which
/// costs the length plus the inversions, falling back to a full sort once
/// the moves pass a few per element.
fn sort_nearly_sorted<T: Ord + Copy>(v: &mut [T]) {
    let budget = 4 * v.len();
    let mut moves = 0;
    for i in 1..v.len() {
        let x = v[i];
        let mut k = i;
        while k > 0 && v[k - 1] > x {
            v[k] = v[k - 1];
            k -= 1;
        }
        v[k] = x;
        moves += i - k;
        if moves > budget {
            v.sort_unstable();
            return;
        }
    }
}

/// Share of its speed a job loses on its second-best GPU type (1 when it has only one).
fn second_type_loss(job: &crate::workload::PJob, n: u32) -> f64 {
    let (mut best, mut second) = (0.0f64, 0.0f64);
    for c in job.belief.iter().flatten() {
        let r = c.r(n);
        if r > best {
            second = best;
            best = r;
        } else if r > second {
            second = r;
        }
    }
    if best > 0.0 { 1.0 - second / best } else { 1.0 }
}

impl Policy for Planner {
    fn name(&self) -> String {
        match self.name {
            Some(name) => name.into(),
            None if self.cfg.elastic => format!("plan-{}", self.cfg.objective.name()),
            None => format!("plan-{}-fixed", self.cfg.objective.name()),
        }
    }

    fn decide(&mut self, ctx: &Ctx<'_>, changes: &mut Changes) {
        let cfg = self.cfg.clone();
        let (w, now) = (ctx.w, ctx.now);
        if self.promoted.len() != w.jobs.len() {
            self.init(ctx);
        }
        // The share of time per-round charges take: their base over the time
        // between rounds, a running mean (rounds come in bursts and lulls).
        if let Some(prev) = self.last_round {
            self.round_interval = 0.9 * self.round_interval + 0.1 * (now - prev);
        }
        self.last_round = Some(now);
        let base = self.costs.unwrap();
        let costs = deadline::Costs {
            derate: self.round_base / self.round_interval.max(w.rules.round_gap_s).max(1.0),
            margin: deadline::learned_margin(base.margin, self.admissions, self.turned_late),
            ..base
        };
        let obj = cfg.objective;
        // Jobs done since the last event hold nothing; newcomers wait.
        for &j in ctx.finished {
            self.set_held(j, None);
        }
        for &j in ctx.arrived {
            self.watch(ctx, j, ctx.st[j].waiting_since);
        }
        self.promote(ctx);
        self.rejected.clear();
        if obj == Objective::Deadline {
            let outcome = deadline::admit_new(ctx, &mut self.admitted, &mut self.due, &costs);
            self.admissions += outcome.admitted;
            self.turned_late += outcome.turned_late;
            let refused = outcome.refused;
            // Waiting jobs whose due time moved wait at their new place.
            for j in outcome.moved {
                if self.queue.place_of(j).is_some() {
                    self.wait(ctx, j, ctx.st[j].waiting_since);
                }
            }
            if w.rules.admission == Admission::Reject {
                self.rejected = refused;
            }
        }
        for &j in ctx.arrived {
            let since = ctx.st[j].waiting_since;
            if self.rejected.contains(&j) {
                self.unwait(j);
            } else {
                self.wait(ctx, j, since);
            }
        }

        // 1. Order: (class, -priority, key, job), smallest first. The running
        // jobs are sorted and merged with the kept queues of waiting ones
        // (promoted and not), stopping once no GPU is left.
        // 2. Base counts. `jct` and `deadline` hand out GPU types in order (the
        // most urgent jobs get the fastest type). `makespan` with several types
        // decides who runs in order against the total, then hands out types by
        // comparative advantage: jobs that lose most on their second-best type
        // choose first (on fixtures/plan: makespan 63.5 h against 65.0 h in
        // order, but average JCT 6.61 h against 6.57 h, hence not for `jct`).
        // It needs every job in order.
        let hetero = w.cluster.gpu_types.len() > 1 && obj == Objective::Makespan;
        // GPUs every active job would take at its base count (or what it holds).
        debug_assert_eq!(
            self.running_demand,
            self.running
                .as_slice()
                .iter()
                .map(|&j| self.demand_of(j, self.held[j]))
                .sum::<u64>()
        );
        let demand = self.queue.base_total() + self.starved.base_total() + self.running_demand;
        let mut free = w.cluster.capacity.clone();
        // When every job gets its base count and keeps what it holds anyway,
        // the order changes nothing (growth goes by marginal gain, ties by
        // job): no order is made.
        if w.cluster.gpu_types.len() == 1 && obj != Objective::Deadline && demand <= w.cluster.total_gpus() {
            let (order, mut out) = self.everyone_fits(ctx, &mut free);
            if cfg.elastic {
                self.grow(ctx, &costs, &order, &mut out, &mut free);
            }
            self.settle(ctx, &order, &out, &[], changes);
            return;
        }
        let mut sorted: Vec<Place> = self
            .running
            .as_slice()
            .iter()
            .map(|&j| {
                let (class, prio, key) = self.place(ctx, j, None);
                (u64::from(class), prio, ordered_bits(key), j)
            })
            .collect();
        // The running set iterates in the last event's order, so `sorted`
        // comes nearly sorted. Keys end in the job index: the order is unique.
        sort_nearly_sorted(&mut sorted);
        self.running.reorder(sorted.iter().map(|p| p.3));
        let mut waiting = self.queue.merge();
        let mut starved = self.starved.merge();
        let mut next_sorted = 0;
        // The limits below only fall within this loop (see `Floor`).
        let mut floor: Floor<Place> = None;
        // Jobs in planning order as far as it went, and what each gets.
        let mut order: Vec<usize> = Vec::new();
        let mut out: Vec<Option<Alloc>> = Vec::new();
        // Admitted jobs found unable to make their due time (it moves, and their place with it).
        let mut due_moved: Vec<usize> = Vec::new();
        let mut budget: u64 = free.iter().map(|&f| f as u64).sum();
        let mut chosen: Vec<(bool, f64, usize)> = Vec::new();
        // Promoted jobs go first on at most `starved_share` of the GPUs; those
        // the share holds back come after every other job (`deferred`: the
        // running ones; the waiting ones stay in `starved`).
        let starved_cap = (w.cluster.total_gpus() as f64 * cfg.starved_share).ceil() as u64;
        let mut starved_gpus = 0u64;
        let mut deferred: Vec<(Place, usize)> = Vec::new();
        loop {
            let limit = free.iter().copied().max().unwrap_or(0);
            if !hetero && limit == 0 {
                break;
            }
            let share_left = u32::try_from(starved_cap.saturating_sub(starved_gpus)).unwrap_or(u32::MAX);
            let Some(p) = first_in_order(
                sorted.get(next_sorted).copied(),
                &mut next_sorted,
                &mut [
                    (&mut starved, limit.min(share_left)),
                    (&mut waiting, if hetero { u32::MAX } else { limit }),
                ],
                &mut floor,
            ) else {
                break;
            };
            let (p, _) = p;
            let (class, j) = (p.0, p.3);
            order.push(j);
            out.push(None);
            let i = order.len() - 1;
            let job = &w.jobs[j];
            // The type it holds; read only where used (a load of the job's state per job and event).
            let cur = || self.held[j].map(|a| a.0);
            if class == 1 && cfg.elastic && job.elastic {
                let rem = ctx.st[j].remaining(now);
                let restart = if ctx.st[j].started || costs.ef.is_some() {
                    costs.change_cost(job.req)
                } else {
                    0.0
                };
                // Aim to finish with a margin: placement penalties and later restarts eat into the slack.
                let fewest = |due: f64| {
                    let slack = costs.slack(due, now) * (1.0 - costs.derate);
                    deadline::fewest_gpus(job, cur(), rem, slack, restart, &free)
                };
                let mut pick = fewest(self.due[j]);
                // Cannot meet it any more: due later, by how long it still needs.
                if pick.is_none() && !deadline::still_possible(job, rem, self.due[j] - now) {
                    if Some(self.due[j]) == job.deadline {
                        self.turned_late += 1;
                    }
                    self.due[j] = deadline::late_due(job, rem, now, restart, &w.cluster.capacity);
                    due_moved.push(j);
                    pick = fewest(self.due[j]);
                }
                if let Some((t, g)) = pick {
                    free[t as usize] -= g;
                    budget -= g as u64;
                    out[i] = Some((t, g));
                    continue;
                }
            }
            let base = self.consts[j].base;
            if class == 0 && !hetero {
                if starved_gpus + u64::from(base) > starved_cap {
                    deferred.push((p, i));
                    continue;
                }
                out[i] = self.take_base(ctx, j, &mut free);
                if out[i].is_some() {
                    starved_gpus += u64::from(base);
                }
                continue;
            }
            if hetero {
                if base as u64 <= budget {
                    budget -= base as u64;
                    chosen.push((cur().is_none(), -second_type_loss(job, base), i));
                }
            } else {
                out[i] = self.take_base(ctx, j, &mut free);
            }
        }
        drop(waiting);
        // The GPUs left go to the promoted jobs the share held back, in order.
        let mut next_deferred = 0;
        // The starved queue's limit is no longer capped by the share: a new floor.
        let mut deferred_floor: Floor<Place> = None;
        loop {
            let limit = free.iter().copied().max().unwrap_or(0);
            if hetero || limit == 0 {
                break;
            }
            let Some(p) = first_in_order(
                deferred.get(next_deferred).map(|d| d.0),
                &mut next_deferred,
                &mut [(&mut starved, limit)],
                &mut deferred_floor,
            ) else {
                break;
            };
            let i = match p {
                (_, true) => deferred[next_deferred - 1].1,
                (p, false) => {
                    order.push(p.3);
                    out.push(None);
                    order.len() - 1
                }
            };
            out[i] = self.take_base(ctx, order[i], &mut free);
        }
        drop(starved);
        if hetero {
            // Running jobs keep their type first (no restart), then by loss.
            chosen.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
            for &(_, _, i) in &chosen {
                out[i] = self.take_base(ctx, order[i], &mut free);
            }
            // Backfill what per-type fragmentation left, in order.
            for (i, &j) in order.iter().enumerate() {
                if out[i].is_none() {
                    out[i] = self.take_base(ctx, j, &mut free);
                }
            }
        }
        if cfg.elastic {
            self.grow(ctx, &costs, &order, &mut out, &mut free);
        }

        self.settle(ctx, &order, &out, &due_moved, changes);
        // Running jobs the order did not reach (no GPU left) stop.
        for &(_, _, _, j) in &sorted[next_sorted..] {
            changes.push((j, None));
            self.set_held(j, None);
            self.wait(ctx, j, now);
        }
    }

    fn take_rejected(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.rejected)
    }

    /// The next time a waiting job reaches the starvation bound.
    fn wakeup(&self, _ctx: &Ctx<'_>) -> Option<f64> {
        self.starving.first().map(|&(_, j)| self.starve_at[j])
    }
}

#[cfg(test)]
mod tests {
    use super::sort_nearly_sorted;

    #[test]
    fn nearly_sorted_input_sorts_by_insertion_or_falls_back() {
        // A few displaced keys: insertion sort.
        let mut v: Vec<u32> = (0..100).collect();
        v.swap(3, 40);
        v.swap(70, 71);
        let mut want = v.clone();
        want.sort_unstable();
        sort_nearly_sorted(&mut v);
        assert_eq!(v, want);
        // Reversed: past the move budget, the full sort takes over.
        let mut v: Vec<u32> = (0..100).rev().collect();
        sort_nearly_sorted(&mut v);
        assert_eq!(v, (0..100).collect::<Vec<_>>());
        let mut empty: Vec<u32> = Vec::new();
        sort_nearly_sorted(&mut empty);
        assert!(empty.is_empty());
    }
}

//! The planner: ordering, elastic scaling and (through the engine) placement.
//!
//! At every arrival and completion it recomputes every active job's GPU type
//! and count from scratch, on its *belief* of the throughputs:
//! 1. Order. `jct`: starving jobs first (waited longer than the bound), then
//!    shortest predicted remaining GPU-time (a running job's key is scaled by
//!    `keep_factor`, so only a clearly shorter job preempts it). `deadline`:
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
mod queue;

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::policies::pick_type;
use crate::rules::{Admission, EfOverhead, Overhead};
use crate::simulator::{Alloc, Ctx, Policy};

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
    /// A job waiting this long (seconds) is served before all others (`jct`, `deadline`).
    pub starvation_s: f64,
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
            restart_s: 30.0,
            min_gain: None,
            keep_factor: 0.5,
            type_min_ratio: 0.3,
        }
    }
}

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
    /// Per job: believed iterations/s at the requested count on its best type (constant, so cached).
    req_rate: Vec<f64>,
    /// Jobs past the starvation bound; they keep the promotion until they finish.
    promoted: Vec<bool>,
    /// Deadline admission decisions (`None`: not decided yet).
    admitted: Vec<Option<bool>>,
    /// Jobs rejected in the last round (rules that allow rejection only).
    rejected: Vec<usize>,
    /// What changes and rounds cost under the workload's rules.
    costs: Option<deadline::Costs>,
    /// Seconds every round charges each running job (0 without per-round overheads).
    round_base: f64,
    /// When the last round was, and the running mean of the time between rounds.
    last_round: Option<f64>,
    round_interval: f64,
    /// Waiting jobs in order, kept across events.
    queue: queue::WaitQueue,
    /// Each active job's position in `ctx.active` at this event.
    pos: Vec<usize>,
    /// Per job: the fewest GPUs it starts with (constant, so cached).
    base: Vec<u32>,
}

impl Planner {
    pub fn new(cfg: PlannerConfig) -> Planner {
        Planner {
            cfg,
            name: None,
            req_rate: Vec::new(),
            promoted: Vec::new(),
            admitted: Vec::new(),
            rejected: Vec::new(),
            costs: None,
            round_base: 0.0,
            last_round: None,
            round_interval: 0.0,
            queue: queue::WaitQueue::default(),
            pos: Vec::new(),
            base: Vec::new(),
        }
    }

    /// A planner that reports itself as `name`.
    pub fn named(cfg: PlannerConfig, name: &'static str) -> Planner {
        Planner {
            name: Some(name),
            ..Planner::new(cfg)
        }
    }

    /// Predicted remaining GPU-time at the requested count on the job's best type.
    fn remaining_gpu_time(&self, ctx: &Ctx<'_>, j: usize) -> f64 {
        ctx.st[j].remaining(ctx.now) / self.req_rate[j] * ctx.w.jobs[j].req as f64
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

/// A candidate step for the expansion heap.
struct Step {
    score: f64,
    k: usize,
}
impl PartialEq for Step {
    fn eq(&self, o: &Self) -> bool {
        self.score == o.score && self.k == o.k
    }
}
impl Eq for Step {}
impl PartialOrd for Step {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Step {
    fn cmp(&self, o: &Self) -> Ordering {
        self.score.total_cmp(&o.score).then(o.k.cmp(&self.k))
    }
}

impl Policy for Planner {
    fn name(&self) -> String {
        match self.name {
            Some(name) => name.into(),
            None if self.cfg.elastic => format!("plan-{}", self.cfg.objective.name()),
            None => format!("plan-{}-fixed", self.cfg.objective.name()),
        }
    }

    fn allocate(&mut self, ctx: &Ctx<'_>, out: &mut [Option<Alloc>]) {
        let cfg = self.cfg.clone();
        let (w, now) = (ctx.w, ctx.now);
        let n = w.jobs.len();
        if self.promoted.len() != n {
            self.promoted = vec![false; n];
            self.admitted = vec![None; n];
            self.req_rate = w
                .jobs
                .iter()
                .map(|j| j.belief_rate(j.best_type(j.req), j.req))
                .collect();
            self.base = w
                .jobs
                .iter()
                .map(|j| {
                    if j.elastic && cfg.elastic {
                        j.first_count()
                    } else {
                        j.req
                    }
                })
                .collect();
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
        // The share of time per-round charges take: their base over the time
        // between rounds, a running mean (rounds come in bursts and lulls).
        if let Some(prev) = self.last_round {
            self.round_interval = 0.9 * self.round_interval + 0.1 * (now - prev);
        }
        self.last_round = Some(now);
        let costs = deadline::Costs {
            derate: self.round_base / self.round_interval.max(w.rules.round_gap_s).max(1.0),
            ..self.costs.unwrap()
        };
        let obj = cfg.objective;
        if obj != Objective::Makespan {
            for &j in ctx.active {
                let s = &ctx.st[j];
                if s.alloc.is_none() && now - s.waiting_since >= cfg.starvation_s {
                    self.promoted[j] = true;
                }
            }
        }
        self.rejected.clear();
        if obj == Objective::Deadline {
            let refused = deadline::admit_new(ctx, &mut self.admitted, &costs);
            if w.rules.admission == Admission::Reject {
                self.rejected = refused;
            }
        }

        // 1. Order: (class, -priority, key, job), smallest first.
        let mut waiting_queue = std::mem::take(&mut self.queue);
        let mut pos = std::mem::take(&mut self.pos);
        // Starving jobs, admitted deadline jobs, the rest.
        let class_of = |j: usize| -> u8 {
            if self.promoted[j] {
                0
            } else if self.admitted[j] == Some(true) {
                1
            } else {
                2
            }
        };
        let place = |j: usize| -> (u8, i64, f64) {
            let job = &w.jobs[j];
            let s = &ctx.st[j];
            let class = class_of(j);
            let key = match class {
                0 => s.waiting_since,
                1 => job.deadline.unwrap_or(f64::INFINITY),
                _ => {
                    let g = self.remaining_gpu_time(ctx, j);
                    match obj {
                        Objective::Makespan => -g,
                        _ if s.alloc.is_some() => g * cfg.keep_factor,
                        _ => g,
                    }
                }
            };
            (class, -job.priority, key)
        };
        let by_place = |a: &(u8, i64, f64, usize, usize), b: &(u8, i64, f64, usize, usize)| {
            a.0.cmp(&b.0)
                .then(a.1.cmp(&b.1))
                .then(a.2.total_cmp(&b.2))
                .then(a.3.cmp(&b.3))
        };
        let base_of = |j: usize| self.base[j];
        // 2. Base counts. `jct` and `deadline` hand out GPU types in order (the
        // most urgent jobs get the fastest type). `makespan` with several types
        // decides who runs in order against the total, then hands out types by
        // comparative advantage: jobs that lose most on their second-best type
        // choose first (on fixtures/plan: makespan 63.5 h against 65.0 h in
        // order, but average JCT 6.61 h against 6.57 h, hence not for `jct`).
        let hetero = w.cluster.gpu_types.len() > 1 && obj == Objective::Makespan;
        // `makespan` on several types needs every job in order; otherwise the
        // running jobs are sorted and merged with the kept queue of waiting
        // ones, stopping once no GPU is left.
        let mut sorted: Vec<(u8, i64, f64, usize, usize)> = Vec::new();
        pos.resize(n, 0);
        // GPUs every active job would take at its base count (or what it holds).
        let mut demand: u64 = 0;
        for (k, &j) in ctx.active.iter().enumerate() {
            pos[j] = k;
            demand += base_of(j).max(ctx.st[j].alloc.map_or(0, |a| a.1)) as u64;
            let rejected = self.rejected.contains(&j);
            if ctx.st[j].alloc.is_none() && !hetero {
                if rejected {
                    waiting_queue.set(j, None);
                    continue;
                }
                // A waiting job's place changes only with its class.
                if waiting_queue.class_of(j) == Some(class_of(j)) {
                    continue;
                }
                let (class, prio, key) = place(j);
                waiting_queue.set(j, Some((base_of(j), (class, prio, queue::ordered_bits(key), j))));
            } else {
                waiting_queue.set(j, None);
                if !rejected {
                    let (class, prio, key) = place(j);
                    sorted.push((class, prio, key, j, k));
                }
            }
        }
        self.pos = pos;
        // When every job gets its base count and keeps what it holds anyway,
        // the order changes nothing (growth goes by marginal gain): no sort.
        let all_fit = w.cluster.gpu_types.len() == 1 && obj != Objective::Deadline && demand <= w.cluster.total_gpus();
        if !all_fit {
            // Keys end in the job index, so an unstable sort is deterministic.
            sorted.sort_unstable_by(by_place);
        }
        let mut waiting = waiting_queue.merge();
        let mut next_sorted = 0;
        let mut order: Vec<(u8, i64, f64, usize, usize)> = Vec::new();
        let mut free = w.cluster.capacity.clone();
        let mut budget: u64 = free.iter().map(|&f| f as u64).sum();
        let mut chosen: Vec<(bool, f64, usize, usize, u32)> = Vec::new();
        loop {
            let limit = free.iter().copied().max().unwrap_or(0);
            if !hetero && limit == 0 {
                break;
            }
            let head = sorted.get(next_sorted).copied();
            let entry = match (head, waiting.peek(limit)) {
                (Some(r), Some((i, p))) if (p.0, p.1, p.2, p.3) < (r.0, r.1, queue::ordered_bits(r.2), r.3) => {
                    waiting.advance(i);
                    (p.0, p.1, f64::NAN, p.3, self.pos[p.3])
                }
                (Some(r), _) => {
                    next_sorted += 1;
                    r
                }
                (None, Some((i, p))) => {
                    waiting.advance(i);
                    (p.0, p.1, f64::NAN, p.3, self.pos[p.3])
                }
                (None, None) => break,
            };
            order.push(entry);
            let (pos, (class, _, _, j, k)) = (order.len() - 1, entry);
            let job = &w.jobs[j];
            let cur = ctx.st[j].alloc.map(|a| a.0);
            if class == 1 && cfg.elastic && job.elastic {
                let rem = ctx.st[j].remaining(now);
                let restart = if ctx.st[j].started || costs.ef.is_some() {
                    costs.change_cost(job.req)
                } else {
                    0.0
                };
                // Aim to finish with a margin: placement penalties and later restarts eat into the slack.
                let slack = costs.slack(job.deadline.unwrap(), now) * (1.0 - costs.derate);
                match deadline::fewest_gpus(job, cur, rem, slack, restart, &free) {
                    Some((t, g)) => {
                        free[t as usize] -= g;
                        budget -= g as u64;
                        out[k] = Some((t, g));
                        continue;
                    }
                    // Cannot meet it any more: best effort from now on.
                    None if !deadline::still_possible(job, rem, job.deadline.unwrap() - now) => {
                        self.admitted[j] = Some(false)
                    }
                    None => {}
                }
            }
            let base = self.base[j];
            if hetero {
                if base as u64 <= budget {
                    budget -= base as u64;
                    chosen.push((cur.is_none(), -second_type_loss(job, base), pos, k, base));
                }
            } else if let Some(t) = pick_type(job, cur, base, &free, cfg.type_min_ratio) {
                free[t as usize] -= base;
                out[k] = Some((t, base));
            }
        }
        drop(waiting);
        self.queue = waiting_queue;
        // Jobs starting now leave the queue (one may be done before the next
        // event); only jobs the loop above reached got GPUs.
        for &(_, _, _, j, k) in &order {
            if out[k].is_some() {
                self.queue.set(j, None);
            }
        }
        if hetero {
            // Running jobs keep their type first (no restart), then by loss.
            chosen.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
            for &(_, _, _, k, base) in &chosen {
                let j = ctx.active[k];
                if let Some(t) = pick_type(
                    &w.jobs[j],
                    ctx.st[j].alloc.map(|a| a.0),
                    base,
                    &free,
                    cfg.type_min_ratio,
                ) {
                    free[t as usize] -= base;
                    out[k] = Some((t, base));
                }
            }
            // Backfill what per-type fragmentation left, in order.
            for &(_, _, _, j, k) in &order {
                let job = &w.jobs[j];
                let base = self.base[j];
                if out[k].is_none()
                    && let Some(t) = pick_type(job, ctx.st[j].alloc.map(|a| a.0), base, &free, cfg.type_min_ratio)
                {
                    free[t as usize] -= base;
                    out[k] = Some((t, base));
                }
            }
        }
        if !cfg.elastic {
            return;
        }

        // 3a. Running elastic jobs keep what they hold, in order, as far as GPUs remain.
        for &(_, _, _, j, k) in &order {
            if let (Some((t, g)), Some((ct, cg))) = (out[k], ctx.st[j].alloc)
                && w.jobs[j].elastic
                && t == ct
                && cg > g
            {
                let mut to = g + (cg - g).min(free[t as usize]);
                if let Some(c) = &w.jobs[j].belief[t as usize] {
                    to = c.floor_count(to).max(g);
                }
                free[t as usize] -= to - g;
                out[k] = Some((t, to));
            }
        }
        // 3b. Expansion by marginal throughput per GPU.
        let free_placement = !w.rules.placement_penalty;
        let min_gain = cfg.min_gain.unwrap_or(if obj == Objective::Deadline && free_placement {
            0.0
        } else {
            0.1
        });
        let step = |k: usize, cur: Alloc, free: &[u32]| -> Option<(f64, u32)> {
            let j = ctx.active[k];
            let job = &w.jobs[j];
            let (t, g) = cur;
            let curve = job.belief[t as usize].as_ref()?;
            let mut next = curve.next_hull(g)?;
            if next > g + free[t as usize] {
                // Interpolating: as far as the free GPUs go; measured counts only: not at all.
                if curve.discrete {
                    return None;
                }
                next = g + free[t as usize];
            }
            if next <= g {
                return None;
            }
            let (r0, r1) = (curve.r(g), curve.r(next));
            let eff = (r1 - r0) / (next - g) as f64 / curve.r(1);
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
        let mut heap = BinaryHeap::new();
        for &(_, _, _, j, k) in &order {
            if let Some(a) = out[k].filter(|_| w.jobs[j].elastic)
                && let Some((score, _)) = step(k, a, &free)
            {
                heap.push(Step { score, k });
            }
        }
        while let Some(Step { k, .. }) = heap.pop() {
            let cur = out[k].unwrap();
            // Free GPUs may have shrunk since the score was computed: recompute.
            let Some((_, next)) = step(k, cur, &free) else {
                continue;
            };
            free[cur.0 as usize] -= next - cur.1;
            out[k] = Some((cur.0, next));
            if let Some((score, _)) = step(k, (cur.0, next), &free) {
                heap.push(Step { score, k });
            }
        }
    }

    fn take_rejected(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.rejected)
    }

    /// The next time a waiting job reaches the starvation bound.
    fn wakeup(&self, ctx: &Ctx<'_>) -> Option<f64> {
        if self.cfg.objective == Objective::Makespan || self.promoted.is_empty() {
            return None;
        }
        ctx.active
            .iter()
            .filter(|&&j| ctx.st[j].alloc.is_none() && !self.promoted[j])
            .map(|&j| ctx.st[j].waiting_since + self.cfg.starvation_s)
            .min_by(f64::total_cmp)
    }
}

//! Gandiva (OSDI'18) as ElasticFlow's simulator implements it
//! (`gandiva_sim_jobs`, scheduler.py:1089-1220, and `gandiva_placement`,
//! `gandiva_node_set_*`, `time_slicing_execute`, cluster.py:182-495, of the
//! copy in ../shared/peers/elasticflow).
//!
//! Jobs run at their requested counts inside *node sets*: groups of whole
//! nodes reserved for one size class (the count rounded up to a power of
//! two). A set of `nodes` nodes holds `nodes x GPUs per node / class` jobs at
//! once; more jobs placed on it wait their turn (time-slicing), the first ones
//! in its list running. What ElasticFlow does, kept as it does it:
//! - A new job goes to the class's least-loaded set if its load plus one is
//!   below the set's capacity, else to a new set if enough nodes are free,
//!   else onto the least-loaded set anyway; with no set of its class and no
//!   free nodes it waits in a queue. A set's load counts the jobs placed on
//!   it, and is not lowered when they finish: only re-balancing resets it.
//! - After each round, each class is given GPUs in proportion to its jobs'
//!   GPU demand: sets are added (and all the class's jobs re-balanced over
//!   them, in ElasticFlow's loop-variable condition) or taken away (their
//!   jobs moved to the least-loaded remaining set).
//! - A set whose jobs have all finished gives its nodes back; then the queue
//!   is tried once, in order, skipping the job after each one that is placed
//!   (ElasticFlow removes from the list it iterates).
//! - The jobs running in a set rotate to the end of its list only at rounds
//!   whose time is a multiple of 60 s (`int(time % 60) == 0`): with rounds
//!   60 s apart from an arrival's time, rarely.
//! - Rounds happen at arrivals (at least 60 s apart under ElasticFlow's
//!   rules), and every 60 s once every job has arrived; a completion between
//!   rounds frees its GPUs but nobody takes them before the next round.
//!
//! ElasticFlow charges its Gandiva's running jobs the whole overhead formula
//! every round while jobs are still to arrive, and nothing after the last
//! arrival ([`EfCharge::EveryRoundWhileArriving`], recorded in the schedule
//! so that `verify` replays it).

use crate::rules::EfCharge;
use crate::simulator::{Changes, Ctx, Policy};

/// ElasticFlow's `--scheduling_slot`: the rotation period and the round
/// period once every job has arrived.
pub const SLOT_S: f64 = 60.0;

#[derive(Clone, Debug)]
struct NodeSet {
    nodes: u32,
    /// Jobs it runs at once.
    capacity: u32,
    /// Jobs placed on it since its last re-balance (finished ones included).
    load: u32,
    jobs: Vec<usize>,
}

impl NodeSet {
    fn new(nodes: u32, gpus_per_node: u32, class: u32) -> NodeSet {
        NodeSet {
            nodes,
            capacity: nodes * gpus_per_node / class,
            load: 0,
            jobs: Vec::new(),
        }
    }

    /// How many of its jobs run now.
    fn running(&self) -> usize {
        self.jobs.len().min(self.capacity as usize)
    }
}

/// One GPU type's nodes and sets.
#[derive(Clone, Debug)]
struct Pool {
    gpus_per_node: u32,
    nodes: u32,
    free_nodes: u32,
    /// Size classes (ascending) and their sets, least-loaded first.
    classes: Vec<(u32, Vec<NodeSet>)>,
}

impl Pool {
    fn new(gpus: u32, gpus_per_node: u32) -> Pool {
        let gpus_per_node = gpus_per_node.max(1);
        Pool {
            gpus_per_node,
            nodes: gpus / gpus_per_node,
            free_nodes: gpus / gpus_per_node,
            classes: Vec::new(),
        }
    }

    fn nodes_for(&self, class: u32) -> u32 {
        class.div_ceil(self.gpus_per_node)
    }

    fn sets(&mut self, class: u32) -> &mut Vec<NodeSet> {
        let at = match self.classes.binary_search_by_key(&class, |c| c.0) {
            Ok(at) => at,
            Err(at) => {
                self.classes.insert(at, (class, Vec::new()));
                at
            }
        };
        &mut self.classes[at].1
    }

    /// `gandiva_placement`: false when the job has to wait in the queue.
    fn place(&mut self, job: usize, class: u32) -> bool {
        let need = self.nodes_for(class);
        let free = self.free_nodes;
        let gpus_per_node = self.gpus_per_node;
        let sets = self.sets(class);
        if !sets.is_empty() {
            let set = sets.remove(0);
            if set.load + 1 < set.capacity {
                join_at_end(sets, set, job);
                return true;
            }
            // Back at the end, unsorted, as ElasticFlow leaves it.
            sets.push(set);
        }
        if need <= free {
            join_at_end(sets, NodeSet::new(need, gpus_per_node, class), job);
            self.free_nodes -= need;
            return true;
        }
        if sets.is_empty() {
            return false;
        }
        // Time-slicing on the least-loaded set.
        let set = sets.remove(0);
        join_at_end(sets, set, job);
        true
    }

    /// `gandiva_node_set_adjust`: GPUs to each class by its share of the demand.
    fn adjust(&mut self) {
        let gpus_per_node = self.gpus_per_node;
        let demand: Vec<u64> = self
            .classes
            .iter()
            .map(|(c, sets)| sets.iter().map(|s| s.jobs.len() as u64).sum::<u64>() * u64::from(*c))
            .collect();
        let occupied: Vec<i64> = self
            .classes
            .iter()
            .map(|(_, sets)| sets.iter().map(|s| i64::from(s.nodes * gpus_per_node)).sum())
            .collect();
        let total: u64 = demand.iter().sum();
        if total == 0 {
            return;
        }
        let gpus = u64::from(self.nodes * gpus_per_node);
        for k in 0..self.classes.len() {
            if demand[k] == 0 {
                continue;
            }
            let class = self.classes[k].0;
            let plan = (demand[k] as f64 / total as f64 * gpus as f64).floor() as u64;
            let target = plan.min(demand[k]) as i64;
            let diff = target - occupied[k];
            if diff > 0 {
                self.expand(k, (diff as u64).div_ceil(u64::from(class)) as u32);
            } else if diff < 0 {
                self.shrink(k, ((-diff) as u64).div_ceil(u64::from(class)) as u32);
            }
        }
    }

    /// `gandiva_node_set_expand`. ElasticFlow re-balances after its loop only
    /// when its loop variable ends above 0; a set's inner loop over nodes
    /// reuses that variable, leaving it at (nodes per set - 1).
    fn expand(&mut self, k: usize, count: u32) {
        let class = self.classes[k].0;
        let need = self.nodes_for(class);
        let mut loop_var = 0;
        for i in 1..=count {
            loop_var = i;
            if need <= self.free_nodes {
                self.free_nodes -= need;
                self.classes[k].1.push(NodeSet::new(need, self.gpus_per_node, class));
                loop_var = need - 1;
            }
        }
        if loop_var > 0 {
            let sets = &mut self.classes[k].1;
            let jobs: Vec<usize> = sets.iter_mut().flat_map(|s| std::mem::take(&mut s.jobs)).collect();
            for s in sets.iter_mut() {
                s.load = 0;
            }
            spread(sets, &jobs);
        }
    }

    /// `gandiva_node_set_shrink`: the least-loaded sets go (all but one at
    /// most), their jobs onto the least-loaded set left.
    fn shrink(&mut self, k: usize, count: u32) {
        let sets = &mut self.classes[k].1;
        let count = if sets.len() as u32 <= count {
            (sets.len() as u32).saturating_sub(1)
        } else {
            count
        };
        let mut moved = Vec::new();
        for _ in 0..count {
            let set = sets.remove(0);
            moved.extend(set.jobs);
            self.free_nodes += set.nodes;
        }
        spread(sets, &moved);
    }
}

/// Least-loaded first; a stable sort, as Python's.
fn by_load(sets: &mut [NodeSet]) {
    sets.sort_by_key(|s| s.load);
}

/// `job` onto `set`, which goes back at the end of `sets` before they are
/// sorted (ElasticFlow pops a set, appends it and sorts).
fn join_at_end(sets: &mut Vec<NodeSet>, mut set: NodeSet, job: usize) {
    set.load += 1;
    set.jobs.push(job);
    sets.push(set);
    by_load(sets);
}

/// Each job onto the least-loaded set, one at a time (in place, as
/// ElasticFlow re-balances).
fn spread(sets: &mut [NodeSet], jobs: &[usize]) {
    if sets.is_empty() {
        return;
    }
    for &j in jobs {
        sets[0].load += 1;
        sets[0].jobs.push(j);
        by_load(sets);
    }
}

/// A job's size class: its count rounded up to a power of two.
fn class_of(gpus: u32) -> u32 {
    gpus.max(1).next_power_of_two()
}

#[derive(Default)]
pub struct Gandiva {
    pools: Vec<Pool>,
    /// Per job: the GPU type it runs on (fixed at arrival).
    ty: Vec<Option<u16>>,
    /// Jobs no set could take, in arrival order.
    queue: Vec<usize>,
    last_submit: f64,
}

impl Gandiva {
    /// Nodes of a GPU type are taken as all of its largest size (ElasticFlow's
    /// clusters have one node size).
    fn init(&mut self, ctx: &Ctx<'_>) {
        let c = &ctx.w.cluster;
        self.pools = (0..c.gpu_types.len())
            .map(|t| Pool::new(c.capacity[t], c.max_node_gpus[t]))
            .collect();
        self.ty = vec![None; ctx.w.jobs.len()];
        self.last_submit = ctx.w.jobs.iter().map(|j| j.submit).fold(f64::NEG_INFINITY, f64::max);
    }

    fn place(&mut self, ctx: &Ctx<'_>, j: usize) -> bool {
        let job = &ctx.w.jobs[j];
        let ty = match self.ty[j] {
            Some(t) => t,
            None => {
                let all = &ctx.w.cluster.capacity;
                match super::pick_type(job, None, job.req, all, 0.0) {
                    Some(t) => *self.ty[j].insert(t),
                    // No type can run it: it waits, and the engine reports it.
                    None => return false,
                }
            }
        };
        self.pools[ty as usize].place(j, class_of(job.req))
    }
}

impl Policy for Gandiva {
    fn name(&self) -> String {
        "gandiva".into()
    }

    fn decide(&mut self, ctx: &Ctx<'_>, changes: &mut Changes) {
        if self.ty.len() != ctx.w.jobs.len() {
            self.init(ctx);
        }
        let (st, now) = (ctx.st, ctx.now);
        // `time_slicing_execute`: rotate (at multiples of the slot; the list
        // still holds the jobs that just finished), drop finished jobs, give
        // back the nodes of empty sets.
        // ElasticFlow tests `int(cur_time % 60) == 0`.
        let rotate = now.rem_euclid(SLOT_S) < 1.0;
        let mut released = false;
        for pool in &mut self.pools {
            let mut freed = 0;
            for (_, sets) in &mut pool.classes {
                for set in sets.iter_mut() {
                    let running = set.running();
                    if rotate && set.jobs.len() > running {
                        set.jobs.rotate_left(running);
                    }
                    set.jobs.retain(|&j| st[j].done.is_none());
                }
                sets.retain(|s| {
                    let keep = !s.jobs.is_empty();
                    if !keep {
                        freed += s.nodes;
                    }
                    keep
                });
            }
            pool.free_nodes += freed;
            released |= freed > 0;
        }
        for &j in ctx.arrived {
            if !self.place(ctx, j) {
                self.queue.push(j);
            }
        }
        if released {
            let mut at = 0;
            while at < self.queue.len() {
                let j = self.queue[at];
                at += 1;
                if self.place(ctx, j) {
                    // ElasticFlow removes from the list it iterates: the next job is skipped.
                    self.queue.remove(at - 1);
                }
            }
        }
        // ElasticFlow adjusts at the top of its next round, before it credits
        // this interval's progress: the same state as here.
        for pool in &mut self.pools {
            pool.adjust();
        }
        // The first `running` jobs of each set hold GPUs; a job changes once.
        for (t, pool) in self.pools.iter().enumerate() {
            for set in pool.classes.iter().flat_map(|(_, sets)| sets) {
                let running = set.running();
                for (k, &j) in set.jobs.iter().enumerate() {
                    let alloc = (k < running).then_some((t as u16, ctx.w.jobs[j].req));
                    if st[j].alloc != alloc {
                        changes.push((j, alloc));
                    }
                }
            }
        }
    }

    /// Every slot once the last job has arrived (rounds before come with arrivals).
    fn wakeup(&self, ctx: &Ctx<'_>) -> Option<f64> {
        (ctx.now >= self.last_submit && !ctx.active.is_empty()).then_some(ctx.now + SLOT_S)
    }

    fn decides_at_completions(&self) -> bool {
        false
    }

    fn ef_charge(&self) -> EfCharge {
        EfCharge::EveryRoundWhileArriving
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loads(p: &mut Pool, class: u32) -> Vec<(u32, Vec<usize>)> {
        p.sets(class).iter().map(|s| (s.load, s.jobs.clone())).collect()
    }

    #[test]
    fn placement_fills_then_opens_then_time_slices() {
        // Two nodes of 8 GPUs; one-GPU jobs: a set holds 8 at once, but takes a
        // new job only while its load plus one is below 8 (7 jobs).
        let mut p = Pool::new(16, 8);
        for j in 0..7 {
            assert!(p.place(j, 1));
        }
        assert_eq!(p.free_nodes, 1);
        assert_eq!(loads(&mut p, 1), vec![(7, (0..7).collect())]);
        // The eighth opens the second node's set.
        assert!(p.place(7, 1));
        assert_eq!(p.free_nodes, 0);
        assert_eq!(loads(&mut p, 1)[0], (1, vec![7]));
        // Eight-GPU jobs: no set of their class and no free node: they wait.
        assert!(!p.place(8, 8));
        // One-GPU jobs keep coming: the second set fills to 7, then both time-slice.
        for j in 9..21 {
            assert!(p.place(j, 1));
        }
        let sets = p.sets(1).clone();
        assert_eq!(sets.iter().map(|s| s.jobs.len()).sum::<usize>(), 20);
        assert!(sets.iter().all(|s| s.running() <= 8));
        assert!(sets.iter().any(|s| s.jobs.len() > 8), "{sets:?}");
    }

    #[test]
    fn adjust_gives_each_class_its_share_of_the_demand() {
        // Four nodes; one 1-GPU set holding 20 jobs and one 8-GPU set with one
        // job: demand 20 and 8 of 28 GPUs. The 1-GPU class is planned
        // floor(20/28 x 32) = 22 GPUs, capped at its demand (20): 12 more than
        // its node, so 12 sets are asked for and the two free nodes make two.
        // The loop variable ends at 12 (the last try found no node), so the 20
        // jobs are re-balanced over the three sets.
        let mut p = Pool::new(32, 8);
        let mut one = NodeSet::new(1, 8, 1);
        one.jobs = (0..20).collect();
        one.load = 20;
        let mut eight = NodeSet::new(1, 8, 8);
        eight.jobs = vec![20];
        eight.load = 1;
        p.sets(1).push(one);
        p.sets(8).push(eight);
        p.free_nodes = 2;
        p.adjust();
        assert_eq!(p.free_nodes, 0);
        let sizes: Vec<usize> = p.sets(1).iter().map(|s| s.jobs.len()).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 20);
        assert_eq!(sizes.len(), 3);
        assert!(sizes.iter().all(|&n| (6..=7).contains(&n)), "{sizes:?}");
        // The 8-GPU class's plan is floor(8/28 x 32) = 9 GPUs against its 8: it keeps one set.
        assert_eq!(p.sets(8).len(), 1);
    }

    #[test]
    fn shrink_keeps_one_set_and_moves_the_jobs() {
        let mut p = Pool::new(24, 8);
        for load in [1, 2, 3] {
            let mut s = NodeSet::new(1, 8, 1);
            s.jobs = (0..load as usize).map(|k| 10 * load as usize + k).collect();
            s.load = load;
            p.sets(1).push(s);
        }
        p.free_nodes = 0;
        p.shrink(0, 5);
        assert_eq!(p.free_nodes, 2);
        let sets = p.sets(1).clone();
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0].jobs.len(), 6);
    }

    #[test]
    fn classes_are_powers_of_two() {
        assert_eq!(class_of(1), 1);
        assert_eq!(class_of(3), 4);
        assert_eq!(class_of(8), 8);
        assert_eq!(class_of(12), 16);
    }
}

//! Placement: which nodes a job's GPUs come from. A job goes on one node when
//! one has room (best fit), else on as few nodes as possible under one
//! switch, else across switches; its throughput then pays the documented
//! penalty (once for more nodes, once for more switches than its count
//! needs), unless the table gives a figure for that many nodes.

use crate::cluster::{Cluster, Node};
use crate::index_set::IndexSet;
use crate::throughput::Curve;
use crate::workload::Penalty;

/// (node id, GPUs on it).
pub type Placement = Vec<(u32, u32)>;

/// Nodes grouped by GPU type or by switch, each numbered within its group
/// in the order of its id, so that a group's sets hold small indices and
/// their order is the nodes' order.
struct Groups {
    /// Per group, its nodes' ids (ascending).
    nodes: Vec<Vec<u32>>,
    /// Per node, its index within its group.
    local: Vec<u32>,
    /// Per group, per free-GPU count: the group's nodes with exactly that many free.
    by_free: Vec<Vec<IndexSet>>,
}

impl Groups {
    /// `group` gives each node's group; nodes start with all their GPUs free.
    fn new(c: &Cluster, groups: usize, group: impl Fn(&Node) -> usize) -> Groups {
        let mut nodes = vec![Vec::new(); groups];
        let mut local = vec![0; c.nodes.len()];
        let mut most = vec![0u32; groups];
        for n in &c.nodes {
            let g = group(n);
            local[n.id as usize] = nodes[g].len() as u32;
            nodes[g].push(n.id);
            most[g] = most[g].max(n.gpus);
        }
        let mut by_free: Vec<Vec<IndexSet>> = nodes
            .iter()
            .zip(&most)
            .map(|(members, &m)| vec![IndexSet::new(members.len()); m as usize + 1])
            .collect();
        for n in &c.nodes {
            by_free[group(n)][n.gpus as usize].insert(local[n.id as usize]);
        }
        Groups { nodes, local, by_free }
    }

    /// Node `node` of group `g` goes from `old` free GPUs to `free`.
    fn moved(&mut self, g: usize, node: u32, old: u32, free: u32) {
        let i = self.local[node as usize];
        self.by_free[g][old as usize].remove(i);
        self.by_free[g][free as usize].insert(i);
    }

    /// Group `g`'s nodes with exactly `free` GPUs free, by id.
    fn with_free(&self, g: usize, free: usize) -> impl Iterator<Item = u32> + '_ {
        let members = &self.nodes[g];
        self.by_free[g][free].iter().map(move |i| members[i as usize])
    }
}

pub struct Placer {
    free: Vec<u32>,
    /// Nodes by GPU type and free-GPU count.
    types: Groups,
    /// Free GPUs per switch.
    switch_free: Vec<u32>,
    /// Nodes by switch and free-GPU count (walked from the emptiest down,
    /// so a spread placement needs no sort).
    switches: Groups,
    /// Switches of each GPU type.
    type_switches: Vec<Vec<u32>>,
    node_type: Vec<u16>,
    node_switch: Vec<u32>,
}

impl Placer {
    pub fn new(c: &Cluster) -> Placer {
        let nsw = c.nodes.iter().map(|n| n.switch + 1).max().unwrap_or(0) as usize;
        let mut switch_free = vec![0; nsw];
        let mut type_switches = vec![Vec::new(); c.gpu_types.len()];
        for n in &c.nodes {
            switch_free[n.switch as usize] += n.gpus;
            let ts: &mut Vec<u32> = &mut type_switches[n.gpu_type as usize];
            if !ts.contains(&n.switch) {
                ts.push(n.switch);
            }
        }
        Placer {
            free: c.nodes.iter().map(|n| n.gpus).collect(),
            types: Groups::new(c, c.gpu_types.len(), |n| n.gpu_type as usize),
            switch_free,
            switches: Groups::new(c, nsw, |n| n.switch as usize),
            type_switches,
            node_type: c.nodes.iter().map(|n| n.gpu_type).collect(),
            node_switch: c.nodes.iter().map(|n| n.switch).collect(),
        }
    }

    /// Node `node` now has `free` GPUs free.
    fn set_free(&mut self, node: u32, free: u32) {
        let (x, ty, sw) = (
            node as usize,
            self.node_type[node as usize] as usize,
            self.node_switch[node as usize] as usize,
        );
        let old = std::mem::replace(&mut self.free[x], free);
        self.types.moved(ty, node, old, free);
        self.switches.moved(sw, node, old, free);
        self.switch_free[sw] = self.switch_free[sw] + free - old;
    }

    fn take(&mut self, node: u32, k: u32) {
        self.set_free(node, self.free[node as usize] - k);
    }

    pub fn release(&mut self, p: &[(u32, u32)]) {
        for &(node, k) in p {
            self.set_free(node, self.free[node as usize] + k);
        }
    }

    /// A switch's nodes with GPUs free, the emptiest first, then by id.
    fn emptiest_first(&self, s: u32) -> impl Iterator<Item = u32> + '_ {
        let most = self.switches.by_free[s as usize].len();
        (1..most)
            .rev()
            .flat_map(move |free| self.switches.with_free(s as usize, free))
    }

    /// Take `n` GPUs of type `ty`; `None` when the type has fewer free.
    pub fn place(&mut self, ty: u16, n: u32) -> Option<Placement> {
        let t = ty as usize;
        // One node: the fullest node that still fits (best fit keeps big holes for big jobs).
        let fits = self.types.by_free[t].iter().skip(n as usize).find_map(IndexSet::first);
        if let Some(node) = fits.map(|i| self.types.nodes[t][i as usize]) {
            self.take(node, n);
            return Some(vec![(node, n)]);
        }
        // One switch: the tightest switch that fits, its emptiest nodes first.
        let sw = self.type_switches[t]
            .iter()
            .copied()
            .filter(|&s| self.switch_free[s as usize] >= n)
            .min_by_key(|&s| self.switch_free[s as usize]);
        let switches: Vec<u32> = match sw {
            Some(s) => vec![s],
            None => {
                let total: u32 = self.type_switches[t]
                    .iter()
                    .map(|&s| self.switch_free[s as usize])
                    .sum();
                if total < n {
                    return None;
                }
                // Across switches: the emptiest switches first, each's emptiest nodes first.
                let mut sws = self.type_switches[t].clone();
                sws.sort_unstable_by_key(|&s| (std::cmp::Reverse(self.switch_free[s as usize]), s));
                sws
            }
        };
        let nodes = switches.into_iter().flat_map(|s| self.emptiest_first(s));
        let mut left = n;
        let mut out = Vec::new();
        for x in nodes {
            if left == 0 {
                break;
            }
            let k = self.free[x as usize].min(left);
            out.push((x, k));
            left -= k;
        }
        for &(x, k) in &out {
            self.take(x, k);
        }
        Some(out)
    }
}

/// Nodes and switches a placement spans.
pub fn spread(c: &Cluster, p: &[(u32, u32)]) -> (u32, u32) {
    let mut sws: Vec<u32> = p.iter().map(|&(x, _)| c.nodes[x as usize].switch).collect();
    sws.sort_unstable();
    sws.dedup();
    (p.len() as u32, sws.len() as u32)
}

/// Throughput of `n` GPUs of type `ty` at a placement (node penalty / cross-node figure applied),
/// and whether the figure was interpolated.
pub fn placed_rate(c: &Cluster, ty: u16, curve: &Curve, n: u32, p: &[(u32, u32)], penalty: Penalty) -> (f64, bool) {
    let (rate, interp) = curve.rate(n);
    let (nodes, switches) = spread(c, p);
    let min_nodes = n.div_ceil(c.max_node_gpus[ty as usize].max(1));
    if nodes <= min_nodes {
        return (rate, interp);
    }
    if let Some(r) = curve.cross_rate(n, nodes) {
        return (r, curve.batch_interpolated);
    }
    // Ring all-reduce runs at the pace of its slowest link, so the penalty is
    // paid once for crossing more nodes than needed and once more for crossing
    // more switches than needed, however many there are.
    let min_switches = min_nodes.div_ceil(c.nodes_per_switch[ty as usize].max(1));
    let switch = if switches > min_switches { penalty.switch } else { 1.0 };
    (rate * penalty.node * switch, interp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::NodeGroup;

    fn cluster() -> Cluster {
        Cluster::from_groups(
            "t",
            vec![NodeGroup {
                name: "a".into(),
                gpu_type: "A100".into(),
                nodes: 4,
                gpus_per_node: 8,
                nodes_per_switch: Some(2),
            }],
        )
        .unwrap()
    }

    #[test]
    fn best_fit_then_one_switch() {
        let c = cluster();
        let mut p = Placer::new(&c);
        assert_eq!(p.place(0, 6), Some(vec![(0, 6)]));
        // 2 GPUs: best fit is node 0 (2 free), not an empty node.
        assert_eq!(p.place(0, 2), Some(vec![(0, 2)]));
        // 16 GPUs: no node fits; switch 0 has 8 free, switch 1 has 16: two whole nodes there.
        assert_eq!(p.place(0, 16), Some(vec![(2, 8), (3, 8)]));
        assert_eq!(p.place(0, 9), None);
        p.release(&[(2, 8)]);
        // No switch has 16 free any more: whole nodes across switches.
        assert_eq!(p.place(0, 16), Some(vec![(1, 8), (2, 8)]));
    }

    #[test]
    fn a_spread_job_takes_the_emptiest_nodes_first() {
        let c = Cluster::from_groups(
            "t",
            vec![NodeGroup {
                name: "a".into(),
                gpu_type: "A100".into(),
                nodes: 3,
                gpus_per_node: 8,
                nodes_per_switch: None,
            }],
        )
        .unwrap();
        let mut p = Placer::new(&c);
        assert_eq!(p.place(0, 5), Some(vec![(0, 5)]));
        assert_eq!(p.place(0, 6), Some(vec![(1, 6)]));
        // Free: 3, 2, 8. The emptiest first, then by id; node 1 gives what is left.
        assert_eq!(p.place(0, 12), Some(vec![(2, 8), (0, 3), (1, 1)]));
        p.release(&[(0, 3), (2, 8)]);
        // Free: 3, 1, 8; nodes 0 and 2 tie at 3 after this take: id order.
        assert_eq!(p.place(0, 5), Some(vec![(2, 5)]));
        assert_eq!(p.place(0, 6), Some(vec![(0, 3), (2, 3)]));
    }

    #[test]
    fn spread_penalty_applies_beyond_fewest_nodes() {
        let c = cluster();
        let curve = Curve::new(vec![(1, 10.0), (8, 60.0), (16, 100.0)], vec![(8, 2, 50.0)], false).unwrap();
        let pen = Penalty { node: 0.9, switch: 0.8 };
        assert_eq!(placed_rate(&c, 0, &curve, 8, &[(0, 8)], pen).0, 60.0);
        // The table's own two-node figure wins over the penalty.
        assert_eq!(placed_rate(&c, 0, &curve, 8, &[(0, 4), (1, 4)], pen).0, 50.0);
        // 16 GPUs need 2 nodes under one switch; 3 nodes over 2 switches pay both factors once.
        let r = placed_rate(&c, 0, &curve, 16, &[(0, 8), (1, 4), (2, 4)], pen).0;
        assert!((r - 100.0 * 0.9 * 0.8).abs() < 1e-9);
        let r = placed_rate(&c, 0, &curve, 16, &[(0, 4), (1, 4), (2, 4), (3, 4)], pen).0;
        assert!((r - 100.0 * 0.9 * 0.8).abs() < 1e-9);
        // Two nodes of one switch, no table figure for it: only the node factor.
        let r = placed_rate(&c, 0, &curve, 4, &[(2, 2), (3, 2)], pen).0;
        assert!((r - curve.r(4) * 0.9).abs() < 1e-9);
    }
}

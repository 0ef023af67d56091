//! Cluster shapes: tracecast's TOML spec (node groups, possibly of several GPU
//! types) and ElasticFlow's `cluster_specs` CSVs (one GPU type).

use std::path::Path;

use serde::Deserialize;
use tracecast_schemas::plan::CLUSTER_TOML_VERSION;

use crate::error::{PlanError, Result};
use crate::table::Rows;

/// A group of identical nodes.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NodeGroup {
    pub name: String,
    pub gpu_type: String,
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// Nodes under one switch (default: all nodes of the group).
    pub nodes_per_switch: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub id: u32,
    pub name: String,
    /// Index into [`Cluster::gpu_types`].
    pub gpu_type: u16,
    pub gpus: u32,
    /// Global switch index.
    pub switch: u32,
}

#[derive(Clone, Debug)]
pub struct Cluster {
    pub name: String,
    pub groups: Vec<NodeGroup>,
    pub gpu_types: Vec<String>,
    pub nodes: Vec<Node>,
    /// GPUs per type.
    pub capacity: Vec<u32>,
    /// Largest node of each type, for the "most compact placement" of a count.
    pub max_node_gpus: Vec<u32>,
    /// Nodes per switch of each type (the smallest of its groups).
    pub nodes_per_switch: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlSpec {
    version: Option<u32>,
    name: Option<String>,
    #[serde(rename = "group")]
    groups: Vec<NodeGroup>,
}

impl Cluster {
    pub fn from_groups(name: &str, groups: Vec<NodeGroup>) -> std::result::Result<Cluster, String> {
        if groups.is_empty() {
            return Err("no node groups".into());
        }
        let mut gpu_types: Vec<String> = Vec::new();
        let mut nodes = Vec::new();
        let mut switch_base = 0u32;
        for g in &groups {
            if g.nodes == 0 || g.gpus_per_node == 0 {
                return Err(format!("group `{}`: nodes and gpus_per_node must be positive", g.name));
            }
            if g.nodes_per_switch == Some(0) {
                return Err(format!("group `{}`: nodes_per_switch must be positive", g.name));
            }
            let ty = match gpu_types.iter().position(|t| t.eq_ignore_ascii_case(&g.gpu_type)) {
                Some(i) => i,
                None => {
                    gpu_types.push(g.gpu_type.clone());
                    gpu_types.len() - 1
                }
            };
            let per_switch = g.nodes_per_switch.unwrap_or(g.nodes);
            for k in 0..g.nodes {
                nodes.push(Node {
                    id: nodes.len() as u32,
                    name: format!("{}-{k}", g.name),
                    gpu_type: ty as u16,
                    gpus: g.gpus_per_node,
                    switch: switch_base + k / per_switch,
                });
            }
            switch_base += g.nodes.div_ceil(per_switch);
        }
        let mut capacity = vec![0u32; gpu_types.len()];
        let mut max_node_gpus = vec![0u32; gpu_types.len()];
        let mut nodes_per_switch = vec![u32::MAX; gpu_types.len()];
        for g in &groups {
            let ty = gpu_types
                .iter()
                .position(|t| t.eq_ignore_ascii_case(&g.gpu_type))
                .unwrap();
            capacity[ty] += g.nodes * g.gpus_per_node;
            max_node_gpus[ty] = max_node_gpus[ty].max(g.gpus_per_node);
            nodes_per_switch[ty] = nodes_per_switch[ty].min(g.nodes_per_switch.unwrap_or(g.nodes));
        }
        Ok(Cluster {
            name: name.to_string(),
            groups,
            gpu_types,
            nodes,
            capacity,
            max_node_gpus,
            nodes_per_switch,
        })
    }

    pub fn total_gpus(&self) -> u64 {
        self.capacity.iter().map(|&c| c as u64).sum()
    }

    pub fn type_index(&self, name: &str) -> Option<u16> {
        self.gpu_types
            .iter()
            .position(|t| t.eq_ignore_ascii_case(name))
            .map(|i| i as u16)
    }

    /// One line for summaries: `16 nodes, 128 GPUs (A100 x 96, T4 x 32)`.
    pub fn describe(&self) -> String {
        let types: Vec<String> = self
            .gpu_types
            .iter()
            .zip(&self.capacity)
            .map(|(t, c)| format!("{t} x {c}"))
            .collect();
        format!(
            "{} nodes, {} GPUs ({})",
            self.nodes.len(),
            self.total_gpus(),
            types.join(", ")
        )
    }
}

/// Read a cluster: `.toml` (tracecast) or `.csv` (ElasticFlow `cluster_specs`,
/// whose GPUs are all of `default_gpu_type`).
pub fn read_cluster(path: &Path, default_gpu_type: &str) -> Result<Cluster> {
    let stem = path
        .file_stem()
        .map_or("cluster".into(), |s| s.to_string_lossy().to_string());
    let is_toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let cluster = if is_toml {
        let text = std::fs::read_to_string(path).map_err(|e| PlanError::io(path, e))?;
        let spec: TomlSpec = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start].lines().count().max(1) as u64);
            match line {
                Some(line) => PlanError::Line {
                    path: path.into(),
                    line,
                    reason: e.message().to_string(),
                },
                None => PlanError::file(path, e.message()),
            }
        })?;
        if let Some(v) = spec.version.filter(|&v| v != CLUSTER_TOML_VERSION) {
            return Err(PlanError::file(
                path,
                format!("cluster spec version {v}; this tracecast reads version {CLUSTER_TOML_VERSION}"),
            ));
        }
        Cluster::from_groups(spec.name.as_deref().unwrap_or(&stem), spec.groups)
    } else {
        let rows = Rows::read(path)?;
        let (sw, nps, gpn) = (
            rows.need("num_switch")?,
            rows.need("num_node_p_switch")?,
            rows.need("num_gpu_p_node")?,
        );
        let mut groups = Vec::new();
        for (line, row) in &rows.rows {
            let pos = |col: usize| -> Result<u32> {
                let v = rows.int_req(*line, row, col)?;
                u32::try_from(v)
                    .ok()
                    .filter(|&v| v > 0)
                    .ok_or_else(|| rows.field_err(*line, col, format!("`{v}` is not a positive count")))
            };
            let (switches, per_switch, gpus) = (pos(sw)?, pos(nps)?, pos(gpn)?);
            groups.push(NodeGroup {
                name: if groups.is_empty() {
                    "node".into()
                } else {
                    format!("node{}", groups.len())
                },
                gpu_type: default_gpu_type.to_string(),
                nodes: switches * per_switch,
                gpus_per_node: gpus,
                nodes_per_switch: Some(per_switch),
            });
        }
        Cluster::from_groups(&stem, groups)
    };
    cluster.map_err(|reason| PlanError::file(path, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_groups_and_switches() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            "version = 1\n[[group]]\nname='a'\ngpu_type='A100'\nnodes=5\ngpus_per_node=8\nnodes_per_switch=2\n\
             [[group]]\nname='t'\ngpu_type='T4'\nnodes=2\ngpus_per_node=4\n",
        )
        .unwrap();
        let c = read_cluster(&p, "X").unwrap();
        assert_eq!(c.capacity, vec![40, 8]);
        assert_eq!(c.nodes.len(), 7);
        // 5 nodes, 2 per switch -> switches 0,0,1,1,2; the T4 group starts at switch 3.
        let sw: Vec<u32> = c.nodes.iter().map(|n| n.switch).collect();
        assert_eq!(sw, vec![0, 0, 1, 1, 2, 3, 3]);
    }

    #[test]
    fn toml_error_names_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            "[[group]]\nname='a'\ngpu_type='A100'\nnodes='five'\ngpus_per_node=8\n",
        )
        .unwrap();
        let e = read_cluster(&p, "X").unwrap_err().to_string();
        assert!(e.contains("c.toml line 4"), "{e}");
    }
}

//! `tracecast inspect`: a one-trace summary computed from the same linked
//! model that ingest writes, so what inspect says is what the lake holds.

use std::collections::HashMap;

use serde::Serialize;

use crate::model::{Kernel, Trace};

#[derive(Debug, Serialize)]
pub struct TraceSummary {
    pub format: &'static str,
    pub era: String,
    pub schema_version: Option<String>,
    pub gpu_name: Option<String>,
    pub devices: Vec<String>,
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub backend: Option<String>,
    pub events: i64,
    pub ops: usize,
    pub launches: usize,
    pub kernels: usize,
    pub memcpys: usize,
    pub et_nodes: usize,
    pub steps: Vec<StepSummary>,
    pub kernel_time_ms: f64,
    pub communication_share_pct: f64,
    pub unlinked_kernel_share_pct: f64,
    pub kernels_with_op_pct: f64,
    pub top_kernels: Vec<TimeShare>,
    pub top_ops: Vec<TimeShare>,
}

#[derive(Debug, Serialize)]
pub struct StepSummary {
    pub name: String,
    pub source: &'static str,
    pub dur_ms: f64,
    pub kernels: i64,
    pub gpu_busy_pct: f64,
}

#[derive(Debug, Serialize)]
pub struct TimeShare {
    pub name: String,
    pub count: usize,
    pub total_ms: f64,
    pub share_pct: f64,
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { 100.0 * part / whole } else { 0.0 }
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

pub fn summarize(t: &Trace, top: usize) -> TraceSummary {
    let total_kernel_ns: i64 = t.kernels.iter().map(|k| k.dur_ns).sum();
    let comm_ns: i64 = t.kernels.iter().filter(|k| k.comm.is_some()).map(|k| k.dur_ns).sum();
    let n = t.kernels.len() as f64;
    let unlinked = t.kernels.iter().filter(|k| k.launch.is_none()).count() as f64;
    let with_op = t.kernels.iter().filter(|k| k.op.is_some()).count() as f64;

    let top_kernels = top_by(
        t.kernels.iter().map(|k| (k.name.as_ref(), k.dur_ns)),
        total_kernel_ns,
        top,
    );
    let op_name = |k: &Kernel| k.op.map_or("(no operator)", |o| t.ops[o].name.as_ref());
    let top_ops = top_by(t.kernels.iter().map(|k| (op_name(k), k.dur_ns)), total_kernel_ns, top);

    TraceSummary {
        format: t.format.as_str(),
        era: t.meta.era.clone(),
        schema_version: t.meta.schema_version.clone(),
        gpu_name: t.meta.gpu_name.clone(),
        devices: t.devices.iter().map(|d| d.name.clone()).collect(),
        rank: t.meta.rank,
        world_size: t.meta.world_size,
        backend: t.meta.backend.clone(),
        events: t.meta.event_count,
        ops: t.ops.len(),
        launches: t.launches.len(),
        kernels: t.kernels.len(),
        memcpys: t.memcpys.len(),
        et_nodes: t.et_nodes.len(),
        steps: t
            .steps
            .iter()
            .map(|s| StepSummary {
                name: s.name.to_string(),
                source: s.source.as_str(),
                dur_ms: ms(s.end_ns - s.start_ns),
                kernels: s.kernel_count,
                gpu_busy_pct: pct(s.gpu_busy_ns as f64, (s.end_ns - s.start_ns) as f64),
            })
            .collect(),
        kernel_time_ms: ms(total_kernel_ns),
        communication_share_pct: pct(comm_ns as f64, total_kernel_ns as f64),
        unlinked_kernel_share_pct: pct(unlinked, n),
        kernels_with_op_pct: pct(with_op, n),
        top_kernels,
        top_ops,
    }
}

/// Groups `(name, ns)` by name and keeps the `top` largest totals.
fn top_by<'a>(items: impl Iterator<Item = (&'a str, i64)>, whole_ns: i64, top: usize) -> Vec<TimeShare> {
    let mut groups: HashMap<&str, (usize, i64)> = HashMap::new();
    for (name, ns) in items {
        let g = groups.entry(name).or_default();
        g.0 += 1;
        g.1 += ns;
    }
    let mut rows: Vec<(&str, (usize, i64))> = groups.into_iter().collect();
    rows.sort_by(|a, b| b.1.1.cmp(&a.1.1).then(a.0.cmp(b.0)));
    rows.into_iter()
        .take(top)
        .map(|(name, (count, ns))| TimeShare {
            name: name.to_string(),
            count,
            total_ms: ms(ns),
            share_pct: pct(ns as f64, whole_ns as f64),
        })
        .collect()
}

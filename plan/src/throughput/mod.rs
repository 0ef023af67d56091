//! Throughput tables (job type x GPU type x batch size x GPU count ->
//! iterations/s) and the scaling curves the planner prices jobs with.
//!
//! Interpolation rules (documented in FORMATS.md, flagged per segment):
//! - a GPU count between two measured counts: linear between them;
//! - below the smallest measured count: linear from the origin (perfect scaling);
//! - above the largest: the largest count's figure (no further gain);
//! - a batch size between two measured ones: samples/s linear in the batch
//!   size, at the counts both measure; outside the measured range: the nearest
//!   batch size at equal samples/s.

mod curve;
mod read;

pub use curve::Curve;
pub use read::read_throughput;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One measured (or predicted) figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub gpus: u32,
    /// Nodes the figure was taken on; `None` = most compact placement.
    pub nodes: Option<u32>,
    pub iters_per_s: f64,
}

/// All figures, keyed by lower-cased job type and GPU type.
#[derive(Clone, Debug, Default)]
pub struct ThroughputTable {
    entries: HashMap<(String, String), BTreeMap<u32, Vec<Point>>>,
    /// Where the figures came from (for summaries).
    pub sources: Vec<String>,
    /// GPU type names as first spelled in the source.
    pub gpu_type_names: Vec<String>,
}

impl ThroughputTable {
    /// Add a figure; non-positive or non-finite values mean "no measurement" and are dropped.
    pub fn insert(&mut self, job_type: &str, gpu_type: &str, batch_size: u32, point: Point) {
        if !(point.iters_per_s.is_finite() && point.iters_per_s > 0.0) || point.gpus == 0 {
            return;
        }
        if !self.gpu_type_names.iter().any(|g| g.eq_ignore_ascii_case(gpu_type)) {
            self.gpu_type_names.push(gpu_type.to_string());
        }
        self.entries
            .entry((job_type.to_ascii_lowercase(), gpu_type.to_ascii_lowercase()))
            .or_default()
            .entry(batch_size)
            .or_default()
            .push(point);
    }

    pub fn merge(&mut self, other: ThroughputTable) {
        for (k, v) in other.entries {
            let e = self.entries.entry(k).or_default();
            for (bs, pts) in v {
                e.entry(bs).or_default().extend(pts);
            }
        }
        self.sources.extend(other.sources);
        for g in other.gpu_type_names {
            if !self.gpu_type_names.iter().any(|h| h.eq_ignore_ascii_case(&g)) {
                self.gpu_type_names.push(g);
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.values().flat_map(|m| m.values()).map(Vec::len).sum()
    }

    /// GPU types the table prices (lower case).
    #[cfg(test)]
    pub fn gpu_types(&self) -> Vec<String> {
        let mut v: Vec<String> = self.entries.keys().map(|(_, g)| g.clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    pub fn job_types(&self) -> Vec<String> {
        let mut v: Vec<String> = self.entries.keys().map(|(j, _)| j.clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// The scaling curve of a job type at a batch size on a GPU type, or
    /// `None` when the table has no figure for the pair. `batch_size = None`
    /// takes the smallest batch size listed.
    pub fn curve(&self, job_type: &str, gpu_type: &str, batch_size: Option<u32>) -> Option<Curve> {
        let by_bs = self
            .entries
            .get(&(job_type.to_ascii_lowercase(), gpu_type.to_ascii_lowercase()))?;
        let compact = |pts: &[Point]| -> Vec<(u32, f64)> {
            let mut v: Vec<(u32, f64)> = pts
                .iter()
                .filter(|p| p.nodes.is_none())
                .map(|p| (p.gpus, p.iters_per_s))
                .collect();
            v.sort_by_key(|p| p.0);
            v.dedup_by_key(|p| p.0);
            v
        };
        let cross = |pts: &[Point], scale: f64| -> Vec<(u32, u32, f64)> {
            pts.iter()
                .filter_map(|p| p.nodes.map(|n| (p.gpus, n, p.iters_per_s * scale)))
                .collect()
        };
        let Some(bs) = batch_size else {
            let (_, pts) = by_bs.iter().next()?;
            return Curve::new(compact(pts), cross(pts, 1.0), by_bs.len() > 1);
        };
        if let Some(pts) = by_bs.get(&bs) {
            return Curve::new(compact(pts), cross(pts, 1.0), false);
        }
        let below = by_bs.range(..bs).next_back();
        let above = by_bs.range(bs..).next();
        match (below, above) {
            (Some((&b0, p0)), Some((&b1, p1))) => {
                // Samples/s linear in the batch size between the two neighbours.
                let (c0, c1) = (compact(p0), compact(p1));
                let w = (bs - b0) as f64 / (b1 - b0) as f64;
                let pts: Vec<(u32, f64)> = c0
                    .iter()
                    .filter_map(|&(n, t0)| {
                        let t1 = c1.iter().find(|p| p.0 == n)?.1;
                        let sps = t0 * b0 as f64 * (1.0 - w) + t1 * b1 as f64 * w;
                        Some((n, sps / bs as f64))
                    })
                    .collect();
                let near = if w < 0.5 { (b0, p0) } else { (b1, p1) };
                if pts.is_empty() {
                    Curve::new(scale_pts(&compact(near.1), near.0 as f64 / bs as f64), Vec::new(), true)
                } else {
                    Curve::new(pts, cross(near.1, near.0 as f64 / bs as f64), true)
                }
            }
            (Some((&b, p)), None) | (None, Some((&b, p))) => {
                let s = b as f64 / bs as f64;
                Curve::new(scale_pts(&compact(p), s), cross(p, s), true)
            }
            (None, None) => None,
        }
    }
}

fn scale_pts(pts: &[(u32, f64)], s: f64) -> Vec<(u32, f64)> {
    pts.iter().map(|&(n, t)| (n, t * s)).collect()
}

/// Curves shared between jobs of one configuration (thousands of jobs share a handful).
#[derive(Default)]
pub struct CurveCache {
    map: HashMap<(String, u16, Option<u32>), Option<Arc<Curve>>>,
}

impl CurveCache {
    pub fn get(
        &mut self,
        table: &ThroughputTable,
        job_type: &str,
        ty: u16,
        gpu_type: &str,
        bs: Option<u32>,
    ) -> Option<Arc<Curve>> {
        self.map
            .entry((job_type.to_ascii_lowercase(), ty, bs))
            .or_insert_with(|| table.curve(job_type, gpu_type, bs).map(Arc::new))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> ThroughputTable {
        let mut t = ThroughputTable::default();
        for (bs, pts) in [
            (64, [(1, 10.0), (2, 18.0), (4, 30.0)]),
            (128, [(1, 5.0), (2, 9.5), (4, 17.0)]),
        ] {
            for (n, v) in pts {
                t.insert(
                    "ResNet",
                    "A100",
                    bs,
                    Point {
                        gpus: n,
                        nodes: None,
                        iters_per_s: v,
                    },
                );
            }
        }
        t.insert(
            "resnet",
            "a100",
            64,
            Point {
                gpus: 8,
                nodes: None,
                iters_per_s: f64::NAN,
            },
        );
        t.insert(
            "resnet",
            "a100",
            64,
            Point {
                gpus: 16,
                nodes: None,
                iters_per_s: 0.0,
            },
        );
        t
    }

    #[test]
    fn missing_cells_are_dropped_and_counts_interpolate() {
        let c = table().curve("resnet", "A100", Some(64)).unwrap();
        assert_eq!(c.measured(), &[(1, 10.0), (2, 18.0), (4, 30.0)]);
        assert_eq!(c.rate(2), (18.0, false));
        assert_eq!(c.rate(3), (24.0, true));
        // Beyond the table: flat.
        assert_eq!(c.rate(8), (30.0, true));
    }

    #[test]
    fn batch_size_interpolates_samples_per_second() {
        let c = table().curve("RESNET", "a100", Some(96)).unwrap();
        assert!(c.batch_interpolated);
        // 1 GPU: samples/s 640 at 64 and 640 at 128 -> 640/96 it/s.
        assert!((c.rate(1).0 - 640.0 / 96.0).abs() < 1e-9);
        // Outside the range: nearest batch size at equal samples/s.
        let c = table().curve("resnet", "a100", Some(256)).unwrap();
        assert!((c.rate(1).0 - 2.5).abs() < 1e-9);
        assert!(table().curve("resnet", "t4", Some(64)).is_none());
    }
}

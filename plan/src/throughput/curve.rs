//! A job's scaling curve on one GPU type: iterations/s by GPU count.

/// Measured points plus the concave hull the elastic scaler walks along.
#[derive(Clone, Debug)]
pub struct Curve {
    /// (GPU count, iterations/s) at the most compact placement, sorted by count.
    pts: Vec<(u32, f64)>,
    /// (GPU count, nodes, iterations/s) figures taken on a given number of nodes.
    cross: Vec<(u32, u32, f64)>,
    /// The batch size was not in the table (every figure is interpolated).
    pub batch_interpolated: bool,
    /// Only the measured counts may be used (`Counts::Measured` rules).
    pub discrete: bool,
    /// Counts on the upper concave hull of (0,0) and the points, up to the
    /// fastest point: the counts worth growing to, in increasing order.
    hull: Vec<u32>,
    /// Iterations/s at each hull count (measured points: no interpolation).
    hull_rates: Vec<f64>,
    /// Iterations/s on one GPU (the elastic scaler's unit; asked per job per event).
    one: f64,
}

impl Curve {
    pub fn new(pts: Vec<(u32, f64)>, cross: Vec<(u32, u32, f64)>, batch_interpolated: bool) -> Option<Curve> {
        if pts.is_empty() {
            return None;
        }
        let hull = upper_hull(&pts);
        let mut c = Curve {
            pts,
            cross,
            batch_interpolated,
            discrete: false,
            hull,
            hull_rates: Vec::new(),
            one: 0.0,
        };
        c.hull_rates = c.hull.iter().map(|&h| c.r(h)).collect();
        c.one = c.r(1);
        Some(c)
    }

    /// The curve with counts above `cap` dropped and, when `discrete`, only
    /// its measured counts allowed; `None` when no count is left.
    pub fn restricted(&self, cap: u32, discrete: bool) -> Option<Curve> {
        let pts: Vec<(u32, f64)> = self.pts.iter().copied().filter(|p| p.0 <= cap).collect();
        let cross = self.cross.iter().copied().filter(|c| c.0 <= cap).collect();
        let mut c = Curve::new(pts, cross, self.batch_interpolated)?;
        c.discrete = discrete;
        Some(c)
    }

    /// This curve's counts with `other`'s throughputs at them (a belief on
    /// the truth's measured counts); `None` when `other` gives none of them.
    pub fn with_rates_of(&self, other: &Curve) -> Option<Curve> {
        let pts = self.pts.iter().map(|&(n, _)| (n, other.r(n))).collect();
        let mut c = Curve::new(pts, Vec::new(), other.batch_interpolated)?;
        c.discrete = self.discrete;
        Some(c)
    }

    /// Whether `n` GPUs is a count this curve allows without interpolating.
    pub fn is_measured(&self, n: u32) -> bool {
        self.pts.binary_search_by_key(&n, |p| p.0).is_ok()
    }

    /// The smallest count to run at: 1, or the smallest measured one when only those are allowed.
    pub fn first_count(&self) -> u32 {
        if self.discrete { self.pts[0].0 } else { 1 }
    }

    /// The largest allowed count not above `n` (the smallest allowed one when none is).
    pub fn floor_count(&self, n: u32) -> u32 {
        if !self.discrete {
            return n;
        }
        self.pts
            .iter()
            .rev()
            .map(|p| p.0)
            .find(|&c| c <= n)
            .unwrap_or(self.pts[0].0)
    }

    /// The counts a search may try, in increasing order, up to `max`.
    pub fn counts_up_to(&self, max: u32) -> Box<dyn Iterator<Item = u32> + '_> {
        if self.discrete {
            Box::new(self.pts.iter().map(|p| p.0).take_while(move |&c| c <= max))
        } else {
            Box::new(1..=max)
        }
    }

    /// A job known only by its run time: 1 unit of work per second at `gpus`.
    pub fn rigid(gpus: u32) -> Curve {
        Curve::new(vec![(gpus, 1.0)], Vec::new(), false).unwrap()
    }

    #[cfg(test)]
    pub fn measured(&self) -> &[(u32, f64)] {
        &self.pts
    }

    #[cfg(test)]
    pub fn hull(&self) -> &[u32] {
        &self.hull
    }

    /// Iterations/s at `n` GPUs (compact placement) and whether it was interpolated.
    pub fn rate(&self, n: u32) -> (f64, bool) {
        if n == 0 {
            return (0.0, false);
        }
        let pts = &self.pts;
        match pts.binary_search_by_key(&n, |p| p.0) {
            Ok(i) => (pts[i].1, self.batch_interpolated),
            Err(0) => (pts[0].1 * n as f64 / pts[0].0 as f64, true),
            Err(i) if i == pts.len() => (pts[i - 1].1, true),
            Err(i) => {
                let ((n0, t0), (n1, t1)) = (pts[i - 1], pts[i]);
                (t0 + (t1 - t0) * (n - n0) as f64 / (n1 - n0) as f64, true)
            }
        }
    }

    pub fn r(&self, n: u32) -> f64 {
        self.rate(n).0
    }

    /// A figure the table gives for `n` GPUs on exactly `nodes` nodes.
    pub fn cross_rate(&self, n: u32, nodes: u32) -> Option<f64> {
        self.cross.iter().find(|c| c.0 == n && c.1 == nodes).map(|c| c.2)
    }

    /// The largest count the curve has a figure for.
    pub fn largest_count(&self) -> u32 {
        self.pts[self.pts.len() - 1].0
    }

    /// The largest count worth using (the fastest point).
    pub fn best_count(&self) -> u32 {
        *self.hull.last().unwrap_or(&self.pts[0].0)
    }

    /// From `n` GPUs one step along the hull: (next count, its iterations/s,
    /// iterations/s at `n`); `None` at or past the hull's end.
    pub fn hull_step(&self, n: u32) -> Option<(u32, f64, f64)> {
        let k = self.hull.partition_point(|&h| h <= n);
        let next = *self.hull.get(k)?;
        let here = match k.checked_sub(1) {
            Some(p) if self.hull[p] == n => self.hull_rates[p],
            _ => self.r(n),
        };
        Some((next, self.hull_rates[k], here))
    }

    /// Iterations/s on one GPU: `r(1)`, kept.
    pub fn one_gpu_rate(&self) -> f64 {
        self.one
    }

    /// A copy with every point's throughput multiplied by `f(count)`.
    pub fn scaled(&self, mut f: impl FnMut(u32) -> f64) -> Curve {
        let pts = self.pts.iter().map(|&(n, t)| (n, t * f(n))).collect();
        let cross = self.cross.iter().map(|&(n, k, t)| (n, k, t * f(n))).collect();
        let mut c = Curve::new(pts, cross, self.batch_interpolated).unwrap();
        c.discrete = self.discrete;
        c
    }
}

/// Upper concave hull from the origin to the fastest point.
fn upper_hull(pts: &[(u32, f64)]) -> Vec<u32> {
    let best = pts
        .iter()
        .enumerate()
        .fold(0, |b, (i, p)| if p.1 > pts[b].1 { i } else { b });
    let mut hull: Vec<(f64, f64, u32)> = vec![(0.0, 0.0, 0)];
    for &(n, t) in &pts[..=best] {
        let p = (n as f64, t, n);
        while hull.len() >= 2 {
            let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            // Drop b when it lies below the chord a -> p (collinear points stay: finer steps).
            let cross = (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0);
            if cross > 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    hull.into_iter().skip(1).map(|h| h.2).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hull_is_concave_and_stops_at_peak() {
        // 4 GPUs is below the chord 2 -> 8; 16 and 32 are past the peak.
        let c = Curve::new(
            vec![(1, 10.0), (2, 18.0), (4, 20.0), (8, 40.0), (16, 38.0), (32, 30.0)],
            vec![],
            false,
        )
        .unwrap();
        assert_eq!(c.hull(), &[1, 2, 8]);
        assert_eq!(c.best_count(), 8);
        assert_eq!(c.hull_step(2), Some((8, 40.0, 18.0)));
        // Off the hull: the rate here is interpolated.
        assert_eq!(c.hull_step(4), Some((8, 40.0, 20.0)));
        assert_eq!(c.hull_step(3), Some((8, 40.0, 19.0)));
        assert_eq!(c.hull_step(8), None);
        assert_eq!(c.one_gpu_rate(), 10.0);
    }

    #[test]
    fn measured_counts_only() {
        let c = Curve::new(vec![(1, 10.0), (2, 18.0), (4, 30.0), (8, 40.0)], vec![], false).unwrap();
        let m = c.restricted(4, true).unwrap();
        assert_eq!(m.measured(), &[(1, 10.0), (2, 18.0), (4, 30.0)]);
        assert!(m.is_measured(2) && !m.is_measured(3) && !m.is_measured(8));
        assert_eq!((m.floor_count(3), m.floor_count(100), m.largest_count()), (2, 4, 4));
        assert_eq!(m.counts_up_to(3).collect::<Vec<_>>(), vec![1, 2]);
        // Interpolating curves allow every count.
        assert_eq!((c.floor_count(3), c.counts_up_to(3).count()), (3, 3));
        // A belief on the truth's counts: the other curve's figures there.
        let other = Curve::new(vec![(1, 20.0), (8, 100.0)], vec![], false).unwrap();
        let b = m.with_rates_of(&other).unwrap();
        assert!(b.discrete);
        assert_eq!(b.measured().iter().map(|p| p.0).collect::<Vec<_>>(), vec![1, 2, 4]);
        assert_eq!(b.r(1), 20.0);
        assert!(c.restricted(0, true).is_none());
    }

    #[test]
    fn below_smallest_count_scales_from_origin() {
        let c = Curve::new(vec![(2, 10.0), (4, 16.0)], vec![], false).unwrap();
        assert_eq!(c.rate(1), (5.0, true));
        assert_eq!(Curve::rigid(8).r(8), 1.0);
    }
}

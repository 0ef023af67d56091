//! Pricing on a GPU the op model never trained on: the guards that keep
//! the trees, which extrapolate flat past their inputs, physical there (a
//! utilisation floor, the streaming edge, the trained ridge point).

use rayon::prelude::*;

use super::{BLOCK, OpModel};
use crate::features::Timing;
use crate::gpu::GpuSpec;
use crate::work::{OpKind, OpWork};

impl OpModel {
    /// On a GPU never trained on: at most its roofline time over a floor
    /// utilisation. How efficient a new GPU is cannot be read from its spec
    /// sheet, and the trees, which tell GPUs apart by their figures, can
    /// send a new one to the leaves of a slower GPU (the H100's ridge point
    /// is the T4's).
    /// - Work that streams memory (element-wise, norms, softmax, reductions,
    ///   gathers, copies) on a GPU whose bandwidth is beyond every trained
    ///   GPU's (or below): the utilisation it reaches on the trained GPU at
    ///   that edge (`bandwidth_edge`). There the trees extrapolate flat
    ///   from whichever GPU their splits on other figures lead to, while
    ///   the memory system nearest in bandwidth predicts better what share
    ///   of its bandwidth such work reaches. Trained without Hopper, this
    ///   took the H100's isolated softmax error from 40% to 24% and its
    ///   layer norm from 23% to 13%. Inside the trained range the nearest
    ///   GPU predicted worse than the trees where it is of another
    ///   generation (the P100's nearest is the V100, the T4's the P4), so
    ///   there the rule below holds.
    /// - Other work: the lowest utilisation any trained GPU reaches on it,
    ///   a new GPU being taken to be no worse than the least efficient one
    ///   seen. In the leave-one-GPU-out sweep this cut the H100's and
    ///   H200's end-to-end error from 9.0% to 6.7% on average.
    ///
    /// It costs one more tree walk for streaming work beyond the trained
    /// bandwidths and up to one per trained GPU for the rest (`tracecast
    /// ops bench` prints the speed on a GPU the model never trained on).
    pub(super) fn floored(&self, pairs: &[(&OpWork, &GpuSpec)], timing: Timing) -> Vec<f64> {
        self.floor(pairs, timing).0
    }

    /// [`Self::floored`]'s prices, and how many of them the floor set.
    pub(super) fn floor(&self, pairs: &[(&OpWork, &GpuSpec)], timing: Timing) -> (Vec<f64>, usize) {
        let priced = self.trees_us(pairs, timing);
        let utilisation: Vec<f64> = priced.iter().map(|(t, roof)| roof / t).collect();
        // Streaming work beyond the trained bandwidths: its utilisation on
        // the trained GPU at their edge.
        let (mut beyond, mut at_edge, mut within) = (Vec::new(), Vec::new(), Vec::new());
        for (i, &(work, gpu)) in pairs.iter().enumerate() {
            match work.kind.streams_memory().then(|| self.bandwidth_edge(gpu)).flatten() {
                Some(edge) => {
                    beyond.push(i);
                    at_edge.push((work, edge));
                }
                None => within.push(i),
            }
        }
        let mut bound = vec![f64::NAN; pairs.len()];
        for (&i, (t, roof)) in beyond.iter().zip(self.trees_us(&at_edge, timing)) {
            bound[i] = roof / t;
        }
        for (i, lowest) in self.least_efficient_below(pairs, &utilisation, within, timing) {
            bound[i] = lowest;
        }
        let mut floored: Vec<f64> = priced.iter().map(|(t, _)| *t).collect();
        let mut set = 0;
        for (i, &b) in bound.iter().enumerate() {
            // A NaN utilisation is not above any bound: it takes the floor.
            if !b.is_nan() && (utilisation[i].is_nan() || utilisation[i] < b) {
                floored[i] = priced[i].1 / b;
                set += 1;
            }
        }
        (floored, set)
    }

    /// Of the pairs at `indices`, those whose `utilisation` is below every
    /// trained GPU's on the same work, with the lowest of those. A pair
    /// leaves the walk over the trained GPUs at the first that is not above
    /// it, so most cost one or two walks of the trees.
    pub(super) fn least_efficient_below(
        &self,
        pairs: &[(&OpWork, &GpuSpec)],
        utilisation: &[f64],
        indices: Vec<usize>,
        timing: Timing,
    ) -> Vec<(usize, f64)> {
        let mut lowest = vec![f64::INFINITY; pairs.len()];
        let mut open = indices;
        for g in &self.card.trained_specs {
            if open.is_empty() {
                break;
            }
            let on_g: Vec<(&OpWork, &GpuSpec)> = open.iter().map(|&i| (pairs[i].0, g)).collect();
            let mut still_open = Vec::with_capacity(open.len());
            for (&i, (t, roof)) in open.iter().zip(self.trees_us(&on_g, timing)) {
                lowest[i] = lowest[i].min(roof / t);
                // A NaN utilisation is not above any: it stays open and takes the floor.
                let not_above = utilisation[i] >= lowest[i];
                if !not_above {
                    still_open.push(i);
                }
            }
            open = still_open;
        }
        open.into_iter().map(|i| (i, lowest[i])).collect()
    }

    /// Where `gpu`'s bandwidth lies beyond every trained GPU's (or below
    /// every one's), the trained GPU at that edge: the one with the highest
    /// (lowest) bandwidth, then the nearest FP32 peak. `None` inside the
    /// trained range, where the trees interpolate between real GPUs.
    pub(super) fn bandwidth_edge(&self, gpu: &GpuSpec) -> Option<&GpuSpec> {
        let specs = &self.card.trained_specs;
        let bandwidths = specs.iter().map(|g| g.bandwidth);
        let (lowest, highest) =
            bandwidths.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), b| (lo.min(b), hi.max(b)));
        let edge = if gpu.bandwidth > highest {
            highest
        } else if gpu.bandwidth < lowest {
            lowest
        } else {
            return None;
        };
        let peak_gap = |g: &GpuSpec| (g.peak_fp32_flops / gpu.peak_fp32_flops).ln().abs();
        specs
            .iter()
            .filter(|g| g.bandwidth == edge)
            .min_by(|a, b| peak_gap(a).total_cmp(&peak_gap(b)))
    }

    /// Of float32 `pairs` on GPUs the model never trained on, the share
    /// whose price the floor sets (`floored`): those the trees put below
    /// the utilisation on the trained GPU at the edge of the trained
    /// bandwidths (streaming work beyond them) or below every trained
    /// GPU's (the rest). How much of a new GPU's price is the guard, not
    /// the learning (`tracecast ops bench` prints it); 0 where every GPU
    /// was trained on.
    pub fn floored_share(&self, pairs: &[(OpWork, &GpuSpec)], timing: Timing) -> f64 {
        let (floored, unseen) = pairs
            .par_chunks(BLOCK)
            .map(|block| {
                let unseen: Vec<(&OpWork, &GpuSpec)> = block
                    .iter()
                    .filter(|(_, gpu)| !self.knows_figures_of(gpu))
                    .map(|(work, gpu)| (work, *gpu))
                    .collect();
                (self.floor(&unseen, timing).1, unseen.len())
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        if unseen == 0 {
            0.0
        } else {
            floored as f64 / unseen as f64
        }
    }

    /// A GEMM or convolution on a GPU whose ridge point (peak rate over
    /// bandwidth) is above every trained GPU's: the larger of its time on
    /// the same GPU with the bandwidth that brings its ridge down to the
    /// trained maximum, and the time to stream its bytes (a copy of them),
    /// where that is below its price in `priced`. On such a GPU (the L4:
    /// about 100 FLOP per byte, against at most 38 trained) most
    /// convolutions fall below the ridge, and the trees price them at the
    /// low utilisation of the few memory-bound convolutions they learned
    /// from, which are small and badly tiled: the L4 came out slower than
    /// the T4 on ResNet-50 (`bench/whatif.sh`). Compute and bandwidth each
    /// still bound the time.
    pub(super) fn within_trained_ridge(&self, pairs: &[(&OpWork, &GpuSpec)], timing: Timing, priced: &mut [f64]) {
        let beyond: Vec<(usize, GpuSpec)> = pairs
            .iter()
            .enumerate()
            .filter_map(|(i, (work, gpu))| self.spec_within_trained_ridge(work, gpu).map(|within| (i, within)))
            .collect();
        if beyond.is_empty() {
            return;
        }
        // A float32 copy reads and writes 8 bytes per element: as many bytes as the work moves.
        let streamed: Vec<OpWork> = beyond
            .iter()
            .map(|(i, _)| OpWork::copy(pairs[*i].0.bytes / 8.0))
            .collect();
        let by_compute = self.floored(
            &beyond
                .iter()
                .map(|(i, within)| (pairs[*i].0, within))
                .collect::<Vec<_>>(),
            timing,
        );
        let by_streaming = self.floored(
            &beyond
                .iter()
                .zip(&streamed)
                .map(|((i, _), copy)| (copy, pairs[*i].1))
                .collect::<Vec<_>>(),
            timing,
        );
        for (((i, _), c), s) in beyond.iter().zip(by_compute).zip(by_streaming) {
            priced[*i] = priced[*i].min(c.max(s));
        }
    }

    /// For matrix work on a GPU whose ridge point is above every trained
    /// GPU's: the same GPU with its bandwidth raised to bring the ridge down
    /// to the trained maximum. `None` elsewhere.
    pub(super) fn spec_within_trained_ridge(&self, work: &OpWork, gpu: &GpuSpec) -> Option<GpuSpec> {
        if !matches!(work.kind, OpKind::Gemm | OpKind::Conv) {
            return None;
        }
        let ridge = |g: &GpuSpec| g.peak_for(work) / g.bandwidth;
        let highest = self.card.trained_specs.iter().map(ridge).fold(0.0, f64::max);
        if !(highest > 0.0 && ridge(gpu) > highest) {
            return None;
        }
        Some(GpuSpec {
            bandwidth: gpu.peak_for(work) / highest,
            ..gpu.clone()
        })
    }
}

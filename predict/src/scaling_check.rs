//! The multi-GPU scaling model checked against measured throughput curves
//! (`tracecast scaling`): a fit of its two parameters per curve, and the
//! error beyond one node of a fit made inside it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::PredictError;
use crate::elasticflow;
use crate::scaling::{Fit, Interconnect, fit};

/// The curves, the GPU's interconnect and every curve's fit.
pub struct ScalingCheck {
    pub measured: PathBuf,
    pub gpu: String,
    pub net: Interconnect,
    pub overlap: f64,
    /// Curves read; only those with a one-GPU point and two more are fitted.
    pub curves: usize,
    pub fits: Vec<Fit>,
}

/// Fits the scaling model to every curve under `measured` (ElasticFlow's
/// layout) for a GPU named `gpu` with interconnect `net`.
pub fn check_scaling(
    measured: &Path,
    gpu: &str,
    net: Interconnect,
    overlap: f64,
) -> Result<ScalingCheck, PredictError> {
    let curves = elasticflow::read_dir(measured)?;
    let fits: Vec<Fit> = curves.iter().filter_map(|c| fit(&net, overlap, c)).collect();
    Ok(ScalingCheck {
        measured: measured.to_path_buf(),
        gpu: gpu.to_string(),
        net,
        overlap,
        curves: curves.len(),
        fits,
    })
}

impl ScalingCheck {
    /// The report: one row per fitted curve, then the mean errors.
    pub fn markdown(&self) -> String {
        let (net, fits, curves, gpu) = (&self.net, &self.fits, self.curves, &self.gpu);

        let mut md = String::new();
        let _ = writeln!(
            md,
            "# Scaling model against {}\n\nGPU {gpu}: link {:.0} GB/s per direction inside a node of {} GPUs, {:.0} GB/s network \
         across nodes, {:.0} µs per ring step, overlap {}. {} of {curves} curves have a one-GPU point and two more to fit.\n",
            self.measured.display(),
            net.link_gbs,
            net.gpus_per_node,
            net.network_gbs,
            net.latency_s * 1e6,
            self.overlap,
            fits.len()
        );
        let _ = writeln!(
            md,
            "| model | global batch | points | gradient MB | fixed share | fit MRE | beyond-node MRE |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for f in fits {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.1} | {:.2} | {:.1}% | {} |",
                f.workload,
                f.global_batch,
                f.points,
                f.gradient_bytes / 1e6,
                f.fixed_share,
                100.0 * f.fit_mre,
                f.beyond_node_mre.map_or("n/a".into(), |e| format!("{:.1}%", 100.0 * e))
            );
        }
        let mean = |v: Vec<f64>| {
            if v.is_empty() {
                f64::NAN
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let fit_mre = mean(fits.iter().map(|f| f.fit_mre).collect());
        let beyond = mean(fits.iter().filter_map(|f| f.beyond_node_mre).collect());
        let _ = writeln!(
            md,
            "\nMean fit MRE {:.1}% over {} curves; mean MRE beyond one node (fitted inside it) {:.1}%.",
            100.0 * fit_mre,
            fits.len(),
            100.0 * beyond
        );
        md
    }
}

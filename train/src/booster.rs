//! LightGBM through lightgbm3: fit a regressor on [`Rows`], predict in ns.

use std::time::Instant;

use lightgbm3::{Booster, Dataset, ImportanceType};

use crate::TrainError;
use crate::config::{TargetTransform, TrainConfig};
use crate::dataset::Rows;

/// A fitted model and how its outputs map back to nanoseconds.
pub struct Regressor {
    pub booster: Booster,
    pub transform: TargetTransform,
    /// Seconds spent in LightGBM (dataset construction and boosting).
    pub fit_seconds: f64,
}

/// The fitted quantity for a target and its row's base estimate; times are
/// in µs so that f32 labels keep their precision.
pub fn encode(target_ns: f64, base_ns: f64, transform: TargetTransform) -> f32 {
    let us = target_ns.max(0.0) / 1e3;
    match transform {
        TargetTransform::Roofline => (us.ln_1p() - (base_ns / 1e3).ln_1p()) as f32,
        TargetTransform::Log => us.ln_1p() as f32,
        TargetTransform::None => us as f32,
    }
}

pub fn decode(raw: f64, base_ns: f64, transform: TargetTransform) -> f64 {
    let us = match transform {
        TargetTransform::Roofline => (raw + (base_ns / 1e3).ln_1p()).exp_m1(),
        TargetTransform::Log => raw.exp_m1(),
        TargetTransform::None => raw,
    };
    us.max(0.0) * 1e3
}

/// LightGBM sets OpenMP's process-wide thread count from each fit's
/// `num_threads`, and two fits at once in one process can crash (its
/// documentation of `num_threads`; seen as a rare SIGSEGV in this workspace's
/// parallel tests): fits, and predictions, take turns.
static FIT_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Regressor {
    pub fn fit(rows: &Rows, config: &TrainConfig) -> Result<Regressor, TrainError> {
        if rows.is_empty() {
            return Err(TrainError::LightGbm("no training rows".into()));
        }
        let transform = config.model.target_transform;
        let labels: Vec<f32> = rows
            .target_ns
            .iter()
            .zip(&rows.base_ns)
            .map(|(&t, &b)| encode(t, b, transform))
            .collect();
        let started = Instant::now();
        let booster = {
            let _turn = FIT_TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let mut dataset = Dataset::from_slice(&rows.x, &labels, rows.width() as i32, true)?;
            dataset.set_feature_names(&rows.names)?;
            Booster::train(dataset, &config.lightgbm_params())?
        };
        Ok(Regressor {
            booster,
            transform,
            fit_seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Predicted targets in ns, one per row.
    pub fn predict(&self, rows: &Rows) -> Result<Vec<f64>, TrainError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let raw = {
            // LightGBM's prediction runs on OpenMP too: it takes its turn.
            let _turn = FIT_TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            self.booster.predict(&rows.x, rows.width() as i32, true)?
        };
        Ok(raw
            .into_iter()
            .zip(&rows.base_ns)
            .map(|(r, &b)| decode(r, b, self.transform))
            .collect())
    }

    /// Total gain of each input, in input order.
    pub fn importance(&self) -> Result<Vec<f64>, TrainError> {
        Ok(self.booster.feature_importance(ImportanceType::Gain)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transforms_round_trip() {
        for t in [TargetTransform::Roofline, TargetTransform::Log, TargetTransform::None] {
            for ns in [0.0, 1_500.0, 2.5e6] {
                let back = decode(f64::from(encode(ns, 40_000.0, t)), 40_000.0, t);
                assert!((back - ns).abs() <= ns * 1e-6 + 1e-3, "{t:?} {ns} -> {back}");
            }
        }
    }

    #[test]
    fn learns_a_simple_function() {
        // target = 1000 * x0 ns; x1 is noise. A fitted model must beat the mean by far.
        let mut rows = Rows {
            names: vec!["x0".into(), "x1".into()],
            ..Rows::default()
        };
        for i in 0..2000 {
            let x0 = (i % 100) as f64 + 1.0;
            rows.x.extend([x0, ((i * 7919) % 13) as f64]);
            rows.target_ns.push(1000.0 * x0);
            rows.trace.push(0);
            rows.step.push(0);
            rows.busy_ns.push(0.0);
            rows.backward_share.push(0.0);
            rows.communication_share.push(0.0);
            rows.base_ns.push(2_000.0);
        }
        let mut config = TrainConfig::default();
        config.lightgbm.num_iterations = 100;
        config.lightgbm.num_threads = 1;
        let model = Regressor::fit(&rows, &config).unwrap();
        let pred = model.predict(&rows).unwrap();
        let mre: f64 = pred
            .iter()
            .zip(&rows.target_ns)
            .map(|(p, t)| (p - t).abs() / t)
            .sum::<f64>()
            / pred.len() as f64;
        assert!(mre < 0.05, "MRE {mre}");
        let importance = model.importance().unwrap();
        assert!(importance[0] > 10.0 * importance[1], "{importance:?}");
    }
}

//! `train.toml`: the split, the model's inputs and LightGBM's parameters.
//! Every field has a default (see [`TrainConfig::default`] and
//! `schemas/FORMATS.md` "Train config"), so an empty file is valid; the CLI's
//! flags override the file.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::TrainError;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// W and S the feature table must have been built with; absent: whatever it has.
    pub window: Option<usize>,
    pub stride: Option<usize>,
    pub split: SplitConfig,
    pub model: ModelConfig,
    pub lightgbm: LightGbmConfig,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitKind {
    /// Traces dealt into `folds` folds at random.
    Random,
    /// One fold per model family (the label's `model`).
    ByModel,
    /// One fold per batch size.
    ByBatch,
    /// One fold per GPU type.
    ByGpu,
}

impl SplitKind {
    pub fn name(self) -> &'static str {
        match self {
            SplitKind::Random => "random",
            SplitKind::ByModel => "by-model",
            SplitKind::ByBatch => "by-batch",
            SplitKind::ByGpu => "by-gpu",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SplitConfig {
    pub kind: SplitKind,
    /// Folds of the random split (at most one per trace).
    pub folds: usize,
    /// Evaluate only these groups (model names, batch sizes, GPU names); empty: every group in turn.
    pub holdout: Vec<String>,
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetTransform {
    /// Fit ln(1 + target in µs): relative errors weigh alike across window sizes.
    Log,
    /// Fit ln(1 + target in µs) - ln(1 + base in µs), the base being the
    /// roofline estimate plus 2 µs per item (`dataset::base_ns`): the model
    /// learns how far real time is from the physical estimate, which carries
    /// what-ifs on batch size and GPU beyond the training data (see
    /// `dataset::base_ns`), but only as well as the FLOP and byte estimates.
    Roofline,
    /// Fit the target in µs as it is: errors weigh by absolute size.
    None,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    pub target_transform: TargetTransform,
    /// Input columns to leave out, beyond the measured ones that are always left out.
    pub exclude: Vec<String>,
}

/// LightGBM parameters (names as in LightGBM's documentation); passed as they are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LightGbmConfig {
    pub num_iterations: u32,
    pub learning_rate: f64,
    pub num_leaves: u32,
    pub min_data_in_leaf: u32,
    pub feature_fraction: f64,
    pub bagging_fraction: f64,
    pub bagging_freq: u32,
    pub lambda_l2: f64,
    pub max_bin: u32,
    /// 0: LightGBM's default (OpenMP's thread count, one per core).
    pub num_threads: u32,
    pub seed: u64,
}

impl Default for SplitConfig {
    fn default() -> Self {
        SplitConfig {
            kind: SplitKind::Random,
            folds: 5,
            holdout: Vec::new(),
            seed: 42,
        }
    }
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            target_transform: TargetTransform::Log,
            exclude: Vec::new(),
        }
    }
}

impl Default for LightGbmConfig {
    fn default() -> Self {
        LightGbmConfig {
            num_iterations: 300,
            learning_rate: 0.05,
            num_leaves: 63,
            min_data_in_leaf: 20,
            feature_fraction: 0.8,
            bagging_fraction: 0.8,
            bagging_freq: 1,
            lambda_l2: 1.0,
            max_bin: 255,
            num_threads: 0,
            seed: 42,
        }
    }
}

impl TrainConfig {
    pub fn load(path: &Path) -> Result<TrainConfig, TrainError> {
        let text = std::fs::read_to_string(path).map_err(|source| TrainError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let config: TrainConfig = toml::from_str(&text).map_err(|e| TrainError::Config {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        config.validate().map_err(|reason| TrainError::Config {
            path: path.to_path_buf(),
            reason,
        })?;
        Ok(config)
    }

    /// Checks the values LightGBM would otherwise reject deep inside training.
    pub fn validate(&self) -> Result<(), String> {
        let l = &self.lightgbm;
        if l.num_iterations == 0 {
            return Err("lightgbm.num_iterations must be at least 1".into());
        }
        if !(l.learning_rate > 0.0 && l.learning_rate.is_finite()) {
            return Err(format!(
                "lightgbm.learning_rate {} must be a positive number",
                l.learning_rate
            ));
        }
        if l.num_leaves < 2 {
            return Err("lightgbm.num_leaves must be at least 2".into());
        }
        for (name, v) in [
            ("feature_fraction", l.feature_fraction),
            ("bagging_fraction", l.bagging_fraction),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(format!("lightgbm.{name} {v} must be in (0, 1]"));
            }
        }
        if self.split.folds < 2 && self.split.kind == SplitKind::Random {
            return Err("split.folds must be at least 2".into());
        }
        if let (Some(w), Some(s)) = (self.window, self.stride)
            && (s == 0 || s > w || (w - s) % 2 != 0)
        {
            return Err(format!("window {w} / stride {s}: S must be in 1..=W with W - S even"));
        }
        Ok(())
    }

    /// LightGBM's parameter object for a regression on the transformed target.
    pub fn lightgbm_params(&self) -> serde_json::Value {
        let l = &self.lightgbm;
        let mut params = serde_json::json!({
            "objective": "regression",
            "num_iterations": l.num_iterations,
            "learning_rate": l.learning_rate,
            "num_leaves": l.num_leaves,
            "min_data_in_leaf": l.min_data_in_leaf,
            "feature_fraction": l.feature_fraction,
            "bagging_fraction": l.bagging_fraction,
            "bagging_freq": l.bagging_freq,
            "lambda_l2": l.lambda_l2,
            "max_bin": l.max_bin,
            "seed": l.seed,
            "deterministic": true,
            "force_row_wise": true,
            "verbosity": -1,
        });
        if l.num_threads > 0 {
            params["num_threads"] = l.num_threads.into();
        }
        params
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_the_defaults() {
        let config: TrainConfig = toml::from_str("").unwrap();
        assert_eq!(config, TrainConfig::default());
    }

    #[test]
    fn unknown_fields_and_bad_values_are_refused() {
        assert!(toml::from_str::<TrainConfig>("[lightgbm]\nnum_leafs = 3").is_err());
        let config: TrainConfig = toml::from_str("[lightgbm]\nlearning_rate = 0").unwrap();
        assert!(config.validate().unwrap_err().contains("learning_rate"));
        let config: TrainConfig = toml::from_str("window = 16\nstride = 3").unwrap();
        assert!(config.validate().unwrap_err().contains("W - S even"));
        let config: TrainConfig = toml::from_str("[split]\nkind = \"by-gpu\"").unwrap();
        assert_eq!(config.split.kind, SplitKind::ByGpu);
    }
}

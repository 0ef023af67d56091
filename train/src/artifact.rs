//! The model directory: LightGBM's own text model (`model.txt`) and the card
//! (`model.json`) that says what it was trained on and how to feed it
//! (`schemas/FORMATS.md` "Model directory").

use std::path::{Path, PathBuf};

use lightgbm3::Booster;
use serde::{Deserialize, Serialize};
use tracecast_schemas::features::{FORMAT_VERSION as FEATURE_FORMAT_VERSION, WINDOW_INPUTS_SINCE};
use tracecast_schemas::model::{MODEL_FORMAT, MODEL_VERSION};

use crate::TrainError;
use crate::booster::Regressor;
use crate::config::{LightGbmConfig, SplitConfig, TargetTransform};
use crate::evaluate::PredictorErrors;
use crate::metrics::Errors;
use crate::table::FeatureTable;

pub const CARD_FILE: &str = "model.json";
pub const BOOSTER_FILE: &str = "model.txt";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelCard {
    pub format: String,
    pub format_version: u32,
    pub tracecast_version: String,
    /// Version of the feature directory format the inputs come from.
    pub feature_format_version: u32,
    pub window: usize,
    pub stride: usize,
    /// Input names in LightGBM's column order.
    pub features: Vec<String>,
    pub target_transform: TargetTransform,
    pub split: SplitConfig,
    pub lightgbm: LightGbmConfig,
    pub training_data: TrainingData,
    /// Cross-validated errors of the window model and the baselines (see report.md).
    pub metrics: Vec<PredictorErrors>,
    pub window_span_only: Option<Errors>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrainingData {
    pub features_dir: String,
    /// blake3 (16 hex digits) of the feature directory's part files.
    pub content_hash: String,
    pub labels: Option<String>,
    pub traces: usize,
    pub steps: usize,
    pub windows: usize,
    /// GPUs of the training traces, as their profiles name them.
    pub gpus: Vec<String>,
    /// Model names of the training traces (from the labels).
    pub models: Vec<String>,
}

/// A trained model, ready to predict.
pub struct Model {
    pub card: ModelCard,
    pub regressor: Regressor,
}

impl Model {
    pub fn save(&self, dir: &Path) -> Result<(), TrainError> {
        let write_err = |path: PathBuf| move |source| TrainError::Write { path, source };
        std::fs::create_dir_all(dir).map_err(write_err(dir.to_path_buf()))?;
        let booster_path = dir.join(BOOSTER_FILE);
        let text = self.regressor.booster.save_string()?;
        write_atomic(&booster_path, text.as_bytes()).map_err(write_err(booster_path.clone()))?;
        let card_path = dir.join(CARD_FILE);
        let json = serde_json::to_string_pretty(&self.card).expect("the card serializes");
        write_atomic(&card_path, json.as_bytes()).map_err(write_err(card_path.clone()))
    }

    pub fn load(dir: &Path) -> Result<Model, TrainError> {
        let card_path = dir.join(CARD_FILE);
        let card_text = std::fs::read_to_string(&card_path).map_err(|source| TrainError::Read {
            path: card_path.clone(),
            source,
        })?;
        let booster_path = dir.join(BOOSTER_FILE);
        let booster_text = std::fs::read_to_string(&booster_path).map_err(|source| TrainError::Read {
            path: booster_path.clone(),
            source,
        })?;
        Model::from_texts(&card_text, &card_path, &booster_text, &booster_path)
    }

    /// A model from its card's and booster's texts; the paths name them in errors.
    pub fn from_texts(
        card_text: &str,
        card_path: &Path,
        booster_text: &str,
        booster_path: &Path,
    ) -> Result<Model, TrainError> {
        let bad = |reason: String| TrainError::Model {
            path: card_path.to_path_buf(),
            reason,
        };
        let value: serde_json::Value = serde_json::from_str(card_text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let (format, version) = (value["format"].as_str(), value["format_version"].as_u64());
        if format != Some(MODEL_FORMAT) || version != Some(u64::from(MODEL_VERSION)) {
            return Err(bad(format!(
                "{} version {}; this tracecast reads {MODEL_FORMAT} version {MODEL_VERSION}",
                format.unwrap_or("(no format)"),
                version.map_or("?".into(), |v| v.to_string())
            )));
        }
        let card: ModelCard = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        if !(WINDOW_INPUTS_SINCE..=FEATURE_FORMAT_VERSION).contains(&card.feature_format_version) {
            return Err(bad(format!(
                "the model was trained on feature format version {}, and this tracecast builds version {FEATURE_FORMAT_VERSION} \
                 (whose window inputs mean what they did since version {WINDOW_INPUTS_SINCE}): \
                 its inputs would not mean the same; retrain it with `tracecast train`",
                card.feature_format_version
            )));
        }
        let booster = Booster::from_string(booster_text).map_err(|e| TrainError::Model {
            path: booster_path.to_path_buf(),
            reason: format!("not a LightGBM model: {e}"),
        })?;
        let names = booster.feature_name()?;
        if names != card.features {
            return Err(TrainError::Model {
                path: booster_path.to_path_buf(),
                reason: format!(
                    "its {} inputs are not the {} that {CARD_FILE} lists: the two files come from different trainings",
                    names.len(),
                    card.features.len()
                ),
            });
        }
        Ok(Model {
            regressor: Regressor {
                booster,
                transform: card.target_transform,
                fit_seconds: 0.0,
            },
            card,
        })
    }

    /// The window model that ships with tracecast (`train/model/default`,
    /// made by `make default-model`): `predict` uses it when given no
    /// `--model`.
    pub fn shipped() -> Result<Model, TrainError> {
        Model::from_texts(
            include_str!("../model/default/model.json"),
            Path::new("<built-in window model: train/model/default/model.json>"),
            include_str!("../model/default/model.txt"),
            Path::new("<built-in window model: train/model/default/model.txt>"),
        )
    }

    /// Refuses a feature table this model cannot read, saying why.
    pub fn check_table(&self, table: &FeatureTable) -> Result<(), TrainError> {
        if (table.window, table.stride) != (self.card.window, self.card.stride) {
            return Err(TrainError::Features {
                path: table.dir.clone(),
                reason: format!(
                    "built with W={} S={}, and the model needs W={} S={}: run `tracecast features --window {} --stride {}`",
                    table.window, table.stride, self.card.window, self.card.stride, self.card.window, self.card.stride
                ),
            });
        }
        Ok(())
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

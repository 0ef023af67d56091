//! The op model that ships with tracecast: fitted by
//! `tracecast ops train --public ../shared/public` on NeuSight's measurements
//! (MIT-licensed data; ETS's unlicensed files are not trained on), so that
//! `predict --gpu` is physical right after install.

use std::path::Path;

use crate::{OpModel, OpModelError};

const SHIPPED: &str = include_str!("../model/opmodel.json");

/// The built-in op model.
pub fn shipped_model() -> Result<OpModel, OpModelError> {
    OpModel::from_json(SHIPPED, Path::new("<built-in op model: opmodel/model/opmodel.json>"))
}

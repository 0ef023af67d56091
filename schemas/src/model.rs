//! The model directory written by `tracecast train` and read by
//! `tracecast predict` (`schemas/FORMATS.md` "Model directory").

/// `format` of `model.json`.
pub const MODEL_FORMAT: &str = "tracecast.model";
/// Version of the model directory format. Bump it when a field of
/// `model.json` is removed or changes meaning.
pub const MODEL_VERSION: u32 = 1;
/// `format` of `metrics.json`.
pub const METRICS_FORMAT: &str = "tracecast.train-metrics";
pub const METRICS_VERSION: u32 = 1;

//! Reading and writing a feature directory's `features.json`
//! (`tracecast_schemas::features::FeatureManifest`): the commit point; part
//! files it does not list are leftovers of a run that died, and are removed
//! by the next run.

use std::path::Path;

use tracecast_schemas::features::{FeatureManifest, MANIFEST_FILE};

use crate::FeaturesError;

/// The manifest of `dir`, None for a directory that has none yet.
pub fn read(dir: &Path) -> Result<Option<FeatureManifest>, FeaturesError> {
    let path = dir.join(MANIFEST_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(FeaturesError::Io {
                path: path.display().to_string(),
                source,
            });
        }
    };
    FeatureManifest::from_json(&text)
        .map(Some)
        .map_err(|reason| FeaturesError::BadOutput {
            dir: dir.display().to_string(),
            reason: format!("{reason} (use a new --out)"),
        })
}

/// Writes the manifest whole (temporary file, then rename).
pub fn write(manifest: &FeatureManifest, dir: &Path) -> Result<(), FeaturesError> {
    let path = dir.join(MANIFEST_FILE);
    let tmp = dir.join(format!("{MANIFEST_FILE}.tmp"));
    let text = serde_json::to_string_pretty(manifest).expect("the manifest serialises");
    std::fs::write(&tmp, text + "\n")
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|source| FeaturesError::Io {
            path: path.display().to_string(),
            source,
        })
}

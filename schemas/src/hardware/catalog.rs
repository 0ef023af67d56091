//! Profiles by GPU name: every name, alias and file stem of a directory's
//! profiles, normalised the way drivers and datasheets disagree.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::{HardwareError, HardwareProfile};

/// The key a GPU name is looked up by: lower case, single spaces, without a
/// leading "NVIDIA " (drivers and datasheets disagree on whether to add it).
pub fn normalize_gpu_name(name: &str) -> String {
    let lower = name.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    match lower.strip_prefix("nvidia ") {
        Some(rest) if !rest.is_empty() => rest.to_string(),
        _ => lower,
    }
}

/// All profiles in a directory, looked up by name, alias or file stem.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    entries: Vec<(PathBuf, HardwareProfile)>,
    index: HashMap<String, usize>,
}

impl Catalog {
    /// Load every `*.toml` profile and `*.json` spec sheet in `dir` (not
    /// recursive), in file-name order.
    /// Fails on the first invalid file, and when two files claim one name.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Catalog, HardwareError> {
        let dir = dir.as_ref();
        let read_err = |source| HardwareError::Read {
            path: dir.to_path_buf(),
            source,
        };
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(read_err)? {
            let path = entry.map_err(read_err)?.path();
            if path.extension().is_some_and(|e| e == "toml" || e == "json") && path.is_file() {
                paths.push(path);
            }
        }
        if paths.is_empty() {
            return Err(HardwareError::EmptyCatalog {
                path: dir.to_path_buf(),
            });
        }
        paths.sort();
        let mut catalog = Catalog::default();
        for path in paths {
            let profile = HardwareProfile::load(&path)?;
            catalog.insert(path, profile)?;
        }
        Ok(catalog)
    }

    /// Add one profile; `path` is where it came from (its stem becomes a key).
    pub fn insert(&mut self, path: PathBuf, profile: HardwareProfile) -> Result<(), HardwareError> {
        let pos = self.entries.len();
        let mut keys: Vec<String> = profile.names().map(normalize_gpu_name).collect();
        if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
            keys.push(normalize_gpu_name(stem));
        }
        keys.sort();
        keys.dedup();
        for key in &keys {
            if let Some(&other) = self.index.get(key) {
                return Err(HardwareError::DuplicateName {
                    path,
                    other: self.entries[other].0.clone(),
                    key: key.clone(),
                });
            }
        }
        for key in keys {
            self.index.insert(key, pos);
        }
        self.entries.push((path, profile));
        Ok(())
    }

    /// The profile for a GPU name as a trace, a user or a datasheet writes it:
    /// case-insensitive, with or without "NVIDIA ", or the file stem
    /// (`a100-sxm4-80gb`). No fuzzy matching: pricing a trace on the wrong
    /// GPU silently is worse than saying "unknown GPU".
    pub fn resolve(&self, gpu_name: &str) -> Option<&HardwareProfile> {
        self.index
            .get(&normalize_gpu_name(gpu_name))
            .map(|&i| &self.entries[i].1)
    }

    /// The file a resolved profile came from.
    pub fn path_of(&self, gpu_name: &str) -> Option<&Path> {
        self.index
            .get(&normalize_gpu_name(gpu_name))
            .map(|&i| self.entries[i].0.as_path())
    }

    pub fn profiles(&self) -> impl Iterator<Item = (&Path, &HardwareProfile)> {
        self.entries.iter().map(|(p, h)| (p.as_path(), h))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

//! What can go wrong reading, validating or writing a hardware profile.

use std::path::PathBuf;

/// Errors reading, validating or writing hardware profiles. Each names the
/// file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum HardwareError {
    #[error("{}: cannot read: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: cannot write: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{}: not a valid hardware profile: {source}", path.display())]
    Parse {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
    #[error("{}: format_version {found} is not supported (this build reads {supported})", path.display())]
    Version { path: PathBuf, found: u32, supported: u32 },
    #[error("{}: field `{field}`: {reason}", path.display())]
    Invalid {
        path: PathBuf,
        field: String,
        reason: String,
    },
    #[error("cannot serialize hardware profile `{name}`: {source}")]
    Serialize { name: String, source: toml::ser::Error },
    #[error("{}: GPU name `{key}` is also claimed by {}", path.display(), other.display())]
    DuplicateName { path: PathBuf, other: PathBuf, key: String },
    #[error("{}: no hardware profiles (*.toml) or spec sheets (*.json) found", path.display())]
    EmptyCatalog { path: PathBuf },
}

/// A validation failure before it is tied to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

impl FieldError {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

//! Typed errors that name the file, the line and the reason.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// One bad cell: `jobs.csv line 17: column `num_gpu`: `abc` is not an integer`.
    #[error("{} line {line}: column `{column}`: {reason}", path.display())]
    Field {
        path: PathBuf,
        line: u64,
        column: String,
        reason: String,
    },
    #[error("{} line {line}: {reason}", path.display())]
    Line { path: PathBuf, line: u64, reason: String },
    #[error("{}: {reason}", path.display())]
    File { path: PathBuf, reason: String },
    /// Inputs that are each valid but do not fit together (a job type the table does not price, ...).
    #[error("{0}")]
    Inconsistent(String),
    #[error(transparent)]
    Verify(#[from] VerifyError),
}

/// A schedule that breaks the rules it is replayed under (`verify::verify`).
#[derive(Debug, thiserror::Error)]
#[error("schedule rejected: {} problem(s):\n  {}{}", .count, .problems.join("\n  "), if *.count > .problems.len() { "\n  ..." } else { "" })]
pub struct VerifyError {
    pub count: usize,
    /// The first problems found (at most 20).
    pub problems: Vec<String>,
}

pub type Result<T> = std::result::Result<T, PlanError>;

impl PlanError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        PlanError::Io {
            path: path.into(),
            source,
        }
    }
    pub fn file(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        PlanError::File {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

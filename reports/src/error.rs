//! The crate's one error type.

use std::io;
use std::path::PathBuf;

/// Why reading, merging or writing a report failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The JSON names a format other than `vigil-report/1`; reading it as
    /// ours would silently misread fields.
    #[error("unsupported report format '{0}' (expected '{expected}')", expected = crate::FORMAT)]
    UnsupportedFormat(String),
    #[error("invalid report JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no reports to merge")]
    NothingToMerge,
    /// Two shards ran the same case; merging would count it twice.
    #[error("case '{0}' appears in more than one report")]
    DuplicateCase(String),
    /// Some reports are shards and some are not: not the files of one run.
    #[error("cannot merge a whole-run report with shard reports (such as shard {0})")]
    WholeRunWithShards(crate::Shard),
    #[error("cannot merge shards of different partitions: {first} and {other}")]
    ShardCountMismatch {
        first: crate::Shard,
        other: crate::Shard,
    },
    #[error("shard {0} is given more than once")]
    DuplicateShard(crate::Shard),
    /// The merge would look like a whole run without being one.
    #[error("missing shards: {0}")]
    MissingShards(String),
    #[error("cannot merge reports of different modes: '{first}' and '{other}'")]
    ModeMismatch { first: String, other: String },
    #[error("cannot merge reports of different Vigil versions: '{first}' and '{other}'")]
    VersionMismatch { first: String, other: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ReportError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> ReportError {
        ReportError::Io {
            path: path.into(),
            source,
        }
    }
}

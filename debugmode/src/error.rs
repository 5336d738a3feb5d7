//! What can stop DebugMode from checking a graph at all (findings are not
//! errors: they are the result).

/// Why a check could not run.
#[derive(Debug, thiserror::Error)]
pub enum DebugError {
    /// The graph could not be prepared or run (bad graph, missing feed,
    /// an op that failed in the in-place run).
    #[error(transparent)]
    Engine(#[from] vigil_engine::Error),
    /// The minimizer was given a graph that does not fail (as asked).
    #[error("nothing to minimize: {0}")]
    NotFailing(String),
    /// A `--checks` name that is not a check.
    #[error("unknown check '{0}' (known: {known})", known = crate::Check::names().join(", "))]
    UnknownCheck(String),
}

pub type Result<T, E = DebugError> = std::result::Result<T, E>;

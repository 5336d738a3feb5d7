//! Why a training step could not be built or run.

/// An error of the optimizers or the [`crate::Trainer`].
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error(transparent)]
    Engine(#[from] vigil_engine::Error),
    #[error(transparent)]
    Autodiff(#[from] vigil_autodiff::AutodiffError),
    /// The forward graph has no float parameter to train.
    #[error("graph '{0}' has no float Parameter variables to train")]
    NoParameters(String),
    /// An output the trainer reads (loss, logits) was not produced.
    #[error("output '{0}' was not computed")]
    MissingOutput(String),
    /// A feed the trainer reads (labels) is missing or not integer.
    #[error("feed '{name}': {msg}")]
    BadFeed { name: String, msg: String },
}

pub type Result<T, E = TrainError> = std::result::Result<T, E>;

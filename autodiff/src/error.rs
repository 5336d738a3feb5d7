//! Why a gradient graph could not be built.

/// An error of [`crate::grad`] or a gradient rule.
#[derive(Debug, thiserror::Error)]
pub enum AutodiffError {
    /// Building or validating a graph failed.
    #[error(transparent)]
    Engine(#[from] vigil_engine::Error),
    /// A name given as the loss or in `wrt` is not a variable of the graph.
    #[error("graph '{graph}' has no variable '{name}'")]
    UnknownVariable { graph: String, name: String },
    /// The loss is not one float element.
    #[error("loss '{name}' must be a float scalar (one element), it is {ty}")]
    LossNotScalar { name: String, ty: String },
    /// Only float variables have gradients.
    #[error("'{name}' is {dtype}; only float variables have gradients")]
    NotFloat { name: String, dtype: String },
    /// The gradient must flow through a node whose op has no rule.
    #[error("node '{node}': op '{op}' has no gradient rule (register one in a GradRegistry)")]
    NoRule { node: String, op: String },
    /// A rule cannot differentiate this node (it needs a shape that is only
    /// known at run time, say).
    #[error("node '{node}': {msg}")]
    Rule { node: String, msg: String },
}

pub type Result<T, E = AutodiffError> = std::result::Result<T, E>;

//! The engine's error type. Every message names what is wrong: the node, the
//! file, the field or the value; the variant names the cause, so a caller
//! (or a test) branches on the variant, never on the message.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An op or tensor operation failed for a reason no other variant
    /// names (an index out of range, a value the op cannot take). An
    /// op written outside the engine returns it with [`Error::op`].
    #[error("{0}")]
    Op(String),
    /// An index value outside its axis: a gather index, a view's point, a
    /// class label.
    #[error("{0}")]
    Index(String),
    /// An index vector that breaks the encoding `IndexSpec::decode` reads
    /// (an unknown kind, a wrong length, a slot with a value it cannot take).
    #[error("{0}")]
    IndexEncoding(String),
    /// An input's dtype is not one the op takes.
    #[error("{0}")]
    DType(String),
    /// Shapes that do not fit together (broadcasting, contracted dims, a
    /// reshape's element count, a bias of the wrong length).
    #[error("{0}")]
    Shape(String),
    /// A rank the op cannot take (a 0-d input where an axis is needed) or
    /// above `tensor::limit::MAX_RANK`.
    #[error("{0}")]
    Rank(String),
    /// The wrong number of inputs for the op.
    #[error("{0}")]
    Arity(String),
    /// An attr that is missing, of the wrong type, or out of range.
    #[error("{0}")]
    Attr(String),
    /// A layout the operation cannot take (a broadcast view written to, a
    /// view reaching outside its buffer, a non-contiguous layout).
    #[error("{0}")]
    Layout(String),
    /// Something valid that the engine does not implement.
    #[error("{0}")]
    Unsupported(String),
    /// An error attributed to a graph node: the executor and the graph
    /// constructors add the node once ([`Error::at_node`]).
    #[error("node '{node}': {source}")]
    Node { node: String, source: Box<Error> },
    /// One allocation is larger than the configured limit.
    #[error("{}allocation of {} exceeds the limit of {}", node_prefix(.node), human_bytes(*.bytes), human_bytes(*.limit))]
    AllocTooLarge {
        node: Option<String>,
        bytes: u64,
        limit: u64,
    },
    /// A kernel tried to write a buffer that is also being read.
    #[error("{}aliasing violation: {msg}", node_prefix(.node))]
    Aliasing { node: Option<String>, msg: String },
    /// A kernel tried to write a buffer lent read-only (see
    /// `exec::Lent`): a value the run promised not to change.
    #[error("{}write to read-only buffer {buffer} (a value lent to the run for reading only)", node_prefix(.node))]
    ReadOnly { node: Option<String>, buffer: u64 },
    /// An op refused the output buffer the caller supplied (wrong dtype,
    /// shape or a self-overlapping layout).
    #[error("{}pre-allocated output {output}: {msg}", node_prefix(.node))]
    PreallocRefused {
        node: Option<String>,
        output: usize,
        msg: String,
    },
    /// The graph breaks the destroy handler's rules; each violation names
    /// its [`Rule`].
    #[error("graph '{graph}' breaks the view/destroy rules: {}", join_violations(.violations))]
    Rules {
        graph: String,
        violations: Vec<Violation>,
    },
    /// An execution order given to [`crate::Executor::with_order`] is not
    /// valid for the graph.
    #[error("invalid order for graph '{graph}': {msg}")]
    InvalidOrder { graph: String, msg: String },
    /// A feed the run cannot take; `input` names the graph input (or the
    /// name fed that is no input), `fault` says what is wrong with it.
    #[error("{msg}")]
    Feed {
        input: String,
        fault: FeedFault,
        msg: String,
    },
    /// The graph is malformed.
    #[error("{0}")]
    Graph(String),
    /// A file could not be read or written, or its content is invalid.
    #[error("{}: {msg}", .path.display())]
    File { path: PathBuf, msg: String },
    /// A .npy file (or image) that cannot be read: `source` says why.
    #[error("{}: {source}", .path.display())]
    Npy { path: PathBuf, source: NpyError },
}

/// Why a .npy file cannot be read (the path is added by [`Error::Npy`]).
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// Not a .npy file: too short, no magic string, or a version the reader
    /// does not know.
    #[error("{0}")]
    Preamble(String),
    /// The header is too long, not text, or not a valid header dict.
    #[error("{0}")]
    Header(String),
    /// 'descr' names a dtype Vigil does not have.
    #[error("{0}")]
    DType(String),
    /// The shape has more elements or dimensions than a tensor may.
    #[error("{0}")]
    Shape(String),
    /// The file holds less data than the header declares.
    #[error("{0}")]
    Truncated(String),
    /// The array is larger than the allocation limit
    /// ([`Error::AllocTooLarge`]).
    #[error(transparent)]
    Alloc(Box<Error>),
    /// The data could not be read after the header was accepted.
    #[error("{0}")]
    Data(String),
}

/// What is wrong with a feed ([`Error::Feed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FeedFault {
    /// A declared input has no value.
    Missing,
    /// The name fed is not an input or parameter of the graph.
    Unknown,
    /// The value's dtype or shape is not what the graph declares.
    Mismatch,
    /// The value's rank is above `tensor::limit::MAX_RANK`.
    Rank,
    /// The value shares a buffer with another source value, and one of
    /// them is overwritten in place.
    Shared,
}

/// A rule of the destroy handler (`crate::destroy`) that a graph, or a
/// proposed rewrite, breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// a. A constant, protected input or graph output would be destroyed.
    Protected,
    /// b. Two nodes destroy one root.
    TwoDestroyers,
    /// c. A destroyer also reads a view of the root it destroys.
    ReadsDestroyed,
    /// d. The destroy orderings form a cycle.
    Cycle,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::Protected => "protected",
            Rule::TwoDestroyers => "two_destroyers",
            Rule::ReadsDestroyed => "reads_destroyed",
            Rule::Cycle => "cycle",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One broken rule, with the nodes involved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub rule: Rule,
    pub nodes: Vec<String>,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}]", self.message, self.rule)
    }
}

fn join_violations(v: &[Violation]) -> String {
    v.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

fn node_prefix(node: &Option<String>) -> String {
    match node {
        Some(n) => format!("node '{n}': "),
        None => String::new(),
    }
}

/// Bytes as a short human figure with the exact count, e.g. `1.5 GiB (1610612736 bytes)`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} bytes")
    } else {
        format!("{v:.1} {} ({b} bytes)", UNITS[u])
    }
}

impl Error {
    /// Attributes an op-level error to `node`. Errors that already name a
    /// node or a file are returned unchanged.
    pub fn at_node(self, node: &str) -> Error {
        match self {
            Error::Op(_)
            | Error::Index(_)
            | Error::IndexEncoding(_)
            | Error::DType(_)
            | Error::Shape(_)
            | Error::Rank(_)
            | Error::Arity(_)
            | Error::Attr(_)
            | Error::Layout(_)
            | Error::Unsupported(_) => Error::node(node, self),
            Error::Aliasing { node: None, msg } => Error::Aliasing {
                node: Some(node.to_string()),
                msg,
            },
            Error::ReadOnly { node: None, buffer } => Error::ReadOnly {
                node: Some(node.to_string()),
                buffer,
            },
            Error::PreallocRefused {
                node: None,
                output,
                msg,
            } => Error::PreallocRefused {
                node: Some(node.to_string()),
                output,
                msg,
            },
            Error::AllocTooLarge {
                node: None,
                bytes,
                limit,
            } => Error::AllocTooLarge {
                node: Some(node.to_string()),
                bytes,
                limit,
            },
            other => other,
        }
    }

    /// `source`, attributed to `node`.
    pub fn node(node: &str, source: Error) -> Error {
        Error::Node {
            node: node.to_string(),
            source: Box::new(source),
        }
    }

    /// The error for anything wrong that no other variant names; what an
    /// op written outside the engine returns (see docs/kernel-authors.md).
    pub fn op(msg: impl Into<String>) -> Error {
        Error::Op(msg.into())
    }

    /// The error without its node context: the variant that names the cause.
    pub fn cause(&self) -> &Error {
        match self {
            Error::Node { source, .. } => source.cause(),
            other => other,
        }
    }

    /// A feed the run refuses: `input` and what is wrong with it.
    pub fn feed(input: &str, fault: FeedFault, msg: impl Into<String>) -> Error {
        Error::Feed {
            input: input.to_string(),
            fault,
            msg: msg.into(),
        }
    }

    /// A .npy file that cannot be read, and why.
    pub fn npy(path: impl Into<PathBuf>, source: NpyError) -> Error {
        Error::Npy {
            path: path.into(),
            source,
        }
    }

    pub fn file(path: impl Into<PathBuf>, msg: impl std::fmt::Display) -> Error {
        Error::File {
            path: path.into(),
            msg: msg.to_string(),
        }
    }
}

/// Shorthand for an [`Error::Op`] result.
pub fn op_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Op(msg.into()))
}

/// Shorthand for an [`Error::Index`] result.
pub fn index_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Index(msg.into()))
}

/// Shorthand for an [`Error::IndexEncoding`] result.
pub fn index_encoding_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::IndexEncoding(msg.into()))
}

/// Shorthand for an [`Error::DType`] result.
pub fn dtype_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::DType(msg.into()))
}

/// The [`Error::DType`] of op `op` given `dtype`, which it does not compute
/// in: bool, or a storage-only format (float8, float4, 4- and 2-bit
/// integers). What a kernel dispatch that falls through returns, naming
/// the dtype it got.
pub fn refuse_dtype<T>(op: &str, dtype: crate::DType) -> Result<T> {
    dtype_err(format!("op '{op}' does not take {dtype} inputs (cast first)"))
}

/// Shorthand for an [`Error::Shape`] result.
pub fn shape_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Shape(msg.into()))
}

/// Shorthand for an [`Error::Rank`] result.
pub fn rank_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Rank(msg.into()))
}

/// Shorthand for an [`Error::Arity`] result.
pub fn arity_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Arity(msg.into()))
}

/// Shorthand for an [`Error::Attr`] result.
pub fn attr_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Attr(msg.into()))
}

/// Shorthand for an [`Error::Layout`] result.
pub fn layout_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Layout(msg.into()))
}

/// Shorthand for an [`Error::Unsupported`] result.
pub fn unsupported_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Unsupported(msg.into()))
}

/// Asserts that an error's cause (under any [`Error::Node`] wrappers) is
/// the variant named, and that its message names each item given: what a
/// test of an op's refusal checks, without depending on the wording.
///
/// ```
/// use vigil_engine::{assert_cause, Error};
/// let e = Error::node("n1", Error::Attr("attr 'axis' is 5, out of range".into()));
/// assert_cause!(e, Attr, "'axis'", "5");
/// ```
#[macro_export]
macro_rules! assert_cause {
    ($e:expr, $variant:ident $(, $name:expr)* $(,)?) => {{
        let e: &$crate::Error = &$e;
        assert!(
            matches!(e.cause(), $crate::Error::$variant(..)),
            "expected Error::{}: {e:?}",
            stringify!($variant)
        );
        let _message = e.to_string();
        $(assert!(_message.contains($name), "the message does not name {:?}: {_message}", $name);)*
    }};
}

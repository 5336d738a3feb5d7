//! What can go wrong importing a model. Every variant renders as one line
//! that names the file, node, op or tensor, so the CLI can print it as is.

use std::path::PathBuf;

/// An import failure; `vigil import` exits 2 on any of them.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// Decoding the file could make a single allocation past `--max-alloc`.
    #[error("{path}: {bytes} bytes; decoding it could take up to {need} bytes in one allocation, past the allocation limit of {limit} bytes (--max-alloc)")]
    TooLarge {
        path: PathBuf,
        bytes: u64,
        need: u64,
        limit: u64,
    },
    #[error("{path}: not a valid ONNX protobuf: {msg}")]
    Decode { path: PathBuf, msg: String },
    #[error("model has no graph")]
    NoGraph,
    #[error("node '{node}' ({op}): unsupported op (domain '{domain}')")]
    UnsupportedOp {
        node: String,
        op: String,
        domain: String,
    },
    #[error("opset {version} of domain '{domain}' is not supported (supported: {supported})")]
    UnsupportedOpset {
        domain: String,
        version: i64,
        supported: String,
    },
    #[error("{what}: unsupported dtype {dtype} (Vigil has {})", vigil_dtypes())]
    UnsupportedDtype { what: String, dtype: String },
    /// An external-data tensor where the model's file (and so its
    /// directory) is not known: a model decoded from bytes.
    #[error("tensor '{tensor}': its data is in an external file, and the model's directory is not known (import the model from its file)")]
    ExternalData { tensor: String },
    /// An external-data tensor that cannot be read as the model says.
    #[error("{}: tensor '{tensor}': external data: {msg}", model.display())]
    External {
        model: PathBuf,
        tensor: String,
        msg: String,
    },
    /// An external-data location that leads outside the model's directory.
    #[error("{}: tensor '{tensor}': external data location '{location}' {why}", model.display())]
    ExternalOutside {
        model: PathBuf,
        tensor: String,
        location: String,
        why: String,
    },
    /// `--shape` or a data set's input does not fit the declared input.
    #[error("graph input '{input}': {msg}")]
    BadShape { input: String, msg: String },
    #[error("tensor '{tensor}': {msg}")]
    BadTensor { tensor: String, msg: String },
    #[error("node '{node}' ({op}): attr '{attr}': {msg}")]
    BadAttr {
        node: String,
        op: String,
        attr: String,
        msg: String,
    },
    #[error("node '{node}' ({op}): {msg}")]
    Unsupported { node: String, op: String, msg: String },
    #[error("node '{node}' ({op}): input '{input}' is not defined")]
    UndefinedInput { node: String, op: String, input: String },
    #[error("node '{node}' ({op}): {source}")]
    Node {
        node: String,
        op: String,
        source: vigil_engine::Error,
    },
    #[error("graph input or output '{name}': {msg}")]
    BadValue { name: String, msg: String },
    #[error("{0}")]
    Engine(#[from] vigil_engine::Error),
}

pub type Result<T> = std::result::Result<T, ImportError>;

/// Vigil's dtype names, space-separated, for the unsupported-dtype error.
fn vigil_dtypes() -> String {
    let names: Vec<&str> = vigil_engine::DType::ALL.iter().map(|d| d.name()).collect();
    names.join(" ")
}

//! ONNX import: reads a `.onnx` model (with the `onnx-protobuf` crate's
//! pre-generated messages, no `protoc` needed) and translates it into a
//! Vigil graph, folding what is computable from constants at import time,
//! then writes it as a `vigil-graph/1` case. See docs/onnx.md.

#![forbid(unsafe_code)]

pub mod case;
pub mod error;
pub mod external;
mod fold;
pub mod import;
pub mod model;
mod ops;
pub mod tensor;

pub use case::{data_sets, feeds, model_dir, source_for, write_case, InputSource};
pub use error::{ImportError, Result};
pub use import::{import, import_with, sanitize, Imported, Initializers, Options};
pub use model::{decode_model, read_model, read_tensor_file};

/// The ONNX op types the importer translates (default domain, the
/// `ai.onnx.preview` ops of `ops::PREVIEW` and the `ai.onnx.ml` ops of
/// `ops::ML`), sorted, each with the first opset of its domain that
/// defines it. docs/onnx.md lists the same.
pub fn supported_ops() -> Vec<(&'static str, i64)> {
    let mut v: Vec<_> = ops::all().map(|op| (op.op_type, op.since_opset)).collect();
    v.sort_unstable();
    v
}

/// Imports `model` for a case fed from `src`: a test data set's inputs may
/// stand in where an op needs an import-time constant (a shape, axes,
/// pads; see [`import_with`]), so the case holds for those input values.
/// `vigil import` and `vigil run` on ONNX directories both come here.
pub fn import_for(model: &onnx_protobuf::ModelProto, opts: &Options, src: &InputSource) -> Result<Imported> {
    let known = match src {
        InputSource::DataSet(d) => Some(d.as_path()),
        _ => None,
    };
    import_with(model, opts, known)
}

/// Reads and imports the model at `path` (external data relative to its
/// directory).
pub fn import_file(path: &std::path::Path, opts: &Options) -> Result<Imported> {
    let opts = Options {
        model: Some(path.to_path_buf()),
        ..opts.clone()
    };
    import(&read_model(path)?, &opts)
}

/// Reads the model at `path` and imports it for a case fed from `src`
/// ([`import_for`]), its external data read relative to its directory.
/// `vigil import`, `vigil run` and the commands that take one case all come
/// here.
pub fn import_path(path: &std::path::Path, opts: &Options, src: &InputSource) -> Result<Imported> {
    let opts = Options {
        model: Some(path.to_path_buf()),
        ..opts.clone()
    };
    import_for(&read_model(path)?, &opts, src)
}

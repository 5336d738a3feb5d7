//! Reading ONNX files: the model, and the `TensorProto` files of the test
//! data sets (`input_K.pb`, `output_K.pb`).

use std::path::Path;

use onnx_protobuf::{Message, ModelProto, TensorProto};

use crate::error::{ImportError, Result};

/// Default-domain opsets whose semantics the importer implements, 1 to 28
/// (before 7, binary ops broadcast only with `broadcast = 1`, as `crate::ops`
/// handles). From 24 to 28 the ops it translates changed only their type
/// lists (and Cast's float8-only `saturate`/`round_mode`), checked against
/// the onnx 1.23 schemas.
pub const OPSETS: std::ops::RangeInclusive<i64> = 1..=28;

/// How many bytes one byte of protobuf can take once decoded, at most: a
/// packed repeated int64 holds a value in one byte of varint and eight in
/// memory.
pub const MAX_DECODE_GROWTH: u64 = 8;

/// Reads a file that may come from anyone: refused before it is read when
/// decoding it could pass the allocation limit.
fn read(path: &Path) -> Result<Vec<u8>> {
    let io = |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::metadata(path).map_err(io)?.len();
    let limit = vigil_engine::tensor::limit::alloc_limit();
    let need = bytes.saturating_mul(MAX_DECODE_GROWTH);
    if need > limit {
        return Err(ImportError::TooLarge {
            path: path.to_path_buf(),
            bytes,
            need,
            limit,
        });
    }
    std::fs::read(path).map_err(io)
}

/// Decodes a `.onnx` model file.
pub fn read_model(path: &Path) -> Result<ModelProto> {
    decode_model(&read(path)?, path)
}

/// Decodes model bytes; `path` only names the source in errors.
pub fn decode_model(bytes: &[u8], path: &Path) -> Result<ModelProto> {
    ModelProto::parse_from_bytes(bytes).map_err(|e| ImportError::Decode {
        path: path.to_path_buf(),
        msg: e.to_string(),
    })
}

/// Decodes a serialized `TensorProto` (a test data set's `.pb` file).
pub fn read_tensor_file(path: &Path) -> Result<TensorProto> {
    TensorProto::parse_from_bytes(&read(path)?).map_err(|e| ImportError::Decode {
        path: path.to_path_buf(),
        msg: e.to_string(),
    })
}

/// The default domain's opset version; other domains are refused only
/// when a node uses them.
pub fn default_opset(m: &ModelProto) -> Result<i64> {
    let v = m
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        .unwrap_or(1);
    if !OPSETS.contains(&v) {
        return Err(ImportError::UnsupportedOpset {
            domain: "ai.onnx".into(),
            version: v,
            supported: format!("{} to {}", OPSETS.start(), OPSETS.end()),
        });
    }
    Ok(v)
}

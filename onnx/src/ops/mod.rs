//! The ONNX op registry: each ONNX op type (default domain) maps to a
//! translation into Vigil ops, one file per family of ops. The table in
//! docs/onnx.md lists the same op types (a test holds the two together).
//!
//! Adding an op: write a [`Translate`] function in its family's file (or
//! in a new file whose `OPS` joins [`FAMILIES`]), list it in that file's
//! `OPS` as `Op::new("OpType", since_opset, translate)`, and give it a row
//! in docs/onnx.md. The helpers in [`emit`] read inputs and attrs and emit
//! nodes.

mod activation;
mod attention;
mod cast;
mod constant;
mod control;
pub(crate) mod emit;
mod generate;
mod image;
mod index;
mod layout;
mod linalg;
mod logic;
mod losses;
mod math;
mod ml;
mod nd;
mod nn;
mod norm;
mod quant;
mod recurrent;
mod reduce;
mod resize;
mod select;
mod shape;
mod signal;
mod softmax;
mod text;

use crate::error::{ImportError, Result};
use crate::import::{Importer, NodeCtx, Value};

/// Translates the ONNX node `c` into Vigil nodes and returns the value of
/// its output 0, which the importer binds. A translation reads inputs with
/// [`emit::input`]/[`emit::optional`] and attrs with `c.i`, `c.f`, `c.s`,
/// `c.ints`; emits its last node with [`emit::out`] (named after output 0)
/// and helper nodes with [`emit::step`]; binds any further output it
/// produces with `imp.bind`; and refuses what it does not implement with
/// `c.unsupported(..)` or `c.bad_attr(..)` (one line naming the node).
/// `imp.opset` is the model's default-domain opset, for translations
/// whose ONNX semantics changed between versions.
pub(crate) type Translate = fn(&mut Importer, &NodeCtx) -> Result<Value>;

/// One registry entry.
pub(crate) struct Op {
    /// The ONNX op type, as in `NodeProto.op_type`.
    pub op_type: &'static str,
    /// The first default-domain opset that defines the op (ONNX's operator
    /// history); later versions are handled inside `translate`.
    pub since_opset: i64,
    pub translate: Translate,
}

impl Op {
    pub(crate) const fn new(op_type: &'static str, since_opset: i64, translate: Translate) -> Op {
        Op {
            op_type,
            since_opset,
            translate,
        }
    }
}

/// The ops of domain `ai.onnx.preview` the registry also translates (their
/// since_opset is that domain's version).
pub(crate) const PREVIEW: &[&str] = &["FlexAttention"];

/// The ops of domain `ai.onnx.ml` the registry translates (their
/// since_opset is that domain's version); they are refused in any other
/// domain, and every other op in this one.
pub(crate) const ML: &[&str] = &["ArrayFeatureExtractor", "Binarizer", "TreeEnsemble"];

/// Every family's entries.
const FAMILIES: &[&[Op]] = &[
    math::OPS,
    activation::OPS,
    logic::OPS,
    nn::OPS,
    norm::OPS,
    linalg::OPS,
    shape::OPS,
    constant::OPS,
    cast::OPS,
    reduce::OPS,
    softmax::OPS,
    resize::OPS,
    index::OPS,
    layout::OPS,
    losses::OPS,
    nd::OPS,
    quant::OPS,
    select::OPS,
    generate::OPS,
    signal::OPS,
    recurrent::OPS,
    attention::OPS,
    control::OPS,
    text::OPS,
    image::OPS,
    ml::OPS,
];

/// Every registered op.
pub(crate) fn all() -> impl Iterator<Item = &'static Op> {
    FAMILIES.iter().flat_map(|f| f.iter())
}

/// The entry for `op_type`, if any.
pub(crate) fn find(op_type: &str) -> Option<&'static Op> {
    all().find(|op| op.op_type == op_type)
}

pub(crate) use math::gelu_tanh_of;

/// Translates one node; returns the value of its output 0.
pub(crate) fn import_node(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    match find(&c.op_type) {
        Some(op) => (op.translate)(imp, c),
        None => Err(ImportError::UnsupportedOp {
            node: c.onnx_name.clone(),
            op: c.op_type.clone(),
            domain: c.proto.domain.clone(),
        }),
    }
}

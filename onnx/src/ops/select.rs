//! Ops laid out by index values: OneHot, Compress, NonMaxSuppression,
//! Unique and NonZero (whose output lengths are decided when they run).

use vigil_engine::Attrs;

use super::emit::{const_ints, input, inputs_up_to, out, out_n};
use super::Op;
use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("OneHot", 9, one_hot),
    Op::new("Compress", 9, compress),
    Op::new("NonMaxSuppression", 10, non_max_suppression),
    Op::new("Unique", 11, unique),
    Op::new("NonZero", 9, non_zero),
];

/// `non_zero`: the indices of the nonzero elements, `[rank, n]` with n
/// decided when the node runs.
fn non_zero(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    out(imp, c, "non_zero", Attrs::new(), &[x])
}

/// `unique`: `axis` and `sorted` kept; its four outputs bound by name.
fn unique(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let mut a = Attrs::new().with("sorted", c.i("sorted").unwrap_or(1) != 0);
    if let Some(axis) = c.i("axis") {
        a = a.with("axis", axis);
    }
    out_n(imp, c, "unique", a, &[x], 4)
}

/// `non_max_suppression`; an optional input left out before a given one
/// becomes an empty constant, which the op reads as absent.
fn non_max_suppression(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = inputs_up_to(imp, c, 2, 5)?;
    let a = Attrs::new().with("center_point_box", c.i("center_point_box").unwrap_or(0));
    out(imp, c, "non_max_suppression", a, &ins)
}

/// `one_hot`: `depth` (input 1, which sets the output's shape) must be
/// known at import time; `axis` kept.
fn one_hot(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (ind, depth, values) = (input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?);
    let depth = match const_ints(c, &depth, "depth")?.as_slice() {
        &[d] if d > 0 => d,
        d => return Err(c.unsupported(format!("depth must be one positive value, got {d:?}"))),
    };
    let a = Attrs::new()
        .with("depth", depth)
        .with("axis", c.i("axis").unwrap_or(-1));
    out(imp, c, "one_hot", a, &[ind, values])
}

/// `compress`, `axis` kept when given (else over the flattened input);
/// the output's length is decided when the node runs.
fn compress(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, cond) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let a = match c.i("axis") {
        Some(axis) => Attrs::new().with("axis", axis),
        None => Attrs::new(),
    };
    out(imp, c, "compress", a, &[x, cond])
}

//! Ops laid out by index values: OneHot and Compress.

use vigil_engine::Attrs;

use super::emit::{const_ints, input, out};
use super::Op;
use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[Op::new("OneHot", 9, one_hot), Op::new("Compress", 9, compress)];

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

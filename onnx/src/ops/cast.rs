//! Dtype changes: Cast, CastLike (a `cast` to input 1's dtype) and
//! BitCast.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, out};
use super::Op;
use crate::tensor::dtype_of;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Cast", 1, cast),
    Op::new("CastLike", 15, cast_like),
    Op::new("BitCast", 26, cast),
];

/// `cast` (Cast) or `bitcast` (BitCast) to the dtype of attr `to`.
fn cast(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let to = c.i("to").ok_or_else(|| c.bad_attr("to", "is required"))?;
    let what = format!("node '{}' ({}): attr 'to'", c.onnx_name, c.op_type);
    let d = dtype_of(to as i32, &what)?;
    let name = if c.op_type == "BitCast" { "bitcast" } else { "cast" };
    out(imp, c, name, Attrs::new().with("dtype", d.name()), &[x])
}

fn cast_like(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, like) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let a = Attrs::new().with("dtype", like.ty.dtype.name());
    out(imp, c, "cast", a, &[x])
}

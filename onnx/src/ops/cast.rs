//! Dtype changes: Cast, CastLike (a `cast` to input 1's dtype; both with
//! `saturate` and `round_mode` for the float8 formats) and BitCast.

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
    if c.op_type == "BitCast" {
        return out(imp, c, "bitcast", Attrs::new().with("dtype", d.name()), &[x]);
    }
    let a = rounding(c, Attrs::new().with("dtype", d.name()));
    out(imp, c, "cast", a, &[x])
}

fn cast_like(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, like) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let a = rounding(c, Attrs::new().with("dtype", like.ty.dtype.name()));
    out(imp, c, "cast", a, &[x])
}

/// Attrs `saturate` (0 or 1, default 1) and `round_mode` (F8E8M0 only),
/// which matter only for casts into the float8 formats, passed on when
/// they differ from the defaults.
fn rounding(c: &NodeCtx, mut a: Attrs) -> Attrs {
    if c.i("saturate") == Some(0) {
        a = a.with("saturate", false);
    }
    if let Some(m) = c.s("round_mode").filter(|m| m != "up") {
        a = a.with("round_mode", m);
    }
    a
}

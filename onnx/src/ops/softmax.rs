//! Softmax, LogSoftmax and Hardmax: along `axis` from opset 13, on the
//! input coerced to 2-D at `axis` before.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, out, step};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Softmax", 1, softmax),
    Op::new("LogSoftmax", 1, softmax),
    Op::new("Hardmax", 1, softmax),
];

fn softmax(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let name = match c.op_type.as_str() {
        "Softmax" => "softmax",
        "LogSoftmax" => "log_softmax",
        _ => "hardmax",
    };
    if imp.opset >= 13 {
        return out(
            imp,
            c,
            name,
            Attrs::new().with("axis", c.i("axis").unwrap_or(-1)),
            &[x],
        );
    }
    // Before opset 13 the input is coerced to 2-D at `axis` (default 1).
    let s =
        x.ty.shape
            .clone()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))?;
    let r = s.len() as i64;
    let axis = c.i("axis").unwrap_or(1);
    let axis = if axis < 0 { axis + r } else { axis };
    if axis == r - 1 {
        return out(imp, c, name, Attrs::new().with("axis", -1), &[x]);
    }
    if s.iter().any(|&d| d < 0) {
        return Err(c.unsupported("softmax over several axes needs the input's shape at import time"));
    }
    let (a, b): (i64, i64) = (
        s[..axis as usize].iter().product(),
        s[axis as usize..].iter().product(),
    );
    let flat = step(
        imp,
        c,
        "reshape",
        Attrs::new().with("shape", vec![a, b]),
        &[x],
        "flat",
    )?;
    let y = step(imp, c, name, Attrs::new().with("axis", -1), &[flat], name)?;
    out(imp, c, "reshape", Attrs::new().with("shape", s), &[y])
}

//! EyeLike: a new tensor made from another's shape.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, out};
use super::Op;
use crate::tensor::dtype_of;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[Op::new("EyeLike", 9, eye_like)];

/// `eye_like`: `k` kept, ONNX's `dtype` as Vigil's (default x's).
fn eye_like(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let mut a = Attrs::new().with("k", c.i("k").unwrap_or(0));
    if let Some(e) = c.i("dtype") {
        let d = dtype_of(
            e as i32,
            &format!("node '{}' (EyeLike): attr 'dtype'", c.onnx_name),
        )?;
        a = a.with("dtype", d.name());
    }
    out(imp, c, "eye_like", a, &[x])
}

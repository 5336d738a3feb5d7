//! Matrix products: MatMul, Gemm (written as views, `matmul`, `mul`
//! and `add`), Einsum and Det.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, optional, out, scalar, step};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("MatMul", 1, matmul),
    Op::new("Gemm", 1, gemm),
    Op::new("Einsum", 12, einsum),
    Op::new("Det", 11, det),
];

fn matmul(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (a, b) = (input(imp, c, 0)?, input(imp, c, 1)?);
    out(imp, c, "matmul", Attrs::new(), &[a, b])
}

fn gemm(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (mut a, mut b) = (input(imp, c, 0)?, input(imp, c, 1)?);
    if c.i("transA").unwrap_or(0) != 0 {
        a = step(imp, c, "transpose", Attrs::new(), &[a], "a_t")?;
    }
    if c.i("transB").unwrap_or(0) != 0 {
        b = step(imp, c, "transpose", Attrs::new(), &[b], "b_t")?;
    }
    let (alpha, beta) = (c.f("alpha").unwrap_or(1.0), c.f("beta").unwrap_or(1.0));
    let bias = optional(imp, c, 2)?;
    let dtype = a.ty.dtype;
    let last_is_matmul = alpha == 1.0 && bias.is_none();
    if last_is_matmul {
        return out(imp, c, "matmul", Attrs::new(), &[a, b]);
    }
    let mut y = step(imp, c, "matmul", Attrs::new(), &[a, b], "ab")?;
    if alpha != 1.0 {
        let s = scalar(imp, c, dtype, alpha, "alpha")?;
        y = if bias.is_none() {
            out(imp, c, "mul", Attrs::new(), &[y, s])?
        } else {
            step(imp, c, "mul", Attrs::new(), &[y, s], "alpha_ab")?
        };
    }
    if let Some(mut cv) = bias {
        if beta != 1.0 {
            let s = scalar(imp, c, dtype, beta, "beta")?;
            cv = step(imp, c, "mul", Attrs::new(), &[cv, s], "beta_c")?;
        }
        y = out(imp, c, "add", Attrs::new(), &[y, cv])?;
    }
    Ok(y)
}

fn einsum(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..c.proto.input.len())
        .map(|k| input(imp, c, k))
        .collect::<Result<Vec<_>>>()?;
    let eq = c
        .s("equation")
        .ok_or_else(|| c.bad_attr("equation", "is required"))?;
    out(imp, c, "einsum", Attrs::new().with("equation", eq), &ins)
}

fn det(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    out(imp, c, "det", Attrs::new(), &[x])
}

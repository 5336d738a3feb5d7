//! Index-tuple and per-instance ops that torch's exporter writes for
//! transformers' padding masks, swin's shifted windows and wav2vec2's
//! feature encoder: GatherND, ScatterND and InstanceNormalization.

use vigil_engine::{Attrs, DType};

use super::emit::{input, out, step};
use super::Op;
use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("GatherND", 11, gather_nd),
    Op::new("ScatterND", 11, scatter_nd),
    Op::new("InstanceNormalization", 1, instance_norm),
];

/// ONNX input `k` as i64 indices (int32 ones get a cast).
fn indices(imp: &mut Importer, c: &NodeCtx, k: usize) -> Result<Value> {
    let ind = input(imp, c, k)?;
    if ind.ty.dtype == DType::I64 {
        return Ok(ind);
    }
    step(
        imp,
        c,
        "cast",
        Attrs::new().with("dtype", "i64"),
        &[ind],
        "indices",
    )
}

/// `gather_nd`, `batch_dims` kept (opset 12; 0 before).
fn gather_nd(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let ind = indices(imp, c, 1)?;
    let b = c.i("batch_dims").unwrap_or(0);
    if b < 0 {
        return Err(c.bad_attr("batch_dims", format!("must be >= 0, got {b}")));
    }
    out(imp, c, "gather_nd", Attrs::new().with("batch_dims", b), &[x, ind])
}

/// `scatter_nd`, `reduction` kept (opset 16: add, mul; 18: max, min).
fn scatter_nd(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let ind = indices(imp, c, 1)?;
    let upd = input(imp, c, 2)?;
    let reduction = c.s("reduction").unwrap_or_else(|| "none".into());
    if !matches!(reduction.as_str(), "none" | "add" | "mul" | "max" | "min") {
        return Err(c.bad_attr("reduction", format!("unknown value '{reduction}'")));
    }
    out(
        imp,
        c,
        "scatter_nd",
        Attrs::new().with("reduction", reduction),
        &[x, ind, upd],
    )
}

/// `instance_norm`, `epsilon` kept.
fn instance_norm(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..3).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let a = Attrs::new().with("epsilon", c.f("epsilon").unwrap_or(1e-5));
    out(imp, c, "instance_norm", a, &ins)
}

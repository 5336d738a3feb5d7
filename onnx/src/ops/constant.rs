//! Ops folded at import time into constants: Constant, ConstantOfShape
//! (a `full` node past the allocation limit), and Shape and Size of a
//! static shape (else `shape` and `size` nodes, read when they run).

use vigil_engine::ops::shape_of::ShapeOf;
use vigil_engine::ops::Op as _;
use vigil_engine::{Attrs, Tensor};

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{const_ints, input, out};
use super::Op;
use crate::tensor::to_tensor;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Constant", 1, constant),
    Op::new("ConstantOfShape", 9, constant_of_shape),
    Op::new("Shape", 1, shape),
    Op::new("Size", 1, size),
];

/// The dims `start..end` of x's shape: a constant when they are known at
/// import time, else a `shape` node that reads them when it runs.
fn shape(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let op = ShapeOf {
        start: c.i("start").unwrap_or(0),
        end: c.i("end"),
    };
    if let Some(s) = &x.ty.shape {
        let (a, b) = op.range(s.len());
        let part = &s[a..b];
        if part.iter().all(|&d| d >= 0) {
            return Ok(imp.constant(c.out(), Tensor::from_i64s(part)));
        }
    }
    out(imp, c, "shape", op.attrs(), &[x])
}

/// The element count of x: a constant when its shape is known at import
/// time, else a `size` node.
fn size(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let Some(s) = x.ty.static_shape() else {
        return out(imp, c, "size", Attrs::new(), &[x]);
    };
    let n = s.iter().product::<usize>() as i64;
    let t = Tensor::from_vec(&[], vec![n]).map_err(|e| c.unsupported(e.to_string()))?;
    Ok(imp.constant(c.out(), t))
}

fn constant_of_shape(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let sv = input(imp, c, 0)?;
    let shape = const_ints(c, &sv, "input")?;
    let shape: Vec<usize> = shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| c.unsupported(format!("negative dim in shape {shape:?}"))))
        .collect::<Result<_>>()?;
    let fill = match c.attr("value").and_then(|a| a.t.as_ref()) {
        Some(t) => to_tensor(t, &format!("{}.value", c.onnx_name))?,
        None => Tensor::from_vec(&[1], vec![0f32]).map_err(|e| c.unsupported(e.to_string()))?,
    };
    if fill.size() != 1 {
        return Err(c.bad_attr("value", "must hold one element"));
    }
    // Folded at any size the allocation limit allows: the case declares
    // it as a one-line `fill` constant. Past the limit, a `full` node.
    let n = vigil_engine::tensor::limit::numel(&shape).map_err(|e| c.unsupported(e.to_string()))?;
    if vigil_engine::tensor::limit::check_alloc(fill.dtype(), n).is_err() {
        let v = fill.to_f64_vec().map_err(|e| c.unsupported(e.to_string()))?[0];
        let attrs = Attrs::new()
            .with("shape", shape.clone())
            .with("dtype", fill.dtype().name())
            .with("value", v);
        return out(imp, c, "full", attrs, &[]);
    }
    let t = fill
        .reshape(&[])
        .and_then(|one| one.broadcast_to(&shape))
        .and_then(|b| b.to_contiguous())
        .map_err(|e| c.unsupported(e.to_string()))?;
    Ok(imp.constant(c.out(), t))
}

fn constant(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let bad = |e: vigil_engine::Error| c.unsupported(e.to_string());
    let t = if let Some(t) = c.attr("value").and_then(|a| a.t.as_ref()) {
        to_tensor(t, &c.onnx_name)?
    } else if let Some(a) = c.attr("value_float") {
        Tensor::from_vec(&[], vec![a.f]).map_err(bad)?
    } else if let Some(a) = c.attr("value_floats") {
        Tensor::from_vec(&[a.floats.len()], a.floats.clone()).map_err(bad)?
    } else if let Some(a) = c.attr("value_int") {
        Tensor::from_vec(&[], vec![a.i]).map_err(bad)?
    } else if let Some(a) = c.attr("value_ints") {
        Tensor::from_i64s(&a.ints)
    } else {
        return Err(c.unsupported("only tensor, float(s) and int(s) values are supported"));
    };
    Ok(imp.constant(c.out(), t))
}

//! Reductions: ReduceSum … ReduceLogSumExp (the composite ones as an
//! elementwise step, a sum and a final step) and ArgMax/ArgMin.

use vigil_engine::{Attrs, DType, Element, Num, Tensor};

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{axes_of, input, out, step};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("ReduceSum", 1, reduce),
    Op::new("ReduceMean", 1, reduce),
    Op::new("ReduceMax", 1, reduce),
    Op::new("ReduceMin", 1, reduce),
    Op::new("ReduceL1", 1, reduce),
    Op::new("ReduceL2", 1, reduce),
    Op::new("ReduceSumSquare", 1, reduce),
    Op::new("ReduceLogSum", 1, reduce),
    Op::new("ReduceLogSumExp", 1, reduce),
    Op::new("ReduceProd", 1, reduce),
    Op::new("ArgMax", 1, arg),
    Op::new("ArgMin", 1, arg),
];

fn reduce(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut x = input(imp, c, 0)?;
    // ReduceL1 … ReduceLogSumExp: an elementwise step, a sum, a final step.
    let (pre, name, post) = match c.op_type.as_str() {
        "ReduceSum" => (None, "sum", None),
        "ReduceMean" => (None, "mean", None),
        "ReduceMax" => (None, "max", None),
        "ReduceMin" => (None, "min", None),
        "ReduceProd" => (None, "prod", None),
        "ReduceL1" => (Some("abs"), "sum", None),
        "ReduceL2" => (Some("square"), "sum", Some("sqrt")),
        "ReduceSumSquare" => (Some("square"), "sum", None),
        "ReduceLogSum" => (None, "sum", Some("log")),
        _ => (Some("exp"), "sum", Some("log")),
    };
    let from = if c.op_type == "ReduceSum" { 13 } else { 18 };
    let axes = axes_of(imp, c, from)?.filter(|a| !a.is_empty());
    if axes.is_none() && c.i("noop_with_empty_axes").unwrap_or(0) != 0 {
        return Ok(x);
    }
    match pre {
        Some("square") => x = step(imp, c, "mul", Attrs::new(), &[x.clone(), x], "square")?,
        Some(f) => x = step(imp, c, f, Attrs::new(), &[x], f)?,
        None => {}
    }
    let keepdims = c.i("keepdims").unwrap_or(1) != 0;
    if matches!(name, "max" | "min") {
        if let Some(v) = empty_max_min(imp, c, &x, axes.as_deref(), keepdims, name == "max")? {
            return Ok(v);
        }
    }
    let mut a = Attrs::new().with("keepdims", keepdims);
    if let Some(axes) = axes {
        a = a.with("axes", axes);
    }
    if x.ty.dtype == DType::Bool && matches!(name, "max" | "min") {
        // Vigil's reductions take numbers: any/all through i32 and back.
        let xi = step(imp, c, "cast", Attrs::new().with("dtype", "i32"), &[x], "as_i32")?;
        let r = step(imp, c, name, a, &[xi], name)?;
        return out(imp, c, "cast", Attrs::new().with("dtype", "bool"), &[r]);
    }
    match post {
        None => out(imp, c, name, a, &[x]),
        Some(f) => {
            let r = step(imp, c, name, a, &[x], name)?;
            out(imp, c, f, Attrs::new(), &[r])
        }
    }
}

/// ONNX's max/min over an empty axis is the reduction's identity (-inf
/// or +inf, the integer extremes, false or true), where numpy and Vigil's
/// `max`/`min` raise: with a static shape it is a constant.
fn empty_max_min(
    imp: &mut Importer,
    c: &NodeCtx,
    x: &Value,
    axes: Option<&[i64]>,
    keepdims: bool,
    max: bool,
) -> Result<Option<Value>> {
    let Some(s) = x.ty.static_shape() else {
        return Ok(None);
    };
    let r = s.len() as i64;
    let reduced: Vec<bool> = match axes {
        None => vec![true; s.len()],
        Some(a) => {
            let norm: Vec<i64> = a.iter().map(|&v| if v < 0 { v + r } else { v }).collect();
            (0..r).map(|k| norm.contains(&k)).collect()
        }
    };
    if !s.iter().zip(&reduced).any(|(&d, &red)| red && d == 0) {
        return Ok(None);
    }
    let shape: Vec<usize> = s
        .iter()
        .zip(&reduced)
        .filter_map(|(&d, &red)| match (red, keepdims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    // A constant made here: attrs (JSON) cannot hold ±inf for a `full` node.
    fn make<T: Element>(shape: &[usize], v: T) -> vigil_engine::Result<Tensor> {
        Tensor::from_vec(shape, vec![v; shape.iter().product()])
    }
    let t = vigil_engine::dispatch_num!(x.ty.dtype,
        T => make::<T>(&shape, if max { <T as Num>::min_value() } else { <T as Num>::max_value() }),
        make(&shape, !max))
    .map_err(|e| c.unsupported(e.to_string()))?;
    Ok(Some(imp.constant(c.out(), t)))
}

/// `argmax` or `argmin`; `select_last_index` kept.
fn arg(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let a = Attrs::new()
        .with("axis", c.i("axis").unwrap_or(0))
        .with("keepdims", c.i("keepdims").unwrap_or(1) != 0)
        .with("select_last", c.i("select_last_index").unwrap_or(0) != 0);
    out(imp, c, &c.op_type.to_lowercase(), a, &[x])
}

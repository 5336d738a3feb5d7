//! Activations with parameters: ONNX's float attrs under Vigil's names,
//! PRelu, and LeakyRelu, Clip, Shrink and Swish written with comparisons,
//! bounds and products.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, optional, out, scalar, step};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Elu", 1, activation),
    Op::new("Celu", 12, activation),
    Op::new("Selu", 1, activation),
    Op::new("HardSigmoid", 1, activation),
    Op::new("HardSwish", 14, activation),
    Op::new("Softsign", 1, activation),
    Op::new("ThresholdedRelu", 10, activation),
    Op::new("Mish", 18, activation),
    Op::new("PRelu", 1, prelu),
    Op::new("LeakyRelu", 1, leaky_relu),
    Op::new("Clip", 1, clip),
    Op::new("Shrink", 9, shrink),
    Op::new("Swish", 24, swish),
];

/// A parametrised activation: ONNX's float attrs under Vigil's names.
fn activation(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (name, attrs): (&str, &[&str]) = match c.op_type.as_str() {
        "Elu" => ("elu", &["alpha"]),
        "Celu" => ("celu", &["alpha"]),
        "Selu" => ("selu", &["alpha", "gamma"]),
        "HardSigmoid" => ("hard_sigmoid", &["alpha", "beta"]),
        "HardSwish" => ("hard_swish", &[]),
        "Softsign" => ("softsign", &[]),
        "ThresholdedRelu" => ("thresholded_relu", &["alpha"]),
        _ => ("mish", &[]),
    };
    let x = input(imp, c, 0)?;
    let a = attrs
        .iter()
        .filter_map(|&k| c.f(k).map(|v| (k, v)))
        .fold(Attrs::new(), |a, (k, v)| a.with(k, v));
    out(imp, c, name, a, &[x])
}

/// Before opset 7 a slope of C values is per channel (axis 1); it is
/// reshaped to `[C, 1, …]` so that it broadcasts the way later opsets do.
fn prelu(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, mut slope) = (input(imp, c, 0)?, input(imp, c, 1)?);
    if imp.opset < 7 {
        if let (Some(xs), Some(ss)) = (x.ty.shape.clone(), slope.ty.shape.clone()) {
            if xs.len() > 2 && ss.len() == 1 && ss[0] > 1 && ss[0] == xs[1] {
                let shape: Vec<i64> = std::iter::once(ss[0])
                    .chain(std::iter::repeat_n(1, xs.len() - 2))
                    .collect();
                let a = Attrs::new().with("shape", shape);
                slope = step(imp, c, "reshape", a, &[slope], "slope_per_channel")?;
            }
        }
    }
    out(imp, c, "prelu", Attrs::new(), &[x, slope])
}

/// `x < −lambd ? x + bias : x > lambd ? x − bias : 0`.
fn shrink(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let dt = x.ty.dtype;
    let (lambd, bias) = (c.f("lambd").unwrap_or(0.5), c.f("bias").unwrap_or(0.0));
    let lo = scalar(imp, c, dt, -lambd, "neg_lambd")?;
    let hi = scalar(imp, c, dt, lambd, "lambd")?;
    let b = scalar(imp, c, dt, bias, "bias")?;
    let zero = scalar(imp, c, dt, 0.0, "zero")?;
    let below = step(imp, c, "lt", Attrs::new(), &[x.clone(), lo], "below")?;
    let above = step(imp, c, "gt", Attrs::new(), &[x.clone(), hi], "above")?;
    let up = step(imp, c, "add", Attrs::new(), &[x.clone(), b.clone()], "plus_bias")?;
    let down = step(imp, c, "sub", Attrs::new(), &[x, b], "minus_bias")?;
    let upper = step(imp, c, "where", Attrs::new(), &[above, down, zero], "upper")?;
    out(imp, c, "where", Attrs::new(), &[below, up, upper])
}

/// `x · sigmoid(alpha · x)`.
fn swish(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let alpha = c.f("alpha").unwrap_or(1.0);
    let mut z = x.clone();
    if alpha != 1.0 {
        let a = scalar(imp, c, x.ty.dtype, alpha, "alpha")?;
        z = step(imp, c, "mul", Attrs::new(), &[x.clone(), a], "scaled")?;
    }
    let s = step(imp, c, "sigmoid", Attrs::new(), &[z], "sigmoid")?;
    out(imp, c, "mul", Attrs::new(), &[x, s])
}

/// `where(x < 0, alpha·x, x)`.
fn leaky_relu(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let alpha = scalar(imp, c, x.ty.dtype, c.f("alpha").unwrap_or(0.01), "alpha")?;
    let zero = scalar(imp, c, x.ty.dtype, 0.0, "zero")?;
    let neg = step(imp, c, "lt", Attrs::new(), &[x.clone(), zero], "negative")?;
    let scaled = step(imp, c, "mul", Attrs::new(), &[x.clone(), alpha], "scaled")?;
    out(imp, c, "where", Attrs::new(), &[neg, scaled, x])
}

/// `maximum`/`minimum` with the bounds: attrs before opset 11, inputs after.
fn clip(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut x = input(imp, c, 0)?;
    let dtype = x.ty.dtype;
    let (lo, hi) = if imp.opset < 11 {
        let lo = c.f("min").map(|v| scalar(imp, c, dtype, v, "min")).transpose()?;
        let hi = c.f("max").map(|v| scalar(imp, c, dtype, v, "max")).transpose()?;
        (lo, hi)
    } else {
        (optional(imp, c, 1)?, optional(imp, c, 2)?)
    };
    match (lo, hi) {
        (None, None) => out(imp, c, "copy", Attrs::new(), &[x]),
        (Some(lo), None) => out(imp, c, "maximum", Attrs::new(), &[x, lo]),
        (None, Some(hi)) => out(imp, c, "minimum", Attrs::new(), &[x, hi]),
        (Some(lo), Some(hi)) => {
            x = step(imp, c, "maximum", Attrs::new(), &[x, lo], "low")?;
            out(imp, c, "minimum", Attrs::new(), &[x, hi])
        }
    }
}

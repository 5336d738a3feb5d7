//! Activations with parameters: ONNX's float attrs under Vigil's names,
//! PRelu, and LeakyRelu and Clip written with comparisons and bounds.

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

fn prelu(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, slope) = (input(imp, c, 0)?, input(imp, c, 1)?);
    out(imp, c, "prelu", Attrs::new(), &[x, slope])
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

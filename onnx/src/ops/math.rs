//! Elementwise arithmetic: the unary math ops, the binary ones (with the
//! pre-opset-7 broadcast), the variadic Sum/Max/Min/Mean, IsNaN and IsInf.

use vigil_engine::Attrs;

use crate::error::{ImportError, Result};
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, out, scalar, step};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Relu", 1, unary),
    Op::new("Sigmoid", 1, unary),
    Op::new("Tanh", 1, unary),
    Op::new("Exp", 1, unary),
    Op::new("Log", 1, unary),
    Op::new("Sqrt", 1, unary),
    Op::new("Neg", 1, unary),
    Op::new("Abs", 1, unary),
    Op::new("Sin", 7, unary),
    Op::new("Cos", 7, unary),
    Op::new("Tan", 7, unary),
    Op::new("Asin", 7, unary),
    Op::new("Acos", 7, unary),
    Op::new("Atan", 7, unary),
    Op::new("Sinh", 9, unary),
    Op::new("Cosh", 9, unary),
    Op::new("Asinh", 9, unary),
    Op::new("Acosh", 9, unary),
    Op::new("Atanh", 9, unary),
    Op::new("Erf", 9, unary),
    Op::new("Floor", 1, unary),
    Op::new("Ceil", 1, unary),
    Op::new("Round", 11, unary),
    Op::new("Sign", 9, unary),
    Op::new("Reciprocal", 1, unary),
    Op::new("Softplus", 1, unary),
    Op::new("Gelu", 20, unary),
    Op::new("Add", 1, binary),
    Op::new("Sub", 1, binary),
    Op::new("Mul", 1, binary),
    Op::new("Div", 1, binary),
    Op::new("Pow", 1, binary),
    Op::new("Mod", 10, modulo),
    Op::new("Sum", 1, variadic),
    Op::new("Max", 1, variadic),
    Op::new("Min", 1, variadic),
    Op::new("Mean", 1, variadic),
    Op::new("IsNaN", 9, isnan),
    Op::new("IsInf", 10, isinf),
];

/// The Vigil op of the same name in lower case; `approximate = "tanh"`
/// (Gelu's) is `gelu_tanh`.
fn unary(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let name = match c.s("approximate").as_deref() {
        None | Some("none") => c.op_type.to_lowercase(),
        Some("tanh") => "gelu_tanh".into(),
        Some(a) => return Err(c.bad_attr("approximate", format!("unknown value '{a}'"))),
    };
    let x = input(imp, c, 0)?;
    out(imp, c, &name, Attrs::new(), &[x])
}

/// The tanh GELU of ONNX value `x`, for a pattern of nodes that
/// [`crate::fold`] found ending at node `c`.
pub(crate) fn gelu_tanh_of(imp: &mut Importer, c: &NodeCtx, x: &str) -> Result<Value> {
    let x = imp.value(x).cloned().ok_or_else(|| ImportError::UndefinedInput {
        node: c.onnx_name.clone(),
        op: c.op_type.clone(),
        input: x.to_string(),
    })?;
    out(imp, c, "gelu_tanh", Attrs::new(), &[x])
}

fn binary(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (a, mut b) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let mut name = c.op_type.to_lowercase();
    if c.op_type == "Div" && !a.ty.dtype.is_float() {
        // ONNX's integer Div truncates; Vigil's div is true division.
        name = "div_trunc".into();
    }
    if imp.opset < 7 && c.i("broadcast").unwrap_or(0) != 0 {
        b = legacy_broadcast(imp, c, &a, b)?;
    }
    if c.op_type == "Pow" && b.ty.dtype != a.ty.dtype {
        // ONNX Pow's exponent may have another type; the result has the base's.
        b = step(
            imp,
            c,
            "cast",
            Attrs::new().with("dtype", a.ty.dtype.name()),
            &[b],
            "exponent",
        )?;
    }
    out(imp, c, &name, Attrs::new(), &[a, b])
}

/// Before opset 7, `broadcast = 1` with `axis` aligns B's dims with A's
/// starting at `axis`: B gets trailing 1s so numpy broadcasting agrees.
fn legacy_broadcast(imp: &mut Importer, c: &NodeCtx, a: &Value, b: Value) -> Result<Value> {
    let Some(axis) = c.i("axis") else { return Ok(b) };
    let (Some(ra), Some(sb)) = (a.ty.rank(), b.ty.shape.clone()) else {
        return Err(c.unsupported("legacy broadcast needs both ranks at import time"));
    };
    let axis = if axis < 0 { axis + ra as i64 } else { axis };
    let pad = ra as i64 - axis - sb.len() as i64;
    if pad < 0 || sb.iter().any(|&d| d < 0) {
        return Err(c.bad_attr(
            "axis",
            format!("B {sb:?} does not fit A of rank {ra} at axis {axis}"),
        ));
    }
    if pad == 0 {
        return Ok(b);
    }
    let shape: Vec<i64> = sb
        .iter()
        .copied()
        .chain(std::iter::repeat_n(1, pad as usize))
        .collect();
    step(
        imp,
        c,
        "reshape",
        Attrs::new().with("shape", shape),
        &[b],
        "b_aligned",
    )
}

/// `mod`, ONNX's `fmod` attr kept.
fn modulo(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (a, b) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let fmod = c.i("fmod").unwrap_or(0) != 0;
    out(imp, c, "mod", Attrs::new().with("fmod", fmod), &[a, b])
}

fn variadic(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..c.proto.input.len())
        .map(|k| input(imp, c, k))
        .collect::<Result<Vec<_>>>()?;
    let pair = match c.op_type.as_str() {
        "Max" => "maximum",
        "Min" => "minimum",
        _ => "add",
    };
    let n = ins.len();
    let mean = c.op_type == "Mean";
    let Some((first, rest)) = ins.split_first() else {
        return Err(c.unsupported("needs at least one input"));
    };
    if rest.is_empty() && !mean {
        return out(imp, c, "copy", Attrs::new(), std::slice::from_ref(first));
    }
    let mut acc = first.clone();
    for (k, v) in rest.iter().enumerate() {
        let last = k + 1 == rest.len() && !mean;
        acc = if last {
            out(imp, c, pair, Attrs::new(), &[acc, v.clone()])?
        } else {
            step(
                imp,
                c,
                pair,
                Attrs::new(),
                &[acc, v.clone()],
                &format!("{pair}{k}"),
            )?
        };
    }
    if mean {
        let d = scalar(imp, c, acc.ty.dtype, n as f64, "count")?;
        acc = out(imp, c, "div", Attrs::new(), &[acc, d])?;
    }
    Ok(acc)
}

fn isnan(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    out(imp, c, "isnan", Attrs::new(), &[x])
}

fn isinf(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let a = Attrs::new()
        .with("detect_positive", c.i("detect_positive").unwrap_or(1) != 0)
        .with("detect_negative", c.i("detect_negative").unwrap_or(1) != 0);
    out(imp, c, "isinf", a, &[x])
}

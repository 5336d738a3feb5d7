//! Quantized ops, what `onnxruntime.quantization` writes: QuantizeLinear,
//! DequantizeLinear and DynamicQuantizeLinear as the engine's ops of the
//! same name; MatMulInteger and ConvInteger as `matmul_integer` and
//! `conv_integer` (an absent zero point is a 0 of its operand's dtype);
//! QLinearMatMul and QLinearConv as those integer products followed by the
//! requantization ONNX defines: the i32 result (plus QLinearConv's i32
//! bias) times `a_scale · b_scale / y_scale` (computed in the scales'
//! dtype), in f64, then `quantize_linear` with scale 1 and `y_zero_point`.

use vigil_engine::{Attrs, DType};

use super::emit::{copy_attrs, input, optional, out, scalar, step};
use super::Op;
use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};
use crate::tensor::dtype_of;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("QuantizeLinear", 10, quantize_linear),
    Op::new("DequantizeLinear", 10, dequantize_linear),
    Op::new("DynamicQuantizeLinear", 11, dynamic_quantize_linear),
    Op::new("MatMulInteger", 10, matmul_integer),
    Op::new("ConvInteger", 10, conv_integer),
    Op::new("QLinearMatMul", 10, qlinear_matmul),
    Op::new("QLinearConv", 10, qlinear_conv),
];

/// `axis` and `block_size` as given, and attr `attr` (an ONNX dtype) as
/// the engine's `dtype`.
fn axis_attrs(c: &NodeCtx, attr: &str) -> Result<Attrs> {
    let mut a = Attrs::new().with("axis", c.i("axis").unwrap_or(1));
    if let Some(b) = c.i("block_size").filter(|&b| b != 0) {
        a = a.with("block_size", b);
    }
    for (onnx, vigil) in [(attr, "dtype"), ("precision", "precision")] {
        if let Some(d) = c.i(onnx).filter(|&d| d != 0) {
            let what = format!("node '{}' ({}): attr '{onnx}'", c.onnx_name, c.op_type);
            a = a.with(vigil, dtype_of(d as i32, &what)?.name());
        }
    }
    Ok(a)
}

fn quantize_linear(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?];
    ins.extend(optional(imp, c, 2)?);
    let mut a = axis_attrs(c, "output_dtype")?;
    if c.i("saturate") == Some(0) {
        a = a.with("saturate", false);
    }
    out(imp, c, "quantize_linear", a, &ins)
}

fn dequantize_linear(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?];
    ins.extend(optional(imp, c, 2)?);
    let a = axis_attrs(c, "output_dtype")?;
    out(imp, c, "dequantize_linear", a, &ins)
}

/// `dynamic_quantize_linear`; the scale and zero point are bound when the
/// model names them (it always does: they are what makes y usable).
fn dynamic_quantize_linear(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let y = c.out().to_string();
    let named = |j: usize| c.proto.output.get(j).filter(|o| !o.is_empty()).cloned();
    let outs: Vec<String> = [(1, "scale"), (2, "zero_point")]
        .iter()
        .map(|&(j, tag)| named(j).unwrap_or_else(|| format!("{y}.{tag}")))
        .collect();
    let mut vals = imp.emit_n(
        c,
        "dynamic_quantize_linear",
        Attrs::new(),
        &[x],
        &[&y, &outs[0], &outs[1]],
    )?;
    for j in [1, 2] {
        if let Some(name) = named(j) {
            imp.bind(&name, vals[j].clone());
        }
    }
    Ok(vals.swap_remove(0))
}

/// ONNX input `k`, or a 0 of `like`'s dtype when absent.
fn zero_point(imp: &mut Importer, c: &NodeCtx, k: usize, like: &Value, tag: &str) -> Result<Value> {
    match optional(imp, c, k)? {
        Some(z) => Ok(z),
        None => scalar(imp, c, like.ty.dtype, 0.0, tag),
    }
}

fn matmul_integer(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (a, b) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let za = zero_point(imp, c, 2, &a, "a_zero_point")?;
    let zb = zero_point(imp, c, 3, &b, "b_zero_point")?;
    out(imp, c, "matmul_integer", Attrs::new(), &[a, b, za, zb])
}

/// ConvInteger's and QLinearConv's window attrs.
fn conv_attrs(c: &NodeCtx) -> Attrs {
    copy_attrs(
        c,
        &["kernel_shape", "strides", "dilations", "pads", "group"],
        &["auto_pad"],
    )
}

fn conv_integer(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, w) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let zx = zero_point(imp, c, 2, &x, "x_zero_point")?;
    let zw = zero_point(imp, c, 3, &w, "w_zero_point")?;
    out(imp, c, "conv_integer", conv_attrs(c), &[x, w, zx, zw])
}

/// `scale` with `trailing` size-1 axes appended (a per-row or
/// per-channel 1-D scale lined up for broadcasting), unchanged when it
/// holds one value.
fn spread(imp: &mut Importer, c: &NodeCtx, scale: Value, trailing: usize, tag: &str) -> Result<Value> {
    let many = scale
        .ty
        .static_shape()
        .is_some_and(|s| s.iter().product::<usize>() > 1);
    if !many {
        return Ok(scale);
    }
    let mut v = scale;
    for k in 0..trailing {
        let a = Attrs::new().with("axis", -1i64);
        v = step(imp, c, "expand_dims", a, &[v], &format!("{tag}{k}"))?;
    }
    Ok(v)
}

/// `q` (i32) times `sa · sb / sy`, requantized with `zy`: ONNX's
/// requantization, with the product in f64 as its reference computes it.
fn requantize(imp: &mut Importer, c: &NodeCtx, q: Value, scales: [Value; 3], zy: Value) -> Result<Value> {
    let [sa, sb, sy] = scales;
    let ab = step(imp, c, "mul", Attrs::new(), &[sa, sb], "scale_ab")?;
    let m = step(imp, c, "div", Attrs::new(), &[ab, sy], "multiplier")?;
    let f64_ = Attrs::new().with("dtype", DType::F64.name());
    let m = step(imp, c, "cast", f64_.clone(), &[m], "multiplier_f64")?;
    let qf = step(imp, c, "cast", f64_, &[q], "acc_f64")?;
    let r = step(imp, c, "mul", Attrs::new(), &[qf, m], "scaled")?;
    let one = scalar(imp, c, DType::F64, 1.0, "one")?;
    out(imp, c, "quantize_linear", Attrs::new(), &[r, one, zy])
}

/// QLinearMatMul: `matmul_integer`, then [`requantize`]. A per-row
/// `a_scale` ([M]) is lined up with the rows.
fn qlinear_matmul(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..8).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let [a, sa, za, b, sb, zb, sy, zy]: [Value; 8] =
        ins.try_into().map_err(|_| c.unsupported("needs 8 inputs"))?;
    let q = step(imp, c, "matmul_integer", Attrs::new(), &[a, b, za, zb], "acc")?;
    let sa = spread(imp, c, sa, 1, "a_scale_rows")?;
    requantize(imp, c, q, [sa, sb, sy], zy)
}

/// QLinearConv: `conv_integer`, plus the i32 bias per output channel, then
/// [`requantize`] with a per-channel `w_scale` lined up with the channels.
fn qlinear_conv(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..8).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let [x, sx, zx, w, sw, zw, sy, zy]: [Value; 8] =
        ins.try_into().map_err(|_| c.unsupported("needs 8 inputs"))?;
    let spatial =
        x.ty.rank()
            .and_then(|r| r.checked_sub(2))
            .ok_or_else(|| c.unsupported("x's rank must be known at import time"))?;
    let mut q = step(imp, c, "conv_integer", conv_attrs(c), &[x, w, zx, zw], "acc")?;
    if let Some(bias) = optional(imp, c, 8)? {
        let mut b = bias;
        for k in 0..spatial {
            b = step(
                imp,
                c,
                "expand_dims",
                Attrs::new().with("axis", -1i64),
                &[b],
                &format!("bias{k}"),
            )?;
        }
        q = step(imp, c, "add", Attrs::new(), &[q, b], "biased")?;
    }
    let sw = spread(imp, c, sw, spatial, "w_scale_channels")?;
    requantize(imp, c, q, [sx, sw, sy], zy)
}

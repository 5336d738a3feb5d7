//! Linear quantization, with ONNX's semantics:
//!
//! - `quantize_linear(x, scale[, zero_point])`: `y = saturate(rint(x / scale)
//!   + zero_point)` into u8, i8, u16 or i16 (the zero point's dtype, else
//!   attr `dtype`, default u8); `rint` rounds half to even. The division is
//!   done in x's and scale's promoted dtype (f16 when both are f16), or in
//!   attr `precision` when given, as ONNX's reference computes it.
//! - `dequantize_linear(x, scale[, zero_point])`: `y = (x − zero_point) ·
//!   scale`, computed in f32 (f64 for an f64 scale) and rounded once into
//!   the scale's dtype, or attr `dtype`.
//!
//!   For both, the scale and zero point line up with x in one of three
//!   ways: one value (a scalar or a one-element tensor), one per index
//!   along attr `axis` (default 1; a 1-D tensor of that axis's length), or,
//!   with attr `block_size` > 0, one per block of that many indices along
//!   `axis` (a tensor of x's rank whose `axis` dim is `ceil(D / block_size)`
//!   and whose other dims are x's).
//! - `dynamic_quantize_linear(x)`: u8 quantization of an f32 tensor with
//!   the scale and zero point that its range (widened to hold 0) gives;
//!   three outputs `y`, `scale` (f32, 0-d) and `zero_point` (u8, 0-d).
//! - `matmul_integer(a, b, a_zero_point, b_zero_point)`: `(a − a_zp) ·
//!   (b − b_zp)` in i32 (u8 or i8 operands). A zero point is one value, a
//!   1-D tensor of `a`'s row count (per row, for `a`), or any shape that
//!   broadcasts against its operand (`b`'s `[N]` is per column).
//! - `conv_integer(x, w, x_zero_point, w_zero_point)`: `conv` of `x − x_zp`
//!   and `w − w_zp` in i32 (`w_zp` is one value or one per output channel),
//!   with conv's attrs. The products and sums are integers below 2^53, so
//!   the convolution runs exactly on f64 through `conv`'s kernel.
//!
//! None of them aliases or overwrites an input: the output dtype differs
//! from the input's, so there is no in-place twin.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{attr_err, dtype_err, op_err, shape_err, Result};
use crate::ops::conv::Conv;
use crate::ops::linalg::MatMul;
use crate::ops::window::{Window, WINDOW_ATTRS};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The dtypes a quantized value may have: 8- and 16-bit integers, the
/// 4- and 2-bit ones, and the float8 and float4 formats (not F8E8M0, a
/// scale format).
fn is_quantized(d: DType) -> bool {
    matches!(d, DType::U8 | DType::I8 | DType::U16 | DType::I16)
        || d.is_small_int()
        || (d.is_small_float() && d != DType::F8E8M0)
}

/// How a scale or zero point lines up with x.
#[derive(Clone, Copy, Debug)]
enum Lineup {
    /// One value for every element.
    One,
    /// One per index along the axis: `d` is the axis length, `inner` the
    /// element count of the axes after it.
    Axis { d: usize, inner: usize },
    /// One per block of `block` indices along the axis, which has `d`
    /// indices in x and `pd` in the parameter.
    Block {
        d: usize,
        pd: usize,
        inner: usize,
        block: usize,
    },
}

impl Lineup {
    /// How a parameter of shape `p` lines up with an x of shape `x`;
    /// `what` names the parameter in errors.
    fn of(op: &str, what: &str, x: &[usize], p: &[usize], axis: i64, block: usize) -> Result<Lineup> {
        if p.iter().product::<usize>() == 1 {
            return Ok(Lineup::One);
        }
        let r = x.len() as i64;
        let a = if axis < 0 { axis + r } else { axis };
        if a < 0 || a >= r {
            return attr_err(format!(
                "op '{op}': axis {axis} is out of range for x of shape {x:?}"
            ));
        }
        let a = a as usize;
        let (d, inner) = (x[a], x[a + 1..].iter().product());
        if block == 0 {
            if p != [d] {
                return shape_err(format!(
                    "op '{op}': {what} must be one value or [{d}] (x's axis {a}), got {p:?}"
                ));
            }
            return Ok(Lineup::Axis { d, inner });
        }
        let pd = d.div_ceil(block);
        let fits = p.len() == x.len()
            && p.iter()
                .zip(x)
                .enumerate()
                .all(|(k, (&pk, &xk))| if k == a { pk == pd } else { pk == xk });
        if !fits {
            return shape_err(format!(
                "op '{op}': {what} of shape {p:?} does not block x of shape {x:?} along axis {a} by {block}"
            ));
        }
        Ok(Lineup::Block { d, pd, inner, block })
    }

    /// The parameter's flat index for x's flat (C-order) index `i`.
    fn at(self, i: usize) -> usize {
        match self {
            Lineup::One => 0,
            Lineup::Axis { d, inner } => (i / inner) % d,
            Lineup::Block { d, pd, inner, block } => {
                let (outer, k, n) = (i / (d * inner), (i / inner) % d, i % inner);
                (outer * pd + k / block) * inner + n
            }
        }
    }
}

/// The static shapes of `inputs` when all are known.
fn static_shapes(inputs: &[TypeInfo]) -> Option<Vec<Vec<usize>>> {
    inputs.iter().map(TypeInfo::static_shape).collect()
}

/// The values of `t` as f64, in C order.
fn f64s(t: &Tensor) -> Result<Vec<f64>> {
    t.to_f64_vec()
}

/// `a / b` rounded as dtype `d` computes it.
fn div_in(d: DType, a: f64, b: f64) -> f64 {
    match d {
        DType::F16 => (half::f16::from_f64(a) / half::f16::from_f64(b)).to_f64(),
        DType::BF16 => (half::bf16::from_f64(a) / half::bf16::from_f64(b)).to_f64(),
        DType::F32 => f64::from(a as f32 / b as f32),
        _ => a / b,
    }
}

/// The representable range of a quantized dtype.
fn range_of(d: DType) -> (f64, f64) {
    match d {
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::U16 => (0.0, 65535.0),
        DType::I4 => (-8.0, 7.0),
        DType::U4 => (0.0, 15.0),
        DType::I2 => (-2.0, 1.0),
        DType::U2 => (0.0, 3.0),
        _ => (-32768.0, 32767.0),
    }
}

/// Attr `axis` (default 1) and `block_size` (default 0, not blocked).
fn axis_attrs(op: &str, a: &Attrs) -> Result<(i64, usize)> {
    let block = a.i64("block_size")?.unwrap_or(0);
    if block < 0 {
        return attr_err(format!("op '{op}': attr 'block_size' must be >= 0, got {block}"));
    }
    Ok((a.i64("axis")?.unwrap_or(1), block as usize))
}

/// The `quantize_linear` op.
#[derive(Clone, Debug)]
pub struct QuantizeLinear {
    pub axis: i64,
    pub block_size: usize,
    /// The output dtype when there is no zero point.
    pub dtype: Option<DType>,
    /// The dtype the division is done in, when not x's.
    pub precision: Option<DType>,
    /// Into a float8 format: clamp to its largest finite value (else NaN or
    /// infinity past it), as Cast's `saturate`.
    pub saturate: bool,
}

impl QuantizeLinear {
    fn out_dtype(&self, inputs: &[TypeInfo]) -> Result<DType> {
        let (x, s) = (inputs[0].dtype, inputs[1].dtype);
        if !x.is_float() || !s.is_float() {
            return dtype_err(format!(
                "op 'quantize_linear' needs float x and scale, got {x} and {s}"
            ));
        }
        let d = match (inputs.get(2), self.dtype) {
            (Some(z), Some(d)) if z.dtype != d => {
                return dtype_err(format!(
                    "op 'quantize_linear': attr 'dtype' {d} differs from the zero point's {}",
                    z.dtype
                ))
            }
            (Some(z), _) => z.dtype,
            (None, d) => d.unwrap_or(DType::U8),
        };
        if !is_quantized(d) {
            return dtype_err(format!(
                "op 'quantize_linear' quantizes into u8, i8, u16, i16, i4, u4, i2, u2 or a float8 or float4 format, not {d}"
            ));
        }
        Ok(d)
    }

    fn check_shapes(&self, shapes: &[Vec<usize>]) -> Result<()> {
        for (k, what) in [(1, "scale"), (2, "zero point")] {
            if let Some(p) = shapes.get(k) {
                Lineup::of("quantize_linear", what, &shapes[0], p, self.axis, self.block_size)?;
            }
        }
        Ok(())
    }

    /// The dtype the division runs in: `precision`, else numpy's promotion
    /// of x's and scale's dtypes.
    fn div_dtype(&self, x: DType, s: DType) -> DType {
        if let Some(p) = self.precision {
            return p;
        }
        match (x, s) {
            (DType::F64, _) | (_, DType::F64) => DType::F64,
            (DType::F16, DType::F16) => DType::F16,
            (DType::BF16, DType::BF16) => DType::BF16,
            _ => DType::F32,
        }
    }
}

impl Op for QuantizeLinear {
    fn name(&self) -> &str {
        "quantize_linear"
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(3) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let d = self.out_dtype(inputs)?;
        if let Some(shapes) = static_shapes(inputs) {
            self.check_shapes(&shapes)?;
        }
        Ok(vec![TypeInfo::new(d, inputs[0].shape.clone())])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        let d = self.out_dtype(&tys)?;
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|t| t.shape().to_vec()).collect();
        self.check_shapes(&shapes)?;
        let x = &inputs[0];
        let line = |k: usize| {
            Lineup::of(
                "quantize_linear",
                "",
                x.shape(),
                inputs[k].shape(),
                self.axis,
                self.block_size,
            )
        };
        let (xs, scale) = (f64s(x)?, f64s(&inputs[1])?);
        let sl = line(1)?;
        let zero = match inputs.get(2) {
            Some(z) => Some((f64s(z)?, line(2)?)),
            None => None,
        };
        let dd = self.div_dtype(x.dtype(), inputs[1].dtype());
        let out = ctx.output(0, d, x.shape())?;
        if d.is_small_float() {
            // Rounded (and saturated) by the format, not to an integer.
            let y: Vec<f64> = xs
                .iter()
                .enumerate()
                .map(|(i, &v)| {
                    let z = zero.as_ref().map_or(0.0, |(z, zl)| z[zl.at(i)]);
                    div_in(dd, v, scale[sl.at(i)]) + z
                })
                .collect();
            crate::small::write_f64s(&out, &y, self.saturate, Default::default())?;
            return Ok(vec![out]);
        }
        let (lo, hi) = range_of(d);
        let y: Vec<f64> = xs
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let q = div_in(dd, v, scale[sl.at(i)]).round_ties_even();
                let z = zero.as_ref().map_or(0.0, |(z, zl)| z[zl.at(i)]);
                // ONNX leaves NaN undefined; it becomes the zero point.
                if q.is_nan() {
                    z.clamp(lo, hi)
                } else {
                    (q + z).clamp(lo, hi)
                }
            })
            .collect();
        out.write_f64s(&y)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new().with("axis", self.axis);
        if self.block_size > 0 {
            a = a.with("block_size", self.block_size);
        }
        if let Some(d) = self.dtype {
            a = a.with("dtype", d.name());
        }
        if let Some(p) = self.precision {
            a = a.with("precision", p.name());
        }
        if !self.saturate {
            a = a.with("saturate", false);
        }
        a
    }
}

/// The `dequantize_linear` op.
#[derive(Clone, Debug)]
pub struct DequantizeLinear {
    pub axis: i64,
    pub block_size: usize,
    /// The output dtype, when not the scale's.
    pub dtype: Option<DType>,
}

impl DequantizeLinear {
    fn out_dtype(&self, inputs: &[TypeInfo]) -> Result<DType> {
        let (x, s) = (inputs[0].dtype, inputs[1].dtype);
        if !(is_quantized(x) || x == DType::I32) || !s.is_float() {
            return dtype_err(format!(
                "op 'dequantize_linear' needs a quantized (u8, i8, u16, i16, i4, u4, i2, u2, float8, float4) or i32 x and a float scale, got {x} and {s}"
            ));
        }
        if let Some(z) = inputs.get(2) {
            if z.dtype != x {
                return dtype_err(format!(
                    "op 'dequantize_linear': the zero point's dtype {} differs from x's {x}",
                    z.dtype
                ));
            }
        }
        let d = self.dtype.unwrap_or(s);
        if !d.is_float() {
            return dtype_err(format!(
                "op 'dequantize_linear' dequantizes into a float dtype, not {d}"
            ));
        }
        Ok(d)
    }

    fn check_shapes(&self, shapes: &[Vec<usize>]) -> Result<()> {
        for (k, what) in [(1, "scale"), (2, "zero point")] {
            if let Some(p) = shapes.get(k) {
                Lineup::of(
                    "dequantize_linear",
                    what,
                    &shapes[0],
                    p,
                    self.axis,
                    self.block_size,
                )?;
            }
        }
        Ok(())
    }
}

impl Op for DequantizeLinear {
    fn name(&self) -> &str {
        "dequantize_linear"
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(3) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let d = self.out_dtype(inputs)?;
        if let Some(shapes) = static_shapes(inputs) {
            self.check_shapes(&shapes)?;
        }
        Ok(vec![TypeInfo::new(d, inputs[0].shape.clone())])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        let d = self.out_dtype(&tys)?;
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|t| t.shape().to_vec()).collect();
        self.check_shapes(&shapes)?;
        let x = &inputs[0];
        let line = |k: usize| {
            Lineup::of(
                "dequantize_linear",
                "",
                x.shape(),
                inputs[k].shape(),
                self.axis,
                self.block_size,
            )
        };
        let (xs, scale) = (f64s(x)?, f64s(&inputs[1])?);
        let sl = line(1)?;
        let zero = match inputs.get(2) {
            Some(z) => Some((f64s(z)?, line(2)?)),
            None => None,
        };
        let wide = inputs[1].dtype() == DType::F64;
        let y: Vec<f64> = xs
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let z = zero.as_ref().map_or(0.0, |(z, zl)| z[zl.at(i)]);
                let s = scale[sl.at(i)];
                if wide {
                    (v - z) * s
                } else {
                    f64::from((v as f32 - z as f32) * s as f32)
                }
            })
            .collect();
        let out = ctx.output(0, d, x.shape())?;
        out.write_f64s(&y)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new().with("axis", self.axis);
        if self.block_size > 0 {
            a = a.with("block_size", self.block_size);
        }
        if let Some(d) = self.dtype {
            a = a.with("dtype", d.name());
        }
        a
    }
}

/// The `dynamic_quantize_linear` op.
#[derive(Clone, Debug)]
pub struct DynamicQuantizeLinear;

impl Op for DynamicQuantizeLinear {
    fn name(&self) -> &str {
        "dynamic_quantize_linear"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn num_outputs(&self) -> usize {
        3
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        if inputs[0].dtype != DType::F32 {
            return dtype_err(format!(
                "op 'dynamic_quantize_linear' takes f32, got {}",
                inputs[0].dtype
            ));
        }
        Ok(vec![
            TypeInfo::new(DType::U8, inputs[0].shape.clone()),
            TypeInfo::known(DType::F32, &[]),
            TypeInfo::known(DType::U8, &[]),
        ])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let x = inputs[0].to_array::<f32>()?;
        // The range, widened to hold 0, in f32 as ONNX defines it.
        let hi = x.iter().fold(0.0f32, |m, &v| m.max(v));
        let lo = x.iter().fold(0.0f32, |m, &v| m.min(v));
        let scale = if hi == lo { 1.0f32 } else { hi - lo } / 255.0f32;
        let zp = (0.0f32 - lo / scale).clamp(0.0, 255.0).round_ties_even();
        let y: Vec<f64> = x
            .iter()
            .map(|&v| f64::from(((v / scale).round_ties_even() + zp).clamp(0.0, 255.0)))
            .collect();
        let out = ctx.output(0, DType::U8, inputs[0].shape())?;
        out.write_f64s(&y)?;
        let s = ctx.output(1, DType::F32, &[])?;
        s.write_f64s(&[f64::from(scale)])?;
        let z = ctx.output(2, DType::U8, &[])?;
        z.write_f64s(&[f64::from(zp)])?;
        Ok(vec![out, s, z])
    }
}

/// `x − zp` in i32, the zero point broadcast against x (a 1-D `zp` of x's
/// row count counts per row when `per_row`).
fn centered(op: &str, x: &Tensor, zp: &Tensor, per_row: bool) -> Result<Tensor> {
    let xi = x.cast(DType::I32)?;
    let mut z = zp.cast(DType::I32)?;
    let r = x.ndim();
    if z.size() == 1 {
        z = z.reshape(&[])?;
    } else if per_row && z.ndim() == 1 && r >= 2 && z.shape()[0] == x.shape()[r - 2] {
        z = z.expand_dims(1)?;
    }
    let z = z.broadcast_to(x.shape()).or_else(|_| {
        shape_err(format!(
            "op '{op}': zero point of shape {:?} does not fit its operand's {:?}",
            zp.shape(),
            x.shape()
        ))
    })?;
    let (xa, za) = (xi.to_array::<i32>()?, z.to_array::<i32>()?);
    Tensor::from_array(&(xa - za))
        .reshape(&x.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())
        .or_else(|_| op_err(format!("op '{op}': internal reshape")))
}

/// Refuses operands other than u8 and i8, and zero points of another dtype.
fn check_int8(op: &str, pairs: &[(DType, DType)]) -> Result<()> {
    for &(x, z) in pairs {
        if !matches!(x, DType::U8 | DType::I8) || z != x {
            return dtype_err(format!(
                "op '{op}' needs u8 or i8 operands with zero points of the same dtype, got {x} and {z}"
            ));
        }
    }
    Ok(())
}

/// The `matmul_integer` op.
#[derive(Clone, Debug)]
pub struct MatMulInteger;

impl Op for MatMulInteger {
    fn name(&self) -> &str {
        "matmul_integer"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(4)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_int8(
            "matmul_integer",
            &[
                (inputs[0].dtype, inputs[2].dtype),
                (inputs[1].dtype, inputs[3].dtype),
            ],
        )?;
        let wide: Vec<TypeInfo> = inputs[..2]
            .iter()
            .map(|t| TypeInfo::new(DType::I32, t.shape.clone()))
            .collect();
        MatMul::default().infer(&wide)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let a = centered("matmul_integer", &inputs[0], &inputs[2], true)?;
        let b = centered("matmul_integer", &inputs[1], &inputs[3], false)?;
        MatMul::default().compute(&[a, b], ctx)
    }
}

/// The `conv_integer` op: `conv`'s window and group on centered operands.
#[derive(Clone, Debug)]
pub struct ConvInteger {
    pub conv: Conv,
}

impl ConvInteger {
    /// x and w centered and widened to f64 (exact: |values| < 2^16).
    fn centered(&self, inputs: &[Tensor]) -> Result<(Tensor, Tensor)> {
        let x = centered("conv_integer", &inputs[0], &inputs[2], false)?;
        let (w, wz) = (&inputs[1], &inputs[3]);
        let per_channel = wz.size() > 1 && wz.ndim() == 1 && w.ndim() >= 1 && wz.shape()[0] == w.shape()[0];
        let wz = if per_channel {
            let mut shape = vec![w.shape()[0] as i64];
            shape.extend(std::iter::repeat_n(1, w.ndim() - 1));
            wz.reshape(&shape)?
        } else {
            wz.clone()
        };
        let w = centered("conv_integer", w, &wz, false)?;
        Ok((x.cast(DType::F64)?, w.cast(DType::F64)?))
    }
}

impl Op for ConvInteger {
    fn name(&self) -> &str {
        "conv_integer"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(4)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_int8(
            "conv_integer",
            &[
                (inputs[0].dtype, inputs[2].dtype),
                (inputs[1].dtype, inputs[3].dtype),
            ],
        )?;
        let wide: Vec<TypeInfo> = inputs[..2]
            .iter()
            .map(|t| TypeInfo::new(DType::F64, t.shape.clone()))
            .collect();
        let mut out = self.conv.infer(&wide)?;
        out[0].dtype = DType::I32;
        Ok(out)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let (x, w) = self.centered(inputs)?;
        let wide = self.conv.compute(&[x, w], &mut OpCtx::new(ctx.node()))?.remove(0);
        let out = ctx.output(0, DType::I32, wide.shape())?;
        wide.cast_into(&out)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        self.conv.attrs()
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("quantize_linear", |a: &Attrs| {
        a.only(
            "quantize_linear",
            &["axis", "block_size", "dtype", "precision", "saturate"],
        )?;
        let (axis, block_size) = axis_attrs("quantize_linear", a)?;
        let precision = a.dtype("precision")?;
        if precision.is_some_and(|p| !p.is_float()) {
            return attr_err("op 'quantize_linear': attr 'precision' must be a float dtype");
        }
        Ok(Arc::new(QuantizeLinear {
            axis,
            block_size,
            dtype: a.dtype("dtype")?,
            precision,
            saturate: a.bool("saturate")?.unwrap_or(true),
        }) as Arc<dyn Op>)
    });
    r.register("dequantize_linear", |a: &Attrs| {
        a.only("dequantize_linear", &["axis", "block_size", "dtype"])?;
        let (axis, block_size) = axis_attrs("dequantize_linear", a)?;
        Ok(Arc::new(DequantizeLinear {
            axis,
            block_size,
            dtype: a.dtype("dtype")?,
        }) as Arc<dyn Op>)
    });
    r.register_op(Arc::new(DynamicQuantizeLinear));
    r.register_op(Arc::new(MatMulInteger));
    r.register("conv_integer", |a: &Attrs| {
        let mut known = WINDOW_ATTRS.to_vec();
        known.push("group");
        a.only("conv_integer", &known)?;
        let window = Window::from_attrs(a)?;
        let group = a.i64("group")?.unwrap_or(1);
        if group < 1 || window.ceil_mode {
            return attr_err(format!(
                "op 'conv_integer': attr 'group' must be positive (got {group}) and 'ceil_mode' is not an attr of conv"
            ));
        }
        Ok(Arc::new(ConvInteger {
            conv: Conv::new(window, group as usize),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests;

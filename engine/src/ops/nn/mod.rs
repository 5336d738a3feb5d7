//! Neural-network ops on float inputs:
//!
//! - `softmax(x)` and `log_softmax(x)` along the attr `axis` (default -1),
//!   numerically stable: each lane is shifted by its maximum first, so large
//!   logits do not overflow. A lane whose maximum is not finite (all -inf, a
//!   +inf or a NaN) gives NaN, as the shifted formula does in numpy/scipy.
//! - `hardmax(x)` along the attr `axis` (default -1): 1 at the first
//!   maximum of each lane (the first NaN, if any, as numpy's `argmax`
//!   picks), 0 elsewhere; ONNX Hardmax.
//! - `cross_entropy(logits, labels)`: logits `[N, C]` float, labels `[N]`
//!   i64; the 0-d mean over rows of `-log_softmax(logits)[i, labels[i]]`.
//!   A label outside `0..C` (negative ones included) is an error naming the
//!   label and its row. With N = 0 the mean is NaN.
//! - `mse(a, b)`: the 0-d mean of `(a - b)^2` over the broadcast shape of `a`
//!   and `b` (NaN when that shape is empty). Both inputs share one dtype.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Axis, Ix1, Ix2, Zip};

use crate::dtype::{DType, Float};
use crate::error::{dtype_err, index_err, shape_err, Error, Result};
use crate::kernels::softmax::softmax_rows;
use crate::kernels::VMath;
use crate::ops::typeinfo::{broadcast_concrete, broadcast_shapes};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::layout::resolve_axis;
use crate::tensor::Tensor;

fn float_only(op: &str, what: &str, dtype: DType) -> Result<()> {
    if !dtype.is_float() {
        return dtype_err(format!(
            "op '{op}' takes float {what}, got {dtype} (insert a cast)"
        ));
    }
    Ok(())
}

fn axis_of(op: &str, axis: i64, ndim: usize) -> Result<usize> {
    resolve_axis(axis, ndim).map_err(|e| Error::Attr(format!("op '{op}': attr 'axis': {e}")))
}

/// The maximum of a lane, NaN if any element is NaN, -inf when empty.
fn lane_max<'a, T: Float>(it: impl IntoIterator<Item = &'a T>) -> T {
    it.into_iter().fold(T::neg_infinity(), |a, &b| T::maximum(a, b))
}

// ----- softmax / log_softmax ----------------------------------------------

fn softmax_kernel<T: Float>(x: &ArrayViewD<'_, T>, o: &mut ArrayViewMutD<'_, T>, ax: usize, log: bool) {
    let axis = Axis(ax);
    Zip::from(o.lanes_mut(axis))
        .and(x.lanes(axis))
        .for_each(|mut ol, xl| {
            let m = lane_max(xl.iter());
            if log {
                let lse = xl.fold(T::zero(), |s, &v| s + (v - m).exp()).ln();
                Zip::from(&mut ol).and(&xl).for_each(|o, &v| *o = v - m - lse);
            } else {
                Zip::from(&mut ol).and(&xl).for_each(|o, &v| *o = (v - m).exp());
                let s = T::sum_of(&ol.view());
                ol.mapv_inplace(|v| v / s);
            }
        });
}

fn run_softmax<T: Float + VMath>(x: &Tensor, out: &Tensor, ax: usize, log: bool) -> Result<()> {
    // The last axis of contiguous f32/f64 views: the row kernel (f16 keeps
    // the lane walk, whose sum accumulates in f32 as numpy's does).
    if ax + 1 == x.ndim()
        && x.is_contiguous()
        && out.is_contiguous()
        && !matches!(T::DTYPE, DType::F16 | DType::BF16)
    {
        let inner = x.shape()[ax];
        return x.read_contiguous(|xs: &[T]| {
            out.write_contiguous(|o: &mut [T]| softmax_rows(xs, o, inner, log))
        })?;
    }
    x.read(|xv: ArrayViewD<'_, T>| {
        out.write(|mut ov: ArrayViewMutD<'_, T>| softmax_kernel(&xv, &mut ov, ax, log))
    })??;
    Ok(())
}

/// `softmax` or `log_softmax` along `axis`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Softmax {
    pub axis: i64,
    pub log: bool,
}

impl Softmax {
    fn op_name(&self) -> &'static str {
        if self.log {
            "log_softmax"
        } else {
            "softmax"
        }
    }
}

impl Op for Softmax {
    fn name(&self) -> &str {
        self.op_name()
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        float_only(self.op_name(), "inputs", x.dtype)?;
        if let Some(r) = x.rank() {
            axis_of(self.op_name(), self.axis, r)?;
        }
        Ok(vec![x.clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        // An f16 softmax rounds where numpy's composition of ufuncs does
        // (the exps, their f32-accumulated sum, the quotients); log_softmax's
        // sum of exps runs in f16 steps, so it computes in f32 instead.
        if self.log && widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        float_only(self.op_name(), "inputs", x.dtype())?;
        let ax = axis_of(self.op_name(), self.axis, x.ndim())?;
        let out = ctx.output(0, x.dtype(), x.shape())?;
        let log = self.log;
        crate::dispatch_float!(x.dtype(), T => run_softmax::<T>(x, &out, ax, log)?,
            return dtype_err(format!("op '{}' takes float inputs", self.op_name())));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        if self.axis == -1 {
            Attrs::new()
        } else {
            Attrs::new().with("axis", self.axis)
        }
    }
}

// ----- hardmax ----------------------------------------------------------------

/// The position of the first NaN of a lane, else of its first maximum.
fn lane_argmax<T: Float>(lane: ndarray::ArrayView1<'_, T>) -> Option<usize> {
    let mut best: Option<(usize, T)> = None;
    for (i, &v) in lane.iter().enumerate() {
        if v.is_nan() {
            return Some(i);
        }
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}

fn run_hardmax<T: Float>(x: &Tensor, out: &Tensor, ax: usize) -> Result<()> {
    x.read(|xv: ArrayViewD<'_, T>| {
        out.write(|mut ov: ArrayViewMutD<'_, T>| {
            Zip::from(ov.lanes_mut(Axis(ax)))
                .and(xv.lanes(Axis(ax)))
                .for_each(|mut ol, xl| {
                    let hot = lane_argmax(xl);
                    ol.indexed_iter_mut()
                        .for_each(|(i, o)| *o = if Some(i) == hot { T::one() } else { T::zero() });
                })
        })
    })??;
    Ok(())
}

/// `hardmax` along `axis`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hardmax {
    pub axis: i64,
}

impl Op for Hardmax {
    fn name(&self) -> &str {
        "hardmax"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        float_only("hardmax", "inputs", x.dtype)?;
        if let Some(r) = x.rank() {
            axis_of("hardmax", self.axis, r)?;
        }
        Ok(vec![x.clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        float_only("hardmax", "inputs", x.dtype())?;
        let ax = axis_of("hardmax", self.axis, x.ndim())?;
        let out = ctx.output(0, x.dtype(), x.shape())?;
        let x = crate::ops::copy::detach(x, &out)?;
        crate::dispatch_float!(x.dtype(), T => run_hardmax::<T>(&x, &out, ax)?,
            return dtype_err("op 'hardmax' takes float inputs"));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("axis", self.axis)
    }
}

// ----- cross_entropy --------------------------------------------------------

/// Writes a 0-d result.
fn write_scalar<T: Float>(out: &Tensor, v: T) -> Result<()> {
    out.write(|mut o: ArrayViewMutD<'_, T>| o.fill(v))
}

fn cross_entropy_kernel<T: Float>(logits: &ArrayViewD<'_, T>, labels: &ArrayViewD<'_, i64>) -> Result<T> {
    let dim_err = |e: ndarray::ShapeError| Error::Op(format!("internal: cross_entropy operand rank: {e}"));
    let l = logits.view().into_dimensionality::<Ix2>().map_err(dim_err)?;
    let y = labels.view().into_dimensionality::<Ix1>().map_err(dim_err)?;
    let (n, c) = l.dim();
    let mut total = T::zero();
    for (i, (row, &label)) in l.rows().into_iter().zip(y.iter()).enumerate() {
        let picked = usize::try_from(label).ok().and_then(|j| row.get(j).copied());
        let Some(picked) = picked else {
            return index_err(format!(
                "op 'cross_entropy': label {label} in row {i} is out of range for {c} classes"
            ));
        };
        // -log_softmax(row)[label] = max + log(sum(exp(row - max))) - row[label]
        let m = lane_max(row.iter());
        let lse = row.fold(T::zero(), |s, &v| s + (v - m).exp()).ln();
        total += m + lse - picked;
    }
    // An empty batch gives 0 / 0 = NaN, as numpy's mean.
    Ok(total / T::from_f64(n as f64))
}

fn run_cross_entropy<T: Float>(logits: &Tensor, labels: &Tensor, out: &Tensor) -> Result<()> {
    let loss = logits.read(|lv: ArrayViewD<'_, T>| {
        labels.read(|yv: ArrayViewD<'_, i64>| cross_entropy_kernel(&lv, &yv))
    })???;
    write_scalar(out, loss)
}

/// `cross_entropy(logits [N, C], labels [N] i64)` → 0-d mean loss.
#[derive(Clone, Debug)]
pub struct CrossEntropy;

impl Op for CrossEntropy {
    fn name(&self) -> &str {
        "cross_entropy"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (l, y) = (&inputs[0], &inputs[1]);
        float_only("cross_entropy", "logits", l.dtype)?;
        if y.dtype != DType::I64 {
            return dtype_err(format!("op 'cross_entropy': labels must be i64, got {}", y.dtype));
        }
        if l.rank().is_some_and(|r| r != 2) || y.rank().is_some_and(|r| r != 1) {
            return shape_err(format!(
                "op 'cross_entropy' needs logits [N, C] and labels [N], got {} and {}",
                l.shape_string(),
                y.shape_string()
            ));
        }
        if let (Some(ls), Some(ys)) = (&l.shape, &y.shape) {
            if ls[0] >= 0 && ys[0] >= 0 && ls[0] != ys[0] {
                return shape_err(format!(
                    "op 'cross_entropy': logits {} and labels {} differ in N",
                    l.shape_string(),
                    y.shape_string()
                ));
            }
        }
        Ok(vec![TypeInfo::known(l.dtype, &[])])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let (l, y) = (&inputs[0], &inputs[1]);
        float_only("cross_entropy", "logits", l.dtype())?;
        if y.dtype() != DType::I64 {
            return dtype_err(format!(
                "op 'cross_entropy': labels must be i64, got {}",
                y.dtype()
            ));
        }
        if l.ndim() != 2 || y.ndim() != 1 || l.shape()[0] != y.shape()[0] {
            return shape_err(format!(
                "op 'cross_entropy' needs logits [N, C] and labels [N], got {:?} and {:?}",
                l.shape(),
                y.shape()
            ));
        }
        let out = ctx.output(0, l.dtype(), &[])?;
        crate::dispatch_float!(l.dtype(), T => run_cross_entropy::<T>(l, y, &out)?,
            return dtype_err("op 'cross_entropy' takes float logits"));
        Ok(vec![out])
    }
}

// ----- mse ------------------------------------------------------------------

fn run_mse<T: Float>(a: &Tensor, b: &Tensor, shape: &[usize], out: &Tensor) -> Result<()> {
    let (a, b) = (a.broadcast_to(shape)?, b.broadcast_to(shape)?);
    let n: usize = shape.iter().product();
    let total = a.read(|av: ArrayViewD<'_, T>| {
        b.read(|bv: ArrayViewD<'_, T>| {
            Zip::from(&av).and(&bv).fold(T::zero(), |s, &x, &y| {
                let d = x - y;
                s + d * d
            })
        })
    })??;
    // An empty shape gives 0 / 0 = NaN, as numpy's mean.
    write_scalar(out, total / T::from_f64(n as f64))
}

/// `mse(a, b)` → 0-d mean of `(a - b)^2`, broadcasting `a` and `b`.
#[derive(Clone, Debug)]
pub struct Mse;

impl Op for Mse {
    fn name(&self) -> &str {
        "mse"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (a, b) = (&inputs[0], &inputs[1]);
        float_only("mse", "inputs", a.dtype)?;
        if a.dtype != b.dtype {
            return dtype_err(format!(
                "op 'mse' needs inputs of one dtype, got {} and {} (insert a cast)",
                a.dtype, b.dtype
            ));
        }
        broadcast_shapes(&a.shape, &b.shape).map_err(|_| {
            Error::Shape(format!(
                "op 'mse': shapes {} and {} do not broadcast",
                a.shape_string(),
                b.shape_string()
            ))
        })?;
        Ok(vec![TypeInfo::known(a.dtype, &[])])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let (a, b) = (&inputs[0], &inputs[1]);
        float_only("mse", "inputs", a.dtype())?;
        if a.dtype() != b.dtype() {
            return dtype_err(format!(
                "op 'mse' needs inputs of one dtype, got {} and {} (insert a cast)",
                a.dtype(),
                b.dtype()
            ));
        }
        let shape = broadcast_concrete(a.shape(), b.shape()).map_err(|_| {
            Error::Shape(format!(
                "op 'mse': shapes {:?} and {:?} do not broadcast",
                a.shape(),
                b.shape()
            ))
        })?;
        let out = ctx.output(0, a.dtype(), &[])?;
        crate::dispatch_float!(a.dtype(), T => run_mse::<T>(a, b, &shape, &out)?,
            return dtype_err("op 'mse' takes float inputs"));
        Ok(vec![out])
    }
}

pub fn register(r: &mut OpRegistry) {
    for log in [false, true] {
        let name = if log { "log_softmax" } else { "softmax" };
        r.register(name, move |a: &Attrs| {
            a.only(name, &["axis"])?;
            let op = Softmax {
                axis: a.i64("axis")?.unwrap_or(-1),
                log,
            };
            Ok(Arc::new(op) as Arc<dyn Op>)
        });
    }
    r.register("hardmax", |a: &Attrs| {
        a.only("hardmax", &["axis"])?;
        Ok(Arc::new(Hardmax {
            axis: a.i64("axis")?.unwrap_or(-1),
        }) as Arc<dyn Op>)
    });
    r.register_op(Arc::new(CrossEntropy));
    r.register_op(Arc::new(Mse));
}

#[cfg(test)]
mod tests;

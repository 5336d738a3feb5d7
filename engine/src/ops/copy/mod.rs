//! Copying ops: `strided_slice` (basic indexing into a new buffer: the "view
//! is a copy" baseline that CreateView replaces), `gather` (numpy `take`),
//! `concat`, `stack` and `copy`.
//!
//! None of them declares a view: every output is the buffer `ctx.output`
//! hands out (fresh or pre-allocated, possibly non-contiguous), and the
//! kernels overwrite all of its elements. An input that shares the output's
//! buffer (a pre-allocated output aliasing an input) is copied first.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Axis, Slice, Zip};

use crate::dtype::{DType, Element};
use crate::error::{dtype_err, index_err, rank_err, shape_err, Error, Result};
use crate::ops::view::{decode_indices, infer_indexed};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::layout::resolve_axis;
use crate::tensor::Tensor;

/// `src`, or a copy of it when it shares `out`'s buffer, so that reading it
/// while `out` is written neither aliases nor sees half-written data.
pub(crate) fn detach(src: &Tensor, out: &Tensor) -> Result<Tensor> {
    if src.same_buffer(out) {
        src.deep_copy()
    } else {
        Ok(src.clone())
    }
}

/// Resolves the `axis` attr of `op` against `ndim` axes; the error names the
/// op and the attr.
pub(crate) fn axis_of(op: &str, axis: i64, ndim: usize) -> Result<usize> {
    resolve_axis(axis, ndim).map_err(|e| Error::Attr(format!("op '{op}': attr 'axis': {e}")))
}

/// All inputs must have input 0's dtype.
fn same_dtypes(op: &str, dtypes: impl Iterator<Item = DType>) -> Result<Option<DType>> {
    let mut first = None;
    for (i, dt) in dtypes.enumerate() {
        match first {
            None => first = Some(dt),
            Some(d0) if d0 != dt => {
                return dtype_err(format!(
                "op '{op}': input {i} is {dt}, input 0 is {d0} (inputs must have one dtype; insert a cast)"
            ))
            }
            Some(_) => {}
        }
    }
    Ok(first)
}

/// Merges the partial shapes of the inputs that must agree on every axis
/// but `skip`. Inputs of unknown rank are left out; `None` when no input
/// has a known rank.
fn merge_partial(op: &str, inputs: &[TypeInfo], skip: Option<usize>) -> Result<Option<Vec<i64>>> {
    let mut merged: Option<(usize, Vec<i64>)> = None;
    for (i, t) in inputs.iter().enumerate() {
        let Some(s) = &t.shape else { continue };
        match &mut merged {
            None => merged = Some((i, s.clone())),
            Some((first, m)) => {
                if m.len() != s.len() {
                    return shape_err(format!(
                        "op '{op}': input {i} has {} dimensions {}, input {first} has {} {}",
                        s.len(),
                        t.shape_string(),
                        m.len(),
                        inputs[*first].shape_string()
                    ));
                }
                for (ax, (a, &b)) in m.iter_mut().zip(s).enumerate() {
                    if Some(ax) == skip {
                        continue;
                    }
                    if *a >= 0 && b >= 0 && *a != b {
                        return shape_err(format!(
                            "op '{op}': input {i} has shape {}, input {first} has {}; they differ on axis {ax}",
                            t.shape_string(),
                            inputs[*first].shape_string()
                        ));
                    }
                    if *a < 0 {
                        *a = b;
                    }
                }
            }
        }
    }
    Ok(merged.map(|(_, m)| m))
}

// ----- strided_slice --------------------------------------------------------

/// `strided_slice(x, idx...)`: create_view's basic indexing, copied into a
/// new buffer.
#[derive(Clone, Debug)]
pub struct StridedSlice;

impl Op for StridedSlice {
    fn name(&self) -> &str {
        "strided_slice"
    }
    fn arity(&self) -> Arity {
        Arity::at_least(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        Ok(vec![infer_indexed("strided_slice", inputs)?])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let idx = decode_indices(&inputs[1..])?;
        let view = inputs[0].slice(&idx)?;
        let out = ctx.output(0, view.dtype(), view.shape())?;
        // `assign` dispatches once and copies a source sharing `out` first.
        out.assign(&view)?;
        Ok(vec![out])
    }
}

// ----- gather ---------------------------------------------------------------

/// `gather(x, indices)` with attr `axis`: numpy's `take(x, indices, axis)`.
/// The output shape is `x.shape[:axis] + indices.shape + x.shape[axis+1:]`;
/// negative indices count from the end (once), others out of range fail.
#[derive(Clone, Debug)]
pub struct Gather {
    pub axis: i64,
}

/// Below this many elements per slab, gather walks lanes along the axis
/// instead of copying one sub-array per index.
const SLAB_MIN: usize = 8;

fn gather_kernel<T: Element>(x: &Tensor, idx: &[usize], ax: usize, dst: &Tensor) -> Result<()> {
    let inner: usize = x.shape()[ax + 1..].iter().product();
    x.read(|xv: ArrayViewD<'_, T>| {
        dst.write(|mut dv: ArrayViewMutD<'_, T>| {
            if inner >= SLAB_MIN {
                for (k, &i) in idx.iter().enumerate() {
                    dv.index_axis_mut(Axis(ax), k).assign(&xv.index_axis(Axis(ax), i));
                }
            } else {
                Zip::from(dv.lanes_mut(Axis(ax)))
                    .and(xv.lanes(Axis(ax)))
                    .for_each(|mut d, s| {
                        d.iter_mut().zip(idx).for_each(|(d, &i)| *d = s[i]);
                    });
            }
        })
    })??;
    Ok(())
}

impl Op for Gather {
    fn name(&self) -> &str {
        "gather"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (x, ind) = (&inputs[0], &inputs[1]);
        if ind.dtype != DType::I64 {
            return dtype_err(format!(
                "op 'gather': indices (input 1) must be i64, got {}",
                ind.dtype
            ));
        }
        let shape = match &x.shape {
            None => None,
            Some(xs) if xs.is_empty() => {
                return rank_err(format!(
                    "op 'gather': input 0 is 0-d; there is no axis {} to take along",
                    self.axis
                ))
            }
            Some(xs) => {
                let ax = axis_of("gather", self.axis, xs.len())?;
                ind.shape.as_ref().map(|is| {
                    let mut s = xs[..ax].to_vec();
                    s.extend_from_slice(is);
                    s.extend_from_slice(&xs[ax + 1..]);
                    s
                })
            }
        };
        Ok(vec![TypeInfo::new(x.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let (x, ind) = (&inputs[0], &inputs[1]);
        if ind.dtype() != DType::I64 {
            return dtype_err(format!(
                "op 'gather': indices (input 1) must be i64, got {}",
                ind.dtype()
            ));
        }
        if x.ndim() == 0 {
            return rank_err(format!(
                "op 'gather': input 0 is 0-d; there is no axis {} to take along",
                self.axis
            ));
        }
        let ax = axis_of("gather", self.axis, x.ndim())?;
        let n = x.shape()[ax];
        let resolve = |i: i64| -> Result<usize> {
            let j = if i < 0 { i + n as i64 } else { i };
            if j < 0 || j >= n as i64 {
                return index_err(format!(
                    "op 'gather': index {i} is out of range for axis {ax} of length {n}"
                ));
            }
            Ok(j as usize)
        };
        let idx = ind
            .read(|v: ArrayViewD<'_, i64>| v.iter().map(|&i| resolve(i)).collect::<Result<Vec<usize>>>())??;

        let mut out_shape = x.shape()[..ax].to_vec();
        out_shape.extend_from_slice(ind.shape());
        out_shape.extend_from_slice(&x.shape()[ax + 1..]);
        // The kernel writes the output seen as x.shape with axis `ax` of
        // length idx.len(): the index axes flattened into one.
        let mut flat = x.shape().to_vec();
        flat[ax] = idx.len();

        let out = ctx.output(0, x.dtype(), &out_shape)?;
        let x = detach(x, &out)?;
        let (dst, staged) = match out.layout().reshape(&flat) {
            Some(l) => (out.with_layout(l)?, false),
            None => (Tensor::uninit(x.dtype(), &flat)?, true),
        };
        crate::dispatch_all!(x.dtype(), T => gather_kernel::<T>(&x, &idx, ax, &dst)?);
        if staged {
            // A pre-allocated output whose layout cannot be seen flat.
            let shape: Vec<i64> = out_shape.iter().map(|&d| d as i64).collect();
            out.assign(&dst.reshape(&shape)?)?;
        }
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("axis", self.axis)
    }
}

// ----- concat ---------------------------------------------------------------

/// `concat(x0, x1, ...)` along attr `axis`: one dtype, equal shapes except
/// on the axis.
#[derive(Clone, Debug)]
pub struct Concat {
    pub axis: i64,
}

fn concat_kernel<T: Element>(inputs: &[Tensor], ax: usize, out: &Tensor) -> Result<()> {
    out.write(|mut ov: ArrayViewMutD<'_, T>| -> Result<()> {
        let mut off = 0;
        for t in inputs {
            let len = t.shape()[ax];
            t.read(|tv: ArrayViewD<'_, T>| {
                ov.slice_axis_mut(Axis(ax), Slice::from(off..off + len))
                    .assign(&tv)
            })?;
            off += len;
        }
        Ok(())
    })?
}

impl Op for Concat {
    fn name(&self) -> &str {
        "concat"
    }
    fn arity(&self) -> Arity {
        Arity::at_least(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let dtype = inputs[0].dtype;
        same_dtypes("concat", inputs.iter().map(|t| t.dtype))?;
        let rank = inputs.iter().find_map(TypeInfo::rank);
        let shape = match rank {
            None => None,
            Some(0) => return rank_err("op 'concat': 0-d inputs cannot be concatenated"),
            Some(r) => {
                let ax = axis_of("concat", self.axis, r)?;
                let mut s = merge_partial("concat", inputs, Some(ax))?.unwrap_or_default();
                let mut total = 0i64;
                for t in inputs {
                    match t.shape.as_ref().map(|s| s[ax]) {
                        Some(d) if d >= 0 && total >= 0 => total += d,
                        _ => total = -1,
                    }
                }
                s[ax] = total;
                Some(s)
            }
        };
        Ok(vec![TypeInfo::new(dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x0 = &inputs[0];
        same_dtypes("concat", inputs.iter().map(Tensor::dtype))?;
        if x0.ndim() == 0 {
            return rank_err("op 'concat': 0-d inputs cannot be concatenated");
        }
        let ax = axis_of("concat", self.axis, x0.ndim())?;
        let mut shape = x0.shape().to_vec();
        shape[ax] = 0;
        for (i, t) in inputs.iter().enumerate() {
            let agrees = t.ndim() == x0.ndim()
                && t.shape()
                    .iter()
                    .zip(x0.shape())
                    .enumerate()
                    .all(|(k, (a, b))| k == ax || a == b);
            if !agrees {
                return shape_err(format!(
                    "op 'concat': input {i} has shape {:?}, input 0 has {:?}; they must agree except on axis {ax}",
                    t.shape(),
                    x0.shape()
                ));
            }
            shape[ax] = shape[ax]
                .checked_add(t.shape()[ax])
                .ok_or_else(|| Error::Op("op 'concat': the output is too large".into()))?;
        }
        let out = ctx.output(0, x0.dtype(), &shape)?;
        let inputs = inputs
            .iter()
            .map(|t| detach(t, &out))
            .collect::<Result<Vec<_>>>()?;
        crate::dispatch_all!(x0.dtype(), T => concat_kernel::<T>(&inputs, ax, &out)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("axis", self.axis)
    }
}

// ----- stack ----------------------------------------------------------------

/// `stack(x0, x1, ...)`: equal shapes, joined along a new axis `axis` in
/// `[-(ndim+1), ndim]`.
#[derive(Clone, Debug)]
pub struct Stack {
    pub axis: i64,
}

fn stack_kernel<T: Element>(inputs: &[Tensor], ax: usize, out: &Tensor) -> Result<()> {
    out.write(|mut ov: ArrayViewMutD<'_, T>| -> Result<()> {
        for (k, t) in inputs.iter().enumerate() {
            t.read(|tv: ArrayViewD<'_, T>| ov.index_axis_mut(Axis(ax), k).assign(&tv))?;
        }
        Ok(())
    })?
}

impl Op for Stack {
    fn name(&self) -> &str {
        "stack"
    }
    fn arity(&self) -> Arity {
        Arity::at_least(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let dtype = inputs[0].dtype;
        same_dtypes("stack", inputs.iter().map(|t| t.dtype))?;
        let shape = match merge_partial("stack", inputs, None)? {
            None => None,
            Some(mut s) => {
                let ax = axis_of("stack", self.axis, s.len() + 1)?;
                s.insert(ax, inputs.len() as i64);
                Some(s)
            }
        };
        Ok(vec![TypeInfo::new(dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x0 = &inputs[0];
        same_dtypes("stack", inputs.iter().map(Tensor::dtype))?;
        for (i, t) in inputs.iter().enumerate() {
            if t.shape() != x0.shape() {
                return shape_err(format!(
                    "op 'stack': input {i} has shape {:?}, input 0 has {:?}; all inputs must have one shape",
                    t.shape(),
                    x0.shape()
                ));
            }
        }
        let ax = axis_of("stack", self.axis, x0.ndim() + 1)?;
        let mut shape = x0.shape().to_vec();
        shape.insert(ax, inputs.len());
        let out = ctx.output(0, x0.dtype(), &shape)?;
        let inputs = inputs
            .iter()
            .map(|t| detach(t, &out))
            .collect::<Result<Vec<_>>>()?;
        crate::dispatch_all!(x0.dtype(), T => stack_kernel::<T>(&inputs, ax, &out)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("axis", self.axis)
    }
}

// ----- copy -----------------------------------------------------------------

/// `copy(x)`: the elements of `x` in a new buffer.
#[derive(Clone, Debug)]
pub struct CopyOp;

impl Op for CopyOp {
    fn name(&self) -> &str {
        "copy"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let out = ctx.output(0, x.dtype(), x.shape())?;
        out.assign(x)?;
        Ok(vec![out])
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register_op(Arc::new(StridedSlice));
    r.register_op(Arc::new(CopyOp));
    r.register("gather", |a: &Attrs| {
        a.only("gather", &["axis"])?;
        Ok(Arc::new(Gather {
            axis: a.i64("axis")?.unwrap_or(0),
        }) as Arc<dyn Op>)
    });
    r.register("concat", |a: &Attrs| {
        a.only("concat", &["axis"])?;
        Ok(Arc::new(Concat {
            axis: a.i64("axis")?.unwrap_or(0),
        }) as Arc<dyn Op>)
    });
    r.register("stack", |a: &Attrs| {
        a.only("stack", &["axis"])?;
        Ok(Arc::new(Stack {
            axis: a.i64("axis")?.unwrap_or(0),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests;

//! Pooling over the spatial axes of `[N, C, spatial…]` inputs, with ONNX's
//! semantics:
//!
//! - `max_pool(x)`: the window attrs (`kernel_shape` required, `strides`,
//!   `dilations`, `pads`, `auto_pad`, `ceil_mode`); padding never wins
//!   (it counts as -inf); NaN propagates. Numeric dtypes. With attr
//!   `indices` (default false) a second output, i64, says where each
//!   value came from (ONNX MaxPool's `Indices`; `storage_order` 0 or 1:
//!   see [`indices`]).
//! - `average_pool(x)`: the same attrs and `count_include_pad` (default 0):
//!   the divisor is the number of window positions inside the input, or,
//!   with `count_include_pad`, inside the padded input. Float dtypes.
//! - `global_average_pool(x)`, `global_max_pool(x)`: one window covering
//!   every spatial axis; the output keeps them as length 1.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD};

use crate::dtype::{DType, Float, Num};
use crate::error::{attr_err, dtype_err, rank_err, refuse_dtype, shape_err, Result};
use crate::ops::widen;
use crate::ops::window::{infer_spatial, padded_counts, Axis1, Window, WINDOW_ATTRS};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

pub mod indices;
mod planar;
mod reduce;
#[cfg(test)]
mod tests;

use indices::{max_indices, IndexOrder};
use reduce::{average_reduce, max_reduce};

/// Which reduction a pool applies to each window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    Max,
    Average { count_include_pad: bool },
}

/// `max_pool`, `average_pool`, or (with `global`) their global forms.
#[derive(Clone, Debug)]
pub struct Pool {
    pub kind: PoolKind,
    pub window: Window,
    pub global: bool,
    /// `max_pool` only: the order of its second output, the indices;
    /// `None`: one output.
    pub indices: Option<IndexOrder>,
}

impl Pool {
    fn op_name(&self) -> &'static str {
        match (self.kind, self.global) {
            (PoolKind::Max, false) => "max_pool",
            (PoolKind::Max, true) => "global_max_pool",
            (PoolKind::Average { .. }, false) => "average_pool",
            (PoolKind::Average { .. }, true) => "global_average_pool",
        }
    }

    fn kernel(&self, spatial: &[usize]) -> Result<Vec<usize>> {
        if self.global {
            return Ok(spatial.to_vec());
        }
        if self.window.kernel.is_empty() {
            return attr_err(format!("op '{}' needs attr 'kernel_shape'", self.op_name()));
        }
        Ok(self.window.kernel.clone())
    }

    fn check_dtype(&self, dtype: DType) -> Result<()> {
        let ok = match self.kind {
            PoolKind::Max => dtype != DType::Bool,
            PoolKind::Average { .. } => dtype.is_float(),
        };
        if !ok {
            return dtype_err(format!("op '{}' does not take {dtype} inputs", self.op_name()));
        }
        Ok(())
    }

    /// A global pool over a zero-size spatial axis: the mean of nothing
    /// is NaN (as `reduce_mean`'s), the max of nothing has no value (as
    /// `reduce_max` refuses it).
    fn check_spatial_nonempty<D: std::fmt::Debug>(&self, shape: &[D]) -> Result<()> {
        if self.kind == PoolKind::Max {
            return shape_err(format!(
                "op '{}': a zero-size spatial axis in input shape {shape:?} has no maximum",
                self.op_name()
            ));
        }
        Ok(())
    }

    /// The output of a global pool whose window holds no element: `[N, C,
    /// 1…]` of NaN for the average; an error for the max.
    fn global_over_nothing(&self, x: &Tensor, ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        self.check_spatial_nonempty(x.shape())?;
        let mut shape = x.shape()[..2].to_vec();
        shape.extend(std::iter::repeat_n(1, x.shape().len() - 2));
        let out = ctx.output(0, x.dtype(), &shape)?;
        let n: usize = shape.iter().product();
        out.assign(&Tensor::from_vec(&shape, vec![f64::NAN; n])?.cast(x.dtype())?)?;
        Ok(vec![out])
    }

    fn axes(&self, shape: &[usize]) -> Result<Vec<Axis1>> {
        if shape.len() < 3 {
            return shape_err(format!(
                "op '{}': input must be [N, C, spatial…], got shape {shape:?}",
                self.op_name()
            ));
        }
        let kernel = self.kernel(&shape[2..])?;
        self.window.resolve(self.op_name(), &shape[2..], &kernel)
    }
}

fn run_pool<T: Num>(p: &Pool, x: &Tensor, out: &Tensor, idx: Option<&Tensor>, axes: &[Axis1]) -> Result<()> {
    x.read(|xv: ArrayViewD<'_, T>| {
        let xc = xv.as_standard_layout();
        let xs = xc
            .as_slice()
            .ok_or_else(|| crate::error::Error::Op("internal: pool input".into()))?;
        out.write(|mut ov: ArrayViewMutD<'_, T>| {
            let standard = ov.is_standard_layout();
            let mut tmp = if standard {
                Vec::new()
            } else {
                vec![T::zero(); ov.len()]
            };
            let shape = ov.shape().to_vec();
            let dst = match ov.as_slice_mut() {
                Some(s) => s,
                None => &mut tmp[..],
            };
            match p.kind {
                PoolKind::Max => max_reduce::<T>().planes(xs, dst, axes)?,
                PoolKind::Average { count_include_pad } => {
                    let counts = count_include_pad.then(|| padded_counts(axes));
                    let r = average_reduce::<T>(counts.as_deref());
                    r.planes(xs, dst, axes)?
                }
            }
            if let (Some(idx), Some(order)) = (idx, p.indices) {
                idx.write_c_order(|o: &mut [i64]| max_indices(xs, dst, axes, order, o))??;
            }
            if !standard {
                let v = ArrayViewD::from_shape(shape, &tmp[..])
                    .map_err(|e| crate::error::Error::Op(format!("internal: pool output: {e}")))?;
                ov.assign(&v);
            }
            Ok(())
        })?
    })?
}

fn run_float<T: Float>(p: &Pool, x: &Tensor, out: &Tensor, axes: &[Axis1]) -> Result<()> {
    run_pool::<T>(p, x, out, None, axes)
}

impl Op for Pool {
    fn name(&self) -> &str {
        self.op_name()
    }
    fn num_outputs(&self) -> usize {
        1 + usize::from(self.indices.is_some())
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype)?;
        let Some(s) = &x.shape else {
            return Ok(vec![x.clone()]);
        };
        if s.len() < 3 {
            return rank_err(format!(
                "op '{}': input must be [N, C, spatial…], got rank {}",
                self.op_name(),
                s.len()
            ));
        }
        if self.global {
            if s[2..].contains(&0) {
                self.check_spatial_nonempty(s)?;
            }
            let mut out = s[..2].to_vec();
            out.extend(std::iter::repeat_n(1, s.len() - 2));
            return Ok(vec![TypeInfo::new(x.dtype, Some(out))]);
        }
        let kernel = self.kernel(&[])?;
        let shape = infer_spatial(self.op_name(), &self.window, &x.shape, &kernel, s[1])?;
        let mut outs = vec![TypeInfo::new(x.dtype, shape.clone())];
        if self.indices.is_some() {
            outs.push(TypeInfo::new(DType::I64, shape));
        }
        Ok(outs)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if self.kind != PoolKind::Max && widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype())?;
        if self.global && x.shape().len() >= 3 && x.shape()[2..].contains(&0) {
            return self.global_over_nothing(x, ctx);
        }
        let axes = self.axes(x.shape())?;
        let mut shape = x.shape()[..2].to_vec();
        shape.extend(axes.iter().map(|a| a.output));
        let out = ctx.output(0, x.dtype(), &shape)?;
        let idx = match self.indices {
            Some(_) => Some(ctx.output(1, DType::I64, &shape)?),
            None => None,
        };
        match self.kind {
            PoolKind::Max => {
                crate::dispatch_num!(x.dtype(), T => run_pool::<T>(self, x, &out, idx.as_ref(), &axes)?,
                return refuse_dtype(self.op_name(), x.dtype()))
            }
            PoolKind::Average { .. } => {
                crate::dispatch_float!(x.dtype(), T => run_float::<T>(self, x, &out, &axes)?,
                return dtype_err(format!("op '{}' takes float inputs", self.op_name())))
            }
        }
        Ok(std::iter::once(out).chain(idx).collect())
    }
    fn attrs(&self) -> Attrs {
        let a = match (self.kind, self.indices) {
            (
                PoolKind::Average {
                    count_include_pad: true,
                },
                _,
            ) => Attrs::new().with("count_include_pad", 1),
            (PoolKind::Max, Some(order)) => Attrs::new()
                .with("indices", true)
                .with("storage_order", order.storage_order()),
            _ => Attrs::new(),
        };
        if self.global {
            a
        } else {
            self.window.to_attrs(a)
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("max_pool", |a: &Attrs| {
        let mut known = WINDOW_ATTRS.to_vec();
        known.extend(["indices", "storage_order"]);
        a.only("max_pool", &known)?;
        let storage_order = a.i64("storage_order")?.unwrap_or(0);
        let Some(order) = IndexOrder::from_storage_order(storage_order) else {
            return attr_err(format!(
                "op 'max_pool': attr 'storage_order' must be 0 or 1, got {storage_order}"
            ));
        };
        let p = Pool {
            kind: PoolKind::Max,
            window: Window::from_attrs(a)?,
            global: false,
            indices: a.bool("indices")?.unwrap_or(false).then_some(order),
        };
        p.kernel(&[])?;
        Ok(Arc::new(p) as Arc<dyn Op>)
    });
    r.register("average_pool", |a: &Attrs| {
        let mut known = WINDOW_ATTRS.to_vec();
        known.push("count_include_pad");
        a.only("average_pool", &known)?;
        let p = Pool {
            kind: PoolKind::Average {
                count_include_pad: a.i64("count_include_pad")?.unwrap_or(0) != 0,
            },
            window: Window::from_attrs(a)?,
            global: false,
            indices: None,
        };
        p.kernel(&[])?;
        Ok(Arc::new(p) as Arc<dyn Op>)
    });
    for kind in [
        PoolKind::Max,
        PoolKind::Average {
            count_include_pad: false,
        },
    ] {
        r.register_op(Arc::new(Pool {
            kind,
            window: Window::default(),
            global: true,
            indices: None,
        }));
    }
}

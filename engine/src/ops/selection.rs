//! Ops whose output is laid out by index values, with ONNX's semantics:
//!
//! - `one_hot(indices, values)` (OneHot): `values` is `[off, on]`; the
//!   output has indices' shape with a new axis of length attr `depth` at
//!   attr `axis` (default -1, counted in the output's rank), `on` where the
//!   new axis's index equals the index and `off` elsewhere. A negative
//!   index counts from `depth`; one still outside `[0, depth)` gives a row
//!   of `off`. Float indices are truncated toward zero. The output has
//!   values' dtype.
//! - `compress(x, condition)` (Compress): the slices of x along attr
//!   `axis` whose entry in the 1-D bool `condition` is true (a condition
//!   shorter than the axis keeps none past its end); without `axis`, the
//!   elements of x flattened in C order. The output's length along the axis
//!   is decided by the condition's values, so `infer` leaves it unknown
//!   (-1) until the node runs.

use std::sync::Arc;

use crate::dtype::{DType, Element};
use crate::error::{attr_err, dtype_err, shape_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `one_hot` op.
#[derive(Clone, Debug, PartialEq)]
pub struct OneHot {
    pub depth: usize,
    pub axis: i64,
}

impl OneHot {
    /// The new axis's position in an output of rank `rank + 1`.
    fn axis(&self, rank: usize) -> Result<usize> {
        let r = rank as i64 + 1;
        let a = if self.axis < 0 { self.axis + r } else { self.axis };
        if a < 0 || a >= r {
            return attr_err(format!(
                "op 'one_hot': axis {} is out of range for indices of rank {rank}",
                self.axis
            ));
        }
        Ok(a as usize)
    }
}

fn one_hot_kernel<T: Element>(
    op: &OneHot,
    idx: &[f64],
    a: usize,
    shape: &[usize],
    values: &Tensor,
    out: &Tensor,
) -> Result<()> {
    let v = values.to_array::<T>()?;
    let (off, on) = (v[[0]], v[[1]]);
    let inner: usize = shape[a..].iter().product();
    let d = op.depth;
    out.write_c_order(|o: &mut [T]| {
        o.iter_mut().for_each(|e| *e = off);
        for (i, &x) in idx.iter().enumerate() {
            let k = x.trunc() as i64;
            let k = if k < 0 { k + d as i64 } else { k };
            if (0..d as i64).contains(&k) {
                let (outer, n) = (i / inner, i % inner);
                o[(outer * d + k as usize) * inner + n] = on;
            }
        }
    })
}

impl Op for OneHot {
    fn name(&self) -> &str {
        "one_hot"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        if !inputs[0].dtype.is_numeric() {
            return dtype_err(format!(
                "op 'one_hot' needs numeric indices, got {}",
                inputs[0].dtype
            ));
        }
        if let Some(s) = inputs[1].static_shape() {
            if s != [2] {
                return shape_err(format!("op 'one_hot': values must be [off, on], got {s:?}"));
            }
        }
        let shape = match &inputs[0].shape {
            Some(s) => {
                let mut s = s.clone();
                s.insert(self.axis(s.len())?, self.depth as i64);
                Some(s)
            }
            None => None,
        };
        Ok(vec![TypeInfo::new(inputs[1].dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let (ind, values) = (&inputs[0], &inputs[1]);
        let a = self.axis(ind.ndim())?;
        let mut shape = ind.shape().to_vec();
        shape.insert(a, self.depth);
        let out = ctx.output(0, values.dtype(), &shape)?;
        let idx = ind.to_f64_vec()?;
        crate::dispatch_all!(values.dtype(), T => one_hot_kernel::<T>(self, &idx, a, ind.shape(), values, &out)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("depth", self.depth).with("axis", self.axis)
    }
}

/// The `compress` op.
#[derive(Clone, Debug, PartialEq)]
pub struct Compress {
    /// `None`: over x flattened.
    pub axis: Option<i64>,
}

impl Compress {
    fn axis(&self, rank: usize) -> Result<Option<usize>> {
        let Some(axis) = self.axis else { return Ok(None) };
        let a = if axis < 0 { axis + rank as i64 } else { axis };
        if a < 0 || a >= rank as i64 {
            return attr_err(format!(
                "op 'compress': axis {axis} is out of range for rank {rank}"
            ));
        }
        Ok(Some(a as usize))
    }
}

fn compress_kernel<T: Element>(
    x: &Tensor,
    keep: &[usize],
    d: usize,
    inner: usize,
    out: &Tensor,
) -> Result<()> {
    let xa = x.to_array::<T>()?;
    let xs = xa.as_slice().unwrap_or_default();
    let mut y = Vec::with_capacity(keep.len() * inner * (xs.len() / (d * inner).max(1)));
    if d > 0 && inner > 0 {
        for outer in xs.chunks_exact(d * inner) {
            for &k in keep {
                y.extend_from_slice(&outer[k * inner..(k + 1) * inner]);
            }
        }
    }
    out.write_c_order(|o: &mut [T]| o.copy_from_slice(&y))
}

impl Op for Compress {
    fn name(&self) -> &str {
        "compress"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        if inputs[1].dtype != DType::Bool || inputs[1].rank().is_some_and(|r| r != 1) {
            return dtype_err(format!(
                "op 'compress': condition must be a 1-D bool tensor, got {} {}",
                inputs[1].dtype,
                inputs[1].shape_string()
            ));
        }
        let shape = match (&inputs[0].shape, self.axis) {
            (_, None) => Some(vec![-1]),
            (Some(s), Some(_)) => {
                let a = self.axis(s.len())?.unwrap_or(0);
                let mut s = s.clone();
                s[a] = -1;
                Some(s)
            }
            (None, Some(_)) => None,
        };
        Ok(vec![TypeInfo::new(inputs[0].dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let x = &inputs[0].to_contiguous()?;
        let cond = inputs[1].to_array::<bool>()?;
        let (flat, a) = match self.axis(x.ndim())? {
            Some(a) => (x.clone(), a),
            None => (x.reshape(&[-1])?, 0),
        };
        let d = flat.shape()[a];
        let inner: usize = flat.shape()[a + 1..].iter().product();
        let keep: Vec<usize> = cond
            .iter()
            .take(d)
            .enumerate()
            .filter(|(_, &c)| c)
            .map(|(k, _)| k)
            .collect();
        let mut shape = flat.shape().to_vec();
        shape[a] = keep.len();
        let out = ctx.output(0, x.dtype(), &shape)?;
        crate::dispatch_all!(x.dtype(), T => compress_kernel::<T>(&flat, &keep, d, inner, &out)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        match self.axis {
            Some(a) => Attrs::new().with("axis", a),
            None => Attrs::new(),
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("one_hot", |a: &Attrs| {
        a.only("one_hot", &["depth", "axis"])?;
        let depth = a.i64("depth")?.unwrap_or(-1);
        if depth < 1 {
            return attr_err(format!(
                "op 'one_hot': attr 'depth' must be positive, got {depth}"
            ));
        }
        Ok(Arc::new(OneHot {
            depth: depth as usize,
            axis: a.i64("axis")?.unwrap_or(-1),
        }) as Arc<dyn Op>)
    });
    r.register("compress", |a: &Attrs| {
        a.only("compress", &["axis"])?;
        Ok(Arc::new(Compress { axis: a.i64("axis")? }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    #[test]
    fn one_hot_places_on_at_each_index_along_the_axis() {
        let ind = t(&[2], vec![1i64, -1]);
        let vals = t(&[2], vec![0.0f32, 5.0]);
        let last = op("one_hot", Attrs::new().with("depth", 3));
        let (s, y) = run_vec::<f32>(&*last, &[ind.clone(), vals.clone()]).unwrap();
        assert_eq!(s, [2, 3]);
        assert_eq!(y, [0.0, 5.0, 0.0, 0.0, 0.0, 5.0]);
        let first = op("one_hot", Attrs::new().with("depth", 3).with("axis", 0));
        let (s, y) = run_vec::<f32>(&*first, &[ind, vals.clone()]).unwrap();
        assert_eq!(s, [3, 2]);
        assert_eq!(y, [0.0, 0.0, 5.0, 0.0, 0.0, 5.0]);
        // Out of range: a row of off.
        let (_, y) = run_vec::<f32>(&*last, &[t(&[1], vec![7.9f32]), vals]).unwrap();
        assert_eq!(y, [0.0, 0.0, 0.0]);
    }

    #[test]
    fn compress_keeps_the_slices_the_condition_selects() {
        let x = t(&[3, 2], vec![1i32, 2, 3, 4, 5, 6]);
        let c = t(&[3], vec![false, true, true]);
        let (s, y) = run_vec::<i32>(&*op("compress", Attrs::new().with("axis", 0)), &[x.clone(), c]).unwrap();
        assert_eq!((s, y), (vec![2, 2], vec![3, 4, 5, 6]));
        let c = t(&[2], vec![false, true]);
        let (s, y) = run_vec::<i32>(
            &*op("compress", Attrs::new().with("axis", -1)),
            &[x.clone(), c.clone()],
        )
        .unwrap();
        assert_eq!((s, y), (vec![3, 1], vec![2, 4, 6]));
        let (s, y) = run_vec::<i32>(&*op("compress", Attrs::new()), &[x, c]).unwrap();
        assert_eq!((s, y), (vec![1], vec![2]));
    }
}

//! Element-wise indexing along one axis (ONNX GatherElements and
//! ScatterElements, numpy's `take_along_axis` and `put_along_axis`):
//!
//! - `gather_elements(x, indices)`: the output has indices' shape, and
//!   `out[p] = x[p with p[axis] = indices[p]]`.
//! - `scatter_elements(x, indices, updates)`: a copy of x where
//!   `out[p with p[axis] = indices[p]] = updates[p]` for every position p
//!   of indices (updates has indices' shape), or, with attr `reduction`
//!   `add`, `mul`, `max` or `min`, combined with what is there. Repeated
//!   indices apply in C order (the last write wins for `none`).
//!
//! Attr `axis` (default 0) may be negative. `indices` is i64 with x's rank
//! and no dim longer than x's (its `axis` dim may be any length); a
//! negative index counts from the end of the axis, and one out of range
//! after that is an error before anything is written.

use std::sync::Arc;

use crate::dtype::{DType, Element, Num};
use crate::error::{attr_err, dtype_err, index_err, rank_err, shape_err, Result};
use crate::ops::copy::axis_of;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::layout::c_strides;
use crate::tensor::Tensor;

/// How `scatter_elements` combines an update with the element it lands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    None,
    Add,
    Mul,
    Max,
    Min,
}

impl Reduction {
    pub fn parse(s: &str) -> Option<Reduction> {
        Some(match s {
            "none" => Reduction::None,
            "add" => Reduction::Add,
            "mul" => Reduction::Mul,
            "max" => Reduction::Max,
            "min" => Reduction::Min,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Reduction::None => "none",
            Reduction::Add => "add",
            Reduction::Mul => "mul",
            Reduction::Max => "max",
            Reduction::Min => "min",
        }
    }

    pub(crate) fn apply<T: Num>(self, old: T, new: T) -> T {
        match self {
            Reduction::None => new,
            Reduction::Add => T::add_w(old, new),
            Reduction::Mul => T::mul_w(old, new),
            Reduction::Max => T::maximum(old, new),
            Reduction::Min => T::minimum(old, new),
        }
    }
}

/// The shared checks: i64 indices of x's rank, no dim longer than x's
/// except on `axis`. Returns the resolved axis.
fn check_indices(op: &str, axis: i64, x: &TypeInfo, ind: &TypeInfo) -> Result<Option<usize>> {
    if ind.dtype != DType::I64 {
        return dtype_err(format!(
            "op '{op}': indices (input 1) must be i64, got {}",
            ind.dtype
        ));
    }
    let (Some(xs), Some(is)) = (&x.shape, &ind.shape) else {
        return Ok(None);
    };
    if xs.len() != is.len() {
        return rank_err(format!(
            "op '{op}': indices has {} axes, x has {} (they must match)",
            is.len(),
            xs.len()
        ));
    }
    if xs.is_empty() {
        return rank_err(format!("op '{op}': x is 0-d, there is no axis {axis}"));
    }
    let ax = axis_of(op, axis, xs.len())?;
    for (d, (&n, &m)) in xs.iter().zip(is).enumerate() {
        if d != ax && n >= 0 && m > n {
            return shape_err(format!(
                "op '{op}': indices {} does not fit x {} on axis {d}",
                ind.shape_string(),
                x.shape_string()
            ));
        }
    }
    Ok(Some(ax))
}

/// For each element of `ind` in C order, the offset of the element of a
/// C-contiguous x it addresses.
fn targets(op: &str, x_shape: &[usize], ind: &Tensor, ax: usize) -> Result<Vec<usize>> {
    let strides = c_strides(x_shape);
    let (ishape, n) = (ind.shape().to_vec(), x_shape[ax] as i64);
    let vals = ind.to_array::<i64>()?;
    let mut pos = vec![0usize; ishape.len()];
    let mut out = Vec::with_capacity(vals.len());
    for &i in vals.iter() {
        let j = if i < 0 { i + n } else { i };
        if !(0..n).contains(&j) {
            return index_err(format!(
                "op '{op}': index {i} at indices{pos:?} is out of range for axis {ax} of length {n}"
            ));
        }
        let off: isize = pos
            .iter()
            .enumerate()
            .map(|(d, &p)| (if d == ax { j as usize } else { p }) as isize * strides[d])
            .sum();
        out.push(off as usize);
        // The next position in C order.
        for d in (0..pos.len()).rev() {
            pos[d] += 1;
            if pos[d] < ishape[d] {
                break;
            }
            pos[d] = 0;
        }
    }
    Ok(out)
}

// ----- gather_elements -------------------------------------------------------

/// The `gather_elements` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatherElements {
    pub axis: i64,
}

fn gather_kernel<T: Element>(x: &Tensor, offsets: &[usize], out: &Tensor) -> Result<()> {
    let xa = x.to_array::<T>()?;
    let xs = xa.as_slice().unwrap_or_default();
    out.write(|mut o: ndarray::ArrayViewMutD<'_, T>| o.iter_mut().zip(offsets).for_each(|(o, &k)| *o = xs[k]))
}

impl Op for GatherElements {
    fn name(&self) -> &str {
        "gather_elements"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_indices(self.name(), self.axis, &inputs[0], &inputs[1])?;
        Ok(vec![TypeInfo::new(inputs[0].dtype, inputs[1].shape.clone())])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let (x, ind) = (&inputs[0], &inputs[1]);
        let ax =
            check_indices(self.name(), self.axis, &TypeInfo::of(x), &TypeInfo::of(ind))?.unwrap_or_default();
        let offsets = targets(self.name(), x.shape(), ind, ax)?;
        let out = ctx.output(0, x.dtype(), ind.shape())?;
        crate::dispatch_all!(x.dtype(), T => gather_kernel::<T>(x, &offsets, &out)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("axis", self.axis)
    }
}

// ----- scatter_elements ------------------------------------------------------

/// The `scatter_elements` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterElements {
    pub axis: i64,
    pub reduction: Reduction,
}

impl ScatterElements {
    fn check(&self, x: &TypeInfo, ind: &TypeInfo, upd: &TypeInfo) -> Result<Option<usize>> {
        let ax = check_indices(self.name(), self.axis, x, ind)?;
        if upd.dtype != x.dtype {
            return dtype_err(format!(
                "op 'scatter_elements': updates (input 2) is {}, x is {} (insert a cast)",
                upd.dtype, x.dtype
            ));
        }
        if self.reduction != Reduction::None && x.dtype == DType::Bool {
            return dtype_err(format!(
                "op 'scatter_elements': reduction '{}' does not take bool inputs",
                self.reduction.name()
            ));
        }
        if let (Some(i), Some(u)) = (&ind.shape, &upd.shape) {
            let fits = i.len() == u.len() && i.iter().zip(u).all(|(&a, &b)| a < 0 || b < 0 || a == b);
            if !fits {
                return shape_err(format!(
                    "op 'scatter_elements': updates {} must have the shape of indices {}",
                    upd.shape_string(),
                    ind.shape_string()
                ));
            }
        }
        Ok(ax)
    }
}

fn scatter_kernel<T: Element>(
    x: &Tensor,
    upd: &Tensor,
    offsets: &[usize],
    out: &Tensor,
    f: impl Fn(T, T) -> T,
) -> Result<()> {
    let mut res = x.to_array::<T>()?;
    let u = upd.to_array::<T>()?;
    if let Some(r) = res.as_slice_mut() {
        for (&k, &v) in offsets.iter().zip(u.iter()) {
            r[k] = f(r[k], v);
        }
    }
    out.write(|mut o: ndarray::ArrayViewMutD<'_, T>| o.assign(&res))
}

fn scatter_num<T: Num>(
    r: Reduction,
    x: &Tensor,
    upd: &Tensor,
    offsets: &[usize],
    out: &Tensor,
) -> Result<()> {
    scatter_kernel::<T>(x, upd, offsets, out, |a, b| r.apply(a, b))
}

impl Op for ScatterElements {
    fn name(&self) -> &str {
        "scatter_elements"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(3)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(&inputs[0], &inputs[1], &inputs[2])?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let (x, ind, upd) = (&inputs[0], &inputs[1], &inputs[2]);
        let ax = self
            .check(&TypeInfo::of(x), &TypeInfo::of(ind), &TypeInfo::of(upd))?
            .unwrap_or_default();
        let offsets = targets(self.name(), x.shape(), ind, ax)?;
        let out = ctx.output(0, x.dtype(), x.shape())?;
        let r = self.reduction;
        crate::dispatch_num!(x.dtype(), T => scatter_num::<T>(r, x, upd, &offsets, &out)?,
            crate::dispatch_all!(x.dtype(), T => scatter_kernel::<T>(x, upd, &offsets, &out, |_, b| b)?));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("axis", self.axis)
            .with("reduction", self.reduction.name())
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("gather_elements", |a: &Attrs| {
        a.only("gather_elements", &["axis"])?;
        Ok(Arc::new(GatherElements {
            axis: a.i64("axis")?.unwrap_or(0),
        }) as Arc<dyn Op>)
    });
    r.register("scatter_elements", |a: &Attrs| {
        a.only("scatter_elements", &["axis", "reduction"])?;
        let reduction = match a.0.get("reduction") {
            None => Reduction::None,
            Some(v) => match v.as_str().and_then(Reduction::parse) {
                Some(r) => r,
                None => {
                    return attr_err(format!(
                    "op 'scatter_elements': attr 'reduction': expected none, add, mul, max or min, got {v}"
                ))
                }
            },
        };
        Ok(Arc::new(ScatterElements {
            axis: a.i64("axis")?.unwrap_or(0),
            reduction,
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_vec, t};

    fn gather(axis: i64) -> Arc<dyn Op> {
        op("gather_elements", Attrs::new().with("axis", axis))
    }

    fn scatter(axis: i64, reduction: &str) -> Arc<dyn Op> {
        op(
            "scatter_elements",
            Attrs::new().with("axis", axis).with("reduction", reduction),
        )
    }

    /// [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    fn x() -> Tensor {
        t(&[3, 3], (1..=9).map(|v| v as f32).collect())
    }

    #[test]
    fn gather_along_each_axis_with_negative_indices() {
        let ind = t(&[2, 3], vec![1i64, 2, 0, 2, 0, 0]);
        let (s, v) = run_vec::<f32>(&*gather(0), &[x(), ind]).unwrap();
        assert_eq!(s, [2, 3]);
        assert_eq!(v, [4.0, 8.0, 3.0, 7.0, 2.0, 3.0]);
        // Along axis -1 (= 1), -1 is the last column; indices narrower than x.
        let ind = t(&[2, 2], vec![-1i64, 0, 1, -3]);
        let (s, v) = run_vec::<f32>(&*gather(-1), &[x(), ind]).unwrap();
        assert_eq!(s, [2, 2]);
        assert_eq!(v, [3.0, 1.0, 5.0, 4.0]);
        // x.T along axis 1.
        let ind = t(&[3, 1], vec![2i64, 0, 1]);
        let xt = x().transpose(None).unwrap();
        assert_eq!(
            run_vec::<f32>(&*gather(1), &[xt, ind]).unwrap().1,
            [7.0, 2.0, 6.0]
        );
    }

    #[test]
    fn gather_errors_name_the_index_and_empty_indices_give_empty_output() {
        let e = run_vec::<f32>(&*gather(0), &[x(), t(&[1, 2], vec![0i64, 3])]).unwrap_err();
        assert_cause!(e, Index, "index 3", "[0, 1]", "axis 0", "length 3");
        let e = run_vec::<f32>(&*gather(1), &[x(), t(&[1, 1], vec![-4i64])]).unwrap_err();
        assert_cause!(e, Index, "index -4");
        let e = run_vec::<f32>(&*gather(0), &[x(), t(&[1, 4], vec![0i64; 4])]).unwrap_err();
        assert_cause!(e, Shape);
        let e = run_vec::<f32>(&*gather(0), &[x(), t(&[3], vec![0i64; 3])]).unwrap_err();
        assert_cause!(e, Rank);
        let (s, v) = run_vec::<f32>(&*gather(0), &[x(), t::<i64>(&[0, 3], vec![])]).unwrap();
        assert_eq!((s, v.len()), (vec![0, 3], 0));
        // Any index into an empty axis is out of range.
        let e = run_vec::<f32>(&*gather(1), &[t::<f32>(&[1, 0], vec![]), t(&[1, 1], vec![0i64])]);
        assert!(e.is_err());
    }

    #[test]
    fn scatter_with_each_reduction_and_repeated_indices() {
        let data = || t(&[1, 5], vec![1.0f64, 2.0, 3.0, 4.0, 5.0]);
        let ind = || t(&[1, 2], vec![1i64, 1]);
        let upd = || t(&[1, 2], vec![1.1f64, 2.1]);
        let run = |r: &str| {
            run_vec::<f64>(&*scatter(1, r), &[data(), ind(), upd()])
                .unwrap()
                .1
        };
        assert_eq!(run("none"), [1.0, 2.1, 3.0, 4.0, 5.0]);
        assert_eq!(run("add"), [1.0, 2.0 + 1.1 + 2.1, 3.0, 4.0, 5.0]);
        assert_eq!(run("mul"), [1.0, 2.0 * 1.1 * 2.1, 3.0, 4.0, 5.0]);
        assert_eq!(run("max"), [1.0, 2.1, 3.0, 4.0, 5.0]);
        assert_eq!(run("min"), [1.0, 1.1, 3.0, 4.0, 5.0]);
        // Negative indices, axis 0 on a 3x3 integer matrix.
        let d = t(&[3, 3], vec![0i32; 9]);
        let ind = t(&[2, 3], vec![1i64, 0, -1, 0, 2, 1]);
        let upd = t(&[2, 3], vec![1i32, 2, 3, 4, 5, 6]);
        let (_, v) = run_vec::<i32>(&*scatter(0, "none"), &[d, ind, upd]).unwrap();
        assert_eq!(v, [4, 2, 0, 1, 0, 6, 0, 5, 3]);
    }

    #[test]
    fn scatter_refuses_bad_input_before_writing() {
        let d = t(&[2], vec![1.0f32, 2.0]);
        let e = run_vec::<f32>(
            &*scatter(0, "add"),
            &[d.clone(), t(&[1], vec![2i64]), t(&[1], vec![1.0f32])],
        );
        assert_cause!(e.unwrap_err(), Index, "index 2");
        let e = run_vec::<f32>(
            &*scatter(0, "add"),
            &[d.clone(), t(&[1], vec![0i64]), t(&[2], vec![1.0f32, 2.0])],
        );
        assert_cause!(e.unwrap_err(), Shape);
        let e = run_vec::<f32>(
            &*scatter(0, "add"),
            &[d, t(&[1], vec![0i64]), t(&[1], vec![1.0f64])],
        );
        assert_cause!(e.unwrap_err(), DType);
        let b = t(&[2], vec![false, false]);
        let e = run_vec::<bool>(
            &*scatter(0, "add"),
            &[b.clone(), t(&[1], vec![0i64]), t(&[1], vec![true])],
        );
        assert!(e.is_err());
        let (_, v) = run_vec::<bool>(
            &*scatter(0, "none"),
            &[b, t(&[1], vec![1i64]), t(&[1], vec![true])],
        )
        .unwrap();
        assert_eq!(v, [false, true]);
        let e = OpRegistry::builtin()
            .make("scatter_elements", &Attrs::new().with("reduction", "sum"))
            .err()
            .unwrap();
        assert_cause!(e, Attr, "'reduction'");
    }
}

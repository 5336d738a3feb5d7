//! `cumsum(x)`: numpy's `cumsum` along attr `axis` (default 0, negative
//! counts from the end) with ONNX CumSum's attrs: `exclusive` (false)
//! leaves each element out of its own sum (the first is 0), `reverse`
//! (false) sums from the end of the axis. Numeric dtypes; the result keeps
//! x's dtype and shape, and integer sums wrap on overflow as numpy's do.
//!
//! `cumprod(x)` is the same scan with products (numpy's `cumprod`, ONNX
//! CumProd): an exclusive product starts from 1.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Axis, Zip};

use crate::dtype::Num;
use crate::error::{rank_err, refuse_dtype, Result};
use crate::ops::copy::axis_of;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `cumsum` op, or `cumprod` with `product`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CumSum {
    pub axis: i64,
    pub exclusive: bool,
    pub reverse: bool,
    pub product: bool,
}

impl CumSum {
    fn axis(&self, ndim: usize) -> Result<usize> {
        if ndim == 0 {
            return rank_err(format!(
                "op '{}': x is 0-d, there is no axis to scan along",
                self.name()
            ));
        }
        axis_of(self.name(), self.axis, ndim)
    }
}

/// The scan along `ax`, from `start` with `step` (wrapping for integers).
fn scan_kernel<T: Num>(
    p: &CumSum,
    x: &Tensor,
    ax: usize,
    out: &Tensor,
    start: T,
    step: fn(T, T) -> T,
) -> Result<()> {
    x.read(|xv: ArrayViewD<'_, T>| {
        out.write(|mut ov: ArrayViewMutD<'_, T>| {
            Zip::from(ov.lanes_mut(Axis(ax)))
                .and(xv.lanes(Axis(ax)))
                .for_each(|mut o, s| {
                    let n = s.len();
                    let mut acc = start;
                    for k in 0..n {
                        let i = if p.reverse { n - 1 - k } else { k };
                        if p.exclusive {
                            o[i] = acc;
                            acc = step(acc, s[i]);
                        } else {
                            acc = step(acc, s[i]);
                            o[i] = acc;
                        }
                    }
                })
        })
    })??;
    Ok(())
}

fn cumsum_kernel<T: Num>(p: &CumSum, x: &Tensor, ax: usize, out: &Tensor) -> Result<()> {
    if p.product {
        scan_kernel::<T>(p, x, ax, out, T::one(), T::mul_w)
    } else {
        scan_kernel::<T>(p, x, ax, out, T::zero(), T::add_w)
    }
}

impl Op for CumSum {
    fn name(&self) -> &str {
        if self.product {
            "cumprod"
        } else {
            "cumsum"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        if !x.dtype.is_computable() {
            return refuse_dtype(self.name(), x.dtype);
        }
        if let Some(r) = x.rank() {
            self.axis(r)?;
        }
        Ok(vec![x.clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let ax = self.axis(x.ndim())?;
        let out = ctx.output(0, x.dtype(), x.shape())?;
        // A pre-allocated output sharing x's buffer would be read after
        // it is written: sum from a copy then.
        let x = crate::ops::copy::detach(x, &out)?;
        crate::dispatch_num!(x.dtype(), T => cumsum_kernel::<T>(self, &x, ax, &out)?,
            return refuse_dtype(self.name(), x.dtype()));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("axis", self.axis)
            .with("exclusive", self.exclusive)
            .with("reverse", self.reverse)
    }
}

pub fn register(r: &mut OpRegistry) {
    for (name, product) in [("cumsum", false), ("cumprod", true)] {
        r.register(name, move |a: &Attrs| {
            a.only(name, &["axis", "exclusive", "reverse"])?;
            Ok(Arc::new(CumSum {
                axis: a.i64("axis")?.unwrap_or(0),
                exclusive: a.bool("exclusive")?.unwrap_or(false),
                reverse: a.bool("reverse")?.unwrap_or(false),
                product,
            }) as Arc<dyn Op>)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    fn cumsum(axis: i64, exclusive: bool, reverse: bool) -> Arc<dyn Op> {
        let a = Attrs::new()
            .with("axis", axis)
            .with("exclusive", exclusive)
            .with("reverse", reverse);
        op("cumsum", a)
    }

    #[test]
    fn one_dimension_in_all_four_modes() {
        let x = || t(&[4], vec![1.0f64, 2.0, 3.0, 4.0]);
        let run = |e, r| run_vec::<f64>(&*cumsum(0, e, r), &[x()]).unwrap().1;
        assert_eq!(run(false, false), [1.0, 3.0, 6.0, 10.0]);
        assert_eq!(run(true, false), [0.0, 1.0, 3.0, 6.0]);
        assert_eq!(run(false, true), [10.0, 9.0, 7.0, 4.0]);
        assert_eq!(run(true, true), [9.0, 7.0, 4.0, 0.0]);
    }

    #[test]
    fn products_in_all_four_modes_wrap_and_propagate_nan() {
        let a = |e: bool, r: bool| {
            let a = Attrs::new()
                .with("axis", -1)
                .with("exclusive", e)
                .with("reverse", r);
            op("cumprod", a)
        };
        let x = || t(&[2, 3], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let run = |e, r| run_vec::<f64>(&*a(e, r), &[x()]).unwrap().1;
        assert_eq!(run(false, false), [1.0, 2.0, 6.0, 4.0, 20.0, 120.0]);
        assert_eq!(run(true, false), [1.0, 1.0, 2.0, 1.0, 4.0, 20.0]);
        assert_eq!(run(false, true), [6.0, 6.0, 3.0, 120.0, 30.0, 6.0]);
        assert_eq!(run(true, true), [6.0, 3.0, 1.0, 30.0, 6.0, 1.0]);
        let big = t(&[2], vec![i32::MAX, 2]);
        assert_eq!(
            run_vec::<i32>(&*a(false, false), &[big]).unwrap().1,
            [i32::MAX, -2]
        );
        let v = run_vec::<f32>(&*a(false, false), &[t(&[3], vec![2.0f32, f32::NAN, 0.0])])
            .unwrap()
            .1;
        assert!(v[0] == 2.0 && v[1].is_nan() && v[2].is_nan(), "{v:?}");
        let e = run_vec::<bool>(&*a(false, false), &[t(&[1], vec![true])]).unwrap_err();
        assert!(matches!(e, crate::Error::DType(_)), "{e}");
    }

    #[test]
    fn axes_negative_axes_and_a_transposed_input() {
        let x = t(&[2, 3], vec![1i32, 2, 3, 4, 5, 6]);
        assert_eq!(
            run_vec::<i32>(&*cumsum(0, false, false), std::slice::from_ref(&x))
                .unwrap()
                .1,
            [1, 2, 3, 5, 7, 9]
        );
        assert_eq!(
            run_vec::<i32>(&*cumsum(-1, false, false), std::slice::from_ref(&x))
                .unwrap()
                .1,
            [1, 3, 6, 4, 9, 15]
        );
        // x.T is [[1, 4], [2, 5], [3, 6]]: sums along its axis 1.
        let xt = x.transpose(None).unwrap();
        assert_eq!(
            run_vec::<i32>(&*cumsum(1, false, false), &[xt]).unwrap().1,
            [1, 5, 2, 7, 3, 9]
        );
        assert!(run_vec::<i32>(&*cumsum(2, false, false), &[x]).is_err());
    }

    #[test]
    fn integers_wrap_nan_propagates_and_empty_axes_are_fine() {
        let x = t(&[2], vec![i64::MAX, 1]);
        assert_eq!(
            run_vec::<i64>(&*cumsum(0, false, false), &[x]).unwrap().1,
            [i64::MAX, i64::MIN]
        );
        let x = t(&[3], vec![1.0f32, f32::NAN, 2.0]);
        let v = run_vec::<f32>(&*cumsum(0, false, false), &[x]).unwrap().1;
        assert_eq!(v[0], 1.0);
        assert!(v[1].is_nan() && v[2].is_nan());
        let (s, v) = run_vec::<f32>(&*cumsum(1, false, false), &[t::<f32>(&[2, 0], vec![])]).unwrap();
        assert_eq!((s, v.len()), (vec![2, 0], 0));
        let e = run_vec::<bool>(&*cumsum(0, false, false), &[t(&[1], vec![true])]).unwrap_err();
        assert!(e.to_string().contains("bool"), "{e}");
        assert!(run_vec::<f32>(&*cumsum(0, false, false), &[t(&[], vec![1.0f32])]).is_err());
    }
}

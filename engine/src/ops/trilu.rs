//! `trilu(x)`: numpy's `triu`/`tril` over the last two axes of x (ONNX
//! Trilu). Attr `upper` (true) keeps element `(i, j)` of each matrix when
//! `j − i ≥ k`, else (`tril`) when `j − i ≤ k`; attr `k` (0) shifts the
//! diagonal, positive above it. The other elements become 0 (false for
//! bool). Any dtype; x needs at least two axes.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Axis};

use crate::dtype::Element;
use crate::error::{rank_err, Result};
use crate::ops::copy::detach;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `trilu` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trilu {
    pub upper: bool,
    pub k: i64,
}

impl Trilu {
    fn check_rank(r: usize) -> Result<()> {
        if r < 2 {
            return rank_err(format!("op 'trilu': x needs at least 2 axes, got {r}"));
        }
        Ok(())
    }

    fn keeps(&self, i: usize, j: usize) -> bool {
        let d = j as i128 - i as i128;
        if self.upper {
            d >= self.k as i128
        } else {
            d <= self.k as i128
        }
    }
}

fn trilu_kernel<T: Element>(p: &Trilu, x: &Tensor, out: &Tensor) -> Result<()> {
    let (r, rows) = (x.ndim(), x.shape()[x.ndim() - 2]);
    x.read(|xv: ArrayViewD<'_, T>| {
        out.write(|mut ov: ArrayViewMutD<'_, T>| {
            // The rows of every matrix in C order: row `k` is row `k mod
            // rows` of its matrix.
            let lanes = ov.lanes_mut(Axis(r - 1)).into_iter().zip(xv.lanes(Axis(r - 1)));
            for (k, (mut o, s)) in lanes.enumerate() {
                for (j, (o, &v)) in o.iter_mut().zip(s.iter()).enumerate() {
                    *o = if p.keeps(k % rows, j) { v } else { T::default() };
                }
            }
        })
    })??;
    Ok(())
}

impl Op for Trilu {
    fn name(&self) -> &str {
        "trilu"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        if let Some(r) = inputs[0].rank() {
            Trilu::check_rank(r)?;
        }
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        Trilu::check_rank(inputs[0].ndim())?;
        let out = ctx.output(0, inputs[0].dtype(), inputs[0].shape())?;
        let x = detach(&inputs[0], &out)?;
        crate::dispatch_all!(x.dtype(), T => trilu_kernel::<T>(self, &x, &out)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("upper", self.upper).with("k", self.k)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("trilu", |a: &Attrs| {
        a.only("trilu", &["upper", "k"])?;
        Ok(Arc::new(Trilu {
            upper: a.bool("upper")?.unwrap_or(true),
            k: a.i64("k")?.unwrap_or(0),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    fn trilu(upper: bool, k: i64, x: &Tensor) -> Result<Vec<i64>> {
        let a = Attrs::new().with("upper", upper).with("k", k);
        Ok(run_vec::<i64>(&*op("trilu", a), std::slice::from_ref(x))?.1)
    }

    /// [[1, 2, 3], [4, 5, 6]]
    fn m() -> Tensor {
        t(&[2, 3], vec![1i64, 2, 3, 4, 5, 6])
    }

    #[test]
    fn upper_and_lower_around_shifted_diagonals() {
        assert_eq!(trilu(true, 0, &m()).unwrap(), [1, 2, 3, 0, 5, 6]);
        assert_eq!(trilu(true, 1, &m()).unwrap(), [0, 2, 3, 0, 0, 6]);
        assert_eq!(trilu(true, -1, &m()).unwrap(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(trilu(false, 0, &m()).unwrap(), [1, 0, 0, 4, 5, 0]);
        assert_eq!(trilu(false, -1, &m()).unwrap(), [0, 0, 0, 4, 0, 0]);
        assert_eq!(trilu(false, 5, &m()).unwrap(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(trilu(true, -9, &m()).unwrap(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(trilu(true, i64::MAX, &m()).unwrap(), [0; 6]);
    }

    #[test]
    fn batches_views_and_empty_matrices() {
        // Two 2x2 matrices; the batch axis does not move the diagonal.
        let x = t(&[2, 2, 2], vec![1i64, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(trilu(false, 0, &x).unwrap(), [1, 0, 3, 4, 5, 0, 7, 8]);
        // m().T = [[1, 4], [2, 5], [3, 6]]
        let xt = m().transpose(None).unwrap();
        assert_eq!(trilu(true, 0, &xt).unwrap(), [1, 4, 0, 5, 0, 0]);
        assert_eq!(
            trilu(true, 0, &t::<i64>(&[3, 0, 5], vec![])).unwrap(),
            Vec::<i64>::new()
        );
        let e = trilu(true, 0, &t(&[3], vec![1i64, 2, 3])).unwrap_err();
        assert!(e.to_string().contains("at least 2 axes"), "{e}");
    }

    #[test]
    fn bool_and_nan_elements() {
        let x = t(&[2, 2], vec![true, true, true, true]);
        let (_, v) = run_vec::<bool>(&*op("trilu", Attrs::new()), &[x]).unwrap();
        assert_eq!(v, [true, true, false, true]);
        let x = t(&[2, 2], vec![f64::NAN, f64::NAN, f64::NAN, f64::NAN]);
        let (_, v) = run_vec::<f64>(&*op("trilu", Attrs::new()), &[x]).unwrap();
        assert!(v[0].is_nan() && v[1].is_nan() && v[2] == 0.0 && v[3].is_nan());
    }
}

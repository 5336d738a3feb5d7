//! `top_k(x)`: the `k` largest (or, without attr `largest`, smallest)
//! elements of each lane of x along attr `axis` (default -1, negative
//! counts from the end), as ONNX TopK: two outputs, the values (x's dtype)
//! and their indices along the axis (i64), both of x's shape with the
//! axis cut to `k`. Always sorted (the largest first, or the smallest);
//! equal values keep their order along the axis, and NaN counts as larger
//! than any number, as in numpy's sort (`-0` and `+0` are equal). Numeric
//! dtypes.

use std::cmp::Ordering;
use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Axis, Zip};

use crate::dtype::{DType, Num};
use crate::error::{attr_err, rank_err, refuse_dtype, Result};
use crate::ops::copy::axis_of;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `top_k` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopK {
    pub k: i64,
    pub axis: i64,
    pub largest: bool,
}

impl TopK {
    /// The axis of a rank-`r` input and `k`, checked against its length
    /// `len` (when known).
    fn check(&self, r: usize, len: Option<i64>) -> Result<(usize, usize)> {
        if r == 0 {
            return rank_err("op 'top_k': x is 0-d, there is no axis to pick along");
        }
        let ax = axis_of("top_k", self.axis, r)?;
        match len {
            Some(n) if n >= 0 && self.k > n => attr_err(format!(
                "op 'top_k': k = {} is more than axis {ax}'s length {n}",
                self.k
            )),
            _ if self.k < 0 => attr_err(format!("op 'top_k': k = {} is negative", self.k)),
            _ => Ok((ax, self.k as usize)),
        }
    }

    /// Whether position `i` (value `a`) comes before `j` (value `b`).
    fn order<T: Num>(&self, (i, a): (usize, T), (j, b): (usize, T)) -> Ordering {
        let by_value = if self.largest { total(b, a) } else { total(a, b) };
        by_value.then(i.cmp(&j))
    }
}

/// numpy's sort order: numbers by value, NaN after every number.
#[allow(clippy::eq_op)]
fn total<T: Num>(a: T, b: T) -> Ordering {
    match (a != a, b != b) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

fn top_k_kernel<T: Num>(p: &TopK, x: &Tensor, ax: usize, k: usize, outs: &[Tensor]) -> Result<()> {
    let mut picks: Vec<(usize, T)> = Vec::new();
    x.read(|xv: ArrayViewD<'_, T>| {
        outs[0].write(|mut vals: ArrayViewMutD<'_, T>| {
            outs[1].write(|mut idx: ArrayViewMutD<'_, i64>| {
                Zip::from(vals.lanes_mut(Axis(ax)))
                    .and(idx.lanes_mut(Axis(ax)))
                    .and(xv.lanes(Axis(ax)))
                    .for_each(|mut v, mut i, s| {
                        picks.clear();
                        picks.extend(s.iter().copied().enumerate());
                        // Partition off the first k, then sort only them:
                        // the order is total (ties fall to the index).
                        if k > 0 && k < picks.len() {
                            picks.select_nth_unstable_by(k - 1, |&a, &b| p.order(a, b));
                        }
                        picks[..k].sort_unstable_by(|&a, &b| p.order(a, b));
                        for (n, &(at, val)) in picks[..k].iter().enumerate() {
                            v[n] = val;
                            i[n] = at as i64;
                        }
                    })
            })
        })
    })???;
    Ok(())
}

impl Op for TopK {
    fn name(&self) -> &str {
        "top_k"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        if !x.dtype.is_computable() {
            return refuse_dtype("top_k", x.dtype);
        }
        let shape = match &x.shape {
            None => None,
            Some(s) => {
                let ax = axis_of("top_k", self.axis, s.len().max(1))?;
                let (ax, k) = self.check(s.len(), s.get(ax).copied())?;
                let mut s = s.clone();
                s[ax] = k as i64;
                Some(s)
            }
        };
        Ok(vec![
            TypeInfo::new(x.dtype, shape.clone()),
            TypeInfo::new(DType::I64, shape),
        ])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let r = x.ndim();
        let len = (r > 0).then(|| axis_of("top_k", self.axis, r)).transpose()?;
        let (ax, k) = self.check(r, len.map(|a| x.shape()[a] as i64))?;
        let mut shape = x.shape().to_vec();
        shape[ax] = k;
        let outs = vec![
            ctx.output(0, x.dtype(), &shape)?,
            ctx.output(1, DType::I64, &shape)?,
        ];
        crate::dispatch_num!(x.dtype(), T => top_k_kernel::<T>(self, x, ax, k, &outs)?,
            return refuse_dtype("top_k", x.dtype()));
        Ok(outs)
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("k", self.k)
            .with("axis", self.axis)
            .with("largest", self.largest)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("top_k", |a: &Attrs| {
        a.only("top_k", &["k", "axis", "largest"])?;
        let Some(k) = a.i64("k")? else {
            return attr_err("op 'top_k': attr 'k' is required");
        };
        Ok(Arc::new(TopK {
            k,
            axis: a.i64("axis")?.unwrap_or(-1),
            largest: a.bool("largest")?.unwrap_or(true),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_all, t};

    fn top_k(k: i64, axis: i64, largest: bool) -> Arc<dyn Op> {
        op(
            "top_k",
            Attrs::new()
                .with("k", k)
                .with("axis", axis)
                .with("largest", largest),
        )
    }

    fn pick(p: &Arc<dyn Op>, x: &Tensor) -> (Vec<usize>, Vec<f64>, Vec<i64>) {
        let o = run_all(&**p, std::slice::from_ref(x)).unwrap();
        let idx = o[1].to_array::<i64>().unwrap().iter().copied().collect();
        (o[0].shape().to_vec(), o[0].to_f64_vec().unwrap(), idx)
    }

    #[test]
    fn largest_and_smallest_along_either_axis_ties_by_position() {
        let x = t(&[2, 4], vec![3.0f32, 1.0, 3.0, 2.0, 0.0, 5.0, -1.0, 5.0]);
        let (s, v, i) = pick(&top_k(2, -1, true), &x);
        assert_eq!(
            (s, v, i),
            (vec![2, 2], vec![3.0, 3.0, 5.0, 5.0], vec![0, 2, 1, 3])
        );
        let (_, v, i) = pick(&top_k(3, 1, false), &x);
        assert_eq!(
            (v, i),
            (vec![1.0, 2.0, 3.0, -1.0, 0.0, 5.0], vec![1, 3, 0, 2, 0, 1])
        );
        let (s, v, i) = pick(&top_k(1, 0, true), &x);
        assert_eq!(
            (s, v, i),
            (vec![1, 4], vec![3.0, 5.0, 3.0, 5.0], vec![0, 1, 0, 1])
        );
        // A transposed view picks along its own axes.
        let xt = x.transpose(None).unwrap();
        let (s, v, i) = pick(&top_k(1, 0, true), &xt);
        assert_eq!((s, v, i), (vec![1, 2], vec![3.0, 5.0], vec![0, 1]));
        // k = 0 and k = the whole axis.
        assert_eq!(pick(&top_k(0, 1, true), &x).0, [2, 0]);
        let (_, v, _) = pick(&top_k(4, 1, true), &x);
        assert_eq!(v, [3.0, 3.0, 2.0, 1.0, 5.0, 5.0, 0.0, -1.0]);
    }

    #[test]
    fn nan_is_the_largest_and_integers_work() {
        let x = t(&[4], vec![1.0f64, f64::NAN, 7.0, -0.0]);
        let (_, v, i) = pick(&top_k(2, 0, true), &x);
        assert!(v[0].is_nan() && v[1] == 7.0 && i == [1, 2], "{v:?} {i:?}");
        let (_, v, i) = pick(&top_k(2, 0, false), &x);
        assert_eq!((v, i), (vec![-0.0, 1.0], vec![3, 0]));
        let x = t(&[5], vec![4i64, -9, 4, 12, 0]);
        let (_, v, i) = pick(&top_k(3, 0, true), &x);
        assert_eq!((v, i), (vec![12.0, 4.0, 4.0], vec![3, 0, 2]));
    }

    #[test]
    fn bad_k_axis_and_dtypes_are_errors() {
        let x = t(&[2, 3], vec![1.0f32; 6]);
        let e = run_all(&*top_k(4, 1, true), std::slice::from_ref(&x)).unwrap_err();
        assert_cause!(e, Attr, "k = 4", "axis 1", "3");
        let e = run_all(&*top_k(-1, 1, true), std::slice::from_ref(&x)).unwrap_err();
        assert_cause!(e, Attr);
        assert!(run_all(&*top_k(1, 2, true), std::slice::from_ref(&x)).is_err());
        assert!(run_all(&*top_k(1, 0, true), &[t(&[], vec![1.0f32])]).is_err());
        assert!(run_all(&*top_k(1, 0, true), &[t(&[2], vec![true, false])]).is_err());
        let e = OpRegistry::builtin().make("top_k", &Attrs::new()).unwrap_err();
        assert_cause!(e, Attr, "'k'");
    }
}

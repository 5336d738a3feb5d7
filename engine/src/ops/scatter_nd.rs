//! `scatter_nd(x, indices, updates)` (ONNX ScatterND): a copy of x in which
//! the slice addressed by each index tuple of `indices` (i64, its last dim
//! `k` the tuple length, 1 to x's rank) is set to, or with attr
//! `reduction` (`add`, `mul`, `max`, `min`) combined with, the matching
//! slice of `updates`, whose shape is `indices.shape[..-1] + x.shape[k..]`.
//! Tuples apply in C order (the last write wins for `none`; ONNX leaves
//! repeated indices undefined there). A negative index counts from the end
//! of its axis once; one still out of range is an error before anything
//! is written.
//!
//! `scatter_nd_inplace` writes into x itself (destroys input 0): what an
//! exported model's `index_put_` meant.

use std::sync::Arc;

use crate::dtype::{DType, Element, Num};
use crate::error::{op_err, Result};
use crate::ops::elements::Reduction;
use crate::ops::gather_nd::{nd_shape, slice_offsets};
use crate::ops::{check_arity, Arity, Attrs, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `scatter_nd` op, or `scatter_nd_inplace`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterNd {
    pub reduction: Reduction,
    pub inplace: bool,
}

impl ScatterNd {
    fn check(&self, x: &TypeInfo, ind: &TypeInfo, upd: &TypeInfo) -> Result<()> {
        let op = self.name();
        if upd.dtype != x.dtype {
            return op_err(format!(
                "op '{op}': updates (input 2) is {}, x is {} (insert a cast)",
                upd.dtype, x.dtype
            ));
        }
        if self.reduction != Reduction::None && x.dtype == DType::Bool {
            return op_err(format!(
                "op '{op}': reduction '{}' does not take bool inputs",
                self.reduction.name()
            ));
        }
        // The updates' shape is what gather_nd of these indices would give.
        let want = nd_shape(op, x, ind, 0)?;
        if let (Some(w), Some(u)) = (want, &upd.shape) {
            let fits = w.len() == u.len() && w.iter().zip(u).all(|(&a, &b)| a < 0 || b < 0 || a == b);
            if !fits {
                return op_err(format!(
                    "op '{op}': updates {} must have shape {} (indices' shape less its last dim, then x's dims after the indexed ones)",
                    upd.shape_string(),
                    TypeInfo::new(x.dtype, Some(w)).shape_string()
                ));
            }
        }
        Ok(())
    }
}

fn scatter_kernel<T: Element>(
    upd: &Tensor,
    offsets: &[usize],
    inner: usize,
    out: &Tensor,
    f: impl Fn(T, T) -> T,
) -> Result<()> {
    let u = upd.to_array::<T>()?;
    let us = u.as_slice().unwrap_or_default();
    out.write_c_order(|o: &mut [T]| {
        for (src, &off) in us.chunks_exact(inner.max(1)).zip(offsets) {
            for (d, &s) in o[off..off + inner].iter_mut().zip(src) {
                *d = f(*d, s);
            }
        }
    })
}

fn scatter_num<T: Num>(
    r: Reduction,
    upd: &Tensor,
    offsets: &[usize],
    inner: usize,
    out: &Tensor,
) -> Result<()> {
    scatter_kernel::<T>(upd, offsets, inner, out, |a, b| r.apply(a, b))
}

impl Op for ScatterNd {
    fn name(&self) -> &str {
        if self.inplace {
            "scatter_nd_inplace"
        } else {
            "scatter_nd"
        }
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
        self.check(&TypeInfo::of(x), &TypeInfo::of(ind), &TypeInfo::of(upd))?;
        // Every index is checked before anything is written.
        let (offsets, inner) = slice_offsets(self.name(), x.shape(), ind, 0)?;
        let out = if self.inplace && x.is_contiguous() {
            x.clone()
        } else {
            let out = ctx.output(0, x.dtype(), x.shape())?;
            crate::dispatch_all!(x.dtype(), T => out.write(|mut o: ndarray::ArrayViewMutD<'_, T>| -> Result<()> {
                o.assign(&x.to_array::<T>()?);
                Ok(())
            })??);
            out
        };
        let r = self.reduction;
        crate::dispatch_num!(x.dtype(), T => scatter_num::<T>(r, upd, &offsets, inner, &out)?,
            crate::dispatch_all!(x.dtype(), T => scatter_kernel::<T>(upd, &offsets, inner, &out, |_, b| b)?));
        if self.inplace && !out.same_buffer(x) {
            // A strided x: the result goes back through its own layout.
            crate::dispatch_all!(x.dtype(), T => x.write(|mut o: ndarray::ArrayViewMutD<'_, T>| -> Result<()> {
                o.assign(&out.to_array::<T>()?);
                Ok(())
            })??);
            return Ok(vec![x.clone()]);
        }
        Ok(vec![out])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return Vec::new();
        }
        vec![InplaceVariant {
            op: Arc::new(ScatterNd {
                reduction: self.reduction,
                inplace: true,
            }),
            inputs: vec![0, 1, 2],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace.then(|| {
            Arc::new(ScatterNd {
                reduction: self.reduction,
                inplace: false,
            }) as Arc<dyn Op>
        })
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("reduction", self.reduction.name())
    }
}

pub fn register(r: &mut OpRegistry) {
    for inplace in [false, true] {
        let name = if inplace {
            "scatter_nd_inplace"
        } else {
            "scatter_nd"
        };
        r.register(name, move |a: &Attrs| {
            a.only(name, &["reduction"])?;
            let reduction = match a.0.get("reduction") {
                None => Reduction::None,
                Some(v) => match v.as_str().and_then(Reduction::parse) {
                    Some(r) => r,
                    None => {
                        return op_err(format!(
                            "op '{name}': attr 'reduction': expected none, add, mul, max or min, got {v}"
                        ))
                    }
                },
            };
            Ok(Arc::new(ScatterNd { reduction, inplace }) as Arc<dyn Op>)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};
    use proptest::prelude::*;

    fn snd(name: &str, reduction: &str) -> Arc<dyn Op> {
        op(name, Attrs::new().with("reduction", reduction))
    }

    #[test]
    fn fills_a_preallocated_output_of_another_layout() {
        // A transposed [2, 2] garbage buffer as the output.
        let garbage = t(&[2, 2], vec![-9.0f32; 4]).t(None).unwrap();
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(garbage.clone())]);
        let x = t(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]);
        let ind = t(&[1, 1], vec![1i64]);
        let upd = t(&[1, 2], vec![7.0f32, 8.0]);
        let out = snd("scatter_nd", "none")
            .compute(&[x, ind, upd], &mut ctx)
            .unwrap()
            .remove(0);
        assert!(out.same_buffer(&garbage));
        assert_eq!(
            out.to_array::<f32>().unwrap().iter().copied().collect::<Vec<_>>(),
            [1.0, 2.0, 7.0, 8.0]
        );
    }

    #[test]
    fn onnx_examples_and_reductions() {
        // ONNX's ScatterND example 1.
        let x = || t(&[8], (1..=8).map(|v| v as f32).collect());
        let ind = || t(&[4, 1], vec![4i64, 3, 1, 7]);
        let upd = || t(&[4], vec![9.0f32, 10.0, 11.0, 12.0]);
        let (_, v) = run_vec::<f32>(&*snd("scatter_nd", "none"), &[x(), ind(), upd()]).unwrap();
        assert_eq!(v, [1.0, 11.0, 3.0, 10.0, 9.0, 6.0, 7.0, 12.0]);
        // Repeated indices combine in order.
        let rep = || t(&[2, 1], vec![0i64, 0]);
        let two = || t(&[2], vec![2.0f32, 3.0]);
        let run = |r: &str| {
            run_vec::<f32>(&*snd("scatter_nd", r), &[x(), rep(), two()])
                .unwrap()
                .1[0]
        };
        assert_eq!(
            [run("none"), run("add"), run("mul"), run("max"), run("min")],
            [3.0, 6.0, 6.0, 3.0, 1.0]
        );
        // Slices: ONNX's example 2 shape, x [4, 2, 2], tuples of length 1.
        let x3 = t(&[4, 2, 2], vec![0i64; 16]);
        let (_, v) = run_vec::<i64>(
            &*snd("scatter_nd", "none"),
            &[
                x3,
                t(&[2, 1], vec![0i64, -2]),
                t(&[2, 2, 2], (1..=8).collect::<Vec<i64>>()),
            ],
        )
        .unwrap();
        assert_eq!(v, [1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 7, 8, 0, 0, 0, 0]);
    }

    #[test]
    fn bad_input_is_refused_before_writing() {
        let x = t(&[3], vec![1.0f32, 2.0, 3.0]);
        let e = run_vec::<f32>(
            &*snd("scatter_nd_inplace", "none"),
            &[x.clone(), t(&[2, 1], vec![0i64, 5]), t(&[2], vec![9.0f32, 9.0])],
        )
        .unwrap_err();
        assert!(e.to_string().contains("index 5"), "{e}");
        assert_eq!(x.to_array::<f32>().unwrap().as_slice().unwrap(), &[1.0, 2.0, 3.0]);
        let e = run_vec::<f32>(
            &*snd("scatter_nd", "none"),
            &[x.clone(), t(&[2, 1], vec![0i64, 1]), t(&[3], vec![9.0f32; 3])],
        )
        .unwrap_err();
        assert!(e.to_string().contains("must have shape [2]"), "{e}");
        let e = run_vec::<bool>(
            &*snd("scatter_nd", "add"),
            &[t(&[1], vec![true]), t(&[1, 1], vec![0i64]), t(&[1], vec![true])],
        );
        assert!(e.is_err());
    }

    #[test]
    fn inplace_twin_overwrites_x_and_declares_it() {
        let pure = snd("scatter_nd", "add");
        let twins = pure.inplace_variants();
        assert_eq!(twins.len(), 1);
        assert_eq!(twins[0].op.name(), "scatter_nd_inplace");
        assert_eq!(twins[0].op.destroy_map(), vec![(0, 0)]);
        assert_eq!(twins[0].op.pure_twin().unwrap().name(), "scatter_nd");
        let x = t(&[2, 2], vec![1.0f64, 2.0, 3.0, 4.0]);
        let out = crate::ops::testutil::run_all(
            &*twins[0].op,
            &[x.clone(), t(&[1, 1], vec![1i64]), t(&[1, 2], vec![10.0f64, 20.0])],
        )
        .unwrap();
        assert!(out[0].same_buffer(&x));
        assert_eq!(
            x.to_array::<f64>().unwrap().as_slice().unwrap(),
            &[1.0, 2.0, 13.0, 24.0]
        );
        // A transposed (strided) x, [[1, 3], [2, 4]], is written through its layout.
        let xt = t(&[2, 2], vec![1.0f64, 2.0, 3.0, 4.0]).transpose(None).unwrap();
        crate::ops::testutil::run_all(
            &*twins[0].op,
            &[
                xt.clone(),
                t(&[1, 1], vec![0i64]),
                t(&[1, 2], vec![10.0f64, 20.0]),
            ],
        )
        .unwrap();
        let v: Vec<f64> = xt.to_array::<f64>().unwrap().iter().copied().collect();
        assert_eq!(v, [11.0, 23.0, 2.0, 4.0]);
    }

    proptest! {
        /// Against the definition: copy x, then for each tuple in order
        /// combine every element of its slice.
        #[test]
        fn matches_the_definition(
            xs in prop::collection::vec(1usize..4, 1..4),
            k_pick in 1usize..4,
            outer in prop::collection::vec(0usize..3, 0..2),
            red in 0usize..5,
            seed in any::<u64>(),
        ) {
            let r = xs.len();
            let k = 1 + (k_pick - 1) % r;
            let reduction = ["none", "add", "mul", "max", "min"][red];
            let mut is = outer.clone();
            is.push(k);
            let tuples: usize = outer.iter().product();
            let mut state = seed;
            let mut next = || {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 33) as i64
            };
            let ind: Vec<i64> = (0..tuples * k).map(|i| {
                let len = xs[i % k] as i64;
                next() % (2 * len) - len
            }).collect();
            let inner: usize = xs[k..].iter().product();
            let xv: Vec<i64> = (0..xs.iter().product::<usize>()).map(|_| next() % 7 - 3).collect();
            let uv: Vec<i64> = (0..tuples * inner).map(|_| next() % 7 - 3).collect();
            let mut us = outer.clone();
            us.extend(&xs[k..]);
            let (_, got) = run_vec::<i64>(
                &*snd("scatter_nd", reduction),
                &[t(&xs, xv.clone()), t(&is, ind.clone()), t(&us, uv.clone())],
            ).unwrap();
            let mut want = xv;
            for tp in 0..tuples {
                let mut base = 0usize;
                for j in 0..k {
                    let i = ind[tp * k + j];
                    let n = xs[j] as i64;
                    base = base * xs[j] + (if i < 0 { i + n } else { i }) as usize;
                }
                for s in 0..inner {
                    let (w, u) = (&mut want[base * inner + s], uv[tp * inner + s]);
                    *w = match reduction {
                        "none" => u,
                        "add" => *w + u,
                        "mul" => *w * u,
                        "max" => (*w).max(u),
                        _ => (*w).min(u),
                    };
                }
            }
            prop_assert_eq!(got, want);
        }
    }
}

//! `gather_nd(x, indices)` (ONNX GatherND): gathers slices of x addressed
//! by index tuples. `indices` is i64; its last dim `k` is the length of
//! each tuple, which addresses x's axes `b .. b + k` after the first `b =
//! batch_dims` axes (attr `batch_dims`, default 0), shared by x and
//! indices. The output has shape `indices.shape[..-1] + x.shape[b + k..]`:
//! one slice of x per tuple. A negative index counts from the end of its
//! axis once; one still out of range is an error naming its position,
//! before anything is written.
//!
//! The index arithmetic lives here for [`crate::ops::scatter_nd`] too.

use std::sync::Arc;

use crate::dtype::{DType, Element};
use crate::error::{index_err, op_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `gather_nd` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatherNd {
    pub batch_dims: usize,
}

/// Checks x, indices and `batch_dims` where shapes are known and returns
/// the output shape (dims -1 where unknown), or `None` when a rank is
/// unknown.
pub(crate) fn nd_shape(
    op: &str,
    x: &TypeInfo,
    ind: &TypeInfo,
    batch_dims: usize,
) -> Result<Option<Vec<i64>>> {
    if ind.dtype != DType::I64 {
        return op_err(format!(
            "op '{op}': indices (input 1) must be i64, got {}",
            ind.dtype
        ));
    }
    let (Some(xs), Some(is)) = (&x.shape, &ind.shape) else {
        return Ok(None);
    };
    let (r, q, b) = (xs.len(), is.len(), batch_dims);
    if q == 0 {
        return op_err(format!(
            "op '{op}': indices is 0-d; its last dim holds the index tuples"
        ));
    }
    if b >= q.min(r) {
        return op_err(format!(
            "op '{op}': batch_dims {b} must be less than the ranks of x ({r}) and indices ({q})"
        ));
    }
    let k = is[q - 1];
    if k >= 0 && (k < 1 || k as usize > r - b) {
        return op_err(format!(
            "op '{op}': index tuples of length {k} (indices' last dim) must be 1 to {} (x's rank {r} less batch_dims {b})",
            r - b
        ));
    }
    for d in 0..b {
        if xs[d] >= 0 && is[d] >= 0 && xs[d] != is[d] {
            return op_err(format!(
                "op '{op}': batch axis {d} is {} in x and {} in indices (the first batch_dims axes must match)",
                xs[d], is[d]
            ));
        }
    }
    if k < 0 {
        return Ok(None);
    }
    Ok(Some(
        is[..q - 1].iter().chain(&xs[b + k as usize..]).copied().collect(),
    ))
}

/// For each index tuple of `ind` (C order), the element offset in a
/// C-contiguous x of the slice it addresses, and the slice's length.
pub(crate) fn slice_offsets(
    op: &str,
    x_shape: &[usize],
    ind: &Tensor,
    b: usize,
) -> Result<(Vec<usize>, usize)> {
    let q = ind.ndim();
    let k = ind.shape()[q - 1];
    let inner: usize = x_shape[b + k..].iter().product();
    // Element strides of the addressed axes, and of one batch.
    let mut strides = vec![0usize; k];
    let mut s = inner;
    for j in (0..k).rev() {
        strides[j] = s;
        s *= x_shape[b + j];
    }
    let per_batch = s;
    let tuples: usize = ind.shape()[..q - 1].iter().product();
    let per_batch_tuples = if b == 0 {
        tuples
    } else {
        ind.shape()[b..q - 1].iter().product()
    };
    let vals = ind.to_array::<i64>()?;
    let vals: Vec<i64> = vals.iter().copied().collect();
    let mut out = Vec::with_capacity(tuples);
    for t in 0..tuples {
        let batch = t.checked_div(per_batch_tuples).unwrap_or(0);
        let mut off = batch * per_batch;
        for j in 0..k {
            let n = x_shape[b + j] as i64;
            let i = vals[t * k + j];
            let v = if i < 0 { i + n } else { i };
            if !(0..n).contains(&v) {
                return index_err(format!(
                    "op '{op}': index {i} at indices{:?} is out of range for axis {} of length {n}",
                    position(ind.shape(), t * k + j),
                    b + j
                ));
            }
            off += v as usize * strides[j];
        }
        out.push(off);
    }
    Ok((out, inner))
}

/// The multi-index of flat C-order position `flat` in `shape`.
fn position(shape: &[usize], mut flat: usize) -> Vec<usize> {
    let mut p = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        p[d] = flat % shape[d].max(1);
        flat /= shape[d].max(1);
    }
    p
}

fn gather_kernel<T: Element>(x: &Tensor, offsets: &[usize], inner: usize, out: &Tensor) -> Result<()> {
    let xa = x.to_array::<T>()?;
    let xs = xa.as_slice().unwrap_or_default();
    out.write_c_order(|o: &mut [T]| {
        for (dst, &off) in o.chunks_exact_mut(inner.max(1)).zip(offsets) {
            dst.copy_from_slice(&xs[off..off + inner]);
        }
    })
}

impl Op for GatherNd {
    fn name(&self) -> &str {
        "gather_nd"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let shape = nd_shape(self.name(), &inputs[0], &inputs[1], self.batch_dims)?;
        Ok(vec![TypeInfo::new(inputs[0].dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let (x, ind) = (&inputs[0], &inputs[1]);
        let shape =
            nd_shape(self.name(), &TypeInfo::of(x), &TypeInfo::of(ind), self.batch_dims)?.unwrap_or_default();
        let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        let (offsets, inner) = slice_offsets(self.name(), x.shape(), ind, self.batch_dims)?;
        let out = ctx.output(0, x.dtype(), &shape)?;
        if out.size() > 0 {
            crate::dispatch_all!(x.dtype(), T => gather_kernel::<T>(x, &offsets, inner, &out)?);
        }
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("batch_dims", self.batch_dims as i64)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("gather_nd", |a: &Attrs| {
        a.only("gather_nd", &["batch_dims"])?;
        let b = a.i64("batch_dims")?.unwrap_or(0);
        let Ok(batch_dims) = usize::try_from(b) else {
            return op_err(format!("op 'gather_nd': attr 'batch_dims' must be >= 0, got {b}"));
        };
        Ok(Arc::new(GatherNd { batch_dims }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};
    use proptest::prelude::*;

    fn gnd(b: i64) -> Arc<dyn Op> {
        op("gather_nd", Attrs::new().with("batch_dims", b))
    }

    #[test]
    fn onnx_examples() {
        // ONNX's GatherND examples 1, 2, 3 and 5.
        let x = t(&[2, 2], vec![0i32, 1, 2, 3]);
        let (s, v) = run_vec::<i32>(&*gnd(0), &[x.clone(), t(&[2, 2], vec![0i64, 0, 1, 1])]).unwrap();
        assert_eq!((s, v), (vec![2], vec![0, 3]));
        let (s, v) = run_vec::<i32>(&*gnd(0), &[x, t(&[2, 1], vec![1i64, 0])]).unwrap();
        assert_eq!((s, v), (vec![2, 2], vec![2, 3, 0, 1]));
        let x = t(&[2, 2, 2], (0..8).collect::<Vec<i32>>());
        let (s, v) = run_vec::<i32>(&*gnd(0), &[x.clone(), t(&[2, 2], vec![0i64, 1, 1, 0])]).unwrap();
        assert_eq!((s, v), (vec![2, 2], vec![2, 3, 4, 5]));
        let (s, v) = run_vec::<i32>(&*gnd(1), &[x, t(&[2, 1], vec![1i64, 0])]).unwrap();
        assert_eq!((s, v), (vec![2, 2], vec![2, 3, 4, 5]));
    }

    #[test]
    fn fills_a_preallocated_output_of_another_layout() {
        // A transposed [2, 2] garbage buffer as the output of example 2.
        let garbage = t(&[2, 2], vec![-9i32; 4]).t(None).unwrap();
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(garbage.clone())]);
        let x = t(&[2, 2], vec![0i32, 1, 2, 3]);
        let out = gnd(0)
            .compute(&[x, t(&[2, 1], vec![1i64, 0])], &mut ctx)
            .unwrap()
            .remove(0);
        assert!(out.same_buffer(&garbage));
        assert_eq!(
            out.to_array::<i32>().unwrap().iter().copied().collect::<Vec<_>>(),
            [2, 3, 0, 1]
        );
    }

    #[test]
    fn negative_and_bad_indices() {
        let x = t(&[3, 2], vec![0.5f32, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let (_, v) = run_vec::<f32>(&*gnd(0), &[x.clone(), t(&[1, 2], vec![-1i64, -2])]).unwrap();
        assert_eq!(v, [4.0]);
        let e = run_vec::<f32>(&*gnd(0), &[x.clone(), t(&[2, 1], vec![0i64, 3])]).unwrap_err();
        assert!(e.to_string().contains("index 3 at indices[1, 0]"), "{e}");
        let e = run_vec::<f32>(&*gnd(0), &[x.clone(), t(&[1, 3], vec![0i64; 3])]).unwrap_err();
        assert!(e.to_string().contains("tuples of length 3"), "{e}");
        let e = run_vec::<f32>(&*gnd(1), &[x.clone(), t(&[2, 1], vec![0i64; 2])]);
        assert!(e.is_err(), "batch axis 3 vs 2");
        let e = run_vec::<f32>(&*gnd(0), &[x, t(&[1, 1], vec![0i32])]).unwrap_err();
        assert!(e.to_string().contains("must be i64"), "{e}");
        assert!(OpRegistry::builtin()
            .make("gather_nd", &Attrs::new().with("batch_dims", -1))
            .is_err());
    }

    /// The definition, element by element: out[p, s] = x[batch(p), ind[p], s].
    fn reference(x: &[f64], xs: &[usize], ind: &[i64], is: &[usize], b: usize) -> Vec<f64> {
        let k = *is.last().unwrap();
        let tuples: usize = is[..is.len() - 1].iter().product();
        let inner: usize = xs[b + k..].iter().product();
        let mut out = Vec::new();
        for tpl in 0..tuples {
            let p = position(&is[..is.len() - 1], tpl);
            let mut xi: Vec<usize> = p[..b].to_vec();
            for j in 0..k {
                let i = ind[tpl * k + j];
                xi.push(if i < 0 {
                    (i + xs[b + j] as i64) as usize
                } else {
                    i as usize
                });
            }
            for s in 0..inner {
                let mut full = xi.clone();
                full.extend(position(&xs[b + k..], s));
                let flat = full.iter().zip(xs).fold(0, |a, (&i, &n)| a * n + i);
                out.push(x[flat]);
            }
        }
        out
    }

    proptest! {
        #[test]
        fn matches_the_definition(
            xs in prop::collection::vec(1usize..4, 1..4),
            b_pick in 0usize..3,
            k_pick in 1usize..4,
            outer in prop::collection::vec(0usize..3, 0..2),
            seed in any::<u64>(),
        ) {
            let r = xs.len();
            let b = b_pick.min(r - 1);
            let k = 1 + (k_pick - 1) % (r - b);
            let mut is: Vec<usize> = xs[..b].to_vec();
            is.extend(&outer);
            is.push(k);
            let n: usize = is.iter().product();
            let mut state = seed;
            let ind: Vec<i64> = (0..n)
                .map(|i| {
                    state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let len = xs[b + i % k] as i64;
                    (state >> 33) as i64 % (2 * len) - len
                })
                .collect();
            let xv: Vec<f64> = (0..xs.iter().product::<usize>()).map(|v| v as f64 * 0.5).collect();
            let (shape, got) = run_vec::<f64>(&*gnd(b as i64), &[t(&xs, xv.clone()), t(&is, ind.clone())]).unwrap();
            let mut want_shape: Vec<usize> = is[..is.len() - 1].to_vec();
            want_shape.extend(&xs[b + k..]);
            prop_assert_eq!(shape, want_shape);
            prop_assert_eq!(got, reference(&xv, &xs, &ind, &is, b));
        }
    }
}

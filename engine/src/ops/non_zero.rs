//! `non_zero(x)` (ONNX NonZero): the indices of x's nonzero elements, an
//! i64 tensor of shape `[rank, n]` with one column per nonzero element in
//! C order (numpy's `np.array(np.nonzero(x))`). n is decided when the op
//! runs. Any dtype: an element is nonzero when it does not equal zero as a
//! number (so NaN is nonzero, -0.0 is not; bool: true). A 0-d x gives
//! `[0, n]` (n is 1 when its one element is nonzero), as ONNX's shape
//! inference and torch do, where numpy would give `[1, n]`.

use std::sync::Arc;

use ndarray::{ArrayViewD, Dimension};

use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `non_zero` op.
#[derive(Clone, Debug, PartialEq)]
pub struct NonZero;

/// The C-order positions of `x`'s nonzero elements, each as its `rank`
/// coordinates, one after another. x is walked in its logical C order
/// whatever its strides.
fn nonzero_coords<T: Element>(x: ArrayViewD<'_, T>) -> Vec<usize> {
    let mut coords = Vec::new();
    for (ix, &v) in x.indexed_iter() {
        if v.to_f64() != 0.0 {
            coords.extend_from_slice(ix.slice());
        }
    }
    coords
}

/// How many elements of a 0-d `x` are nonzero (0 or 1).
fn nonzero_count<T: Element>(x: ArrayViewD<'_, T>) -> usize {
    x.iter().filter(|v| v.to_f64() != 0.0).count()
}

impl Op for NonZero {
    fn name(&self) -> &str {
        "non_zero"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let rank = inputs[0].rank().map_or(-1, |r| r as i64);
        Ok(vec![TypeInfo::new(DType::I64, Some(vec![rank, -1]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let rank = x.ndim();
        if rank == 0 {
            let n = crate::dispatch_all!(x.dtype(), T => x.read(nonzero_count::<T>)?);
            return Ok(vec![ctx.output(0, DType::I64, &[0, n])?]);
        }
        let coords = crate::dispatch_all!(x.dtype(), T => x.read(nonzero_coords::<T>)?);
        let n = coords.len() / rank;
        let out = ctx.output(0, DType::I64, &[rank, n])?;
        // Row d holds every element's coordinate on axis d.
        out.write_c_order(|y: &mut [i64]| {
            for (k, c) in coords.chunks_exact(rank).enumerate() {
                for (d, &i) in c.iter().enumerate() {
                    y[d * n + k] = i as i64;
                }
            }
        })?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register_op(Arc::new(NonZero));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    /// The plain definition: walk x in C order, list each nonzero element's
    /// coordinates, and lay them out as columns.
    fn reference(shape: &[usize], data: &[f64]) -> (Vec<usize>, Vec<i64>) {
        let mut cols: Vec<Vec<i64>> = Vec::new();
        for (flat, &v) in data.iter().enumerate() {
            if v != 0.0 {
                let mut rest = flat;
                let mut c = vec![0i64; shape.len()];
                for d in (0..shape.len()).rev() {
                    c[d] = (rest % shape[d]) as i64;
                    rest /= shape[d];
                }
                cols.push(c);
            }
        }
        let y = (0..shape.len())
            .flat_map(|d| cols.iter().map(move |c| c[d]))
            .collect();
        (vec![shape.len(), cols.len()], y)
    }

    #[test]
    fn lists_the_coordinates_of_nonzero_elements_as_columns() {
        let data = [1.0, 0.0, 2.0, 0.0, -0.0, f64::NAN, 3.0, 0.0, 0.0, 0.0, 0.0, 4.0];
        let x = t(&[2, 3, 2], data.iter().map(|&v| v as f32).collect());
        let got = run_vec::<i64>(&*op("non_zero", Attrs::new()), &[x]).unwrap();
        assert_eq!(got, reference(&[2, 3, 2], &data));
        assert_eq!(got.0, [3, 5]);
    }

    #[test]
    fn every_dtype_counts_what_is_not_zero() {
        let bools = t(&[4], vec![false, true, true, false]);
        let ints = t(&[4], vec![0u8, 7, 0, 255]);
        let halves = t(
            &[4],
            vec![
                half::f16::from_f32(0.5),
                half::f16::ZERO,
                half::f16::NEG_ZERO,
                half::f16::ONE,
            ],
        );
        for (x, want) in [(bools, vec![1, 2]), (ints, vec![1, 3]), (halves, vec![0, 3])] {
            let (s, y) = run_vec::<i64>(&*op("non_zero", Attrs::new()), &[x]).unwrap();
            assert_eq!((s, y), (vec![1, 2], want));
        }
    }

    #[test]
    fn an_all_zero_input_gives_no_columns() {
        let x = t(&[2, 3], vec![0i32; 6]);
        let (s, y) = run_vec::<i64>(&*op("non_zero", Attrs::new()), &[x]).unwrap();
        assert_eq!(s, [2, 0]);
        assert!(y.is_empty());
    }

    #[test]
    fn a_scalar_gives_no_rows() {
        for (v, n) in [(5.0f64, 1), (0.0, 0)] {
            let x = t(&[], vec![v]);
            let (s, _) = run_vec::<i64>(&*op("non_zero", Attrs::new()), &[x]).unwrap();
            assert_eq!(s, [0, n]);
        }
    }

    #[test]
    fn a_transposed_view_is_read_in_its_own_order() {
        let data: Vec<i64> = vec![0, 1, 2, 0, 0, 3];
        let x = t(&[2, 3], data.clone()).permute(&[1, 0]).unwrap();
        // x^T is [[0, 0], [1, 0], [2, 3]].
        let got = run_vec::<i64>(&*op("non_zero", Attrs::new()), &[x]).unwrap();
        let xt = [0.0, 0.0, 1.0, 0.0, 2.0, 3.0];
        assert_eq!(got, reference(&[3, 2], &xt));
        assert_eq!(got.1, [1, 2, 2, 0, 0, 1]);
    }

    #[test]
    fn infer_knows_the_rank_but_not_the_count() {
        let o = op("non_zero", Attrs::new());
        let ti = o
            .infer(&[TypeInfo::new(DType::F32, Some(vec![4, 5, 6]))])
            .unwrap();
        assert_eq!(ti[0], TypeInfo::new(DType::I64, Some(vec![3, -1])));
        let ti = o.infer(&[TypeInfo::new(DType::Bool, None)]).unwrap();
        assert_eq!(ti[0].shape, Some(vec![-1, -1]));
    }
}

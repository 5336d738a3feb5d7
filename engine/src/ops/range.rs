//! `range(start, limit, delta)`: numpy's `arange` (ONNX Range). The three
//! inputs are single-element tensors of one numeric dtype; the result is
//! the 1-D `[start, start + delta, …]` of `max(ceil((limit − start) /
//! delta), 0)` elements, element `i` being `start + i·delta`. Its length
//! depends on the values, so before running only the rank is known. A
//! zero or NaN `delta`, or a length that is not finite, is an error.

use std::sync::Arc;

use crate::dtype::{DType, Element, Num};
use crate::error::{op_err, refuse_dtype, shape_err, Result};
use crate::ops::{check_arity, Arity, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::limit::check_shape;
use crate::tensor::Tensor;

const INPUTS: [&str; 3] = ["start", "limit", "delta"];

/// The `range` op.
#[derive(Clone, Debug)]
pub struct Range;

/// The single element of input `k`.
fn scalar_of<T: Element>(x: &Tensor, k: usize) -> Result<T> {
    if x.size() != 1 {
        return shape_err(format!(
            "op 'range': {} (input {k}) must hold one element, got shape {:?}",
            INPUTS[k],
            x.shape()
        ));
    }
    Ok(x.to_array::<T>()?.iter().copied().next().unwrap_or_default())
}

/// The element count, exact for integers and as numpy computes it (in
/// f64) for floats.
fn length<T: Num>(start: T, limit: T, delta: T) -> Result<usize> {
    let n = if T::DTYPE.is_float() {
        let (s, l, d) = (
            Element::to_f64(start),
            Element::to_f64(limit),
            Element::to_f64(delta),
        );
        if d == 0.0 || d.is_nan() {
            return op_err(format!("op 'range': delta is {d}"));
        }
        let n = ((l - s) / d).ceil();
        if !n.is_finite() {
            return op_err(format!(
                "op 'range': start {s}, limit {l}, delta {d} give no finite length"
            ));
        }
        n.max(0.0)
    } else {
        let int = |v: T| num_traits::ToPrimitive::to_i128(&v).unwrap_or_default();
        let (s, l, d) = (int(start), int(limit), int(delta));
        if d == 0 {
            return op_err("op 'range': delta is 0");
        }
        // Ceiling division of integers, rounding toward +inf.
        let (q, r) = ((l - s) / d, (l - s) % d);
        let n = if r != 0 && ((r > 0) == (d > 0)) { q + 1 } else { q };
        n.max(0) as f64
    };
    if n > usize::MAX as f64 {
        return op_err(format!("op 'range': {n} elements is too many"));
    }
    Ok(n as usize)
}

fn range_kernel<T: Num>(inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Tensor> {
    let [start, limit, delta] = [0, 1, 2].map(|k| scalar_of::<T>(&inputs[k], k));
    let (start, delta) = (start?, delta?);
    let n = length(start, limit?, delta)?;
    check_shape(&[n])?;
    let out = ctx.output(0, T::DTYPE, &[n])?;
    out.write(|mut o: ndarray::ArrayViewMutD<'_, T>| {
        for (i, v) in o.iter_mut().enumerate() {
            *v = if T::DTYPE.is_float() {
                <T as Element>::from_f64(Element::to_f64(start) + i as f64 * Element::to_f64(delta))
            } else {
                T::add_w(start, T::mul_w(T::from_i64_wrapping(i as i64), delta))
            };
        }
    })?;
    Ok(out)
}

impl Op for Range {
    fn name(&self) -> &str {
        "range"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(3)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let d = TypeInfo::common_dtype("range", inputs, "numeric", DType::is_numeric)?;
        Ok(vec![TypeInfo::new(d, Some(vec![-1]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let out = crate::dispatch_num!(inputs[0].dtype(), T => range_kernel::<T>(inputs, ctx)?,
            return refuse_dtype("range", inputs[0].dtype()));
        Ok(vec![out])
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register_op(Arc::new(Range));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::run_vec;
    use crate::ops::Attrs;

    fn s<T: Element>(v: T) -> Tensor {
        Tensor::from_vec(&[], vec![v]).unwrap()
    }

    fn range<T: Num>(a: T, b: T, c: T) -> Result<Vec<T>> {
        let op = crate::ops::testutil::op("range", Attrs::new());
        let (shape, v) = run_vec::<T>(&*op, &[s(a), s(b), s(c)])?;
        assert_eq!(shape, [v.len()]);
        Ok(v)
    }

    #[test]
    fn integers_count_up_and_down_with_partial_last_steps() {
        assert_eq!(range(0i64, 5, 2).unwrap(), [0, 2, 4]);
        assert_eq!(range(10i32, 4, -3).unwrap(), [10, 7]);
        assert_eq!(range(-3i64, 3, 3).unwrap(), [-3, 0]);
        assert_eq!(range(1i32, 1, 1).unwrap(), Vec::<i32>::new());
        assert_eq!(range(5i64, 0, 1).unwrap(), Vec::<i64>::new());
        assert_eq!(
            range(i64::MIN, i64::MIN + 2, 1).unwrap(),
            [i64::MIN, i64::MIN + 1]
        );
    }

    #[test]
    fn floats_use_start_plus_i_delta() {
        assert_eq!(range(1.0f32, 2.0, 0.25).unwrap(), [1.0, 1.25, 1.5, 1.75]);
        assert_eq!(range(0.0f64, -1.0, -0.4).unwrap(), [0.0, -0.4, -0.8]);
        // ceil((2.1 − 0) / 1) = 3
        assert_eq!(range(0.0f64, 2.1, 1.0).unwrap(), [0.0, 1.0, 2.0]);
    }

    #[test]
    fn a_zero_or_nan_delta_and_bad_inputs_are_errors() {
        assert!(range(0i64, 5, 0).unwrap_err().to_string().contains("delta is 0"));
        assert!(range(0.0f32, 5.0, f32::NAN).is_err());
        assert!(range(0.0f64, f64::INFINITY, 1.0).is_err());
        let op = crate::ops::testutil::op("range", Attrs::new());
        let e = run_vec::<i64>(&*op, &[s(0i64), Tensor::from_i64s(&[1, 2]), s(1i64)]).unwrap_err();
        assert!(e.to_string().contains("limit (input 1)"), "{e}");
        let e = op.infer(&[
            TypeInfo::known(DType::I64, &[]),
            TypeInfo::known(DType::I32, &[]),
            TypeInfo::known(DType::I64, &[]),
        ]);
        assert!(e.is_err());
    }
}

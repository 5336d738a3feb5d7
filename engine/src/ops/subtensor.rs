//! Writing through an index: `set_subtensor(x, value, idx...)` is a copy of
//! `x` with `x[idx] = value`, `inc_subtensor` the same with `+=`; the index
//! vectors (inputs 2..) use the CreateView encoding.
//!
//! The in-place twins `set_subtensor_inplace` / `inc_subtensor_inplace`
//! destroy input 0 (destroy_map `{0: [0]}`): they write into `x`'s buffer
//! through the indexed view and return `x` itself (same buffer, same layout).
//! A `value` that shares `x`'s buffer (`x[1:] = x.T[:-1]`) is copied first,
//! which gives numpy's answer for overlapping operands.
//!
//! Broadcasting follows numpy: `value` broadcasts into the indexed region;
//! for set, leading length-1 axes of `value` beyond the region's rank are
//! dropped first (`a[0] = ones((1, 3))` is allowed), while inc follows
//! `np.add(view, value, out=view)` and does not drop them. Integer inc
//! wraps on overflow, as numpy's does.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Zip};

use crate::dtype::{DType, Element};
use crate::error::{op_err, Error, Result};
use crate::ops::copy::detach;
use crate::ops::view::{decode_indices, infer_indexed};
use crate::ops::{check_arity, Arity, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// Assignment or increment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubKind {
    Set,
    Inc,
}

impl SubKind {
    pub const ALL: [SubKind; 2] = [SubKind::Set, SubKind::Inc];

    pub fn name(self) -> &'static str {
        match self {
            SubKind::Set => "set_subtensor",
            SubKind::Inc => "inc_subtensor",
        }
    }
}

/// `set_subtensor`, `inc_subtensor` and their `_inplace` twins.
#[derive(Clone, Debug)]
pub struct Subtensor {
    pub kind: SubKind,
    pub inplace: bool,
    name: String,
}

impl Subtensor {
    pub fn new(kind: SubKind, inplace: bool) -> Subtensor {
        let name = if inplace {
            format!("{}_inplace", kind.name())
        } else {
            kind.name().to_string()
        };
        Subtensor { kind, inplace, name }
    }

    fn err<T>(&self, msg: impl std::fmt::Display) -> Result<T> {
        op_err(format!("op '{}': {msg}", self.name))
    }

    fn check_dtypes(&self, x: DType, value: DType) -> Result<()> {
        if x != value {
            return Err(Error::DType(format!(
                "op '{}': value (input 1) is {value}, x (input 0) is {x} (insert a cast)",
                self.name
            )));
        }
        if self.kind == SubKind::Inc && x == DType::Bool {
            return Err(Error::DType(format!(
                "op '{}': does not take bool inputs",
                self.name
            )));
        }
        Ok(())
    }

    /// `value` as a view broadcast into the indexed region's `shape`.
    fn fit(&self, value: &Tensor, shape: &[usize], x_shape: &[usize]) -> Result<Tensor> {
        let mut v = value.clone();
        if self.kind == SubKind::Set {
            while v.ndim() > shape.len() && v.shape()[0] == 1 {
                v = v.squeeze(Some(&[0]))?;
            }
        }
        v.broadcast_to(shape).map_err(|_| {
            Error::Shape(format!(
                "op '{}': value of shape {:?} does not broadcast into the indexed region of shape {shape:?} (x has shape {x_shape:?})",
                self.name,
                value.shape()
            ))
        })
    }

    /// Runs the kernel for this op's kind, dispatching on the dtype once.
    /// `base` is `(x, out)` for the pure op: `x` is first copied into `out`.
    fn run(&self, base: Option<(&Tensor, &Tensor)>, region: &Tensor, value: &Tensor) -> Result<()> {
        let dt = region.dtype();
        match self.kind {
            SubKind::Set => {
                crate::dispatch_all!(dt, T => write_region::<T>(base, region, value, |d, v| *d = v))
            }
            SubKind::Inc => crate::dispatch_num!(dt,
                T => write_region::<T>(base, region, value, |d, v| *d = <T as crate::dtype::Num>::add_w(*d, v)),
                self.err("does not take bool inputs")),
        }
    }
}

/// Copies `x` into `out` when `base` is given, then applies `f` to each
/// element of `region` (a view of the written buffer) and the matching
/// element of `value` (already broadcast to `region`'s shape).
fn write_region<T: Element>(
    base: Option<(&Tensor, &Tensor)>,
    region: &Tensor,
    value: &Tensor,
    f: impl Fn(&mut T, T),
) -> Result<()> {
    if let Some((x, out)) = base {
        x.read(|xv: ArrayViewD<'_, T>| out.write(|mut ov: ArrayViewMutD<'_, T>| ov.assign(&xv)))??;
    }
    value.read(|vv: ArrayViewD<'_, T>| {
        region.write(|mut rv: ArrayViewMutD<'_, T>| Zip::from(&mut rv).and(&vv).for_each(|d, &v| f(d, v)))
    })??;
    Ok(())
}

impl Op for Subtensor {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::at_least(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (x, value) = (&inputs[0], &inputs[1]);
        self.check_dtypes(x.dtype, value.dtype)?;
        let mut indexed = vec![x.clone()];
        indexed.extend_from_slice(&inputs[2..]);
        infer_indexed(&self.name, &indexed)?;
        Ok(vec![x.clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let (x, value) = (&inputs[0], &inputs[1]);
        self.check_dtypes(x.dtype(), value.dtype())?;
        let idx = decode_indices(&inputs[2..])?;
        if self.inplace {
            if x.layout().has_self_overlap() {
                return Err(Error::Layout(format!(
                    "op '{}': cannot write into x (input 0), a broadcast view (shape {:?}, strides {:?})",
                    self.name,
                    x.shape(),
                    x.strides()
                )));
            }
            // Everything is checked before the first write, so a failing
            // call leaves x untouched.
            let region = x.slice(&idx)?;
            let value = self.fit(&detach(value, x)?, region.shape(), x.shape())?;
            self.run(None, &region, &value)?;
            return Ok(vec![x.clone()]);
        }
        let out = ctx.output(0, x.dtype(), x.shape())?;
        let region = out.slice(&idx)?;
        let value = self.fit(&detach(value, &out)?, region.shape(), x.shape())?;
        let x = detach(x, &out)?;
        self.run(Some((&x, &out)), &region, &value)?;
        Ok(vec![out])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
    /// `x[idx] = f(x)` is well defined: a value sharing x's buffer is copied
    /// before the write.
    fn tolerates_same_input(&self) -> bool {
        self.inplace
    }
    /// The twin takes the same inputs in the same order.
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return Vec::new();
        }
        vec![InplaceVariant {
            op: Arc::new(Subtensor::new(self.kind, true)),
            inputs: vec![0, 1],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace
            .then(|| Arc::new(Subtensor::new(self.kind, false)) as Arc<dyn Op>)
    }
}

pub fn register(r: &mut OpRegistry) {
    for kind in SubKind::ALL {
        for inplace in [false, true] {
            r.register_op(Arc::new(Subtensor::new(kind, inplace)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::dtype::Scalar;
    use crate::ops::Attrs;
    use crate::tensor::IndexSpec;

    fn f64s(shape: &[usize], v: &[f64]) -> Tensor {
        Tensor::from_vec(shape, v.to_vec()).unwrap()
    }

    fn arange(shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        f64s(shape, &(0..n).map(|i| i as f64).collect::<Vec<_>>())
    }

    fn vals(t: &Tensor) -> Vec<f64> {
        t.to_f64_vec().unwrap()
    }

    fn rev() -> IndexSpec {
        IndexSpec::range(-1, i64::MIN, -1)
    }

    fn call(kind: SubKind, inplace: bool, x: &Tensor, value: &Tensor, specs: &[IndexSpec]) -> Result<Tensor> {
        let mut inputs = vec![x.clone(), value.clone()];
        inputs.extend(specs.iter().map(|s| Tensor::from_i64s(&s.encode())));
        Ok(Subtensor::new(kind, inplace)
            .compute(&inputs, &mut OpCtx::new("n"))?
            .remove(0))
    }

    fn set(x: &Tensor, v: &Tensor, specs: &[IndexSpec]) -> Result<Tensor> {
        call(SubKind::Set, false, x, v, specs)
    }
    fn inc(x: &Tensor, v: &Tensor, specs: &[IndexSpec]) -> Result<Tensor> {
        call(SubKind::Inc, false, x, v, specs)
    }
    fn set_ip(x: &Tensor, v: &Tensor, specs: &[IndexSpec]) -> Result<Tensor> {
        call(SubKind::Set, true, x, v, specs)
    }
    fn inc_ip(x: &Tensor, v: &Tensor, specs: &[IndexSpec]) -> Result<Tensor> {
        call(SubKind::Inc, true, x, v, specs)
    }

    fn scalar(v: f64) -> Tensor {
        Tensor::scalar(Scalar::F64(v))
    }

    #[test]
    fn pure_set_and_inc_leave_x_alone() {
        let x = arange(&[3, 3]);
        let v0 = x.version();
        let y = set(&x, &scalar(9.0), &[IndexSpec::Point(1)]).unwrap();
        assert_eq!(vals(&y), [0.0, 1.0, 2.0, 9.0, 9.0, 9.0, 6.0, 7.0, 8.0]);
        assert!(!y.same_buffer(&x));
        assert_eq!(vals(&x), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        assert_eq!(x.version(), v0);
        // x[:, ::2] += [10, 20]  (broadcast over rows)
        let y = inc(
            &x,
            &f64s(&[2], &[10.0, 20.0]),
            &[IndexSpec::All, IndexSpec::range(0, 3, 2)],
        )
        .unwrap();
        assert_eq!(vals(&y), [10.0, 1.0, 22.0, 13.0, 4.0, 25.0, 16.0, 7.0, 28.0]);
        assert_eq!(x.version(), v0);
    }

    #[test]
    fn pure_ops_on_transposed_reversed_broadcast_and_empty_inputs() {
        // x.T = [[0, 3, 6], [1, 4, 7], [2, 5, 8]]; x.T[-1] = [7, 8, 9]
        let xt = arange(&[3, 3]).t(None).unwrap();
        let y = set(&xt, &f64s(&[3], &[7.0, 8.0, 9.0]), &[IndexSpec::Point(-1)]).unwrap();
        assert_eq!(y.shape(), &[3, 3]);
        assert_eq!(vals(&y), [0.0, 3.0, 6.0, 1.0, 4.0, 7.0, 7.0, 8.0, 9.0]);
        // arange(4)[::-1] = [3, 2, 1, 0]; [1:3] += 10 -> [3, 12, 11, 0]
        let xr = arange(&[4]).slice(&[rev()]).unwrap();
        let y = inc(&xr, &scalar(10.0), &[IndexSpec::range(1, 3, 1)]).unwrap();
        assert_eq!(vals(&y), [3.0, 12.0, 11.0, 0.0]);
        // broadcast_to([1, 2], (2, 2)); [0, :] = [5, 6] -> [[5, 6], [1, 2]]
        let xb = f64s(&[2], &[1.0, 2.0]).broadcast_to(&[2, 2]).unwrap();
        let y = set(&xb, &f64s(&[2], &[5.0, 6.0]), &[IndexSpec::Point(0)]).unwrap();
        assert_eq!(vals(&y), [5.0, 6.0, 1.0, 2.0]);
        // An empty region changes nothing; an empty x gives an empty copy.
        let x = arange(&[2, 2]);
        let y = inc(&x, &scalar(1.0), &[IndexSpec::range(1, 1, 1)]).unwrap();
        assert_eq!(vals(&y), [0.0, 1.0, 2.0, 3.0]);
        let e = Tensor::zeros(DType::F64, &[0, 3]).unwrap();
        let y = set(&e, &f64s(&[3], &[1.0, 2.0, 3.0]), &[]).unwrap();
        assert_eq!(y.shape(), &[0, 3]);
    }

    #[test]
    fn set_drops_leading_unit_axes_of_value_but_inc_does_not() {
        let x = arange(&[2, 3]);
        // numpy: x[0] = ones((1, 1, 3)) is allowed
        let y = set(&x, &f64s(&[1, 1, 3], &[7.0, 8.0, 9.0]), &[IndexSpec::Point(0)]).unwrap();
        assert_eq!(vals(&y), [7.0, 8.0, 9.0, 3.0, 4.0, 5.0]);
        // numpy: x[0] += ones((1, 3)) fails (non-broadcastable output operand)
        let e = inc(&x, &f64s(&[1, 3], &[1.0, 1.0, 1.0]), &[IndexSpec::Point(0)])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "op 'inc_subtensor': value of shape [1, 3] does not broadcast into the indexed region of shape [3] (x has shape [2, 3])"
        );
    }

    #[test]
    fn inplace_writes_through_the_view_and_returns_x() {
        let base = arange(&[3, 3]);
        let alias = base.clone();
        let v0 = base.version();
        let y = set_ip(
            &base,
            &f64s(&[3], &[-1.0, -2.0, -3.0]),
            &[IndexSpec::All, IndexSpec::Point(1)],
        )
        .unwrap();
        assert!(y.same_buffer(&base));
        assert_eq!(y.layout(), base.layout());
        assert!(base.version() > v0);
        assert_eq!(vals(&alias), [0.0, -1.0, 2.0, 3.0, -2.0, 5.0, 6.0, -3.0, 8.0]);
        let v1 = base.version();
        let y = inc_ip(
            &base,
            &scalar(100.0),
            &[IndexSpec::Point(2), IndexSpec::range(0, 2, 1)],
        )
        .unwrap();
        assert!(y.same_buffer(&base) && base.version() > v1);
        assert_eq!(vals(&alias), [0.0, -1.0, 2.0, 3.0, -2.0, 5.0, 106.0, 97.0, 8.0]);
    }

    #[test]
    fn inplace_on_transposed_and_reversed_views_keeps_their_layout() {
        // x.T[0] = [7, 8] writes column 0 of x: x = [[7, 1], [8, 3]]
        let x = arange(&[2, 2]);
        let xt = x.t(None).unwrap();
        let y = set_ip(&xt, &f64s(&[2], &[7.0, 8.0]), &[IndexSpec::Point(0)]).unwrap();
        assert_eq!(y.layout(), xt.layout());
        assert_eq!(vals(&y), [7.0, 8.0, 1.0, 3.0]);
        assert_eq!(vals(&x), [7.0, 1.0, 8.0, 3.0]);
        // r = arange(5)[::-1]; r[:2] = [10, 11] -> base [0, 1, 2, 11, 10]
        let base = arange(&[5]);
        let r = base.slice(&[rev()]).unwrap();
        let y = set_ip(&r, &f64s(&[2], &[10.0, 11.0]), &[IndexSpec::range(0, 2, 1)]).unwrap();
        assert_eq!(y.strides(), &[-1]);
        assert_eq!(vals(&y), [10.0, 11.0, 2.0, 1.0, 0.0]);
        assert_eq!(vals(&base), [0.0, 1.0, 2.0, 11.0, 10.0]);
    }

    #[test]
    fn inplace_with_a_value_overlapping_x_gives_numpys_answer() {
        // numpy: x = arange(9).reshape(3, 3); x[1:, :] = x.T[:-1, :]
        // -> [[0, 1, 2], [0, 3, 6], [1, 4, 7]]
        let x = arange(&[3, 3]);
        let v = x.t(None).unwrap().slice(&[IndexSpec::range(0, -1, 1)]).unwrap();
        let y = set_ip(&x, &v, &[IndexSpec::range(1, 3, 1)]).unwrap();
        assert!(y.same_buffer(&x));
        assert_eq!(vals(&x), [0.0, 1.0, 2.0, 0.0, 3.0, 6.0, 1.0, 4.0, 7.0]);
        // x = arange(9).reshape(3, 3); x[1:, :] += x.T[:-1, :]
        // -> [[0, 1, 2], [3, 7, 11], [7, 11, 15]]
        let x = arange(&[3, 3]);
        let v = x.t(None).unwrap().slice(&[IndexSpec::range(0, -1, 1)]).unwrap();
        inc_ip(&x, &v, &[IndexSpec::range(1, 3, 1)]).unwrap();
        assert_eq!(vals(&x), [0.0, 1.0, 2.0, 3.0, 7.0, 11.0, 7.0, 11.0, 15.0]);
        // a = arange(5); a[1:] = a[:-1] -> [0, 0, 1, 2, 3]; a += a -> doubled
        let a = arange(&[5]);
        let head = a.slice(&[IndexSpec::range(0, -1, 1)]).unwrap();
        set_ip(&a, &head, &[IndexSpec::range(1, 5, 1)]).unwrap();
        assert_eq!(vals(&a), [0.0, 0.0, 1.0, 2.0, 3.0]);
        inc_ip(&a, &a, &[]).unwrap();
        assert_eq!(vals(&a), [0.0, 0.0, 2.0, 4.0, 6.0]);
    }

    #[test]
    fn pure_op_with_value_from_x_reads_the_original_x() {
        // y = x.copy(); y[1:] = x.T[:-1]
        let x = arange(&[3, 3]);
        let v = x.t(None).unwrap().slice(&[IndexSpec::range(0, -1, 1)]).unwrap();
        let y = set(&x, &v, &[IndexSpec::range(1, 3, 1)]).unwrap();
        assert_eq!(vals(&y), [0.0, 1.0, 2.0, 0.0, 3.0, 6.0, 1.0, 4.0, 7.0]);
        assert_eq!(vals(&x), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    }

    #[test]
    fn pure_op_fills_a_preallocated_output_aliasing_the_value() {
        // The caller hands x's own buffer as the output: the value (a view of
        // x) must be read before it is overwritten.
        let x = arange(&[3, 3]);
        let v = x.t(None).unwrap().slice(&[IndexSpec::range(0, -1, 1)]).unwrap();
        let other = arange(&[3, 3]);
        let mut ctx = OpCtx::with_prealloc("n", vec![Some(x.clone())]);
        let mut inputs = vec![other, v];
        inputs.push(Tensor::from_i64s(&IndexSpec::range(1, 3, 1).encode()));
        let y = Subtensor::new(SubKind::Set, false)
            .compute(&inputs, &mut ctx)
            .unwrap()
            .remove(0);
        assert!(y.same_buffer(&x));
        assert_eq!(vals(&y), [0.0, 1.0, 2.0, 0.0, 3.0, 6.0, 1.0, 4.0, 7.0]);
    }

    #[test]
    fn integer_and_bool_dtypes() {
        let x = Tensor::from_vec(&[3], vec![i32::MAX, 1, 2]).unwrap();
        let y = inc(&x, &Tensor::scalar(Scalar::I32(1)), &[]).unwrap();
        assert_eq!(
            y.to_array::<i32>().unwrap().into_raw_vec_and_offset().0,
            [i32::MIN, 2, 3]
        );
        let x = Tensor::from_vec(&[2], vec![i64::MIN, 0]).unwrap();
        inc_ip(&x, &Tensor::scalar(Scalar::I64(-1)), &[]).unwrap();
        assert_eq!(
            x.to_array::<i64>().unwrap().into_raw_vec_and_offset().0,
            [i64::MAX, -1]
        );
        let b = Tensor::from_vec(&[3], vec![false; 3]).unwrap();
        let y = set(
            &b,
            &Tensor::scalar(Scalar::Bool(true)),
            &[IndexSpec::range(0, 3, 2)],
        )
        .unwrap();
        assert_eq!(
            y.to_array::<bool>().unwrap().into_raw_vec_and_offset().0,
            [true, false, true]
        );
        let e = inc(&b, &b, &[]).unwrap_err().to_string();
        assert_eq!(e, "op 'inc_subtensor': does not take bool inputs");
    }

    #[test]
    fn errors_name_shapes_dtypes_and_indices_and_leave_x_untouched() {
        let x = arange(&[2, 3]);
        let v0 = x.version();
        let e = set_ip(&x, &f64s(&[2], &[1.0, 2.0]), &[IndexSpec::Point(0)])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "op 'set_subtensor_inplace': value of shape [2] does not broadcast into the indexed region of shape [3] (x has shape [2, 3])"
        );
        let e = set(&x, &Tensor::scalar(Scalar::F32(1.0)), &[]).unwrap_err();
        assert_cause!(e, DType, "'set_subtensor'", "input 1", "f32", "f64");
        let e = inc_ip(&x, &scalar(1.0), &[IndexSpec::Point(2)]).unwrap_err();
        assert_cause!(e, Index, "point 2", "axis 0", "length 2");
        let e = set(&x, &scalar(1.0), &[IndexSpec::All; 3]).unwrap_err();
        assert_cause!(e, Rank, "3 indices", "2 dimensions");
        let bad = vec![x.clone(), scalar(1.0), f64s(&[4], &[2.0, 0.0, 1.0, 1.0])];
        let e = Subtensor::new(SubKind::Set, true)
            .compute(&bad, &mut OpCtx::new("n"))
            .unwrap_err();
        assert_cause!(e, DType, "index 0", "i64");
        assert_eq!(x.version(), v0);
        assert_eq!(vals(&x), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        // A broadcast x cannot be destroyed, even where the region would not
        // overlap itself.
        let xb = f64s(&[3], &[1.0, 2.0, 3.0]).broadcast_to(&[2, 3]).unwrap();
        let e = set_ip(&xb, &scalar(0.0), &[IndexSpec::Point(0)]).unwrap_err();
        assert_cause!(e, Layout);
        let e = Subtensor::new(SubKind::Set, false)
            .compute(&[x], &mut OpCtx::new("n"))
            .unwrap_err();
        assert_cause!(e, Arity, "at least 2");
    }

    #[test]
    fn declarations_and_inference() {
        let pure = Subtensor::new(SubKind::Inc, false);
        let twin = Subtensor::new(SubKind::Inc, true);
        assert_eq!(twin.name(), "inc_subtensor_inplace");
        assert!(pure.destroy_map().is_empty() && pure.view_map().is_empty());
        assert_eq!(twin.destroy_map(), vec![(0, 0)]);
        assert!(twin.view_map().is_empty());
        assert!(twin.tolerates_same_input() && !pure.tolerates_same_input());
        assert!(twin.inplace_variants().is_empty());
        assert_eq!(twin.pure_twin().unwrap().name(), "inc_subtensor");
        assert!(pure.pure_twin().is_none());
        assert_eq!(twin.pure_twin().unwrap().name(), "inc_subtensor");
        assert!(pure.pure_twin().is_none());

        let x = TypeInfo::new(DType::F32, Some(vec![-1, 3]));
        let idx = TypeInfo::known(DType::I64, &[5]);
        let t = pure
            .infer(&[x.clone(), TypeInfo::known(DType::F32, &[]), idx.clone()])
            .unwrap();
        assert_eq!(t, vec![x.clone()]);
        assert!(pure
            .infer(&[x.clone(), TypeInfo::known(DType::F64, &[])])
            .is_err());
        let e = pure.infer(&[
            x.clone(),
            TypeInfo::known(DType::F32, &[]),
            TypeInfo::known(DType::I64, &[2, 2]),
        ]);
        assert_cause!(e.unwrap_err(), DType, "index 0");
        let b = TypeInfo::known(DType::Bool, &[2]);
        assert!(pure.infer(&[b.clone(), b.clone()]).is_err());
        assert!(Subtensor::new(SubKind::Set, true).infer(&[b.clone(), b]).is_ok());

        let mut r = OpRegistry::empty();
        register(&mut r);
        for name in [
            "set_subtensor",
            "inc_subtensor",
            "set_subtensor_inplace",
            "inc_subtensor_inplace",
        ] {
            assert_eq!(r.make(name, &Attrs::new()).unwrap().name(), name);
        }
        assert!(r.make("set_subtensor", &Attrs::new().with("axis", 0)).is_err());
    }

    #[test]
    fn inplace_variant_keeps_the_index_inputs_in_place() {
        let pure = Subtensor::new(SubKind::Set, false);
        let vs = pure.inplace_variants();
        assert_eq!(vs.len(), 1);
        assert_eq!(vs[0].op.name(), "set_subtensor_inplace");
        assert_eq!(vs[0].op.destroy_map(), vec![(0, 0)]);
        // Inputs past the listed prefix pass through unchanged.
        assert_eq!(vs[0].order(4), Some(vec![0, 1, 2, 3]));
        assert_eq!(vs[0].order(1), None);
    }

    #[test]
    fn inplace_pass_rewrites_with_all_index_inputs_and_matches_the_pure_run() {
        use crate::{inplace, Executor, GraphBuilder};
        use std::collections::HashMap;

        // y = x.copy(); y[1] += v; z = y.copy(); z[0:2, -1] = s
        let g = GraphBuilder::new("sub");
        let x = g.mutable_input("x", DType::F64, &[3, 3]);
        let v = g.input("v", DType::F64, &[3]);
        let s = g.input("s", DType::F64, &[]);
        let (rows, last) = (g.index(IndexSpec::range(0, 2, 1)), g.index(IndexSpec::Point(-1)));
        let y = g
            .apply(
                "inc_subtensor",
                &[&x, &v, &g.index(IndexSpec::Point(1))],
                Attrs::new(),
            )
            .unwrap();
        let z = g
            .apply("set_subtensor", &[&y[0], &s, &rows, &last], Attrs::new())
            .unwrap();
        let graph = g.build(&[&z[0]]).unwrap();
        let feeds = || {
            HashMap::from([
                ("x".to_string(), arange(&[3, 3])),
                ("v".to_string(), f64s(&[3], &[10.0, 20.0, 30.0])),
                ("s".to_string(), scalar(-1.0)),
            ])
        };
        let want = [0.0, 1.0, -1.0, 13.0, 24.0, -1.0, 6.0, 7.0, 8.0];
        let pure = Executor::new(&graph).unwrap().run(&feeds()).unwrap();
        assert_eq!(vals(pure.get(z[0].name()).unwrap()), want);

        let pass = inplace::run(&graph).unwrap();
        assert_eq!(pass.accepted(), 2);
        let nodes = pass.graph.nodes();
        assert_eq!(
            (nodes[0].op.name(), nodes[0].inputs.len()),
            ("inc_subtensor_inplace", 3)
        );
        assert_eq!(
            (nodes[1].op.name(), nodes[1].inputs.len()),
            ("set_subtensor_inplace", 4)
        );
        let fed = feeds();
        let rewritten = Executor::new(&pass.graph).unwrap().run(&fed).unwrap();
        assert_eq!(vals(rewritten.get(z[0].name()).unwrap()), want);
        assert_eq!(vals(&fed["x"]), want, "the mutable input is destroyed in place");
    }
}

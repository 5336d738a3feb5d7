//! `center_crop_pad(x, shape)` (ONNX CenterCropPad): each axis in attr
//! `axes` (default all; negative counts from the end) is cropped or
//! zero-padded to the length `shape` gives it, keeping the centre (an odd
//! difference puts the extra element at the end). `shape` is an i64
//! input read when the op runs. Any dtype.

use std::sync::Arc;

use ndarray::{ArrayViewMutD, SliceInfoElem};

use crate::dtype::{DType, Element};
use crate::error::{op_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `center_crop_pad` op.
#[derive(Clone, Debug, PartialEq)]
pub struct CenterCropPad {
    pub axes: Option<Vec<i64>>,
}

impl CenterCropPad {
    fn axes(&self, rank: usize) -> Result<Vec<usize>> {
        let all: Vec<i64> = (0..rank as i64).collect();
        let mut out = Vec::new();
        for &a in self.axes.as_ref().unwrap_or(&all) {
            let n = if a < 0 { a + rank as i64 } else { a };
            if n < 0 || n >= rank as i64 || out.contains(&(n as usize)) {
                return op_err(format!(
                    "op 'center_crop_pad': axis {a} is out of range or repeated for rank {rank}"
                ));
            }
            out.push(n as usize);
        }
        Ok(out)
    }

    fn check(&self, x: &TypeInfo, shape: &TypeInfo) -> Result<()> {
        if shape.dtype != DType::I64 || shape.rank().is_some_and(|r| r != 1) {
            return op_err(format!(
                "op 'center_crop_pad': shape must be an i64 vector, got {} {}",
                shape.dtype,
                shape.shape_string()
            ));
        }
        if let (Some(r), Some(s)) = (x.rank(), &shape.shape) {
            let n = self.axes(r)?.len() as i64;
            if s[0] >= 0 && s[0] != n {
                return op_err(format!(
                    "op 'center_crop_pad': shape has {} lengths for {n} axes",
                    s[0]
                ));
            }
        }
        Ok(())
    }
}

fn crop_pad<T: Element>(
    x: &Tensor,
    src: &[SliceInfoElem],
    dst: &[SliceInfoElem],
    out: &Tensor,
) -> Result<()> {
    let a = x.to_array::<T>()?;
    let part = a.slice(src);
    out.write(|mut o: ArrayViewMutD<'_, T>| {
        o.fill(T::from_f64(0.0));
        o.slice_mut(dst).assign(&part);
    })
}

/// The centred range `[d, d + len)` of `len` in `n` (`len ≤ n`).
fn centred(n: usize, len: usize) -> SliceInfoElem {
    let d = (n - len) / 2;
    SliceInfoElem::Slice {
        start: d as isize,
        end: Some((d + len) as isize),
        step: 1,
    }
}

impl Op for CenterCropPad {
    fn name(&self) -> &str {
        "center_crop_pad"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (x, s) = (&inputs[0], &inputs[1]);
        self.check(x, s)?;
        let Some(mut shape) = x.shape.clone() else {
            return Ok(vec![TypeInfo::new(x.dtype, None)]);
        };
        let axes = self.axes(shape.len())?;
        for (k, &a) in axes.iter().enumerate() {
            shape[a] = s.value.as_ref().and_then(|v| v.get(k).copied()).unwrap_or(-1);
        }
        Ok(vec![TypeInfo::new(x.dtype, Some(shape))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check(&TypeInfo::of(x), &TypeInfo::of(&inputs[1]))?;
        let lens: Vec<i64> = inputs[1].to_array::<i64>()?.iter().copied().collect();
        if lens.iter().any(|&l| l < 0) {
            return op_err(format!(
                "op 'center_crop_pad': shape {lens:?} must not be negative"
            ));
        }
        let mut shape = x.shape().to_vec();
        let full = SliceInfoElem::Slice {
            start: 0,
            end: None,
            step: 1,
        };
        let (mut src, mut dst) = (vec![full; shape.len()], vec![full; shape.len()]);
        for (&a, &l) in self.axes(shape.len())?.iter().zip(&lens) {
            let (n, l) = (shape[a], l as usize);
            if l < n {
                src[a] = centred(n, l);
            } else {
                dst[a] = centred(l, n);
            }
            shape[a] = l;
        }
        let out = ctx.output(0, x.dtype(), &shape)?;
        crate::dispatch_all!(x.dtype(), T => crop_pad::<T>(x, &src, &dst, &out)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        match &self.axes {
            Some(a) => Attrs::new().with("axes", a.clone()),
            None => Attrs::new(),
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("center_crop_pad", |a: &Attrs| {
        a.only("center_crop_pad", &["axes"])?;
        Ok(Arc::new(CenterCropPad {
            axes: a.i64_list("axes")?,
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    #[test]
    fn crops_and_pads_about_the_centre() {
        // Axis 0: 5 -> 2 (crop from 1: rows 1, 2); axis 1: 1 -> 4 (pad: column at 1).
        let x = t(&[5, 1], vec![0i64, 1, 2, 3, 4]);
        let (s, v) = run_vec::<i64>(
            &*op("center_crop_pad", Attrs::new()),
            &[x.clone(), t(&[2], vec![2i64, 4])],
        )
        .unwrap();
        assert_eq!(s, [2, 4]);
        assert_eq!(v, [0, 1, 0, 0, 0, 2, 0, 0]);
        let o = op("center_crop_pad", Attrs::new().with("axes", vec![-2]));
        let (s, v) = run_vec::<i64>(&*o, &[x.clone(), t(&[1], vec![3i64])]).unwrap();
        assert_eq!((s, v), (vec![3, 1], vec![1, 2, 3]));
        let e = run_vec::<i64>(&*o, &[x, t(&[2], vec![3i64, 1])]).unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
    }
}

//! Float classification, numpy's `isnan` and `isinf` (ONNX IsNaN, IsInf):
//! `isnan(x)` and `isinf(x)` give a bool tensor of x's shape. `isinf` has
//! attrs `detect_positive` and `detect_negative` (both true by default) to
//! report only +inf or only -inf. Integer and bool inputs hold neither, so
//! every element is false, as numpy answers.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Zip};

use crate::dtype::{DType, Float};
use crate::error::Result;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// Which values a [`Classify`] op reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Nan,
    Inf { positive: bool, negative: bool },
}

impl Class {
    fn test<T: Float>(self, v: T) -> bool {
        match self {
            Class::Nan => v.is_nan(),
            Class::Inf { positive, negative } => {
                v.is_infinite() && if v > T::zero() { positive } else { negative }
            }
        }
    }
}

/// `isnan` or `isinf`.
#[derive(Clone, Debug)]
pub struct Classify {
    pub class: Class,
}

fn classify_kernel<T: Float>(class: Class, x: &Tensor, out: &Tensor) -> Result<()> {
    x.read(|xv: ArrayViewD<'_, T>| {
        out.write(|mut o: ArrayViewMutD<'_, bool>| {
            Zip::from(&mut o).and(&xv).for_each(|o, &v| *o = class.test(v))
        })
    })??;
    Ok(())
}

impl Op for Classify {
    fn name(&self) -> &str {
        match self.class {
            Class::Nan => "isnan",
            Class::Inf { .. } => "isinf",
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        Ok(vec![TypeInfo::new(DType::Bool, inputs[0].shape.clone())])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let out = ctx.output(0, DType::Bool, x.shape())?;
        let class = self.class;
        crate::dispatch_float!(x.dtype(), T => classify_kernel::<T>(class, x, &out)?,
            out.write(|mut o: ArrayViewMutD<'_, bool>| o.fill(false))?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        match self.class {
            Class::Nan => Attrs::new(),
            Class::Inf { positive, negative } => Attrs::new()
                .with("detect_positive", positive)
                .with("detect_negative", negative),
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register_op(Arc::new(Classify { class: Class::Nan }));
    r.register("isinf", |a: &Attrs| {
        a.only("isinf", &["detect_positive", "detect_negative"])?;
        let class = Class::Inf {
            positive: a.bool("detect_positive")?.unwrap_or(true),
            negative: a.bool("detect_negative")?.unwrap_or(true),
        };
        Ok(Arc::new(Classify { class }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    const INF: f32 = f32::INFINITY;

    fn sample() -> Tensor {
        t(&[2, 3], vec![1.0f32, f32::NAN, INF, -INF, 0.0, -f32::NAN])
    }

    #[test]
    fn isnan_marks_every_nan_of_either_sign() {
        let (s, v) = run_vec::<bool>(&*op("isnan", Attrs::new()), &[sample()]).unwrap();
        assert_eq!(s, [2, 3]);
        assert_eq!(v, [false, true, false, false, false, true]);
    }

    #[test]
    fn isinf_honours_the_detect_attrs() {
        let cases = [
            (true, true, [false, false, true, true, false, false]),
            (true, false, [false, false, true, false, false, false]),
            (false, true, [false, false, false, true, false, false]),
            (false, false, [false; 6]),
        ];
        for (p, n, want) in cases {
            let a = Attrs::new().with("detect_positive", p).with("detect_negative", n);
            let (_, v) = run_vec::<bool>(&*op("isinf", a), &[sample()]).unwrap();
            assert_eq!(v, want, "detect_positive {p}, detect_negative {n}");
        }
    }

    #[test]
    fn f64_integers_and_empty_tensors() {
        let x = t(&[3], vec![f64::NEG_INFINITY, f64::NAN, 2.5]);
        let (_, v) = run_vec::<bool>(&*op("isinf", Attrs::new()), &[x]).unwrap();
        assert_eq!(v, [true, false, false]);
        let ints = t(&[2], vec![i64::MIN, i64::MAX]);
        let (_, v) = run_vec::<bool>(&*op("isnan", Attrs::new()), &[ints]).unwrap();
        assert_eq!(v, [false, false]);
        let empty = t::<f32>(&[0, 4], vec![]);
        let (s, v) = run_vec::<bool>(&*op("isnan", Attrs::new()), &[empty]).unwrap();
        assert_eq!((s, v.len()), (vec![0, 4], 0));
        let ty = op("isinf", Attrs::new())
            .infer(&[TypeInfo::new(DType::F32, Some(vec![-1, 3]))])
            .unwrap();
        assert_eq!(ty[0], TypeInfo::new(DType::Bool, Some(vec![-1, 3])));
    }

    #[test]
    fn unknown_attrs_are_refused() {
        let e = OpRegistry::builtin()
            .make("isinf", &Attrs::new().with("detect", true))
            .err()
            .unwrap();
        assert!(e.to_string().contains("'detect'"), "{e}");
    }
}

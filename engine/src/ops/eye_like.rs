//! `eye_like(x)` (ONNX EyeLike): a new 2-D tensor of x's shape with ones
//! on diagonal `k` (attr, default 0; positive above the main diagonal)
//! and zeros elsewhere. Only x's shape is read. Attr `dtype`: the
//! output's (default x's).

use std::sync::Arc;

use ndarray::ArrayViewMutD;

use crate::dtype::{DType, Element};
use crate::error::{rank_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `eye_like` op.
#[derive(Clone, Debug, PartialEq)]
pub struct EyeLike {
    pub k: i64,
    pub dtype: Option<DType>,
}

fn fill<T: Element>(out: &Tensor, k: i64) -> Result<()> {
    out.write(|mut o: ArrayViewMutD<'_, T>| {
        for (ix, v) in o.indexed_iter_mut() {
            let on = ix[1] as i64 - ix[0] as i64 == k;
            *v = T::from_f64(if on { 1.0 } else { 0.0 });
        }
    })
}

impl Op for EyeLike {
    fn name(&self) -> &str {
        "eye_like"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        if x.rank().is_some_and(|r| r != 2) {
            return rank_err(format!("op 'eye_like': x must be 2-D, got {}", x.shape_string()));
        }
        Ok(vec![TypeInfo::new(
            self.dtype.unwrap_or(x.dtype),
            x.shape.clone(),
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        self.infer(&[TypeInfo::of(&inputs[0])])?;
        let dtype = self.dtype.unwrap_or(inputs[0].dtype());
        let out = ctx.output(0, dtype, inputs[0].shape())?;
        crate::dispatch_all!(dtype, T => fill::<T>(&out, self.k)?);
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let a = Attrs::new().with("k", self.k);
        match self.dtype {
            Some(d) => a.with("dtype", d.name()),
            None => a,
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("eye_like", |a: &Attrs| {
        a.only("eye_like", &["k", "dtype"])?;
        Ok(Arc::new(EyeLike {
            k: a.i64("k")?.unwrap_or(0),
            dtype: a.dtype("dtype")?,
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    #[test]
    fn ones_on_the_kth_diagonal_in_the_given_dtype() {
        let x = t(&[3, 4], vec![7.5f32; 12]);
        let o = op("eye_like", Attrs::new().with("k", 1).with("dtype", "i64"));
        let (s, v) = run_vec::<i64>(&*o, std::slice::from_ref(&x)).unwrap();
        assert_eq!(s, [3, 4]);
        assert_eq!(v, [0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
        let (_, v) = run_vec::<f32>(&*op("eye_like", Attrs::new().with("k", -2)), &[x]).unwrap();
        assert_eq!(v, [0., 0., 0., 0., 0., 0., 0., 0., 1., 0., 0., 0.]);
        let e = run_vec::<f32>(&*op("eye_like", Attrs::new()), &[t(&[3], vec![0.0f32; 3])]).unwrap_err();
        assert!(matches!(e, crate::Error::Rank(_)), "{e:?}");
    }
}

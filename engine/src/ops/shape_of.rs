//! `shape(x)` and `size(x)` (ONNX Shape and Size) computed when they run,
//! for inputs whose shape is not known before (the importer folds the
//! others into constants):
//!
//! - `shape(x)`: i64 `[k]`, x's dims `start..end` (attrs, default the
//!   whole shape; negative counts from the end, both clamped to
//!   `0..=rank`); k is known when x's rank is.
//! - `size(x)`: i64 scalar, x's element count.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::Result;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `shape` op.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeOf {
    pub start: i64,
    pub end: Option<i64>,
}

impl ShapeOf {
    /// The dims `lo..hi` of a rank-`r` shape that the op gives (also what
    /// the importer folds when they are known at import time).
    pub fn range(&self, r: usize) -> (usize, usize) {
        let r = r as i64;
        let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
        let (lo, hi) = (clamp(self.start), clamp(self.end.unwrap_or(r)));
        (lo, hi.max(lo))
    }
}

impl Op for ShapeOf {
    fn name(&self) -> &str {
        "shape"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let len = inputs[0].rank().map_or(-1, |r| {
            let (lo, hi) = self.range(r);
            (hi - lo) as i64
        });
        Ok(vec![TypeInfo::new(DType::I64, Some(vec![len]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let s = inputs[0].shape();
        let (lo, hi) = self.range(s.len());
        let dims: Vec<i64> = s[lo..hi].iter().map(|&d| d as i64).collect();
        let out = ctx.output(0, DType::I64, &[dims.len()])?;
        out.write_c_order(|o: &mut [i64]| o.copy_from_slice(&dims))?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let a = Attrs::new().with("start", self.start);
        match self.end {
            Some(e) => a.with("end", e),
            None => a,
        }
    }
}

/// The `size` op.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeOf;

impl Op for SizeOf {
    fn name(&self) -> &str {
        "size"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        Ok(vec![TypeInfo::new(DType::I64, Some(vec![]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let n = inputs[0].shape().iter().product::<usize>() as i64;
        let out = ctx.output(0, DType::I64, &[])?;
        out.write_c_order(|o: &mut [i64]| o[0] = n)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("shape", |a: &Attrs| {
        a.only("shape", &["start", "end"])?;
        Ok(Arc::new(ShapeOf {
            start: a.i64("start")?.unwrap_or(0),
            end: a.i64("end")?,
        }) as Arc<dyn Op>)
    });
    r.register_op(Arc::new(SizeOf));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    #[test]
    fn shape_gives_the_dims_between_start_and_end() {
        let x = t(&[2, 3, 0, 5], vec![0f32; 0]);
        for (start, end, want) in [
            (None, None, vec![2, 3, 0, 5]),
            (Some(1), None, vec![3, 0, 5]),
            (Some(-3), Some(-1), vec![3, 0]),
            (Some(-9), Some(9), vec![2, 3, 0, 5]),
            (Some(3), Some(1), vec![]),
        ] {
            let mut a = Attrs::new();
            if let Some(s) = start {
                a = a.with("start", s);
            }
            if let Some(e) = end {
                a = a.with("end", e);
            }
            let o = op("shape", a);
            let (s, y) = run_vec::<i64>(&*o, std::slice::from_ref(&x)).unwrap();
            assert_eq!((s, &y), (vec![want.len()], &want));
            let ti = o
                .infer(&[TypeInfo::new(DType::F32, Some(vec![-1, -1, -1, -1]))])
                .unwrap();
            assert_eq!(ti[0].shape, Some(vec![want.len() as i64]));
        }
        let ti = op("shape", Attrs::new())
            .infer(&[TypeInfo::new(DType::F32, None)])
            .unwrap();
        assert_eq!(ti[0].shape, Some(vec![-1]));
    }

    #[test]
    fn shape_and_size_read_a_view_as_it_is() {
        let x = t(&[2, 3], vec![1i32; 6]).permute(&[1, 0]).unwrap();
        let (_, y) = run_vec::<i64>(&*op("shape", Attrs::new()), std::slice::from_ref(&x)).unwrap();
        assert_eq!(y, [3, 2]);
        let (s, y) = run_vec::<i64>(&*op("size", Attrs::new()), &[x]).unwrap();
        assert_eq!((s, y), (vec![], vec![6]));
        let (_, y) = run_vec::<i64>(&*op("size", Attrs::new()), &[t(&[], vec![7u8])]).unwrap();
        assert_eq!(y, [1]);
    }
}

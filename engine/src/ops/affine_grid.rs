//! `affine_grid(theta, size)` (ONNX AffineGrid): the sampling grid of a
//! batch of affine maps, as `grid_sample` takes it. theta is `[N, 2, 3]`
//! (2-D) or `[N, 3, 4]` (3-D); size, an i64 input read when the op runs,
//! is `[N, C, H, W]` or `[N, C, D, H, W]`. The output is `[N, H, W, 2]` or
//! `[N, D, H, W, 3]`: theta applied to each point's normalized
//! coordinates `(x, y[, z], 1)`, innermost axis first. Attr
//! `align_corners` (default false): the coordinates of the `n` points of
//! an axis run from -1 to 1 through the edge elements' centres (true) or
//! are the centres of `n` equal cells of [-1, 1] (false).
//! Float dtypes, in f64, rounded once.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{op_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `affine_grid` op.
#[derive(Clone, Debug, PartialEq)]
pub struct AffineGrid {
    pub align_corners: bool,
}

impl AffineGrid {
    /// Normalized coordinate of point `i` of `n`.
    fn coord(&self, i: usize, n: usize) -> f64 {
        if self.align_corners {
            if n == 1 {
                -1.0
            } else {
                -1.0 + 2.0 * i as f64 / (n - 1) as f64
            }
        } else {
            -1.0 + (2 * i + 1) as f64 / n as f64
        }
    }

    /// The spatial rank (2 or 3) theta's shape says, when known.
    fn rank(&self, theta: &TypeInfo) -> Result<Option<usize>> {
        TypeInfo::common_dtype(
            "affine_grid",
            std::slice::from_ref(theta),
            "float",
            DType::is_float,
        )?;
        match theta.shape.as_deref() {
            None => Ok(None),
            Some([_, 2, 3]) => Ok(Some(2)),
            Some([_, 3, 4]) => Ok(Some(3)),
            Some(s) if s.len() == 3 && s[1] < 0 => Ok(None),
            _ => op_err(format!(
                "op 'affine_grid': theta must be [N, 2, 3] or [N, 3, 4], got {}",
                theta.shape_string()
            )),
        }
    }
}

fn grid_kernel(op: &AffineGrid, theta: &Tensor, spatial: &[usize], out: &Tensor) -> Result<()> {
    let th = theta.to_f64_vec()?;
    let r = spatial.len();
    let n = theta.shape()[0];
    let points: usize = spatial.iter().product();
    let mut y = Vec::with_capacity(n * points * r);
    let mut at = vec![0usize; r];
    for b in 0..n {
        let m = &th[b * r * (r + 1)..][..r * (r + 1)];
        for p in 0..points {
            let mut i = p;
            for (d, a) in spatial.iter().zip(at.iter_mut()).rev() {
                *a = i % d;
                i /= d;
            }
            // (x, y[, z], 1): the innermost axis first.
            let mut h: Vec<f64> = (0..r).rev().map(|d| op.coord(at[d], spatial[d])).collect();
            h.push(1.0);
            for row in m.chunks_exact(r + 1) {
                y.push(row.iter().zip(&h).map(|(a, b)| a * b).sum());
            }
        }
    }
    out.write_f64s(&y)
}

impl Op for AffineGrid {
    fn name(&self) -> &str {
        "affine_grid"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let (theta, size) = (&inputs[0], &inputs[1]);
        if size.dtype != DType::I64 || size.rank().is_some_and(|r| r != 1) {
            return op_err(format!(
                "op 'affine_grid': size must be an i64 vector, got {} {}",
                size.dtype,
                size.shape_string()
            ));
        }
        let r = match (self.rank(theta)?, size.shape.as_ref().map(|s| s[0])) {
            (Some(r), _) => r,
            (None, Some(len)) if len >= 4 => len as usize - 2,
            _ => return Ok(vec![TypeInfo::new(theta.dtype, None)]),
        };
        let n = theta.shape.as_ref().map_or(-1, |s| s[0]);
        let mut shape = vec![n];
        match &size.value {
            Some(v) if v.len() == r + 2 => shape.extend(&v[2..]),
            _ => shape.extend(std::iter::repeat_n(-1, r)),
        }
        shape.push(r as i64);
        Ok(vec![TypeInfo::new(theta.dtype, Some(shape))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(&inputs[..1]) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let theta = &inputs[0];
        let r = self.rank(&tys[0])?.unwrap_or(2);
        let size: Vec<i64> = inputs[1].to_f64_vec()?.iter().map(|&v| v as i64).collect();
        if size.len() != r + 2 || size[0] != theta.shape()[0] as i64 || size.iter().any(|&d| d < 0) {
            return op_err(format!(
                "op 'affine_grid': size {size:?} must be [N, C, spatial…] with N = {} and {r} spatial axes",
                theta.shape()[0]
            ));
        }
        let spatial: Vec<usize> = size[2..].iter().map(|&d| d as usize).collect();
        let mut shape = vec![theta.shape()[0]];
        shape.extend(&spatial);
        shape.push(r);
        let out = ctx.output(0, theta.dtype(), &shape)?;
        if !theta.dtype().is_computable() {
            return op_err("op 'affine_grid' takes float inputs");
        }
        grid_kernel(self, theta, &spatial, &out)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("align_corners", self.align_corners)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("affine_grid", |a: &Attrs| {
        a.only("affine_grid", &["align_corners"])?;
        Ok(Arc::new(AffineGrid {
            align_corners: a.bool("align_corners")?.unwrap_or(false),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    #[test]
    fn the_identity_map_gives_the_base_grid() {
        let id = t(&[1, 2, 3], vec![1.0f64, 0.0, 0.0, 0.0, 1.0, 0.0]);
        let size = t(&[4], vec![1i64, 1, 2, 3]);
        let aligned = op("affine_grid", Attrs::new().with("align_corners", true));
        let (s, v) = run_vec::<f64>(&*aligned, &[id.clone(), size.clone()]).unwrap();
        assert_eq!(s, [1, 2, 3, 2]);
        assert_eq!(
            v,
            [-1.0, -1.0, 0.0, -1.0, 1.0, -1.0, -1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
        );
        let (_, v) = run_vec::<f64>(&*op("affine_grid", Attrs::new()), &[id, size]).unwrap();
        let third = 1.0 / 3.0;
        let want = [-2.0 * third, -0.5, 0.0, -0.5, 2.0 * third, -0.5];
        for (g, w) in v.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{v:?}");
        }
    }

    #[test]
    fn theta_maps_each_point_and_size_must_fit() {
        // x' = 2x + 1, y' = -y (aligned, a 1x2 grid: x in {-1, 1}, y = -1).
        let th = t(&[1, 2, 3], vec![2.0f64, 0.0, 1.0, 0.0, -1.0, 0.0]);
        let o = op("affine_grid", Attrs::new().with("align_corners", true));
        let (_, v) = run_vec::<f64>(&*o, &[th.clone(), t(&[4], vec![1i64, 1, 1, 2])]).unwrap();
        assert_eq!(v, [-1.0, 1.0, 3.0, 1.0]);
        let e = run_vec::<f64>(&*o, &[th, t(&[4], vec![2i64, 1, 1, 2])]).unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
    }
}

//! `max_unpool(x, indices, [output_shape])` (ONNX MaxUnpool): the partial
//! inverse of `max_pool` with indices. x and indices (i64) are `[N, C,
//! spatial…]` of one shape; the unpooled shape is `[N, C, d…]` with
//! `d = (x_d − 1)·stride_d − (pad_begin_d + pad_end_d) + kernel_d`. A
//! zero tensor of that shape gets `x`'s elements at `indices`, each a flat
//! C-order index into the whole tensor (as `max_pool` gives them; out of
//! range is an error; of two at one index the later wins). With
//! `output_shape` (i64, read when the op runs) the result is that shape,
//! the unpooled tensor in its leading corner and zeros elsewhere, as ONNX's
//! reference places it; each of its dims must be at least the unpooled
//! one. Attrs `kernel_shape` (required), `strides` (1s), `pads` (0s). Any
//! float dtype: elements are only moved.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{attr_err, dtype_err, index_err, rank_err, shape_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "max_unpool";

/// The `max_unpool` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaxUnpool {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    /// `[begin…, end…]`.
    pub pads: Vec<usize>,
}

impl MaxUnpool {
    /// The unpooled dims of `x`'s shape (`x` rank-checked), or an error.
    fn unpooled(&self, x: &[i64]) -> Result<Vec<i64>> {
        let r = self.kernel.len();
        let mut out = x[..2].to_vec();
        for d in 0..r {
            if x[d + 2] < 0 {
                out.push(-1);
                continue;
            }
            let v = (x[d + 2] - 1) * self.strides[d] as i64 - (self.pads[d] + self.pads[r + d]) as i64
                + self.kernel[d] as i64;
            if v < 1 && x[d + 2] > 0 {
                return shape_err(format!(
                    "op '{NAME}': spatial axis {d} unpools to {v} (x {x:?}, kernel {:?}, strides {:?}, pads {:?})",
                    self.kernel, self.strides, self.pads
                ));
            }
            out.push(v.max(0));
        }
        Ok(out)
    }

    fn check_types(&self, ins: &[TypeInfo]) -> Result<()> {
        let dt = ins[0].dtype;
        if !dt.is_float() {
            return dtype_err(format!("op '{NAME}': x must be a float tensor, got {dt}"));
        }
        for (i, what) in [(1, "indices"), (2, "output_shape")] {
            if let Some(t) = ins.get(i) {
                if t.dtype != DType::I64 {
                    return dtype_err(format!("op '{NAME}': {what} must be i64, got {}", t.dtype));
                }
            }
        }
        let want = self.kernel.len() + 2;
        for (i, what) in [(0, "x"), (1, "indices")] {
            if ins[i].rank().is_some_and(|r| r != want) {
                return rank_err(format!(
                    "op '{NAME}': {what} must be {want}-D for a kernel of {} axes, got {}",
                    self.kernel.len(),
                    ins[i].shape_string()
                ));
            }
        }
        if let Some(Some(1) | None) = ins.get(2).map(TypeInfo::rank) {
            Ok(())
        } else if ins.len() > 2 {
            rank_err(format!(
                "op '{NAME}': output_shape must be 1-D, got {}",
                ins[2].shape_string()
            ))
        } else {
            Ok(())
        }
    }
}

impl Op for MaxUnpool {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(3) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check_types(inputs)?;
        let dt = inputs[0].dtype;
        if let Some(o) = inputs.get(2) {
            let shape = match &o.value {
                Some(v) => Some(v.clone()),
                None => o
                    .shape
                    .as_ref()
                    .and_then(|s| s.first().copied())
                    .filter(|&n| n >= 0)
                    .map(|n| vec![-1; n as usize]),
            };
            return Ok(vec![TypeInfo::new(dt, shape)]);
        }
        let shape = match &inputs[0].shape {
            Some(s) => Some(self.unpooled(s)?),
            None => None,
        };
        Ok(vec![TypeInfo::new(dt, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check_types(&tys)?;
        let (x, ind) = (&inputs[0], &inputs[1]);
        if x.shape() != ind.shape() {
            return shape_err(format!(
                "op '{NAME}': indices {:?} must have x's shape {:?}",
                ind.shape(),
                x.shape()
            ));
        }
        let xs: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
        let unpooled: Vec<usize> = self.unpooled(&xs)?.iter().map(|&d| d as usize).collect();
        let out_shape: Vec<usize> = match inputs.get(2) {
            None => unpooled.clone(),
            Some(o) => {
                let v: Vec<i64> = o.to_array::<i64>()?.iter().copied().collect();
                let fits = v.len() == unpooled.len() && v.iter().zip(&unpooled).all(|(&o, &u)| o >= u as i64);
                if !fits {
                    return shape_err(format!(
                        "op '{NAME}': output_shape {v:?} must have rank {} and hold the unpooled shape {unpooled:?}",
                        unpooled.len()
                    ));
                }
                v.iter().map(|&d| d as usize).collect()
            }
        };
        let total: usize = unpooled.iter().product();
        let idx: Vec<i64> = ind.to_array::<i64>()?.iter().copied().collect();
        // Each destination, in the output's C order.
        let mut dest = Vec::with_capacity(idx.len());
        let mut coord = vec![0usize; unpooled.len()];
        for &i in &idx {
            let Some(mut u) = usize::try_from(i).ok().filter(|&u| u < total) else {
                return index_err(format!(
                    "op '{NAME}': index {i} is out of range for the unpooled shape {unpooled:?} ({total} elements)"
                ));
            };
            for (c, &d) in coord.iter_mut().zip(&unpooled).rev() {
                *c = u % d;
                u /= d;
            }
            dest.push(coord.iter().zip(&out_shape).fold(0usize, |a, (&c, &d)| a * d + c));
        }
        let out = ctx.output(0, x.dtype(), &out_shape)?;
        crate::dispatch_float!(x.dtype(), T => {
            let xv: Vec<T> = x.to_array::<T>()?.iter().copied().collect();
            out.write_c_order(|o: &mut [T]| {
                o.fill(<T as crate::dtype::Element>::from_f64(0.0));
                for (&d, &v) in dest.iter().zip(&xv) {
                    o[d] = v;
                }
            })?;
        }, return dtype_err(format!("op '{NAME}': x must be a float tensor, got {}", x.dtype())));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with(
                "kernel_shape",
                self.kernel.iter().map(|&k| k as i64).collect::<Vec<_>>(),
            )
            .with(
                "strides",
                self.strides.iter().map(|&k| k as i64).collect::<Vec<_>>(),
            )
            .with("pads", self.pads.iter().map(|&k| k as i64).collect::<Vec<_>>())
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(NAME, &["kernel_shape", "strides", "pads"])?;
        let Some(kernel) = a.usize_list("kernel_shape")? else {
            return attr_err(format!("op '{NAME}': attr 'kernel_shape' is required (non-negative)"));
        };
        let n = kernel.len();
        if n == 0 || kernel.contains(&0) {
            return attr_err(format!("op '{NAME}': attr 'kernel_shape' {kernel:?} must be positive"));
        }
        let strides = a.usize_list("strides")?.unwrap_or_else(|| vec![1; n]);
        let pads = a.usize_list("pads")?.unwrap_or_else(|| vec![0; 2 * n]);
        if strides.len() != n || strides.contains(&0) || pads.len() != 2 * n {
            return attr_err(format!(
                "op '{NAME}': attrs 'strides' {strides:?} (positive) and 'pads' {pads:?} must fit kernel_shape {kernel:?}"
            ));
        }
        Ok(Arc::new(MaxUnpool { kernel, strides, pads }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_vec, t};

    fn unpool(a: Attrs) -> Arc<dyn Op> {
        op(NAME, a)
    }

    /// max_pool with indices, then max_unpool: the maxima return to where
    /// they were, everything else is zero.
    #[test]
    fn undoes_max_pool_with_indices() {
        let x: Vec<f32> = vec![
            1.0, 9.0, 2.0, 3.0, 4.0, 5.0, 8.0, 6.0, 0.0, 7.0, 1.0, 2.0, 3.0, 0.0, 5.0, 4.0,
        ];
        let xt = t(&[1, 1, 4, 4], x.clone());
        let pool = op(
            "max_pool",
            Attrs::new()
                .with("kernel_shape", vec![2i64, 2])
                .with("strides", vec![2i64, 2])
                .with("indices", true),
        );
        let outs = crate::ops::testutil::run_all(&*pool, &[xt]).unwrap();
        let a = Attrs::new()
            .with("kernel_shape", vec![2i64, 2])
            .with("strides", vec![2i64, 2]);
        let (shape, got) = run_vec::<f32>(&*unpool(a), &[outs[0].clone(), outs[1].clone()]).unwrap();
        assert_eq!(shape, [1, 1, 4, 4]);
        // Each 2×2 block keeps only its maximum.
        let mut want = vec![0.0f32; 16];
        for (by, bx) in [(0, 0), (0, 2), (2, 0), (2, 2)] {
            let at = [(by, bx), (by, bx + 1), (by + 1, bx), (by + 1, bx + 1)]
                .map(|(y, x)| y * 4 + x)
                .into_iter()
                .max_by(|&a, &b| x[a].total_cmp(&x[b]))
                .unwrap();
            want[at] = x[at];
        }
        assert_eq!(got, want);
    }

    #[test]
    fn output_shape_places_the_result_in_its_corner() {
        let a = Attrs::new()
            .with("kernel_shape", vec![2i64])
            .with("strides", vec![2i64]);
        let x = t(&[1, 1, 2], vec![5.0f64, 6.0]);
        let i = t(&[1, 1, 2], vec![1i64, 2]);
        let (shape, got) = run_vec::<f64>(
            &*unpool(a.clone()),
            &[x.clone(), i.clone(), t(&[3], vec![1i64, 2, 5])],
        )
        .unwrap();
        assert_eq!(shape, [1, 2, 5]);
        assert_eq!(got, [0.0, 5.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let e = run_vec::<f64>(&*unpool(a.clone()), &[x.clone(), i, t(&[3], vec![1i64, 1, 3])]).unwrap_err();
        assert_cause!(e, Shape, "output_shape");
        let e = run_vec::<f64>(&*unpool(a.clone()), &[x.clone(), t(&[1, 1, 2], vec![0i64, 4])]).unwrap_err();
        assert_cause!(e, Index, "4");
        let e = run_vec::<f64>(&*unpool(a), &[x, t(&[1, 2], vec![0i64, 1])]).unwrap_err();
        assert_cause!(e, Rank, "indices");
        assert_cause!(
            OpRegistry::builtin().make(NAME, &Attrs::new()).unwrap_err(),
            Attr,
            "kernel_shape"
        );
    }
}

//! `instance_norm(x, scale, bias)` (ONNX InstanceNormalization): x is
//! `[N, C, D1, ...]` (rank at least 3); each `(n, c)` block over the
//! spatial axes is normalized on its own, `y = (x − mean) / sqrt(var +
//! epsilon) · scale[c] + bias[c]` with the biased variance (attr
//! `epsilon`, default 1e-5). `scale` and `bias` are `[C]`. Float dtypes, one
//! for every input; statistics are accumulated in f64 and each output
//! rounded once. A block of no elements gives no output elements.

use std::sync::Arc;

use crate::dtype::{DType, Element, Float};
use crate::error::{op_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `instance_norm` op.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceNorm {
    pub epsilon: f64,
}

impl InstanceNorm {
    fn check(&self, inputs: &[TypeInfo]) -> Result<()> {
        TypeInfo::common_dtype(self.name(), inputs, "float", DType::is_float)?;
        let Some(xs) = &inputs[0].shape else {
            return Ok(());
        };
        if xs.len() < 3 {
            return op_err(format!(
                "op 'instance_norm': x must be [N, C, D1, ...] (rank 3 or more), got {}",
                inputs[0].shape_string()
            ));
        }
        for (k, what) in [(1, "scale"), (2, "bias")] {
            if let Some(s) = &inputs[k].shape {
                if s.len() != 1 || (s[0] >= 0 && xs[1] >= 0 && s[0] != xs[1]) {
                    return op_err(format!(
                        "op 'instance_norm': {what} (input {k}) must be [C] = [{}], got {}",
                        xs[1],
                        inputs[k].shape_string()
                    ));
                }
            }
        }
        Ok(())
    }
}

fn norm_kernel<T: Float>(eps: f64, inputs: &[Tensor], out: &Tensor) -> Result<()> {
    let x = inputs[0].to_contiguous()?;
    let xa = x.to_array::<T>()?;
    let xs = xa.as_slice().unwrap_or_default();
    let f64s = |t: &Tensor| -> Result<Vec<f64>> {
        Ok(t.to_array::<T>()?.iter().map(|&v| Element::to_f64(v)).collect())
    };
    let (scale, bias) = (f64s(&inputs[1])?, f64s(&inputs[2])?);
    let c = x.shape()[1];
    let inner: usize = x.shape()[2..].iter().product();
    let mut y = Vec::with_capacity(xs.len());
    if inner > 0 {
        for (b, block) in xs.chunks_exact(inner).enumerate() {
            let n = inner as f64;
            let mean = block.iter().map(|&v| Element::to_f64(v)).sum::<f64>() / n;
            let var = block
                .iter()
                .map(|&v| (Element::to_f64(v) - mean).powi(2))
                .sum::<f64>()
                / n;
            let inv = 1.0 / (var + eps).sqrt();
            let (s, o) = (scale[b % c], bias[b % c]);
            y.extend(block.iter().map(|&v| (Element::to_f64(v) - mean) * inv * s + o));
        }
    }
    out.write_f64s(&y)
}

impl Op for InstanceNorm {
    fn name(&self) -> &str {
        "instance_norm"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(3)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(inputs)?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check(&tys)?;
        let x = &inputs[0];
        let out = ctx.output(0, x.dtype(), x.shape())?;
        crate::dispatch_float!(x.dtype(), T => norm_kernel::<T>(self.epsilon, inputs, &out)?,
            return op_err("op 'instance_norm' takes float inputs"));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("epsilon", self.epsilon)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("instance_norm", |a: &Attrs| {
        a.only("instance_norm", &["epsilon"])?;
        Ok(Arc::new(InstanceNorm {
            epsilon: a.f64("epsilon")?.unwrap_or(1e-5),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};
    use proptest::prelude::*;

    fn inorm(eps: f64) -> Arc<dyn Op> {
        op("instance_norm", Attrs::new().with("epsilon", eps))
    }

    #[test]
    fn normalizes_each_sample_and_channel() {
        // N=1, C=2, L=2: channel 0 is [1, 3] (mean 2, var 1), channel 1 [2, 6] (mean 4, var 4).
        let x = t(&[1, 2, 2], vec![1.0f64, 3.0, 2.0, 6.0]);
        let scale = t(&[2], vec![2.0f64, 3.0]);
        let bias = t(&[2], vec![10.0f64, 0.0]);
        let (s, v) = run_vec::<f64>(&*inorm(0.0), &[x, scale, bias]).unwrap();
        assert_eq!(s, [1, 2, 2]);
        assert_eq!(v, [8.0, 12.0, -3.0, 3.0]);
        let e = run_vec::<f64>(
            &*inorm(0.0),
            &[
                t(&[2, 2], vec![0.0f64; 4]),
                t(&[2], vec![1.0f64; 2]),
                t(&[2], vec![0.0f64; 2]),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("rank 3 or more"), "{e}");
        let e = run_vec::<f64>(
            &*inorm(0.0),
            &[
                t(&[1, 2, 1], vec![0.0f64; 2]),
                t(&[3], vec![1.0f64; 3]),
                t(&[2], vec![0.0f64; 2]),
            ],
        )
        .unwrap_err();
        assert!(e.to_string().contains("scale (input 1) must be [C]"), "{e}");
        // f16 runs (through f32) and keeps its dtype.
        let h = t(&[1, 1, 2], vec![1.0f32, 3.0]).cast(DType::F16).unwrap();
        let one = t(&[1], vec![1.0f32]).cast(DType::F16).unwrap();
        let zero = t(&[1], vec![0.0f32]).cast(DType::F16).unwrap();
        let o = crate::ops::testutil::run_all(&*inorm(0.0), &[h, one, zero]).unwrap();
        assert_eq!(o[0].dtype(), DType::F16);
        assert_eq!(o[0].to_f64_vec().unwrap(), [-1.0, 1.0]);
    }

    proptest! {
        /// Against the definition in f64: mean and biased variance per
        /// (n, c) block, then the affine map of channel c.
        #[test]
        fn matches_the_definition(
            n in 1usize..3, c in 1usize..4, sp in prop::collection::vec(1usize..4, 1..3),
            seed in any::<u64>(), eps in 1e-6f64..1e-1,
        ) {
            let mut shape = vec![n, c];
            shape.extend(&sp);
            let inner: usize = sp.iter().product();
            let mut state = seed;
            let mut next = || {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0
            };
            let x: Vec<f64> = (0..n * c * inner).map(|_| next()).collect();
            let scale: Vec<f64> = (0..c).map(|_| next()).collect();
            let bias: Vec<f64> = (0..c).map(|_| next()).collect();
            let (_, got) = run_vec::<f64>(
                &*inorm(eps),
                &[t(&shape, x.clone()), t(&[c], scale.clone()), t(&[c], bias.clone())],
            ).unwrap();
            for b in 0..n * c {
                let blk = &x[b * inner..(b + 1) * inner];
                let m = blk.iter().sum::<f64>() / inner as f64;
                let v = blk.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / inner as f64;
                for (i, a) in blk.iter().enumerate() {
                    let want = (a - m) / (v + eps).sqrt() * scale[b % c] + bias[b % c];
                    prop_assert!((got[b * inner + i] - want).abs() <= 1e-9 * (1.0 + want.abs()));
                }
            }
        }
    }
}

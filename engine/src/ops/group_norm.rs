//! Normalizations over groups of an axis, with ONNX's semantics:
//!
//! - `group_norm(x, scale, bias)` (GroupNormalization): x is `[N, C, D…]`;
//!   the channels fall into `num_groups` groups of `C / num_groups`, and
//!   each `(n, group)` block (its channels and every spatial position) is
//!   normalized on its own, `(x − mean) / sqrt(var + epsilon)` with the
//!   biased variance, then `· scale + bias`. `scale` and `bias` are `[C]`
//!   (per channel, opset 21) or `[num_groups]` (per group, opset 18).
//! - `lp_norm(x)` (LpNormalization): x divided by its L`p` norm along
//!   `axis` (default -1), `p` 1 or 2 (default 2); a zero norm gives 0.
//!
//! Float dtypes; statistics and norms are accumulated in f64 and each
//! output rounded once (f16 through f32, as the other normalizations).
//! `group_norm` has an in-place twin, `group_norm_inplace`, that
//! overwrites x (`destroy_map {0: [0]}`): each block is read whole before
//! it is written.

use std::sync::Arc;

use crate::dtype::{DType, Element, Float};
use crate::error::{attr_err, op_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `group_norm` op and, with `inplace`, its twin.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupNorm {
    pub num_groups: usize,
    pub epsilon: f64,
    pub inplace: bool,
}

impl GroupNorm {
    fn check(&self, inputs: &[TypeInfo]) -> Result<()> {
        TypeInfo::common_dtype(self.name(), inputs, "float", DType::is_float)?;
        let Some(xs) = &inputs[0].shape else {
            return Ok(());
        };
        let g = self.num_groups as i64;
        if xs.len() < 2 || (xs[1] >= 0 && xs[1] % g != 0) {
            return op_err(format!(
                "op '{}': x must be [N, C, …] with C divisible by num_groups {g}, got {}",
                self.name(),
                inputs[0].shape_string()
            ));
        }
        for (k, what) in [(1, "scale"), (2, "bias")] {
            if let Some(s) = &inputs[k].shape {
                if s.len() != 1 || (s[0] >= 0 && xs[1] >= 0 && s[0] != xs[1] && s[0] != g) {
                    return op_err(format!(
                        "op '{}': {what} (input {k}) must be [C] = [{}] or [num_groups] = [{g}], got {}",
                        self.name(),
                        xs[1],
                        inputs[k].shape_string()
                    ));
                }
            }
        }
        Ok(())
    }
}

fn group_kernel<T: Float>(op: &GroupNorm, inputs: &[Tensor], out: &Tensor) -> Result<()> {
    let xs: Vec<f64> = inputs[0]
        .to_array::<T>()?
        .iter()
        .map(|&v| Element::to_f64(v))
        .collect();
    let f64s = |t: &Tensor| -> Result<Vec<f64>> {
        Ok(t.to_array::<T>()?.iter().map(|&v| Element::to_f64(v)).collect())
    };
    let (scale, bias) = (f64s(&inputs[1])?, f64s(&inputs[2])?);
    let shape = inputs[0].shape();
    let (c, g) = (shape[1], op.num_groups);
    let spatial: usize = shape[2..].iter().product();
    let block = c / g * spatial;
    // A parameter per channel, or per group.
    let param = |p: &[f64], ch: usize| if p.len() == c { p[ch] } else { p[ch / (c / g)] };
    let mut y = Vec::with_capacity(xs.len());
    if block > 0 {
        for (b, blk) in xs.chunks_exact(block).enumerate() {
            let n = block as f64;
            let mean = blk.iter().sum::<f64>() / n;
            let var = blk.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            let inv = 1.0 / (var + op.epsilon).sqrt();
            let first = (b % g) * (c / g);
            y.extend(blk.iter().enumerate().map(|(i, v)| {
                let ch = first + i / spatial;
                (v - mean) * inv * param(&scale, ch) + param(&bias, ch)
            }));
        }
    }
    out.write_f64s(&y)
}

impl Op for GroupNorm {
    fn name(&self) -> &str {
        if self.inplace {
            "group_norm_inplace"
        } else {
            "group_norm"
        }
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
        let out = if self.inplace {
            x.clone()
        } else {
            ctx.output(0, x.dtype(), x.shape())?
        };
        crate::dispatch_float!(x.dtype(), T => group_kernel::<T>(self, inputs, &out)?,
            return op_err(format!("op '{}' takes float inputs", self.name())));
        Ok(vec![out])
    }
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(0, 0)]
        } else {
            Vec::new()
        }
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return Vec::new();
        }
        vec![InplaceVariant {
            op: Arc::new(GroupNorm {
                inplace: true,
                ..self.clone()
            }),
            inputs: vec![0, 1, 2],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace.then(|| {
            Arc::new(GroupNorm {
                inplace: false,
                ..self.clone()
            }) as Arc<dyn Op>
        })
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("num_groups", self.num_groups)
            .with("epsilon", self.epsilon)
    }
}

/// The `lp_norm` op.
#[derive(Clone, Debug, PartialEq)]
pub struct LpNorm {
    pub axis: i64,
    pub p: i64,
}

impl LpNorm {
    fn axis(&self, rank: usize) -> Result<usize> {
        let a = if self.axis < 0 {
            self.axis + rank as i64
        } else {
            self.axis
        };
        if a < 0 || a >= rank as i64 {
            return op_err(format!(
                "op 'lp_norm': axis {} is out of range for rank {rank}",
                self.axis
            ));
        }
        Ok(a as usize)
    }
}

fn lp_kernel<T: Float>(op: &LpNorm, x: &Tensor, out: &Tensor) -> Result<()> {
    let xs: Vec<f64> = x.to_array::<T>()?.iter().map(|&v| Element::to_f64(v)).collect();
    let a = op.axis(x.ndim())?;
    let d = x.shape()[a];
    let inner: usize = x.shape()[a + 1..].iter().product();
    let mut y = vec![0.0; xs.len()];
    if d > 0 && inner > 0 {
        for outer in 0..xs.len() / (d * inner) {
            for n in 0..inner {
                let at = |k: usize| (outer * d + k) * inner + n;
                let norm = match op.p {
                    1 => (0..d).map(|k| xs[at(k)].abs()).sum::<f64>(),
                    _ => (0..d).map(|k| xs[at(k)] * xs[at(k)]).sum::<f64>().sqrt(),
                };
                for k in 0..d {
                    let v = if norm == 0.0 { 0.0 } else { xs[at(k)] / norm };
                    y[at(k)] = v;
                }
            }
        }
    }
    out.write_f64s(&y)
}

impl Op for LpNorm {
    fn name(&self) -> &str {
        "lp_norm"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        TypeInfo::common_dtype(self.name(), inputs, "float", DType::is_float)?;
        if let Some(r) = inputs[0].rank() {
            self.axis(r)?;
        }
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let x = &inputs[0];
        let out = ctx.output(0, x.dtype(), x.shape())?;
        crate::dispatch_float!(x.dtype(), T => lp_kernel::<T>(self, x, &out)?,
            return op_err("op 'lp_norm' takes float inputs"));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("axis", self.axis).with("p", self.p)
    }
}

pub fn register(r: &mut OpRegistry) {
    for inplace in [false, true] {
        let name = if inplace {
            "group_norm_inplace"
        } else {
            "group_norm"
        };
        r.register(name, move |a: &Attrs| {
            a.only(name, &["num_groups", "epsilon"])?;
            let g = a.i64("num_groups")?.unwrap_or(0);
            if g < 1 {
                return attr_err(format!(
                    "op '{name}': attr 'num_groups' must be positive, got {g}"
                ));
            }
            Ok(Arc::new(GroupNorm {
                num_groups: g as usize,
                epsilon: a.f64("epsilon")?.unwrap_or(1e-5),
                inplace,
            }) as Arc<dyn Op>)
        });
    }
    r.register("lp_norm", |a: &Attrs| {
        a.only("lp_norm", &["axis", "p"])?;
        let p = a.i64("p")?.unwrap_or(2);
        if p != 1 && p != 2 {
            return attr_err(format!("op 'lp_norm': attr 'p' must be 1 or 2, got {p}"));
        }
        Ok(Arc::new(LpNorm {
            axis: a.i64("axis")?.unwrap_or(-1),
            p,
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_all, run_vec, t};

    #[test]
    fn group_norm_normalizes_each_group_with_per_channel_or_per_group_affine() {
        // N=1, C=4, 1 position, 2 groups: [1, 3] and [2, 6].
        let x = t(&[1, 4, 1], vec![1.0f64, 3.0, 2.0, 6.0]);
        let g = op(
            "group_norm",
            Attrs::new().with("num_groups", 2).with("epsilon", 0.0),
        );
        let per_channel = [
            t(&[4], vec![1.0f64, 2.0, 3.0, 4.0]),
            t(&[4], vec![0.0f64, 0.0, 0.0, 10.0]),
        ];
        let (_, y) =
            run_vec::<f64>(&*g, &[x.clone(), per_channel[0].clone(), per_channel[1].clone()]).unwrap();
        assert_eq!(y, [-1.0, 2.0, -3.0, 14.0]);
        let (_, y) = run_vec::<f64>(
            &*g,
            &[x.clone(), t(&[2], vec![1.0f64, 2.0]), t(&[2], vec![0.0f64, 1.0])],
        )
        .unwrap();
        assert_eq!(y, [-1.0, 1.0, -1.0, 3.0]);
        // The twin overwrites x with the same values.
        let twin = g.inplace_variants().remove(0).op;
        let xc = x.deep_copy().unwrap();
        let o = run_all(
            &*twin,
            &[xc.clone(), per_channel[0].clone(), per_channel[1].clone()],
        )
        .unwrap();
        assert!(o[0].same_buffer(&xc));
        assert_eq!(xc.to_f64_vec().unwrap(), [-1.0, 2.0, -3.0, 14.0]);
        let e = run_all(
            &*g,
            &[
                t(&[1, 3, 1], vec![0.0f64; 3]),
                t(&[3], vec![1.0f64; 3]),
                t(&[3], vec![0.0f64; 3]),
            ],
        );
        assert!(e.unwrap_err().to_string().contains("divisible"));
    }

    #[test]
    fn lp_norm_divides_by_the_norm_along_the_axis() {
        let x = t(&[2, 2], vec![3.0f32, 4.0, 0.0, 0.0]);
        let l2 = op("lp_norm", Attrs::new());
        let (_, y) = run_vec::<f32>(&*l2, std::slice::from_ref(&x)).unwrap();
        assert_eq!(y, [0.6, 0.8, 0.0, 0.0]);
        let l1 = op("lp_norm", Attrs::new().with("axis", 0).with("p", 1));
        let (_, y) = run_vec::<f32>(&*l1, &[t(&[2], vec![-1.0f32, 3.0])]).unwrap();
        assert_eq!(y, [-0.25, 0.75]);
        assert!(OpRegistry::builtin()
            .make("lp_norm", &Attrs::new().with("p", 3))
            .is_err());
    }
}

//! Normalizations over the channel axis (axis 1) of `[N, C, …]` inputs:
//!
//! - `batch_norm(x, scale, bias, mean, var)`: inference-mode batch
//!   normalization, `(x − mean) / sqrt(var + epsilon) · scale + bias` per
//!   channel (attr `epsilon`, default 1e-5); the four vectors are `[C]`.
//!   `batch_norm_inplace` is its twin that overwrites `x`.
//! - `lrn(x)`: local response normalization across channels (attrs `size`
//!   required, `alpha` 1e-4, `beta` 0.75, `bias` 1):
//!   `x / (bias + alpha / size · Σ x²)^beta`, the sum over channels
//!   `c − ⌊(size−1)/2⌋ … c + ⌈(size−1)/2⌉` that exist.
//!
//! Float dtypes; every input shares one.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD, Axis, Zip};

use crate::dtype::Float;
use crate::error::{attr_err, dtype_err, rank_err, shape_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, InplaceVariant, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

fn check_inputs(op: &str, inputs: &[TypeInfo]) -> Result<()> {
    let d = inputs[0].dtype;
    if !d.is_float() || inputs.iter().any(|t| t.dtype != d) {
        return dtype_err(format!(
            "op '{op}' needs float inputs of one dtype, got {}",
            inputs
                .iter()
                .map(|t| t.dtype.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(r) = inputs[0].rank() {
        if r < 2 {
            return rank_err(format!("op '{op}': x must be [N, C, …], got rank {r}"));
        }
    }
    Ok(())
}

// ----- batch_norm -----------------------------------------------------------

/// `batch_norm` (inference) and its in-place twin.
#[derive(Clone, Debug)]
pub struct BatchNorm {
    pub epsilon: f64,
    pub inplace: bool,
}

impl BatchNorm {
    fn op_name(&self) -> &'static str {
        if self.inplace {
            "batch_norm_inplace"
        } else {
            "batch_norm"
        }
    }
}

/// Per-channel `(a, b)` with `y = x · a + b`.
fn affine<T: Float>(name: &str, c: usize, vecs: &[Tensor], eps: f64) -> Result<Vec<(T, T)>> {
    let mut v = Vec::with_capacity(4);
    for (t, what) in vecs.iter().zip(["scale", "bias", "mean", "var"]) {
        if t.shape() != [c] {
            return shape_err(format!("op '{name}': {what} must be [{c}], got {:?}", t.shape()));
        }
        v.push(t.to_array::<T>()?);
    }
    let eps = T::from(eps).unwrap_or_else(T::zero);
    Ok((0..c)
        .map(|i| {
            let a = v[0][i] / (v[3][i] + eps).sqrt();
            (a, v[1][i] - v[2][i] * a)
        })
        .collect())
}

fn run_batch_norm<T: Float>(name: &str, x: &Tensor, vecs: &[Tensor], eps: f64, out: &Tensor) -> Result<()> {
    let ab = affine::<T>(name, x.shape()[1], vecs, eps)?;
    let apply = |mut ov: ArrayViewMutD<'_, T>, xv: Option<ArrayViewD<'_, T>>| {
        // C order: each (image, channel) plane is one contiguous run.
        let plane = ov.shape()[2..].iter().product::<usize>().max(1);
        let xs = xv.as_ref().map(|v| v.as_slice());
        if let (Some(os), None | Some(Some(_))) = (ov.as_slice_mut(), &xs) {
            for (i, run) in os.chunks_exact_mut(plane).enumerate() {
                let (a, b) = ab[i % ab.len()];
                match xs.flatten() {
                    Some(x) => run
                        .iter_mut()
                        .zip(&x[i * plane..(i + 1) * plane])
                        .for_each(|(o, &x)| *o = x * a + b),
                    None => run.iter_mut().for_each(|o| *o = *o * a + b),
                }
            }
            return;
        }
        for (c, &(a, b)) in ab.iter().enumerate() {
            let mut oc = ov.index_axis_mut(Axis(1), c);
            match &xv {
                Some(xv) => Zip::from(&mut oc)
                    .and(&xv.index_axis(Axis(1), c))
                    .for_each(|o, &x| *o = x * a + b),
                None => oc.mapv_inplace(|x| x * a + b),
            }
        }
    };
    if out.same_buffer(x) {
        return out.write(|ov: ArrayViewMutD<'_, T>| apply(ov, None));
    }
    x.read(|xv: ArrayViewD<'_, T>| out.write(|ov: ArrayViewMutD<'_, T>| apply(ov, Some(xv))))??;
    Ok(())
}

impl Op for BatchNorm {
    fn name(&self) -> &str {
        self.op_name()
    }
    fn arity(&self) -> Arity {
        Arity::exactly(5)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_inputs(self.op_name(), inputs)?;
        // The parameters are per channel, as `affine` checks at run time.
        let c = inputs[0].shape.as_ref().and_then(|s| s.get(1).copied());
        for (t, what) in inputs[1..].iter().zip(["scale", "bias", "mean", "var"]) {
            let Some(s) = &t.shape else { continue };
            let fits = match (s.as_slice(), c) {
                ([d], Some(c)) => *d < 0 || c < 0 || *d == c,
                ([_], None) => true,
                _ => false,
            };
            if !fits {
                return shape_err(format!(
                    "op '{}': {what} must be [C] with C = {} (x's dimension 1), got {}",
                    self.op_name(),
                    c.map_or("?".to_string(), |c| c.to_string()),
                    t.shape_string()
                ));
            }
        }
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        if x.ndim() < 2 {
            return shape_err(format!(
                "op '{}': x must be [N, C, …], got {:?}",
                self.op_name(),
                x.shape()
            ));
        }
        let out = if self.inplace {
            x.clone()
        } else {
            ctx.output(0, x.dtype(), x.shape())?
        };
        let (name, eps) = (self.op_name(), self.epsilon);
        crate::dispatch_float!(x.dtype(), T => run_batch_norm::<T>(name, x, &inputs[1..], eps, &out)?,
            return dtype_err(format!("op '{name}' takes float inputs")));
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
            op: Arc::new(BatchNorm {
                epsilon: self.epsilon,
                inplace: true,
            }),
            inputs: vec![0],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace.then(|| {
            Arc::new(BatchNorm {
                epsilon: self.epsilon,
                inplace: false,
            }) as Arc<dyn Op>
        })
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("epsilon", self.epsilon)
    }
}

// ----- lrn ------------------------------------------------------------------

/// Local response normalization across channels.
#[derive(Clone, Debug)]
pub struct Lrn {
    pub size: usize,
    pub alpha: f64,
    pub beta: f64,
    pub bias: f64,
}

fn run_lrn<T: Float>(p: &Lrn, x: &Tensor, out: &Tensor) -> Result<()> {
    let c = x.shape()[1];
    let (lo, hi) = ((p.size - 1) / 2, (p.size - 1).div_ceil(2));
    let cast = |v: f64| T::from(v).unwrap_or_else(T::zero);
    let (scale, bias, beta) = (cast(p.alpha / p.size as f64), cast(p.bias), cast(p.beta));
    x.read(|xv: ArrayViewD<'_, T>| {
        out.write(|mut ov: ArrayViewMutD<'_, T>| {
            Zip::from(ov.lanes_mut(Axis(1)))
                .and(xv.lanes(Axis(1)))
                .for_each(|mut o, xl| {
                    for i in 0..c {
                        let (a, b) = (i.saturating_sub(lo), (i + hi).min(c - 1));
                        let s = (a..=b).fold(T::zero(), |s, j| s + xl[j] * xl[j]);
                        o[i] = xl[i] / (bias + scale * s).powf(beta);
                    }
                })
        })
    })??;
    Ok(())
}

impl Op for Lrn {
    fn name(&self) -> &str {
        "lrn"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_inputs("lrn", inputs)?;
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        if x.ndim() < 2 {
            return shape_err(format!("op 'lrn': x must be [N, C, …], got {:?}", x.shape()));
        }
        let out = ctx.output(0, x.dtype(), x.shape())?;
        crate::dispatch_float!(x.dtype(), T => run_lrn::<T>(self, x, &out)?,
            return dtype_err("op 'lrn' takes float inputs"));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("size", self.size)
            .with("alpha", self.alpha)
            .with("beta", self.beta)
            .with("bias", self.bias)
    }
}

pub fn register(r: &mut OpRegistry) {
    for inplace in [false, true] {
        let name = if inplace {
            "batch_norm_inplace"
        } else {
            "batch_norm"
        };
        r.register(name, move |a: &Attrs| {
            a.only(name, &["epsilon"])?;
            Ok(Arc::new(BatchNorm {
                epsilon: a.f64("epsilon")?.unwrap_or(1e-5),
                inplace,
            }) as Arc<dyn Op>)
        });
    }
    r.register("lrn", |a: &Attrs| {
        a.only("lrn", &["size", "alpha", "beta", "bias"])?;
        let size = match a.i64("size")? {
            Some(s) if s >= 1 => s as usize,
            Some(s) => return attr_err(format!("op 'lrn': attr 'size' must be positive, got {s}")),
            None => return attr_err("op 'lrn' needs attr 'size'"),
        };
        Ok(Arc::new(Lrn {
            size,
            alpha: a.f64("alpha")?.unwrap_or(1e-4),
            beta: a.f64("beta")?.unwrap_or(0.75),
            bias: a.f64("bias")?.unwrap_or(1.0),
        }) as Arc<dyn Op>)
    });
}

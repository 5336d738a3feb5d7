//! Two ops of a kernel author, checked by Vigil.
//!
//! | op | what it computes | state |
//! |---|---|---|
//! | `axpy` (attr `alpha`, default 1) | `alpha * x + y`, f32, same shapes; in-place variant `axpy_inplace` overwrites `y` | correct |
//! | `fast_softmax` | softmax over the last axis, f32 | broken: it subtracts each row's maximum *in its input's buffer* (for numerical stability) before exponentiating into a fresh output. Its output is right (softmax is shift-invariant), but the caller's tensor has changed, and the op declares no `destroy_map`. Vigil reports `destroyed_input`. |
//!
//! [`register`] adds both to an [`OpRegistry`]; `src/main.rs` hands it to
//! [`vigil::Cli`].

#![forbid(unsafe_code)]

use std::sync::Arc;

use vigil::engine::error::op_err;
use vigil::engine::Result;
use vigil::ndarray::{ArrayViewD, ArrayViewMutD, Axis, Zip};
use vigil::prelude::*;

/// Registers `axpy`, `axpy_inplace` and `fast_softmax`.
pub fn register(r: &mut OpRegistry) {
    for inplace in [false, true] {
        let name = Axpy::new(1.0, inplace).name;
        let op_name = name.clone();
        r.register(&name, move |a: &Attrs| {
            a.only(&op_name, &["alpha"])?;
            let alpha = a.f64("alpha")?.unwrap_or(1.0);
            Ok(Arc::new(Axpy::new(alpha, inplace)) as Arc<dyn Op>)
        });
    }
    r.register_op(Arc::new(FastSoftmax));
}

/// Every input must be f32.
fn need_f32(op: &str, inputs: &[TypeInfo]) -> Result<()> {
    match inputs.iter().find(|t| t.dtype != DType::F32) {
        Some(t) => op_err(format!("op '{op}' takes f32 inputs, got {}", t.dtype)),
        None => Ok(()),
    }
}

/// `alpha * x + y`. The pure op writes a fresh output; `axpy_inplace`
/// (its in-place variant, which the in-place pass picks when `y` is dead
/// afterwards) adds `alpha * x` into `y` and returns `y`.
pub struct Axpy {
    alpha: f64,
    inplace: bool,
    name: String,
}

impl Axpy {
    pub fn new(alpha: f64, inplace: bool) -> Axpy {
        Axpy {
            alpha,
            inplace,
            name: if inplace { "axpy_inplace" } else { "axpy" }.to_string(),
        }
    }
}

impl Op for Axpy {
    fn name(&self) -> &str {
        &self.name
    }
    fn arity(&self) -> Arity {
        Arity::exactly(2)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        need_f32(&self.name, inputs)?;
        if let (Some(a), Some(b)) = (&inputs[0].shape, &inputs[1].shape) {
            if a != b {
                return op_err(format!("op '{}': shapes {a:?} and {b:?} differ", self.name));
            }
        }
        Ok(vec![inputs[1].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let (x, y) = (&inputs[0], &inputs[1]);
        if x.shape() != y.shape() {
            return op_err(format!("shapes {:?} and {:?} differ", x.shape(), y.shape()));
        }
        let alpha = self.alpha as f32;
        if self.inplace {
            x.read(|xv: ArrayViewD<'_, f32>| {
                y.write(|mut yv: ArrayViewMutD<'_, f32>| yv.zip_mut_with(&xv, |o, &a| *o += alpha * a))
            })??;
            return Ok(vec![y.clone()]);
        }
        let out = ctx.output(0, DType::F32, y.shape())?;
        x.read(|xv: ArrayViewD<'_, f32>| {
            y.read(|yv: ArrayViewD<'_, f32>| {
                out.write(|mut ov: ArrayViewMutD<'_, f32>| {
                    Zip::from(&mut ov)
                        .and(&xv)
                        .and(&yv)
                        .for_each(|o, &a, &b| *o = alpha * a + b)
                })
            })
        })???;
        Ok(vec![out])
    }
    /// The in-place variant overwrites input 1 (`y`) and returns it.
    fn destroy_map(&self) -> Vec<(usize, usize)> {
        if self.inplace {
            vec![(0, 1)]
        } else {
            Vec::new()
        }
    }
    fn inplace_variants(&self) -> Vec<InplaceVariant> {
        if self.inplace {
            return Vec::new();
        }
        vec![InplaceVariant {
            op: Arc::new(Axpy::new(self.alpha, true)),
            inputs: vec![0, 1],
        }]
    }
    fn pure_twin(&self) -> Option<Arc<dyn Op>> {
        self.inplace
            .then(|| Arc::new(Axpy::new(self.alpha, false)) as Arc<dyn Op>)
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("alpha", self.alpha)
    }
}

/// Softmax over the last axis. BROKEN on purpose: see the crate docs. The
/// fix is to subtract the maximum while reading (`(v - max).exp()`) and
/// never write `x`.
pub struct FastSoftmax;

impl Op for FastSoftmax {
    fn name(&self) -> &str {
        "fast_softmax"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        need_f32(self.name(), inputs)?;
        if inputs[0].rank() == Some(0) {
            return op_err("op 'fast_softmax' takes at least one axis, got a scalar");
        }
        Ok(vec![inputs[0].clone()])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let x = &inputs[0];
        if x.ndim() == 0 {
            return op_err("op 'fast_softmax' takes at least one axis, got a scalar");
        }
        let last = Axis(x.ndim() - 1);
        // The defect: "x -= max(x)" in the caller's buffer.
        x.write(|mut v: ArrayViewMutD<'_, f32>| {
            for mut row in v.lanes_mut(last) {
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                row.mapv_inplace(|e| e - max);
            }
        })?;
        let out = ctx.output(0, DType::F32, x.shape())?;
        x.read(|xv: ArrayViewD<'_, f32>| {
            out.write(|mut ov: ArrayViewMutD<'_, f32>| {
                for (mut o, row) in ov.lanes_mut(last).into_iter().zip(xv.lanes(last)) {
                    let sum: f32 = row.iter().map(|e| e.exp()).sum();
                    Zip::from(&mut o).and(&row).for_each(|o, &e| *o = e.exp() / sum);
                }
            })
        })??;
        Ok(vec![out])
    }
}

//! Adam, and AdamW's decoupled weight decay.

use std::cell::Cell;
use std::collections::HashMap;

use vigil_engine::graph::{GraphBuilder, Sym};
use vigil_engine::{DType, Tensor};

use super::{constant, dtype_of, scalar_input, scalar_value, state, LearningRate, Optimizer};
use crate::error::Result;

/// Per-step inputs: the bias-corrected step size and epsilon, and AdamW's
/// decay factor `1 − lr·λ`.
pub const STEP: &str = "optim:adam_step";
pub const EPS: &str = "optim:adam_eps";
pub const DECAY: &str = "optim:adamw_decay";

/// `m = β₁m + (1−β₁)g; v = β₂v + (1−β₂)g²; w -= lr·m̂/(√v̂ + ε)`, with the
/// bias corrections folded into the fed step size and epsilon; AdamW
/// first scales `w` by `1 − lr·λ`.
pub struct Adam {
    lr: LearningRate,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    dtype: Cell<DType>,
}

impl Adam {
    pub fn new(lr: f64) -> Adam {
        Adam {
            lr: LearningRate::new(lr),
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            dtype: Cell::new(DType::F32),
        }
    }

    pub fn betas(mut self, beta1: f64, beta2: f64) -> Adam {
        self.beta1 = beta1;
        self.beta2 = beta2;
        self
    }

    /// AdamW: decoupled weight decay `λ`.
    pub fn weight_decay(mut self, lambda: f64) -> Adam {
        self.weight_decay = lambda;
        self
    }
}

impl Optimizer for Adam {
    fn build(&self, b: &GraphBuilder, params: &[(Sym, Sym)]) -> Result<Vec<Sym>> {
        let dtype = dtype_of(params);
        self.dtype.set(dtype);
        let step = scalar_input(b, STEP, dtype);
        let eps = scalar_input(b, EPS, dtype);
        let decay = (self.weight_decay != 0.0).then(|| scalar_input(b, DECAY, dtype));
        let b1 = constant(b, self.beta1, dtype)?;
        let b2 = constant(b, self.beta2, dtype)?;
        let c1 = constant(b, 1.0 - self.beta1, dtype)?;
        let c2 = constant(b, 1.0 - self.beta2, dtype)?;
        let mut out = Vec::new();
        for (w, g) in params {
            let m = state(b, w, "adam_m")?
                .mul_inplace(&b1)?
                .add_inplace(&g.mul(&c1)?)?;
            let v = state(b, w, "adam_v")?
                .mul_inplace(&b2)?
                .add_inplace(&g.mul(g)?.mul(&c2)?)?;
            let delta = m.mul(&step)?.div(&v.sqrt()?.add(&eps)?)?;
            let w = match &decay {
                Some(d) => w.mul_inplace(d)?,
                None => w.clone(),
            };
            out.extend([m, v, w.sub_inplace(&delta)?]);
        }
        Ok(out)
    }

    fn feeds(&self, t: usize) -> Result<HashMap<String, Tensor>> {
        let t = t.max(1) as i32;
        let lr = self.lr.get();
        let (k1, k2) = (1.0 - self.beta1.powi(t), 1.0 - self.beta2.powi(t));
        let dtype = self.dtype.get();
        let mut f = HashMap::from([
            (STEP.to_string(), scalar_value(lr * k2.sqrt() / k1, dtype)?),
            (EPS.to_string(), scalar_value(self.eps * k2.sqrt(), dtype)?),
        ]);
        if self.weight_decay != 0.0 {
            f.insert(
                DECAY.to_string(),
                scalar_value(1.0 - lr * self.weight_decay, dtype)?,
            );
        }
        Ok(f)
    }

    fn learning_rate(&self) -> LearningRate {
        self.lr.clone()
    }
}

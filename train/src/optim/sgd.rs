//! Stochastic gradient descent, with optional (heavy-ball) momentum.

use std::collections::HashMap;

use vigil_engine::graph::{GraphBuilder, Sym};
use vigil_engine::{DType, Tensor};

use super::{constant, dtype_of, scalar_input, scalar_value, state, LearningRate, Optimizer};
use crate::error::Result;

/// The learning-rate input of the step graph.
pub const LR: &str = "optim:lr";

/// `w -= lr·g`; with momentum `v = μ·v + g; w -= lr·v`.
pub struct Sgd {
    lr: LearningRate,
    momentum: f64,
    dtype: std::cell::Cell<DType>,
}

impl Sgd {
    pub fn new(lr: f64) -> Sgd {
        Sgd {
            lr: LearningRate::new(lr),
            momentum: 0.0,
            dtype: std::cell::Cell::new(DType::F32),
        }
    }

    pub fn with_momentum(mut self, momentum: f64) -> Sgd {
        self.momentum = momentum;
        self
    }
}

impl Optimizer for Sgd {
    fn build(&self, b: &GraphBuilder, params: &[(Sym, Sym)]) -> Result<Vec<Sym>> {
        let dtype = dtype_of(params);
        self.dtype.set(dtype);
        let lr = scalar_input(b, LR, dtype);
        let mu = constant(b, self.momentum, dtype)?;
        let mut out = Vec::new();
        for (w, g) in params {
            let step = if self.momentum == 0.0 {
                g.clone()
            } else {
                let v = state(b, w, "velocity")?.mul_inplace(&mu)?.add_inplace(g)?;
                out.push(v.clone());
                v
            };
            out.push(w.sub_inplace(&step.mul(&lr)?)?);
        }
        Ok(out)
    }

    fn feeds(&self, _t: usize) -> Result<HashMap<String, Tensor>> {
        Ok(HashMap::from([(
            LR.to_string(),
            scalar_value(self.lr.get(), self.dtype.get())?,
        )]))
    }

    fn learning_rate(&self) -> LearningRate {
        self.lr.clone()
    }
}

//! Optimizers. Each appends, per parameter, in-place ops that destroy the
//! parameter's buffer (and its state's, for momentum and Adam): the values
//! live in the graph's `Parameter` variables and persist across iterations
//! without copies. Per-iteration numbers (the learning rate, Adam's bias
//! corrections) are graph inputs fed each step, so a schedule needs no
//! rebuild.

mod adam;
mod lr;
mod sgd;

use std::collections::HashMap;

use vigil_engine::graph::{GraphBuilder, Sym};
use vigil_engine::{DType, Tensor};

pub use adam::Adam;
pub use lr::LearningRate;
pub use sgd::Sgd;

use crate::error::Result;

/// An update rule, as graph ops.
pub trait Optimizer {
    /// Appends the updates of `params` (each with its gradient) to `b`;
    /// returns the updates' outputs.
    fn build(&self, b: &GraphBuilder, params: &[(Sym, Sym)]) -> Result<Vec<Sym>>;
    /// The values of the inputs `build` declared, for step `t` (from 1).
    fn feeds(&self, t: usize) -> Result<HashMap<String, Tensor>>;
    /// The shared learning rate (for schedules).
    fn learning_rate(&self) -> LearningRate;
}

/// A `[1]` graph input of `dtype` named `name`.
fn scalar_input(b: &GraphBuilder, name: &str, dtype: DType) -> Sym {
    b.input(name, dtype, &[1])
}

/// A `[1]` tensor of `dtype` holding `v`.
fn scalar_value(v: f64, dtype: DType) -> Result<Tensor> {
    Ok(Tensor::from_vec(&[1], vec![v])?.cast(dtype)?)
}

/// A `[1]` constant of `dtype`.
fn constant(b: &GraphBuilder, v: f64, dtype: DType) -> Result<Sym> {
    Ok(b.constant(&b.fresh("optim_c"), scalar_value(v, dtype)?))
}

/// A zero state parameter shaped like `p`, named `<p>:<what>`.
fn state(b: &GraphBuilder, p: &Sym, what: &str) -> Result<Sym> {
    let ty = p.ty();
    let shape = ty.static_shape().ok_or_else(|| {
        vigil_engine::Error::Graph(format!(
            "parameter '{}' has a shape unknown before running",
            p.name()
        ))
    })?;
    Ok(b.parameter(&format!("{}:{what}", p.name()), Tensor::zeros(ty.dtype, &shape)?))
}

/// The one float dtype of the parameters (f32 unless they are all f64).
fn dtype_of(params: &[(Sym, Sym)]) -> DType {
    params.first().map_or(DType::F32, |(p, _)| p.ty().dtype)
}

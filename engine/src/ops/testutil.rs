//! Helpers shared by the op modules' unit tests.

use std::sync::Arc;

use crate::dtype::Element;
use crate::error::Result;
use crate::ops::{Attrs, Op, OpCtx, OpRegistry};
use crate::tensor::Tensor;

/// A C-order tensor of `data`.
pub fn t<T: Element>(shape: &[usize], data: Vec<T>) -> Tensor {
    Tensor::from_vec(shape, data).unwrap()
}

/// The built-in op `name` made from `attrs`.
pub fn op(name: &str, attrs: Attrs) -> Arc<dyn Op> {
    OpRegistry::builtin().make(name, &attrs).unwrap()
}

/// Every output of `op` on `inputs`.
pub fn run_all(op: &dyn Op, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    op.compute(inputs, &mut OpCtx::new("n"))
}

/// Output 0 of `op` on `inputs`, as a flat vector with its shape.
pub fn run_vec<T: Element>(op: &dyn Op, inputs: &[Tensor]) -> Result<(Vec<usize>, Vec<T>)> {
    let out = run_all(op, inputs)?.remove(0);
    let v = out.to_array::<T>()?.iter().copied().collect();
    Ok((out.shape().to_vec(), v))
}

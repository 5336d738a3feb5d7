//! `if`: one of two bodies, picked by a one-element bool.

use crate::dtype::DType;
use crate::error::{dtype_err, Error, Result};
use crate::ops::{Arity, Attrs, Op, OpCtx, TypeInfo};
use crate::tensor::Tensor;

use super::{check_inputs, join_shapes, owned, run_plain, Body, Control, RunBody};

/// What the branches' output `k` has in common: the dtype must agree.
fn join(a: &TypeInfo, b: &TypeInfo, k: usize) -> Result<TypeInfo> {
    if a.dtype != b.dtype {
        return dtype_err(format!(
            "op 'if': output {k} is {} in then_branch and {} in else_branch",
            a.dtype, b.dtype
        ));
    }
    Ok(join_shapes(a, b))
}

/// The `if` op.
#[derive(Clone, Debug)]
pub struct If {
    then_branch: Body,
    else_branch: Body,
}

impl If {
    /// Checks that the branches take the same inputs and give the same
    /// number of outputs.
    pub fn new(then_branch: Body, else_branch: Body) -> Result<If> {
        let (a, b) = (&then_branch.inputs, &else_branch.inputs);
        if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.dtype != y.dtype) {
            return Err(Error::Attr(format!(
                "op 'if': then_branch takes {} inputs and else_branch {}; they must take the same values",
                a.len(),
                b.len()
            )));
        }
        if then_branch.outputs.len() != else_branch.outputs.len() {
            return Err(Error::Attr(format!(
                "op 'if': then_branch gives {} outputs and else_branch {}",
                then_branch.outputs.len(),
                else_branch.outputs.len()
            )));
        }
        Ok(If {
            then_branch,
            else_branch,
        })
    }

    pub fn then_branch(&self) -> &Body {
        &self.then_branch
    }

    pub fn else_branch(&self) -> &Body {
        &self.else_branch
    }
}

impl Control for If {
    fn run(&self, inputs: &[Tensor], run_body: &mut RunBody<'_>) -> Result<Vec<Tensor>> {
        let cond = &inputs[0];
        if cond.dtype() != DType::Bool || cond.size() != 1 {
            return dtype_err(format!(
                "op 'if': cond must be one bool, got {} {:?}",
                cond.dtype(),
                cond.shape()
            ));
        }
        let taken = cond.to_array::<bool>()?.iter().next().copied().unwrap_or(false);
        let body = if taken {
            &self.then_branch
        } else {
            &self.else_branch
        };
        let g = body.graph()?;
        let outs = run_body(&g, &inputs[1..])?;
        owned(&g, inputs, outs)
    }
}

impl Op for If {
    fn name(&self) -> &str {
        "if"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(self.then_branch.inputs.len() + 1)
    }
    fn num_outputs(&self) -> usize {
        self.then_branch.outputs.len()
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        crate::ops::check_arity(self, inputs.len())?;
        let c = &inputs[0];
        if c.dtype != DType::Bool || c.static_shape().is_some_and(|s| s.iter().product::<usize>() != 1) {
            return dtype_err(format!(
                "op 'if': cond must be one bool, got {} {}",
                c.dtype,
                c.shape_string()
            ));
        }
        check_inputs("if", &self.then_branch, &inputs[1..])?;
        check_inputs("if", &self.else_branch, &inputs[1..])?;
        let (t, e) = (&self.then_branch.outputs, &self.else_branch.outputs);
        t.iter()
            .zip(e)
            .enumerate()
            .map(|(k, (a, b))| join(a, b, k))
            .collect()
    }
    fn compute(&self, inputs: &[Tensor], _ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        crate::ops::check_arity(self, inputs.len())?;
        self.run(inputs, &mut run_plain)
    }
    fn as_control(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("then_branch", self.then_branch.attr())
            .with("else_branch", self.else_branch.attr())
    }
}

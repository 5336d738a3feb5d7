//! `loop`: a body run while a trip count and a condition allow (ONNX
//! `Loop`).
//!
//! Inputs `M, cond, v…, captured…`: `M` (i64) bounds the iterations and
//! `cond` (bool) is the first iteration's condition; either may be an
//! empty tensor, meaning absent (no bound; true). The body takes
//! `(iteration, cond, v…, captured…)` and gives `(cond, v…, scans…)`:
//! `v` is carried into the next iteration, each scan output is stacked
//! along a new axis 0. The node gives the last `v…`, then the stacked
//! scan outputs.

use crate::dtype::DType;
use crate::error::{dtype_err, Error, Result};
use crate::ops::{Arity, Attrs, Op, OpCtx, TypeInfo};
use crate::tensor::Tensor;

use super::{
    check_inputs, join_shapes, optional_scalar, owned, run_plain, scalar_input, stack, Body, Control, RunBody,
};

/// The `loop` op: `carried` is how many of the body's values pass from one
/// iteration to the next (the rest of its outputs after the condition
/// are scan outputs).
#[derive(Clone, Debug)]
pub struct Loop {
    body: Body,
    carried: usize,
}

impl Loop {
    /// Checks the body's signature: `(i64, bool, v…, captured…)` in,
    /// `(bool, v…, scans…)` out.
    pub fn new(body: Body, carried: usize) -> Result<Loop> {
        let (ins, outs) = (&body.inputs, &body.outputs);
        if ins.len() < 2 + carried || outs.len() < 1 + carried {
            return Err(Error::Attr(format!(
                "op 'loop': a body carrying {carried} values takes at least {} inputs and gives at least {} outputs; \
                 it takes {} and gives {}",
                2 + carried,
                1 + carried,
                ins.len(),
                outs.len()
            )));
        }
        if ins[0].dtype != DType::I64 || ins[1].dtype != DType::Bool || outs[0].dtype != DType::Bool {
            return Err(Error::Attr(format!(
                "op 'loop': the body takes (i64, bool, …) and gives (bool, …); it takes ({}, {}, …) and gives ({}, …)",
                ins[0].dtype, ins[1].dtype, outs[0].dtype
            )));
        }
        Ok(Loop { body, carried })
    }

    pub fn body(&self) -> &Body {
        &self.body
    }

    fn scans(&self) -> usize {
        self.body.outputs.len() - 1 - self.carried
    }
}

impl Control for Loop {
    fn run(&self, inputs: &[Tensor], run_body: &mut RunBody<'_>) -> Result<Vec<Tensor>> {
        let n = self.carried;
        let trips = optional_scalar::<i64>("loop", "the trip count M", &inputs[0])?;
        let mut cond = optional_scalar::<bool>("loop", "cond", &inputs[1])?.unwrap_or(true);
        let g = self.body.graph()?;
        let mut carried: Vec<Tensor> = inputs[2..2 + n].to_vec();
        let captured = &inputs[2 + n..];
        let mut scans: Vec<Vec<Tensor>> = vec![Vec::new(); self.scans()];
        let mut i: i64 = 0;
        while cond && trips.is_none_or(|m| i < m) {
            let mut feeds = vec![
                scalar_input(&self.body.inputs[0], i)?,
                scalar_input(&self.body.inputs[1], cond)?,
            ];
            feeds.extend(carried.iter().cloned());
            feeds.extend(captured.iter().cloned());
            let outs = run_body(&g, &feeds)?;
            if outs.len() != 1 + n + scans.len() {
                return Err(Error::Arity(format!(
                    "op 'loop': the body gave {} values, {} expected",
                    outs.len(),
                    1 + n + scans.len()
                )));
            }
            cond = optional_scalar::<bool>("loop", "the body's cond output", &outs[0])?
                .ok_or_else(|| Error::Shape("op 'loop': the body's cond output is empty".into()))?;
            carried = outs[1..1 + n].to_vec();
            for (s, t) in scans.iter_mut().zip(&outs[1 + n..]) {
                s.push(t.clone());
            }
            i += 1;
        }
        let mut result = owned(&g, inputs, carried)?;
        for (k, s) in scans.iter().enumerate() {
            result.push(stack("loop", k, s, 0, &self.body.outputs[1 + n + k])?);
        }
        Ok(result)
    }
}

impl Op for Loop {
    fn name(&self) -> &str {
        "loop"
    }
    fn arity(&self) -> Arity {
        Arity::exactly(self.body.inputs.len())
    }
    fn num_outputs(&self) -> usize {
        self.body.outputs.len() - 1
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        crate::ops::check_arity(self, inputs.len())?;
        for (k, (want, what)) in [(DType::I64, "the trip count M"), (DType::Bool, "cond")]
            .into_iter()
            .enumerate()
        {
            let t = &inputs[k];
            if t.dtype != want || t.static_shape().is_some_and(|s| s.iter().product::<usize>() > 1) {
                return dtype_err(format!(
                    "op 'loop': {what} must be one {want} (or none), got {} {}",
                    t.dtype,
                    t.shape_string()
                ));
            }
        }
        let n = self.carried;
        let mut given = self.body.inputs[..2].to_vec();
        given.extend(inputs[2..].iter().cloned());
        check_inputs("loop", &self.body, &given)?;
        let outs = &self.body.outputs;
        let mut result = Vec::with_capacity(outs.len() - 1);
        for k in 0..n {
            let (init, out) = (&inputs[2 + k], &outs[1 + k]);
            if init.dtype != out.dtype {
                return dtype_err(format!(
                    "op 'loop': carried value {k} enters as {} and the body gives {}",
                    init.dtype, out.dtype
                ));
            }
            result.push(join_shapes(init, out));
        }
        for out in &outs[1 + n..] {
            let shape = out.shape.as_ref().map(|s| {
                let mut full = vec![-1];
                full.extend(s);
                full
            });
            result.push(TypeInfo::new(out.dtype, shape));
        }
        Ok(result)
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
            .with("body", self.body.attr())
            .with("carried", self.carried as i64)
    }
}

//! The training-step graph: forward, backward (autodiff) and the
//! optimizer's in-place updates, then the in-place pass over the rest.

use std::collections::HashMap;

use vigil_autodiff::{grad, grad_name};
use vigil_engine::graph::{Graph, GraphBuilder, VarKind};
use vigil_engine::inplace;

use crate::error::{Result, TrainError};
use crate::optim::Optimizer;

/// The float `Parameter` variables of `g`, in declaration order.
pub fn parameters(g: &Graph) -> Vec<String> {
    g.vars()
        .iter()
        .filter(|v| matches!(v.kind, VarKind::Parameter(_)) && v.ty.dtype.is_float())
        .map(|v| v.name.clone())
        .collect()
}

/// One training step of `forward` minimizing `loss` over its parameters:
/// the outputs are `loss` and the updates. The pure backward nodes are then
/// rewritten in place where the in-place pass can prove it safe.
pub fn build_step(forward: &Graph, loss: &str, optimizer: &dyn Optimizer) -> Result<Graph> {
    let params = parameters(forward);
    if params.is_empty() {
        return Err(TrainError::NoParameters(forward.name().to_string()));
    }
    let wrt: Vec<&str> = params.iter().map(String::as_str).collect();
    let with_grads = grad(forward, loss, &wrt)?;
    let b = GraphBuilder::from_graph(&with_grads);
    let missing = |n: &str| TrainError::MissingOutput(n.to_string());
    let pairs = params
        .iter()
        .map(|p| {
            let w = b.var(p).ok_or_else(|| missing(p))?;
            let g = b.var(&grad_name(p)).ok_or_else(|| missing(&grad_name(p)))?;
            Ok((w, g))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut outs = vec![b.var(loss).ok_or_else(|| missing(loss))?];
    outs.extend(optimizer.build(&b, &pairs)?);
    let refs: Vec<_> = outs.iter().collect();
    let step = rename_gradients(&b.build(&refs)?, &params)?;
    Ok(inplace::run(&step)?.graph)
}

/// `step` with the gradients it keeps inside named `<param>:grad`, like the
/// optimizer state. `grad:<param>` names a graph's gradient *outputs*:
/// DebugMode's gradient check builds them with autodiff for a graph that
/// has none, which fails (and skips the check) when a step already uses
/// those names for its intermediates.
fn rename_gradients(step: &Graph, params: &[String]) -> Result<Graph> {
    let map: HashMap<String, String> = params
        .iter()
        .map(|p| (grad_name(p), format!("{p}:grad")))
        .collect();
    let fix = |n: &mut String| {
        if let Some(to) = map.get(n.as_str()) {
            *n = to.clone();
        }
    };
    let (sources, mut specs, mut outputs) = step.to_specs();
    for s in &mut specs {
        s.inputs.iter_mut().for_each(fix);
        s.outputs.iter_mut().for_each(fix);
    }
    outputs.iter_mut().for_each(fix);
    Ok(Graph::new(step.name(), sources, specs, &outputs)?)
}

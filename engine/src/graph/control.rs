//! Control flow: nodes that run graphs of their own (see
//! docs/graph-format.md, "Control flow"). A control node's graphs are
//! closed: every value a body reads from outside is one of the node's
//! inputs, so the destroy handler and the listeners of the outer graph see
//! every read, and a body is an ordinary [`Graph`] (validated, typed).
//!
//! - `if(cond, captured…)`: `then_branch` when the one-element bool `cond`
//!   is true, else `else_branch`. Both branches take the captured values as
//!   their inputs, in order, and give the node's outputs.
//!
//! The graph loader builds these nodes ([`make`]), not an [`OpRegistry`]:
//! their bodies are graph files inside the node's attrs, built with the
//! loader's registry, and each body node is named after the outer node
//! (`If_1/then_branch/Add_3`), so a finding inside a body names both.
//!
//! A control op's `compute` runs the chosen body node by node with no
//! listener; the executor instead runs it through [`Control::run`] with its
//! own listeners, so each body node is checked as an outer node is.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{dtype_err, Error, Result};
use crate::graph::{Graph, GraphFile};
use crate::ops::{Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// Runs one body on its inputs and gives its outputs: what a control op
/// asks of whoever runs it (a plain loop, or the executor with listeners).
pub type RunBody<'a> = dyn FnMut(&Graph, &[Tensor]) -> Result<Vec<Tensor>> + 'a;

/// An op that runs graphs of its own.
pub trait Control: Op {
    /// The op's outputs for `inputs`, running bodies through `run_body`.
    fn run(&self, inputs: &[Tensor], run_body: &mut RunBody<'_>) -> Result<Vec<Tensor>>;
}

/// The control op behind `op`, if it is one.
pub fn control_of(op: &dyn Op) -> Option<&dyn Control> {
    op.as_control()?.downcast_ref::<If>().map(|c| c as &dyn Control)
}

/// The op names [`make`] builds.
pub const CONTROL_OPS: &[&str] = &["if"];

/// Makes node `node`'s op `op` from `attrs`: a control op when `op` names
/// one (its bodies built with `registry`), else `registry`'s op.
pub fn make(registry: &OpRegistry, node: &str, op: &str, attrs: &Attrs) -> Result<Arc<dyn Op>> {
    match op {
        "if" => {
            attrs.only("if", &["then_branch", "else_branch"])?;
            let then_branch = Body::from_attr(registry, node, attrs, "then_branch")?;
            let else_branch = Body::from_attr(registry, node, attrs, "else_branch")?;
            Ok(Arc::new(If::new(then_branch, else_branch)?))
        }
        _ => registry.make(op, attrs),
    }
}

/// A body: its graph file and the registry that builds it. An op must be
/// `Send + Sync` and a [`Graph`] holds tensors, which are not, so the node
/// keeps the file and builds the graph each time it runs.
#[derive(Clone)]
pub struct Body {
    file: GraphFile,
    registry: OpRegistry,
    inputs: Vec<TypeInfo>,
    outputs: Vec<TypeInfo>,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Body({})", self.file.name)
    }
}

impl Body {
    /// The body in attr `key` of node `node`, its nodes renamed
    /// `node/key/…`, checked by building it once.
    fn from_attr(registry: &OpRegistry, node: &str, attrs: &Attrs, key: &str) -> Result<Body> {
        let v = attrs
            .0
            .get(key)
            .ok_or_else(|| Error::Attr(format!("attr '{key}' is required")))?;
        let mut file: GraphFile = serde_json::from_value(v.clone())
            .map_err(|e| Error::Attr(format!("attr '{key}': not a graph: {e}")))?;
        let prefix = format!("{node}/{key}/");
        for n in &mut file.nodes {
            if !n.name.starts_with(&prefix) {
                n.name = format!("{prefix}{}", n.name);
            }
        }
        let g = file
            .to_graph(None, registry)
            .map_err(|e| Error::Attr(format!("attr '{key}': {e}")))?;
        Ok(Body {
            inputs: g.inputs().map(|v| g.var(v).ty.clone()).collect(),
            outputs: g.outputs().iter().map(|&v| g.var(v).ty.clone()).collect(),
            file,
            registry: registry.clone(),
        })
    }

    /// The body's graph.
    pub fn graph(&self) -> Result<Graph> {
        self.file.to_graph(None, &self.registry)
    }

    /// The attr value: the graph file.
    fn attr(&self) -> serde_json::Value {
        serde_json::to_value(&self.file).unwrap_or_default()
    }
}

/// What two bodies' outputs have in common: the dtype must agree; a dim
/// they disagree on is unknown, and so is the rank if that differs.
fn join(a: &TypeInfo, b: &TypeInfo, k: usize) -> Result<TypeInfo> {
    if a.dtype != b.dtype {
        return dtype_err(format!(
            "op 'if': output {k} is {} in then_branch and {} in else_branch",
            a.dtype, b.dtype
        ));
    }
    let shape = match (&a.shape, &b.shape) {
        (Some(x), Some(y)) if x.len() == y.len() => Some(
            x.iter()
                .zip(y)
                .map(|(&p, &q)| if p == q { p } else { -1 })
                .collect(),
        ),
        _ => None,
    };
    Ok(TypeInfo::new(a.dtype, shape))
}

/// Checks `inputs` against a body's declared inputs.
fn check_inputs(op: &str, b: &Body, inputs: &[TypeInfo]) -> Result<()> {
    let want = &b.inputs;
    if want.len() != inputs.len() {
        return Err(Error::Arity(format!(
            "op '{op}': the body '{}' takes {} values, the node gives {}",
            b.file.name,
            want.len(),
            inputs.len()
        )));
    }
    for (k, (w, t)) in want.iter().zip(inputs).enumerate() {
        let fits = w.dtype == t.dtype
            && match (&w.shape, &t.shape) {
                (Some(ws), Some(ts)) => {
                    ws.len() == ts.len() && ws.iter().zip(ts).all(|(&a, &b)| a < 0 || b < 0 || a == b)
                }
                _ => true,
            };
        if !fits {
            return dtype_err(format!(
                "op '{op}': body input {k} is declared {} {}, the node gives {} {}",
                w.dtype,
                w.shape_string(),
                t.dtype,
                t.shape_string()
            ));
        }
    }
    Ok(())
}

/// A body's outputs as the node hands them out: none shares a buffer with
/// the node's inputs, the body's constants or an earlier output (the outer
/// graph may overwrite a node's result in place, and must not reach a
/// value it does not own through it).
fn owned(g: &Graph, inputs: &[Tensor], outs: Vec<Tensor>) -> Result<Vec<Tensor>> {
    let mut held: Vec<Tensor> = inputs.to_vec();
    for v in g.vars() {
        if let crate::graph::VarKind::Constant(t) | crate::graph::VarKind::Parameter(t) = &v.kind {
            held.push(t.clone());
        }
    }
    let mut result = Vec::with_capacity(outs.len());
    for t in outs {
        let t = if held.iter().any(|h| h.same_buffer(&t)) {
            t.deep_copy()?
        } else {
            t
        };
        held.push(t.clone());
        result.push(t);
    }
    Ok(result)
}

/// Runs `g` on `inputs` node by node (bodies are pure: the in-place pass
/// never rewrites them), with no listener.
pub fn run_plain(g: &Graph, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut vals: Vec<Option<Tensor>> = vec![None; g.vars().len()];
    let ins: Vec<usize> = g.inputs().collect();
    if ins.len() != inputs.len() {
        return Err(Error::Arity(format!(
            "graph '{}' takes {} inputs, got {}",
            g.name(),
            ins.len(),
            inputs.len()
        )));
    }
    for (&v, t) in ins.iter().zip(inputs) {
        vals[v] = Some(t.clone());
    }
    for (v, var) in g.vars().iter().enumerate() {
        if let crate::graph::VarKind::Constant(t) | crate::graph::VarKind::Parameter(t) = &var.kind {
            vals[v] = Some(t.clone());
        }
    }
    for node in g.nodes() {
        let args = node
            .inputs
            .iter()
            .map(|&v| {
                vals[v]
                    .clone()
                    .ok_or_else(|| Error::Graph(format!("'{}' has no value", g.var(v).name)))
            })
            .collect::<Result<Vec<_>>>()?;
        let outs = node
            .op
            .compute(&args, &mut OpCtx::new(&node.name))
            .map_err(|e| e.at_node(&node.name))?;
        for (&v, t) in node.outputs.iter().zip(outs) {
            vals[v] = Some(t);
        }
    }
    g.outputs()
        .iter()
        .map(|&v| {
            vals[v]
                .clone()
                .ok_or_else(|| Error::Graph(format!("output '{}' was not computed", g.var(v).name)))
        })
        .collect()
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

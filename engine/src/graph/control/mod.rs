//! Control flow: nodes that run graphs of their own (see
//! docs/graph-format.md, "Control flow"). A control node's graphs are
//! closed: every value a body reads from outside is one of the node's
//! inputs, so the destroy handler and the listeners of the outer graph see
//! every read, and a body is an ordinary [`Graph`] (validated, typed).
//!
//! - `if(cond, captured…)`: `then_branch` when the one-element bool `cond`
//!   is true, else `else_branch` ([`If`]).
//! - `loop(M, cond, v…, captured…)`: `body` run while the trip count and
//!   the condition allow, carrying `v` from one iteration to the next and
//!   stacking its other outputs ([`Loop`]).
//! - `scan(state…, xs…, captured…)`: `body` run once per slice of the
//!   scan inputs, carrying the state and stacking its other outputs
//!   ([`Scan`]).
//!
//! The graph loader builds these nodes ([`make`]), not an [`OpRegistry`]:
//! their bodies are graph files inside the node's attrs, built with the
//! loader's registry, and each body node is named after the outer node
//! (`If_1/then_branch/Add_3`, `Loop_0/body/Add`), so a finding inside a
//! body names both.
//!
//! A control op's `compute` runs its bodies node by node with no listener;
//! the executor instead runs it through [`Control::run`] with its own
//! listeners, so each body node is checked as an outer node is, in every
//! iteration.

mod if_op;
mod loop_op;
mod scan;

pub use if_op::If;
pub use loop_op::Loop;
pub use scan::Scan;

use std::sync::Arc;

use crate::error::{attr_err, dtype_err, shape_err, Error, Result};
use crate::graph::{Graph, GraphFile};
use crate::ops::{Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::{IndexSpec, Tensor};

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
    let any = op.as_control()?;
    if let Some(c) = any.downcast_ref::<If>() {
        return Some(c);
    }
    if let Some(c) = any.downcast_ref::<Loop>() {
        return Some(c);
    }
    any.downcast_ref::<Scan>().map(|c| c as &dyn Control)
}

/// The op names [`make`] builds.
pub const CONTROL_OPS: &[&str] = &["if", "loop", "scan"];

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
        "loop" => {
            attrs.only("loop", &["body", "carried"])?;
            let body = Body::from_attr(registry, node, attrs, "body")?;
            let carried = attrs
                .i64("carried")?
                .ok_or_else(|| Error::Attr("attr 'carried' is required".into()))?;
            Ok(Arc::new(Loop::new(body, count("carried", carried)?)?))
        }
        "scan" => {
            attrs.only("scan", &scan::ATTRS)?;
            let body = Body::from_attr(registry, node, attrs, "body")?;
            Ok(Arc::new(Scan::from_attrs(body, attrs)?))
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
    pub(crate) inputs: Vec<TypeInfo>,
    pub(crate) outputs: Vec<TypeInfo>,
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
    pub(crate) fn attr(&self) -> serde_json::Value {
        serde_json::to_value(&self.file).unwrap_or_default()
    }
}

/// What two types of one value have in common (a body's output and the
/// value it stands for): a dim they disagree on is unknown, and so is the
/// rank if that differs. The dtypes are the caller's to check.
pub(crate) fn join_shapes(a: &TypeInfo, b: &TypeInfo) -> TypeInfo {
    let shape = match (&a.shape, &b.shape) {
        (Some(x), Some(y)) if x.len() == y.len() => Some(
            x.iter()
                .zip(y)
                .map(|(&p, &q)| if p == q { p } else { -1 })
                .collect(),
        ),
        _ => None,
    };
    TypeInfo::new(a.dtype, shape)
}

/// Checks `inputs` against a body's declared inputs.
pub(crate) fn check_inputs(op: &str, b: &Body, inputs: &[TypeInfo]) -> Result<()> {
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
pub(crate) fn owned(g: &Graph, inputs: &[Tensor], outs: Vec<Tensor>) -> Result<Vec<Tensor>> {
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

/// A count attr (`carried`) as a usize.
fn count(key: &str, v: i64) -> Result<usize> {
    usize::try_from(v).or_else(|_| attr_err(format!("attr '{key}' must be >= 0, got {v}")))
}

/// A one-element value as a body input: `v` in the shape the body
/// declares for it (`[]` or `[1]`).
pub(crate) fn scalar_input<T: crate::dtype::Element>(declared: &TypeInfo, v: T) -> Result<Tensor> {
    match declared.static_shape() {
        Some(s) if s.iter().product::<usize>() == 1 => Tensor::from_vec(&s, vec![v]),
        _ => Tensor::from_vec(&[], vec![v]),
    }
}

/// `items` (one per iteration, all of one shape) stacked along a new axis
/// `axis` (counted in the result, negative from the end) into a new
/// buffer. With no items the shape is `ty`'s, unknown dims taken as 0.
pub(crate) fn stack(op: &str, k: usize, items: &[Tensor], axis: i64, ty: &TypeInfo) -> Result<Tensor> {
    let (dtype, shape): (_, Vec<usize>) = match items.first() {
        Some(t) => (t.dtype(), t.shape().to_vec()),
        None => (
            ty.dtype,
            ty.shape
                .iter()
                .flatten()
                .map(|&d| usize::try_from(d).unwrap_or(0))
                .collect(),
        ),
    };
    let r = shape.len() as i64 + 1;
    let ax = if axis < 0 { axis + r } else { axis };
    if !(0..r).contains(&ax) {
        return attr_err(format!(
            "op '{op}': output axis {axis} is out of range for rank {r}"
        ));
    }
    let mut full = vec![items.len()];
    full.extend(&shape);
    let out = Tensor::zeros(dtype, &full)?;
    for (i, t) in items.iter().enumerate() {
        if t.shape() != shape.as_slice() || t.dtype() != dtype {
            return shape_err(format!(
                "op '{op}': scan output {k} is {} {:?} in iteration {i} and {dtype} {shape:?} in the first",
                t.dtype(),
                t.shape()
            ));
        }
        let mut at = vec![IndexSpec::Point(i as i64)];
        at.extend(std::iter::repeat_n(IndexSpec::All, shape.len()));
        out.slice(&at)?.assign(t)?;
    }
    if ax == 0 {
        return Ok(out);
    }
    let mut perm: Vec<usize> = (1..r as usize).collect();
    perm.insert(ax as usize, 0);
    out.permute(&perm)?.deep_copy()
}

/// Element `i` of `x` along `axis` (a view, one rank less).
pub(crate) fn slice_at(x: &Tensor, axis: usize, i: usize) -> Result<Tensor> {
    let mut at: Vec<IndexSpec> = std::iter::repeat_n(IndexSpec::All, axis).collect();
    at.push(IndexSpec::Point(i as i64));
    x.slice(&at)
}

/// The one element of `t`, or `None` when `t` is empty (an input given as
/// absent).
pub(crate) fn optional_scalar<T: crate::dtype::Element + Copy>(
    op: &str,
    what: &str,
    t: &Tensor,
) -> Result<Option<T>> {
    match t.size() {
        0 => Ok(None),
        1 => Ok(t.to_array::<T>()?.iter().next().copied()),
        n => shape_err(format!(
            "op '{op}': {what} must have one element (or none), got {n}"
        )),
    }
}

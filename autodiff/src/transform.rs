//! `grad`: a graph in, the same graph plus gradient nodes out. The
//! backward nodes are built pure (no in-place ops), so the in-place pass
//! can rewrite them like any other nodes.

use std::collections::HashMap;

use vigil_engine::graph::{Graph, GraphBuilder, Sym, VarKind};
use vigil_engine::{inplace, Attrs, OpRegistry};

use crate::error::{AutodiffError, Result};
use crate::registry::{GradCtx, GradRegistry};
use crate::rules::{broadcast_like, scalar};

/// The prefix of gradient outputs: `grad:<variable>`.
pub const GRAD_PREFIX: &str = "grad:";

/// The name of the output holding the gradient of `var`.
pub fn grad_name(var: &str) -> String {
    format!("{GRAD_PREFIX}{var}")
}

/// Reverse-mode differentiation with a chosen op and rule registry (for
/// users' own ops).
#[derive(Clone)]
pub struct Autodiff {
    ops: OpRegistry,
    rules: GradRegistry,
}

impl Default for Autodiff {
    fn default() -> Self {
        Autodiff::new(OpRegistry::builtin(), GradRegistry::builtin())
    }
}

/// `graph` (made pure) with the gradient of scalar `loss` with respect to
/// each variable in `wrt` as output `grad:<name>`, after the graph's own
/// outputs (and `loss`, added when it is not one).
pub fn grad(graph: &Graph, loss: &str, wrt: &[&str]) -> Result<Graph> {
    Autodiff::default().grad(graph, loss, wrt)
}

impl Autodiff {
    pub fn new(ops: OpRegistry, rules: GradRegistry) -> Autodiff {
        Autodiff { ops, rules }
    }

    /// See [`grad`].
    pub fn grad(&self, graph: &Graph, loss: &str, wrt: &[&str]) -> Result<Graph> {
        let g = inplace::purify(graph)?;
        let var = |name: &str| {
            g.var_id(name).ok_or_else(|| AutodiffError::UnknownVariable {
                graph: g.name().to_string(),
                name: name.to_string(),
            })
        };
        let loss_id = var(loss)?;
        let lt = &g.var(loss_id).ty;
        if !lt.dtype.is_float() || lt.static_shape().is_none_or(|s| s.iter().product::<usize>() != 1) {
            return Err(AutodiffError::LossNotScalar {
                name: loss.to_string(),
                ty: format!("{} {}", lt.dtype, lt.shape_string()),
            });
        }
        let mut wanted = vec![false; g.vars().len()];
        for &w in wrt {
            let id = var(w)?;
            if !g.var(id).ty.dtype.is_float() {
                return Err(AutodiffError::NotFloat {
                    name: w.to_string(),
                    dtype: g.var(id).ty.dtype.to_string(),
                });
            }
            wanted[id] = true;
        }
        // Variables that depend on a wanted one through float values.
        let mut reaches = wanted.clone();
        for n in g.nodes() {
            if n.inputs.iter().any(|&v| reaches[v]) {
                for &o in &n.outputs {
                    reaches[o] = g.var(o).ty.dtype.is_float();
                }
            }
        }
        let b = GraphBuilder::from_graph_with_registry(&g, self.ops.clone());
        let sym = |id: usize| {
            b.var(&g.var(id).name).ok_or_else(|| AutodiffError::Rule {
                node: g.var(id).name.clone(),
                msg: "variable missing from the builder".into(),
            })
        };
        let mut parts: HashMap<usize, Vec<Sym>> = HashMap::new();
        let seed_ctx = GradCtx {
            builder: &b,
            node: loss,
            attrs: Attrs::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            grads: Vec::new(),
            needs: Vec::new(),
        };
        let loss_sym = sym(loss_id)?;
        let one = scalar(&seed_ctx, lt.dtype, 1.0)?;
        parts.insert(loss_id, vec![broadcast_like(&seed_ctx, &one, &loss_sym)?]);
        for node in g.nodes().iter().rev() {
            let needs: Vec<bool> = node.inputs.iter().map(|&v| reaches[v]).collect();
            if !needs.contains(&true) || !node.outputs.iter().any(|o| parts.contains_key(o)) {
                continue;
            }
            let grads = node
                .outputs
                .iter()
                .map(|o| parts.remove(o).map(|p| total(&p)).transpose())
                .collect::<Result<Vec<_>>>()?;
            let op = node.op.name();
            let rule = self.rules.get(op).ok_or_else(|| AutodiffError::NoRule {
                node: node.name.clone(),
                op: op.to_string(),
            })?;
            let ctx = GradCtx {
                builder: &b,
                node: &node.name,
                attrs: node.op.attrs(),
                inputs: node.inputs.iter().map(|&v| sym(v)).collect::<Result<_>>()?,
                outputs: node.outputs.iter().map(|&v| sym(v)).collect::<Result<_>>()?,
                grads,
                needs: needs.clone(),
            };
            let dx = rule(&ctx)?;
            if dx.len() != node.inputs.len() {
                return Err(ctx.error(format!(
                    "the gradient rule of '{op}' returned {} gradients for {} inputs",
                    dx.len(),
                    node.inputs.len()
                )));
            }
            for ((&v, d), need) in node.inputs.iter().zip(dx).zip(needs) {
                if let (Some(d), true) = (d, need) {
                    parts.entry(v).or_default().push(d);
                }
            }
        }
        // One output per wanted variable, named grad:<name>.
        let mut outs: Vec<Sym> = g.outputs().iter().map(|&v| sym(v)).collect::<Result<_>>()?;
        if !g.is_output(loss_id) {
            outs.push(loss_sym);
        }
        let mut renames: Vec<(String, String)> = Vec::new();
        for &w in wrt {
            let id = var(w)?;
            let name = grad_name(w);
            let d = match parts.get(&id) {
                Some(p) => total(p)?,
                None => crate::rules::zeros_like(&seed_ctx, &sym(id)?)?,
            };
            let fresh = g.var_id(d.name()).is_none() && !renames.iter().any(|(from, _)| from == d.name());
            if fresh {
                renames.push((d.name().to_string(), name.clone()));
                outs.push(d);
            } else {
                outs.push(b.apply_named(&name, "copy", &[&d], Attrs::new())?.remove(0));
            }
        }
        let refs: Vec<&Sym> = outs.iter().collect();
        let built = b.build(&refs)?;
        Ok(rename(&built, &renames)?)
    }
}

/// The sum of a variable's gradient contributions.
fn total(parts: &[Sym]) -> Result<Sym> {
    let mut it = parts.iter();
    let first = it.next().cloned().ok_or_else(|| AutodiffError::Rule {
        node: String::new(),
        msg: "no gradient contributions".into(),
    })?;
    it.try_fold(first, |acc, p| Ok(acc.add(p)?))
}

/// `g` with node-output variables renamed (`(from, to)` pairs).
fn rename(g: &Graph, renames: &[(String, String)]) -> vigil_engine::Result<Graph> {
    if renames.is_empty() {
        return Ok(g.clone());
    }
    let map: HashMap<&str, &str> = renames.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let fix = |n: &mut String| {
        if let Some(&to) = map.get(n.as_str()) {
            *n = to.to_string();
        }
    };
    let (sources, mut specs, mut outputs) = g.to_specs();
    debug_assert!(sources.iter().all(|s| !matches!(s.kind, VarKind::Output { .. })));
    for s in &mut specs {
        s.inputs.iter_mut().for_each(fix);
        s.outputs.iter_mut().for_each(fix);
    }
    outputs.iter_mut().for_each(fix);
    Graph::new(g.name(), sources, specs, &outputs)
}

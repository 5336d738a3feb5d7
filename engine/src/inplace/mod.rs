//! The in-place pass: graphs are built pure, and this pass substitutes
//! in-place twins where the destroy handler allows it (seed 004's approach).
//!
//! It walks nodes in order. For each op with in-place variants it tries each
//! variant (each one destroys a different input) and takes the first that
//! breaks no rule. Checks are incremental: roots never change under the
//! rewrite, destroyed roots are a set, and the ordering constraints live in a
//! dynamic topological order, so each candidate costs time proportional to
//! what it touches rather than to the graph.

mod topo;

use std::collections::HashMap;

use serde::Serialize;

use crate::destroy::{DestroyHandler, Rule};
use crate::error::Result;
use crate::graph::{Graph, NodeId, VarId, VarKind};
use crate::ops::{InplaceVariant, TypeInfo};
pub use topo::DynTopo;

/// Why a candidate was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// A destroy-handler rule.
    Rule { rule: Rule, message: String },
    /// The destroyed input cannot hold the output (dtype or shape differ, or
    /// a dynamic dimension makes it unprovable).
    Type { message: String },
}

impl Refusal {
    pub fn message(&self) -> &str {
        match self {
            Refusal::Rule { message, .. } | Refusal::Type { message } => message,
        }
    }
    /// The stable name: a rule name, or `type`.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Rule { rule, .. } => rule.name(),
            Refusal::Type { .. } => "type",
        }
    }
}

/// One way the pass tried to run a node in place.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    /// The in-place op tried.
    pub op: String,
    /// The pure node's input slot it would destroy, and that variable.
    pub input: usize,
    pub var: String,
    pub accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refusal>,
}

/// What the pass did with one node that has in-place variants.
#[derive(Clone, Debug, Serialize)]
pub struct Decision {
    pub node: String,
    pub op: String,
    /// The in-place op substituted, if any.
    pub rewritten_to: Option<String>,
    pub candidates: Vec<Candidate>,
}

/// One accepted substitution: node `node` of the pure graph runs as
/// `variant`, destroying its input `input` (the variable `var`).
#[derive(Clone)]
pub struct Rewrite {
    pub node: NodeId,
    pub node_name: String,
    pub variant: InplaceVariant,
    pub input: usize,
    pub var: String,
}

impl std::fmt::Debug for Rewrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} -> {} (destroys '{}')",
            self.node_name,
            self.variant.op.name(),
            self.var
        )
    }
}

/// The rewritten graph, every decision, and the accepted rewrites (which
/// [`apply`] can replay in part).
pub struct PassResult {
    pub graph: Graph,
    pub decisions: Vec<Decision>,
    pub rewrites: Vec<Rewrite>,
}

impl PassResult {
    pub fn accepted(&self) -> usize {
        self.decisions.iter().filter(|d| d.rewritten_to.is_some()).count()
    }
}

/// Checks that the destroyed input can hold the output: same dtype, same
/// shape, and no dynamic dimension that another operand could broadcast
/// past.
fn fits(input: &TypeInfo, output: &TypeInfo, others: &[&TypeInfo]) -> std::result::Result<(), String> {
    if input.dtype != output.dtype {
        return Err(format!("input is {}, output is {}", input.dtype, output.dtype));
    }
    let (Some(si), Some(so)) = (&input.shape, &output.shape) else {
        return Err("shape unknown before running".into());
    };
    if si != so {
        return Err(format!(
            "input shape {} differs from output {}",
            input.shape_string(),
            output.shape_string()
        ));
    }
    for (d, &x) in si.iter().enumerate() {
        if x >= 0 {
            continue;
        }
        for o in others {
            let Some(s) = &o.shape else {
                return Err("an operand's shape is unknown".into());
            };
            let lead = si.len() as isize - s.len() as isize;
            let k = d as isize - lead;
            if k >= 0 && s.get(k as usize).is_some_and(|&y| y != 1) {
                return Err(format!(
                    "dimension {d} is dynamic; the output may be larger than the input"
                ));
            }
        }
    }
    Ok(())
}

struct Pass<'g> {
    g: &'g Graph,
    dh: DestroyHandler<'g>,
    topo: DynTopo,
    destroyed: HashMap<VarId, NodeId>,
}

impl Pass<'_> {
    /// The first rule `node` would break by destroying input `slot` as
    /// variant `v` does, or the readers it must come after.
    fn try_variant(
        &mut self,
        id: NodeId,
        v: &InplaceVariant,
    ) -> std::result::Result<(usize, Vec<NodeId>), Refusal> {
        let g = self.g;
        let node = g.node(id);
        let Some(order) = v.order(node.inputs.len()) else {
            return Err(Refusal::Type {
                message: format!("'{}' lists inputs {:?}", v.op.name(), v.inputs),
            });
        };
        let Some(&(dout, destroyed_slot)) = v.op.destroy_map().first() else {
            return Err(Refusal::Type {
                message: format!("'{}' declares no destroy", v.op.name()),
            });
        };
        let (Some(&slot), Some(_)) = (order.get(destroyed_slot), node.outputs.get(dout)) else {
            return Err(Refusal::Type {
                message: format!("'{}' destroy_map is out of range", v.op.name()),
            });
        };
        let var = node.inputs[slot];
        let name = |x: VarId| g.var(x).name.as_str();
        // Types: the variant must accept the permuted inputs, and the
        // destroyed input must hold the output.
        let tys: Vec<TypeInfo> = order.iter().map(|&i| g.var(node.inputs[i]).ty.clone()).collect();
        let out_ty = &g.var(node.outputs[dout]).ty;
        match v.op.infer(&tys) {
            Ok(t) if t.iter().zip(&node.outputs).all(|(t, &o)| *t == g.var(o).ty) => {}
            Ok(_) => {
                return Err(Refusal::Type {
                    message: format!("'{}' infers a different output type", v.op.name()),
                })
            }
            Err(e) => {
                return Err(Refusal::Type {
                    message: e.to_string(),
                })
            }
        }
        let others: Vec<&TypeInfo> = node
            .inputs
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != slot)
            .map(|(_, &x)| &g.var(x).ty)
            .collect();
        fits(&g.var(var).ty, out_ty, &others).map_err(|message| Refusal::Type { message })?;

        if let Some(n) = self.read_only_view(var) {
            return Err(Refusal::Type {
                message: format!(
                    "'{}' is a read-only view (from '{}' of node '{}')",
                    name(var),
                    g.node(n).op.name(),
                    g.node(n).name
                ),
            });
        }
        let root = self.dh.root(var);
        let rule = |rule: Rule, message: String| Refusal::Rule { rule, message };
        // a. protected
        // Parameters are state: only explicit in-place updates in the graph
        // may overwrite them, never a rewrite of a pure read.
        let protected = match g.var(root).kind {
            VarKind::Constant(_) => Some("constant"),
            VarKind::Input { mutable: false } => Some("protected input"),
            VarKind::Parameter(_) => Some("parameter"),
            _ => None,
        };
        if let Some(what) = protected {
            let message = if var == root {
                format!("'{}' is a {what}", name(var))
            } else {
                format!("'{}' is a view of {what} '{}'", name(var), name(root))
            };
            return Err(rule(Rule::Protected, message));
        }
        if let Some(&w) = self.dh.views_of(root).iter().find(|&&w| g.is_output(w)) {
            return Err(rule(
                Rule::Protected,
                format!("graph output '{}' shares '{}'", name(w), name(var)),
            ));
        }
        // b. another destroyer
        if let Some(&other) = self.destroyed.get(&root) {
            return Err(rule(
                Rule::TwoDestroyers,
                format!("node '{}' already destroys '{}'", g.node(other).name, name(root)),
            ));
        }
        // c. reading a view of the destroyed root on another input
        for (j, &w) in node.inputs.iter().enumerate() {
            if j == slot || self.dh.root(w) != root {
                continue;
            }
            if w == var && v.op.tolerates_same_input() {
                continue;
            }
            return Err(rule(
                Rule::ReadsDestroyed,
                format!(
                    "input {j} '{}' is a view of the destroyed '{}'",
                    name(w),
                    name(root)
                ),
            ));
        }
        // d. every other reader of the root's views must run first
        let mut before = Vec::new();
        for &w in self.dh.views_of(root) {
            for &r in g.readers(w) {
                if r == id {
                    continue;
                }
                if self.topo.reaches(id, r) {
                    return Err(rule(
                        Rule::Cycle,
                        format!(
                            "node '{}' reads '{}' but depends on this node's output",
                            g.node(r).name,
                            name(w)
                        ),
                    ));
                }
                before.push(r);
            }
        }
        Ok((slot, before))
    }
}

impl Pass<'_> {
    /// The node whose view makes `v` unwritable (a broadcast somewhere on
    /// the view chain from `v` to its root), if any.
    fn read_only_view(&self, mut v: VarId) -> Option<NodeId> {
        while let Some((n, k)) = self.g.producer(v) {
            let op = &self.g.node(n).op;
            let &(_, i) = op.view_map().iter().find(|&&(o, _)| o == k)?;
            if !op.writable_views() {
                return Some(n);
            }
            v = self.g.node(n).inputs[i];
        }
        None
    }
}

/// Runs the in-place pass on `g`.
pub fn run(g: &Graph) -> Result<PassResult> {
    let dh = DestroyHandler::new(g);
    let order = dh.validate()?;
    let mut edges: Vec<(NodeId, NodeId)> = dh.orderings();
    for (id, n) in g.nodes().iter().enumerate() {
        for &v in &n.inputs {
            if let Some((p, _)) = g.producer(v) {
                edges.push((p, id));
            }
        }
    }
    let mut destroyed = HashMap::new();
    for (id, n) in g.nodes().iter().enumerate() {
        for (_, i) in n.op.destroy_map() {
            if let Some(&v) = n.inputs.get(i) {
                destroyed.insert(dh.root(v), id);
            }
        }
    }
    let topo = DynTopo::new(&order, edges);
    let mut pass = Pass {
        g,
        dh,
        topo,
        destroyed,
    };
    let mut decisions = Vec::new();
    let mut rewrites: Vec<Rewrite> = Vec::new();
    for &id in &order {
        let node = g.node(id);
        let variants = node.op.inplace_variants();
        if variants.is_empty() {
            continue;
        }
        let mut d = Decision {
            node: node.name.clone(),
            op: node.op.name().to_string(),
            rewritten_to: None,
            candidates: Vec::new(),
        };
        for v in variants {
            let destroyed = v.op.destroy_map().first().map(|&(_, i)| i).unwrap_or(0);
            let slot_hint = v
                .order(node.inputs.len())
                .and_then(|o| o.get(destroyed).copied())
                .unwrap_or(0);
            let var_name = node
                .inputs
                .get(slot_hint)
                .map(|&x| g.var(x).name.clone())
                .unwrap_or_default();
            if d.rewritten_to.is_some() {
                break;
            }
            match pass.try_variant(id, &v) {
                Ok((slot, before)) => {
                    for r in before {
                        let added = pass.topo.add_edge(r, id);
                        debug_assert!(added, "checked acyclic");
                    }
                    pass.destroyed.insert(pass.dh.root(node.inputs[slot]), id);
                    d.rewritten_to = Some(v.op.name().to_string());
                    d.candidates.push(Candidate {
                        op: v.op.name().to_string(),
                        input: slot,
                        var: var_name.clone(),
                        accepted: true,
                        refused: None,
                    });
                    rewrites.push(Rewrite {
                        node: id,
                        node_name: node.name.clone(),
                        variant: v,
                        input: slot,
                        var: g.var(node.inputs[slot]).name.clone(),
                    });
                }
                Err(refusal) => d.candidates.push(Candidate {
                    op: v.op.name().to_string(),
                    input: slot_hint,
                    var: var_name,
                    accepted: false,
                    refused: Some(refusal),
                }),
            }
        }
        decisions.push(d);
    }
    let graph = apply(g, &rewrites)?;
    Ok(PassResult {
        graph,
        decisions,
        rewrites,
    })
}

/// `g` with only `rewrites` applied (any subset of what [`run`] accepted
/// on `g`: a subset of a legal set of rewrites is legal, since dropping a
/// destroy only removes ordering constraints). Bisection uses it to find
/// the rewrite that breaks a run.
pub fn apply(g: &Graph, rewrites: &[Rewrite]) -> Result<Graph> {
    let (sources, mut specs, outputs) = g.to_specs();
    for r in rewrites {
        let Some(spec) = specs.get_mut(r.node) else {
            return Err(crate::error::Error::Graph(format!(
                "rewrite of node '{}': graph '{}' has no node {}",
                r.node_name,
                g.name(),
                r.node
            )));
        };
        let old = spec.inputs.clone();
        let Some(order) = r.variant.order(old.len()) else {
            return Err(crate::error::Error::node(
                &r.node_name,
                crate::error::Error::Graph(format!(
                    "in-place variant '{}' does not fit the node's inputs",
                    r.variant.op.name()
                )),
            ));
        };
        spec.inputs = order.iter().map(|&i| old[i].clone()).collect();
        spec.op = r.variant.op.clone();
    }
    Graph::new(g.name(), sources, specs, &outputs)
}

/// `g` with every in-place op replaced by its pure twin (same inputs, no
/// destroy): the reference DebugMode compares an in-place run against. An
/// in-place op without a declared twin is refused, naming the node.
pub fn purify(g: &Graph) -> Result<Graph> {
    let (sources, mut specs, outputs) = g.to_specs();
    for spec in &mut specs {
        if spec.op.destroy_map().is_empty() {
            continue;
        }
        match spec.op.pure_twin() {
            Some(twin) => spec.op = twin,
            None => {
                return Err(crate::error::Error::node(
                    &spec.name,
                    crate::error::Error::Graph(format!(
                        "in-place op '{}' declares no pure twin",
                        spec.op.name()
                    )),
                ))
            }
        }
    }
    Graph::new(g.name(), sources, specs, &outputs)
}

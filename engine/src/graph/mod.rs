//! SSA graphs: variables (graph inputs, constants, parameters and node
//! outputs) and nodes (an op applied to variables). Every constructor
//! validates: names are unique, every input is defined, there is no cycle,
//! and every op accepts its inputs' dtypes and shapes.

mod builder;
pub mod control;
mod json;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

pub use builder::{GraphBuilder, Sym};
pub use json::{GraphFile, InputDecl, NodeDecl, ValueDecl, FORMAT, SOURCE_ATTR};

use crate::error::{Error, Result};
use crate::ops::{check_arity, Attrs, Op, TypeInfo};
use crate::tensor::Tensor;

pub type VarId = usize;
pub type NodeId = usize;

/// Where a variable's value comes from.
#[derive(Clone, Debug)]
pub enum VarKind {
    /// Fed by the caller. Protected (never destroyed) unless `mutable`.
    Input { mutable: bool },
    /// A fixed value. Always protected.
    Constant(Tensor),
    /// State with an initial value (weights); may be updated in place.
    Parameter(Tensor),
    /// Output `index` of node `node`.
    Output { node: NodeId, index: usize },
}

/// A named value of the graph.
#[derive(Clone, Debug)]
pub struct Var {
    pub name: String,
    pub ty: TypeInfo,
    pub kind: VarKind,
}

/// An op applied to input variables, defining output variables.
#[derive(Clone)]
pub struct Node {
    pub name: String,
    pub op: Arc<dyn Op>,
    pub inputs: Vec<VarId>,
    pub outputs: Vec<VarId>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Node({} = {}{:?})", self.name, self.op.name(), self.inputs)
    }
}

/// A validated graph. Nodes are stored in a topological order.
#[derive(Clone, Debug)]
pub struct Graph {
    name: String,
    vars: Vec<Var>,
    nodes: Vec<Node>,
    outputs: Vec<VarId>,
    var_ids: HashMap<String, VarId>,
    readers: Vec<Vec<NodeId>>,
}

/// A node before validation: names instead of ids.
#[derive(Clone)]
pub struct NodeSpec {
    pub name: String,
    pub op: Arc<dyn Op>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

/// A non-node variable before validation.
#[derive(Clone, Debug)]
pub struct VarSpec {
    pub name: String,
    pub ty: TypeInfo,
    pub kind: VarKind,
}

impl Graph {
    /// Builds and validates a graph from named parts. Nodes may come in any
    /// order; they are sorted topologically (ties keep the given order).
    pub fn new(name: &str, sources: Vec<VarSpec>, specs: Vec<NodeSpec>, outputs: &[String]) -> Result<Graph> {
        let mut var_ids: HashMap<String, VarId> = HashMap::new();
        let mut defined_by: HashMap<String, String> = HashMap::new();
        let mut vars = Vec::new();
        for s in sources {
            let what = match s.kind {
                VarKind::Input { .. } => "an input",
                VarKind::Constant(_) => "a constant",
                VarKind::Parameter(_) => "a parameter",
                VarKind::Output { .. } => "a node output",
            };
            if let Some(prev) = defined_by.insert(s.name.clone(), what.to_string()) {
                return Err(Error::Graph(format!(
                    "variable '{}' is defined twice ({prev} and {what})",
                    s.name
                )));
            }
            if s.ty.rank().is_some_and(|r| r > crate::tensor::limit::MAX_RANK) {
                return Err(Error::Graph(format!(
                    "variable '{}' has rank above {}",
                    s.name,
                    crate::tensor::limit::MAX_RANK
                )));
            }
            if let Some(shape) = &s.ty.static_shape() {
                crate::tensor::limit::numel(shape).map_err(|_| {
                    Error::Shape(format!(
                        "variable '{}': shape {shape:?} has too many elements",
                        s.name
                    ))
                })?;
            }
            if let VarKind::Constant(t) | VarKind::Parameter(t) = &s.kind {
                if !s.ty.admits(t.shape()) || s.ty.dtype != t.dtype() {
                    return Err(Error::Graph(format!(
                        "variable '{}': value is {} {:?}, declared {} {}",
                        s.name,
                        t.dtype(),
                        t.shape(),
                        s.ty.dtype,
                        s.ty.shape_string()
                    )));
                }
            }
            var_ids.insert(s.name.clone(), vars.len());
            vars.push(Var {
                name: s.name,
                ty: s.ty,
                kind: s.kind,
            });
        }
        // Output names of nodes, checked for duplicates.
        let mut node_names: HashMap<&str, usize> = HashMap::new();
        let mut producer: HashMap<&str, usize> = HashMap::new();
        for (i, n) in specs.iter().enumerate() {
            if node_names.insert(&n.name, i).is_some() {
                return Err(Error::Graph(format!("node '{}' is defined twice", n.name)));
            }
            if n.outputs.len() != n.op.num_outputs() {
                return Err(Error::node(
                    &n.name,
                    Error::Graph(format!(
                        "op '{}' has {} outputs, the node names {}",
                        n.op.name(),
                        n.op.num_outputs(),
                        n.outputs.len()
                    )),
                ));
            }
            for o in &n.outputs {
                let what = format!("output of node '{}'", n.name);
                if let Some(prev) = defined_by.insert(o.clone(), what.clone()) {
                    return Err(Error::Graph(format!(
                        "variable '{o}' is defined twice ({prev} and {what})"
                    )));
                }
                producer.insert(o, i);
            }
        }
        // Dependencies between specs; unknown inputs are errors.
        let mut deps: Vec<Vec<usize>> = vec![Vec::new(); specs.len()];
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); specs.len()];
        for (i, n) in specs.iter().enumerate() {
            check_arity(n.op.as_ref(), n.inputs.len()).map_err(|e| e.at_node(&n.name))?;
            for inp in &n.inputs {
                if let Some(&p) = producer.get(inp.as_str()) {
                    deps[i].push(p);
                    users[p].push(i);
                } else if !var_ids.contains_key(inp) {
                    return Err(Error::node(
                        &n.name,
                        Error::Graph(format!("input '{inp}' is not defined")),
                    ));
                }
            }
        }
        let order = topo_order(&deps, &users).map_err(|stuck| {
            let names: Vec<String> = stuck
                .iter()
                .take(6)
                .map(|&i| format!("'{}'", specs[i].name))
                .collect();
            Error::Graph(format!("nodes {} form a cycle", names.join(", ")))
        })?;
        // Add nodes in order, inferring output types.
        let mut nodes = Vec::with_capacity(specs.len());
        for &i in &order {
            let s = &specs[i];
            let inputs: Vec<VarId> = s.inputs.iter().map(|n| var_ids[n]).collect();
            let tys: Vec<TypeInfo> = inputs.iter().map(|&v| vars[v].ty.clone()).collect();
            let out_tys = s.op.infer(&tys).map_err(|e| e.at_node(&s.name))?;
            if out_tys.len() != s.outputs.len() {
                return Err(Error::node(
                    &s.name,
                    Error::Graph(format!("op '{}' inferred {} outputs", s.op.name(), out_tys.len())),
                ));
            }
            let id = nodes.len();
            let mut outputs = Vec::with_capacity(out_tys.len());
            for (k, (o, mut ty)) in s.outputs.iter().zip(out_tys).enumerate() {
                // Only constants carry values; an op's output is computed.
                ty.value = None;
                if ty.rank().is_some_and(|r| r > crate::tensor::limit::MAX_RANK) {
                    return Err(Error::node(
                        &s.name,
                        Error::Rank(format!(
                            "output '{o}' has rank above {}",
                            crate::tensor::limit::MAX_RANK
                        )),
                    ));
                }
                var_ids.insert(o.clone(), vars.len());
                outputs.push(vars.len());
                vars.push(Var {
                    name: o.clone(),
                    ty,
                    kind: VarKind::Output { node: id, index: k },
                });
            }
            nodes.push(Node {
                name: s.name.clone(),
                op: s.op.clone(),
                inputs,
                outputs,
            });
        }
        for (i, o) in outputs.iter().enumerate() {
            if outputs[..i].contains(o) {
                return Err(Error::Graph(format!("graph output '{o}' is listed twice")));
            }
        }
        let outputs = outputs
            .iter()
            .map(|o| {
                var_ids
                    .get(o)
                    .copied()
                    .ok_or_else(|| Error::Graph(format!("graph output '{o}' is not defined")))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut readers = vec![Vec::new(); vars.len()];
        for (id, n) in nodes.iter().enumerate() {
            for &v in &n.inputs {
                if readers[v].last() != Some(&id) {
                    readers[v].push(id);
                }
            }
        }
        Ok(Graph {
            name: name.to_string(),
            vars,
            nodes,
            outputs,
            var_ids,
            readers,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn vars(&self) -> &[Var] {
        &self.vars
    }
    pub fn var(&self, id: VarId) -> &Var {
        &self.vars[id]
    }
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }
    pub fn outputs(&self) -> &[VarId] {
        &self.outputs
    }
    pub fn var_id(&self, name: &str) -> Option<VarId> {
        self.var_ids.get(name).copied()
    }
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name)
    }
    /// Nodes that read `v`, in node order, each once.
    pub fn readers(&self, v: VarId) -> &[NodeId] {
        &self.readers[v]
    }
    /// The graph inputs, in declaration order.
    pub fn inputs(&self) -> impl Iterator<Item = VarId> + '_ {
        (0..self.vars.len()).filter(|&v| matches!(self.vars[v].kind, VarKind::Input { .. }))
    }
    /// The node and output slot that define `v`, if a node does.
    pub fn producer(&self, v: VarId) -> Option<(NodeId, usize)> {
        match self.vars[v].kind {
            VarKind::Output { node, index } => Some((node, index)),
            _ => None,
        }
    }
    pub fn is_output(&self, v: VarId) -> bool {
        self.outputs.contains(&v)
    }
    /// Constants, non-mutable inputs and graph outputs must never be destroyed.
    pub fn is_protected(&self, v: VarId) -> bool {
        let fixed = match self.vars[v].kind {
            VarKind::Input { mutable } => !mutable,
            VarKind::Constant(_) => true,
            _ => false,
        };
        fixed || self.is_output(v)
    }

    /// The named parts of this graph, for rebuilding it with changes.
    pub fn to_specs(&self) -> (Vec<VarSpec>, Vec<NodeSpec>, Vec<String>) {
        let sources = self
            .vars
            .iter()
            .filter(|v| !matches!(v.kind, VarKind::Output { .. }))
            .map(|v| VarSpec {
                name: v.name.clone(),
                ty: v.ty.clone(),
                kind: v.kind.clone(),
            })
            .collect();
        let nodes = self
            .nodes
            .iter()
            .map(|n| NodeSpec {
                name: n.name.clone(),
                op: n.op.clone(),
                inputs: n.inputs.iter().map(|&v| self.vars[v].name.clone()).collect(),
                outputs: n.outputs.iter().map(|&v| self.vars[v].name.clone()).collect(),
            })
            .collect();
        let outputs = self.outputs.iter().map(|&v| self.vars[v].name.clone()).collect();
        (sources, nodes, outputs)
    }

    /// The attrs of node `id`'s op.
    pub fn attrs(&self, id: NodeId) -> Attrs {
        self.nodes[id].op.attrs()
    }
}

/// Kahn's algorithm with the smallest index first among ready items, so the
/// order is deterministic and keeps the given order where it can. On a cycle,
/// returns the items that could not be ordered.
pub fn topo_order(deps: &[Vec<usize>], users: &[Vec<usize>]) -> std::result::Result<Vec<usize>, Vec<usize>> {
    let n = deps.len();
    let mut pending: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut ready: BinaryHeap<Reverse<usize>> = (0..n).filter(|&i| pending[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &u in &users[i] {
            pending[u] -= 1;
            if pending[u] == 0 {
                ready.push(Reverse(u));
            }
        }
    }
    if order.len() == n {
        Ok(order)
    } else {
        Err((0..n).filter(|&i| pending[i] > 0).collect())
    }
}

//! The destroy handler: from declared view_maps and destroy_maps it finds
//! each variable's root (following view_map), orders every destroyer after
//! the other readers of its root's views, and refuses inconsistent graphs.
//!
//! Roots are variables, not physical buffers: the output of an in-place op is
//! a new root even though it reuses its input's buffer, so chains such as
//! `neg_inplace(relu_inplace(t))` are legal.

use std::collections::HashMap;

use crate::error::{Error, Result};
/// The rules and their violations are error data (see [`Error::Rules`]).
pub use crate::error::{Rule, Violation};
use crate::graph::{topo_order, Graph, NodeId, VarId, VarKind};

/// View trees and destroyers of a graph.
pub struct DestroyHandler<'g> {
    g: &'g Graph,
    root: Vec<VarId>,
    tree: HashMap<VarId, Vec<VarId>>,
    /// root → (destroying node, destroyed variable)
    destroyers: HashMap<VarId, Vec<(NodeId, VarId)>>,
}

impl<'g> DestroyHandler<'g> {
    pub fn new(g: &'g Graph) -> DestroyHandler<'g> {
        let mut root: Vec<VarId> = (0..g.vars().len()).collect();
        for n in g.nodes() {
            for (o, i) in n.op.view_map() {
                if let (Some(&out), Some(&inp)) = (n.outputs.get(o), n.inputs.get(i)) {
                    root[out] = root[inp];
                }
            }
        }
        let mut tree: HashMap<VarId, Vec<VarId>> = HashMap::new();
        for (v, &r) in root.iter().enumerate() {
            tree.entry(r).or_default().push(v);
        }
        let mut destroyers: HashMap<VarId, Vec<(NodeId, VarId)>> = HashMap::new();
        for (id, n) in g.nodes().iter().enumerate() {
            for (_, i) in n.op.destroy_map() {
                if let Some(&v) = n.inputs.get(i) {
                    destroyers.entry(root[v]).or_default().push((id, v));
                }
            }
        }
        DestroyHandler {
            g,
            root,
            tree,
            destroyers,
        }
    }

    /// The variable whose buffer `v` views (itself if it is no view).
    pub fn root(&self, v: VarId) -> VarId {
        self.root[v]
    }

    /// Every variable whose root is `r`, `r` included.
    pub fn views_of(&self, r: VarId) -> &[VarId] {
        self.tree.get(&r).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The nodes that destroy root `r`, with the variable each destroys.
    pub fn destroyers_of(&self, r: VarId) -> &[(NodeId, VarId)] {
        self.destroyers.get(&r).map(Vec::as_slice).unwrap_or(&[])
    }

    fn name(&self, v: VarId) -> &str {
        &self.g.var(v).name
    }

    fn node(&self, n: NodeId) -> String {
        self.g.node(n).name.clone()
    }

    /// Rules a, b and c.
    pub fn check(&self) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut roots: Vec<&VarId> = self.destroyers.keys().collect();
        roots.sort();
        for &r in roots {
            let ds = &self.destroyers[&r];
            for &(d, v) in ds {
                out.extend(self.check_destroy(d, v));
            }
            let mut nodes: Vec<NodeId> = ds.iter().map(|&(d, _)| d).collect();
            nodes.dedup();
            if nodes.len() > 1 {
                let names: Vec<String> = nodes.iter().map(|&n| self.node(n)).collect();
                out.push(Violation {
                    rule: Rule::TwoDestroyers,
                    message: format!(
                        "nodes {} all destroy '{}'",
                        names
                            .iter()
                            .map(|n| format!("'{n}'"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        self.name(r)
                    ),
                    nodes: names,
                });
            }
        }
        out
    }

    /// Rules a and c for node `d` destroying variable `v`.
    pub fn check_destroy(&self, d: NodeId, v: VarId) -> Vec<Violation> {
        let mut out = Vec::new();
        let r = self.root[v];
        let dn = self.node(d);
        let via = |w: VarId| {
            if w == v {
                String::new()
            } else {
                format!(" (through '{}')", self.name(v))
            }
        };
        let protected = match self.g.var(r).kind {
            VarKind::Constant(_) => Some("constant"),
            VarKind::Input { mutable: false } => Some("protected input"),
            _ => None,
        };
        if let Some(what) = protected {
            out.push(Violation {
                rule: Rule::Protected,
                nodes: vec![dn.clone()],
                message: format!("node '{dn}' destroys {what} '{}'{}", self.name(r), via(r)),
            });
        }
        for &w in self.views_of(r) {
            if self.g.is_output(w) {
                out.push(Violation {
                    rule: Rule::Protected,
                    nodes: vec![dn.clone()],
                    message: format!(
                        "node '{dn}' destroys '{}', which graph output '{}' views",
                        self.name(v),
                        self.name(w)
                    ),
                });
            }
        }
        let node = self.g.node(d);
        let destroyed: Vec<usize> = node.op.destroy_map().iter().map(|&(_, i)| i).collect();
        for (j, &w) in node.inputs.iter().enumerate() {
            let itself = w == v && destroyed.contains(&j);
            let tolerated = w == v && node.op.tolerates_same_input();
            if self.root[w] != r || itself || tolerated {
                continue;
            }
            out.push(Violation {
                rule: Rule::ReadsDestroyed,
                nodes: vec![dn.clone()],
                message: format!(
                    "node '{dn}' destroys '{}' and also reads '{}' on input {j}, a view of the same root '{}'",
                    self.name(v),
                    self.name(w),
                    self.name(r)
                ),
            });
        }
        out
    }

    /// `(before, after)` pairs: each destroyer runs after every other reader
    /// of every view of its root.
    pub fn orderings(&self) -> Vec<(NodeId, NodeId)> {
        let mut out = Vec::new();
        for (&r, ds) in &self.destroyers {
            for &(d, _) in ds {
                for &w in self.views_of(r) {
                    for &reader in self.g.readers(w) {
                        if reader != d {
                            out.push((reader, d));
                        }
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// An execution order that respects data dependencies and destroy
    /// orderings (rule d), deterministic for a given graph.
    pub fn schedule(&self) -> std::result::Result<Vec<NodeId>, Violation> {
        let n = self.g.nodes().len();
        let mut deps: Vec<Vec<NodeId>> = vec![Vec::new(); n];
        let mut users: Vec<Vec<NodeId>> = vec![Vec::new(); n];
        for (id, node) in self.g.nodes().iter().enumerate() {
            for &v in &node.inputs {
                if let Some((p, _)) = self.g.producer(v) {
                    deps[id].push(p);
                    users[p].push(id);
                }
            }
        }
        for (before, after) in self.orderings() {
            deps[after].push(before);
            users[before].push(after);
        }
        topo_order(&deps, &users).map_err(|stuck| {
            let names: Vec<String> = stuck.iter().map(|&i| self.node(i)).collect();
            Violation {
                rule: Rule::Cycle,
                message: format!(
                    "no order runs every destroyer after the other readers of its input: nodes {} form a cycle",
                    names.iter().take(6).map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
                ),
                nodes: names,
            }
        })
    }

    /// All four rules; on success, the execution order.
    pub fn validate(&self) -> Result<Vec<NodeId>> {
        let mut v = self.check();
        match self.schedule() {
            Ok(order) if v.is_empty() => return Ok(order),
            Ok(_) => {}
            Err(c) => v.push(c),
        }
        Err(Error::Rules {
            graph: self.g.name().to_string(),
            violations: v,
        })
    }
}

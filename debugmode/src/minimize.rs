//! The minimizer: delta debugging of a failing graph down to a small
//! subgraph that still gives the same finding kind on the same op.
//!
//! A candidate is a set of the original nodes. Every value a kept node
//! reads from a dropped producer becomes a mutable input fed with the
//! value the pure reference computed for it, so the candidate sees what
//! the original saw (and the in-place pass may still rewrite over it).
//! First the graph is truncated to the ancestors of the blamed node, then
//! ddmin removes chunks of nodes while the finding persists.

use std::collections::{BTreeSet, HashMap};

use vigil_engine::exec::{At, Listener, OpEvent, RunOptions};
use vigil_engine::graph::{Graph, NodeId, NodeSpec, VarId, VarKind, VarSpec};
use vigil_engine::{Executor, Tensor};
use vigil_findings::{Finding, Kind};

use crate::config::DebugConfig;
use crate::error::{DebugError, Result};
use crate::lockstep::Feeds;
use crate::mode::DebugMode;
use crate::reference_isolation::{reference, ReferenceIsolation};

/// A reduced failing case.
pub struct Minimized {
    pub graph: Graph,
    pub feeds: Feeds,
    /// The finding the reduced graph still gives.
    pub finding: Finding,
    /// DebugMode checks run while reducing.
    pub runs: usize,
    pub nodes_before: usize,
}

/// Every value the reference run produces, copied.
#[derive(Default)]
struct Values(HashMap<VarId, Tensor>, Option<String>);

impl Listener for Values {
    fn post_op(&mut self, _: &At, ev: &OpEvent) {
        for (k, t) in ev.outputs.iter().enumerate() {
            match t.deep_copy() {
                Ok(c) => {
                    self.0.insert(ev.node.outputs[k], c);
                }
                Err(e) => {
                    self.1.get_or_insert(e.to_string());
                }
            }
        }
    }
}

struct Reducer<'a> {
    g: &'a Graph,
    feeds: &'a Feeds,
    values: HashMap<VarId, Tensor>,
    mode: DebugMode,
    kind: Kind,
    op: String,
    runs: usize,
}

impl Reducer<'_> {
    /// The subgraph of the nodes in `keep`, with its feeds.
    fn subgraph(&self, keep: &BTreeSet<NodeId>) -> Option<(Graph, Feeds)> {
        let g = self.g;
        let (sources, specs, outputs) = g.to_specs();
        let mut used: BTreeSet<VarId> = BTreeSet::new();
        let mut produced: BTreeSet<VarId> = BTreeSet::new();
        for &n in keep {
            used.extend(g.node(n).inputs.iter().copied());
            produced.extend(g.node(n).outputs.iter().copied());
        }
        let mut new_sources: Vec<VarSpec> = sources
            .into_iter()
            .filter(|s| g.var_id(&s.name).is_some_and(|v| used.contains(&v)))
            .collect();
        let mut feeds: Feeds = self
            .feeds
            .iter()
            .filter(|(k, _)| new_sources.iter().any(|s| &s.name == *k))
            .map(|(k, t)| (k.clone(), t.clone()))
            .collect();
        for &v in used.difference(&produced) {
            let var = g.var(v);
            if !matches!(var.kind, VarKind::Output { .. }) {
                continue;
            }
            new_sources.push(VarSpec {
                name: var.name.clone(),
                ty: var.ty.clone(),
                kind: VarKind::Input { mutable: true },
            });
            feeds.insert(var.name.clone(), self.values.get(&v)?.clone());
        }
        let specs: Vec<NodeSpec> = specs
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep.contains(i))
            .map(|(_, s)| s)
            .collect();
        // Outputs: the original outputs still made, and every sink.
        let mut outs: Vec<String> = outputs
            .into_iter()
            .filter(|o| g.var_id(o).is_some_and(|v| produced.contains(&v)))
            .collect();
        for &v in &produced {
            let read = keep.iter().any(|&n| g.node(n).inputs.contains(&v));
            let name = &g.var(v).name;
            if !read && !outs.contains(name) {
                outs.push(name.clone());
            }
        }
        if specs.is_empty() || outs.is_empty() {
            return None;
        }
        Some((Graph::new(g.name(), new_sources, specs, &outs).ok()?, feeds))
    }

    /// The matching finding of `keep`'s subgraph, if it still fails.
    fn fails(&mut self, keep: &BTreeSet<NodeId>) -> Option<(Graph, Feeds, Finding)> {
        let (sub, feeds) = self.subgraph(keep)?;
        self.runs += 1;
        let report = self.mode.check(&sub, &feeds).ok()?;
        let f = report
            .findings
            .into_iter()
            .find(|f| f.kind == self.kind && f.op == self.op)?;
        Some((sub, feeds, f))
    }
}

/// The first error finding of `graph` (of `kind`, when given).
fn target(report: &[Finding], kind: Option<&Kind>) -> Option<Finding> {
    report
        .iter()
        .find(|f| f.is_error() && kind.is_none_or(|k| &f.kind == k))
        .cloned()
}

/// Reduces `graph` while DebugMode (with `cfg`) still gives the same kind
/// of finding on the same op. Fails when the graph gives no such finding.
pub fn minimize(graph: &Graph, feeds: &Feeds, cfg: &DebugConfig, kind: Option<&Kind>) -> Result<Minimized> {
    let mode = DebugMode::new(cfg.clone());
    let first = mode.check(graph, feeds)?;
    let Some(f) = target(&first.findings, kind) else {
        return Err(DebugError::NotFailing(match kind {
            Some(k) => format!("the graph gives no '{k}' finding"),
            None => "the graph gives no error finding".to_string(),
        }));
    };
    // Values of every variable, from the pure reference.
    let refg = reference(graph, &ReferenceIsolation::copying())?;
    let mut vals = Values::default();
    Executor::new(&refg)?.run_with(feeds, &mut vals, &RunOptions::default())?;
    if let Some(e) = vals.1 {
        return Err(vigil_engine::Error::Graph(e).into());
    }
    let mut r = Reducer {
        g: graph,
        feeds,
        values: vals.0,
        mode,
        kind: f.kind.clone(),
        op: f.op.clone(),
        runs: 1,
    };
    let all: BTreeSet<NodeId> = (0..graph.nodes().len()).collect();
    let mut best = match r.fails(&all) {
        Some(b) => (all, b),
        None => {
            return Err(DebugError::NotFailing(
                "the finding does not reproduce on the graph's own subgraph form".into(),
            ))
        }
    };
    // Truncate after the blamed node: keep it and its ancestors.
    if let Some(n) = graph.nodes().iter().position(|n| n.name == f.node) {
        let mut keep = BTreeSet::from([n]);
        let mut stack = vec![n];
        while let Some(m) = stack.pop() {
            for &v in &graph.node(m).inputs {
                if let Some((p, _)) = graph.producer(v) {
                    if keep.insert(p) {
                        stack.push(p);
                    }
                }
            }
        }
        if let Some(b) = r.fails(&keep) {
            best = (keep, b);
        }
    }
    // ddmin over the remaining nodes.
    let mut chunks = 2usize;
    while best.0.len() > 1 {
        let nodes: Vec<NodeId> = best.0.iter().copied().collect();
        let size = nodes.len().div_ceil(chunks);
        let mut reduced = false;
        for part in nodes.chunks(size) {
            let rest: BTreeSet<NodeId> = best.0.iter().copied().filter(|n| !part.contains(n)).collect();
            if rest.is_empty() {
                continue;
            }
            if let Some(b) = r.fails(&rest) {
                best = (rest, b);
                chunks = (chunks - 1).max(2);
                reduced = true;
                break;
            }
        }
        if !reduced {
            if chunks >= nodes.len() {
                break;
            }
            chunks = (chunks * 2).min(nodes.len());
        }
    }
    let (_, (graph_min, feeds_min, finding)) = best;
    Ok(Minimized {
        graph: graph_min,
        feeds: feeds_min,
        finding,
        runs: r.runs,
        nodes_before: graph.nodes().len(),
    })
}

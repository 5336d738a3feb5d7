//! Execution orders: the in-place graph re-run in other orders valid under
//! the destroy handler's orderings (seeded random topological orders and
//! the reverse-most one). A result that depends on the order means a
//! kernel shares state across calls or the declared maps hide a hazard.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use vigil_engine::graph::{Graph, NodeId};
use vigil_engine::Executor;
use vigil_findings::{Finding, Kind};

use crate::config::DebugConfig;
use crate::digest;
use crate::error::Result;
use crate::lockstep::Feeds;

/// A valid order that picks among the ready nodes with `pick`.
fn order_with(exec: &Executor, n: usize, mut pick: impl FnMut(&[NodeId]) -> usize) -> Vec<NodeId> {
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut ready: Vec<NodeId> = (0..n).filter(|&i| exec.predecessors(i).is_empty()).collect();
    // Successor lists, to find what becomes ready.
    let mut succ: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    let mut waiting: Vec<usize> = (0..n).map(|i| exec.predecessors(i).len()).collect();
    for (i, s) in (0..n).map(|i| (i, exec.predecessors(i))) {
        for &p in s {
            succ[p].push(i);
        }
    }
    while !ready.is_empty() {
        let k = pick(&ready);
        let id = ready.swap_remove(k);
        done[id] = true;
        order.push(id);
        for &s in &succ[id] {
            waiting[s] -= 1;
            if waiting[s] == 0 {
                ready.push(s);
            }
        }
    }
    order
}

/// The reverse-most order first, then `cfg.orders` seeded random ones.
pub fn alternative_orders(graph: &Graph, cfg: &DebugConfig) -> Result<Vec<(String, Vec<NodeId>)>> {
    let exec = Executor::new(graph)?;
    let n = graph.nodes().len();
    let default = exec.order().to_vec();
    let mut out: Vec<(String, Vec<NodeId>)> = Vec::new();
    let rev = order_with(&exec, n, |r| (0..r.len()).max_by_key(|&i| r[i]).unwrap_or(0));
    out.push(("reverse-most".into(), rev));
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    for i in 0..cfg.orders {
        let o = order_with(&exec, n, |r| rng.gen_range(0..r.len()));
        out.push((format!("random #{} (seed {})", i + 1, cfg.seed), o));
    }
    out.retain(|(_, o)| *o != default);
    out.dedup_by(|a, b| a.1 == b.1);
    Ok(out)
}

/// Findings of `order_dependent`, one at most.
pub fn check(graph: &Graph, feeds: &Feeds, cfg: &DebugConfig, runs: &mut usize) -> Result<Vec<Finding>> {
    *runs += 1;
    let base = digest::run(graph, feeds, None, None, None)?;
    if let Some(f) = digest::repeat(graph, feeds, &base, cfg, runs)? {
        return Ok(vec![f]);
    }
    let default = Executor::new(graph)?.order().to_vec();
    for (name, order) in alternative_orders(graph, cfg)? {
        *runs += 1;
        let other = digest::run(graph, feeds, Some(order.clone()), None, Some((&base, cfg)))?;
        if let Some(v) = other.first_difference {
            let (node, _) = graph.producer(v).expect("digests cover node outputs only");
            let nd = graph.node(node);
            let (p0, p1) = (base.position[&node], other.position[&node]);
            let names = |o: &[NodeId]| o.iter().map(|&i| graph.node(i).name.clone()).collect::<Vec<_>>();
            return Ok(vec![Finding::new(
                Kind::ORDER_DEPENDENT,
                format!(
                    "'{}' differs between the default order (node at position {p0}) and the {name} order (position {p1}): the result depends on the execution order",
                    graph.var(v).name
                ),
            )
            .at(nd.name.clone(), nd.op.name())
            .with_details(json!({
                "var": graph.var(v).name,
                "order": name,
                "default_order": names(&default),
                "other_order": names(&order),
                "position_default": p0,
                "position_other": p1,
            }))]);
        }
    }
    Ok(Vec::new())
}

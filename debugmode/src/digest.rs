//! Per-variable digests of a run: a hash of each value's elements in
//! logical order as it was produced. Re-runs (other orders, pre-allocated
//! outputs) are compared with the default run through them, so nothing but
//! one node's outputs is held at a time.

use std::collections::HashMap;

use vigil_engine::exec::{At, Listener, OpEvent, Prealloc, RunOptions};
use vigil_engine::graph::{Graph, NodeId, VarId};
use vigil_engine::{Executor, PoolPolicy};
use vigil_listeners::hash::view_hash;

use crate::error::Result;
use crate::lockstep::{fresh, Feeds};

/// Digests of one run, and where each variable was produced.
#[derive(Default)]
pub struct Digests {
    pub hash: HashMap<VarId, u64>,
    /// Production order of the variables.
    pub order: Vec<VarId>,
    /// Position of each node in the run's order.
    pub position: HashMap<NodeId, usize>,
    error: Option<String>,
}

impl Listener for Digests {
    fn post_op(&mut self, at: &At, ev: &OpEvent) {
        if let Some(p) = at.node_index {
            self.position.insert(ev.node_id, p);
        }
        for (k, t) in ev.outputs.iter().enumerate() {
            let v = ev.node.outputs[k];
            match view_hash(t) {
                Ok(h) => {
                    self.hash.insert(v, h.hash);
                    self.order.push(v);
                }
                Err(e) => {
                    self.error.get_or_insert(e.to_string());
                }
            }
        }
    }
}

/// Runs `graph` on fresh copies in `order` (the default when `None`), with
/// zeroed fresh buffers (so the baseline is clean even for an op that
/// reads its output before writing it) and `prealloc`, and digests every
/// produced value.
pub fn digest(
    graph: &Graph,
    feeds: &Feeds,
    order: Option<Vec<NodeId>>,
    prealloc: Option<Prealloc>,
) -> Result<Digests> {
    let (g, f) = fresh(graph, feeds)?;
    let exec = match order {
        Some(o) => Executor::with_order(&g, o)?,
        None => Executor::new(&g)?,
    };
    let mut d = Digests::default();
    let opts = RunOptions {
        pool: PoolPolicy::Zero,
        prealloc,
        ..RunOptions::default()
    };
    exec.run_with(&f, &mut d, &opts)?;
    if let Some(e) = d.error.take() {
        return Err(vigil_engine::Error::Graph(e).into());
    }
    Ok(d)
}

impl Digests {
    /// The first variable (in this run's production order) whose digest
    /// differs in `other`.
    pub fn first_difference(&self, other: &Digests) -> Option<VarId> {
        self.order
            .iter()
            .copied()
            .find(|v| other.hash.get(v).is_some_and(|h| Some(h) != self.hash.get(v)))
    }
}

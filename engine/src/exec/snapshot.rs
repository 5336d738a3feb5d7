//! Re-runnable copies of a run's values. A run that destroys an input may
//! destroy the caller's feeds and the graph's constants too (tensors share
//! buffers), so anything that runs a graph again (a replay, DebugMode's
//! reference run and bisection, the minimizer) runs on a [`Snapshot`]: deep
//! copies of the feeds and of every constant and parameter, with buffer
//! sharing and layouts kept.

use std::collections::HashMap;

use crate::error::Result;
use crate::graph::{Graph, VarKind};
use crate::tensor::storage::BufferId;
use crate::tensor::{Layout, Tensor};

/// Copies of a graph's values and a run's feeds, independent of the
/// originals.
pub struct Snapshot {
    graph: Graph,
    feeds: HashMap<String, Tensor>,
}

/// Deep copies that keep layouts and keep shared buffers shared.
#[derive(Default)]
pub struct Copier {
    buffers: HashMap<BufferId, Tensor>,
}

impl Copier {
    /// A copy of `t` in a new buffer; tensors that shared a buffer share
    /// the copy's.
    pub fn copy(&mut self, t: &Tensor) -> Result<Tensor> {
        let base = match self.buffers.get(&t.buffer_id()) {
            Some(b) => b.clone(),
            None => {
                let b = t.with_layout(Layout::contiguous(&[t.data_size()]))?.deep_copy()?;
                self.buffers.insert(t.buffer_id(), b.clone());
                b
            }
        };
        base.with_layout(t.layout().clone())
    }
}

impl Snapshot {
    /// Copies `feeds` and the graph's constants and parameters now.
    pub fn take(graph: &Graph, feeds: &HashMap<String, Tensor>) -> Result<Snapshot> {
        let mut c = Copier::default();
        let graph = copy_values(graph, &mut c)?;
        let feeds = feeds
            .iter()
            .map(|(k, t)| Ok((k.clone(), c.copy(t)?)))
            .collect::<Result<_>>()?;
        Ok(Snapshot { graph, feeds })
    }

    /// A snapshot that shares `graph`'s values and `feeds` instead of
    /// copying them, for a caller that never writes them (it runs on copies
    /// of its own). Readers of a snapshot copy before they run.
    pub fn sharing(graph: &Graph, feeds: &HashMap<String, Tensor>) -> Snapshot {
        Snapshot {
            graph: graph.clone(),
            feeds: feeds.clone(),
        }
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    pub fn feeds(&self) -> &HashMap<String, Tensor> {
        &self.feeds
    }

    /// A fresh copy of this snapshot, for one more run.
    pub fn fork(&self) -> Result<Snapshot> {
        Snapshot::take(&self.graph, &self.feeds)
    }

    /// Fresh copies of the feeds, for a run of another graph with the same
    /// inputs (a rewritten or purified one).
    pub fn fresh_feeds(&self) -> Result<HashMap<String, Tensor>> {
        let mut c = Copier::default();
        self.feeds
            .iter()
            .map(|(k, t)| Ok((k.clone(), c.copy(t)?)))
            .collect()
    }
}

/// `graph` with its constants and parameters copied.
pub fn copy_values(graph: &Graph, c: &mut Copier) -> Result<Graph> {
    let (mut sources, nodes, outputs) = graph.to_specs();
    for s in &mut sources {
        if let VarKind::Constant(t) | VarKind::Parameter(t) = &mut s.kind {
            *t = c.copy(t)?;
        }
    }
    Graph::new(graph.name(), sources, nodes, &outputs)
}

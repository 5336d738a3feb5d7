//! Re-runnable copies of a run's values. A run that destroys an input may
//! destroy the caller's feeds and the graph's constants too (tensors share
//! buffers), so anything that runs a graph again (a replay, DebugMode's
//! reference run and bisection, the minimizer) runs on a [`Snapshot`]: deep
//! copies of the feeds and of every constant and parameter, with buffer
//! sharing and layouts kept.

use std::collections::HashMap;

use crate::error::Result;
use crate::graph::{Graph, VarId, VarKind};
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

/// The caller's values lent read-only: every buffer behind `graph`'s
/// constants and parameters and behind `feeds` refuses writes (with
/// [`crate::Error::ReadOnly`]) until this is dropped. A run that must not
/// change the values can then use them without a [`Snapshot`]'s copies: a
/// kernel that writes one anyway fails before it changes anything.
pub struct Lent {
    tensors: Vec<Tensor>,
}

impl Lent {
    pub fn new(graph: &Graph, feeds: &HashMap<String, Tensor>) -> Lent {
        let tensors: Vec<Tensor> = graph
            .vars()
            .iter()
            .filter_map(|v| match &v.kind {
                VarKind::Constant(t) | VarKind::Parameter(t) => Some(t.clone()),
                _ => None,
            })
            .chain(feeds.values().cloned())
            .collect();
        for t in &tensors {
            t.storage().freeze();
        }
        Lent { tensors }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        for t in &self.tensors {
            t.storage().thaw();
        }
    }
}

/// `graph`'s values and `feeds` for a run that overwrites only the sources
/// in `destroyed` (see [`crate::exec::destroyed_sources`]): those are
/// copied, everything else is shared. The executor refuses a destroyed
/// source that shares its buffer with another source, so the copies share
/// nothing with what is shared.
pub fn copy_destroyed(
    graph: &Graph,
    feeds: &HashMap<String, Tensor>,
    destroyed: &[VarId],
) -> Result<(Graph, HashMap<String, Tensor>)> {
    let mut c = Copier::default();
    let is_destroyed = |name: &str| destroyed.iter().any(|&v| graph.var(v).name == name);
    let params = destroyed
        .iter()
        .any(|&v| matches!(graph.var(v).kind, VarKind::Parameter(_)));
    let g = if params {
        let (mut sources, nodes, outputs) = graph.to_specs();
        for s in &mut sources {
            if let VarKind::Parameter(t) = &mut s.kind {
                if is_destroyed(&s.name) {
                    *t = c.copy(t)?;
                }
            }
        }
        Graph::new(graph.name(), sources, nodes, &outputs)?
    } else {
        graph.clone()
    };
    let f = feeds
        .iter()
        .map(|(k, t)| Ok((k.clone(), if is_destroyed(k) { c.copy(t)? } else { t.clone() })))
        .collect::<Result<_>>()?;
    Ok((g, f))
}

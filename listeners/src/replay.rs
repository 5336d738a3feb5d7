//! Deterministic replay of a run up to one op, with the non-in-place
//! listener in Copy mode, so a Hash-mode detection can still show *what*
//! changed.
//!
//! A run that destroys an input may destroy the caller's feeds and the
//! graph's constants too (tensors share buffers), so a replay runs on a
//! [`Snapshot`]: deep copies of the feeds and of every constant and
//! parameter, taken before the first run, with buffer sharing and layouts
//! kept.

use std::collections::HashMap;

use vigil_engine::exec::{Executor, RunOptions};
use vigil_engine::graph::{Graph, VarKind};
use vigil_engine::tensor::storage::BufferId;
use vigil_engine::{Layout, Tensor};

use crate::finding::Finding;
use crate::noninplace::{Mode, NonInplaceConfig, NonInplaceValidationListener};
use crate::Validator;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Engine(#[from] vigil_engine::Error),
    #[error("position {position} is past the end of the order ({nodes} nodes)")]
    Position { position: usize, nodes: usize },
}

/// Copies of a graph's values and a run's feeds, independent of the
/// originals.
pub struct Snapshot {
    graph: Graph,
    feeds: HashMap<String, Tensor>,
}

/// Deep copies that keep layouts and keep shared buffers shared.
#[derive(Default)]
struct Copier {
    buffers: HashMap<BufferId, Tensor>,
}

impl Copier {
    fn copy(&mut self, t: &Tensor) -> vigil_engine::Result<Tensor> {
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
    pub fn take(graph: &Graph, feeds: &HashMap<String, Tensor>) -> vigil_engine::Result<Snapshot> {
        let mut c = Copier::default();
        let (mut sources, nodes, outputs) = graph.to_specs();
        for s in &mut sources {
            if let VarKind::Constant(t) | VarKind::Parameter(t) = &mut s.kind {
                *t = c.copy(t)?;
            }
        }
        let graph = Graph::new(graph.name(), sources, nodes, &outputs)?;
        let feeds = feeds
            .iter()
            .map(|(k, t)| Ok((k.clone(), c.copy(t)?)))
            .collect::<vigil_engine::Result<_>>()?;
        Ok(Snapshot { graph, feeds })
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    pub fn feeds(&self) -> &HashMap<String, Tensor> {
        &self.feeds
    }
}

/// Re-runs `graph` on copies of its values and `feeds`, up to and including
/// the node at `position` of the execution order, with a non-in-place
/// listener in Copy mode, and returns that node's findings (with element
/// diffs in their details). `graph` and `feeds` are not modified.
pub fn replay_in_copy_mode(
    graph: &Graph,
    feeds: &HashMap<String, Tensor>,
    position: usize,
    config: &NonInplaceConfig,
) -> Result<Vec<Finding>, ReplayError> {
    let snap = Snapshot::take(graph, feeds)?;
    let exec = Executor::new(&snap.graph)?;
    let Some(&node) = exec.order().get(position) else {
        return Err(ReplayError::Position {
            position,
            nodes: exec.order().len(),
        });
    };
    let mut config = config.clone();
    config.mode = Mode::Copy;
    let mut l = NonInplaceValidationListener::with_config(config);
    exec.run_with(
        &snap.feeds,
        &mut l,
        &RunOptions {
            stop_after: Some(position + 1),
            ..RunOptions::default()
        },
    )?;
    let name = &snap.graph.node(node).name;
    Ok(l.take_findings()
        .into_iter()
        .filter(|f| &f.node == name)
        .collect())
}

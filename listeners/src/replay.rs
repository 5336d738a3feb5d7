//! Deterministic replay of a run up to one op, with the non-in-place
//! listener in Copy mode, so a Hash-mode detection can still show *what*
//! changed.
//!
//! A replay runs on an engine [`Snapshot`], so the caller's feeds and the
//! graph's constants are never touched.

use std::collections::HashMap;

pub use vigil_engine::exec::Snapshot;
use vigil_engine::exec::{Executor, RunOptions};
use vigil_engine::graph::Graph;
use vigil_engine::Tensor;

use crate::finding::Finding;
use crate::noninplace::{NonInplaceConfig, NonInplaceValidationListener, Remember};
use crate::Validator;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Engine(#[from] vigil_engine::Error),
    #[error("position {position} is past the end of the order ({nodes} nodes)")]
    Position { position: usize, nodes: usize },
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
    let exec = Executor::new(snap.graph())?;
    let Some(&node) = exec.order().get(position) else {
        return Err(ReplayError::Position {
            position,
            nodes: exec.order().len(),
        });
    };
    let mut config = config.clone();
    config.mode = Remember::Copy;
    let mut l = NonInplaceValidationListener::with_config(config);
    exec.run_with(
        snap.feeds(),
        &mut l,
        &RunOptions {
            stop_after: Some(position + 1),
            ..RunOptions::default()
        },
    )?;
    let name = &snap.graph().node(node).name;
    Ok(l.take_findings()
        .into_iter()
        .filter(|f| &f.node == name)
        .collect())
}

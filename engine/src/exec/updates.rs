//! Parameter updates: the nodes that overwrite a parameter's buffer, for
//! the `pre_update(param, old, new)` hook.
//!
//! A training step updates its parameters (and optimizer state, also
//! parameters) with in-place ops. Before such an op writes, the executor
//! computes the new value with the op's pure twin into a fresh buffer, so
//! a listener sees old and new side by side. That costs one extra op per
//! update, paid only in runs with an active listener.

use std::collections::HashMap;

use crate::graph::{Graph, NodeId, VarId, VarKind};

/// For each node that overwrites a parameter's buffer (directly, or at the
/// end of a chain of in-place ops starting at it), the parameter's name.
pub fn updated_parameters(g: &Graph) -> HashMap<NodeId, String> {
    let source = |mut v: VarId| loop {
        match &g.var(v).kind {
            VarKind::Parameter(_) => return Some(g.var(v).name.clone()),
            VarKind::Output { node, index } => {
                let n = g.node(*node);
                let &(_, i) = n.op.destroy_map().iter().find(|&&(o, _)| o == *index)?;
                v = n.inputs[i];
            }
            _ => return None,
        }
    };
    g.nodes()
        .iter()
        .enumerate()
        .filter_map(|(id, n)| {
            let &(_, i) = n.op.destroy_map().first()?;
            source(n.inputs[i]).map(|p| (id, p))
        })
        .collect()
}

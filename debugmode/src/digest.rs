//! Re-runs compared with a baseline run: the baseline keeps a copy of every
//! value it produces, and each re-run (another order, pre-allocated
//! outputs) compares its values with them as they are produced, within the
//! configured tolerance (a different memory layout may legitimately change
//! the order of a reduction, and so its last bits).

use std::collections::HashMap;

use vigil_engine::compare::compare;
use vigil_engine::exec::{At, Listener, OpEvent, Prealloc, RunOptions};
use vigil_engine::graph::{Graph, NodeId, VarId};
use vigil_engine::{Executor, PoolPolicy, Tensor};

use crate::config::DebugConfig;
use crate::error::Result;
use crate::lockstep::{fresh, Feeds};

/// What one run produced, or how it differed from its baseline.
pub struct Run<'a> {
    base: Option<(&'a Run<'a>, &'a DebugConfig)>,
    /// Copies of every produced value (baseline runs only).
    values: HashMap<VarId, Tensor>,
    /// Position of each node in the run's order.
    pub position: HashMap<NodeId, usize>,
    /// The first produced variable that differs from the baseline.
    pub first_difference: Option<VarId>,
    error: Option<String>,
}

impl Run<'_> {
    /// The baseline's copy of `v`, once produced.
    pub fn value(&self, v: VarId) -> Option<&Tensor> {
        self.values.get(&v)
    }
}

impl Listener for Run<'_> {
    fn post_op(&mut self, at: &At, ev: &OpEvent) {
        if let Some(p) = at.node_index {
            self.position.insert(ev.node_id, p);
        }
        for (k, t) in ev.outputs.iter().enumerate() {
            let v = ev.node.outputs[k];
            let result = match self.base {
                None => t.deep_copy().map(|c| {
                    self.values.insert(v, c);
                }),
                Some(_) if self.first_difference.is_some() => Ok(()),
                Some((base, cfg)) => match base.values.get(&v) {
                    Some(want) => compare(t, want, cfg.tolerance(want.dtype())).map(|c| {
                        if !c.is_close() {
                            self.first_difference = Some(v);
                        }
                    }),
                    None => Ok(()),
                },
            };
            if let Err(e) = result {
                self.error.get_or_insert(e.to_string());
            }
        }
    }
}

/// Runs `graph` on fresh copies in `order` (the default when `None`), with
/// zeroed fresh buffers (so the baseline is clean even for an op that reads
/// its output before writing it) and `prealloc`; compares with `base`.
pub fn run<'a>(
    graph: &Graph,
    feeds: &Feeds,
    order: Option<Vec<NodeId>>,
    prealloc: Option<Prealloc>,
    base: Option<(&'a Run<'a>, &'a DebugConfig)>,
) -> Result<Run<'a>> {
    let (g, f) = fresh(graph, feeds)?;
    let exec = match order {
        Some(o) => Executor::with_order(&g, o)?,
        None => Executor::new(&g)?,
    };
    let mut r = Run {
        base,
        values: HashMap::new(),
        position: HashMap::new(),
        first_difference: None,
        error: None,
    };
    let opts = RunOptions {
        pool: PoolPolicy::Zero,
        prealloc,
        ..RunOptions::default()
    };
    exec.run_with(&f, &mut r, &opts)?;
    if let Some(e) = r.error.take() {
        return Err(vigil_engine::Error::Graph(e).into());
    }
    Ok(r)
}

//! What the lockstep driver needs to see of a run between steps: each
//! node's outputs as it produced them, the buffer version every value had
//! when it was produced, which node last wrote each buffer, and the values
//! released by the step (to poison once compared).

use std::collections::{HashMap, HashSet};

use vigil_engine::exec::{At, Listener, OpEvent, SweepEvent};
use vigil_engine::graph::{Graph, NodeId, VarId};
use vigil_engine::tensor::storage::BufferId;
use vigil_engine::Tensor;
use vigil_findings::Finding;
use vigil_listeners::Validator;

/// The node that last changed a buffer, and whether it declared it.
#[derive(Clone, Copy, Debug)]
pub struct Writer {
    pub node: NodeId,
    pub declared: bool,
}

#[derive(Default)]
pub struct Capture {
    /// Outputs of the last step: (variable, value).
    pub produced: Vec<(VarId, Tensor)>,
    /// Values released during the last step.
    pub released: Vec<(VarId, Tensor)>,
    /// Buffer and version of each value when it was produced (or bound).
    pub born: HashMap<VarId, (BufferId, u64)>,
    /// The last node that changed each buffer.
    pub writers: HashMap<BufferId, Writer>,
    /// Buffers some earlier value was born in.
    held: HashSet<BufferId>,
    keep_released: bool,
    before: Vec<(BufferId, u64, bool)>,
}

impl Capture {
    pub fn new(keep_released: bool) -> Capture {
        Capture {
            keep_released,
            ..Capture::default()
        }
    }

    /// Records the versions of the sources as bound.
    pub fn bind(&mut self, graph: &Graph, value: impl Fn(VarId) -> Option<Tensor>) {
        for v in 0..graph.vars().len() {
            if let Some(t) = value(v) {
                self.born.insert(v, (t.buffer_id(), t.version()));
                self.held.insert(t.buffer_id());
            }
        }
    }

    /// Records a value a twin sweep produced (the lockstep's reference
    /// side has no hooks of its own there).
    pub fn born_now(&mut self, v: VarId, t: &Tensor) {
        self.born.insert(v, (t.buffer_id(), t.version()));
        self.held.insert(t.buffer_id());
    }
}

impl Listener for Capture {
    // A body's events name the body graph's ids, not the run's: skipped.
    fn pre_op(&mut self, at: &At, ev: &OpEvent) {
        if at.in_body {
            return;
        }
        let destroyed = ev.destroyed_inputs();
        self.before = ev
            .inputs
            .iter()
            .enumerate()
            .map(|(i, t)| (t.buffer_id(), t.version(), destroyed.contains(&i)))
            .collect();
    }
    fn post_op(&mut self, at: &At, ev: &OpEvent) {
        if at.in_body {
            return;
        }
        for (t, &(id, version, declared)) in ev.inputs.iter().zip(&self.before) {
            if t.version() != version {
                self.writers.insert(
                    id,
                    Writer {
                        node: ev.node_id,
                        declared,
                    },
                );
            }
        }
        // A fresh output (no declared view or destroy) in a buffer an
        // earlier value was born in: the op wrote over that value (a kept
        // workspace, a cached output), or the pool reused a dead one's.
        let declared: Vec<usize> = ev
            .node
            .op
            .view_map()
            .into_iter()
            .chain(ev.node.op.destroy_map())
            .map(|(o, _)| o)
            .collect();
        for (k, t) in ev.outputs.iter().enumerate() {
            let v = ev.node.outputs[k];
            if !declared.contains(&k) && !self.held.insert(t.buffer_id()) {
                self.writers.insert(
                    t.buffer_id(),
                    Writer {
                        node: ev.node_id,
                        declared: false,
                    },
                );
            }
            self.born.insert(v, (t.buffer_id(), t.version()));
            self.produced.push((v, t.clone()));
        }
    }
    /// A sweep of the lockstep's twin sweeps (`Cursor::step_twin`): every
    /// node overwrote the swept buffer, declared, as node-by-node steps
    /// record it; `produced` stays empty (the lockstep counts what the
    /// sweep compared).
    fn post_sweep(&mut self, _: &At, ev: &SweepEvent) {
        let (id, version) = (ev.value.buffer_id(), ev.value.version());
        if let Some(&last) = ev.nodes.last() {
            self.writers.insert(
                id,
                Writer {
                    node: last,
                    declared: true,
                },
            );
        }
        for (_, &n) in ev.nodes.iter().enumerate().filter(|&(k, _)| ev.binds(k)) {
            for &v in &ev.graph.node(n).outputs {
                self.born.insert(v, (id, version));
            }
        }
    }
    fn value_released(&mut self, at: &At, _: &Graph, var: VarId, value: &Tensor, freed: bool) {
        if self.keep_released && freed && !at.in_body {
            self.released.push((var, value.clone()));
        }
    }
}

impl Validator for Capture {
    fn findings(&self) -> &[Finding] {
        &[]
    }
    fn take_findings(&mut self) -> Vec<Finding> {
        Vec::new()
    }
}

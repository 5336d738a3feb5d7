//! Fires `pre_update(param, old, new)` before each in-place op that
//! overwrites a parameter or its optimizer state: on `pre_op` of such a
//! node, the new value is computed with the op's pure twin (a fresh buffer,
//! so the listener sees old and new side by side before the write). The
//! extra computation happens only when the listener is active.

use std::collections::HashMap;

use vigil_engine::exec::{At, Flow, Listener, Metrics, OpEvent, Operation};
use vigil_engine::graph::NodeId;
use vigil_engine::OpCtx;

/// Wraps a listener for one run of a step graph.
pub struct UpdateHooks<'a> {
    pub inner: &'a mut dyn Listener,
    /// Node → the parameter it overwrites.
    pub updates: &'a HashMap<NodeId, String>,
    /// The first error of a pure-twin computation, reported after the run.
    pub error: Option<vigil_engine::Error>,
}

impl Listener for UpdateHooks<'_> {
    fn is_active(&self, op: Operation) -> bool {
        self.inner.is_active(op)
    }
    fn epoch_end(&mut self, at: &At) -> Flow {
        self.inner.epoch_end(at)
    }
    fn validation_done(&mut self, at: &At, metrics: &Metrics) -> Flow {
        self.inner.validation_done(at, metrics)
    }
    fn required_variables(&self) -> Vec<String> {
        self.inner.required_variables()
    }
    fn pre_op(&mut self, at: &At, ev: &OpEvent) {
        if let (Some(param), Some(twin)) = (self.updates.get(&ev.node_id), ev.node.op.pure_twin()) {
            match twin.compute(ev.inputs, &mut OpCtx::new(&ev.node.name)) {
                Ok(new) => {
                    if let (Some(old), Some(new)) = (ev.inputs.first(), new.first()) {
                        self.inner.pre_update(at, param, old, new);
                    }
                }
                Err(e) => {
                    self.error.get_or_insert(e.at_node(&ev.node.name));
                }
            }
        }
        self.inner.pre_op(at, ev)
    }
    fn operation_start(&mut self, at: &At, graph: &vigil_engine::Graph) {
        self.inner.operation_start(at, graph)
    }
    fn operation_end(&mut self, at: &At, graph: &vigil_engine::Graph) {
        self.inner.operation_end(at, graph)
    }
    fn epoch_start(&mut self, at: &At) {
        self.inner.epoch_start(at)
    }
    fn iteration_start(&mut self, at: &At) {
        self.inner.iteration_start(at)
    }
    fn iteration_done(&mut self, at: &At, loss: Option<f64>) {
        self.inner.iteration_done(at, loss)
    }
    fn post_op(&mut self, at: &At, ev: &OpEvent) {
        self.inner.post_op(at, ev)
    }
    fn activation_available(&mut self, at: &At, ev: &OpEvent, output: usize, value: &vigil_engine::Tensor) {
        self.inner.activation_available(at, ev, output, value)
    }
    fn value_released(
        &mut self,
        at: &At,
        graph: &vigil_engine::Graph,
        var: vigil_engine::graph::VarId,
        value: &vigil_engine::Tensor,
        freed: bool,
    ) {
        self.inner.value_released(at, graph, var, value, freed)
    }
    fn pre_update(
        &mut self,
        at: &At,
        param: &str,
        old: &vigil_engine::Tensor,
        new_value: &vigil_engine::Tensor,
    ) {
        self.inner.pre_update(at, param, old, new_value)
    }
}

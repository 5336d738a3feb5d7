//! TracingListener: one `tracing` span per op, so `RUST_LOG=vigil=debug`
//! (or any tracing subscriber, such as JSON lines) shows what ran.
//!
//! A fused sweep is one span for its nodes together: the listener watches
//! sweeps, so a run it traces (every `vigil exec`, a profiled one too)
//! fuses as the plain run does instead of going node by node.

use tracing::span::EnteredSpan;
use vigil_engine::exec::{At, Listener, OpEvent, SweepEvent, SweepWatch};
use vigil_engine::Graph;

/// Emits a span per op (target `vigil::op`) with the node, op, position and
/// shapes, one per fused sweep with its nodes, and run start/end events.
#[derive(Default)]
pub struct TracingListener {
    current: Option<EnteredSpan>,
}

impl TracingListener {
    pub fn new() -> TracingListener {
        TracingListener::default()
    }
}

fn shapes(ts: &[vigil_engine::Tensor]) -> String {
    ts.iter()
        .map(|t| format!("{}{:?}", t.dtype(), t.shape()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Listener for TracingListener {
    fn operation_start(&mut self, at: &At, graph: &Graph) {
        tracing::info!(target: "vigil::run", graph = graph.name(), operation = ?at.operation, epoch = at.epoch, iteration = at.iteration, "run start");
    }

    fn operation_end(&mut self, at: &At, graph: &Graph) {
        self.current = None;
        tracing::info!(target: "vigil::run", graph = graph.name(), operation = ?at.operation, "run end");
    }

    fn pre_op(&mut self, at: &At, ev: &OpEvent) {
        let span = tracing::debug_span!(
            target: "vigil::op",
            "op",
            node = %ev.node.name,
            op = ev.op_name(),
            position = at.node_index.unwrap_or(0),
        );
        self.current = Some(span.entered());
        tracing::trace!(target: "vigil::op", inputs = %shapes(ev.inputs), "inputs bound");
    }

    fn post_op(&mut self, _at: &At, ev: &OpEvent) {
        tracing::debug!(target: "vigil::op", outputs = %shapes(ev.outputs), "outputs ready");
        self.current = None;
    }

    fn watches_sweeps(&self) -> SweepWatch {
        SweepWatch::Edges
    }

    fn pre_sweep(&mut self, _at: &At, ev: &SweepEvent) {
        let nodes: Vec<&str> = ev.nodes.iter().map(|&n| ev.graph.node(n).name.as_str()).collect();
        let span = tracing::debug_span!(
            target: "vigil::op",
            "sweep",
            nodes = %nodes.join(", "),
            position = ev.position,
        );
        self.current = Some(span.entered());
        tracing::trace!(target: "vigil::op", inputs = %shapes(std::slice::from_ref(ev.input)), "inputs bound");
    }

    fn post_sweep(&mut self, _at: &At, ev: &SweepEvent) {
        tracing::debug!(target: "vigil::op", outputs = %shapes(std::slice::from_ref(ev.value)), "outputs ready");
        self.current = None;
    }

    fn iteration_done(&mut self, at: &At, loss: Option<f64>) {
        tracing::info!(target: "vigil::train", epoch = at.epoch, iteration = at.iteration, loss, "iteration done");
    }
}

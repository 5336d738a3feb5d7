//! Outputs that reuse memory something else still holds: an op that keeps
//! a workspace (or a cached output) across calls and hands it out again.
//!
//! After each op, every output's buffer is looked up among the run's live
//! values by buffer id (the executor keeps holders by buffer, so this is
//! one hash lookup per output); only when another live value holds the
//! same buffer is the exact overlap solver asked. An overlap that no
//! declared view or destroy of the op's own inputs explains is an
//! `undeclared_alias`: the op's output will be written over a value still
//! in use, or the next write to that value will change the output.
//!
//! Outputs that share a buffer with one of the op's own inputs are left to
//! the view-map rules (declared, or `undeclared_view`).
//!
//! Across runs: the buffers of the graph outputs a run returns are
//! remembered (buffer ids are never reused in a process). When a later run
//! of the same listener makes a fresh output on one of those buffers, the
//! caller's earlier `RunOutput` is being overwritten: also
//! `undeclared_alias`. An op's fresh outputs must come from
//! `OpCtx::output`, never from state the op keeps.

use crate::viewmap::layout_json;
use std::collections::HashMap;

use serde_json::json;
use vigil_engine::exec::OpEvent;
use vigil_engine::graph::{Graph, VarId, VarKind};
use vigil_engine::tensor::storage::BufferId;
use vigil_engine::Tensor;

use crate::finding::{at_op, Finding, Kind};
use vigil_engine::tensor::overlap::{tensors_share_memory_bounded, Sharing};

/// A graph output a finished run returned.
#[derive(Clone, Debug)]
struct Returned {
    var: String,
    node: String,
    run: usize,
}

/// Returned buffers remembered before starting over (only memory: ids are
/// never reused).
const MAX_RETURNED: usize = 4096;

/// The undeclared-alias check; part of the view-map listener.
#[derive(Default)]
pub(crate) struct AliasCheck {
    /// Runs started so far.
    run: usize,
    returned: HashMap<BufferId, Returned>,
    /// Graph outputs of the current run, by buffer.
    this_run: Vec<(BufferId, Returned)>,
}

/// How a finding names the maker of variable `v`.
fn made_by(g: &Graph, v: VarId) -> String {
    match g.producer(v) {
        Some((n, _)) => g.node(n).name.clone(),
        None => match g.var(v).kind {
            VarKind::Input { .. } => "(graph input)".into(),
            VarKind::Parameter(_) => "(parameter)".into(),
            _ => "(constant)".into(),
        },
    }
}

/// The common part of two views' spans, as buffer offsets.
fn span_overlap(a: &Tensor, b: &Tensor) -> Option<(usize, usize)> {
    let ((alo, ahi), (blo, bhi)) = (a.layout().span()?, b.layout().span()?);
    let (lo, hi) = (alo.max(blo), ahi.min(bhi));
    (lo <= hi).then_some((lo, hi))
}

impl AliasCheck {
    pub fn start_run(&mut self) {
        self.run += 1;
        self.this_run.clear();
    }

    /// Remembers the buffers of the graph outputs the run returns (not
    /// constants': the executor hands those out as copies).
    pub fn end_run(&mut self, graph: &Graph) {
        let constants: Vec<BufferId> = graph
            .vars()
            .iter()
            .filter_map(|v| match &v.kind {
                VarKind::Constant(t) => Some(t.buffer_id()),
                _ => None,
            })
            .collect();
        if self.returned.len() + self.this_run.len() > MAX_RETURNED {
            self.returned.clear();
        }
        for (id, r) in self.this_run.drain(..) {
            if !constants.contains(&id) {
                self.returned.insert(id, r);
            }
        }
    }

    /// Checks the outputs of the op of `ev` (in `post_op`).
    pub fn check(&mut self, ev: &OpEvent, max_work: u64, findings: &mut Vec<Finding>) {
        let g = ev.graph;
        for (k, out) in ev.outputs.iter().enumerate() {
            let Some(&out_var) = ev.node.outputs.get(k) else {
                continue;
            };
            if g.outputs().contains(&out_var) {
                self.this_run.push((
                    out.buffer_id(),
                    Returned {
                        var: g.var(out_var).name.clone(),
                        node: ev.node.name.clone(),
                        run: self.run,
                    },
                ));
            }
            // Sharing with the op's own inputs is the view map's business.
            if ev.inputs.iter().any(|i| i.same_buffer(out)) {
                continue;
            }
            if let Some(f) = live_alias(ev, k, out, max_work) {
                findings.push(f);
            } else if let Some(r) = self.returned.get(&out.buffer_id()).filter(|r| r.run < self.run) {
                let name = &g.var(out_var).name;
                findings.push(
                    at_op(
                        Kind::UNDECLARED_ALIAS,
                        ev,
                        format!(
                            "output {k} ('{name}') is on the buffer of output '{}' that run {} returned (made by node '{}'); \
                             the caller's earlier result is overwritten",
                            r.var, r.run, r.node
                        ),
                    )
                    .with_output(k)
                    .with_details(json!({
                        "across_runs": true,
                        "output_var": name,
                        "output_layout": layout_json(out),
                        "other_var": r.var,
                        "other_node": r.node,
                        "other_run": r.run,
                        "run": self.run,
                    })),
                );
            }
        }
    }
}

/// An `undeclared_alias` finding when output `k` overlaps a live value.
fn live_alias(ev: &OpEvent, k: usize, out: &Tensor, max_work: u64) -> Option<Finding> {
    let g = ev.graph;
    let mut hits: Vec<(VarId, Sharing)> = Vec::new();
    for &w in ev.live.holders(out.buffer_id()) {
        let Some(tw) = ev.live.value(w) else { continue };
        let s = tensors_share_memory_bounded(out, tw, max_work);
        if s.shares() {
            hits.push((w, s));
        }
    }
    let &(w, s) = hits.first()?;
    let tw = ev.live.value(w)?;
    let name = &g.var(*ev.node.outputs.get(k)?).name;
    let other = &g.var(w).name;
    let node = made_by(g, w);
    let range = span_overlap(out, tw);
    let also: Vec<&str> = hits[1..].iter().map(|&(v, _)| g.var(v).name.as_str()).collect();
    let mut message = format!(
        "output {k} ('{name}') shares memory with '{other}' (made by node '{node}'), which is still live; \
         no view_map or destroy_map declares it"
    );
    if let Some((lo, hi)) = range {
        message.push_str(&format!(" (buffer elements {lo}..={hi})"));
    }
    Some(
        at_op(Kind::UNDECLARED_ALIAS, ev, message)
            .with_output(k)
            .with_details(json!({
                "across_runs": false,
                "output_var": name,
                "output_layout": layout_json(out),
                "other_var": other,
                "other_node": node,
                "other_layout": layout_json(tw),
                "overlap": range.map(|(lo, hi)| json!({ "first": lo, "last": hi })),
                "shared_offset": s.witness(),
                "exact": s.exact(),
                "also_live": also,
            })),
    )
}

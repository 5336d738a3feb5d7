//! The view-map validation listener: after each op, outputs may share
//! memory with inputs only as the view_map or destroy_map declares, outputs
//! must not share memory with each other, and a declared must-view must
//! really be a view.
//!
//! "Sharing memory" means reaching a common element of one buffer, decided
//! exactly by [`crate::overlap`] (`x[:, ::2]` and `x[:, 1::2]` do not
//! share). When that search gives up, the pair counts as sharing and the
//! finding says `"exact": false`.
//!
//! Outputs are also checked against every other live value, and against
//! the graph outputs of earlier runs ([`crate::alias`]:
//! `undeclared_alias`).
//!
//! An undeclared overlap of output `k` with input `i` is excused when `k` is
//! a declared alias of an input `j` that itself shares memory with `i` (the
//! op was given two views of one buffer, e.g. `add_inplace(x, x)`).

use serde_json::json;
use vigil_engine::exec::{At, Listener, OpEvent, SweepEvent, SweepWatch};
use vigil_engine::graph::Graph;
use vigil_engine::{Tensor, ViewKind};

use crate::alias::AliasCheck;
use crate::finding::{at_op, Finding, Kind, Validator};
use vigil_engine::tensor::overlap::{tensors_share_memory_bounded, Sharing, DEFAULT_MAX_WORK};

/// Checks declared views against the memory outputs really share.
pub struct ViewMapValidationListener {
    findings: Vec<Finding>,
    ops_checked: usize,
    max_work: u64,
    alias: AliasCheck,
    alias_on: bool,
}

impl Default for ViewMapValidationListener {
    fn default() -> Self {
        ViewMapValidationListener {
            findings: Vec::new(),
            ops_checked: 0,
            max_work: DEFAULT_MAX_WORK,
            alias: AliasCheck::default(),
            alias_on: true,
        }
    }
}

impl ViewMapValidationListener {
    pub fn new() -> Self {
        Self::default()
    }

    /// Search steps per overlap question before answering "shares"
    /// (inexactly); see [`crate::overlap`].
    pub fn max_work(mut self, steps: u64) -> Self {
        self.max_work = steps;
        self
    }

    /// Check outputs against every live value and earlier runs' outputs
    /// (`undeclared_alias`). On by default; off only to measure its cost.
    pub fn alias_check(mut self, on: bool) -> Self {
        self.alias_on = on;
        self
    }

    pub fn ops_checked(&self) -> usize {
        self.ops_checked
    }
}

/// A tensor's layout in finding details (no buffer ids: they differ from
/// run to run, and reports must not).
pub(crate) fn layout_json(t: &Tensor) -> serde_json::Value {
    json!({ "shape": t.shape(), "strides": t.strides(), "offset": t.offset() })
}

fn sharing_json(s: Sharing) -> serde_json::Value {
    json!({ "exact": s.exact(), "shared_offset": s.witness() })
}

impl Listener for ViewMapValidationListener {
    fn watches_sweeps(&self) -> SweepWatch {
        SweepWatch::Edges
    }

    /// A sweep keeps every node's buffers and layouts (each output is the
    /// swept value, declared destroyed), so each node is checked as
    /// `post_op` would check it. Not a pure first node that writes a fresh
    /// buffer: the sweep allocated it, and the later nodes' outputs, live
    /// now, hold it as they should.
    fn post_sweep(&mut self, at: &At, ev: &SweepEvent) {
        let fresh = !ev.input.same_buffer(ev.value);
        for k in (usize::from(fresh))..ev.nodes.len() {
            let inputs = ev.inputs(k);
            self.post_op(at, &ev.op_event(k, &inputs));
        }
    }

    fn operation_start(&mut self, _at: &At, _graph: &Graph) {
        self.alias.start_run();
    }

    fn operation_end(&mut self, _at: &At, graph: &Graph) {
        self.alias.end_run(graph);
    }

    fn post_op(&mut self, _at: &At, ev: &OpEvent) {
        self.ops_checked += 1;
        let work = self.max_work;
        if self.alias_on {
            self.alias.check(ev, work, &mut self.findings);
        }
        let share = |a: &Tensor, b: &Tensor| tensors_share_memory_bounded(a, b, work);
        let views = ev.node.op.view_map();
        let destroys = ev.node.op.destroy_map();
        let declared = |k: usize, i: usize| views.contains(&(k, i)) || destroys.contains(&(k, i));
        let n_out = ev.outputs.len();
        // Per output: does it really alias a declared input? Any bad alias?
        let mut good = vec![false; n_out];
        let mut bad = vec![false; n_out];
        for (k, out) in ev.outputs.iter().enumerate() {
            let sharing: Vec<Sharing> = ev.inputs.iter().map(|inp| share(out, inp)).collect();
            good[k] = sharing
                .iter()
                .enumerate()
                .any(|(i, s)| s.shares() && declared(k, i));
            for (i, s) in sharing.iter().enumerate() {
                if !s.shares() || declared(k, i) {
                    continue;
                }
                let excused = sharing.iter().enumerate().any(|(j, sj)| {
                    sj.shares() && declared(k, j) && share(&ev.inputs[i], &ev.inputs[j]).shares()
                });
                if excused {
                    continue;
                }
                bad[k] = true;
                let mut d = sharing_json(*s);
                d["output_layout"] = layout_json(out);
                d["input_layout"] = layout_json(&ev.inputs[i]);
                d["view_map"] = json!(views);
                d["destroy_map"] = json!(destroys);
                self.findings.push(
                    at_op(
                        Kind::UNDECLARED_VIEW,
                        ev,
                        format!("output {k} shares memory with input {i}, but neither view_map nor destroy_map declares it"),
                    )
                    .with_input(i)
                    .with_output(k)
                    .with_details(d),
                );
            }
        }
        for k in 0..n_out {
            for l in k + 1..n_out {
                let s = share(&ev.outputs[k], &ev.outputs[l]);
                // Two declared views may alias; a bad alias is reported above.
                if !s.shares() || (good[k] && good[l]) || bad[k] || bad[l] {
                    continue;
                }
                let mut d = sharing_json(s);
                d["outputs"] = json!([k, l]);
                d["layouts"] = json!([layout_json(&ev.outputs[k]), layout_json(&ev.outputs[l])]);
                self.findings.push(
                    at_op(
                        Kind::ALIASED_OUTPUTS,
                        ev,
                        format!("outputs {k} and {l} share memory"),
                    )
                    .with_output(k)
                    .with_details(d),
                );
            }
        }
        if ev.node.op.view_kind() == ViewKind::Must {
            for &(k, i) in &views {
                let (Some(out), Some(inp)) = (ev.outputs.get(k), ev.inputs.get(i)) else {
                    continue;
                };
                if !out.same_buffer(inp) {
                    self.findings.push(
                        at_op(
                            Kind::DECLARED_VIEW_NOT_ALIASED,
                            ev,
                            format!(
                                "output {k} is declared a view of input {i} but is a copy (another buffer)"
                            ),
                        )
                        .with_input(i)
                        .with_output(k)
                        .with_details(
                            json!({ "output_layout": layout_json(out), "input_layout": layout_json(inp) }),
                        ),
                    );
                }
            }
        }
    }
}

impl Validator for ViewMapValidationListener {
    fn findings(&self) -> &[Finding] {
        &self.findings
    }

    fn take_findings(&mut self) -> Vec<Finding> {
        std::mem::take(&mut self.findings)
    }
}

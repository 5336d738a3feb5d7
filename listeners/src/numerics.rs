//! The numerics listener: a health summary of every output (like
//! TensorFlow's FULL_HEALTH debug mode), and a `non_finite` finding only for
//! the op that *creates* NaN or Inf from all-finite inputs. Ops that merely
//! pass non-finite values on are recorded (`propagated`), not blamed, so one
//! bad op gives one finding however far its NaNs travel.
//!
//! Nodes of a fused sweep (`vigil_engine::exec::SweptOutput`) are judged
//! from the summaries the sweep made of each output tile by tile, so
//! validate mode sweeps as plain mode does. Their health equals a whole
//! output's, except that the mean's last bits may differ (the sum is added
//! in another order).

use std::collections::{BTreeMap, HashMap, HashSet};

use ndarray::ArrayViewD;
use serde::Serialize;
use serde_json::json;
use vigil_engine::exec::{At, Listener, OpEvent, SweepEvent, SweepWatch};
use vigil_engine::tensor::storage::BufferId;
use vigil_engine::{DType, Layout, Tensor};

use crate::finding::{unravel, Finding, Kind, Validator};
use vigil_engine::summary::{for_each_run, summarize, summarize_comparing, Acc, Summarize};

/// Counts and range of one tensor's elements. `negative`, `zero` and
/// `positive` count finite elements; `min`, `max` and `mean` are over finite
/// elements (`None` when there are none).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Health {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub elements: usize,
    pub nan: usize,
    pub neg_inf: usize,
    pub pos_inf: usize,
    pub negative: usize,
    pub zero: usize,
    pub positive: usize,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
}

impl Health {
    /// One pass over the elements: contiguous views (in any memory order)
    /// and contiguous innermost rows go through a lane-parallel kernel that
    /// LLVM vectorizes; other views are walked element by element.
    pub fn of(t: &Tensor) -> vigil_engine::Result<Health> {
        let mut acc = Acc::default();
        vigil_engine::dispatch_all!(t.dtype(), T => t.read(|v: ArrayViewD<'_, T>| summarize(&v, &mut acc))?);
        Ok(Health::from_acc(t, &acc))
    }

    /// The health of `got` (as [`Health::of`]) and whether it equals
    /// `want` element for element (NaN matching NaN), reading each once
    /// when both are contiguous in one layout; `None` for the equality
    /// otherwise (other dtype, shape or layout): compare them yourself.
    pub fn of_compared(got: &Tensor, want: &Tensor) -> vigil_engine::Result<(Health, Option<bool>)> {
        if got.dtype() != want.dtype() || got.shape() != want.shape() || got.strides() != want.strides() {
            return Ok((Health::of(got)?, None));
        }
        let mut acc = Acc::default();
        let same = vigil_engine::dispatch_all!(got.dtype(), T => got.read(|a: ArrayViewD<'_, T>| {
            want.read(|b: ArrayViewD<'_, T>| match (a.as_slice_memory_order(), b.as_slice_memory_order()) {
                (Some(x), Some(y)) => Some(summarize_comparing(x, y, &mut acc)),
                _ => {
                    summarize(&a, &mut acc);
                    None
                }
            })
        })??);
        Ok((Health::from_acc(got, &acc), same))
    }

    fn from_acc(t: &Tensor, acc: &Acc) -> Health {
        let finite = acc.negative + acc.zero + acc.positive;
        let (min, max) = acc.range().unzip();
        let mean = (finite > 0).then(|| acc.sum / finite as f64);
        Health {
            dtype: t.dtype(),
            shape: t.shape().to_vec(),
            elements: t.size(),
            nan: acc.nan,
            neg_inf: acc.neg_inf,
            pos_inf: acc.pos_inf,
            negative: acc.negative,
            zero: acc.zero,
            positive: acc.positive,
            min,
            max,
            mean,
        }
    }

    pub fn non_finite(&self) -> usize {
        self.nan + self.neg_inf + self.pos_inf
    }
}

/// The health of one node's outputs in the latest run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeHealth {
    pub node: String,
    pub op: String,
    pub position: Option<usize>,
    pub outputs: Vec<Health>,
    /// Every input was finite.
    pub inputs_finite: bool,
    /// Outputs are non-finite and the inputs were all finite: blamed.
    pub created_non_finite: bool,
    /// Outputs are non-finite because inputs were: recorded only.
    pub propagated: bool,
}

/// Records output health per node and blames ops that create NaN/Inf.
#[derive(Default)]
pub struct NumericsListener {
    findings: Vec<Finding>,
    health: BTreeMap<String, NodeHealth>,
    inputs_finite: Option<bool>,
    /// All-finite answers by (buffer, version, layout).
    finite_cache: HashMap<(BufferId, u64, Layout), bool>,
    /// Buffers (at a version) whose every element is finite: any view of
    /// them is, so a transposed or sliced reader costs no pass.
    finite_buffers: HashSet<(BufferId, u64)>,
    /// See [`NumericsListener::deferred`].
    deferred: bool,
    /// The last op's outputs, awaiting their health.
    pending: Option<Pending>,
    /// Whether the value a running sweep started from is all finite.
    sweep_input_finite: bool,
}

/// The index and value of an output's first NaN or infinity.
type FirstBad = (Vec<usize>, f64);

/// An op whose outputs' health is not known yet.
struct Pending {
    node: String,
    op: String,
    position: Option<usize>,
    outputs: Vec<Tensor>,
    inputs_finite: bool,
    /// For a swept node (whose output was never whole, so `outputs` is
    /// empty): where the sweep saw each output's first NaN or infinity.
    swept_first: Option<Vec<Option<FirstBad>>>,
}

fn all_finite(t: &Tensor) -> vigil_engine::Result<bool> {
    vigil_engine::dispatch_all!(t.dtype(), T => t.read(|v: ArrayViewD<'_, T>| {
        let mut ok = true;
        for_each_run(&v, |run| ok &= T::all_finite(run));
        ok
    }))
}

impl NumericsListener {
    pub fn new() -> Self {
        Self::default()
    }

    /// The outputs' health is handed in by the caller ([`Self::deliver`])
    /// after each op instead of computed in `post_op`: a caller that reads
    /// every output anyway (DebugMode's lockstep comparison, through
    /// [`Health::of_compared`]) saves the listener's pass over them. What
    /// is not delivered by the next op (or the run's end) is computed here.
    pub fn deferred(mut self) -> Self {
        self.deferred = true;
        self
    }

    /// The outputs of the last op whose health is awaited, in order.
    pub fn awaiting(&self) -> &[Tensor] {
        self.pending.as_ref().map_or(&[], |p| &p.outputs)
    }

    /// The health of [`Self::awaiting`]'s outputs, in order; a missing or
    /// extra entry is ignored and computed here.
    pub fn deliver(&mut self, health: Vec<Health>) {
        if let Some(p) = self.pending.take() {
            if health.len() == p.outputs.len() {
                self.judge(p, health);
            } else {
                self.pending = Some(p);
                self.settle();
            }
        }
    }

    /// Computes the health of undelivered outputs.
    fn settle(&mut self) {
        let Some(p) = self.pending.take() else { return };
        let mut health = Vec::with_capacity(p.outputs.len());
        for (k, t) in p.outputs.iter().enumerate() {
            match Health::of(t) {
                Ok(h) => health.push(h),
                Err(e) => tracing::warn!(node = %p.node, output = k, "health not computed: {e}"),
            }
        }
        self.judge(p, health);
    }

    /// The latest health of `node`'s outputs.
    pub fn health(&self, node: &str) -> Option<&NodeHealth> {
        self.health.get(node)
    }

    /// Every node's latest health, by node name.
    pub fn all_health(&self) -> &BTreeMap<String, NodeHealth> {
        &self.health
    }

    fn finite(&mut self, t: &Tensor) -> bool {
        if !t.dtype().is_float() {
            return true;
        }
        if self.finite_buffers.contains(&(t.buffer_id(), t.version())) {
            return true;
        }
        let key = (t.buffer_id(), t.version(), t.layout().clone());
        if let Some(&f) = self.finite_cache.get(&key) {
            return f;
        }
        // An unreadable input cannot be shown finite; do not blame the op.
        let f = all_finite(t).unwrap_or(false);
        self.remember(t, f);
        f
    }

    /// Records whether `t` is all finite, and for its whole buffer when it
    /// covers every element of it.
    fn remember(&mut self, t: &Tensor, finite: bool) {
        if self.finite_cache.len() > 4096 {
            self.finite_cache.clear();
        }
        if self.finite_buffers.len() > 4096 {
            self.finite_buffers.clear();
        }
        if finite && t.size() == t.data_size() && !t.layout().has_self_overlap() {
            self.finite_buffers.insert((t.buffer_id(), t.version()));
        }
        self.finite_cache
            .insert((t.buffer_id(), t.version(), t.layout().clone()), finite);
    }
}

/// The index (logical order) and value of the first NaN or infinity of `t`.
/// Only asked for on the failure path, so a plain walk is fine.
fn first_non_finite(t: &Tensor) -> Option<FirstBad> {
    vigil_engine::dispatch_all!(t.dtype(), T => t
        .read(|v: ArrayViewD<'_, T>| {
            v.indexed_iter()
                .map(|(i, x)| (i, vigil_engine::Element::to_f64(*x)))
                .find(|(_, x)| !x.is_finite())
                .map(|(i, x)| (ndarray::Dimension::slice(&i).to_vec(), x))
        })
        .ok()
        .flatten())
}

impl Listener for NumericsListener {
    fn pre_op(&mut self, _at: &At, ev: &OpEvent) {
        self.settle();
        let mut ok = true;
        for t in ev.inputs {
            ok &= self.finite(t);
        }
        self.inputs_finite = Some(ok);
    }

    fn post_op(&mut self, at: &At, ev: &OpEvent) {
        self.settle();
        self.pending = Some(Pending {
            node: ev.node.name.clone(),
            op: ev.op_name().to_string(),
            position: at.node_index,
            outputs: ev.outputs.to_vec(),
            inputs_finite: self.inputs_finite.take().unwrap_or(false),
            swept_first: None,
        });
        if !self.deferred {
            self.settle();
        }
    }

    fn operation_end(&mut self, _at: &At, _graph: &vigil_engine::Graph) {
        self.settle();
    }

    fn watches_sweeps(&self) -> SweepWatch {
        SweepWatch::Summaries
    }

    fn pre_sweep(&mut self, _at: &At, ev: &SweepEvent) {
        self.settle();
        self.sweep_input_finite = self.finite(ev.input);
    }

    /// Each swept node as `post_op` would judge it, from the sweep's
    /// summaries: its input 0 is the node before's output (after a folded
    /// node, the sweep's input, with the folded output as operand).
    fn post_sweep(&mut self, _at: &At, ev: &SweepEvent) {
        if ev.outputs.len() != ev.nodes.len() {
            tracing::warn!(
                position = ev.position,
                "a sweep came without summaries; its nodes' health is not known"
            );
            return;
        }
        let mut input_finite = self.sweep_input_finite;
        for (k, out) in ev.outputs.iter().enumerate() {
            let node = ev.graph.node(ev.nodes[k]);
            let mut ok = input_finite && (k != 1 || !ev.folded || self.sweep_input_finite);
            for &v in node.inputs.iter().skip(1).filter(|&&v| v != node.inputs[0]) {
                ok &= ev.live.value(v).is_none_or(|t| self.finite(t));
            }
            let health = Health::from_acc(ev.value, &out.summary);
            input_finite = health.non_finite() == 0;
            let first = out
                .first_non_finite
                .map(|(flat, x)| (unravel(flat, ev.value.shape()), x));
            let p = Pending {
                node: node.name.clone(),
                op: node.op.name().to_string(),
                position: Some(ev.position + k),
                outputs: Vec::new(),
                inputs_finite: ok,
                swept_first: Some(vec![first]),
            };
            self.judge(p, vec![health]);
        }
        // The swept buffer now holds the last node's output.
        self.remember(ev.value, input_finite);
    }
}

impl NumericsListener {
    /// Blames the op when its outputs are non-finite from finite inputs,
    /// and records their health.
    fn judge(&mut self, p: Pending, outputs: Vec<Health>) {
        let inputs_finite = p.inputs_finite;
        let bad = outputs.iter().any(|h| h.non_finite() > 0);
        if bad && inputs_finite {
            for (k, h) in outputs.iter().enumerate().filter(|(_, h)| h.non_finite() > 0) {
                let mut message = format!(
                    "output {k} has {} NaN, {} -inf, {} +inf from all-finite inputs",
                    h.nan, h.neg_inf, h.pos_inf
                );
                let first = match &p.swept_first {
                    Some(f) => f.get(k).cloned().flatten(),
                    None => p.outputs.get(k).and_then(first_non_finite),
                };
                if let Some((index, x)) = &first {
                    message.push_str(&format!(
                        ", the first at {} ({x})",
                        crate::finding::fmt_index(index)
                    ));
                }
                let first = first.map(|(index, x)| json!({ "index": index, "value": x.to_string() }));
                self.findings.push(
                    Finding::new(Kind::NON_FINITE, message)
                        .at(p.node.clone(), &p.op)
                        .with_output(k)
                        .with_details(json!({ "health": h, "first": first })),
                );
            }
        }
        // The outputs' finiteness is known now; later readers reuse it.
        for (t, h) in p.outputs.iter().zip(&outputs) {
            if t.dtype().is_float() {
                self.remember(t, h.non_finite() == 0);
            }
        }
        self.health.insert(
            p.node.clone(),
            NodeHealth {
                node: p.node,
                op: p.op,
                position: p.position,
                outputs,
                inputs_finite,
                created_non_finite: bad && inputs_finite,
                propagated: bad && !inputs_finite,
            },
        );
    }
}

impl Validator for NumericsListener {
    fn findings(&self) -> &[Finding] {
        &self.findings
    }

    fn take_findings(&mut self) -> Vec<Finding> {
        self.settle();
        std::mem::take(&mut self.findings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_counts_like_full_health() {
        let t = Tensor::from_vec(
            &[6],
            vec![f32::NAN, -1.0, 0.0, 2.0, f32::INFINITY, f32::NEG_INFINITY],
        )
        .unwrap();
        let h = Health::of(&t).unwrap();
        assert_eq!((h.nan, h.neg_inf, h.pos_inf), (1, 1, 1));
        assert_eq!((h.negative, h.zero, h.positive), (1, 1, 1));
        assert_eq!((h.min, h.max), (Some(-1.0), Some(2.0)));
        assert!((h.mean.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        let i = Health::of(&Tensor::from_vec(&[2], vec![3i64, -3]).unwrap()).unwrap();
        assert_eq!((i.non_finite(), i.mean), (0, Some(0.0)));
    }
}

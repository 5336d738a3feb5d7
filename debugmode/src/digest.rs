//! Re-runs compared with a baseline run: the baseline keeps a copy of every
//! value it produces, and each re-run (another order, pre-allocated
//! outputs) compares its values with them as they are produced, within the
//! configured tolerance (a different memory layout may legitimately change
//! the order of a reduction, and so its last bits).

use std::collections::HashMap;

use vigil_engine::compare::compare;
use vigil_engine::exec::{At, Listener, OpEvent, Prealloc, RunOptions};
use vigil_engine::graph::{Graph, NodeId, VarId};
use vigil_engine::ops::OpCtx;
use vigil_engine::{BufferPolicy, Executor, Layout, Tensor};

use serde_json::json;
use vigil_findings::{Finding, Kind};

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
    /// The node running, to name it when it panics.
    current: Option<String>,
    /// Layout and buffer length of every produced value (baseline runs).
    layouts: HashMap<VarId, (Layout, usize)>,
    /// The output buffers this run hands its ops, if any.
    supply: Option<Prealloc<'a>>,
    /// The first difference goes away when the op is handed its inputs in
    /// their baseline layouts (and the same output buffers): the inputs'
    /// layouts caused it, not the output buffers.
    pub caused_by_inputs: bool,
}

impl Run<'_> {
    /// The baseline's copy of `v`, once produced.
    pub fn value(&self, v: VarId) -> Option<&Tensor> {
        self.values.get(&v)
    }

    /// Whether `ev`'s op (one with fresh outputs), some of whose inputs
    /// come in other layouts than in this baseline, called again on its
    /// inputs re-laid out as the baseline had them and on output buffers
    /// of the kind `supply` hands out, gives output `k` as `want`.
    fn same_with_base_inputs(
        &self,
        ev: &OpEvent,
        k: usize,
        want: &Tensor,
        cfg: &DebugConfig,
        supply: Prealloc<'_>,
        current: &HashMap<VarId, (Layout, usize)>,
    ) -> bool {
        let node = ev.node;
        if !node.op.destroy_map().is_empty() || !node.op.view_map().is_empty() {
            return false;
        }
        let moved = ev.inputs.iter().enumerate().any(|(i, t)| {
            self.layouts
                .get(&node.inputs[i])
                .is_some_and(|(l, len)| l != t.layout() || *len != t.data_size())
        });
        if !moved {
            return false;
        }
        // A view is re-laid out with the whole value it views (its root),
        // so what lies around it is what lay around it in the baseline.
        let roots = vigil_engine::destroy::DestroyHandler::new(ev.graph);
        let relaid = |i: usize, t: &Tensor| -> vigil_engine::Result<Tensor> {
            let v = node.inputs[i];
            let Some((l, len)) = self.layouts.get(&v).filter(|(l, _)| l != t.layout()) else {
                return t.deep_copy();
            };
            let root = roots.root(v);
            let whole = match (root != v, self.layouts.get(&root), current.get(&root)) {
                (true, Some((base_root, base_len)), Some((cur_root, _))) => {
                    let buf = Tensor::zeros(t.dtype(), &[*base_len])?;
                    buf.with_layout(base_root.clone())?
                        .assign(&t.with_layout(cur_root.clone())?)?;
                    Some(buf)
                }
                _ => None,
            };
            match whole {
                Some(buf) => buf.with_layout(l.clone()),
                None => {
                    let c = Tensor::zeros(t.dtype(), &[*len])?.with_layout(l.clone())?;
                    c.assign(t)?;
                    Ok(c)
                }
            }
        };
        let Ok(inputs) = ev
            .inputs
            .iter()
            .enumerate()
            .map(|(i, t)| relaid(i, t))
            .collect::<vigil_engine::Result<Vec<_>>>()
        else {
            return false;
        };
        let outs = supply(ev.node_id, node);
        let Ok(Ok(got)) = crate::guard::catch(|| {
            node.op
                .compute(&inputs, &mut OpCtx::with_prealloc(&node.name, outs))
        }) else {
            return false;
        };
        got.get(k)
            .and_then(|g| compare(g, want, cfg.tolerance(want.dtype())).ok())
            .is_some_and(|c| c.is_close())
    }
}

impl Listener for Run<'_> {
    fn pre_op(&mut self, _: &At, ev: &OpEvent) {
        self.current = Some(ev.node.name.clone());
    }

    fn post_op(&mut self, at: &At, ev: &OpEvent) {
        // A body's values are keyed by the body graph's ids: its control
        // node's outputs stand for them.
        if at.in_body {
            return;
        }
        if let Some(p) = at.node_index {
            self.position.insert(ev.node_id, p);
        }
        for (k, t) in ev.outputs.iter().enumerate() {
            let v = ev.node.outputs[k];
            self.layouts.insert(v, (t.layout().clone(), t.data_size()));
            let result = match self.base {
                None => t.deep_copy().map(|c| {
                    self.values.insert(v, c);
                }),
                Some(_) if self.first_difference.is_some() => Ok(()),
                Some((base, cfg)) => match base.values.get(&v) {
                    Some(want) => compare(t, want, cfg.tolerance(want.dtype())).map(|c| {
                        if !c.is_close() {
                            self.first_difference = Some(v);
                            self.caused_by_inputs = self.supply.is_some_and(|supply| {
                                base.same_with_base_inputs(ev, k, want, cfg, supply, &self.layouts)
                            });
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
    prealloc: Option<Prealloc<'a>>,
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
        current: None,
        layouts: HashMap::new(),
        supply: prealloc,
        caused_by_inputs: false,
    };
    let opts = RunOptions {
        buffers: BufferPolicy::Zero,
        prealloc,
        ..RunOptions::default()
    };
    // A panicking op fails this run like an op error: the re-run is not
    // available, and the lockstep run reports the op.
    match crate::guard::catch(|| exec.run_with(&f, &mut r, &opts)) {
        Ok(done) => drop(done?),
        Err(p) => {
            let node = r.current.clone().unwrap_or_default();
            let panic = vigil_engine::Error::op(format!("the op panicked: {p}"));
            return Err(vigil_engine::Error::node(&node, panic).into());
        }
    }
    if let Some(e) = r.error.take() {
        return Err(vigil_engine::Error::Graph(e).into());
    }
    Ok(r)
}

/// The baseline run once more, compared with the first: before a re-run
/// check blames a difference on what it changed, the same run must give
/// the same values. A value that differs gives `nondeterministic` at its
/// producer.
pub fn repeat(
    graph: &Graph,
    feeds: &Feeds,
    base: &Run<'_>,
    cfg: &DebugConfig,
    runs: &mut usize,
) -> Result<Option<Finding>> {
    *runs += 1;
    let again = run(graph, feeds, None, None, Some((base, cfg)))?;
    let Some(v) = again.first_difference else {
        return Ok(None);
    };
    let var = &graph.var(v).name;
    let mut f = Finding::new(
        Kind::NONDETERMINISTIC,
        format!("'{var}' differs between two identical runs: the op is nondeterministic"),
    )
    .with_details(json!({"var": var}));
    if let Some((n, k)) = graph.producer(v) {
        let node = graph.node(n);
        f = f.at(node.name.clone(), node.op.name()).with_output(k);
    }
    Ok(Some(f))
}

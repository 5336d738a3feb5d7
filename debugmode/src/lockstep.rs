//! The in-place run and the pure reference run, stepped together in one
//! order valid for both, each value compared as soon as both runs have it
//! and released as soon as both are done with it.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};
use vigil_engine::compare::{compare, Comparison, Tolerance};
use vigil_engine::exec::{
    copy_destroyed, copy_values, destroyed_sources, Copier, Cursor, RunOptions, Snapshot, TwinStep,
};
use vigil_engine::graph::{Graph, NodeId, VarId, VarKind};
use vigil_engine::ops::OpCtx;
use vigil_engine::tensor::storage::BufferId;
use vigil_engine::{BufferPolicy, DType, Element, Executor, Layout, Tensor};
use vigil_findings::{json_f64, Finding, Kind};
use vigil_listeners::{
    Health, ListenerSet, NonInplaceValidationListener, NumericsListener, Validator, ViewMapValidationListener,
};

use crate::arbitrate::{self, Candidate, Verdict};
use crate::capture::{Capture, Writer};
use crate::config::{Check, DebugConfig};
use crate::error::Result;
use crate::guard::catch;
use crate::reference_isolation::ReferenceIsolation;

pub use vigil_engine::Feeds;

/// How one lockstep run is set up.
#[derive(Clone, Copy)]
pub struct Opts {
    pub listeners: bool,
    pub poison: bool,
    pub compare: bool,
    /// The sources are lent read-only (see `vigil_engine::exec::Lent`):
    /// the in-place run copies only those it overwrites and shares the
    /// rest. Otherwise it copies every source.
    pub lend: bool,
}

/// What one lockstep run found.
pub struct Outcome {
    pub findings: Vec<Finding>,
    /// The root-cause divergences, as (node, output) in execution order:
    /// the run's signature for reproducibility and bisection.
    pub roots: Vec<(NodeId, usize)>,
    pub outputs: Vec<(String, Tensor)>,
    pub compared: usize,
    pub exact: usize,
    /// Of the exact values, those compared tile by tile in twin sweeps.
    pub swept: usize,
    pub tolerated: usize,
    pub propagated: usize,
    /// Divergences fp64 arbitration accepted.
    pub arbitrated: usize,
    pub peak_inplace: usize,
    pub peak_both: usize,
}

impl Outcome {
    pub fn diverged(&self) -> bool {
        !self.roots.is_empty()
    }
}

/// Fresh copies of `graph`'s values and of `feeds`, sharing what shared.
pub fn fresh(graph: &Graph, feeds: &Feeds) -> Result<(Graph, Feeds)> {
    let mut c = Copier::default();
    let g = copy_values(graph, &mut c)?;
    let f = feeds
        .iter()
        .map(|(k, t)| Ok((k.clone(), c.copy(t)?)))
        .collect::<vigil_engine::Result<_>>()?;
    Ok((g, f))
}

/// Fills the whole buffer behind `t` with the poison sentinel.
pub fn poison_buffer(t: &Tensor) -> vigil_engine::Result<()> {
    let whole = t.with_layout(Layout::contiguous(&[t.data_size()]))?;
    vigil_engine::dispatch_all!(t.dtype(), T => whole.write(|mut v: ndarray::ArrayViewMutD<'_, T>| v.fill(<T as Element>::POISON))?);
    Ok(())
}

/// Runs `inplace` beside `reference` (built with `iso`). The in-place run
/// works on fresh copies of its values and of `feeds` (with `opts.lend`,
/// of those it overwrites); a copying reference too, a watching one on the
/// values themselves. A reference value written after it was produced
/// trips `iso`; the caller then repeats with a copying reference.
pub fn run(
    inplace: &Graph,
    reference: &Graph,
    iso: &ReferenceIsolation,
    feeds: &Feeds,
    cfg: &DebugConfig,
    opts: Opts,
) -> Result<Outcome> {
    let (ig, ifeeds) = if opts.lend {
        copy_destroyed(inplace, feeds, &destroyed_sources(inplace))?
    } else {
        fresh(inplace, feeds)?
    };
    let ie = Executor::new(&ig)?;
    // A watching reference runs on the caller's values themselves, lent
    // read-only: a write to one fails (and one to a value the reference
    // produced trips the watch), and the caller repeats everything with a
    // copying reference.
    let (rg, rfeeds) = if opts.compare && iso.is_copying() {
        fresh(reference, feeds)?
    } else if opts.compare {
        (reference.clone(), feeds.clone())
    } else {
        (reference.clone(), Feeds::new())
    };
    let re = if opts.compare {
        Some(Executor::with_order(&rg, ie.order().to_vec())?.with_layouts_of(&ie))
    } else {
        None
    };
    let iopts = RunOptions {
        buffers: if opts.poison {
            BufferPolicy::Poison
        } else {
            BufferPolicy::Reuse
        },
        ..RunOptions::default()
    };
    // The reference must not depend on stale contents. With the in-place
    // run poisoned, its outputs go into reused buffers unzeroed (zeroing
    // was a pass over every output), and an output that then disagrees is
    // recomputed into a zeroed buffer before anything is judged (see
    // `check_outputs`): a kernel that reads its output buffer shows against
    // the poisoned run either way. Without poison both runs could reuse
    // the same stale values, so every reference buffer is zeroed.
    let ropts = RunOptions {
        buffers: if opts.poison {
            BufferPolicy::Reuse
        } else {
            BufferPolicy::Zero
        },
        ..RunOptions::default()
    };
    let mut set = ListenerSet::new();
    if opts.listeners {
        // Hash-mode detections are replayed on the untouched originals
        // (this run works on copies), so findings name the changed element.
        set.push(NonInplaceValidationListener::new().replay_on(Snapshot::sharing(inplace, feeds)));
        set.push(ViewMapValidationListener::new());
        // The lockstep comparison reads every output anyway and hands the
        // listener their health from the same pass.
        set.push(if opts.compare {
            NumericsListener::new().deferred()
        } else {
            NumericsListener::new()
        });
    }
    set.push(Capture::new(opts.poison));
    let mut rcap = Capture::new(false);

    let mut ic = ie.start(&ifeeds, &mut set, &iopts)?;
    let mut rc = match &re {
        Some(re) => Some(re.start(&rfeeds, &mut rcap, &ropts)?),
        None => None,
    };
    let sources: HashSet<BufferId> = ig
        .vars()
        .iter()
        .enumerate()
        .filter(|(_, v)| !matches!(v.kind, VarKind::Output { .. }))
        .filter_map(|(i, _)| ic.value(i).map(Tensor::buffer_id))
        .collect();
    if let Some(cap) = set.get_mut::<Capture>() {
        cap.bind(&ig, |v| ic.value(v).cloned());
    }
    if let Some(rc) = &rc {
        rcap.bind(&rg, |v| rc.value(v).cloned());
    }
    let mut st = State {
        g: &ig,
        cfg,
        findings: Vec::new(),
        warnings: Vec::new(),
        inexact: HashSet::new(),
        roots: Vec::new(),
        diverged: HashMap::new(),
        compared: 0,
        exact: 0,
        swept: 0,
        tolerated: 0,
        propagated: Vec::new(),
        candidates: Vec::new(),
        reference_zeroed: ropts.buffers == BufferPolicy::Zero,
    };
    let mut peak_both = 0;
    // A panic in either run ends it at that node, as a finding.
    let mut failure: Option<Finding> = None;
    // Positions before this one step node by node: a twin sweep over them
    // differed.
    let mut no_sweep_until = 0;
    let ran = (|| -> Result<()> {
        while let Some(n) = ic.next_node() {
            if let (Some(rc), true) = (&mut rc, cfg.sweeps && ic.position() >= no_sweep_until) {
                let pos = ic.position();
                let span = ic.twin_span(rc);
                // Only nodes whose inputs are as produced and agree so far:
                // the node-by-node steps would compare nothing else first.
                let cap = set.get::<Capture>();
                let ok = ie.order()[pos..pos + span]
                    .iter()
                    .take_while(|&&m| {
                        let (inputs, rinputs) = (&ig.node(m).inputs, &rg.node(m).inputs);
                        !inputs.iter().any(|v| st.diverged.contains_key(v))
                            && !cap.is_some_and(|c| changed_after_production(inputs, &ic, c))
                            && !changed_after_production(rinputs, rc, &rcap)
                    })
                    .count();
                if ok >= 2 {
                    // What both runs hold before the sweep, and the swept
                    // input of the in-place run (a sweep that starts at a
                    // pure node writes a fresh buffer instead).
                    let held = ic.live_bytes() + rc.live_bytes();
                    let input = ic.value(ig.node(n).inputs[0]).cloned();
                    match ic.step_twin(rc, ok, &mut set, &mut rcap, opts.listeners)? {
                        TwinStep::Ran { nodes, .. } => {
                            let last = rg.node(nodes[nodes.len() - 1]).outputs[0];
                            if let Some(t) = rc.value(last) {
                                rcap.born_now(last, t);
                            }
                            // Every node's output agreed bit for bit.
                            st.compared += nodes.len();
                            st.exact += nodes.len();
                            st.swept += nodes.len();
                            // While the sweep ran, both runs held their
                            // inputs and its new buffers at once.
                            let fresh = |t: Option<&Tensor>, old: Option<&Tensor>| {
                                t.filter(|t| old.is_none_or(|o| !o.same_buffer(t)))
                                    .map_or(0, Tensor::nbytes)
                            };
                            let during =
                                held + fresh(rc.value(last), None) + fresh(ic.value(last), input.as_ref());
                            peak_both = peak_both.max(during).max(ic.live_bytes() + rc.live_bytes());
                            poison_released(&mut set, &sources)?;
                            continue;
                        }
                        TwinStep::Differs => no_sweep_until = pos + ok,
                        TwinStep::NoSweep => {}
                    }
                }
            }
            if let Some(rc) = &rc {
                st.check_inputs(n, &ic, rc, set.get::<Capture>())?;
                if !iso.is_copying() && changed_after_production(rg.node(n).inputs.as_slice(), rc, &rcap) {
                    iso.trip();
                }
            }
            // The in-place op's inputs, held to tell an output buffer's
            // content apart from the op's arithmetic (ops with fresh
            // outputs only: an in-place op already changed its input).
            let inode = ig.node(n);
            let iheld: Option<Vec<Tensor>> =
                (rc.is_some() && inode.op.destroy_map().is_empty() && inode.op.view_map().is_empty())
                    .then(|| inode.inputs.iter().map(|&v| ic.value(v).cloned()).collect())
                    .flatten();
            match catch(|| ic.step(&mut set)) {
                Ok(r) => drop(r?),
                Err(msg) => {
                    failure = Some(panicked(&ig, n, "in-place", &msg));
                    break;
                }
            }
            let produced = set
                .get_mut::<Capture>()
                .map(|c| std::mem::take(&mut c.produced))
                .unwrap_or_default();
            if let Some(rc) = &mut rc {
                let rnode = rg.node(n);
                // The reference's inputs, held for a recomputation.
                let held: Option<Vec<Tensor>> = rnode.inputs.iter().map(|&v| rc.value(v).cloned()).collect();
                match catch(|| rc.step(&mut rcap)) {
                    Ok(r) => drop(r?),
                    Err(msg) => {
                        failure = Some(panicked(&rg, n, "reference", &msg));
                        break;
                    }
                }
                let expected = std::mem::take(&mut rcap.produced);
                let same = deliver_health(&mut set, &produced, &expected);
                // The same op on inputs laid out alike in both runs (and,
                // unless `inexact` says otherwise, equal bit for bit).
                let alike = match (&iheld, &held) {
                    (Some(i), Some(r)) => {
                        i.len() == r.len()
                            && i.iter()
                                .zip(r)
                                .all(|(a, b)| a.shape() == b.shape() && a.strides() == b.strides())
                    }
                    _ => false,
                };
                let mut rerun = || recompute_zeroed(rnode, held.as_deref());
                let mut rerun_inplace = |p: BufferPolicy| recompute_private(inode, iheld.as_deref(), p);
                let p = Produced {
                    got: &produced,
                    want: &expected,
                    same: &same,
                    alike,
                };
                let clean = st.check_outputs(n, p, &mut rerun, &mut rerun_inplace)?;
                for (v, t) in clean {
                    rc.replace_value(v, t);
                }
                drop(held);
                peak_both = peak_both.max(ic.live_bytes() + rc.live_bytes());
            }
            drop(produced);
            drop(iheld);
            poison_released(&mut set, &sources)?;
        }
        Ok(())
    })();
    // The listeners finish (and report) even when an op failed.
    let iout = ic.finish(&mut set);
    ran?;
    let iout = iout?;
    if let (Some(rc), None) = (rc, &failure) {
        let rout = rc.finish(&mut rcap)?;
        st.check_final(&iout.outputs, &rout.outputs, set.get::<Capture>())?;
    }
    set.collect();
    let mut findings = set.take_findings();
    findings.extend(failure);
    let State {
        findings: mine,
        warnings,
        roots,
        compared,
        exact,
        swept,
        mut tolerated,
        propagated,
        candidates,
        ..
    } = st;
    let mut verdicts: HashMap<usize, Verdict> = HashMap::new();
    let mut unavailable: HashMap<usize, String> = HashMap::new();
    if !candidates.is_empty() {
        let judged = arbitrate::judge(inplace, feeds, &candidates, cfg.arbitration_multiplier)?;
        for (c, v) in candidates.iter().zip(judged) {
            match v {
                Ok(v) => {
                    verdicts.insert(c.root, v);
                }
                Err(why) => {
                    unavailable.insert(c.root, why);
                }
            }
        }
    }
    let accepted = |root: &usize| verdicts.get(root).is_some_and(|v| v.accepted);
    let arbitrated = (0..roots.len()).filter(accepted).count();
    tolerated += arbitrated + propagated.iter().filter(|(r, _)| accepted(r)).count();
    let n_propagated = propagated.iter().filter(|(r, _)| !accepted(r)).count();
    for (i, mut f) in attach_propagated(mine, &roots, &propagated, &ig)
        .into_iter()
        .enumerate()
    {
        if accepted(&i) {
            continue;
        }
        if let (Some(v), Value::Object(m)) = (verdicts.get(&i), &mut f.details) {
            m.insert(
                "arbitration".into(),
                json!({"rmse_inplace": json_f64(v.rmse_inplace), "rmse_pure": json_f64(v.rmse_pure),
                       "multiplier": cfg.arbitration_multiplier}),
            );
        }
        if let (Some(why), Value::Object(m)) = (unavailable.get(&i), &mut f.details) {
            m.insert("arbitration".into(), json!({"not_arbitrated": why}));
            f.message.push_str(&format!(" (not arbitrated: {why})"));
        }
        findings.push(f);
    }
    findings.extend(warnings);
    let roots = roots
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !accepted(i))
        .map(|(_, r)| r)
        .collect();
    Ok(Outcome {
        findings,
        roots,
        outputs: iout.outputs,
        compared,
        exact,
        swept,
        tolerated,
        propagated: n_propagated,
        arbitrated,
        peak_inplace: iout.stats.peak_live_bytes,
        peak_both,
    })
}

/// Poisons the values the last step released (`Capture::released`), but
/// the sources'.
fn poison_released(set: &mut ListenerSet, sources: &HashSet<BufferId>) -> Result<()> {
    let released = set
        .get_mut::<Capture>()
        .map(|c| std::mem::take(&mut c.released))
        .unwrap_or_default();
    for (_, t) in released {
        // A buffer nobody else holds goes back to the pool, which poisons
        // it when it hands it out again: poisoning it here too would be a
        // second pass over it.
        if !sources.contains(&t.buffer_id()) && t.storage().holders() > 1 {
            poison_buffer(&t)?;
        }
    }
    Ok(())
}

/// Hands a deferred numerics listener the health of the step's outputs,
/// computed in the same pass that tells whether each equals the
/// reference's (one read of every output instead of two). Returns that
/// equality per output (`None`: not known, compare in full). Anything
/// unexpected leaves the listener to compute the health itself.
fn deliver_health(
    set: &mut ListenerSet,
    got: &[(VarId, Tensor)],
    want: &[(VarId, Tensor)],
) -> Vec<Option<bool>> {
    let unknown = vec![None; got.len()];
    let Some(numerics) = set.get_mut::<NumericsListener>() else {
        return unknown;
    };
    if numerics.awaiting().len() != got.len() {
        return unknown;
    }
    let mut health = Vec::with_capacity(got.len());
    let mut same = Vec::with_capacity(got.len());
    for (v, t) in got {
        let (h, s) = match want.iter().find(|(u, _)| u == v) {
            Some((_, w)) => match Health::of_compared(t, w) {
                Ok(hs) => hs,
                Err(_) => return unknown,
            },
            None => match Health::of(t) {
                Ok(h) => (h, None),
                Err(_) => return unknown,
            },
        };
        health.push(h);
        same.push(s);
    }
    numerics.deliver(health);
    same
}

/// The reference node's outputs recomputed into zeroed buffers, by
/// variable; `None` when its inputs were not held or it fails or panics
/// this time (a stateful kernel), and the first result stands.
fn recompute_zeroed(
    node: &vigil_engine::graph::Node,
    inputs: Option<&[Tensor]>,
) -> Option<Vec<(VarId, Tensor)>> {
    let inputs = inputs?;
    let _zero = vigil_engine::tensor::buffer_pool::with_policy(BufferPolicy::Zero);
    let outs = catch(|| node.op.compute(inputs, &mut OpCtx::new(&node.name)))
        .ok()?
        .ok()?;
    (outs.len() == node.outputs.len()).then(|| node.outputs.iter().copied().zip(outs).collect())
}

/// The in-place node's outputs recomputed from private copies of its
/// inputs (the op may write them) into fresh buffers as `pool` makes them
/// (zeroed or poisoned), by variable; `None` as for [`recompute_zeroed`].
fn recompute_private(
    node: &vigil_engine::graph::Node,
    inputs: Option<&[Tensor]>,
    pool: BufferPolicy,
) -> Option<Vec<(VarId, Tensor)>> {
    let mut c = Copier::default();
    let private = inputs?
        .iter()
        .map(|t| c.copy(t))
        .collect::<vigil_engine::Result<Vec<_>>>()
        .ok()?;
    let _pool = vigil_engine::tensor::buffer_pool::with_policy(pool);
    let outs = catch(|| node.op.compute(&private, &mut OpCtx::new(&node.name)))
        .ok()?
        .ok()?;
    (outs.len() == node.outputs.len()).then(|| node.outputs.iter().copied().zip(outs).collect())
}

/// The `op_panic` finding of node `n` of `g`, which panicked in `run`.
pub fn panicked(g: &Graph, n: NodeId, run: &str, msg: &str) -> Finding {
    let node = g.node(n);
    Finding::new(
        Kind::OP_PANIC,
        format!("the op panicked in the {run} run: {msg}; the run stopped at this node"),
    )
    .at(node.name.clone(), node.op.name())
    .with_details(json!({"run": run, "panic": msg}))
}

/// Whether a value `n` reads was written after it was produced.
fn changed_after_production(inputs: &[VarId], c: &Cursor, cap: &Capture) -> bool {
    inputs.iter().any(|&v| {
        let (Some(t), Some(&(buf, version))) = (c.value(v), cap.born.get(&v)) else {
            return false;
        };
        t.buffer_id() == buf && t.version() != version
    })
}

/// One step's outputs in both runs, for [`State::check_outputs`].
struct Produced<'p> {
    /// The in-place run's outputs and the reference's, by variable.
    got: &'p [(VarId, Tensor)],
    want: &'p [(VarId, Tensor)],
    /// Per output of `got`: whether it is already known to equal the
    /// reference's (`None`: compare in full).
    same: &'p [Option<bool>],
    /// Both runs called the same op on inputs laid out alike.
    alike: bool,
}

/// Comparison state of one lockstep run.
struct State<'a> {
    g: &'a Graph,
    cfg: &'a DebugConfig,
    /// Root-cause findings, one per entry of `roots`.
    findings: Vec<Finding>,
    /// Findings that are no root cause: nothing downstream is marked.
    warnings: Vec<Finding>,
    /// Values not bit for bit the reference's (within tolerance or not).
    inexact: HashSet<VarId>,
    roots: Vec<(NodeId, usize)>,
    /// Diverged variables → the root (index into `roots`) they come from.
    diverged: HashMap<VarId, usize>,
    compared: usize,
    exact: usize,
    swept: usize,
    tolerated: usize,
    /// (root, variable) of each value spoiled downstream of a root.
    propagated: Vec<(usize, VarId)>,
    /// f32 root divergences for fp64 arbitration.
    candidates: Vec<Candidate>,
    /// The reference's first values went into zeroed buffers too.
    reference_zeroed: bool,
}

impl State<'_> {
    fn tolerance(&self, t: &Tensor) -> vigil_engine::compare::Tolerance {
        self.cfg.tolerance(t.dtype())
    }

    /// Inputs of `n` whose buffer changed after they were produced must
    /// still hold the reference's values.
    fn check_inputs(&mut self, n: NodeId, ic: &Cursor, rc: &Cursor, cap: Option<&Capture>) -> Result<()> {
        let Some(cap) = cap else { return Ok(()) };
        let node = self.g.node(n);
        for (i, &v) in node.inputs.iter().enumerate() {
            if self.diverged.contains_key(&v) {
                continue;
            }
            let (Some(t), Some(want)) = (ic.value(v), rc.value(v)) else {
                continue;
            };
            let Some(&(buf, version)) = cap.born.get(&v) else {
                continue;
            };
            if t.buffer_id() != buf || t.version() == version {
                continue;
            }
            let cmp = compare(t, want, self.tolerance(want))?;
            if cmp.is_close() {
                continue;
            }
            let writer = cap.writers.get(&buf).copied();
            let f = self.changed_after_production(n, i, v, writer, &cmp);
            self.add_root(n, usize::MAX - i, v, f);
        }
        Ok(())
    }

    fn changed_after_production(
        &self,
        reader: NodeId,
        input: usize,
        v: VarId,
        writer: Option<Writer>,
        cmp: &Comparison,
    ) -> Finding {
        let g = self.g;
        let node = g.node(reader);
        let var = &g.var(v).name;
        let summary = summary(cmp);
        let (kind, message, by) = match writer {
            Some(w) if w.declared => {
                let d = g.node(w.node);
                (
                    Kind::READ_AFTER_DESTROY,
                    format!(
                        "reads '{var}' (input {input}) after node '{}' ({}) destroyed it: {summary}",
                        d.name,
                        d.op.name()
                    ),
                    Some(d),
                )
            }
            Some(w) => {
                let d = g.node(w.node);
                (
                    Kind::VALUE_MISMATCH,
                    format!(
                        "input {input} '{var}' changed after it was produced, written by node '{}' ({}), which does not declare it: {summary}",
                        d.name,
                        d.op.name()
                    ),
                    Some(d),
                )
            }
            None => (
                Kind::VALUE_MISMATCH,
                format!("input {input} '{var}' changed after it was produced: {summary}"),
                None,
            ),
        };
        let mut details = diff_details(cmp, var, self.cfg.tolerance(self.g.var(v).ty.dtype));
        details["changed_after_production"] = json!(true);
        if let Some(d) = by {
            details["written_by"] = json!({"node": d.name, "op": d.op.name()});
        }
        Finding::new(kind, message)
            .at(node.name.clone(), node.op.name())
            .with_input(input)
            .with_details(details)
    }

    fn add_root(&mut self, n: NodeId, slot: usize, v: VarId, f: Finding) {
        self.diverged.insert(v, self.roots.len());
        self.roots.push((n, slot));
        self.findings.push(f);
    }

    /// `f` placed at node `n`'s output `k` (variable `v`), with the
    /// comparison against the reference's value `want` as its details.
    fn on_output(
        &self,
        f: Finding,
        n: NodeId,
        k: usize,
        v: VarId,
        cmp: &Comparison,
        want: &Tensor,
    ) -> Finding {
        let node = self.g.node(n);
        let var = &self.g.var(v).name;
        f.at(node.name.clone(), node.op.name())
            .with_output(k)
            .with_details(diff_details(cmp, var, self.tolerance(want)))
    }

    /// `p.same[k]`: output `k` is already known to equal the reference's.
    /// An output that differs while the inputs agree is judged against the
    /// reference recomputed into zeroed buffers (`rerun`, called at most
    /// once); the recomputed values are returned, for the reference run to
    /// continue with.
    fn check_outputs(
        &mut self,
        n: NodeId,
        p: Produced<'_>,
        rerun: &mut dyn FnMut() -> Option<Vec<(VarId, Tensor)>>,
        rerun_inplace: &mut dyn FnMut(BufferPolicy) -> Option<Vec<(VarId, Tensor)>>,
    ) -> Result<Vec<(VarId, Tensor)>> {
        let Produced {
            got,
            want,
            same,
            alike,
        } = p;
        let node = self.g.node(n);
        let from = node.inputs.iter().find_map(|v| self.diverged.get(v).copied());
        let same_inputs = alike && !node.inputs.iter().any(|v| self.inexact.contains(v));
        let mut clean: Option<Option<Vec<(VarId, Tensor)>>> = None;
        let mut second: Option<Option<Vec<(VarId, Tensor)>>> = None;
        let mut zeroed: Option<Option<Vec<(VarId, Tensor)>>> = None;
        let mut poisoned: Option<Option<Vec<(VarId, Tensor)>>> = None;
        let mut replaced = Vec::new();
        for (k, (v, t)) in got.iter().enumerate() {
            let Some((_, w)) = want.iter().find(|(u, _)| u == v) else {
                continue;
            };
            if same.get(k) == Some(&Some(true)) {
                self.compared += 1;
                self.exact += 1;
                continue;
            }
            let mut w = w.clone();
            let mut cmp = compare(t, &w, self.tolerance(&w))?;
            if !cmp.is_close() && from.is_none() {
                let fresh = clean.get_or_insert_with(&mut *rerun);
                if let Some((_, f)) = fresh.iter().flatten().find(|(u, _)| u == v) {
                    // The reference's own first value and its clean
                    // recompute disagree: a bug of the op, never excused.
                    let first = compare(&w, f, self.tolerance(f))?;
                    if !first.is_close() {
                        let again = second.get_or_insert_with(&mut *rerun);
                        let again = again.iter().flatten().find(|(u, _)| u == v).map(|(_, t)| t);
                        let fnd = self.unstable(n, k, *v, &w, f, again)?;
                        replaced.push((*v, f.clone()));
                        self.compared += 1;
                        self.add_root(n, k, *v, fnd);
                        continue;
                    }
                    w = f.clone();
                    replaced.push((*v, f.clone()));
                    cmp = compare(t, &w, self.tolerance(&w))?;
                }
            }
            let w = &w;
            self.compared += 1;
            if cmp.is_exact() {
                self.exact += 1;
                continue;
            }
            self.inexact.insert(*v);
            if cmp.is_close() {
                self.tolerated += 1;
                if same_inputs {
                    // Nothing else tells the two calls apart: a result that
                    // still differs depends on more than the op's inputs.
                    let var = &self.g.var(*v).name;
                    let f = Finding::warning(
                        Kind::NONDETERMINISTIC,
                        format!(
                            "output {k} '{var}' differs from the reference's in the last bits though both runs called the op on equal inputs laid out alike: its result depends on more than its inputs (thread scheduling, buffer addresses, state kept between calls): {}",
                            summary(&cmp)
                        ),
                    );
                    let f = self.on_output(f, n, k, *v, &cmp, w);
                    self.warnings.push(f);
                }
                continue;
            }
            if let Some(root) = from {
                self.diverged.insert(*v, root);
                self.propagated.push((root, *v));
                continue;
            }
            let var = &self.g.var(*v).name;
            // The in-place op again, into zeroed and into poisoned buffers:
            // the reference's values in zeroed ones and its own first ones
            // in poisoned ones mean it depends on its buffer's content; the
            // reference's values both times, that its first call differed
            // from later ones.
            let again = zeroed.get_or_insert_with(|| rerun_inplace(BufferPolicy::Zero));
            let z = again
                .iter()
                .flatten()
                .find(|(u, _)| u == v)
                .map(|(_, z)| z.clone());
            let again = poisoned.get_or_insert_with(|| rerun_inplace(BufferPolicy::Poison));
            let p = again
                .iter()
                .flatten()
                .find(|(u, _)| u == v)
                .map(|(_, p)| p.clone());
            if let (Some(z), Some(p)) = (z, p) {
                let tol = self.tolerance(w);
                let zeroed_right = compare(&z, w, tol)?.is_close();
                let poisoned_right = compare(&p, w, tol)?.is_close();
                let poisoned_same = compare(&p, t, tol)?.is_close();
                let verdict = match (zeroed_right, poisoned_right, poisoned_same) {
                    (true, false, true) => Some((
                        Kind::UNINITIALIZED_READ,
                        "depends on what its output buffer held: handed a poisoned buffer it differs from the pure reference (again on a second call), computed into a zeroed one it agrees",
                    )),
                    (true, true, _) => Some((
                        Kind::NONDETERMINISTIC,
                        "differs from the pure reference on its first call and agrees with it when called again on the same inputs: the op is nondeterministic (hidden state, or a race)",
                    )),
                    _ => None,
                };
                if let Some((kind, why)) = verdict {
                    let f = Finding::new(kind, format!("output {k} '{var}' {why}: {}", summary(&cmp)));
                    let f = self.on_output(f, n, k, *v, &cmp, w);
                    self.add_root(n, k, *v, f);
                    continue;
                }
            }
            if self.cfg.has(Check::Arbitrate) && t.dtype() == DType::F32 {
                self.candidates.push(Candidate {
                    root: self.roots.len(),
                    var: var.clone(),
                    inplace: t.deep_copy()?,
                    pure: w.deep_copy()?,
                });
            }
            let f = Finding::new(
                Kind::VALUE_MISMATCH,
                format!(
                    "output {k} '{var}' differs from the pure reference while its inputs agree: {}",
                    summary(&cmp)
                ),
            );
            let f = self.on_output(f, n, k, *v, &cmp, w);
            self.add_root(n, k, *v, f);
        }
        Ok(replaced)
    }

    /// The finding of an output whose reference value and clean recompute
    /// (`clean`) differ: recomputed once more (`again`), two agreeing clean
    /// values mean the first depended on its buffer's old content
    /// (`uninitialized_read`), else the op is `nondeterministic`.
    fn unstable(
        &self,
        n: NodeId,
        k: usize,
        v: VarId,
        first: &Tensor,
        clean: &Tensor,
        again: Option<&Tensor>,
    ) -> Result<Finding> {
        let node = self.g.node(n);
        let var = &self.g.var(v).name;
        let tol = self.tolerance(clean);
        let agree = match again {
            Some(a) => Some(compare(a, clean, tol)?),
            None => None,
        };
        let (kind, cmp, message) = match agree {
            Some(c) if c.is_close() && !self.reference_zeroed => {
                let cmp = compare(first, clean, tol)?;
                let m = format!(
                    "output {k} '{var}' depends on what its output buffer held: computed into a reused buffer it differs from two computations into zeroed buffers, which agree: {}",
                    summary(&cmp)
                );
                (Kind::UNINITIALIZED_READ, cmp, m)
            }
            Some(c) if !c.is_close() => {
                let m = format!(
                    "output {k} '{var}' differs between two computations on the same inputs into zeroed buffers (and a third call gave other values again): the op is nondeterministic: {}",
                    summary(&c)
                );
                (Kind::NONDETERMINISTIC, c, m)
            }
            _ => {
                let cmp = compare(first, clean, tol)?;
                let m = format!(
                    "output {k} '{var}' differs between two calls of the op on the same inputs: the op is nondeterministic: {}",
                    summary(&cmp)
                );
                (Kind::NONDETERMINISTIC, cmp, m)
            }
        };
        let mut details = diff_details(&cmp, var, tol);
        details["recomputed"] = json!(if again.is_some() { 2 } else { 1 });
        Ok(Finding::new(kind, message)
            .at(node.name.clone(), node.op.name())
            .with_output(k)
            .with_details(details))
    }

    /// Graph outputs that matched when produced must still match at the end.
    fn check_final(
        &mut self,
        got: &[(String, Tensor)],
        want: &[(String, Tensor)],
        cap: Option<&Capture>,
    ) -> Result<()> {
        for ((name, t), (_, w)) in got.iter().zip(want) {
            let Some(v) = self.g.var_id(name) else { continue };
            if self.diverged.contains_key(&v) {
                continue;
            }
            let cmp = compare(t, w, self.tolerance(w))?;
            if cmp.is_close() {
                continue;
            }
            let writer = cap.and_then(|c| c.writers.get(&t.buffer_id()).copied());
            let mut details = diff_details(&cmp, name, self.tolerance(w));
            details["changed_after_production"] = json!(true);
            let by = writer.map(|w| self.g.node(w.node));
            if let Some(d) = by {
                details["written_by"] = json!({"node": d.name, "op": d.op.name()});
            }
            let message = match by {
                Some(d) => format!(
                    "graph output '{name}' changed after it was produced, written by node '{}' ({}): {}",
                    d.name,
                    d.op.name(),
                    summary(&cmp)
                ),
                None => format!(
                    "graph output '{name}' changed after it was produced: {}",
                    summary(&cmp)
                ),
            };
            let (node, op) = match self.g.producer(v) {
                Some((p, _)) => (self.g.node(p).name.clone(), self.g.node(p).op.name().to_string()),
                None => (String::new(), String::new()),
            };
            let f = Finding::new(Kind::VALUE_MISMATCH, message)
                .at(node, op)
                .with_details(details);
            let n = self.g.producer(v).map(|(p, _)| p).unwrap_or(usize::MAX);
            self.add_root(n, usize::MAX / 2, v, f);
        }
        Ok(())
    }
}

/// Adds `propagated: N` and the first names to each root finding.
fn attach_propagated(
    mut roots: Vec<Finding>,
    _sig: &[(NodeId, usize)],
    propagated: &[(usize, VarId)],
    g: &Graph,
) -> Vec<Finding> {
    for (i, f) in roots.iter_mut().enumerate() {
        let names: Vec<&str> = propagated
            .iter()
            .filter(|(r, _)| *r == i)
            .map(|&(_, v)| g.var(v).name.as_str())
            .collect();
        if let Value::Object(m) = &mut f.details {
            m.insert("propagated".into(), json!(names.len()));
            m.insert(
                "propagated_to".into(),
                json!(names.iter().take(20).collect::<Vec<_>>()),
            );
        }
        if !names.is_empty() {
            f.message.push_str(&format!(
                " (spoils {} value{} downstream)",
                names.len(),
                if names.len() == 1 { "" } else { "s" }
            ));
        }
    }
    roots
}

/// "3 of 64 elements differ, max abs err 0.5, first at [0, 2]: 1.5 vs 1"
pub fn summary(c: &Comparison) -> String {
    if c.dtype_differs || c.shape_differs {
        return "dtype or shape differs".to_string();
    }
    let dtype = c.dtype.unwrap_or(DType::F64);
    let first = c
        .first
        .first()
        .map(|m| {
            format!(
                ", first at {:?}: {} vs {}",
                m.index,
                dtype.fmt_value(m.got),
                dtype.fmt_value(m.want)
            )
        })
        .unwrap_or_default();
    format!(
        "{} of {} elements differ, max abs err {:.3e}{first}",
        c.mismatched, c.elements, c.max_abs
    )
}

/// The structured diff of a `value_mismatch`; `sample` is in the report's
/// error-sample form, so the HTML report can plot it.
pub fn diff_details(c: &Comparison, var: &str, tol: Tolerance) -> Value {
    json!({
        "rtol": tol.rtol,
        "atol": tol.atol,
        "sample": {"start": 0, "step": c.sample_step, "abs_err": c.sample.iter().map(|&e| json_f64(e)).collect::<Vec<_>>()},
        "var": var,
        "max_abs_err": json_f64(c.max_abs),
        "max_rel_err": json_f64(c.max_rel),
        "max_ulp": c.max_ulp,
        "mismatched": c.mismatched,
        "elements": c.elements,
        "first": c.first.iter().map(|m| json!({"index": m.index, "got": json_f64(m.got), "want": json_f64(m.want)})).collect::<Vec<_>>(),
        "dtype_differs": c.dtype_differs,
        "shape_differs": c.shape_differs,
        "strides_differ": c.strides_differ,
    })
}

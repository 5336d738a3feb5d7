//! The executor: runs a validated graph in the destroy handler's order (or
//! any other valid order), frees each value after its last reader, tracks
//! live bytes, and fires listener hooks around every op.
//!
//! A run is a [`Cursor`] that advances one node per [`Cursor::step`], so two
//! runs can go in lockstep (DebugMode); [`Executor::run_with`] steps to the
//! end.

use std::borrow::Cow;
use std::collections::HashMap;

use smallvec::SmallVec;

use crate::destroy::DestroyHandler;
use crate::error::{Error, FeedFault, Result};
use crate::exec::listener::{At, Listener, NoListener, OpEvent, SweepEvent, SweepWatch};
use crate::exec::live::LiveValues;
use crate::graph::control::control_of;
use crate::graph::{Graph, Node, NodeId, VarId, VarKind};
use crate::kernels::pointwise::Pointwise;
use crate::ops::OpCtx;
use crate::tensor::buffer_pool::{self, BufferPolicy};
use crate::tensor::limit::MAX_RANK;
use crate::tensor::storage::BufferId;
use crate::tensor::Tensor;

/// Supplies output buffers for a node (`None` entries are allocated as
/// usual). DebugMode uses this to check ops against dirty, strided outputs.
pub type Prealloc<'a> = &'a dyn Fn(NodeId, &Node) -> Vec<Option<Tensor>>;

/// Per-run options.
#[derive(Default)]
pub struct RunOptions<'a> {
    pub at: At,
    pub prealloc: Option<Prealloc<'a>>,
    /// Record every buffer the executor releases, for tests and explain.
    pub record_frees: bool,
    /// Run only the first `n` nodes of the order (for replay and bisection).
    pub stop_after: Option<usize>,
    /// What fresh buffers hold during this run's ops.
    pub buffers: BufferPolicy,
    /// Run every node on its own, even where a fused sweep could run
    /// (`exec::fuse`): to measure the sweeps, or to rule them out.
    pub node_by_node: bool,
}

/// A buffer released after the node at `position` in the order ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeEvent {
    pub position: usize,
    pub buffer: BufferId,
    pub bytes: usize,
}

#[derive(Clone, Debug, Default)]
pub struct RunStats {
    pub ops: usize,
    /// Largest sum of distinct live buffers (inputs and constants included).
    pub peak_live_bytes: usize,
    pub frees: Vec<FreeEvent>,
    /// Nodes that ran inside fused sweeps (`exec::fuse`), counted in `ops`.
    pub fused: usize,
}

/// The graph outputs of a run, in the graph's output order.
pub struct RunOutput {
    pub outputs: Vec<(String, Tensor)>,
    pub stats: RunStats,
    /// Values the listener asked to keep (`required_variables`).
    pub kept: HashMap<String, Tensor>,
}

impl RunOutput {
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.outputs.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
}

/// A graph, checked and scheduled, ready to run any number of times. Its
/// schedule is its own ([`Executor::new`]) or borrowed from a [`Plan`] that
/// outlives it (a [`crate::exec::Prepared`] graph's), so a prepared graph pays for it once.
pub struct Executor<'g> {
    graph: &'g Graph,
    order: Cow<'g, [NodeId]>,
    /// The variables each position releases (see `Plan::new`).
    release: Cow<'g, [SmallVec<[VarId; 4]>]>,
    /// Whether each position's node continues the fused sweep of the one
    /// before it (`exec::fuse`).
    continues: Cow<'g, [bool]>,
    /// Per variable: read by one node alone and not a graph output.
    sole: Cow<'g, [bool]>,
    /// Per position: the function of a pure node that may start a sweep in
    /// an unwatched run (`exec::fuse::head`).
    heads: Cow<'g, [Option<Pointwise>]>,
    /// Source variables (inputs, parameters) that some node overwrites in
    /// place, through a view or not, in variable order.
    destroyed_sources: Cow<'g, [VarId]>,
    /// Buffers of the graph's constants: outputs sharing one are copied.
    constant_buffers: Cow<'g, [BufferId]>,
    /// Nodes each node must follow: producers of its inputs and the destroy
    /// handler's orderings.
    preds: Cow<'g, [Vec<NodeId>]>,
    /// Nodes that overwrite a parameter, and its name (`pre_update`).
    updates: Cow<'g, HashMap<NodeId, String>>,
    /// Per node: whether its output is best channels-last (`exec::layout`).
    channels_last: Cow<'g, [bool]>,
}

/// What an [`Executor`] computes from its graph before any run: the order,
/// what each position releases, the fusion plan, the orderings a custom
/// order must keep. It depends on the graph alone, not on input shapes, so
/// one plan serves every run of its graph ([`crate::exec::Prepared`]).
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    order: Vec<NodeId>,
    release: Vec<SmallVec<[VarId; 4]>>,
    continues: Vec<bool>,
    sole: Vec<bool>,
    heads: Vec<Option<Pointwise>>,
    destroyed_sources: Vec<VarId>,
    constant_buffers: Vec<BufferId>,
    preds: Vec<Vec<NodeId>>,
    updates: HashMap<NodeId, String>,
    channels_last: Vec<bool>,
}

/// How a message names a source variable's kind.
fn kind_word(kind: &VarKind) -> &'static str {
    match kind {
        VarKind::Input { .. } => "input",
        VarKind::Parameter(_) => "parameter",
        VarKind::Constant(_) => "constant",
        VarKind::Output { .. } => "variable",
    }
}

/// The inputs and parameters that some node of `graph` overwrites in place
/// (directly or through views): what a re-run must copy first.
pub fn destroyed_sources(graph: &Graph) -> Vec<VarId> {
    destroyed_by(graph, &DestroyHandler::new(graph))
}

fn destroyed_by(graph: &Graph, dh: &DestroyHandler) -> Vec<VarId> {
    graph
        .vars()
        .iter()
        .enumerate()
        .filter(|(v, var)| {
            matches!(var.kind, VarKind::Input { .. } | VarKind::Parameter(_))
                && !dh.destroyers_of(dh.root(*v)).is_empty()
        })
        .map(|(v, _)| v)
        .collect()
}

impl Plan {
    /// The plan of `graph` in the destroy handler's order. Refuses a graph
    /// that breaks the view/destroy rules, as [`Executor::new`] does.
    pub(crate) fn new(graph: &Graph) -> Result<Plan> {
        let dh = DestroyHandler::new(graph);
        let order = dh.validate()?;
        Ok(Plan::from_handler(graph, &dh, order))
    }

    fn from_handler(graph: &Graph, dh: &DestroyHandler, order: Vec<NodeId>) -> Plan {
        let destroyed_sources = destroyed_by(graph, dh);
        let constant_buffers = graph
            .vars()
            .iter()
            .filter_map(|v| match &v.kind {
                VarKind::Constant(t) => Some(t.buffer_id()),
                _ => None,
            })
            .collect();
        let mut preds: Vec<Vec<NodeId>> = vec![Vec::new(); graph.nodes().len()];
        for (id, node) in graph.nodes().iter().enumerate() {
            for &v in &node.inputs {
                if let Some((p, _)) = graph.producer(v) {
                    preds[id].push(p);
                }
            }
        }
        for (before, after) in dh.orderings() {
            preds[after].push(before);
        }
        for p in &mut preds {
            p.sort_unstable();
            p.dedup();
        }
        let mut last_use = vec![None; graph.vars().len()];
        for (pos, &n) in order.iter().enumerate() {
            for &v in &graph.node(n).inputs {
                if let Some(slot) = last_use.get_mut(v) {
                    *slot = Some(pos);
                }
            }
        }
        // What each position releases: the inputs it reads last, and its
        // outputs nobody reads.
        let release = order
            .iter()
            .enumerate()
            .map(|(pos, &n)| {
                let node = graph.node(n);
                let mut r: SmallVec<[VarId; 4]> = SmallVec::new();
                for &v in node.inputs.iter().chain(&node.outputs) {
                    if last_use[v].is_none_or(|p| p == pos) && !r.contains(&v) {
                        r.push(v);
                    }
                }
                r
            })
            .collect();
        let fuse = crate::exec::fuse::plan(graph, &order);
        Plan {
            continues: fuse.continues,
            sole: fuse.sole,
            heads: fuse.heads,
            order,
            release,
            destroyed_sources,
            constant_buffers,
            preds,
            updates: crate::exec::updated_parameters(graph),
            channels_last: crate::exec::layout::channels_last(graph),
        }
    }

    /// An executor of `graph` on this plan, which must be `graph`'s
    /// ([`Plan::new`] of it): nothing is computed again.
    pub(crate) fn executor<'g>(&'g self, graph: &'g Graph) -> Executor<'g> {
        Executor {
            graph,
            order: Cow::Borrowed(&self.order),
            release: Cow::Borrowed(&self.release),
            continues: Cow::Borrowed(&self.continues),
            sole: Cow::Borrowed(&self.sole),
            heads: Cow::Borrowed(&self.heads),
            destroyed_sources: Cow::Borrowed(&self.destroyed_sources),
            constant_buffers: Cow::Borrowed(&self.constant_buffers),
            preds: Cow::Borrowed(&self.preds),
            updates: Cow::Borrowed(&self.updates),
            channels_last: Cow::Borrowed(&self.channels_last),
        }
    }
}

impl<'g> Executor<'g> {
    /// Validates the view/destroy rules and computes the order. An
    /// explicitly in-place graph that breaks them is refused here.
    pub fn new(graph: &'g Graph) -> Result<Executor<'g>> {
        Ok(Executor::owning(graph, Plan::new(graph)?))
    }

    /// An executor that runs `order` instead of the default one. Refuses an
    /// order that is not a permutation of the nodes, runs a node before a
    /// producer of its inputs, or runs a destroyer before another reader of
    /// what it destroys.
    pub fn with_order(graph: &'g Graph, order: Vec<NodeId>) -> Result<Executor<'g>> {
        let dh = DestroyHandler::new(graph);
        dh.validate()?;
        let exec = Executor::owning(graph, Plan::from_handler(graph, &dh, order));
        let invalid = |msg: String| Error::InvalidOrder {
            graph: graph.name().to_string(),
            msg,
        };
        let n = graph.nodes().len();
        if exec.order.len() != n {
            return Err(invalid(format!(
                "{} nodes given, the graph has {n}",
                exec.order.len()
            )));
        }
        let mut pos = vec![usize::MAX; n];
        for (p, &id) in exec.order.iter().enumerate() {
            if id >= n {
                return Err(invalid(format!("node id {id} at position {p} does not exist")));
            }
            if pos[id] != usize::MAX {
                return Err(invalid(format!("node '{}' appears twice", graph.node(id).name)));
            }
            pos[id] = p;
        }
        for (p, &id) in exec.order.iter().enumerate() {
            if let Some(&q) = exec.preds[id].iter().find(|&&q| pos[q] > p) {
                return Err(invalid(format!(
                    "node '{}' at position {p} must run after node '{}' (position {})",
                    graph.node(id).name,
                    graph.node(q).name,
                    pos[q]
                )));
            }
        }
        Ok(exec)
    }

    fn owning(graph: &'g Graph, p: Plan) -> Executor<'g> {
        Executor {
            graph,
            order: Cow::Owned(p.order),
            release: Cow::Owned(p.release),
            continues: Cow::Owned(p.continues),
            sole: Cow::Owned(p.sole),
            heads: Cow::Owned(p.heads),
            destroyed_sources: Cow::Owned(p.destroyed_sources),
            constant_buffers: Cow::Owned(p.constant_buffers),
            preds: Cow::Owned(p.preds),
            updates: Cow::Owned(p.updates),
            channels_last: Cow::Owned(p.channels_last),
        }
    }

    /// Whether the node at `position` continues the fused sweep of the
    /// node before it in runs nobody watches and in runs whose listeners
    /// watch sweeps (`exec::fuse`; whether it does also depends on its
    /// operands' layouts at run time).
    pub fn continues_sweep(&self, position: usize) -> bool {
        self.continues.get(position).copied().unwrap_or(false)
    }

    /// Takes `other`'s layout decisions, node for node (`other` runs a
    /// graph with the same nodes, such as a reference's pure twins). A run
    /// that checks another then computes each value with the kernels that
    /// one used, so the two agree bit for bit wherever the ops are right.
    pub fn with_layouts_of(mut self, other: &Executor<'_>) -> Executor<'g> {
        if other.channels_last.len() == self.channels_last.len() {
            self.channels_last = Cow::Owned(other.channels_last.to_vec());
        }
        self
    }

    /// The nodes `node` must run after in any valid order.
    pub fn predecessors(&self, node: NodeId) -> &[NodeId] {
        &self.preds[node]
    }

    pub fn graph(&self) -> &'g Graph {
        self.graph
    }

    /// Node ids in execution order.
    pub fn order(&self) -> &[NodeId] {
        &self.order
    }

    /// Runs with no listener.
    pub fn run(&self, feeds: &HashMap<String, Tensor>) -> Result<RunOutput> {
        self.run_with(feeds, &mut NoListener, &RunOptions::default())
    }

    /// Runs, firing `listener`'s hooks.
    pub fn run_with(
        &self,
        feeds: &HashMap<String, Tensor>,
        listener: &mut dyn Listener,
        opts: &RunOptions,
    ) -> Result<RunOutput> {
        let mut cursor = self.start(feeds, listener, opts)?;
        // Sweeps skip the values between their nodes: only where nobody
        // needs to see them (`exec::fuse`). `Some(summaries)` when allowed.
        let sweeps = match (opts.prealloc.is_some() || opts.node_by_node, cursor.hooks) {
            (true, _) => None,
            (false, false) => Some(false),
            (false, true) => match listener.watches_sweeps() {
                SweepWatch::No => None,
                SweepWatch::Edges => Some(false),
                SweepWatch::Summaries => Some(true),
            },
        };
        let awake = crate::parallel::KeepAwake::start();
        let ran = loop {
            awake.rearm();
            let next = match sweeps {
                Some(summaries) => cursor.step_fused(listener, summaries),
                None => cursor.step(listener),
            };
            match next {
                Ok(Some(_)) => {}
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        drop(awake);
        // Listeners finish their run (collect, replay) even when an op failed.
        let out = cursor.finish(listener);
        ran?;
        out
    }

    /// Binds `feeds` and fires `operation_start`; the returned cursor runs
    /// one node per [`Cursor::step`]. Call [`Cursor::finish`] to end the run.
    pub fn start<'r>(
        &'r self,
        feeds: &HashMap<String, Tensor>,
        listener: &mut dyn Listener,
        opts: &'r RunOptions<'r>,
    ) -> Result<Cursor<'r, 'g>> {
        self.start_run(feeds, listener, opts, true)
    }

    /// [`Executor::start`]; `whole` is false for a body run inside a
    /// control node, which fires op hooks but not `operation_start` and
    /// `operation_end` (the outer run is still going on).
    fn start_run<'r>(
        &'r self,
        feeds: &HashMap<String, Tensor>,
        listener: &mut dyn Listener,
        opts: &'r RunOptions<'r>,
        whole: bool,
    ) -> Result<Cursor<'r, 'g>> {
        let g = self.graph;
        let hooks = listener.is_active(opts.at.operation);
        let mut live = LiveValues::new(g.vars().len());
        // Feeds by variable: one name lookup per feed, none per variable.
        let mut fed: Vec<Option<&Tensor>> = vec![None; g.vars().len()];
        for (name, t) in feeds {
            match g.var_id(name) {
                Some(v) if matches!(g.var(v).kind, VarKind::Input { .. } | VarKind::Parameter(_)) => {
                    fed[v] = Some(t);
                }
                _ => {
                    return Err(Error::feed(
                        name,
                        FeedFault::Unknown,
                        format!("'{name}' is not an input of graph '{}'", g.name()),
                    ))
                }
            }
        }
        for (v, var) in g.vars().iter().enumerate() {
            let t = match (&var.kind, fed[v]) {
                (VarKind::Output { .. }, _) => continue,
                (_, Some(t)) => t.clone(),
                (VarKind::Input { .. }, None) => {
                    return Err(Error::feed(
                        &var.name,
                        FeedFault::Missing,
                        format!("input '{}' is not fed", var.name),
                    ))
                }
                (VarKind::Constant(t) | VarKind::Parameter(t), None) => t.clone(),
            };
            if t.ndim() > MAX_RANK {
                let msg = format!(
                    "{} '{}' has rank {}, above the limit of {MAX_RANK} dimensions",
                    kind_word(&var.kind),
                    var.name,
                    t.ndim()
                );
                return Err(match var.kind {
                    VarKind::Constant(_) => Error::Graph(msg),
                    _ => Error::feed(&var.name, FeedFault::Rank, msg),
                });
            }
            if t.dtype() != var.ty.dtype || !var.ty.admits(t.shape()) {
                return Err(Error::feed(
                    &var.name,
                    FeedFault::Mismatch,
                    format!(
                        "input '{}' is {} {:?}, the graph declares {} {}",
                        var.name,
                        t.dtype(),
                        t.shape(),
                        var.ty.dtype,
                        var.ty.shape_string()
                    ),
                ));
            }
            live.set(v, t);
        }
        self.check_aliased_sources(&live)?;
        let mut keep = vec![false; g.vars().len()];
        for &o in g.outputs() {
            keep[o] = true;
        }
        let required = if hooks {
            listener.required_variables()
        } else {
            Vec::new()
        };
        for name in &required {
            if let Some(v) = g.var_id(name) {
                keep[v] = true;
            }
        }
        if hooks && whole {
            listener.operation_start(&opts.at, g);
        }
        Ok(Cursor {
            exec: self,
            opts,
            live,
            keep,
            required,
            hooks,
            whole,
            pos: 0,
            end: opts.stop_after.unwrap_or(self.order.len()).min(self.order.len()),
            stats: RunStats::default(),
        })
    }

    /// The destroy handler orders destroyers by variable, so two source
    /// values sharing one buffer (one tensor fed twice, two views of one
    /// array, a parameter's own value fed as an input) while one of them is
    /// overwritten in place would let a reader see the overwrite. Refuse
    /// such bindings before anything runs. Conservative: views of one buffer
    /// count as shared even when their elements do not overlap.
    fn check_aliased_sources(&self, live: &LiveValues) -> Result<()> {
        let g = self.graph;
        for &d in self.destroyed_sources.iter() {
            let Some(td) = live.value(d) else { continue };
            let other = g.vars().iter().enumerate().find(|&(v, var)| {
                v != d
                    && !matches!(var.kind, VarKind::Output { .. })
                    && live.value(v).is_some_and(|t| t.same_buffer(td))
            });
            if let Some((_, var)) = other {
                let dv = g.var(d);
                let (kd, kv) = (kind_word(&dv.kind), kind_word(&var.kind));
                let pair = if kd == kv {
                    format!("{kd}s '{}' and '{}'", dv.name, var.name)
                } else {
                    format!("{kd} '{}' and {kv} '{}'", dv.name, var.name)
                };
                return Err(Error::feed(
                    &dv.name,
                    FeedFault::Shared,
                    format!(
                        "{pair} share a buffer, and '{}' is overwritten in place; feed separate copies",
                        dv.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An op whose outputs disagree with its own inferred types is buggy;
    /// say so at the node rather than downstream.
    fn check_outputs(&self, node: &Node, outputs: &[Tensor]) -> Result<()> {
        if outputs.len() != node.outputs.len() {
            return Err(Error::node(
                &node.name,
                Error::Graph(format!(
                    "op '{}' returned {} outputs, declared {}",
                    node.op.name(),
                    outputs.len(),
                    node.outputs.len()
                )),
            ));
        }
        for (k, (t, &v)) in outputs.iter().zip(&node.outputs).enumerate() {
            let ty = &self.graph.var(v).ty;
            if t.dtype() != ty.dtype || !ty.admits(t.shape()) {
                return Err(Error::node(
                    &node.name,
                    Error::Graph(format!(
                        "op '{}' output {k} is {} {:?}, but it inferred {} {}",
                        node.op.name(),
                        t.dtype(),
                        t.shape(),
                        ty.dtype,
                        ty.shape_string()
                    )),
                ));
            }
        }
        Ok(())
    }
}

/// One node that a [`Cursor`] ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Its position in the order.
    pub position: usize,
    pub node: NodeId,
}

/// What [`Cursor::step_twin`] did.
#[derive(Debug)]
pub enum TwinStep {
    /// The next nodes form no twin sweep: step node by node.
    NoSweep,
    /// Some tile differed between the runs, or an op failed: neither run
    /// moved; step node by node to find what.
    Differs,
    /// The nodes ran in both runs, every tile alike; with each node's
    /// output summary when asked for.
    Ran {
        nodes: Vec<NodeId>,
        outputs: Vec<crate::exec::fuse::SweptOutput>,
    },
}

/// A run in progress: the live values, and the position in the order.
pub struct Cursor<'r, 'g> {
    exec: &'r Executor<'g>,
    opts: &'r RunOptions<'r>,
    live: LiveValues,
    keep: Vec<bool>,
    required: Vec<String>,
    hooks: bool,
    /// False for a control node's body run (no run hooks).
    whole: bool,
    pos: usize,
    end: usize,
    stats: RunStats,
}

impl<'g> Cursor<'_, 'g> {
    /// The position of the next node to run.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The node that the next [`Cursor::step`] runs, if any.
    pub fn next_node(&self) -> Option<NodeId> {
        (self.pos < self.end).then(|| self.exec.order[self.pos])
    }

    /// The live value of `v` (sources until their last reader, node
    /// outputs from their producer until their last reader).
    pub fn value(&self, v: VarId) -> Option<&Tensor> {
        self.live.value(v)
    }

    /// Replaces the live value of `v` (a value no longer live stays so):
    /// DebugMode swaps in a reference value it recomputed, so that later
    /// ops read it. Returns whether `v` was live.
    pub fn replace_value(&mut self, v: VarId, t: Tensor) -> bool {
        if self.live.value(v).is_none() {
            return false;
        }
        self.live.set(v, t);
        true
    }

    /// Bytes of the distinct buffers live now.
    pub fn live_bytes(&self) -> usize {
        self.live.bytes()
    }

    /// Every live value, with its holders by buffer.
    pub fn live(&self) -> &LiveValues {
        &self.live
    }

    /// `pre_update(param, old, new)` before `node` overwrites `param`: the
    /// new value comes from the op's pure twin, in a fresh buffer.
    fn fire_pre_update(
        &self,
        listener: &mut dyn Listener,
        at: &At,
        node: &Node,
        param: &str,
        inputs: &[Tensor],
    ) -> Result<()> {
        let (Some(&(out, input)), Some(twin)) = (node.op.destroy_map().first(), node.op.pure_twin()) else {
            return Ok(());
        };
        let new = twin
            .compute(inputs, &mut OpCtx::new(&node.name))
            .map_err(|e| e.at_node(&node.name))?;
        if let (Some(old), Some(new)) = (inputs.get(input), new.get(out)) {
            listener.pre_update(at, param, old, new);
        }
        Ok(())
    }

    /// Runs the next nodes as one fused sweep when they form one
    /// (`exec::fuse`), else the next node alone; the step returned is the
    /// last node run. Only for runs nobody watches between nodes, or whose
    /// listeners watch sweeps (they get `pre_sweep` and `post_sweep`, with
    /// each node's output summary when `summaries`).
    fn step_fused(&mut self, listener: &mut dyn Listener, summaries: bool) -> Result<Option<Step>> {
        let exec = self.exec;
        let (pos, end) = (self.pos, self.end);
        // A parameter update fires `pre_update` from its own step.
        let alone = |p: usize| self.hooks && exec.updates.contains_key(&exec.order[p]);
        if pos >= end || alone(pos) {
            return self.step(listener);
        }
        let mut len = 1;
        while pos + len < end && exec.continues[pos + len] && !alone(pos + len) {
            len += 1;
        }
        if len < 2 {
            return self.step(listener);
        }
        let head = exec.heads[pos];
        let g = exec.graph;
        let order = &exec.order[pos..pos + len];
        let sweep = {
            let _policy = buffer_pool::with_policy(self.opts.buffers);
            crate::exec::fuse::prepare(g, |n| g.node(n).op.pointwise(), head, order, &self.live)
        };
        let Some(sweep) = sweep else {
            return self.step(listener);
        };
        let nodes = &order[..sweep.len()];
        let at = At {
            node_index: Some(pos),
            ..self.opts.at
        };
        let value = sweep.value();
        if self.hooks {
            let ev = SweepEvent {
                graph: g,
                nodes,
                position: pos,
                input: sweep.input(),
                folded: sweep.folded(),
                value,
                outputs: &[],
                live: &self.live,
            };
            listener.pre_sweep(&at, &ev);
        }
        let outputs = sweep.run(summaries)?;
        // An in-place node's output is its destroyed input 0, as is.
        for (k, &n) in nodes.iter().enumerate() {
            if sweep.binds(k) {
                self.live.set(g.node(n).outputs[0], value.clone());
            }
        }
        if self.hooks {
            let ev = SweepEvent {
                graph: g,
                nodes,
                position: pos,
                input: sweep.input(),
                folded: sweep.folded(),
                value,
                outputs: &outputs,
                live: &self.live,
            };
            listener.post_sweep(&at, &ev);
        }
        let ran = nodes.len();
        self.swept(pos, ran, listener);
        Ok(Some(Step {
            position: pos + ran - 1,
            node: exec.order[pos + ran - 1],
        }))
    }

    /// How many of the next nodes this run and `twin` (another run of the
    /// same nodes in the same order, say the pure reference of DebugMode's
    /// lockstep) can run as one twin sweep ([`Cursor::step_twin`]): 0, or
    /// at least 2. Here the nodes are fused as a plain run fuses them
    /// (`exec::fuse`): each overwrites its input 0, but the first may be a
    /// pure head; in `twin` each node is pure, and the values between the
    /// nodes are read by the next node alone in both runs and kept by
    /// neither.
    pub fn twin_span(&self, twin: &Cursor) -> usize {
        self.twin_sweeps(twin, usize::MAX).map_or(0, |(s, _)| s.len())
    }

    /// Both runs' sweeps over at most `max` next nodes, when they can run
    /// as twins (see [`Cursor::twin_span`]).
    fn twin_sweeps<'s>(
        &'s self,
        twin: &'s Cursor,
        max: usize,
    ) -> Option<(crate::exec::fuse::Sweep<'g>, crate::exec::fuse::Sweep<'s>)> {
        let (exec, texec) = (self.exec, twin.exec);
        let (g, tg) = (exec.graph, texec.graph);
        let pos = self.pos;
        let end = self.end.min(twin.end).min(pos.saturating_add(max));
        let twin_of = |p: usize| texec.order.get(p) == exec.order.get(p);
        let fits = |p: usize| {
            let (node, tnode) = (g.node(exec.order[p]), tg.node(texec.order[p]));
            // Here the in-place variant, there its pure twin, on the same
            // variables. A parameter update fires `pre_update` from its own
            // step.
            twin_of(p)
                && !exec.updates.contains_key(&exec.order[p])
                && node.op.destroy_map() == [(0, 0)]
                && node.op.pure_twin().is_some_and(|t| t.name() == tnode.op.name())
                && node.op.attrs() == tnode.op.attrs()
                && tnode.op.destroy_map().is_empty()
                && tnode.op.view_map().is_empty()
                && node.inputs == tnode.inputs
                && node.outputs == tnode.outputs
                && node.outputs.len() == 1
        };
        // A pure head, the same node in both runs.
        let head = exec.heads.get(pos).copied().flatten().filter(|_| {
            let (node, tnode) = (g.node(exec.order[pos]), tg.node(texec.order[pos]));
            twin_of(pos)
                && tnode.op.name() == node.op.name()
                && tnode.op.attrs() == node.op.attrs()
                && tnode.inputs == node.inputs
                && tnode.outputs == node.outputs
        });
        if twin.pos != pos || pos >= end || !(head.is_some() || fits(pos)) {
            return None;
        }
        let mut len = 1;
        while pos + len < end && exec.continues[pos + len] && fits(pos + len) {
            // The value between the two nodes is never whole: nobody else
            // may read or keep it, in either run.
            let v = g.node(exec.order[pos + len - 1]).outputs[0];
            if !texec.sole[v] || self.keep[v] || twin.keep[v] {
                break;
            }
            len += 1;
        }
        if len < 2 {
            return None;
        }
        let order = &exec.order[pos..pos + len];
        let kind = |n: NodeId| g.node(n).op.pointwise();
        let mine = crate::exec::fuse::prepare(g, kind, head, order, &self.live)?;
        let theirs = crate::exec::fuse::prepare_reference(tg, kind, head, order, &twin.live)?;
        (mine.len() == theirs.len()).then_some((mine, theirs))
    }

    /// Runs the next nodes (at most `max`) as one fused sweep here and in
    /// `twin` at once, tile by tile, each node's tile compared bit for bit
    /// between the two runs while it is in L1 (`exec::fuse`). Where they
    /// agree, both runs end as if stepped node by node: here each output
    /// is the swept buffer, and `twin` holds its last node's output in a
    /// fresh buffer (the values between are never whole in either).
    /// `listener` gets `pre_sweep` and `post_sweep` (with summaries when
    /// `summaries`); `twin_listener` sees only the released values.
    /// [`TwinStep::Differs`] when a tile differs or an op fails: then
    /// neither run has moved and this run's buffer holds what it held, so
    /// that stepping node by node finds exactly what differs.
    pub fn step_twin(
        &mut self,
        twin: &mut Cursor,
        max: usize,
        listener: &mut dyn Listener,
        twin_listener: &mut dyn Listener,
        summaries: bool,
    ) -> Result<TwinStep> {
        let Some((mine, theirs)) = self.twin_sweeps(twin, max) else {
            return Ok(TwinStep::NoSweep);
        };
        let (g, tg) = (self.exec.graph, twin.exec.graph);
        let pos = self.pos;
        let ran = mine.len();
        let nodes: Vec<NodeId> = self.exec.order[pos..pos + ran].to_vec();
        let value = mine.value().clone();
        let (input, folded) = (mine.input().clone(), mine.folded());
        let out = {
            let _policy = buffer_pool::with_policy(twin.opts.buffers);
            Tensor::uninit(value.dtype(), value.shape())?
        };
        let at = At {
            node_index: Some(pos),
            ..self.opts.at
        };
        if self.hooks {
            let ev = SweepEvent {
                graph: g,
                nodes: &nodes,
                position: pos,
                input: &input,
                folded,
                value: &value,
                outputs: &[],
                live: &self.live,
            };
            listener.pre_sweep(&at, &ev);
        }
        // A failure to borrow or write leaves everything as it was, and
        // the node-by-node steps meet it where it belongs.
        let outputs = match crate::exec::fuse::run_twin(&mine, &theirs, &out, summaries) {
            Ok(Some(o)) => o,
            Ok(None) | Err(_) => return Ok(TwinStep::Differs),
        };
        drop((mine, theirs));
        for (k, &n) in nodes.iter().enumerate() {
            if k > 0 || !folded {
                self.live.set(g.node(n).outputs[0], value.clone());
            }
        }
        twin.live.set(tg.node(nodes[ran - 1]).outputs[0], out);
        if self.hooks {
            let ev = SweepEvent {
                graph: g,
                nodes: &nodes,
                position: pos,
                input: &input,
                folded,
                value: &value,
                outputs: &outputs,
                live: &self.live,
            };
            listener.post_sweep(&at, &ev);
        }
        self.swept(pos, ran, listener);
        twin.swept(pos, ran, twin_listener);
        Ok(TwinStep::Ran { nodes, outputs })
    }

    /// After a sweep of the `ran` nodes from `pos`: releases what each
    /// read last, in order, and moves past them.
    fn swept(&mut self, pos: usize, ran: usize, listener: &mut dyn Listener) {
        for p in pos..pos + ran {
            let at = At {
                node_index: Some(p),
                ..self.opts.at
            };
            self.release(p, listener, &at);
        }
        self.pos += ran;
        self.stats.ops += ran;
        self.stats.fused += ran;
    }

    /// Releases what the node at `pos` read last, and outputs nobody reads.
    fn release(&mut self, pos: usize, listener: &mut dyn Listener, at: &At) {
        let g = self.exec.graph;
        for &v in &self.exec.release[pos] {
            if self.keep[v] {
                continue;
            }
            let Some((t, freed)) = self.live.take(v) else {
                continue;
            };
            if self.hooks {
                listener.value_released(at, g, v, &t, freed.is_some());
            }
            if let (Some((buffer, bytes)), true) = (freed, self.opts.record_frees) {
                self.stats.frees.push(FreeEvent {
                    position: pos,
                    buffer,
                    bytes,
                });
            }
        }
    }

    /// Runs the next node and releases what it read last; `None` when the
    /// run is complete.
    pub fn step(&mut self, listener: &mut dyn Listener) -> Result<Option<Step>> {
        if self.pos >= self.end {
            return Ok(None);
        }
        let _policy = buffer_pool::with_policy(self.opts.buffers);
        let g = self.exec.graph;
        let pos = self.pos;
        let nid = self.exec.order[pos];
        let node = g.node(nid);
        // Inline for up to four inputs: no allocation per op (pushed in a
        // loop: collecting through a `Result` moved the whole inline array
        // twice more).
        let mut inputs: SmallVec<[Tensor; 4]> = SmallVec::new();
        for &v in &node.inputs {
            let Some(t) = self.live.value(v) else {
                return Err(Error::node(
                    &node.name,
                    Error::Graph(format!(
                        "input '{}' has no value (internal scheduling error)",
                        g.var(v).name
                    )),
                ));
            };
            inputs.push(t.clone());
        }
        let at = At {
            node_index: Some(pos),
            ..self.opts.at
        };
        if self.hooks {
            if let Some(param) = self.exec.updates.get(&nid) {
                self.fire_pre_update(listener, &at, node, param, &inputs)?;
            }
            listener.pre_op(
                &at,
                &OpEvent {
                    graph: g,
                    node_id: nid,
                    node,
                    inputs: &inputs,
                    outputs: &[],
                    live: &self.live,
                },
            );
        }
        let prealloc = self.opts.prealloc.map(|f| f(nid, node)).unwrap_or_default();
        let hint = self.exec.channels_last.get(nid).copied().unwrap_or(false);
        let mut ctx = OpCtx::with_prealloc(&node.name, prealloc).with_channels_last(hint);
        // A control node's bodies run under this run's listeners.
        let outputs = match control_of(node.op.as_ref()).filter(|_| self.hooks) {
            Some(ctl) => {
                let body_at = At {
                    in_body: true,
                    ..self.opts.at
                };
                ctl.run(&inputs, &mut |body, feeds| {
                    run_body(body, feeds, listener, body_at)
                })
            }
            None => node.op.compute(&inputs, &mut ctx),
        }
        .map_err(|e| e.at_node(&node.name))?;
        self.exec.check_outputs(node, &outputs)?;
        self.pos += 1;
        self.stats.ops += 1;
        if self.hooks {
            let ev = OpEvent {
                graph: g,
                node_id: nid,
                node,
                inputs: &inputs,
                outputs: &outputs,
                live: &self.live,
            };
            listener.post_op(&at, &ev);
            for (k, t) in outputs.iter().enumerate() {
                listener.activation_available(&at, &ev, k, t);
            }
        }
        drop(inputs);
        for (&v, t) in node.outputs.iter().zip(outputs) {
            self.live.set(v, t);
        }
        self.release(pos, listener, &at);
        Ok(Some(Step {
            position: pos,
            node: nid,
        }))
    }

    /// Fires `operation_end` and hands out the graph's outputs. After an
    /// early stop (`stop_after`, or a step that failed) the outputs not yet
    /// computed are left out.
    pub fn finish(self, listener: &mut dyn Listener) -> Result<RunOutput> {
        let g = self.exec.graph;
        if self.hooks && self.whole {
            listener.operation_end(&self.opts.at, g);
        }
        let mut stats = self.stats;
        stats.peak_live_bytes = self.live.peak();
        let complete = self.pos >= self.exec.order.len();
        // An output that shares a constant's buffer is handed out as a copy:
        // the caller may write it, and constants must stay constant.
        let mut outputs = Vec::with_capacity(g.outputs().len());
        for &o in g.outputs() {
            match self.live.value(o) {
                Some(t) if self.exec.constant_buffers.contains(&t.buffer_id()) => {
                    outputs.push((g.var(o).name.clone(), t.deep_copy()?))
                }
                Some(t) => outputs.push((g.var(o).name.clone(), t.clone())),
                None if !complete => {}
                None => {
                    return Err(Error::Graph(format!(
                        "output '{}' was not computed",
                        g.var(o).name
                    )))
                }
            }
        }
        let kept = self
            .required
            .iter()
            .filter_map(|n| Some((n.clone(), self.live.value(g.var_id(n)?)?.clone())))
            .collect();
        Ok(RunOutput { outputs, stats, kept })
    }
}

/// Runs a control node's body `g` on `feeds` (its inputs, in order) node
/// by node, firing `listener`'s op hooks for each body node.
fn run_body(g: &Graph, feeds: &[Tensor], listener: &mut dyn Listener, at: At) -> Result<Vec<Tensor>> {
    let exec = Executor::new(g)?;
    let feeds: HashMap<String, Tensor> = g
        .inputs()
        .map(|v| g.var(v).name.clone())
        .zip(feeds.iter().cloned())
        .collect();
    let opts = RunOptions {
        at,
        node_by_node: true,
        ..RunOptions::default()
    };
    let mut cursor = exec.start_run(&feeds, listener, &opts, false)?;
    let ran = loop {
        match cursor.step(listener) {
            Ok(Some(_)) => {}
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    let out = cursor.finish(listener);
    ran?;
    Ok(out?.outputs.into_iter().map(|(_, t)| t).collect())
}

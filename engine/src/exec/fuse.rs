//! Fused runs: consecutive in-place elementwise nodes that pass one buffer
//! along sweep it once, a tile at a time.
//!
//! After the in-place pass, a chain such as `exp, add c, log, tanh` becomes
//! nodes that each overwrite the value the node before wrote. Run node by
//! node, every node streams the whole buffer through memory; run as one
//! sweep, each tile (a few KiB, in L1) goes through every node before the
//! next tile is read. The values between the nodes are never whole, so a
//! sweep runs only where nothing can look at them: a value it skips is read
//! by the next node alone (which overwrites it) and is not a graph output,
//! and the run has no pre-allocated outputs and no active listener that
//! needs whole values ([`crate::exec::Executor::run_with`]). A [`crate::exec::Cursor`] stepped
//! by hand (DebugMode's lockstep) always runs node by node.
//!
//! In a run no listener watches, a sweep may also start at a pure
//! elementwise node (its [`head`]): one that could not overwrite its input
//! because something else reads it later, as `x` in SiLU's
//! `x · sigmoid(x)`. The sweep then writes a fresh buffer, each tile the
//! head's function of the head's input, so `sigmoid, mul x` reads `x` once
//! and writes once instead of passing twice through memory. When the next
//! node instead overwrites that input with the pure node's result as its
//! operand (`x *= sigmoid(x)`, as the in-place pass usually leaves SiLU),
//! the pure node is folded into it: each tile's `sigmoid` goes to a
//! scratch tile the `mul` then reads, and the sweep runs in place on `x`.
//! Listeners never see such sweeps: their `pre_sweep` reads the swept
//! buffer as the first node's input, and a folded node's output is never
//! whole, not even a tile of the swept buffer.
//!
//! Each node of a sweep applies the same element function as its op
//! ([`crate::kernels::pointwise::apply_tile`] shares the op's `match`), and
//! the math kernels give an element the same result wherever it sits in a
//! slice, so a sweep is bit for bit the node-by-node run
//! (`engine/tests/fuse.rs` checks it), NaNs aside: which NaN an add of two
//! NaNs gives depends on the order the compiler put its operands in.

use std::cell::Ref;

use rayon::prelude::*;

use crate::dtype::Float;
use crate::error::Result;
use crate::exec::live::LiveValues;
use crate::graph::{Graph, NodeId};
use crate::kernels::pointwise::{apply_tile, map_tile, Operand, Pointwise, Repeat};
use crate::kernels::summary::{Acc, Summarize};
use crate::kernels::vmath::VMath;
use crate::ops::Op;
use crate::parallel::PARALLEL_ELEMS;
use crate::tensor::Tensor;

/// Bytes of a tile: the tile and one operand's tile stay in L1.
const TILE_BYTES: usize = 8 << 10;
/// Elements per parallel task of a long sweep.
const TASK: usize = 1 << 14;

/// The element function of a pure node that may start a sweep: its
/// in-place variant on the same inputs is elementwise ([`Op::pointwise`])
/// and has this op as its pure twin, so both compute that function.
pub(crate) fn head(op: &dyn Op) -> Option<Pointwise> {
    if op.pointwise().is_some() || !op.destroy_map().is_empty() || !op.view_map().is_empty() {
        return None;
    }
    op.inplace_variants().into_iter().find_map(|v| {
        let same_inputs = v.inputs.iter().copied().eq(0..v.inputs.len());
        let twin = v.op.pure_twin().is_some_and(|t| t.name() == op.name());
        let f = v.op.pointwise()?;
        (same_inputs && twin && v.op.destroy_map() == [(0, 0)] && v.op.attrs() == op.attrs()).then_some(f)
    })
}

/// Whether pure node `a` (head function `head`) folds into node `b` (of
/// function `fb`: the in-place node's, or in a twin sweep's reference its
/// in-place twin's): a unary function of the value `b` overwrites, which
/// `b` takes as its operand (`x *= sigmoid(x)`).
fn folds(
    head: Option<Pointwise>,
    a: &crate::graph::Node,
    b: &crate::graph::Node,
    fb: Option<Pointwise>,
) -> bool {
    matches!(head, Some(Pointwise::Unary(_)))
        && matches!(fb, Some(Pointwise::Binary(_)))
        && b.inputs.len() == 2
        && b.inputs[0] == a.inputs[0]
        && b.inputs[1] == a.outputs[0]
}

/// The fusion plan of `order` (see the module docs).
pub(crate) struct FusePlan {
    /// Per position: whether its node continues the sweep of the node
    /// before it.
    pub continues: Vec<bool>,
    /// Per variable: one node alone reads it and it is not a graph output
    /// (a value a sweep may skip).
    pub sole: Vec<bool>,
    /// Per position: the element function of a pure node that may start a
    /// sweep ([`head`]).
    pub heads: Vec<Option<Pointwise>>,
}

pub(crate) fn plan(graph: &Graph, order: &[NodeId]) -> FusePlan {
    let mut readers = vec![0usize; graph.vars().len()];
    for node in graph.nodes() {
        let mut seen: Vec<usize> = Vec::with_capacity(node.inputs.len());
        for &v in &node.inputs {
            if !seen.contains(&v) {
                seen.push(v);
                readers[v] += 1;
            }
        }
    }
    let mut is_output = vec![false; graph.vars().len()];
    for &o in graph.outputs() {
        is_output[o] = true;
    }
    let sole: Vec<bool> = (0..graph.vars().len())
        .map(|v| !is_output[v] && readers[v] == 1)
        .collect();
    let heads: Vec<Option<Pointwise>> = order
        .iter()
        .map(|&n| {
            let node = graph.node(n);
            (node.outputs.len() == 1)
                .then(|| head(node.op.as_ref()))
                .flatten()
        })
        .collect();
    let mut continues = vec![false; order.len()];
    for pos in 1..order.len() {
        let (a, b) = (graph.node(order[pos - 1]), graph.node(order[pos]));
        let a_sweeps = a.op.pointwise().is_some() || heads[pos - 1].is_some();
        if !a_sweeps || b.op.pointwise().is_none() || a.outputs.len() != 1 {
            continue;
        }
        let v = a.outputs[0];
        continues[pos] =
            (b.inputs.first() == Some(&v) || folds(heads[pos - 1], a, b, b.op.pointwise())) && sole[v];
    }
    FusePlan {
        continues,
        sole,
        heads,
    }
}

/// A node's second operand, as found among the live values.
enum Source {
    None,
    Itself,
    Scalar(Tensor),
    Slice(Tensor),
    /// Broadcast into the swept value as runs.
    Repeat(Tensor, Repeat),
}

/// Where a step of a sweep reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Overwrites the tile, with its operand as found.
    Tile,
    /// A pure node folded into the next step: writes its function of the
    /// tile to a scratch tile.
    ToScratch,
    /// Overwrites the tile, with the scratch tile as its operand.
    FromScratch,
}

/// One node of a sweep.
struct Step {
    f: Pointwise,
    y: Source,
    role: Role,
}

/// What a sweep saw of one node's output, when asked for summaries: the
/// listeners that watch sweeps read these instead of the whole output,
/// which never exists.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweptOutput {
    pub summary: Acc,
    /// The flat index (row-major) and value of the first NaN or infinity
    /// in memory order (a channels-last value is swept in memory order).
    pub first_non_finite: Option<(usize, f64)>,
}

impl SweptOutput {
    /// Adds the summary of the part after `self`'s.
    fn merge(&mut self, later: &SweptOutput) {
        self.summary.merge(&later.summary);
        if self.first_non_finite.is_none() {
            self.first_non_finite = later.first_non_finite;
        }
    }
}

/// Nodes that can run as one sweep, found by [`prepare`].
pub(crate) struct Sweep<'g> {
    /// The first node's name, for errors.
    name: &'g str,
    /// The swept value: input 0 of the first node, or with a [`head`], the
    /// fresh buffer it writes.
    x: Tensor,
    /// With a head: its input 0, which the head maps into each tile.
    src: Option<Tensor>,
    /// For a swept value laid out channels-last (or in any other order
    /// without gaps): its axes slowest first ([`Tensor::in_memory_order`]).
    /// The sweep walks `x`, `src` and the operands in memory order; the
    /// operands are stored already so reordered.
    order: Option<Vec<usize>>,
    steps: Vec<Step>,
}

/// The leading nodes of `order` (consecutive, each continuing the one
/// before) that can run as one sweep, or `None` when fewer than two can (the
/// caller then steps node by node). A second operand must be one element,
/// or a contiguous array on another buffer of the swept value's shape or
/// broadcast into it as runs ([`Repeat`]: a bias, a per-channel scale),
/// and the swept value must be contiguous and of a float dtype.
/// `kind` names each node's function: its op's [`crate::ops::Op::pointwise`]
/// in a run's own sweep, the in-place twin's for a pure node of a twin
/// sweep. With `head` (the first node's [`head`] function), the first node
/// is pure and the sweep writes a fresh buffer instead of its input.
pub(crate) fn prepare<'g>(
    graph: &'g Graph,
    kind: impl Fn(NodeId) -> Option<Pointwise>,
    head: Option<Pointwise>,
    order: &[NodeId],
    live: &LiveValues,
) -> Option<Sweep<'g>> {
    let mut sweep = build(graph, kind, head, order, live)?;
    if sweep.steps[0].role != Role::Tile || head.is_none() {
        return Some(sweep);
    }
    // An allocation that fails here fails again, and is reported, when the
    // caller steps the node alone.
    let fresh = Tensor::uninit_like(sweep.x.dtype(), &sweep.x).ok()?;
    Some(Sweep {
        src: Some(std::mem::replace(&mut sweep.x, fresh)),
        ..sweep
    })
}

/// The reference side of a twin sweep ([`run_twin`]): the same steps as
/// [`prepare`] gives the in-place side, reading the first node's input
/// (which a twin sweep never writes) instead of writing a fresh buffer.
pub(crate) fn prepare_reference<'g>(
    graph: &'g Graph,
    kind: impl Fn(NodeId) -> Option<Pointwise>,
    head: Option<Pointwise>,
    order: &[NodeId],
    live: &LiveValues,
) -> Option<Sweep<'g>> {
    build(graph, kind, head, order, live)
}

/// [`prepare`]'s steps, sweeping the first node's input 0.
fn build<'g>(
    graph: &'g Graph,
    kind: impl Fn(NodeId) -> Option<Pointwise>,
    head: Option<Pointwise>,
    order: &[NodeId],
    live: &LiveValues,
) -> Option<Sweep<'g>> {
    let first = graph.node(order[0]);
    let x = live.value(*first.inputs.first()?)?;
    if !x.dtype().is_float() || x.size() == 0 {
        return None;
    }
    let axes = match x.in_memory_order() {
        Some((_, axes)) => Some(axes),
        None if x.is_contiguous() => None,
        None => return None,
    };
    // An operand as the sweep walks it: reordered as `x` is.
    let walked = |y: &Tensor| match &axes {
        None => Some(y.clone()),
        Some(o) => y.padded_permute(x.ndim(), o),
    };
    // A head folded into the next node sweeps its input in place: it is
    // no head any more.
    let (head, fold) = match order.get(1) {
        Some(&b) if folds(head, first, graph.node(b), kind(b)) => (None, head),
        _ => (head, None),
    };
    let mut steps = Vec::with_capacity(order.len());
    for (k, &n) in order.iter().enumerate() {
        let node = graph.node(n);
        let (f, role) = match (k, head, fold) {
            (0, Some(f), _) => (f, Role::Tile),
            (0, _, Some(f)) => (f, Role::ToScratch),
            (1, _, Some(_)) => match kind(n) {
                Some(f) => (f, Role::FromScratch),
                None => break,
            },
            _ => match kind(n) {
                Some(f) => (f, Role::Tile),
                None => break,
            },
        };
        let y = match (f, node.inputs.get(1)) {
            (_, _) if role == Role::FromScratch => Source::None,
            (Pointwise::Unary(_), _) => Source::None,
            (Pointwise::Binary(_), Some(&yv)) if yv == node.inputs[0] => Source::Itself,
            (Pointwise::Binary(_), Some(&yv)) => match live.value(yv) {
                // With a head only the fresh buffer is written: an operand
                // may share the head's input buffer.
                Some(y) if y.dtype() != x.dtype() || (head.is_none() && y.same_buffer(x)) => break,
                Some(y) if y.size() == 1 && y.ndim() <= x.ndim() => Source::Scalar(y.clone()),
                Some(y) if y.ndim() > x.ndim() => break,
                Some(y) => match walked(y) {
                    Some(w) if w.is_contiguous() && y.shape() == x.shape() => Source::Slice(w),
                    // A bias or per-channel scale, repeated over the walked
                    // value in runs.
                    Some(w) if w.is_contiguous() => {
                        match Repeat::of(w.shape(), &walk_shape(x, axes.as_deref())) {
                            Some(r) => Source::Repeat(w, r),
                            None => break,
                        }
                    }
                    _ => break,
                },
                None => break,
            },
            (Pointwise::Binary(_), None) => break,
        };
        steps.push(Step { f, y, role });
    }
    if steps.len() < 2 || steps[steps.len() - 1].role == Role::ToScratch {
        return None;
    }
    Some(Sweep {
        name: &first.name,
        x: x.clone(),
        src: None,
        order: axes,
        steps,
    })
}

/// The shape the sweep walks `x` in: its axes in memory order.
fn walk_shape(x: &Tensor, order: Option<&[usize]>) -> Vec<usize> {
    match order {
        Some(o) => o.iter().map(|&a| x.shape()[a]).collect(),
        None => x.shape().to_vec(),
    }
}

/// The row-major index in `shape` of element `i` in memory order, where
/// `order` lists the axes slowest first.
fn c_index(i: usize, shape: &[usize], order: &[usize]) -> usize {
    let mut index = vec![0; shape.len()];
    let mut rest = i;
    for &a in order.iter().rev() {
        let d = shape[a].max(1);
        index[a] = rest % d;
        rest /= d;
    }
    index.iter().zip(shape).fold(0, |acc, (&j, &d)| acc * d + j)
}

impl Sweep<'_> {
    /// The swept value: the first node's input 0, every node's output.
    pub(crate) fn value(&self) -> &Tensor {
        &self.x
    }

    /// The first node's input 0 as it reads it: the swept buffer, or with
    /// a head, the value the head maps into each tile.
    pub(crate) fn input(&self) -> &Tensor {
        self.src.as_ref().unwrap_or(&self.x)
    }

    /// Whether the first node is folded into the second (its output never
    /// exists).
    pub(crate) fn folded(&self) -> bool {
        self.steps[0].role == Role::ToScratch
    }

    /// How many nodes the sweep runs.
    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the `k`-th node's output is the swept buffer (a folded
    /// node's output never exists).
    pub(crate) fn binds(&self, k: usize) -> bool {
        self.steps[k].role != Role::ToScratch
    }

    /// Runs the sweep; with `summaries`, summarizes each node's output
    /// tile by tile (else the result is empty).
    pub(crate) fn run(&self, summaries: bool) -> Result<Vec<SweptOutput>> {
        let walk = |t: &Tensor| match &self.order {
            Some(o) => t.permute(o),
            None => Ok(t.clone()),
        };
        let x = walk(&self.x).map_err(|e| e.at_node(self.name))?;
        let src = self
            .src
            .as_ref()
            .map(walk)
            .transpose()
            .map_err(|e| e.at_node(self.name))?;
        let mut outs = crate::dispatch_float!(x.dtype(), T => run::<T>(&x, src.as_ref(), &self.steps, summaries).map_err(|e| e.at_node(self.name))?,
            Vec::new());
        if let Some(o) = &self.order {
            for out in &mut outs {
                if let Some((i, v)) = out.first_non_finite {
                    out.first_non_finite = Some((c_index(i, self.x.shape(), o), v));
                }
            }
        }
        Ok(outs)
    }
}

fn run<T: Float + VMath + Summarize>(
    x: &Tensor,
    src: Option<&Tensor>,
    steps: &[Step],
    summaries: bool,
) -> Result<Vec<SweptOutput>> {
    // Borrow every operand first (a guard each), then write the buffer.
    let guards = operand_guards::<T>(steps)?;
    let ops = operands(steps, &guards);
    let roles: Vec<Role> = steps.iter().map(|s| s.role).collect();
    let ops = (&ops[..], &roles[..]);
    let src = src.map(|s| s.borrow_contiguous::<T>()).transpose()?;
    let src = src.as_deref();
    let n = steps.len();
    // The head's input over part `k` of the buffer.
    let src_part = |k: usize, len: usize| src.map(|s| &s[k * TASK..k * TASK + len]);
    x.write_contiguous(|buf: &mut [T]| {
        let parallel = buf.len() >= PARALLEL_ELEMS && crate::parallel::intra_op();
        if !summaries {
            return if parallel {
                buf.par_chunks_mut(TASK)
                    .enumerate()
                    .try_for_each(|(k, part)| tiles(ops, src_part(k, part.len()), part, k * TASK, None))
                    .map(|()| Vec::new())
            } else {
                tiles(ops, src, buf, 0, None).map(|()| Vec::new())
            };
        }
        // Summaries part by part, merged in order: the parts (and so the
        // sums' bits) are the same with or without threads.
        let part = |(k, part): (usize, &mut [T])| {
            let mut out = vec![SweptOutput::default(); n];
            tiles(ops, src_part(k, part.len()), part, k * TASK, Some(&mut out)).map(|()| out)
        };
        let parts: Vec<Vec<SweptOutput>> = if parallel {
            buf.par_chunks_mut(TASK)
                .enumerate()
                .map(part)
                .collect::<Result<_>>()?
        } else {
            buf.chunks_mut(TASK)
                .enumerate()
                .map(part)
                .collect::<Result<_>>()?
        };
        let mut parts = parts.into_iter();
        let mut whole = parts.next().unwrap_or_else(|| vec![SweptOutput::default(); n]);
        for p in parts {
            whole.iter_mut().zip(&p).for_each(|(w, p)| w.merge(p));
        }
        Ok(whole)
    })?
}

/// Every node over each tile of `part`, which starts at element `at`; with
/// `out`, each node's output tile is summarized into its entry while the
/// tile is in L1. With `src` (a head's input over `part`), the first node
/// maps each tile from it. `ops` pairs each step with its [`Role`].
#[allow(clippy::type_complexity)]
fn tiles<T: Float + VMath + Summarize>(
    (ops, roles): (&[(Pointwise, Option<Operand<'_, T>>)], &[Role]),
    src: Option<&[T]>,
    part: &mut [T],
    at: usize,
    mut out: Option<&mut [SweptOutput]>,
) -> Result<()> {
    let tile = (TILE_BYTES / std::mem::size_of::<T>()).max(1);
    let mut scratch = vec![T::zero(); if roles.contains(&Role::ToScratch) { tile } else { 0 }];
    for (j, t) in part.chunks_mut(tile).enumerate() {
        let t_at = at + j * tile;
        // A head's tile is mapped from its input straight into the fresh
        // buffer: one pass instead of a copy and a pass.
        let from = src.map(|s| &s[j * tile..j * tile + t.len()]);
        for (k, (&(f, y), &role)) in ops.iter().zip(roles).enumerate() {
            let written: &[T] = match role {
                Role::Tile => {
                    match from.filter(|_| k == 0) {
                        Some(s) => map_tile(f, s, t, t_at, y)?,
                        None => apply_tile(f, t, t_at, y)?,
                    }
                    t
                }
                Role::ToScratch => {
                    let s = &mut scratch[..t.len()];
                    map_tile(f, t, s, t_at, y)?;
                    s
                }
                Role::FromScratch => {
                    apply_tile(f, t, 0, Some(Operand::Slice(&scratch[..t.len()])))?;
                    t
                }
            };
            if let Some(out) = out.as_deref_mut() {
                summarize_tile(written, t_at, &mut out[k]);
            }
        }
    }
    Ok(())
}

/// Adds tile `t` (starting at element `at`) to `out`.
fn summarize_tile<T: Summarize>(t: &[T], at: usize, out: &mut SweptOutput) {
    let acc = &mut out.summary;
    let before = acc.nan + acc.pos_inf + acc.neg_inf;
    T::summarize_run(t, acc);
    if out.first_non_finite.is_none() && acc.nan + acc.pos_inf + acc.neg_inf > before {
        out.first_non_finite = t
            .iter()
            .position(|x| !x.to_f64().is_finite())
            .map(|i| (at + i, t[i].to_f64()));
    }
}

/// Runs the sweep `ins` beside its twin `refs` (the same nodes of another
/// run, each with its own operands, from [`prepare_reference`]), whose last
/// output goes to the fresh buffer `out`: tile by tile, each node's tile
/// of one run is compared bit for bit with the other's while both are in
/// L1. `ins` sweeps its input in place, or with a head writes its fresh
/// buffer. `Some` (each node's output summary, with `summaries`) when
/// every tile agreed. `None` at the first difference or failure: the
/// in-place buffer then holds what it held before (a tile is swept only
/// once its input agreed with the twin's bit for bit, and every swept tile
/// is copied back from the twin's input), and the caller steps node by
/// node.
pub(crate) fn run_twin(
    ins: &Sweep,
    refs: &Sweep,
    out: &Tensor,
    summaries: bool,
) -> Result<Option<Vec<SweptOutput>>> {
    let x = &ins.x;
    // Twin sweeps compare tiles in C order.
    let alike = ins.order.is_none()
        && refs.order.is_none()
        && x.is_contiguous()
        && x.dtype() == refs.x.dtype()
        && x.shape() == refs.x.shape()
        && refs.x.is_contiguous()
        && out.dtype() == x.dtype()
        && out.shape() == x.shape()
        && out.is_contiguous()
        && refs.src.is_none()
        && ins.steps.len() == refs.steps.len()
        && ins
            .steps
            .iter()
            .zip(&refs.steps)
            .all(|(a, b)| a.f == b.f && a.role == b.role && a.y.kind() == b.y.kind())
        // The twin reads nothing the in-place sweep writes.
        && !refs.x.same_buffer(x)
        && !out.same_buffer(x)
        && !out.same_buffer(&refs.x)
        && ins.src.as_ref().is_none_or(|s| !s.same_buffer(out))
        && refs.steps.iter().all(|s| s.y.tensor().is_none_or(|y| !y.same_buffer(x) && !y.same_buffer(out)));
    if !alike {
        return Ok(None);
    }
    crate::dispatch_float!(x.dtype(), T => twin::<T>(ins, refs, out, summaries).map_err(|e| e.at_node(ins.name)),
        Ok(None))
}

impl Source {
    /// Which kind of operand, for telling two sweeps alike.
    fn kind(&self) -> u8 {
        match self {
            Source::None => 0,
            Source::Itself => 1,
            Source::Scalar(_) => 2,
            Source::Slice(_) => 3,
            Source::Repeat(..) => 4,
        }
    }

    fn tensor(&self) -> Option<&Tensor> {
        match self {
            Source::Scalar(t) | Source::Slice(t) | Source::Repeat(t, _) => Some(t),
            Source::None | Source::Itself => None,
        }
    }
}

/// Read guards on the steps' operands (one each), taken before any write.
fn operand_guards<T: Float>(steps: &[Step]) -> Result<Vec<Option<Ref<'_, [T]>>>> {
    steps
        .iter()
        .map(|s| match &s.y {
            Source::Scalar(t) | Source::Slice(t) | Source::Repeat(t, _) => {
                t.borrow_contiguous::<T>().map(Some)
            }
            Source::None | Source::Itself => Ok(None),
        })
        .collect()
}

/// Each step's function and operand, as [`apply_tile`] takes them.
fn operands<'a, T: Float>(
    steps: &[Step],
    guards: &'a [Option<Ref<'_, [T]>>],
) -> Vec<(Pointwise, Option<Operand<'a, T>>)> {
    steps
        .iter()
        .zip(guards)
        .map(|(s, g)| {
            let y = match (&s.y, g) {
                (Source::Scalar(_), Some(g)) => Some(Operand::Scalar(g[0])),
                (Source::Slice(_), Some(g)) => Some(Operand::Slice(&g[..])),
                (&Source::Repeat(_, r), Some(g)) => Some(Operand::Repeat(&g[..], r)),
                (Source::Itself, _) => Some(Operand::Itself),
                _ => None,
            };
            (s.f, y)
        })
        .collect()
}

/// What one part of a twin sweep did: how many of its leading elements
/// it may have written, and its summaries when every tile agreed.
struct TwinPart {
    touched: usize,
    agreed: Option<Vec<SweptOutput>>,
}

fn twin<T: Float + VMath + Summarize>(
    ins: &Sweep,
    refs: &Sweep,
    out: &Tensor,
    summaries: bool,
) -> Result<Option<Vec<SweptOutput>>> {
    let iguards = operand_guards::<T>(&ins.steps)?;
    let rguards = operand_guards::<T>(&refs.steps)?;
    let iops = operands(&ins.steps, &iguards);
    let rops = operands(&refs.steps, &rguards);
    let roles: Vec<Role> = ins.steps.iter().map(|s| s.role).collect();
    let rx = refs.x.borrow_contiguous::<T>()?;
    let src = ins.src.as_ref().map(|s| s.borrow_contiguous::<T>()).transpose()?;
    let n = iops.len();
    let (iops, rops, rx, src) = (&iops[..], &rops[..], &rx[..], src.as_deref());
    let ops = TwinOps {
        ins: iops,
        refs: rops,
        roles: &roles,
    };
    let agreed = ins.x.write_contiguous(|buf: &mut [T]| {
        out.write_contiguous(|ob: &mut [T]| {
            let parallel = buf.len() >= PARALLEL_ELEMS && crate::parallel::intra_op();
            #[allow(clippy::type_complexity)]
            let part = |(k, ((ip, op), xp)): (usize, ((&mut [T], &mut [T]), &[T]))| {
                let mut o = summaries.then(|| vec![SweptOutput::default(); n]);
                let from = src.map(|s| &s[k * TASK..k * TASK + ip.len()]);
                let (touched, same) = twin_tiles(&ops, ip, op, xp, from, k * TASK, o.as_deref_mut());
                TwinPart {
                    touched,
                    agreed: same.then(|| o.unwrap_or_default()),
                }
            };
            let parts: Vec<TwinPart> = if parallel {
                buf.par_chunks_mut(TASK)
                    .zip(ob.par_chunks_mut(TASK))
                    .zip(rx.par_chunks(TASK))
                    .enumerate()
                    .map(part)
                    .collect()
            } else {
                buf.chunks_mut(TASK)
                    .zip(ob.chunks_mut(TASK))
                    .zip(rx.chunks(TASK))
                    .enumerate()
                    .map(part)
                    .collect()
            };
            if parts.iter().any(|p| p.agreed.is_none()) {
                // Put back every tile a part swept in place: its input
                // agreed with the twin's bit for bit. (A head's fresh
                // buffer is dropped.)
                if src.is_none() {
                    for (k, p) in parts.iter().enumerate() {
                        let r = k * TASK..k * TASK + p.touched;
                        buf[r.clone()].copy_from_slice(&rx[r]);
                    }
                }
                return None;
            }
            let mut whole: Option<Vec<SweptOutput>> = None;
            for p in parts {
                let p = p.agreed.unwrap_or_default();
                match &mut whole {
                    None => whole = Some(p),
                    Some(w) => w.iter_mut().zip(&p).for_each(|(w, p)| w.merge(p)),
                }
            }
            Some(if summaries {
                whole.unwrap_or_else(|| vec![SweptOutput::default(); n])
            } else {
                Vec::new()
            })
        })
    })??;
    Ok(agreed)
}

/// Bit-for-bit equality of two tiles.
fn same_bits<T: Float>(a: &[T], b: &[T]) -> bool {
    bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b)
}

/// Both sides' steps of a twin sweep, and their roles (alike on both).
struct TwinOps<'a, 'o, T> {
    ins: &'a [(Pointwise, Option<Operand<'o, T>>)],
    refs: &'a [(Pointwise, Option<Operand<'o, T>>)],
    roles: &'a [Role],
}

/// Both runs' nodes over each tile of a part starting at element `at`:
/// the in-place part `ip` is swept only where its input (`ip` itself, or
/// with a head, `src`) equals the twin's input `xp`; the twin's tile is
/// `op`, which ends with its last node's output. Returns how many leading
/// elements of `ip` may have been written, and whether every tile agreed.
fn twin_tiles<T: Float + VMath + Summarize>(
    ops: &TwinOps<'_, '_, T>,
    ip: &mut [T],
    op: &mut [T],
    xp: &[T],
    src: Option<&[T]>,
    at: usize,
    mut out: Option<&mut [SweptOutput]>,
) -> (usize, bool) {
    let tile = (TILE_BYTES / std::mem::size_of::<T>()).max(1);
    let scratch = if ops.roles.contains(&Role::ToScratch) {
        tile
    } else {
        0
    };
    let (mut si, mut sr) = (vec![T::zero(); scratch], vec![T::zero(); scratch]);
    // A first node that overwrites the tile maps it from its input (one
    // pass instead of a copy and a pass); a folded one reads the twin's
    // copy.
    let first_maps = ops.roles.first() == Some(&Role::Tile);
    let mut start = 0;
    while start < ip.len() {
        let end = (start + tile).min(ip.len());
        let (ti, tr, tx) = (&mut ip[start..end], &mut op[start..end], &xp[start..end]);
        let input: &[T] = src.map_or(&*ti, |s| &s[start..end]);
        if !same_bits(input, tx) {
            return (start, false);
        }
        if !first_maps {
            tr.copy_from_slice(tx);
        }
        let len = ti.len();
        let steps = ops.ins.iter().zip(ops.refs).zip(ops.roles).enumerate();
        for (k, ((&(f, yi), &(g, yr)), &role)) in steps {
            let (ok, a, b): (bool, &[T], &[T]) = match role {
                Role::Tile if k == 0 => {
                    let ok = match src {
                        Some(s) => map_tile(f, &s[start..end], ti, at + start, yi),
                        None => apply_tile(f, ti, at + start, yi),
                    }
                    .is_ok()
                        && map_tile(g, tx, tr, at + start, yr).is_ok();
                    (ok, ti, tr)
                }
                Role::Tile => {
                    let ok = apply_tile(f, ti, at + start, yi).is_ok()
                        && apply_tile(g, tr, at + start, yr).is_ok();
                    (ok, ti, tr)
                }
                Role::ToScratch => {
                    let (a, b) = (&mut si[..len], &mut sr[..len]);
                    let ok = map_tile(f, ti, a, at + start, yi).is_ok()
                        && map_tile(g, tr, b, at + start, yr).is_ok();
                    (ok, a, b)
                }
                Role::FromScratch => {
                    let ok = apply_tile(f, ti, 0, Some(Operand::Slice(&si[..len]))).is_ok()
                        && apply_tile(g, tr, 0, Some(Operand::Slice(&sr[..len]))).is_ok();
                    (ok, ti, tr)
                }
            };
            if !ok || !same_bits(a, b) {
                return (end, false);
            }
            if let Some(out) = out.as_deref_mut() {
                summarize_tile(a, at + start, &mut out[k]);
            }
        }
        start = end;
    }
    (ip.len(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_order_index_maps_to_its_row_major_index() {
        // [2, 3, 4, 5] laid out channels-last: memory walks N, H, W, C.
        let (shape, order) = ([2, 3, 4, 5], [0, 2, 3, 1]);
        let layout = crate::tensor::Layout::contiguous_in_order(&shape, &order);
        let c_order = crate::tensor::Layout::contiguous(&shape);
        for (n, c, h, w) in [(0, 0, 0, 0), (1, 2, 3, 4), (0, 1, 2, 3), (1, 0, 3, 0)] {
            let index = [n, c, h, w];
            let memory = layout.offset_of(&index).unwrap();
            assert_eq!(
                c_index(memory, &shape, &order),
                c_order.offset_of(&index).unwrap(),
                "{index:?}"
            );
        }
    }
}

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
//! Each node of a sweep applies the same element function as its op
//! ([`crate::kernels::pointwise::apply_tile`] shares the op's `match`), and
//! the math kernels give an element the same result wherever it sits in a
//! slice, so a sweep is bit for bit the node-by-node run
//! (`engine/tests/fuse.rs` checks it).

use std::cell::Ref;

use rayon::prelude::*;

use crate::dtype::Float;
use crate::error::Result;
use crate::exec::live::LiveValues;
use crate::graph::{Graph, NodeId};
use crate::kernels::pointwise::{apply_tile, Operand, Pointwise};
use crate::kernels::summary::{Acc, Summarize};
use crate::kernels::vmath::VMath;
use crate::parallel::PARALLEL_ELEMS;
use crate::tensor::Tensor;

/// Bytes of a tile: the tile and one operand's tile stay in L1.
const TILE_BYTES: usize = 8 << 10;
/// Elements per parallel task of a long sweep.
const TASK: usize = 1 << 14;

/// For each position of `order`: whether its node continues the sweep of
/// the node before it (see the module docs).
pub(crate) fn plan(graph: &Graph, order: &[NodeId]) -> Vec<bool> {
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
    let mut continues = vec![false; order.len()];
    for pos in 1..order.len() {
        let (a, b) = (graph.node(order[pos - 1]), graph.node(order[pos]));
        if a.op.pointwise().is_none() || b.op.pointwise().is_none() || a.outputs.len() != 1 {
            continue;
        }
        let v = a.outputs[0];
        continues[pos] = b.inputs.first() == Some(&v) && !is_output[v] && readers[v] == 1;
    }
    continues
}

/// A node's second operand, as found among the live values.
enum Source {
    None,
    Itself,
    Scalar(Tensor),
    Slice(Tensor),
}

/// One node of a sweep.
struct Step {
    f: Pointwise,
    y: Source,
}

/// What a sweep saw of one node's output, when asked for summaries: the
/// listeners that watch sweeps read these instead of the whole output,
/// which never exists.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweptOutput {
    pub summary: Acc,
    /// The flat index (row-major: a swept value is contiguous) and value of
    /// the first NaN or infinity.
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
    /// The swept value: input 0 of the first node.
    x: Tensor,
    steps: Vec<Step>,
}

/// The leading nodes of `order` (consecutive, each continuing the one
/// before) that can run as one sweep, or `None` when fewer than two can (the
/// caller then steps node by node). A second operand must be one element
/// or a contiguous array of the swept value's shape on another buffer, and
/// the swept value must be contiguous and of a float dtype.
pub(crate) fn prepare<'g>(graph: &'g Graph, order: &[NodeId], live: &LiveValues) -> Option<Sweep<'g>> {
    let first = graph.node(order[0]);
    let x = live.value(*first.inputs.first()?)?;
    if !x.is_contiguous() || !x.dtype().is_float() || x.size() == 0 {
        return None;
    }
    let mut steps = Vec::with_capacity(order.len());
    for &n in order {
        let node = graph.node(n);
        let Some(f) = node.op.pointwise() else { break };
        let y = match (f, node.inputs.get(1)) {
            (Pointwise::Unary(_), _) => Source::None,
            (Pointwise::Binary(_), Some(&yv)) if yv == node.inputs[0] => Source::Itself,
            (Pointwise::Binary(_), Some(&yv)) => match live.value(yv) {
                Some(y) if y.dtype() != x.dtype() || y.same_buffer(x) => break,
                Some(y) if y.size() == 1 && y.ndim() <= x.ndim() => Source::Scalar(y.clone()),
                Some(y) if y.shape() == x.shape() && y.is_contiguous() => Source::Slice(y.clone()),
                _ => break,
            },
            (Pointwise::Binary(_), None) => break,
        };
        steps.push(Step { f, y });
    }
    (steps.len() >= 2).then(|| Sweep {
        name: &first.name,
        x: x.clone(),
        steps,
    })
}

impl Sweep<'_> {
    /// The swept value: the first node's input 0, every node's output.
    pub(crate) fn value(&self) -> &Tensor {
        &self.x
    }

    /// How many nodes the sweep runs.
    pub(crate) fn len(&self) -> usize {
        self.steps.len()
    }

    /// Runs the sweep; with `summaries`, summarizes each node's output
    /// tile by tile (else the result is empty).
    pub(crate) fn run(&self, summaries: bool) -> Result<Vec<SweptOutput>> {
        let x = &self.x;
        crate::dispatch_float!(x.dtype(), T => run::<T>(x, &self.steps, summaries).map_err(|e| e.at_node(self.name)),
            Ok(Vec::new()))
    }
}

fn run<T: Float + VMath + Summarize>(
    x: &Tensor,
    steps: &[Step],
    summaries: bool,
) -> Result<Vec<SweptOutput>> {
    // Borrow every operand first (a guard each), then write the buffer.
    let guards = steps
        .iter()
        .map(|s| match &s.y {
            Source::Scalar(t) | Source::Slice(t) => t.borrow_contiguous::<T>().map(Some),
            Source::None | Source::Itself => Ok(None),
        })
        .collect::<Result<Vec<Option<Ref<'_, [T]>>>>>()?;
    let ops: Vec<(Pointwise, Option<Operand<'_, T>>)> = steps
        .iter()
        .zip(&guards)
        .map(|(s, g)| {
            let y = match (&s.y, g) {
                (Source::Scalar(_), Some(g)) => Some(Operand::Scalar(g[0])),
                (Source::Slice(_), Some(g)) => Some(Operand::Slice(&g[..])),
                (Source::Itself, _) => Some(Operand::Itself),
                _ => None,
            };
            (s.f, y)
        })
        .collect();
    let n = ops.len();
    x.write_contiguous(|buf: &mut [T]| {
        let parallel = buf.len() >= PARALLEL_ELEMS && crate::parallel::intra_op();
        if !summaries {
            return if parallel {
                buf.par_chunks_mut(TASK)
                    .enumerate()
                    .try_for_each(|(k, part)| tiles(&ops, part, k * TASK, None))
                    .map(|()| Vec::new())
            } else {
                tiles(&ops, buf, 0, None).map(|()| Vec::new())
            };
        }
        // Summaries part by part, merged in order: the parts (and so the
        // sums' bits) are the same with or without threads.
        let part = |(k, part): (usize, &mut [T])| {
            let mut out = vec![SweptOutput::default(); n];
            tiles(&ops, part, k * TASK, Some(&mut out)).map(|()| out)
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
/// tile is in L1.
fn tiles<T: Float + VMath + Summarize>(
    ops: &[(Pointwise, Option<Operand<'_, T>>)],
    part: &mut [T],
    at: usize,
    mut out: Option<&mut [SweptOutput]>,
) -> Result<()> {
    let tile = (TILE_BYTES / std::mem::size_of::<T>()).max(1);
    for (j, t) in part.chunks_mut(tile).enumerate() {
        for (k, &(f, y)) in ops.iter().enumerate() {
            apply_tile(f, t, at + j * tile, y)?;
            if let Some(out) = out.as_deref_mut() {
                summarize_tile(t, at + j * tile, &mut out[k]);
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

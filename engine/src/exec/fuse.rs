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
//! and the run has no active listener and no pre-allocated outputs
//! ([`crate::exec::Executor::run_with`]). A [`crate::exec::Cursor`] stepped
//! by hand (DebugMode's lockstep) always runs node by node.
//!
//! Each node of a sweep applies the same element function as its op
//! ([`crate::ops::elementwise::apply_tile`] shares the op's `match`), and
//! the math kernels give an element the same result wherever it sits in a
//! slice, so a sweep is bit for bit the node-by-node run
//! (`engine/tests/fuse.rs` checks it).

use std::cell::Ref;

use rayon::prelude::*;

use crate::dtype::Float;
use crate::error::Result;
use crate::exec::live::LiveValues;
use crate::graph::{Graph, NodeId};
use crate::ops::elementwise::{apply_tile, Operand, Pointwise};
use crate::ops::vmath::{VMath, PARALLEL_ELEMS};
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

/// Runs the nodes at `positions` (consecutive, each continuing the one
/// before) as one sweep when their operands allow it, and returns how many
/// leading nodes it ran: 0 when fewer than two could go (the caller then
/// steps node by node). A second operand must be one element or a
/// contiguous array of the swept value's shape on another buffer, and the
/// swept value must be contiguous and of a float dtype.
pub(crate) fn sweep(graph: &Graph, order: &[NodeId], live: &LiveValues) -> Result<usize> {
    let first = graph.node(order[0]);
    let Some(x) = first.inputs.first().and_then(|&v| live.value(v)) else {
        return Ok(0);
    };
    if !x.is_contiguous() || !x.dtype().is_float() || x.size() == 0 {
        return Ok(0);
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
    if steps.len() < 2 {
        return Ok(0);
    }
    let name = &first.name;
    crate::dispatch_float!(x.dtype(), T => run::<T>(x, &steps).map_err(|e| e.at_node(name))?,
        return Ok(0));
    Ok(steps.len())
}

fn run<T: Float + VMath>(x: &Tensor, steps: &[Step]) -> Result<()> {
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
    x.write_contiguous(|buf: &mut [T]| {
        if buf.len() >= PARALLEL_ELEMS && crate::parallel::intra_op() {
            buf.par_chunks_mut(TASK)
                .enumerate()
                .try_for_each(|(k, part)| tiles(&ops, part, k * TASK))
        } else {
            tiles(&ops, buf, 0)
        }
    })?
}

/// Every node over each tile of `part`, which starts at element `at`.
fn tiles<T: Float + VMath>(
    ops: &[(Pointwise, Option<Operand<'_, T>>)],
    part: &mut [T],
    at: usize,
) -> Result<()> {
    let tile = (TILE_BYTES / std::mem::size_of::<T>()).max(1);
    for (j, t) in part.chunks_mut(tile).enumerate() {
        for &(f, y) in ops {
            apply_tile(f, t, at + j * tile, y)?;
        }
    }
    Ok(())
}

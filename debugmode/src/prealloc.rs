//! Pre-allocated outputs: the in-place graph re-run with every fresh
//! output handed to its op as a caller-supplied buffer full of poison, in
//! several layouts. An op whose result depends on the buffer's content or
//! layout (it accumulates into it, reads it before writing, or assumes it
//! is C-contiguous) gives a different digest. The `previous` layout hands
//! each op the buffer of its own last result instead of poison, which shows
//! an op that accumulates into a plausible-looking buffer.
//!
//! `wrong_size` is checked op by op: each op that makes fresh outputs is
//! called once more, on the run's own input values, with buffers one
//! element too large and too small in every dimension, inside a poisoned
//! guard region. It must refuse them or allocate its own, and never write
//! into them.

use serde_json::json;
use vigil_engine::compare::{compare, Tolerance};
use vigil_engine::exec::NoListener;
use vigil_engine::graph::{Graph, Node, NodeId};
use vigil_engine::ops::OpCtx;
use vigil_engine::{DType, Error as EngineError, Executor, Layout, RunOptions, Tensor};
use vigil_findings::{Finding, Kind};

use crate::config::DebugConfig;
use crate::digest;
use crate::error::Result;
use crate::lockstep::{fresh, poison_buffer, Feeds};

/// The poisoned layouts tried, by name; then `previous`, then `wrong_size`.
pub const LAYOUTS: [&str; 4] = ["c_contiguous", "f_contiguous", "strided", "reversed"];

/// A poisoned tensor of `shape` laid out as `layout` says.
fn make(dtype: DType, shape: &[usize], layout: &str) -> vigil_engine::Result<Tensor> {
    let n: usize = shape.iter().product();
    let c = Layout::contiguous(shape);
    let (len, l) = match layout {
        "f_contiguous" => (n, Layout::f_contiguous(shape)),
        "strided" => {
            let strides: Vec<isize> = c.strides().iter().map(|s| s * 2).collect();
            (2 * n.max(1), Layout::new(shape.to_vec(), strides, 0))
        }
        "reversed" => {
            let strides: Vec<isize> = c.strides().iter().map(|s| -s).collect();
            (n, Layout::new(shape.to_vec(), strides, n.saturating_sub(1)))
        }
        _ => (n, c),
    };
    let base = Tensor::zeros(dtype, &[len])?;
    poison_buffer(&base)?;
    base.with_layout(l)
}

/// Output buffers for `node` in `layout`: only for ops that make fresh
/// outputs (no declared view or destroy) of a static shape.
fn buffers(g: &Graph, node: &Node, layout: &str) -> Vec<Option<Tensor>> {
    if !node.op.view_map().is_empty() || !node.op.destroy_map().is_empty() {
        return Vec::new();
    }
    node.outputs
        .iter()
        .map(|&v| {
            let ty = &g.var(v).ty;
            let shape = ty.static_shape()?;
            make(ty.dtype, &shape, layout).ok()
        })
        .collect()
}

/// Copies of the baseline's values of `node`'s fresh outputs.
fn previous(base: &digest::Run<'_>, node: &Node) -> Vec<Option<Tensor>> {
    if !node.op.view_map().is_empty() || !node.op.destroy_map().is_empty() {
        return Vec::new();
    }
    node.outputs
        .iter()
        .map(|&v| base.value(v).and_then(|t| t.deep_copy().ok()))
        .collect()
}

/// Findings of `preallocated_output`, at most one per layout. An output
/// that changes in a poisoned C-contiguous buffer, or in the buffer of
/// its own previous result, depends on the buffer's content: that is
/// `uninitialized_read`, as lockstep names it, and the other layouts
/// have nothing to add about that output.
pub fn check(graph: &Graph, feeds: &Feeds, cfg: &DebugConfig, runs: &mut usize) -> Result<Vec<Finding>> {
    *runs += 1;
    let base = digest::run(graph, feeds, None, None, None)?;
    if let Some(f) = digest::repeat(graph, feeds, &base, cfg, runs)? {
        return Ok(vec![f]);
    }
    let mut out = Vec::new();
    let mut by_content = Vec::new();
    for layout in ["c_contiguous", "previous"]
        .into_iter()
        .chain(LAYOUTS.into_iter().filter(|l| *l != "c_contiguous"))
    {
        *runs += 1;
        let poisoned = |_: NodeId, node: &Node| buffers(graph, node, layout);
        let last = |_: NodeId, node: &Node| previous(&base, node);
        let supply: &dyn Fn(NodeId, &Node) -> Vec<Option<Tensor>> =
            if layout == "previous" { &last } else { &poisoned };
        match digest::run(graph, feeds, None, Some(supply), Some((&base, cfg))) {
            Ok(d) => {
                if let Some(v) = d.first_difference {
                    if by_content.contains(&v) {
                        continue;
                    }
                    let what = if layout == "previous" {
                        "the buffer of its own previous result".to_string()
                    } else {
                        format!("a pre-allocated {layout} buffer full of poison")
                    };
                    let content = layout == "c_contiguous" || layout == "previous";
                    let (kind, why) = if d.caused_by_inputs {
                        (
                            Kind::LAYOUT_DEPENDENT,
                            "with its inputs in the layouts they had in the baseline (and the same output buffers) it gives the baseline's values: the op depends on its inputs' layout, which the pre-allocated buffers upstream changed, not on its output buffer",
                        )
                    } else if content {
                        by_content.push(v);
                        (
                            Kind::UNINITIALIZED_READ,
                            "the op depends on what its output buffer held (it reads the buffer before writing it)",
                        )
                    } else {
                        (
                            Kind::PREALLOCATED_OUTPUT,
                            "the op depends on the output buffer's layout",
                        )
                    };
                    let mut f = Finding::new(
                        kind,
                        format!(
                            "output '{}' changes when the op is handed {what}: {why}",
                            graph.var(v).name
                        ),
                    )
                    .with_details(json!({"layout": layout, "var": graph.var(v).name}));
                    if let Some((n, k)) = graph.producer(v) {
                        let node = graph.node(n);
                        f = f.at(node.name.clone(), node.op.name()).with_output(k);
                    }
                    out.push(f);
                }
            }
            Err(e) => out.push(
                Finding::new(
                    Kind::PREALLOCATED_OUTPUT,
                    format!("the run fails when ops are handed pre-allocated {layout} buffers: {e}"),
                )
                .with_details(json!({"layout": layout, "error": e.to_string()})),
            ),
        }
    }
    *runs += 1;
    out.extend(wrong_size(graph, feeds)?);
    Ok(out)
}

/// A poisoned buffer of `shape` with every dimension changed by `delta`,
/// at the start of a poisoned region twice its size (the guard).
fn wrong_buffer(dtype: DType, shape: &[usize], delta: isize) -> Option<(Tensor, Tensor)> {
    let wrong: Vec<usize> = shape
        .iter()
        .map(|&d| (d as isize + delta).max(0) as usize)
        .collect();
    if wrong == shape {
        return None;
    }
    let n: usize = wrong.iter().product();
    let base = Tensor::zeros(dtype, &[2 * n.max(1)]).ok()?;
    poison_buffer(&base).ok()?;
    let t = base.with_layout(Layout::contiguous(&wrong)).ok()?;
    Some((base, t))
}

/// Each fresh-output op called again with wrong-size buffers; see the
/// module docs.
fn wrong_size(graph: &Graph, feeds: &Feeds) -> Result<Vec<Finding>> {
    let (g, f) = fresh(graph, feeds)?;
    let exec = Executor::new(&g)?;
    let mut listener = NoListener;
    let opts = RunOptions::default();
    let mut cursor = exec.start(&f, &mut listener, &opts)?;
    let mut out = Vec::new();
    while let Some(n) = cursor.next_node() {
        let node = g.node(n);
        let fresh_outputs = node.op.view_map().is_empty() && node.op.destroy_map().is_empty();
        let inputs: Option<Vec<Tensor>> = node.inputs.iter().map(|&v| cursor.value(v).cloned()).collect();
        if let (true, Some(inputs)) = (fresh_outputs, inputs) {
            for delta in [1isize, -1] {
                let mut guards = Vec::new();
                let bufs: Vec<Option<Tensor>> = node
                    .outputs
                    .iter()
                    .map(|&v| {
                        let ty = &g.var(v).ty;
                        let (base, t) = wrong_buffer(ty.dtype, &ty.static_shape()?, delta)?;
                        guards.push((base.deep_copy().ok()?, base, t.buffer_id()));
                        Some(t)
                    })
                    .collect();
                if guards.is_empty() {
                    continue;
                }
                let mut ctx = OpCtx::with_prealloc(&node.name, bufs);
                let used = match node.op.compute(&inputs, &mut ctx) {
                    Ok(outs) => outs
                        .iter()
                        .any(|o| guards.iter().any(|(_, _, id)| o.buffer_id() == *id)),
                    Err(EngineError::PreallocRefused { .. }) => false,
                    // Any other failure is the op's to report in the real
                    // run; it is not a buffer problem.
                    Err(_) => false,
                };
                let mut written = false;
                for (before, after, _) in &guards {
                    written |= !compare(after, before, Tolerance::EXACT)?.is_exact();
                }
                if used || written {
                    let size = if delta > 0 { "larger" } else { "smaller" };
                    out.push(
                        Finding::new(
                            Kind::PREALLOCATED_OUTPUT,
                            format!(
                                "handed output buffers one element {size} in every dimension than its outputs, the op {} instead of refusing them or allocating its own",
                                if used { "returned them" } else { "wrote into them" }
                            ),
                        )
                        .at(node.name.clone(), node.op.name())
                        .with_details(json!({"layout": "wrong_size", "delta": delta, "returned": used, "written": written})),
                    );
                    break;
                }
            }
        }
        cursor.step(&mut listener)?;
    }
    cursor.finish(&mut listener)?;
    Ok(out)
}

//! Pre-allocated outputs: the in-place graph re-run with every fresh
//! output handed to its op as a caller-supplied buffer full of poison, in
//! several layouts. An op whose result depends on the buffer's content or
//! layout (it accumulates into it, reads it before writing, or assumes it
//! is C-contiguous) gives a different digest.

use serde_json::json;
use vigil_engine::graph::{Graph, Node, NodeId};
use vigil_engine::{DType, Layout, Tensor};
use vigil_findings::{Finding, Kind};

use crate::config::DebugConfig;
use crate::digest;
use crate::error::Result;
use crate::lockstep::{poison_buffer, Feeds};

/// The layouts tried, by name.
pub const LAYOUTS: [&str; 4] = ["c_contiguous", "f_contiguous", "strided", "reversed"];

/// A poisoned tensor of `shape` laid out as `layout` says.
fn make(dtype: DType, shape: &[usize], layout: &str) -> vigil_engine::Result<Tensor> {
    let n: usize = shape.iter().product();
    let c = Layout::contiguous(shape);
    let (len, l) = match layout {
        "f_contiguous" => {
            let mut strides = vec![0isize; shape.len()];
            let mut s = 1isize;
            for (d, &len) in shape.iter().enumerate() {
                strides[d] = s;
                s *= len.max(1) as isize;
            }
            (n, Layout::new(shape.to_vec(), strides, 0))
        }
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

/// Findings of `preallocated_output`, at most one per layout.
pub fn check(graph: &Graph, feeds: &Feeds, cfg: &DebugConfig, runs: &mut usize) -> Result<Vec<Finding>> {
    *runs += 1;
    let base = digest::run(graph, feeds, None, None, None)?;
    let mut out = Vec::new();
    for layout in LAYOUTS {
        *runs += 1;
        let supply = |_: NodeId, node: &Node| buffers(graph, node, layout);
        match digest::run(graph, feeds, None, Some(&supply), Some((&base, cfg))) {
            Ok(d) => {
                if let Some(v) = d.first_difference {
                    let (n, k) = graph.producer(v).expect("digests cover node outputs only");
                    let node = graph.node(n);
                    out.push(
                        Finding::new(
                            Kind::PREALLOCATED_OUTPUT,
                            format!(
                                "output {k} '{}' changes when the op is handed a pre-allocated {layout} buffer full of poison: the op depends on the output buffer's content or layout",
                                graph.var(v).name
                            ),
                        )
                        .at(node.name.clone(), node.op.name())
                        .with_output(k)
                        .with_details(json!({"layout": layout, "var": graph.var(v).name})),
                    );
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
    Ok(out)
}

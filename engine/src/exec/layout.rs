//! Which nodes' outputs are best laid out channels-last.
//!
//! A depthwise conv reads one vector of channels per tap when its input is
//! channels-last (NHWC in memory, NCHW to every op: a layout, not a shape),
//! several times faster than over the padded rows of NCHW planes. The conv
//! before it (a MobileNet or EfficientNet block's expanding 1×1) can write
//! its output that way at no cost, and the elementwise nodes between them
//! keep their input's layout. So the executor hints ([`crate::ops::OpCtx::prefers_channels_last`])
//! to each conv whose output reaches a depthwise conv through elementwise
//! nodes only. The depthwise conv then keeps the layout for the nodes after
//! it; ops that want another one read any layout.

use crate::graph::{Graph, NodeId};

/// Nodes an output is followed through, at most, looking for a depthwise
/// conv: a block's activation is one or two.
const MAX_HOPS: usize = 8;

/// Per node: whether it is a conv whose output reaches, as input 0, a
/// depthwise conv through elementwise nodes only.
pub(crate) fn channels_last(graph: &Graph) -> Vec<bool> {
    (0..graph.nodes().len())
        .map(|n| is_conv(graph, n) && feeds_depthwise(graph, n))
        .collect()
}

fn is_conv(graph: &Graph, n: NodeId) -> bool {
    graph.node(n).op.name() == "conv"
}

/// A depthwise conv: groups of one input channel, one output channel each
/// (its weight `[M, 1, …]` with M the group count). A grouped conv with
/// more channels per group reads C-order planes.
fn depthwise(graph: &Graph, n: NodeId) -> bool {
    let node = graph.node(n);
    let group = node.op.attrs().i64("group").ok().flatten().unwrap_or(1);
    let w = node.inputs.get(1).and_then(|&w| graph.var(w).ty.static_shape());
    is_conv(graph, n) && group > 1 && w.is_some_and(|w| w.len() == 4 && w[0] as i64 == group && w[1] == 1)
}

/// Whether a node keeps its input's layout: an elementwise op (in place or
/// pure with an in-place twin).
fn elementwise(graph: &Graph, n: NodeId) -> bool {
    let op = graph.node(n).op.as_ref();
    op.pointwise().is_some() || crate::exec::fuse::head(op).is_some()
}

fn feeds_depthwise(graph: &Graph, n: NodeId) -> bool {
    let mut values: Vec<usize> = graph.node(n).outputs.iter().take(1).copied().collect();
    let mut hops = 0;
    while let Some(v) = values.pop() {
        for &r in graph.readers(v) {
            if depthwise(graph, r) && graph.node(r).inputs.first() == Some(&v) {
                return true;
            }
            if elementwise(graph, r) && hops < MAX_HOPS {
                hops += 1;
                values.extend(graph.node(r).outputs.iter().take(1));
            }
        }
    }
    false
}

//! A static estimate of which buffer each variable lives in and of peak live
//! bytes, from declared view/destroy maps and inferred shapes. It follows the
//! executor's rules: a value dies after its last reader, a buffer when its
//! last value dies.

use serde::Serialize;

use crate::graph::{Graph, NodeId, VarId, VarKind};

/// One buffer of the plan.
#[derive(Clone, Debug, Serialize)]
pub struct PlannedBuffer {
    /// The variable that allocates it.
    pub owner: String,
    /// `None` when the shape is not known before running.
    pub bytes: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MemoryPlan {
    /// Index into `buffers` for every variable.
    pub buffer_of: Vec<usize>,
    pub buffers: Vec<PlannedBuffer>,
    /// Peak of live bytes, counting known sizes only (saturating at
    /// `u64::MAX`).
    pub peak_bytes: u64,
    /// Buffers whose size is unknown (not in `peak_bytes`).
    pub unknown_buffers: usize,
}

/// Bytes of `v`'s buffer, or `None` when its shape is not static or its
/// element or byte count overflows (unknown, like a dynamic shape).
fn bytes_of(g: &Graph, v: VarId) -> Option<u64> {
    let ty = &g.var(v).ty;
    let shape = ty.static_shape()?;
    let n = crate::tensor::limit::numel(&shape).ok()?;
    u64::try_from(n).ok()?.checked_mul(ty.dtype.size() as u64)
}

/// Plans the run of `g` in `order`.
pub fn plan(g: &Graph, order: &[NodeId]) -> MemoryPlan {
    let nv = g.vars().len();
    let mut buffer_of = vec![usize::MAX; nv];
    let mut buffers: Vec<PlannedBuffer> = Vec::new();
    let new_buffer = |v: VarId, buffers: &mut Vec<PlannedBuffer>| {
        buffers.push(PlannedBuffer {
            owner: g.var(v).name.clone(),
            bytes: bytes_of(g, v),
        });
        buffers.len() - 1
    };
    for (v, var) in g.vars().iter().enumerate() {
        if !matches!(var.kind, VarKind::Output { .. }) {
            buffer_of[v] = new_buffer(v, &mut buffers);
        }
    }
    let mut last_use = vec![None; nv];
    for (pos, &n) in order.iter().enumerate() {
        for &v in &g.node(n).inputs {
            last_use[v] = Some(pos);
        }
    }
    let mut holders = vec![0usize; buffers.len()];
    // Sums in u128: each buffer is below 2^64 bytes, so they cannot wrap.
    let mut live: u128 = 0;
    let mut peak: u128 = 0;
    let add = |b: usize,
               holders: &mut Vec<usize>,
               buffers: &Vec<PlannedBuffer>,
               live: &mut u128,
               peak: &mut u128| {
        if holders.len() <= b {
            holders.resize(b + 1, 0);
        }
        if holders[b] == 0 {
            *live += u128::from(buffers[b].bytes.unwrap_or(0));
            *peak = (*peak).max(*live);
        }
        holders[b] += 1;
    };
    for &b in buffer_of.iter().filter(|&&b| b != usize::MAX) {
        add(b, &mut holders, &buffers, &mut live, &mut peak);
    }
    for (pos, &n) in order.iter().enumerate() {
        let node = g.node(n);
        let shared: Vec<(usize, usize)> = node
            .op
            .view_map()
            .into_iter()
            .chain(node.op.destroy_map())
            .collect();
        for (k, &o) in node.outputs.iter().enumerate() {
            buffer_of[o] = match shared.iter().find(|&&(out, _)| out == k) {
                Some(&(_, i)) => node.inputs.get(i).map(|&x| buffer_of[x]).unwrap_or(usize::MAX),
                None => new_buffer(o, &mut buffers),
            };
            if buffer_of[o] == usize::MAX {
                buffer_of[o] = new_buffer(o, &mut buffers);
            }
            add(buffer_of[o], &mut holders, &buffers, &mut live, &mut peak);
        }
        for &v in node.inputs.iter().chain(&node.outputs) {
            let dies = !g.is_output(v) && last_use[v].is_none_or(|p| p == pos);
            let b = buffer_of[v];
            if dies && holders[b] > 0 {
                // Each variable releases its hold once.
                last_use[v] = Some(usize::MAX);
                holders[b] -= 1;
                if holders[b] == 0 {
                    live -= u128::from(buffers[b].bytes.unwrap_or(0));
                }
            }
        }
    }
    let unknown_buffers = buffers.iter().filter(|b| b.bytes.is_none()).count();
    MemoryPlan {
        buffer_of,
        buffers,
        peak_bytes: u64::try_from(peak).unwrap_or(u64::MAX),
        unknown_buffers,
    }
}

//! Reductions: the gradient is broadcast back over the reduced axes (for
//! max and min, only to the elements equal to the result).

use vigil_engine::Attrs;

use super::{broadcast_like, count, expand_axes, norm_axes, rank, zeros_like};
use crate::error::Result;
use crate::registry::{GradCtx, GradRegistry};
use vigil_engine::graph::Sym;

/// The reduced axes and `s` (the gradient or the result) reshaped as if
/// the reduction had kept its dims.
fn kept(c: &GradCtx, s: &Sym) -> Result<(Vec<usize>, Sym)> {
    let x = &c.inputs[0];
    let axes = norm_axes(c, c.attrs.i64_list("axes")?, rank(c, x)?)?;
    let keepdims = c.attrs.bool("keepdims")?.unwrap_or(false);
    let s = if keepdims {
        s.clone()
    } else {
        expand_axes(s, &axes)?
    };
    Ok((axes, s))
}

pub fn register(r: &mut GradRegistry) {
    r.register("sum", |c| {
        let (_, g) = kept(c, c.grad()?)?;
        Ok(vec![Some(broadcast_like(c, &g, &c.inputs[0])?)])
    });
    r.register("mean", |c| {
        let (axes, g) = kept(c, c.grad()?)?;
        let n = count(c, &c.inputs[0], &axes)?;
        Ok(vec![Some(broadcast_like(c, &g.div(&n)?, &c.inputs[0])?)])
    });
    for name in ["max", "min"] {
        r.register(name, |c| {
            let x = &c.inputs[0];
            let (_, g) = kept(c, c.grad()?)?;
            let (_, y) = kept(c, &c.outputs[0])?;
            let hit = x.op("eq", &[&y], Attrs::new())?;
            let g = broadcast_like(c, &g, x)?;
            Ok(vec![Some(hit.op(
                "where",
                &[&g, &zeros_like(c, x)?],
                Attrs::new(),
            )?)])
        });
    }
}

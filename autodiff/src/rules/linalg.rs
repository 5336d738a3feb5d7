//! matmul with numpy's rules: 1-D operands are promoted to matrices (a row
//! on the left, a column on the right), the product is differentiated as a
//! batched matrix product, and each gradient is summed over broadcast batch
//! dims and demoted back.

use vigil_engine::graph::Sym;
use vigil_engine::Attrs;

use super::{rank, reduce_to};
use crate::error::Result;
use crate::registry::{GradCtx, GradRegistry};

/// `s` with its last two axes swapped.
fn swap_last(c: &GradCtx, s: &Sym) -> Result<Sym> {
    let n = rank(c, s)?;
    let mut perm: Vec<usize> = (0..n).collect();
    perm.swap(n - 2, n - 1);
    Ok(s.transpose(Some(&perm))?)
}

fn expand(s: &Sym, axis: usize) -> Result<Sym> {
    Ok(s.op("expand_dims", &[], Attrs::new().with("axis", axis as i64))?)
}

fn squeeze(s: &Sym, axis: usize) -> Result<Sym> {
    Ok(s.op("squeeze", &[], Attrs::new().with("axes", vec![axis as i64]))?)
}

fn matmul(c: &GradCtx) -> Result<Vec<Option<Sym>>> {
    let (a, b) = (&c.inputs[0], &c.inputs[1]);
    let (ra, rb) = (rank(c, a)?, rank(c, b)?);
    let mut g = c.grad()?.clone();
    let a2 = if ra == 1 { expand(a, 0)? } else { a.clone() };
    let b2 = if rb == 1 { expand(b, 1)? } else { b.clone() };
    if ra == 1 {
        g = expand(&g, rank(c, &g)?.saturating_sub(usize::from(rb != 1)))?;
    }
    if rb == 1 {
        g = expand(&g, rank(c, &g)?)?;
    }
    let da = match c.needs[0] {
        true => {
            let d = reduce_to(c, &g.matmul(&swap_last(c, &b2)?)?, &a2)?;
            Some(if ra == 1 { squeeze(&d, 0)? } else { d })
        }
        false => None,
    };
    let db = match c.needs[1] {
        true => {
            let d = reduce_to(c, &swap_last(c, &a2)?.matmul(&g)?, &b2)?;
            Some(if rb == 1 { squeeze(&d, 1)? } else { d })
        }
        false => None,
    };
    Ok(vec![da, db])
}

pub fn register(r: &mut GradRegistry) {
    r.register("matmul", matmul);
}

//! Ops that only move elements around without copying: each gradient is
//! the inverse move (a broadcast's is a sum).

use vigil_engine::Attrs;

use super::{expand_axes, norm_axis, rank, reduce_to};
use crate::registry::GradRegistry;

pub fn register(r: &mut GradRegistry) {
    r.register("reshape", |c| {
        let x = &c.inputs[0];
        let shape = x
            .ty()
            .shape
            .ok_or_else(|| c.error("reshape of a value of unknown rank"))?;
        if shape.iter().filter(|&&d| d < 0).count() > 1 {
            return Err(c.error(format!(
                "the gradient of reshape needs '{}' to have at most one dimension unknown before running",
                x.name()
            )));
        }
        Ok(vec![Some(c.grad()?.reshape(&shape)?)])
    });
    r.register("transpose", |c| {
        let n = rank(c, &c.inputs[0])?;
        let perm = c
            .attrs
            .usize_list("perm")?
            .unwrap_or_else(|| (0..n).rev().collect());
        let mut inverse = vec![0; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            *inverse
                .get_mut(p)
                .ok_or_else(|| c.error(format!("bad perm {perm:?}")))? = i;
        }
        Ok(vec![Some(c.grad()?.transpose(Some(&inverse))?)])
    });
    r.register("expand_dims", |c| {
        let n = rank(c, &c.outputs[0])?;
        let axis = norm_axis(c, c.attrs.i64("axis")?.unwrap_or(0), n)?;
        let attrs = Attrs::new().with("axes", vec![axis as i64]);
        Ok(vec![Some(c.grad()?.op("squeeze", &[], attrs)?)])
    });
    r.register("squeeze", |c| {
        let x = &c.inputs[0];
        let n = rank(c, x)?;
        let axes: Vec<usize> = match c.attrs.i64_list("axes")? {
            Some(a) => {
                let mut v = a
                    .into_iter()
                    .map(|a| norm_axis(c, a, n))
                    .collect::<Result<Vec<_>, _>>()?;
                v.sort_unstable();
                v.dedup();
                v
            }
            None => {
                let shape = x.ty().shape.unwrap_or_default();
                if shape.contains(&-1) {
                    return Err(c.error(format!(
                        "squeeze without axes: the shape of '{}' must be known before running",
                        x.name()
                    )));
                }
                (0..n).filter(|&i| shape[i] == 1).collect()
            }
        };
        Ok(vec![Some(expand_axes(c.grad()?, &axes)?)])
    });
    r.register("broadcast_to", |c| {
        Ok(vec![Some(reduce_to(c, c.grad()?, &c.inputs[0])?)])
    });
}

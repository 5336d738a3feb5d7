//! softmax, log_softmax, cross_entropy and mse.

use vigil_engine::{Attrs, Tensor};

use super::{count, rank, reduce_to, scalar};
use crate::registry::GradRegistry;

pub fn register(r: &mut GradRegistry) {
    // y·(g − Σ g·y) over the axis.
    r.register("softmax", |c| {
        let (g, y) = (c.grad()?, &c.outputs[0]);
        let axis = c.attrs.i64("axis")?.unwrap_or(-1);
        let gy = g.mul(y)?;
        let s = gy.op(
            "sum",
            &[],
            Attrs::new().with("axes", vec![axis]).with("keepdims", true),
        )?;
        Ok(vec![Some(gy.sub(&y.mul(&s)?)?)])
    });
    // g − softmax·Σ g over the axis.
    r.register("log_softmax", |c| {
        let (g, y) = (c.grad()?, &c.outputs[0]);
        let axis = c.attrs.i64("axis")?.unwrap_or(-1);
        let s = g.op(
            "sum",
            &[],
            Attrs::new().with("axes", vec![axis]).with("keepdims", true),
        )?;
        Ok(vec![Some(g.sub(&y.exp()?.mul(&s)?)?)])
    });
    // (softmax(logits) − onehot(labels))·g / N; labels get none.
    r.register("cross_entropy", |c| {
        let (logits, labels) = (&c.inputs[0], &c.inputs[1]);
        let dtype = logits.ty().dtype;
        let classes = logits
            .ty()
            .shape
            .and_then(|s| s.last().copied())
            .and_then(|d| usize::try_from(d).ok())
            .ok_or_else(|| {
                c.error(format!(
                    "the class count of '{}' must be known before running",
                    logits.name()
                ))
            })?;
        if rank(c, logits)? != 2 {
            return Err(c.error("cross_entropy logits must be [N, C]"));
        }
        let ids = Tensor::from_i64s(&(0..classes as i64).collect::<Vec<_>>());
        let ids = c.builder.constant(&c.builder.fresh("classes"), ids);
        let hit =
            labels
                .op("expand_dims", &[], Attrs::new().with("axis", 1))?
                .op("eq", &[&ids], Attrs::new())?;
        // `where` on constants rather than a `cast` to a fixed dtype, so the
        // graph still type-checks when its float sources are widened to f64.
        let onehot = hit.op(
            "where",
            &[&scalar(c, dtype, 1.0)?, &scalar(c, dtype, 0.0)?],
            Attrs::new(),
        )?;
        let p = logits.op("softmax", &[], Attrs::new())?;
        let n = count(c, logits, &[0])?;
        let d = p.sub(&onehot)?.mul(c.grad()?)?.div(&n)?;
        Ok(vec![Some(d), None])
    });
    // ±2(a − b)·g / N, each summed back to its operand's shape.
    r.register("mse", |c| {
        let (a, b) = (&c.inputs[0], &c.inputs[1]);
        let diff = a.sub(b)?;
        let r = rank(c, &diff)?;
        let n = count(c, &diff, &(0..r).collect::<Vec<_>>())?;
        let two = scalar(c, diff.ty().dtype, 2.0)?;
        let d = diff.mul(&two)?.mul(c.grad()?)?.div(&n)?;
        let da = match c.needs[0] {
            true => Some(reduce_to(c, &d, a)?),
            false => None,
        };
        let db = match c.needs[1] {
            true => Some(reduce_to(c, &d.neg()?, b)?),
            false => None,
        };
        Ok(vec![da, db])
    });
}

//! Elementwise ops. A binary op's operands broadcast, so each gradient is
//! summed back to its operand's shape.

use vigil_engine::graph::Sym;
use vigil_engine::Attrs;

use super::{keep_needed, reduce_to, scalar, zeros_like};
use crate::error::Result;
use crate::registry::{GradCtx, GradRegistry};

/// `where(cond, a, b)` with an empty attrs.
fn select(cond: &Sym, a: &Sym, b: &Sym) -> Result<Sym> {
    Ok(cond.op("where", &[a, b], Attrs::new())?)
}

/// The rule of a binary op from the unreduced gradients of `a` and `b`
/// (each closure runs only when that operand needs a gradient).
fn binary(
    ctx: &GradCtx,
    ga: impl FnOnce(&Sym, &Sym, &Sym, &Sym) -> Result<Sym>,
    gb: impl FnOnce(&Sym, &Sym, &Sym, &Sym) -> Result<Sym>,
) -> Result<Vec<Option<Sym>>> {
    let g = ctx.grad()?;
    let (a, b, y) = (&ctx.inputs[0], &ctx.inputs[1], &ctx.outputs[0]);
    let da = match ctx.needs[0] {
        true => Some(reduce_to(ctx, &ga(g, a, b, y)?, a)?),
        false => None,
    };
    let db = match ctx.needs[1] {
        true => Some(reduce_to(ctx, &gb(g, a, b, y)?, b)?),
        false => None,
    };
    Ok(vec![da, db])
}

/// The rule of a unary op from `g`, `x` and `y`.
fn unary(ctx: &GradCtx, f: impl FnOnce(&Sym, &Sym, &Sym) -> Result<Sym>) -> Result<Vec<Option<Sym>>> {
    Ok(vec![Some(f(ctx.grad()?, &ctx.inputs[0], &ctx.outputs[0])?)])
}

/// `gt(x, 0)` or `lt(x, 0)`.
fn sign_mask(ctx: &GradCtx, x: &Sym, op: &str) -> Result<Sym> {
    let zero = scalar(ctx, x.ty().dtype, 0.0)?;
    Ok(x.op(op, &[&zero], Attrs::new())?)
}

pub fn register(r: &mut GradRegistry) {
    r.register("add", |c| {
        binary(c, |g, _, _, _| Ok(g.clone()), |g, _, _, _| Ok(g.clone()))
    });
    r.register("sub", |c| {
        binary(c, |g, _, _, _| Ok(g.clone()), |g, _, _, _| Ok(g.neg()?))
    });
    r.register("mul", |c| {
        binary(c, |g, _, b, _| Ok(g.mul(b)?), |g, a, _, _| Ok(g.mul(a)?))
    });
    // d(a/b)/db = -a/b² = -(a/b)/b.
    r.register("div", |c| {
        binary(
            c,
            |g, _, b, _| Ok(g.div(b)?),
            |g, _, b, y| Ok(g.mul(y)?.div(b)?.neg()?),
        )
    });
    // d(a^b)/da = b·a^(b-1); d(a^b)/db = a^b·ln a.
    r.register("pow", |c| {
        binary(
            c,
            |g, a, b, _| {
                let one = scalar(c, b.ty().dtype, 1.0)?;
                Ok(g.mul(b)?.mul(&a.pow(&b.sub(&one)?)?)?)
            },
            |g, a, _, y| Ok(g.mul(y)?.mul(&a.log()?)?),
        )
    });
    // Ties go to the first operand, as the forward op returns it.
    for (name, cmp) in [("maximum", "ge"), ("minimum", "le")] {
        r.register(name, move |c| {
            let mask = c.inputs[0].op(cmp, &[&c.inputs[1]], Attrs::new())?;
            binary(
                c,
                |g, _, _, _| select(&mask, g, &zeros_like(c, g)?),
                |g, _, _, _| select(&mask, &zeros_like(c, g)?, g),
            )
        });
    }
    r.register("neg", |c| unary(c, |g, _, _| Ok(g.neg()?)));
    r.register("copy", |c| unary(c, |g, _, _| Ok(g.clone())));
    r.register("abs", |c| {
        unary(c, |g, x, _| {
            let zero = zeros_like(c, g)?;
            let neg = select(&sign_mask(c, x, "lt")?, &g.neg()?, &zero)?;
            select(&sign_mask(c, x, "gt")?, g, &neg)
        })
    });
    // A scalar zero broadcasts in `where`: no zero-filled buffer.
    r.register("relu", |c| {
        unary(c, |g, x, _| {
            select(&sign_mask(c, x, "gt")?, g, &scalar(c, g.ty().dtype, 0.0)?)
        })
    });
    r.register("exp", |c| unary(c, |g, _, y| Ok(g.mul(y)?)));
    r.register("log", |c| unary(c, |g, x, _| Ok(g.div(x)?)));
    r.register("sqrt", |c| unary(c, |g, _, y| Ok(g.div(&y.add(y)?)?)));
    r.register("tanh", |c| {
        unary(c, |g, _, y| {
            let one = scalar(c, y.ty().dtype, 1.0)?;
            Ok(g.mul(&one.sub(&y.mul(y)?)?)?)
        })
    });
    r.register("sigmoid", |c| {
        unary(c, |g, _, y| {
            let one = scalar(c, y.ty().dtype, 1.0)?;
            Ok(g.mul(y)?.mul(&one.sub(y)?)?)
        })
    });
    r.register("where", |c| {
        let g = c.grad()?;
        let cond = &c.inputs[0];
        let zero = zeros_like(c, g)?;
        let da = match c.needs[1] {
            true => Some(reduce_to(c, &select(cond, g, &zero)?, &c.inputs[1])?),
            false => None,
        };
        let db = match c.needs[2] {
            true => Some(reduce_to(c, &select(cond, &zero, g)?, &c.inputs[2])?),
            false => None,
        };
        Ok(vec![None, da, db])
    });
    // A cast back to the input's dtype; integer inputs get no gradient.
    r.register("cast", |c| {
        let x = &c.inputs[0];
        let dt = x.ty().dtype;
        if !dt.is_float() {
            return Ok(vec![None]);
        }
        Ok(keep_needed(c, vec![Some(c.grad()?.cast(dt)?)]))
    });
}

//! The built-in gradient rules, a file per op family, and the small graph
//! helpers they share (zeros of a shape, broadcasting a gradient up to an
//! input's shape, summing it back down).

pub mod elementwise;
pub mod index;
pub mod linalg;
pub mod nn;
pub mod reduce;
pub mod shape;

use vigil_engine::dtype::Scalar;
use vigil_engine::graph::Sym;
use vigil_engine::{Attrs, DType, Tensor};

use crate::error::Result;
use crate::registry::GradCtx;

/// A rank-0 constant of `dtype` holding `v`.
pub fn scalar(ctx: &GradCtx, dtype: DType, v: f64) -> Result<Sym> {
    let t = if dtype == DType::Bool {
        Tensor::scalar(Scalar::Bool(v != 0.0))
    } else {
        Tensor::scalar(Scalar::F64(v)).cast(dtype)?
    };
    let name = ctx.builder.fresh("c");
    Ok(ctx.builder.constant(&name, t))
}

/// The rank of `x`, which every rule that moves axes needs.
pub fn rank(ctx: &GradCtx, x: &Sym) -> Result<usize> {
    x.ty()
        .rank()
        .ok_or_else(|| ctx.error(format!("the rank of '{}' is unknown before running", x.name())))
}

/// The shape of `x`, which must be fully known.
pub fn static_shape(ctx: &GradCtx, x: &Sym) -> Result<Vec<usize>> {
    x.ty().static_shape().ok_or_else(|| {
        ctx.error(format!(
            "the shape of '{}' must be known before running",
            x.name()
        ))
    })
}

/// Zeros with `x`'s dtype and run-time shape: `where(false, x, 0)`, which
/// (unlike `x * 0`) stays zero where `x` is NaN or infinite.
pub fn zeros_like(ctx: &GradCtx, x: &Sym) -> Result<Sym> {
    let f = scalar(ctx, DType::Bool, 0.0)?;
    let zero = scalar(ctx, x.ty().dtype, 0.0)?;
    Ok(f.op("where", &[x, &zero], Attrs::new())?)
}

/// `g` broadcast to `x`'s shape: a `broadcast_to` view when the shape is
/// known, else `where(true, g, x)`.
pub fn broadcast_like(ctx: &GradCtx, g: &Sym, x: &Sym) -> Result<Sym> {
    let (gt, xt) = (g.ty(), x.ty());
    if gt.shape == xt.shape && xt.static_shape().is_some() {
        return Ok(g.clone());
    }
    if let Some(shape) = xt.static_shape() {
        return Ok(g.op("broadcast_to", &[], Attrs::new().with("shape", shape))?);
    }
    let t = scalar(ctx, DType::Bool, 1.0)?;
    Ok(t.op("where", &[g, x], Attrs::new())?)
}

/// `g` summed over the axes that numpy broadcasting added or stretched to
/// make `like`'s shape into `g`'s. A dimension unknown before running is
/// taken as not broadcast unless `like` has 1 there.
pub fn reduce_to(ctx: &GradCtx, g: &Sym, like: &Sym) -> Result<Sym> {
    let gs = g
        .ty()
        .shape
        .ok_or_else(|| ctx.error("gradient of unknown rank"))?;
    let ls = like
        .ty()
        .shape
        .ok_or_else(|| ctx.error(format!("the rank of '{}' is unknown before running", like.name())))?;
    if gs.len() < ls.len() {
        return Err(ctx.error(format!(
            "gradient of rank {} cannot be reduced to '{}' of rank {}",
            gs.len(),
            like.name(),
            ls.len()
        )));
    }
    let lead = gs.len() - ls.len();
    let mut out = g.clone();
    if lead > 0 {
        let axes: Vec<i64> = (0..lead as i64).collect();
        out = out.op(
            "sum",
            &[],
            Attrs::new().with("axes", axes).with("keepdims", false),
        )?;
    }
    let stretched: Vec<i64> = ls
        .iter()
        .zip(&gs[lead..])
        .enumerate()
        .filter(|(_, (&l, &g))| l == 1 && g != 1)
        .map(|(i, _)| i as i64)
        .collect();
    if !stretched.is_empty() {
        out = out.op(
            "sum",
            &[],
            Attrs::new().with("axes", stretched).with("keepdims", true),
        )?;
    }
    Ok(out)
}

/// How many elements of `x` each element of a reduction over `axes`
/// summarizes, shaped to broadcast against `x` (a constant when the shape
/// is known, else counted at run time).
pub fn count(ctx: &GradCtx, x: &Sym, axes: &[usize]) -> Result<Sym> {
    let dtype = x.ty().dtype;
    if let Some(shape) = x.ty().static_shape() {
        let n: usize = axes.iter().map(|&a| shape[a]).product();
        return scalar(ctx, dtype, n as f64);
    }
    let t = scalar(ctx, DType::Bool, 1.0)?;
    let one = scalar(ctx, dtype, 1.0)?;
    let ones = t.op("where", &[&one, x], Attrs::new())?;
    let axes: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
    Ok(ones.op("sum", &[], Attrs::new().with("axes", axes).with("keepdims", true))?)
}

/// Axes attr `axes` of a rank-`r` input, made non-negative, sorted and
/// deduplicated; all axes when absent.
pub fn norm_axes(ctx: &GradCtx, axes: Option<Vec<i64>>, r: usize) -> Result<Vec<usize>> {
    let mut out = match axes {
        None => (0..r).collect(),
        Some(a) => a
            .into_iter()
            .map(|x| norm_axis(ctx, x, r))
            .collect::<Result<Vec<_>>>()?,
    };
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Axis `a` of a rank-`r` value, made non-negative.
pub fn norm_axis(ctx: &GradCtx, a: i64, r: usize) -> Result<usize> {
    let n = if a < 0 { a + r as i64 } else { a };
    if n < 0 || n >= r as i64 {
        return Err(ctx.error(format!("axis {a} is out of range for rank {r}")));
    }
    Ok(n as usize)
}

/// `g` with length-1 axes inserted at `axes` (sorted, in the numbering of
/// the result), undoing a reduction without keepdims.
pub fn expand_axes(g: &Sym, axes: &[usize]) -> Result<Sym> {
    let mut out = g.clone();
    for &a in axes {
        out = out.op("expand_dims", &[], Attrs::new().with("axis", a as i64))?;
    }
    Ok(out)
}

/// Only the inputs the caller needs: `grads[i]` is dropped unless `needs[i]`.
pub fn keep_needed(ctx: &GradCtx, grads: Vec<Option<Sym>>) -> Vec<Option<Sym>> {
    grads
        .into_iter()
        .zip(&ctx.needs)
        .map(|(g, &n)| if n { g } else { None })
        .collect()
}

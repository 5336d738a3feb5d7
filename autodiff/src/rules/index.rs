//! Indexing ops. A view's or slice's gradient is scattered back into the
//! input's shape with `inc_subtensor` on zeros, through the same index
//! vectors (so points, negative strides and new axes resolve exactly as in
//! the forward op); gather's is a one-hot matrix product.

use vigil_engine::graph::Sym;
use vigil_engine::{Attrs, IndexSpec, Tensor};

use super::{norm_axis, rank, reduce_to, scalar, static_shape, zeros_like};
use crate::error::Result;
use crate::registry::{GradCtx, GradRegistry};

/// `op(target, value, indices…)`.
fn subtensor(op: &str, target: &Sym, value: &Sym, idx: &[Sym]) -> Result<Sym> {
    let mut rest = vec![value];
    rest.extend(idx);
    Ok(target.op(op, &rest, Attrs::new())?)
}

/// `g` scattered into zeros shaped like input 0 at the node's indices.
fn scatter(c: &GradCtx) -> Result<Vec<Option<Sym>>> {
    let idx = &c.inputs[1..];
    let gx = subtensor("inc_subtensor", &zeros_like(c, &c.inputs[0])?, c.grad()?, idx)?;
    let mut out = vec![Some(gx)];
    out.extend(idx.iter().map(|_| None));
    Ok(out)
}

/// set/inc_subtensor: the value's gradient is the indexed region of `g`;
/// x's is `g`, with the region zeroed for `set`.
fn write(c: &GradCtx, set: bool) -> Result<Vec<Option<Sym>>> {
    let g = c.grad()?;
    let (x, v, idx) = (&c.inputs[0], &c.inputs[1], &c.inputs[2..]);
    let gx = match (c.needs[0], set) {
        (false, _) => None,
        (true, false) => Some(g.clone()),
        (true, true) => Some(subtensor(
            "set_subtensor",
            g,
            &scalar(c, x.ty().dtype, 0.0)?,
            idx,
        )?),
    };
    let gv = match c.needs[1] {
        true => {
            let refs: Vec<&Sym> = idx.iter().collect();
            Some(reduce_to(c, &g.op("create_view", &refs, Attrs::new())?, v)?)
        }
        false => None,
    };
    let mut out = vec![gx, gv];
    out.extend(idx.iter().map(|_| None));
    Ok(out)
}

/// take(x, indices, axis): `onehot(indices)ᵀ @ g`, with the axis moved
/// to the front. Needs the shapes before running.
fn gather(c: &GradCtx) -> Result<Vec<Option<Sym>>> {
    let (x, indices) = (&c.inputs[0], &c.inputs[1]);
    let xs = static_shape(c, x)?;
    let is = static_shape(c, indices)?;
    let axis = norm_axis(c, c.attrs.i64("axis")?.unwrap_or(0), xs.len())?;
    let d = xs[axis];
    let pre: usize = xs[..axis].iter().product();
    let post: usize = xs[axis + 1..].iter().product();
    let n: usize = is.iter().product();
    let b = c.builder;
    let dim = b.constant(&b.fresh("dim"), Tensor::from_i64s(&[d as i64]));
    let zero = scalar(c, vigil_engine::DType::I64, 0.0)?;
    let wrapped = indices.op("lt", &[&zero], Attrs::new())?.op(
        "where",
        &[&indices.add(&dim)?, indices],
        Attrs::new(),
    )?;
    let ids = b.constant(
        &b.fresh("ids"),
        Tensor::from_i64s(&(0..d as i64).collect::<Vec<_>>()),
    );
    let onehot = wrapped
        .reshape(&[n as i64, 1])?
        .op("eq", &[&ids], Attrs::new())?
        .op(
            "where",
            &[&scalar(c, x.ty().dtype, 1.0)?, &scalar(c, x.ty().dtype, 0.0)?],
            Attrs::new(),
        )?;
    let g = c
        .grad()?
        .reshape(&[pre as i64, n as i64, post as i64])?
        .transpose(Some(&[1, 0, 2]))?
        .reshape(&[n as i64, (pre * post) as i64])?;
    let gx = onehot
        .transpose(None)?
        .matmul(&g)?
        .reshape(&[d as i64, pre as i64, post as i64])?
        .transpose(Some(&[1, 0, 2]))?
        .reshape(&xs.iter().map(|&v| v as i64).collect::<Vec<_>>())?;
    Ok(vec![Some(gx), None])
}

/// concat: each input's slice of `g` along the axis.
fn concat(c: &GradCtx) -> Result<Vec<Option<Sym>>> {
    let g = c.grad()?;
    let axis = norm_axis(c, c.attrs.i64("axis")?.unwrap_or(0), rank(c, g)?)?;
    let mut start = 0i64;
    let mut out = Vec::new();
    for (i, x) in c.inputs.iter().enumerate() {
        let len = x
            .ty()
            .shape
            .and_then(|s| s.get(axis).copied())
            .filter(|&d| d >= 0)
            .ok_or_else(|| {
                c.error(format!(
                    "the length of '{}' along axis {axis} must be known",
                    x.name()
                ))
            })?;
        let mut idx = vec![IndexSpec::All; axis];
        idx.push(IndexSpec::range(start, start + len, 1));
        out.push(if c.needs[i] { Some(g.view(&idx)?) } else { None });
        start += len;
    }
    Ok(out)
}

/// stack: each input is one point of `g` along the new axis.
fn stack(c: &GradCtx) -> Result<Vec<Option<Sym>>> {
    let g = c.grad()?;
    let axis = norm_axis(c, c.attrs.i64("axis")?.unwrap_or(0), rank(c, g)?)?;
    let mut out = Vec::new();
    for i in 0..c.inputs.len() {
        let mut idx = vec![IndexSpec::All; axis];
        idx.push(IndexSpec::Point(i as i64));
        out.push(if c.needs[i] { Some(g.view(&idx)?) } else { None });
    }
    Ok(out)
}

pub fn register(r: &mut GradRegistry) {
    r.register("create_view", scatter);
    r.register("strided_slice", scatter);
    r.register("set_subtensor", |c| write(c, true));
    r.register("inc_subtensor", |c| write(c, false));
    r.register("gather", gather);
    r.register("concat", concat);
    r.register("stack", stack);
}

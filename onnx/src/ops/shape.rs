//! Ops that change a tensor's shape or take a part of it: Identity,
//! Transpose, Reshape, Flatten, Unsqueeze, Squeeze, Concat, Slice (a view,
//! never a copy), Expand, and DepthToSpace and SpaceToDepth (a reshape, a
//! transpose and a reshape). Shapes and axes become Vigil attrs, so they
//! must be known at import time; only Slice's bounds may be read when the
//! node runs.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{axes_of, const_ints, input, inputs_up_to, optional, out, step, view};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Identity", 1, identity),
    Op::new("Transpose", 1, transpose),
    Op::new("Reshape", 1, reshape),
    Op::new("Flatten", 1, flatten),
    Op::new("Unsqueeze", 1, unsqueeze),
    Op::new("Squeeze", 1, squeeze),
    Op::new("Concat", 1, concat),
    Op::new("Slice", 1, slice),
    Op::new("Expand", 8, expand),
    Op::new("DepthToSpace", 1, depth_space),
    Op::new("SpaceToDepth", 1, depth_space),
];

/// DepthToSpace and SpaceToDepth on `[b, c, h, w]`, as ONNX defines them:
/// a reshape that splits the block out of the channels (or the spatial
/// axes), a transpose that moves it, and a reshape that merges it in.
/// `mode` DCR (default) takes the block from the outer channels, CRD from
/// the inner ones.
fn depth_space(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let bs = c
        .i("blocksize")
        .filter(|&b| b > 0)
        .ok_or_else(|| c.bad_attr("blocksize", "is required and must be positive"))?;
    let [b, ch, h, w] =
        x.ty.static_shape()
            .and_then(|s| <[usize; 4]>::try_from(s).ok())
            .map(|s| s.map(|d| d as i64))
            .ok_or_else(|| c.unsupported("x must be 4-D with its shape known at import time"))?;
    let crd = match c.s("mode").as_deref().unwrap_or("DCR") {
        "DCR" => false,
        "CRD" => true,
        m => return Err(c.bad_attr("mode", format!("must be DCR or CRD, got '{m}'"))),
    };
    let (split, perm, merged) = if c.op_type == "DepthToSpace" {
        if ch % (bs * bs) != 0 {
            return Err(c.unsupported(format!("{ch} channels do not split into blocks of {bs}x{bs}")));
        }
        let cc = ch / (bs * bs);
        let merged = vec![b, cc, h * bs, w * bs];
        if crd {
            (vec![b, cc, bs, bs, h, w], vec![0, 1, 4, 2, 5, 3], merged)
        } else {
            (vec![b, bs, bs, cc, h, w], vec![0, 3, 4, 1, 5, 2], merged)
        }
    } else {
        if h % bs != 0 || w % bs != 0 {
            return Err(c.unsupported(format!("{h}x{w} does not split into blocks of {bs}x{bs}")));
        }
        let split = vec![b, ch, h / bs, bs, w / bs, bs];
        let merged = vec![b, ch * bs * bs, h / bs, w / bs];
        if crd {
            (split, vec![0, 1, 3, 5, 2, 4], merged)
        } else {
            (split, vec![0, 3, 5, 1, 2, 4], merged)
        }
    };
    let t = step(
        imp,
        c,
        "reshape",
        Attrs::new().with("shape", split),
        &[x],
        "split",
    )?;
    let t = step(
        imp,
        c,
        "transpose",
        Attrs::new().with("perm", perm),
        &[t],
        "moved",
    )?;
    out(imp, c, "reshape", Attrs::new().with("shape", merged), &[t])
}

/// The input itself: no node.
fn identity(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    input(imp, c, 0)
}

fn transpose(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let a = c
        .ints("perm")
        .map_or(Attrs::new(), |p| Attrs::new().with("perm", p));
    out(imp, c, "transpose", a, &[x])
}

fn reshape(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let sv = input(imp, c, 1)?;
    let mut shape = const_ints(c, &sv, "shape")?;
    if c.i("allowzero").unwrap_or(0) == 0 {
        for (i, d) in shape.iter_mut().enumerate() {
            if *d == 0 {
                let from =
                    x.ty.shape
                        .as_ref()
                        .and_then(|s| s.get(i).copied())
                        .filter(|&v| v >= 0);
                *d = from.ok_or_else(|| {
                    c.unsupported(format!(
                        "shape[{i}] is 0 (copy the input's dim) but that dim is not known at import time"
                    ))
                })?;
            }
        }
    }
    out(imp, c, "reshape", Attrs::new().with("shape", shape), &[x])
}

fn flatten(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let s =
        x.ty.shape
            .clone()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))?;
    let r = s.len() as i64;
    let mut axis = c.i("axis").unwrap_or(1);
    if axis < 0 {
        axis += r;
    }
    if !(0..=r).contains(&axis) {
        return Err(c.bad_attr("axis", format!("{axis} is out of range for rank {r}")));
    }
    let prod = |d: &[i64]| {
        if d.iter().any(|&v| v < 0) {
            -1
        } else {
            d.iter().product()
        }
    };
    let (a, b) = (prod(&s[..axis as usize]), prod(&s[axis as usize..]));
    if a < 0 && b < 0 {
        return Err(c.unsupported("both halves of the flattened shape are unknown at import time"));
    }
    out(imp, c, "reshape", Attrs::new().with("shape", vec![a, b]), &[x])
}

fn unsqueeze(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut x = input(imp, c, 0)?;
    let axes = axes_of(imp, c, 13)?.ok_or_else(|| c.bad_attr("axes", "is required"))?;
    let r =
        x.ty.rank()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))? as i64
            + axes.len() as i64;
    let mut norm: Vec<i64> = axes.iter().map(|&a| if a < 0 { a + r } else { a }).collect();
    norm.sort_unstable();
    for (k, &a) in norm.iter().enumerate() {
        let attrs = Attrs::new().with("axis", a);
        x = if k + 1 == norm.len() {
            out(imp, c, "expand_dims", attrs, &[x])?
        } else {
            step(imp, c, "expand_dims", attrs, &[x], &format!("axis{a}"))?
        };
    }
    Ok(x)
}

fn squeeze(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let axes = axes_of(imp, c, 13)?;
    let a = axes.map_or(Attrs::new(), |v| Attrs::new().with("axes", v));
    out(imp, c, "squeeze", a, &[x])
}

fn concat(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..c.proto.input.len())
        .map(|k| input(imp, c, k))
        .collect::<Result<Vec<_>>>()?;
    let axis = c.i("axis").ok_or_else(|| c.bad_attr("axis", "is required"))?;
    out(imp, c, "concat", Attrs::new().with("axis", axis), &ins)
}

/// Slice: a `create_view` when the bounds are known at import time (the
/// start adjusted where ONNX and numpy differ, see
/// [`vigil_engine::ops::slice`]), else the `slice` op, which reads them
/// when it runs.
fn slice(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let (starts, ends, axes, steps) = if imp.opset < 10 {
        (
            c.ints("starts")
                .ok_or_else(|| c.bad_attr("starts", "is required"))?,
            c.ints("ends").ok_or_else(|| c.bad_attr("ends", "is required"))?,
            c.ints("axes"),
            None,
        )
    } else {
        // Some(bound) when input k is absent or known now, None when
        // it is only known when the node runs.
        let get = |k: usize, what: &str| -> Result<Option<Option<Vec<i64>>>> {
            Ok(match optional(imp, c, k)? {
                None => Some(None),
                Some(v) if v.known().is_some() => Some(Some(const_ints(c, &v, what)?)),
                Some(_) => None,
            })
        };
        match (
            get(1, "starts")?,
            get(2, "ends")?,
            get(3, "axes")?,
            get(4, "steps")?,
        ) {
            (Some(Some(s)), Some(Some(e)), Some(a), Some(st)) => (s, e, a, st),
            _ => return slice_at_run_time(imp, c),
        }
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(c.unsupported("starts, ends, axes and steps differ in length"));
    }
    let dims = x.ty.shape.clone().unwrap_or_default();
    let r = dims.len() as i64;
    let mut ranges = Vec::with_capacity(starts.len());
    for k in 0..starts.len() {
        if steps[k] == 0 {
            return Err(c.unsupported("a step of 0"));
        }
        let a = if axes[k] < 0 { axes[k] + r } else { axes[k] };
        let start = match usize::try_from(a).ok().and_then(|a| dims.get(a)) {
            Some(&d) if d >= 0 => vigil_engine::ops::slice::onnx_start(d, starts[k], steps[k]),
            // Where ONNX and numpy may differ and the dim is not known
            // yet, the slice op decides when it runs.
            _ if starts[k] < 0 && steps[k] < 0 => return slice_at_run_time(imp, c),
            _ => starts[k],
        };
        ranges.push((axes[k], start, ends[k], steps[k]));
    }
    let name = c.out().to_string();
    view(imp, c, x, &ranges, &name)
}

/// The `slice` op on ONNX inputs 1 to 4 (opset 10 on), an empty constant
/// standing for an optional one left out before a given one.
fn slice_at_run_time(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = inputs_up_to(imp, c, 3, 5)?;
    out(imp, c, "slice", Attrs::new(), &ins)
}

fn expand(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let sv = input(imp, c, 1)?;
    let want = const_ints(c, &sv, "shape")?;
    let s =
        x.ty.static_shape()
            .ok_or_else(|| c.unsupported("the input's shape is not known at import time"))?;
    // ONNX Expand broadcasts both ways: the result is the broadcast shape.
    let n = s.len().max(want.len());
    let mut shape = Vec::with_capacity(n);
    for i in 0..n {
        let a = if i + s.len() >= n {
            s[i + s.len() - n] as i64
        } else {
            1
        };
        let b = if i + want.len() >= n {
            want[i + want.len() - n]
        } else {
            1
        };
        shape.push(match (a, b) {
            (a, b) if a == b => a,
            (1, b) => b,
            (a, 1) => a,
            _ => return Err(c.unsupported(format!("shape {s:?} does not broadcast to {want:?}"))),
        });
    }
    out(imp, c, "broadcast_to", Attrs::new().with("shape", shape), &[x])
}

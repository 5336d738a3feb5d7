//! Ops that move elements around: Pad and Tile (their ONNX tensor inputs
//! become Vigil attrs, so they must be known at import time) and Split (one
//! `create_view` per output, so its outputs are views, never copies), and
//! CenterCropPad (its target lengths read at run time).

use vigil_engine::Attrs;

use super::emit::{const_ints, input, optional, out, view};
use super::Op;
use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Pad", 1, pad),
    Op::new("Tile", 1, tile),
    Op::new("Split", 1, split),
    Op::new("CenterCropPad", 18, center_crop_pad),
];

fn center_crop_pad(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, shape) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let a = c
        .ints("axes")
        .map_or(Attrs::new(), |axes| Attrs::new().with("axes", axes));
    out(imp, c, "center_crop_pad", a, &[x, shape])
}
/// `pad`: pads from the attr (before opset 11; `paddings` in opset 1) or
/// input 1, the fill from attr `value` or input 2, and from opset 18 input
/// 3 names the padded axes.
fn pad(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let r =
        x.ty.rank()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))?;
    let (given, value) = if imp.opset < 11 {
        let pads = c
            .ints("pads")
            .or_else(|| c.ints("paddings"))
            .ok_or_else(|| c.bad_attr("pads", "is required"))?;
        (pads, c.f("value").unwrap_or(0.0))
    } else {
        let pv = input(imp, c, 1)?;
        if pv.known().is_none() {
            return pad_at_run_time(imp, c, x, pv);
        }
        let pads = const_ints(c, &pv, "pads")?;
        let value = fill_value(imp, c)?;
        (pads, value)
    };
    let axes: Vec<i64> = match optional(imp, c, 3)? {
        Some(v) => const_ints(c, &v, "axes")?,
        None => (0..r as i64).collect(),
    };
    if given.len() != 2 * axes.len() {
        return Err(c.unsupported(format!(
            "{} pads for {} axes (needs two per axis)",
            given.len(),
            axes.len()
        )));
    }
    let mut pads = vec![0i64; 2 * r];
    let n = axes.len();
    for (k, &a) in axes.iter().enumerate() {
        let a = if a < 0 { a + r as i64 } else { a };
        if !(0..r as i64).contains(&a) {
            return Err(c.unsupported(format!("axis {} is out of range for rank {r}", axes[k])));
        }
        pads[a as usize] = given[k];
        pads[r + a as usize] = given[n + k];
    }
    let mode = c.s("mode").unwrap_or_else(|| "constant".into());
    let a = Attrs::new()
        .with("pads", pads)
        .with("mode", mode)
        .with("value", value);
    out(imp, c, "pad", a, &[x])
}

/// Pad's fill value: input 2 (opset 11 on), which must be known at import
/// time; 0 when absent.
fn fill_value(imp: &Importer, c: &NodeCtx) -> Result<f64> {
    let Some(v) = optional(imp, c, 2)? else {
        return Ok(0.0);
    };
    let t = v
        .known()
        .ok_or_else(|| c.unsupported("input 'constant_value' must be known at import time"))?;
    let vals = t.to_f64_vec().map_err(|e| c.unsupported(e.to_string()))?;
    vals.first()
        .copied()
        .ok_or_else(|| c.unsupported("input 'constant_value' is empty"))
}

/// `pad` with its pads read when it runs (computed from run-time values),
/// for the axes input 3 names (which, like the fill value, must be known
/// at import time).
fn pad_at_run_time(imp: &mut Importer, c: &NodeCtx, x: Value, pads: Value) -> Result<Value> {
    let value = fill_value(imp, c)?;
    let mut a = Attrs::new()
        .with("mode", c.s("mode").unwrap_or_else(|| "constant".into()))
        .with("value", value);
    if let Some(axes) = optional(imp, c, 3)? {
        a = a.with("axes", const_ints(c, &axes, "axes")?);
    }
    out(imp, c, "pad", a, &[x, pads])
}

/// `tile`: repeats from input 1 (opset 6 on; opset 1's `tiles`/`axis`
/// form is refused).
fn tile(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    if imp.opset < 6 {
        return Err(c.unsupported("opset 1's Tile (tiles, axis) is not supported"));
    }
    let x = input(imp, c, 0)?;
    let repeats = const_ints(c, &input(imp, c, 1)?, "repeats")?;
    if let Some(bad) = repeats.iter().find(|&&v| v < 0) {
        return Err(c.unsupported(format!("a negative repeat count {bad}")));
    }
    out(imp, c, "tile", Attrs::new().with("repeats", repeats), &[x])
}

/// Split sizes along an axis of `d` elements into `n` outputs, as ONNX
/// gives them: explicit, or equal parts (from opset 18 with
/// `num_outputs`, the last part may be smaller).
fn split_sizes(imp: &Importer, c: &NodeCtx, d: i64, n: usize) -> Result<Vec<i64>> {
    let given = if imp.opset < 13 {
        match c.ints("split") {
            Some(s) => Some(s),
            None if imp.opset < 2 => optional(imp, c, 1)?
                .map(|v| const_ints(c, &v, "split"))
                .transpose()?,
            None => None,
        }
    } else {
        optional(imp, c, 1)?
            .map(|v| const_ints(c, &v, "split"))
            .transpose()?
    };
    if let Some(s) = given {
        if s.len() != n || s.iter().sum::<i64>() != d || s.iter().any(|&v| v < 0) {
            return Err(c.unsupported(format!("split {s:?} does not cut {d} elements into {n} outputs")));
        }
        return Ok(s);
    }
    let n = n as i64;
    if imp.opset >= 18 {
        let chunk = (d + n - 1) / n;
        return Ok((0..n).map(|k| (d - k * chunk).clamp(0, chunk)).collect());
    }
    if d % n != 0 {
        return Err(c.unsupported(format!("{d} elements do not split into {n} equal parts")));
    }
    Ok(vec![d / n; n as usize])
}

/// `split`: each output a `create_view` of its range on `axis`.
fn split(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let r =
        x.ty.rank()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))? as i64;
    let axis = c.i("axis").unwrap_or(0);
    let axis = if axis < 0 { axis + r } else { axis };
    let d =
        x.ty.shape
            .as_ref()
            .and_then(|s| s.get(axis as usize).copied())
            .filter(|&d| d >= 0 && (0..r).contains(&axis))
            .ok_or_else(|| c.unsupported(format!("axis {axis}: its length is not known at import time")))?;
    let names: Vec<String> = c.proto.output.clone();
    let sizes = split_sizes(imp, c, d, names.len())?;
    let mut first = None;
    let mut start = 0;
    for (k, (name, size)) in names.iter().zip(sizes).enumerate() {
        if name.is_empty() {
            start += size;
            continue;
        }
        let part = view(imp, c, x.clone(), &[(axis, start, start + size, 1)], name)?;
        start += size;
        if k == 0 {
            first = Some(part);
        } else {
            imp.bind(name, part);
        }
    }
    first.ok_or_else(|| c.unsupported("has no outputs"))
}

//! Resize and Upsample as one `resize` node.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, optional, out};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[Op::new("Resize", 10, resize), Op::new("Upsample", 1, resize)];

/// Resize (opset 10 and 11+) and Upsample (opset 7 and 9) as one `resize`
/// node. Its roi, scales and sizes must be known at import time; `axes` and
/// `keep_aspect_ratio_policy` are resolved here, so the node gets a scale
/// per axis and, when X's shape is known, the whole output shape. Upsample
/// and Resize-10 take only scales and `nearest`/`linear`, with asymmetric
/// coordinates; their `nearest` floors when upsampling and (Resize-10, as
/// onnxruntime) ceils when downsampling.
fn resize(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let r =
        x.ty.rank()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))?;
    let shape = x.ty.static_shape();
    let known = |k: usize, what: &str| -> Result<Option<Vec<f64>>> {
        let Some(v) = optional(imp, c, k)? else {
            return Ok(None);
        };
        let t = v.known().ok_or_else(|| {
            c.unsupported(format!(
                "input '{what}' must be known at import time (a constant or foldable)"
            ))
        })?;
        let vals = t.to_f64_vec().map_err(|e| c.unsupported(e.to_string()))?;
        // An empty tensor stands for an absent input.
        Ok((!vals.is_empty()).then_some(vals))
    };
    let mode = c.s("mode").unwrap_or_else(|| "nearest".into());
    let legacy = c.op_type == "Upsample" || imp.opset < 11;
    let mut a = Attrs::new().with("mode", mode.as_str());
    let (scales, sizes, axes): (Option<Vec<f64>>, Option<Vec<i64>>, Vec<usize>) = if legacy {
        if imp.opset < 7 {
            return Err(c.unsupported("Upsample before opset 7 (height_scale, width_scale) is not supported"));
        }
        if mode != "nearest" && mode != "linear" {
            return Err(c.bad_attr("mode", format!("unknown value '{mode}' (nearest or linear)")));
        }
        let scales = match c.attr("scales") {
            Some(at) => at.floats.iter().map(|&f| f as f64).collect(),
            None => known(1, "scales")?.ok_or_else(|| c.unsupported("needs input 1 (scales)"))?,
        };
        let (up, down) = (scales.iter().all(|&s| s >= 1.0), scales.iter().all(|&s| s <= 1.0));
        let nearest = match (c.op_type == "Upsample", up, down) {
            (true, false, _) => {
                return Err(c.unsupported(format!("Upsample's scales must be at least 1, got {scales:?}")))
            }
            (_, true, _) => "floor",
            (_, false, true) => "ceil",
            _ => {
                return Err(c.unsupported(format!(
                    "nearest Resize before opset 11 that both up- and downsamples is not supported, scales {scales:?}"
                )))
            }
        };
        if mode == "nearest" {
            a = a.with("nearest_mode", nearest);
        }
        a = a.with("coordinate_transformation_mode", "asymmetric");
        (Some(scales), None, (0..r).collect())
    } else {
        let axes = match c.ints("axes") {
            None => (0..r).collect(),
            Some(v) => {
                let mut axes = Vec::with_capacity(v.len());
                for &ax in &v {
                    let n = if ax < 0 { ax + r as i64 } else { ax };
                    if n < 0 || n >= r as i64 || axes.contains(&(n as usize)) {
                        return Err(c.bad_attr(
                            "axes",
                            format!("{v:?} is not a list of distinct axes of rank {r}"),
                        ));
                    }
                    axes.push(n as usize);
                }
                axes
            }
        };
        let transform = c.s("coordinate_transformation_mode");
        if let Some(t) = &transform {
            a = a.with("coordinate_transformation_mode", t.as_str());
        }
        if transform.as_deref() == Some("tf_crop_and_resize") {
            if let Some(roi) = known(1, "roi")? {
                let k = axes.len();
                if roi.len() != 2 * k {
                    return Err(c.unsupported(format!(
                        "roi has {} values, {k} axes need {}",
                        roi.len(),
                        2 * k
                    )));
                }
                let mut full: Vec<f64> = [vec![0.0; r], vec![1.0; r]].concat();
                for (i, &d) in axes.iter().enumerate() {
                    full[d] = roi[i];
                    full[r + d] = roi[k + i];
                }
                a = a.with("roi", full);
            }
        }
        if let Some(m) = c.s("nearest_mode") {
            a = a.with("nearest_mode", m);
        }
        if let Some(v) = c.f("cubic_coeff_a") {
            a = a.with("cubic_coeff_a", v);
        }
        if let Some(v) = c.f("extrapolation_value") {
            if !v.is_finite() {
                return Err(c.bad_attr("extrapolation_value", format!("must be finite, got {v}")));
            }
            a = a.with("extrapolation_value", v);
        }
        a = a.with("exclude_outside", c.i("exclude_outside").unwrap_or(0) != 0);
        // Nearest has no kernel to stretch: antialias is moot there.
        a = a.with(
            "antialias",
            mode != "nearest" && c.i("antialias").unwrap_or(0) != 0,
        );
        let sizes = known(3, "sizes")?.map(|v| v.iter().map(|&s| s as i64).collect());
        (known(2, "scales")?, sizes, axes)
    };
    let k = axes.len();
    match (scales, sizes) {
        (Some(_), Some(_)) => Err(c.unsupported("takes 'scales' or 'sizes', not both")),
        (None, None) => Err(c.unsupported("needs input 'scales' or 'sizes'")),
        (Some(s), None) => {
            if s.len() != k || s.iter().any(|&v| !(v > 0.0 && v.is_finite())) {
                return Err(c.unsupported(format!("scales must be {k} positive numbers, got {s:?}")));
            }
            let mut full = vec![1.0; r];
            for (i, &d) in axes.iter().enumerate() {
                full[d] = s[i];
            }
            if let Some(sh) = &shape {
                let out: Vec<usize> = sh
                    .iter()
                    .zip(&full)
                    .map(|(&n, &f)| (n as f64 * f).floor() as usize)
                    .collect();
                a = a.with("sizes", out);
            }
            out(imp, c, "resize", a.with("scales", full), &[x])
        }
        (None, Some(s)) => {
            let sh = shape.ok_or_else(|| c.unsupported("'sizes' needs the input's shape at import time"))?;
            if s.len() != k || s.iter().any(|&v| v < 0) {
                return Err(c.unsupported(format!("sizes must be {k} non-negative integers, got {s:?}")));
            }
            let ratio = |i: usize| match sh[axes[i]] {
                0 => 1.0,
                n => s[i] as f64 / n as f64,
            };
            let mut full_sizes = sh.clone();
            let mut full_scales = vec![1.0; r];
            let policy = c.s("keep_aspect_ratio_policy");
            let keep = match policy.as_deref() {
                None | Some("stretch") => None,
                Some("not_larger") => Some((0..k).map(ratio).fold(f64::INFINITY, f64::min)),
                Some("not_smaller") => Some((0..k).map(ratio).fold(f64::NEG_INFINITY, f64::max)),
                Some(p) => {
                    return Err(c.bad_attr(
                        "keep_aspect_ratio_policy",
                        format!("unknown value '{p}' (stretch, not_larger, not_smaller)"),
                    ))
                }
            };
            for (i, &d) in axes.iter().enumerate() {
                (full_sizes[d], full_scales[d]) = match keep {
                    None => (s[i] as usize, ratio(i)),
                    // ONNX rounds half up: floor(scale · in + 1/2).
                    Some(f) => ((f * sh[d] as f64 + 0.5).floor() as usize, f),
                };
            }
            let a = a.with("sizes", full_sizes).with("scales", full_scales);
            out(imp, c, "resize", a, &[x])
        }
    }
}

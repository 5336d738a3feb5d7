//! Convolutions (and DeformConv, CausalConvWithState), Col2Im, pooling (and
//! MaxUnpool, RoiAlign), GridSample, AffineGrid and inference-mode Dropout.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{const_ints, copy_attrs, input, optional, out, out_n, scalar, step};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Conv", 1, conv),
    Op::new("ConvTranspose", 1, conv_transpose),
    Op::new("DeformConv", 19, deform_conv),
    Op::new("MaxPool", 1, pool),
    Op::new("AveragePool", 1, pool),
    Op::new("GlobalAveragePool", 1, global_pool),
    Op::new("GlobalMaxPool", 1, global_pool),
    Op::new("LpPool", 1, lp_pool),
    Op::new("GridSample", 16, grid_sample),
    Op::new("AffineGrid", 20, affine_grid),
    Op::new("Col2Im", 18, col2im),
    Op::new("Dropout", 1, dropout),
    Op::new("CausalConvWithState", 27, causal_conv_with_state),
    Op::new("MaxUnpool", 9, max_unpool),
    Op::new("RoiAlign", 10, roi_align),
];

fn conv(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?];
    ins.extend(optional(imp, c, 2)?);
    let a = copy_attrs(
        c,
        &["kernel_shape", "strides", "dilations", "pads", "group"],
        &["auto_pad"],
    );
    out(imp, c, "conv", a, &ins)
}

fn conv_transpose(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?];
    ins.extend(optional(imp, c, 2)?);
    let a = copy_attrs(
        c,
        &[
            "kernel_shape",
            "strides",
            "dilations",
            "pads",
            "group",
            "output_padding",
            "output_shape",
        ],
        &["auto_pad"],
    );
    out(imp, c, "conv_transpose", a, &ins)
}

/// `max_pool` or `average_pool`. A used second output of MaxPool (the
/// indices) asks `max_pool` for it, with `storage_order`; unused, the
/// order has no effect and is dropped.
fn pool(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let max = c.op_type == "MaxPool";
    let mut keys = vec!["kernel_shape", "strides", "dilations", "pads", "ceil_mode"];
    if !max {
        keys.push("count_include_pad");
    }
    let a = copy_attrs(c, &keys, &["auto_pad"]);
    if !max {
        return out(imp, c, "average_pool", a, &[x]);
    }
    let indices = c
        .proto
        .output
        .get(1)
        .filter(|o| !o.is_empty() && imp.used.contains(*o));
    if indices.is_none() {
        return out(imp, c, "max_pool", a, &[x]);
    }
    let order = c.i("storage_order").unwrap_or(0);
    if !(0..=1).contains(&order) {
        return Err(c.bad_attr("storage_order", format!("must be 0 or 1, got {order}")));
    }
    let a = a.with("indices", true).with("storage_order", order);
    out_n(imp, c, "max_pool", a, &[x], 2)
}

/// `(Σ |x|^p)^(1/p)` over each window, padding counting as 0: the mean of
/// `|x|^p` with the padding counted (`count_include_pad`), times the
/// window's size, to the power `1/p`. Without `ceil_mode` every window
/// lies inside the padded input, so that mean's divisor is the window's
/// size; `ceil_mode` (whose last windows may be cut short) is refused.
fn lp_pool(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    if c.i("ceil_mode").unwrap_or(0) != 0 {
        return Err(c.bad_attr("ceil_mode", "only 0 is supported"));
    }
    // LpPool-1 gives `p` as a float.
    let p = c.i("p").or_else(|| c.f("p").map(|f| f as i64)).unwrap_or(2);
    if p < 1 {
        return Err(c.bad_attr("p", format!("must be at least 1, got {p}")));
    }
    let kernel = c
        .ints("kernel_shape")
        .ok_or_else(|| c.bad_attr("kernel_shape", "is required"))?;
    let x = input(imp, c, 0)?;
    let dt = x.ty.dtype;
    let abs = step(imp, c, "abs", Attrs::new(), &[x], "abs")?;
    let pw = scalar(imp, c, dt, p as f64, "p")?;
    let powered = step(imp, c, "pow", Attrs::new(), &[abs, pw], "pow")?;
    let a = copy_attrs(
        c,
        &["kernel_shape", "strides", "dilations", "pads"],
        &["auto_pad"],
    )
    .with("count_include_pad", 1);
    let mean = step(imp, c, "average_pool", a, &[powered], "mean")?;
    let size = scalar(imp, c, dt, kernel.iter().product::<i64>() as f64, "size")?;
    let sum = step(imp, c, "mul", Attrs::new(), &[mean, size], "sum")?;
    let root = scalar(imp, c, dt, 1.0 / p as f64, "root")?;
    out(imp, c, "pow", Attrs::new(), &[sum, root])
}

/// `grid_sample`: opset 16's `bilinear`/`bicubic` are opset 20's
/// `linear`/`cubic`.
fn grid_sample(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, grid) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let mode = match c.s("mode").as_deref().unwrap_or("linear") {
        "bilinear" | "linear" => "linear",
        "bicubic" | "cubic" => "cubic",
        "nearest" => "nearest",
        m => return Err(c.bad_attr("mode", format!("unknown value '{m}'"))),
    };
    let a = Attrs::new()
        .with("mode", mode)
        .with(
            "padding_mode",
            c.s("padding_mode").unwrap_or_else(|| "zeros".into()),
        )
        .with("align_corners", c.i("align_corners").unwrap_or(0) != 0);
    out(imp, c, "grid_sample", a, &[x, grid])
}

/// `affine_grid`; the size is read at run time.
fn affine_grid(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (theta, size) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let a = Attrs::new().with("align_corners", c.i("align_corners").unwrap_or(0) != 0);
    out(imp, c, "affine_grid", a, &[theta, size])
}

/// `col2im`, its window attrs kept; the image and block shapes are read
/// at run time.
fn col2im(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..3).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let a = copy_attrs(c, &["strides", "dilations", "pads"], &[]);
    out(imp, c, "col2im", a, &ins)
}

fn global_pool(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let name = if c.op_type == "GlobalMaxPool" {
        "global_max_pool"
    } else {
        "global_average_pool"
    };
    out(imp, c, name, Attrs::new(), &[x])
}

/// Inference: the input itself, no node. The mask (output 1), when the
/// model names it, is a `full` of true since every element is kept.
fn dropout(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    if let Some(t) = optional(imp, c, 2)? {
        if const_ints(c, &t, "training_mode")?.iter().any(|&v| v != 0) {
            return Err(c.unsupported("training mode is not supported"));
        }
    }
    let x = input(imp, c, 0)?;
    if let Some(mask) = c.proto.output.get(1).filter(|m| !m.is_empty()) {
        let shape =
            x.ty.static_shape()
                .ok_or_else(|| c.unsupported("the mask needs the input's shape at import time"))?;
        let a = Attrs::new()
            .with("shape", shape)
            .with("dtype", "bool")
            .with("value", 1.0);
        let m = imp.emit(c, "full", a, &[], mask)?;
        imp.bind(mask, m);
    }
    Ok(x)
}

/// CausalConvWithState (opset 27): one `causal_conv_with_state` node
/// (`activation` none, silu or swish), attrs `bias` and `past` saying which
/// optional inputs it is given. Outputs output and present_state.
fn causal_conv_with_state(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let activation = c.s("activation").unwrap_or_else(|| "none".into());
    if !matches!(activation.as_str(), "none" | "silu" | "swish") {
        return Err(c.bad_attr(
            "activation",
            format!("must be none, silu or swish, got '{activation}'"),
        ));
    }
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?];
    let bias = optional(imp, c, 2)?;
    let past = optional(imp, c, 3)?;
    let a = Attrs::new()
        .with("activation", activation.as_str())
        .with("bias", bias.is_some())
        .with("past", past.is_some());
    ins.extend(bias);
    ins.extend(past);
    out_n(imp, c, "causal_conv_with_state", a, &ins, 2)
}

/// MaxUnpool (opset 9): `max_unpool` (`kernel_shape`, `strides`, `pads`
/// kept); output_shape, when given, is its third input, read when it runs.
fn max_unpool(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?];
    ins.extend(optional(imp, c, 2)?);
    if c.ints("kernel_shape").is_none() {
        return Err(c.bad_attr("kernel_shape", "is required"));
    }
    for k in ["kernel_shape", "strides", "pads"] {
        if c.ints(k).is_some_and(|v| v.iter().any(|&x| x < 0)) {
            return Err(c.bad_attr(k, "must not be negative"));
        }
    }
    let a = copy_attrs(c, &["kernel_shape", "strides", "pads"], &[]);
    out(imp, c, "max_unpool", a, &ins)
}

/// RoiAlign (opsets 10, 16): `roi_align` (`mode`, `output_height`,
/// `output_width`, `sampling_ratio`, `spatial_scale` kept).
/// `coordinate_transformation_mode` (opset 16, default half_pixel) becomes
/// attr `half_pixel`; opset 10 has no such attr and does not shift
/// (output_half_pixel).
fn roi_align(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = vec![input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?];
    let default = if imp.opset >= 16 {
        "half_pixel"
    } else {
        "output_half_pixel"
    };
    let ctm = c
        .s("coordinate_transformation_mode")
        .unwrap_or_else(|| default.into());
    let half_pixel = match ctm.as_str() {
        "half_pixel" => true,
        "output_half_pixel" => false,
        m => {
            return Err(c.bad_attr(
                "coordinate_transformation_mode",
                format!("must be half_pixel or output_half_pixel, got '{m}'"),
            ))
        }
    };
    let mode = c.s("mode").unwrap_or_else(|| "avg".into());
    if !matches!(mode.as_str(), "avg" | "max") {
        return Err(c.bad_attr("mode", format!("must be avg or max, got '{mode}'")));
    }
    for (k, min) in [("output_height", 1), ("output_width", 1), ("sampling_ratio", 0)] {
        if let Some(v) = c.i(k).filter(|&v| v < min) {
            return Err(c.bad_attr(k, format!("must be at least {min}, got {v}")));
        }
    }
    let a = Attrs::new()
        .with("mode", mode.as_str())
        .with("output_height", c.i("output_height").unwrap_or(1))
        .with("output_width", c.i("output_width").unwrap_or(1))
        .with("sampling_ratio", c.i("sampling_ratio").unwrap_or(0))
        .with("spatial_scale", c.f("spatial_scale").unwrap_or(1.0))
        .with("half_pixel", half_pixel);
    out(imp, c, "roi_align", a, &ins)
}

/// DeformConv (opset 19): `deform_conv` (`strides`, `dilations`, `pads`,
/// `group`, `offset_group`, `kernel_shape` kept), attrs `bias` and `mask`
/// saying which optional inputs are given. 2-D only (X of rank 4), as
/// ONNX's reference; other ranks are refused.
fn deform_conv(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?];
    if let Some(r) = ins[0].ty.rank().filter(|&r| r != 4) {
        return Err(c.unsupported(format!(
            "only 2-D DeformConv (X of rank 4) is supported, X has rank {r}"
        )));
    }
    for k in ["strides", "dilations", "pads", "kernel_shape"] {
        if c.ints(k).is_some_and(|v| v.iter().any(|&x| x < 0)) {
            return Err(c.bad_attr(k, "must not be negative"));
        }
    }
    let b = optional(imp, c, 3)?;
    let mask = optional(imp, c, 4)?;
    let a = copy_attrs(
        c,
        &[
            "strides",
            "dilations",
            "pads",
            "group",
            "offset_group",
            "kernel_shape",
        ],
        &[],
    )
    .with("bias", b.is_some())
    .with("mask", mask.is_some());
    ins.extend(b);
    ins.extend(mask);
    out(imp, c, "deform_conv", a, &ins)
}

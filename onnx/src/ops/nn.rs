//! Convolutions, Col2Im, pooling, GridSample, AffineGrid and
//! inference-mode Dropout.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{const_ints, copy_attrs, input, optional, out, out_n, scalar, step};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Conv", 1, conv),
    Op::new("ConvTranspose", 1, conv_transpose),
    Op::new("MaxPool", 1, pool),
    Op::new("AveragePool", 1, pool),
    Op::new("GlobalAveragePool", 1, global_pool),
    Op::new("GlobalMaxPool", 1, global_pool),
    Op::new("LpPool", 1, lp_pool),
    Op::new("GridSample", 16, grid_sample),
    Op::new("AffineGrid", 20, affine_grid),
    Op::new("Col2Im", 18, col2im),
    Op::new("Dropout", 1, dropout),
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

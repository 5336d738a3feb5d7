//! Convolutions, pooling and inference-mode Dropout.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{const_ints, copy_attrs, input, optional, out};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Conv", 1, conv),
    Op::new("ConvTranspose", 1, conv_transpose),
    Op::new("MaxPool", 1, pool),
    Op::new("AveragePool", 1, pool),
    Op::new("GlobalAveragePool", 1, global_pool),
    Op::new("GlobalMaxPool", 1, global_pool),
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

/// `max_pool` or `average_pool`; only row-major indices (which are not
/// produced anyway: a used second output is refused).
fn pool(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    if c.i("storage_order").unwrap_or(0) != 0 {
        return Err(c.bad_attr("storage_order", "only 0 (row major) is supported"));
    }
    let x = input(imp, c, 0)?;
    let max = c.op_type == "MaxPool";
    let mut keys = vec!["kernel_shape", "strides", "dilations", "pads", "ceil_mode"];
    if !max {
        keys.push("count_include_pad");
    }
    let a = copy_attrs(c, &keys, &["auto_pad"]);
    let name = if max { "max_pool" } else { "average_pool" };
    out(imp, c, name, a, &[x])
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

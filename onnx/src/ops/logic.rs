//! Comparisons, `where`, and the boolean and bitwise ops.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, out};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Equal", 1, compare),
    Op::new("Less", 1, compare),
    Op::new("LessOrEqual", 12, compare),
    Op::new("Greater", 1, compare),
    Op::new("GreaterOrEqual", 12, compare),
    Op::new("Where", 9, where_),
    Op::new("Not", 1, logical),
    Op::new("And", 1, logical),
    Op::new("Or", 1, logical),
    Op::new("Xor", 1, logical),
    Op::new("BitwiseAnd", 18, bitwise),
    Op::new("BitwiseOr", 18, bitwise),
    Op::new("BitwiseXor", 18, bitwise),
    Op::new("BitwiseNot", 18, bitwise),
    Op::new("BitShift", 11, bit_shift),
];

/// `eq lt le gt ge`.
fn compare(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let name = match c.op_type.as_str() {
        "Equal" => "eq",
        "Less" => "lt",
        "LessOrEqual" => "le",
        "Greater" => "gt",
        _ => "ge",
    };
    let (a, b) = (input(imp, c, 0)?, input(imp, c, 1)?);
    out(imp, c, name, Attrs::new(), &[a, b])
}

fn where_(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = [input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?];
    out(imp, c, "where", Attrs::new(), &ins)
}

/// All of the node's inputs.
fn inputs(imp: &Importer, c: &NodeCtx) -> Result<Vec<Value>> {
    (0..c.proto.input.len()).map(|k| input(imp, c, k)).collect()
}

/// `not and or xor`.
fn logical(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = inputs(imp, c)?;
    out(imp, c, &c.op_type.to_lowercase(), Attrs::new(), &ins)
}

fn bitwise(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = inputs(imp, c)?;
    let name = match c.op_type.as_str() {
        "BitwiseAnd" => "bitwise_and",
        "BitwiseOr" => "bitwise_or",
        "BitwiseXor" => "bitwise_xor",
        _ => "bitwise_not",
    };
    out(imp, c, name, Attrs::new(), &ins)
}

/// `left_shift` or `right_shift` by `direction`.
fn bit_shift(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, n) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let name = match c.s("direction").as_deref() {
        Some("LEFT") => "left_shift",
        Some("RIGHT") => "right_shift",
        Some(d) => return Err(c.bad_attr("direction", format!("unknown value '{d}' (LEFT or RIGHT)"))),
        None => return Err(c.bad_attr("direction", "missing (LEFT or RIGHT)")),
    };
    out(imp, c, name, Attrs::new(), &[x, n])
}

//! Ops whose extra ONNX inputs are counts, axes or indices: Range,
//! CumSum, CumProd, Trilu, Gather, GatherElements, ScatterElements and
//! TopK, and ReverseSequence. Range's bounds, ReverseSequence's lengths and
//! the element indices are read at run time; CumSum's axis and Trilu's k
//! become Vigil attrs, so they must be known at import time.

use vigil_engine::{Attrs, DType};

use super::emit::{const_ints, input, optional, out, step};
use super::Op;
use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Range", 11, range),
    Op::new("CumSum", 11, cumsum),
    Op::new("CumProd", 26, cumsum),
    Op::new("Trilu", 14, trilu),
    Op::new("Gather", 1, gather),
    Op::new("GatherElements", 11, elements),
    Op::new("ScatterElements", 11, elements),
    Op::new("Scatter", 9, elements),
    Op::new("TopK", 1, top_k),
    Op::new("ReverseSequence", 10, reverse_sequence),
];
/// `range`: folded when start, limit and delta are known, else a node
/// whose length is known only at run time.
fn range(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = [input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?];
    out(imp, c, "range", Attrs::new(), &ins)
}

/// The single integer of an input that must be known at import time.
fn const_int(c: &NodeCtx, v: &Value, what: &str) -> Result<i64> {
    match const_ints(c, v, what)?.as_slice() {
        [k] => Ok(*k),
        other => Err(c.unsupported(format!("input '{what}' must hold one integer, got {other:?}"))),
    }
}

/// `cumsum` (CumSum) or `cumprod` (CumProd): the axis from input 1,
/// `exclusive` and `reverse` from the attrs.
fn cumsum(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let axis = const_int(c, &input(imp, c, 1)?, "axis")?;
    let a = Attrs::new()
        .with("axis", axis)
        .with("exclusive", c.i("exclusive").unwrap_or(0) != 0)
        .with("reverse", c.i("reverse").unwrap_or(0) != 0);
    let name = if c.op_type == "CumProd" {
        "cumprod"
    } else {
        "cumsum"
    };
    out(imp, c, name, a, &[x])
}

/// `trilu`: `upper` from the attr (default 1), `k` from input 1 (default 0).
fn trilu(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let k = match optional(imp, c, 1)? {
        Some(v) => const_int(c, &v, "k")?,
        None => 0,
    };
    let a = Attrs::new()
        .with("upper", c.i("upper").unwrap_or(1) != 0)
        .with("k", k);
    out(imp, c, "trilu", a, &[x])
}

/// ONNX input `k` as i64 indices (int32 ones get a cast).
pub(crate) fn indices(imp: &mut Importer, c: &NodeCtx, k: usize) -> Result<Value> {
    let ind = input(imp, c, k)?;
    if ind.ty.dtype == DType::I64 {
        return Ok(ind);
    }
    let a = Attrs::new().with("dtype", "i64");
    step(imp, c, "cast", a, &[ind], "indices")
}

/// `gather_elements` (GatherElements) and `scatter_elements`
/// (ScatterElements, and the deprecated Scatter it replaced).
fn elements(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let ind = indices(imp, c, 1)?;
    let a = Attrs::new().with("axis", c.i("axis").unwrap_or(0));
    if c.op_type == "GatherElements" {
        return out(imp, c, "gather_elements", a, &[x, ind]);
    }
    let upd = input(imp, c, 2)?;
    let reduction = c.s("reduction").unwrap_or_else(|| "none".into());
    if !matches!(reduction.as_str(), "none" | "add" | "mul" | "max" | "min") {
        return Err(c.bad_attr("reduction", format!("unknown value '{reduction}'")));
    }
    out(
        imp,
        c,
        "scatter_elements",
        a.with("reduction", reduction),
        &[x, ind, upd],
    )
}

/// `gather` along `axis` (int32 indices cast to i64).
fn gather(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let ind = indices(imp, c, 1)?;
    let a = Attrs::new().with("axis", c.i("axis").unwrap_or(0));
    out(imp, c, "gather", a, &[x, ind])
}

/// TopK: `top_k`, with k from the attr (before opset 10) or input 1,
/// which must be known at import time. `sorted = 0` leaves the order to
/// the backend; Vigil's is sorted.
fn top_k(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let k = if imp.opset < 10 {
        c.i("k").ok_or_else(|| c.bad_attr("k", "is required"))?
    } else {
        match const_ints(c, &input(imp, c, 1)?, "K")?.as_slice() {
            [k] => *k,
            other => return Err(c.unsupported(format!("input 'K' must hold one integer, got {other:?}"))),
        }
    };
    let a = Attrs::new()
        .with("k", k)
        .with("axis", c.i("axis").unwrap_or(-1))
        .with("largest", c.i("largest").unwrap_or(1) != 0);
    let y = c.out().to_string();
    let named = c.proto.output.get(1).filter(|o| !o.is_empty()).cloned();
    let ind = named.clone().unwrap_or_else(|| format!("{y}.indices"));
    let mut vals = imp.emit_n(c, "top_k", a, &[x], &[&y, &ind])?;
    if let Some(name) = named {
        imp.bind(&name, vals[1].clone());
    }
    Ok(vals.swap_remove(0))
}

/// `batch_axis` and `time_axis` kept; the lengths are read at run time.
fn reverse_sequence(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (x, lens) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let a = Attrs::new()
        .with("batch_axis", c.i("batch_axis").unwrap_or(1))
        .with("time_axis", c.i("time_axis").unwrap_or(0));
    out(imp, c, "reverse_sequence", a, &[x, lens])
}

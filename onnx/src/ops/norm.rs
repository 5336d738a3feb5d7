//! Normalizations: BatchNormalization (inference), LRN,
//! LayerNormalization, RMSNormalization, GroupNormalization and
//! LpNormalization, and MeanVarianceNormalization in ONNX's own steps.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, optional, out, scalar, step};
use super::Op;
use crate::tensor::dtype_of;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("BatchNormalization", 1, batch_norm),
    Op::new("LRN", 1, lrn),
    Op::new("LayerNormalization", 17, layer_norm),
    Op::new("RMSNormalization", 23, rms_norm),
    Op::new("GroupNormalization", 18, group_norm),
    Op::new("LpNormalization", 1, lp_norm),
    Op::new("MeanVarianceNormalization", 9, mvn),
];

/// ONNX's definition step by step: `(x − E[x]) / (sqrt(E[x²] − E[x]²) +
/// 1e-9)`, the means over `axes` (default `[0, 2, 3]`) kept as length 1.
fn mvn(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let dt = x.ty.dtype;
    let axes = c.ints("axes").unwrap_or_else(|| vec![0, 2, 3]);
    let mean = |imp: &mut Importer, v: Value, tag: &str| {
        let a = Attrs::new().with("axes", axes.clone()).with("keepdims", true);
        step(imp, c, "mean", a, &[v], tag)
    };
    let m = mean(imp, x.clone(), "mean")?;
    let m2 = step(imp, c, "mul", Attrs::new(), &[m.clone(), m.clone()], "mean_sq")?;
    let x2 = step(imp, c, "mul", Attrs::new(), &[x.clone(), x.clone()], "x_sq")?;
    let ex2 = mean(imp, x2, "sq_mean")?;
    let var = step(imp, c, "sub", Attrs::new(), &[ex2, m2], "variance")?;
    let sd = step(imp, c, "sqrt", Attrs::new(), &[var], "std")?;
    let eps = scalar(imp, c, dt, 1e-9, "eps")?;
    let den = step(imp, c, "add", Attrs::new(), &[sd, eps], "den")?;
    let centred = step(imp, c, "sub", Attrs::new(), &[x, m], "centred")?;
    out(imp, c, "div", Attrs::new(), &[centred, den])
}

/// `group_norm`: `num_groups` and `epsilon` kept; scale and bias are per
/// group (opset 18) or per channel (21), which the engine op tells apart
/// by their length. `stash_type` is checked, and the statistics are
/// accumulated in f64 whatever it names.
fn group_norm(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..3).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let stash = c.i("stash_type").unwrap_or(1);
    dtype_of(
        stash as i32,
        &format!("node '{}' (GroupNormalization): attr 'stash_type'", c.onnx_name),
    )?;
    let g = c
        .i("num_groups")
        .ok_or_else(|| c.bad_attr("num_groups", "is required"))?;
    let a = Attrs::new()
        .with("num_groups", g)
        .with("epsilon", c.f("epsilon").unwrap_or(1e-5));
    out(imp, c, "group_norm", a, &ins)
}

/// `lp_norm`: `axis` (default -1) and `p` (default 2; 1 or 2) kept.
fn lp_norm(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let p = c.i("p").unwrap_or(2);
    if p != 1 && p != 2 {
        return Err(c.bad_attr("p", format!("must be 1 or 2, got {p}")));
    }
    let a = Attrs::new().with("axis", c.i("axis").unwrap_or(-1)).with("p", p);
    out(imp, c, "lp_norm", a, &[x])
}

fn batch_norm(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    if c.i("training_mode").unwrap_or(0) != 0 {
        return Err(c.bad_attr("training_mode", "only inference (0) is supported"));
    }
    if c.i("spatial").unwrap_or(1) != 1 {
        return Err(c.bad_attr("spatial", "only 1 is supported"));
    }
    let ins = (0..5).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let a = Attrs::new().with("epsilon", c.f("epsilon").unwrap_or(1e-5));
    out(imp, c, "batch_norm", a, &ins)
}

fn lrn(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let size = c.i("size").ok_or_else(|| c.bad_attr("size", "is required"))?;
    let mut a = Attrs::new().with("size", size);
    for k in ["alpha", "beta", "bias"] {
        if let Some(v) = c.f(k) {
            a = a.with(k, v);
        }
    }
    out(imp, c, "lrn", a, &[x])
}

/// `layer_norm`, whose statistics outputs (Mean, InvStdDev) are bound
/// when the model names them, cast to `stash_type` when that differs from
/// X's dtype.
fn layer_norm(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?];
    ins.extend(optional(imp, c, 2)?);
    let a = Attrs::new()
        .with("axis", c.i("axis").unwrap_or(-1))
        .with("epsilon", c.f("epsilon").unwrap_or(1e-5));
    let stash = c.i("stash_type").unwrap_or(1);
    let stash = dtype_of(
        stash as i32,
        &format!("node '{}' (LayerNormalization): attr 'stash_type'", c.onnx_name),
    )?;
    let y = c.out().to_string();
    let named = |j: usize| c.proto.output.get(j).filter(|o| !o.is_empty()).cloned();
    let outs: Vec<String> = [(1, "mean"), (2, "inv_std_dev")]
        .iter()
        .map(|&(j, tag)| {
            named(j)
                .filter(|_| stash == ins[0].ty.dtype)
                .unwrap_or_else(|| format!("{y}.{tag}"))
        })
        .collect();
    let mut vals = imp.emit_n(c, "layer_norm", a, &ins, &[&y, &outs[0], &outs[1]])?;
    for (j, v) in [(1, vals[1].clone()), (2, vals[2].clone())] {
        let Some(name) = named(j) else { continue };
        let v = if v.ty.dtype == stash {
            v
        } else {
            let a = Attrs::new().with("dtype", stash.name());
            imp.emit(c, "cast", a, &[v], &name)?
        };
        imp.bind(&name, v);
    }
    Ok(vals.swap_remove(0))
}

/// RMSNormalization (opset 23): `rms_norm`. ONNX computes in `stash_type`;
/// Vigil accumulates in f64 whatever it is, so the attr is only checked.
fn rms_norm(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = [input(imp, c, 0)?, input(imp, c, 1)?];
    let stash = c.i("stash_type").unwrap_or(1);
    dtype_of(
        stash as i32,
        &format!("node '{}' (RMSNormalization): attr 'stash_type'", c.onnx_name),
    )?;
    let a = Attrs::new()
        .with("axis", c.i("axis").unwrap_or(-1))
        .with("epsilon", c.f("epsilon").unwrap_or(1e-5));
    out(imp, c, "rms_norm", a, &ins)
}

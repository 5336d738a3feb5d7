//! Control flow: If, Loop and Scan. A subgraph becomes a body graph held
//! in the node's attrs (see docs/onnx.md, "Control flow"): the outer
//! values it reads become the node's inputs (or, small constants,
//! constants of the body), so the body is a closed graph the engine checks
//! like any other. An If whose condition is known at import time is
//! replaced by the branch it takes.

use onnx_protobuf::ValueInfoProto;
use vigil_engine::{Attrs, DType, Tensor, TypeInfo};

use crate::error::Result;
use crate::import::{captured_as_input, free_names, value_type, Importer, NodeCtx, Value};

use super::emit::{input, optional, out_n};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("If", 1, if_),
    Op::new("Loop", 1, loop_),
    Op::new("Scan", 8, scan),
];

/// The subgraph in attr `name`.
fn graph_attr<'a>(c: &'a NodeCtx, name: &str) -> Result<&'a onnx_protobuf::GraphProto> {
    c.attr(name)
        .and_then(|a| a.g.as_ref())
        .ok_or_else(|| c.bad_attr(name, "is required (a graph)"))
}

/// The outer values (by ONNX name) that the subgraphs `gs` read.
fn outer_values(
    imp: &Importer,
    c: &NodeCtx,
    gs: &[&onnx_protobuf::GraphProto],
) -> Result<Vec<(String, Value)>> {
    let mut names: Vec<String> = Vec::new();
    for g in gs {
        for n in free_names(g) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
        .into_iter()
        .map(|n| match imp.value(&n) {
            Some(v) => Ok((n, v.clone())),
            None => Err(crate::error::ImportError::UndefinedInput {
                node: c.onnx_name.clone(),
                op: c.op_type.clone(),
                input: n,
            }),
        })
        .collect()
}

fn if_(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let cond = input(imp, c, 0)?;
    let then_g = graph_attr(c, "then_branch")?;
    let else_g = graph_attr(c, "else_branch")?;
    let n = c.proto.output.len();
    for (g, name) in [(then_g, "then_branch"), (else_g, "else_branch")] {
        if g.output.len() != n {
            return Err(c.bad_attr(
                name,
                format!("gives {} outputs, the node has {n}", g.output.len()),
            ));
        }
    }
    // A condition known now (a constant, not a data set's value): the
    // branch it takes, inlined.
    if let (Some(t), false) = (&cond.constant, cond.source) {
        let taken = t
            .cast(vigil_engine::DType::Bool)
            .and_then(|b| b.to_array::<bool>())
            .map_err(|e| c.unsupported(e.to_string()))?
            .iter()
            .next()
            .copied()
            .ok_or_else(|| c.unsupported("cond is empty"))?;
        let outs = imp.inline(if taken { then_g } else { else_g })?;
        for (o, v) in c.proto.output.iter().zip(&outs).skip(1) {
            if !o.is_empty() {
                imp.bind(o, v.clone());
            }
        }
        return Ok(outs[0].clone());
    }
    let outer = outer_values(imp, c, &[then_g, else_g])?;
    let then_f = imp.body(then_g, &[], &outer)?;
    let else_f = imp.body(else_g, &[], &outer)?;
    let json = |f| serde_json::to_value(f).map_err(|e| c.unsupported(e.to_string()));
    let attrs = Attrs::new()
        .with("then_branch", json(&then_f)?)
        .with("else_branch", json(&else_f)?);
    let mut ins = vec![cond];
    ins.extend(outer.into_iter().map(|(_, v)| v).filter(captured_as_input));
    out_n(imp, c, "if", attrs, &ins, n)
}

/// A body input's type: as the subgraph declares it, else `fallback`.
fn declared(v: &ValueInfoProto, fallback: TypeInfo) -> TypeInfo {
    match value_type(v) {
        Ok(t) if t.shape.is_some() || fallback.shape.is_none() => t,
        Ok(t) => TypeInfo::new(t.dtype, fallback.shape),
        Err(_) => fallback,
    }
}

/// The subgraph `g`'s inputs with their types, `fallback` giving the type
/// of an input it leaves untyped.
fn own_inputs(g: &onnx_protobuf::GraphProto, fallback: &[TypeInfo]) -> Vec<(String, TypeInfo)> {
    g.input
        .iter()
        .zip(fallback)
        .map(|(i, f)| (i.name.clone(), declared(i, f.clone())))
        .collect()
}

/// An optional scalar input, or an empty tensor of `dtype` standing for
/// an absent one (the engine's `loop` reads it so).
fn scalar_or_absent(imp: &mut Importer, c: &NodeCtx, k: usize, dtype: DType) -> Result<Value> {
    match optional(imp, c, k)? {
        Some(v) => Ok(v),
        None => {
            let empty = Tensor::zeros(dtype, &[0]).map_err(|e| c.unsupported(e.to_string()))?;
            Ok(imp.constant(&format!("{}.absent{k}", c.name), empty))
        }
    }
}

/// `Loop(M, cond, v…)` with `body(i, cond, v…) -> (cond, v…, scans…)`: a
/// `loop` node carrying the `v`s; an absent `M` or `cond` is an empty
/// tensor.
fn loop_(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let body_g = graph_attr(c, "body")?;
    let carried = c.proto.input.len().saturating_sub(2);
    let n_out = c.proto.output.len();
    if body_g.input.len() != 2 + carried || body_g.output.len() != 1 + n_out {
        return Err(c.bad_attr(
            "body",
            format!(
                "takes {} inputs and gives {} outputs; a Loop with {carried} carried values and {n_out} outputs \
                 needs {} and {}",
                body_g.input.len(),
                body_g.output.len(),
                2 + carried,
                1 + n_out
            ),
        ));
    }
    let m = scalar_or_absent(imp, c, 0, DType::I64)?;
    let cond = scalar_or_absent(imp, c, 1, DType::Bool)?;
    let init = (2..2 + carried)
        .map(|k| input(imp, c, k))
        .collect::<Result<Vec<_>>>()?;
    let mut fallback = vec![
        TypeInfo::new(DType::I64, Some(vec![])),
        TypeInfo::new(DType::Bool, Some(vec![])),
    ];
    // A carried value may change shape from one iteration to the next.
    fallback.extend(init.iter().map(|v| TypeInfo::new(v.ty.dtype, None)));
    let outer = outer_values(imp, c, &[body_g])?;
    let body = imp.body(body_g, &own_inputs(body_g, &fallback), &outer)?;
    let json = serde_json::to_value(&body).map_err(|e| c.unsupported(e.to_string()))?;
    let attrs = Attrs::new().with("body", json).with("carried", carried as i64);
    let mut ins = vec![m, cond];
    ins.extend(init);
    ins.extend(outer.into_iter().map(|(_, v)| v).filter(captured_as_input));
    out_n(imp, c, "loop", attrs, &ins, n_out)
}

/// `Scan(state…, xs…)` (opset 9 on): a `scan` node with every axis and
/// direction listed.
fn scan(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    if imp.opset < 9 {
        return Err(c.unsupported(
            "Scan before opset 9 (a batch axis and sequence_lens) is not supported; opset 9 on is",
        ));
    }
    let body_g = graph_attr(c, "body")?;
    let m = c
        .i("num_scan_inputs")
        .ok_or_else(|| c.bad_attr("num_scan_inputs", "is required"))?;
    let n_in = c.proto.input.len();
    let m = usize::try_from(m)
        .ok()
        .filter(|m| (1..=n_in).contains(m))
        .ok_or_else(|| c.bad_attr("num_scan_inputs", format!("must be 1 to {n_in}, got {m}")))?;
    let states = n_in - m;
    let n_out = c.proto.output.len();
    if n_out < states || body_g.input.len() != n_in || body_g.output.len() != n_out {
        return Err(c.bad_attr(
            "body",
            format!(
                "takes {} inputs and gives {} outputs; a Scan with {states} states, {m} scan inputs and {n_out} \
                 outputs needs {n_in} and {n_out}",
                body_g.input.len(),
                body_g.output.len(),
            ),
        ));
    }
    let s = n_out - states;
    let list = |key: &str, n: usize| -> Result<Vec<i64>> {
        match c.ints(key) {
            None => Ok(vec![0; n]),
            Some(v) if v.len() == n => Ok(v),
            Some(v) => Err(c.bad_attr(key, format!("lists {} values, {n} expected", v.len()))),
        }
    };
    let in_axes = list("scan_input_axes", m)?;
    let in_dirs = list("scan_input_directions", m)?;
    let out_axes = list("scan_output_axes", s)?;
    let out_dirs = list("scan_output_directions", s)?;
    let ins = (0..n_in).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let mut fallback: Vec<TypeInfo> = ins[..states].iter().map(|v| v.ty.clone()).collect();
    for (v, &a) in ins[states..].iter().zip(&in_axes) {
        let shape = v.ty.shape.as_ref().and_then(|sh| {
            let r = sh.len() as i64;
            let ax = if a < 0 { a + r } else { a };
            (0..r).contains(&ax).then(|| {
                let mut sh = sh.clone();
                sh.remove(ax as usize);
                sh
            })
        });
        fallback.push(TypeInfo::new(v.ty.dtype, shape));
    }
    let outer = outer_values(imp, c, &[body_g])?;
    let body = imp.body(body_g, &own_inputs(body_g, &fallback), &outer)?;
    let json = serde_json::to_value(&body).map_err(|e| c.unsupported(e.to_string()))?;
    let attrs = Attrs::new()
        .with("body", json)
        .with("scan_input_axes", in_axes)
        .with("scan_input_directions", in_dirs)
        .with("scan_output_axes", out_axes)
        .with("scan_output_directions", out_dirs);
    let mut ins = ins;
    ins.extend(outer.into_iter().map(|(_, v)| v).filter(captured_as_input));
    out_n(imp, c, "scan", attrs, &ins, n_out)
}

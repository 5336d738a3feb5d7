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
/// direction listed. Opset 8's form goes to [`scan8`].
fn scan(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    if imp.opset < 9 {
        return scan8(imp, c);
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

/// `Scan(sequence_lens, state…, xs…)` of opset 8: every input has a
/// leading batch axis (the scan inputs `[batch, sequence, …]`), and the
/// body sees one batch entry. The batch must be known at import time; each
/// entry is a `gather` of it from every input, a `scan` (axis 0,
/// `directions` as given, outputs forward), and each output an
/// `expand_dims` of the entries' results, concatenated along the batch
/// axis. `sequence_lens`, when given, must be a constant holding the full
/// sequence length for every entry (shorter sequences are refused).
fn scan8(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let body_g = graph_attr(c, "body")?;
    let m = c
        .i("num_scan_inputs")
        .ok_or_else(|| c.bad_attr("num_scan_inputs", "is required"))?;
    let n_in = c.proto.input.len().saturating_sub(1);
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
                "takes {} inputs and gives {} outputs; an opset-8 Scan with {states} states, {m} scan inputs and \
                 {n_out} outputs needs {n_in} and {n_out}",
                body_g.input.len(),
                body_g.output.len(),
            ),
        ));
    }
    let dirs = match c.ints("directions") {
        None => vec![0; m],
        Some(v) if v.len() == m => v,
        Some(v) => return Err(c.bad_attr("directions", format!("lists {} values, {m} expected", v.len()))),
    };
    let ins = (1..=n_in).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let dims: Vec<Option<Vec<i64>>> = ins.iter().map(|v| v.ty.shape.clone()).collect();
    let batch = match dims
        .iter()
        .map(|s| s.as_ref().and_then(|s| s.first().copied()))
        .collect::<Option<Vec<_>>>()
    {
        Some(b) if b.iter().all(|&d| d > 0 && d == b[0]) => b[0] as usize,
        _ => {
            return Err(c.unsupported(format!(
                "every input needs one batch size (the leading axis) known at import time, got {}",
                ins.iter()
                    .map(|v| v.ty.shape_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    if let Some(lens) = optional(imp, c, 0)? {
        let full = dims[states]
            .as_ref()
            .and_then(|s| s.get(1).copied())
            .filter(|&d| d >= 0);
        let known = match (&lens.constant, lens.source) {
            (Some(_), false) => Some(super::emit::const_ints(c, &lens, "sequence_lens")?),
            _ => None,
        };
        match (known, full) {
            (Some(l), Some(f)) if l.len() == batch && l.iter().all(|&x| x == f) => {}
            _ => return Err(c.unsupported(
                "sequence_lens must be a constant holding the full sequence length for every batch entry \
                     (shorter sequences are not supported)",
            )),
        }
    }
    // The body's own inputs: each input without its batch axis, and the
    // scan inputs without their sequence axis too.
    let fallback: Vec<TypeInfo> = ins
        .iter()
        .enumerate()
        .map(|(k, v)| {
            let drop = if k < states { 1 } else { 2 };
            let shape =
                v.ty.shape
                    .as_ref()
                    .filter(|s| s.len() >= drop)
                    .map(|s| s[drop..].to_vec());
            TypeInfo::new(v.ty.dtype, shape)
        })
        .collect();
    let outer = outer_values(imp, c, &[body_g])?;
    let body = imp.body(body_g, &own_inputs(body_g, &fallback), &outer)?;
    let json = serde_json::to_value(&body).map_err(|e| c.unsupported(e.to_string()))?;
    let attrs = Attrs::new()
        .with("body", json)
        .with("scan_input_axes", vec![0i64; m])
        .with("scan_input_directions", dirs)
        .with("scan_output_axes", vec![0i64; n_out - states])
        .with("scan_output_directions", vec![0i64; n_out - states]);
    let captured: Vec<Value> = outer
        .into_iter()
        .map(|(_, v)| v)
        .filter(captured_as_input)
        .collect();
    let names: Vec<String> = (0..n_out)
        .map(|k| match c.proto.output.get(k).filter(|o| !o.is_empty()) {
            Some(o) => o.clone(),
            None => format!("{}.output{k}", c.onnx_name),
        })
        .collect();
    // Each output's per-entry results, batch axis restored.
    let mut parts: Vec<Vec<Value>> = vec![Vec::new(); n_out];
    for b in 0..batch {
        let at = imp.constant(&format!("{}.entry{b}", c.name), Tensor::from_i64s(&[b as i64]));
        let mut entry = Vec::with_capacity(ins.len() + captured.len());
        for (k, v) in ins.iter().enumerate() {
            let a = Attrs::new().with("axis", 0i64);
            let g = imp.emit(
                c,
                "gather",
                a,
                &[v.clone(), at.clone()],
                &format!("{}.in{k}.b{b}", c.out()),
            )?;
            let a = Attrs::new().with("axes", vec![0i64]);
            entry.push(imp.emit(c, "squeeze", a, &[g], &format!("{}.in{k}.entry{b}", c.out()))?);
        }
        entry.extend(captured.iter().cloned());
        let outs: Vec<String> = names.iter().map(|n| format!("{n}.scan{b}")).collect();
        let refs: Vec<&str> = outs.iter().map(String::as_str).collect();
        let res = imp.emit_n(c, "scan", attrs.clone(), &entry, &refs)?;
        for (k, r) in res.into_iter().enumerate() {
            let a = Attrs::new().with("axis", 0i64);
            let tag = if batch == 1 {
                names[k].clone()
            } else {
                format!("{}.b{b}", names[k])
            };
            parts[k].push(imp.emit(c, "expand_dims", a, &[r], &tag)?);
        }
    }
    let mut results = Vec::with_capacity(n_out);
    for (k, p) in parts.into_iter().enumerate() {
        let v = if batch == 1 {
            p.into_iter()
                .next()
                .ok_or_else(|| c.unsupported("internal: no batch entry"))?
        } else {
            imp.emit(c, "concat", Attrs::new().with("axis", 0i64), &p, &names[k])?
        };
        results.push(v);
    }
    for (k, v) in results.iter().enumerate().skip(1) {
        if c.proto.output.get(k).is_some_and(|o| !o.is_empty()) {
            imp.bind(&names[k], v.clone());
        }
    }
    Ok(results[0].clone())
}

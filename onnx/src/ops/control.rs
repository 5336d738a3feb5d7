//! Control flow: If. A subgraph becomes a body graph held in the node's
//! attrs (see docs/onnx.md, "Control flow"): the outer values it reads
//! become the node's inputs (or, small constants, constants of the body),
//! so the body is a closed graph the engine checks like any other. An If
//! whose condition is known at import time is replaced by the branch it
//! takes.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{captured_as_input, free_names, Importer, NodeCtx, Value};

use super::emit::{input, out_n};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[Op::new("If", 1, if_)];

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

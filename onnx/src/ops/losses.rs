//! The training losses NegativeLogLikelihoodLoss and
//! SoftmaxCrossEntropyLoss, written at import time as the engine ops they
//! are made of, so a finding names a step of the loss:
//!
//! ```text
//! t'   = where(t == ignore_index, 0, t)           (only with ignore_index)
//! x_t  = squeeze(gather_elements(x, expand_dims(t', 1), axis 1), 1)
//! w_t  = gather(weight, t'), 0 where ignored      (1 without weight or ignore)
//! loss = neg(x_t) · w_t
//! ```
//!
//! then `reduction`: `none` keeps `loss` (shape `[N, d1, ...]`), `sum` sums
//! it, `mean` (the default) divides the sum by the sum of `w_t` (the count
//! of elements not ignored when there is no weight). SoftmaxCrossEntropyLoss
//! is this over `log_softmax(scores, axis 1)`, its optional second output.

use vigil_engine::{Attrs, DType};

use super::emit::{input, optional, out, scalar, step};
use super::index::indices;
use super::Op;
use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("NegativeLogLikelihoodLoss", 12, nll_loss),
    Op::new("SoftmaxCrossEntropyLoss", 12, softmax_cross_entropy),
];
/// NegativeLogLikelihoodLoss (opset 12+).
fn nll_loss(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let t = indices(imp, c, 1)?;
    let w = optional(imp, c, 2)?;
    nll(imp, c, x, t, w)
}

/// SoftmaxCrossEntropyLoss (opset 12+): the loss of `log_softmax(scores)`,
/// bound as output 1 (`log_prob`) when the model names it.
fn softmax_cross_entropy(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let scores = input(imp, c, 0)?;
    let t = indices(imp, c, 1)?;
    let w = optional(imp, c, 2)?;
    let a = Attrs::new().with("axis", 1);
    let log_prob = match c.proto.output.get(1).filter(|o| !o.is_empty()) {
        Some(name) => {
            let v = imp.emit(c, "log_softmax", a, &[scores], name)?;
            imp.bind(name, v.clone());
            v
        }
        None => step(imp, c, "log_softmax", a, &[scores], "log_prob")?,
    };
    nll(imp, c, log_prob, t, w)
}

/// The loss of log-probabilities `x` (`[N, C, d1, ...]`) at class
/// indices `t` (i64, `[N, d1, ...]`) with optional class weights `w`.
fn nll(imp: &mut Importer, c: &NodeCtx, x: Value, t: Value, w: Option<Value>) -> Result<Value> {
    let reduction = c.s("reduction").unwrap_or_else(|| "mean".into());
    if !matches!(reduction.as_str(), "none" | "sum" | "mean") {
        return Err(c.bad_attr("reduction", format!("unknown value '{reduction}'")));
    }
    if x.ty.rank().is_some_and(|r| r < 2) {
        return Err(c.unsupported("the input must have a class axis: shape [N, C, d1, ...]"));
    }
    let dtype = x.ty.dtype;
    // Ignored targets read class 0 (any valid class), then weigh 0.
    let (t, ignored) = match c.i("ignore_index") {
        Some(ig) => {
            let ig = scalar(imp, c, DType::I64, ig as f64, "ignore_index")?;
            let is = step(imp, c, "eq", Attrs::new(), &[t.clone(), ig], "ignored")?;
            let zero = scalar(imp, c, DType::I64, 0.0, "class0")?;
            let t = step(imp, c, "where", Attrs::new(), &[is.clone(), zero, t], "target")?;
            (t, Some(is))
        }
        None => (t, None),
    };
    let t1 = step(
        imp,
        c,
        "expand_dims",
        Attrs::new().with("axis", 1),
        std::slice::from_ref(&t),
        "target1",
    )?;
    let picked = step(
        imp,
        c,
        "gather_elements",
        Attrs::new().with("axis", 1),
        &[x, t1],
        "picked1",
    )?;
    let picked = step(
        imp,
        c,
        "squeeze",
        Attrs::new().with("axes", vec![1i64]),
        &[picked],
        "picked",
    )?;
    let mut wt = match w {
        Some(w) => Some(step(
            imp,
            c,
            "gather",
            Attrs::new().with("axis", 0),
            &[w, t],
            "weight",
        )?),
        None => None,
    };
    if let Some(is) = ignored {
        let zero = scalar(imp, c, dtype, 0.0, "zero")?;
        let keep = match wt {
            Some(wt) => wt,
            None => scalar(imp, c, dtype, 1.0, "one")?,
        };
        wt = Some(step(imp, c, "where", Attrs::new(), &[is, zero, keep], "kept")?);
    }
    let last = reduction == "none";
    let neg = if last && wt.is_none() {
        return out(imp, c, "neg", Attrs::new(), &[picked]);
    } else {
        step(imp, c, "neg", Attrs::new(), &[picked], "neg")?
    };
    let loss = match &wt {
        Some(wt) if last => return out(imp, c, "mul", Attrs::new(), &[neg, wt.clone()]),
        Some(wt) => step(imp, c, "mul", Attrs::new(), &[neg, wt.clone()], "weighted")?,
        None => neg,
    };
    let all = Attrs::new().with("keepdims", false);
    match (reduction.as_str(), wt) {
        ("sum", _) => out(imp, c, "sum", all, &[loss]),
        (_, None) => out(imp, c, "mean", all, &[loss]),
        (_, Some(wt)) => {
            let total = step(imp, c, "sum", all.clone(), &[loss], "total")?;
            let weight = step(imp, c, "sum", all, &[wt], "total_weight")?;
            out(imp, c, "div", Attrs::new(), &[total, weight])
        }
    }
}

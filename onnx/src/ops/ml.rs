//! Ops of the `ai.onnx.ml` domain (classical machine learning), the ones
//! listed in [`super::ML`]: Binarizer, ArrayFeatureExtractor and
//! TreeEnsemble. Their since_opset is that domain's version.

use onnx_protobuf::{AttributeProto, TensorProto};
use vigil_engine::ops::float_list;
use vigil_engine::{Attrs, DType};

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};
use crate::tensor::to_tensor;

use super::emit::{input, out, scalar, step};
use super::index::indices;
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Binarizer", 1, binarizer),
    Op::new("ArrayFeatureExtractor", 1, array_feature_extractor),
    Op::new("TreeEnsemble", 5, tree_ensemble),
];

/// `x > threshold` (`gt`), `cast` back to x's dtype: 1 above the
/// threshold, else 0 (NaN included).
fn binarizer(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let dt = x.ty.dtype;
    let th = scalar(imp, c, dt, c.f("threshold").unwrap_or(0.0), "threshold")?;
    let above = step(imp, c, "gt", Attrs::new(), &[x, th], "above")?;
    out(imp, c, "cast", Attrs::new().with("dtype", dt.name()), &[above])
}

/// `gather` of the flattened indices along x's last axis, as ONNX's
/// reference and onnxruntime do it: `[..., k]`, and `[1, k]` for a 1-D x.
fn array_feature_extractor(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let mut ind = indices(imp, c, 1)?;
    if ind.ty.rank() != Some(1) {
        let a = Attrs::new().with("shape", vec![-1i64]);
        ind = step(imp, c, "reshape", a, &[ind], "flat_indices")?;
    }
    let r =
        x.ty.rank()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))?;
    let a = Attrs::new().with("axis", -1i64);
    if r == 1 {
        let g = step(imp, c, "gather", a, &[x, ind], "gathered")?;
        return out(
            imp,
            c,
            "reshape",
            Attrs::new().with("shape", vec![1i64, -1]),
            &[g],
        );
    }
    out(imp, c, "gather", a, &[x, ind])
}

/// A tensor-valued attr's values as f64 (float or double data).
fn floats_of(c: &NodeCtx, name: &str) -> Result<Option<Vec<f64>>> {
    let Some(a) = c.attr(name) else {
        return Ok(None);
    };
    let t = tensor_attr(c, a)?;
    let t = t.cast(DType::F64).map_err(|e| c.bad_attr(name, e.to_string()))?;
    let v = t.to_array::<f64>().map_err(|e| c.bad_attr(name, e.to_string()))?;
    Ok(Some(v.iter().copied().collect()))
}

/// A tensor-valued attr's values as i64 (any integer data).
fn ints_of(c: &NodeCtx, name: &str) -> Result<Vec<i64>> {
    let a = c
        .attr(name)
        .ok_or_else(|| c.bad_attr(name, "is required (a tensor)"))?;
    let t = tensor_attr(c, a)?;
    if !t.dtype().is_int() {
        return Err(c.bad_attr(name, format!("must be an integer tensor, got {}", t.dtype())));
    }
    let t = t.cast(DType::I64).map_err(|e| c.bad_attr(name, e.to_string()))?;
    let v = t.to_array::<i64>().map_err(|e| c.bad_attr(name, e.to_string()))?;
    Ok(v.iter().copied().collect())
}

fn tensor_attr(c: &NodeCtx, a: &AttributeProto) -> Result<vigil_engine::Tensor> {
    let t: &TensorProto =
        a.t.as_ref()
            .ok_or_else(|| c.bad_attr(&a.name, "must be a tensor"))?;
    to_tensor(t, &format!("node '{}' attr '{}'", c.onnx_name, a.name))
}

/// TreeEnsemble (ai.onnx.ml opset 5): one `tree_ensemble` node, the
/// tensor attrs read as lists. Only `post_transform` NONE is supported.
fn tree_ensemble(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    match c.i("post_transform").unwrap_or(0) {
        0 => {}
        p => {
            return Err(c.bad_attr(
                "post_transform",
                format!("{p} (SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT) is not supported; only NONE (0) is"),
            ))
        }
    }
    let aggregate = match c.i("aggregate_function").unwrap_or(1) {
        0 => "average",
        1 => "sum",
        2 => "min",
        3 => "max",
        v => return Err(c.bad_attr("aggregate_function", format!("must be 0 to 3, got {v}"))),
    };
    let ints = |k: &str| c.ints(k).ok_or_else(|| c.bad_attr(k, "is required"));
    let need = |k: &str, v: Option<Vec<f64>>| v.ok_or_else(|| c.bad_attr(k, "is required (a tensor)"));
    let n_targets = c
        .i("n_targets")
        .ok_or_else(|| c.bad_attr("n_targets", "is required"))?;
    let mut a = Attrs::new()
        .with("nodes_featureids", ints("nodes_featureids")?)
        .with("nodes_modes", ints_of(c, "nodes_modes")?)
        .with(
            "nodes_splits",
            float_list(&need("nodes_splits", floats_of(c, "nodes_splits")?)?),
        )
        .with("nodes_truenodeids", ints("nodes_truenodeids")?)
        .with("nodes_falsenodeids", ints("nodes_falsenodeids")?)
        .with("nodes_trueleafs", ints("nodes_trueleafs")?)
        .with("nodes_falseleafs", ints("nodes_falseleafs")?)
        .with("leaf_targetids", ints("leaf_targetids")?)
        .with(
            "leaf_weights",
            float_list(&need("leaf_weights", floats_of(c, "leaf_weights")?)?),
        )
        .with("tree_roots", ints("tree_roots")?)
        .with("n_targets", n_targets)
        .with("aggregate", aggregate);
    if let Some(m) = c.ints("nodes_missing_value_tracks_true") {
        a = a.with("nodes_missing_value_tracks_true", m);
    }
    if let Some(m) = floats_of(c, "membership_values")? {
        a = a.with("membership_values", float_list(&m));
    }
    out(imp, c, "tree_ensemble", a, &[x])
}

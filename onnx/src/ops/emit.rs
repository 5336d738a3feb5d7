//! What a translation is made of: reading a node's inputs, making
//! constants, and emitting the Vigil nodes (the last one named after the
//! ONNX node's output 0, helpers after it with a tag).

use vigil_engine::{Attrs, DType, Element, Tensor};

use crate::error::{ImportError, Result};
use crate::import::{Importer, NodeCtx, Value};

/// ONNX input `k`, which must be present.
pub(crate) fn input(imp: &Importer, c: &NodeCtx, k: usize) -> Result<Value> {
    match c.proto.input.get(k).filter(|n| !n.is_empty()) {
        None => Err(c.unsupported(format!("needs input {k}"))),
        Some(n) => imp.value(n).cloned().ok_or_else(|| ImportError::UndefinedInput {
            node: c.onnx_name.clone(),
            op: c.op_type.clone(),
            input: n.clone(),
        }),
    }
}

/// ONNX input `k` when given (optional inputs may be absent or empty).
pub(crate) fn optional(imp: &Importer, c: &NodeCtx, k: usize) -> Result<Option<Value>> {
    match c.proto.input.get(k).filter(|n| !n.is_empty()) {
        None => Ok(None),
        Some(_) => input(imp, c, k).map(Some),
    }
}

/// The integers of an input that must be known at import time.
pub(crate) fn const_ints(c: &NodeCtx, v: &Value, what: &str) -> Result<Vec<i64>> {
    let t = v.known().ok_or_else(|| {
        c.unsupported(format!(
            "input '{what}' must be known at import time (a constant or foldable)"
        ))
    })?;
    let t = t.cast(DType::I64).map_err(|e| c.unsupported(e.to_string()))?;
    Ok(t.to_array::<i64>()
        .map_err(|e| c.unsupported(e.to_string()))?
        .iter()
        .copied()
        .collect())
}

/// Inputs `0..n`, then the optional ones up to the last one given, an
/// empty i64 constant standing for each one left out before it (the ops
/// that take these read an empty tensor as absent).
pub(crate) fn inputs_up_to(imp: &mut Importer, c: &NodeCtx, n: usize, max: usize) -> Result<Vec<Value>> {
    let mut ins = (0..n).map(|k| input(imp, c, k)).collect::<Result<Vec<_>>>()?;
    let last = (n..max)
        .rev()
        .find(|&k| c.proto.input.get(k).is_some_and(|s| !s.is_empty()));
    for k in n..last.map_or(n, |l| l + 1) {
        match optional(imp, c, k)? {
            Some(v) => ins.push(v),
            None => {
                let empty =
                    Tensor::from_vec(&[0], Vec::<i64>::new()).map_err(|e| c.unsupported(e.to_string()))?;
                ins.push(imp.constant(&format!("{}.absent{k}", c.onnx_name), empty));
            }
        }
    }
    Ok(ins)
}

/// A 0-d constant of `dtype` holding `v`.
pub(crate) fn scalar(imp: &mut Importer, c: &NodeCtx, dtype: DType, v: f64, tag: &str) -> Result<Value> {
    fn make<T: Element>(v: f64) -> vigil_engine::Result<Tensor> {
        Tensor::from_vec(&[], vec![T::from_f64(v)])
    }
    let t =
        vigil_engine::dispatch_all!(dtype, T => make::<T>(v)).map_err(|e| c.unsupported(e.to_string()))?;
    Ok(imp.constant(&format!("{}.{tag}", c.out()), t))
}

/// Copies the named int and string attrs as they are.
pub(crate) fn copy_attrs(c: &NodeCtx, ints: &[&str], strings: &[&str]) -> Attrs {
    let mut a = Attrs::new();
    for &k in ints {
        if let Some(at) = c.attr(k) {
            a = if at.ints.is_empty() && !matches!(k, "pads" | "strides" | "dilations" | "kernel_shape") {
                a.with(k, at.i)
            } else {
                a.with(k, at.ints.clone())
            };
        }
    }
    for &k in strings {
        if let Some(s) = c.s(k) {
            a = a.with(k, s);
        }
    }
    a
}

/// The final node of a translation, named after ONNX output 0.
pub(crate) fn out(
    imp: &mut Importer,
    c: &NodeCtx,
    op: &str,
    attrs: Attrs,
    inputs: &[Value],
) -> Result<Value> {
    let name = c.out().to_string();
    imp.emit(c, op, attrs, inputs, &name)
}

/// The final node of a translation whose op has `n` outputs, each bound
/// to the ONNX output of its position when the model names it (an unnamed
/// one gets the ONNX node's name and its position). Returns output 0.
pub(crate) fn out_n(
    imp: &mut Importer,
    c: &NodeCtx,
    op: &str,
    attrs: Attrs,
    inputs: &[Value],
    n: usize,
) -> Result<Value> {
    let named = |k: usize| c.proto.output.get(k).filter(|o| !o.is_empty()).cloned();
    let names: Vec<String> = (0..n)
        .map(|k| named(k).unwrap_or_else(|| format!("{}.output{k}", c.onnx_name)))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let vals = imp.emit_n(c, op, attrs, inputs, &refs)?;
    for (k, v) in vals.iter().enumerate().skip(1) {
        if let Some(o) = named(k) {
            imp.bind(&o, v.clone());
        }
    }
    Ok(vals[0].clone())
}

/// A helper node of a translation.
pub(crate) fn step(
    imp: &mut Importer,
    c: &NodeCtx,
    op: &str,
    attrs: Attrs,
    inputs: &[Value],
    tag: &str,
) -> Result<Value> {
    let name = format!("{}.{tag}", c.out());
    imp.emit(c, op, attrs, inputs, &name)
}

/// `axes` from the attr (opset < `input_from`) or from input 1.
pub(crate) fn axes_of(imp: &Importer, c: &NodeCtx, input_from: i64) -> Result<Option<Vec<i64>>> {
    if imp.opset < input_from {
        return Ok(c.ints("axes"));
    }
    match optional(imp, c, 1)? {
        None => Ok(None),
        Some(v) => const_ints(c, &v, "axes").map(Some),
    }
}

/// A `create_view` of `x` named `name`: `(axis, start, end, step)` per
/// sliced axis (numpy slice rules; negative axes count from the end), the
/// other axes whole. A view, never a copy.
pub(crate) fn view(
    imp: &mut Importer,
    c: &NodeCtx,
    x: Value,
    ranges: &[(i64, i64, i64, i64)],
    name: &str,
) -> Result<Value> {
    let r =
        x.ty.rank()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))?;
    let mut index: Vec<Vec<i64>> = vec![vec![2, 0, 1, 1]; r];
    for &(axis, start, end, step) in ranges {
        let a = if axis < 0 { axis + r as i64 } else { axis };
        let slot = index
            .get_mut(a as usize)
            .filter(|_| a >= 0)
            .ok_or_else(|| c.unsupported(format!("axis {axis} is out of range for rank {r}")))?;
        *slot = vec![1, 2, 1, start, end, step, 0];
    }
    let mut ins = vec![x];
    for (k, v) in index.into_iter().enumerate() {
        ins.push(imp.constant(&format!("{name}.index{k}"), Tensor::from_i64s(&v)));
    }
    imp.emit(c, "create_view", Attrs::new(), &ins, name)
}

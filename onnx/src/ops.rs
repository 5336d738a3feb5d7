//! Per-op import: each ONNX op becomes one or more Vigil ops (see
//! docs/onnx.md for the table). Inputs that ONNX passes as tensors but that
//! Vigil takes as attrs (shapes, axes, pads) must be known at import time.

use vigil_engine::{Attrs, DType, Element, Num, Tensor};

use crate::error::{ImportError, Result};
use crate::import::{Importer, NodeCtx, Value};
use crate::tensor::{dtype_of, to_tensor};

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

/// A 0-d constant of `dtype` holding `v`.
pub(crate) fn scalar(imp: &mut Importer, c: &NodeCtx, dtype: DType, v: f64, tag: &str) -> Result<Value> {
    fn make<T: Element>(v: f64) -> vigil_engine::Result<Tensor> {
        Tensor::from_vec(&[], vec![T::from_f64(v)])
    }
    let t =
        vigil_engine::dispatch_all!(dtype, T => make::<T>(v)).map_err(|e| c.unsupported(e.to_string()))?;
    Ok(imp.constant(&format!("{}.{tag}", c.out()), t))
}

fn copy_attrs(c: &NodeCtx, ints: &[&str], strings: &[&str]) -> Attrs {
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

/// Translates one node; returns the value of its output 0.
pub(crate) fn import_node(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let op = c.op_type.as_str();
    match op {
        "Relu" | "Sigmoid" | "Tanh" | "Exp" | "Log" | "Sqrt" | "Neg" | "Abs" | "Sin" | "Cos" | "Tan"
        | "Asin" | "Acos" | "Atan" | "Sinh" | "Cosh" | "Erf" | "Floor" | "Ceil" | "Round" | "Sign"
        | "Reciprocal" | "Softplus" | "Gelu" => {
            match c.s("approximate").as_deref() {
                None | Some("none") => {}
                Some("tanh") => return gelu_tanh(imp, c),
                Some(a) => return Err(c.bad_attr("approximate", format!("unknown value '{a}'"))),
            }
            let x = input(imp, c, 0)?;
            out(imp, c, &op.to_lowercase(), Attrs::new(), &[x])
        }
        "Add" | "Sub" | "Mul" | "Div" | "Pow" => binary(imp, c),
        "Sum" | "Max" | "Min" | "Mean" => variadic(imp, c),
        "Equal" | "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual" => {
            let name = match op {
                "Equal" => "eq",
                "Less" => "lt",
                "LessOrEqual" => "le",
                "Greater" => "gt",
                _ => "ge",
            };
            let (a, b) = (input(imp, c, 0)?, input(imp, c, 1)?);
            out(imp, c, name, Attrs::new(), &[a, b])
        }
        "Where" => {
            let ins = [input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?];
            out(imp, c, "where", Attrs::new(), &ins)
        }
        "Identity" => input(imp, c, 0),
        "Dropout" => {
            if let Some(t) = optional(imp, c, 2)? {
                if const_ints(c, &t, "training_mode")?.iter().any(|&v| v != 0) {
                    return Err(c.unsupported("training mode is not supported"));
                }
            }
            let x = input(imp, c, 0)?;
            // Inference keeps every element: the mask (output 1) is all true.
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
        "Conv" => {
            let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?];
            ins.extend(optional(imp, c, 2)?);
            let a = copy_attrs(
                c,
                &["kernel_shape", "strides", "dilations", "pads", "group"],
                &["auto_pad"],
            );
            out(imp, c, "conv", a, &ins)
        }
        "ConvTranspose" => {
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
        "MaxPool" | "AveragePool" => {
            if c.i("storage_order").unwrap_or(0) != 0 {
                return Err(c.bad_attr("storage_order", "only 0 (row major) is supported"));
            }
            let x = input(imp, c, 0)?;
            let mut keys = vec!["kernel_shape", "strides", "dilations", "pads", "ceil_mode"];
            if op == "AveragePool" {
                keys.push("count_include_pad");
            }
            let a = copy_attrs(c, &keys, &["auto_pad"]);
            out(
                imp,
                c,
                if op == "MaxPool" {
                    "max_pool"
                } else {
                    "average_pool"
                },
                a,
                &[x],
            )
        }
        "GlobalAveragePool" | "GlobalMaxPool" => {
            let x = input(imp, c, 0)?;
            let name = if op == "GlobalMaxPool" {
                "global_max_pool"
            } else {
                "global_average_pool"
            };
            out(imp, c, name, Attrs::new(), &[x])
        }
        "BatchNormalization" => {
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
        "LRN" => {
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
        "MatMul" => {
            let (a, b) = (input(imp, c, 0)?, input(imp, c, 1)?);
            out(imp, c, "matmul", Attrs::new(), &[a, b])
        }
        "Gemm" => gemm(imp, c),
        "Transpose" => {
            let x = input(imp, c, 0)?;
            let a = c
                .ints("perm")
                .map_or(Attrs::new(), |p| Attrs::new().with("perm", p));
            out(imp, c, "transpose", a, &[x])
        }
        "Reshape" => reshape(imp, c),
        "Flatten" => flatten(imp, c),
        "Unsqueeze" => unsqueeze(imp, c),
        "Squeeze" => {
            let x = input(imp, c, 0)?;
            let axes = axes_of(imp, c, 13)?;
            let a = axes.map_or(Attrs::new(), |v| Attrs::new().with("axes", v));
            out(imp, c, "squeeze", a, &[x])
        }
        "Concat" => {
            let ins = (0..c.proto.input.len())
                .map(|k| input(imp, c, k))
                .collect::<Result<Vec<_>>>()?;
            let axis = c.i("axis").ok_or_else(|| c.bad_attr("axis", "is required"))?;
            out(imp, c, "concat", Attrs::new().with("axis", axis), &ins)
        }
        "Softmax" | "LogSoftmax" | "Hardmax" => softmax(imp, c),
        "Cast" => {
            let x = input(imp, c, 0)?;
            let to = c.i("to").ok_or_else(|| c.bad_attr("to", "is required"))?;
            let d = dtype_of(to as i32, &format!("node '{}' (Cast): attr 'to'", c.onnx_name))?;
            out(imp, c, "cast", Attrs::new().with("dtype", d.name()), &[x])
        }
        "BitCast" => {
            let x = input(imp, c, 0)?;
            let to = c.i("to").ok_or_else(|| c.bad_attr("to", "is required"))?;
            let d = dtype_of(to as i32, &format!("node '{}' (BitCast): attr 'to'", c.onnx_name))?;
            out(imp, c, "bitcast", Attrs::new().with("dtype", d.name()), &[x])
        }
        "Gather" => {
            let x = input(imp, c, 0)?;
            let ind = crate::index_ops::indices(imp, c, 1)?;
            out(
                imp,
                c,
                "gather",
                Attrs::new().with("axis", c.i("axis").unwrap_or(0)),
                &[x, ind],
            )
        }
        "ReduceSum" | "ReduceMean" | "ReduceMax" | "ReduceMin" | "ReduceL1" | "ReduceL2"
        | "ReduceSumSquare" | "ReduceLogSum" | "ReduceLogSumExp" | "ReduceProd" => reduce(imp, c),
        "ArgMax" | "ArgMin" => {
            let x = input(imp, c, 0)?;
            let a = Attrs::new()
                .with("axis", c.i("axis").unwrap_or(0))
                .with("keepdims", c.i("keepdims").unwrap_or(1) != 0)
                .with("select_last", c.i("select_last_index").unwrap_or(0) != 0);
            out(imp, c, &op.to_lowercase(), a, &[x])
        }
        "Not" | "And" | "Or" | "Xor" => {
            let ins = (0..c.proto.input.len())
                .map(|k| input(imp, c, k))
                .collect::<Result<Vec<_>>>()?;
            out(imp, c, &op.to_lowercase(), Attrs::new(), &ins)
        }
        "BitwiseAnd" | "BitwiseOr" | "BitwiseXor" | "BitwiseNot" => {
            let ins = (0..c.proto.input.len())
                .map(|k| input(imp, c, k))
                .collect::<Result<Vec<_>>>()?;
            let name = match op {
                "BitwiseAnd" => "bitwise_and",
                "BitwiseOr" => "bitwise_or",
                "BitwiseXor" => "bitwise_xor",
                _ => "bitwise_not",
            };
            out(imp, c, name, Attrs::new(), &ins)
        }
        "BitShift" => {
            let (x, n) = (input(imp, c, 0)?, input(imp, c, 1)?);
            let name = match c.s("direction").as_deref() {
                Some("LEFT") => "left_shift",
                Some("RIGHT") => "right_shift",
                Some(d) => {
                    return Err(c.bad_attr("direction", format!("unknown value '{d}' (LEFT or RIGHT)")))
                }
                None => return Err(c.bad_attr("direction", "missing (LEFT or RIGHT)")),
            };
            out(imp, c, name, Attrs::new(), &[x, n])
        }
        "Mod" => {
            let (a, b) = (input(imp, c, 0)?, input(imp, c, 1)?);
            let fmod = c.i("fmod").unwrap_or(0) != 0;
            out(imp, c, "mod", Attrs::new().with("fmod", fmod), &[a, b])
        }
        "CastLike" => {
            let (x, like) = (input(imp, c, 0)?, input(imp, c, 1)?);
            let a = Attrs::new().with("dtype", like.ty.dtype.name());
            out(imp, c, "cast", a, &[x])
        }
        "Size" => {
            let x = input(imp, c, 0)?;
            let s =
                x.ty.static_shape()
                    .ok_or_else(|| c.unsupported("the input's shape is not known at import time"))?;
            let n = s.iter().product::<usize>() as i64;
            let t = Tensor::from_vec(&[], vec![n]).map_err(|e| c.unsupported(e.to_string()))?;
            Ok(imp.constant(c.out(), t))
        }
        "Clip" => clip(imp, c),
        "Elu" | "Celu" | "Selu" | "HardSigmoid" | "HardSwish" | "Softsign" | "ThresholdedRelu" | "Mish" => {
            activation(imp, c)
        }
        "PRelu" => {
            let (x, slope) = (input(imp, c, 0)?, input(imp, c, 1)?);
            out(imp, c, "prelu", Attrs::new(), &[x, slope])
        }
        "Pad" => crate::layout_ops::pad(imp, c),
        "Tile" => crate::layout_ops::tile(imp, c),
        "Split" => crate::layout_ops::split(imp, c),
        "LeakyRelu" => {
            let x = input(imp, c, 0)?;
            let alpha = scalar(imp, c, x.ty.dtype, c.f("alpha").unwrap_or(0.01), "alpha")?;
            let zero = scalar(imp, c, x.ty.dtype, 0.0, "zero")?;
            let neg = step(imp, c, "lt", Attrs::new(), &[x.clone(), zero], "negative")?;
            let scaled = step(imp, c, "mul", Attrs::new(), &[x.clone(), alpha], "scaled")?;
            out(imp, c, "where", Attrs::new(), &[neg, scaled, x])
        }
        "Shape" => shape(imp, c),
        "ConstantOfShape" => constant_of_shape(imp, c),
        "Constant" => constant(imp, c),
        "Slice" => slice(imp, c),
        "Expand" => expand(imp, c),
        "IsNaN" => {
            let x = input(imp, c, 0)?;
            out(imp, c, "isnan", Attrs::new(), &[x])
        }
        "IsInf" => {
            let x = input(imp, c, 0)?;
            let a = Attrs::new()
                .with("detect_positive", c.i("detect_positive").unwrap_or(1) != 0)
                .with("detect_negative", c.i("detect_negative").unwrap_or(1) != 0);
            out(imp, c, "isinf", a, &[x])
        }
        "Range" => crate::index_ops::range(imp, c),
        "CumSum" | "CumProd" => crate::index_ops::cumsum(imp, c),
        "Trilu" => crate::index_ops::trilu(imp, c),
        "GatherElements" | "ScatterElements" | "Scatter" => crate::index_ops::elements(imp, c),
        "LayerNormalization" => layer_norm(imp, c),
        "Resize" | "Upsample" => resize(imp, c),
        "RMSNormalization" => rms_norm(imp, c),
        "TopK" => top_k(imp, c),
        "NegativeLogLikelihoodLoss" => crate::losses::nll_loss(imp, c),
        "SoftmaxCrossEntropyLoss" => crate::losses::softmax_cross_entropy(imp, c),
        "Einsum" => {
            let ins = (0..c.proto.input.len())
                .map(|k| input(imp, c, k))
                .collect::<Result<Vec<_>>>()?;
            let eq = c
                .s("equation")
                .ok_or_else(|| c.bad_attr("equation", "is required"))?;
            out(imp, c, "einsum", Attrs::new().with("equation", eq), &ins)
        }
        _ => Err(ImportError::UnsupportedOp {
            node: c.onnx_name.clone(),
            op: c.op_type.clone(),
            domain: c.proto.domain.clone(),
        }),
    }
}

/// Gelu with `approximate = "tanh"`:
/// `x/2 · (1 + tanh(√(2/π) · (x + 0.044715·x³)))`.
fn gelu_tanh(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let dt = x.ty.dtype;
    let mul =
        |imp: &mut Importer, a: Value, b: Value, tag: &str| step(imp, c, "mul", Attrs::new(), &[a, b], tag);
    let x2 = mul(imp, x.clone(), x.clone(), "x2")?;
    let x3 = mul(imp, x2, x.clone(), "x3")?;
    let k = scalar(imp, c, dt, 0.044715, "k")?;
    let kx3 = mul(imp, x3, k, "kx3")?;
    let inner = step(imp, c, "add", Attrs::new(), &[x.clone(), kx3], "inner")?;
    let s = scalar(imp, c, dt, (2.0 / std::f64::consts::PI).sqrt(), "s")?;
    let scaled = mul(imp, inner, s, "scaled")?;
    let t = step(imp, c, "tanh", Attrs::new(), &[scaled], "tanh")?;
    let one = scalar(imp, c, dt, 1.0, "one")?;
    let t1 = step(imp, c, "add", Attrs::new(), &[t, one], "one_plus")?;
    let half = scalar(imp, c, dt, 0.5, "half")?;
    let hx = mul(imp, x, half, "half_x")?;
    out(imp, c, "mul", Attrs::new(), &[hx, t1])
}

/// A parametrised activation: ONNX's float attrs under Vigil's names.
fn activation(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (name, attrs): (&str, &[&str]) = match c.op_type.as_str() {
        "Elu" => ("elu", &["alpha"]),
        "Celu" => ("celu", &["alpha"]),
        "Selu" => ("selu", &["alpha", "gamma"]),
        "HardSigmoid" => ("hard_sigmoid", &["alpha", "beta"]),
        "HardSwish" => ("hard_swish", &[]),
        "Softsign" => ("softsign", &[]),
        "ThresholdedRelu" => ("thresholded_relu", &["alpha"]),
        _ => ("mish", &[]),
    };
    let x = input(imp, c, 0)?;
    let a = attrs
        .iter()
        .filter_map(|&k| c.f(k).map(|v| (k, v)))
        .fold(Attrs::new(), |a, (k, v)| a.with(k, v));
    out(imp, c, name, a, &[x])
}

fn binary(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (a, mut b) = (input(imp, c, 0)?, input(imp, c, 1)?);
    let mut name = c.op_type.to_lowercase();
    if c.op_type == "Div" && !a.ty.dtype.is_float() {
        // ONNX's integer Div truncates; Vigil's div is true division.
        name = "div_trunc".into();
    }
    if imp.opset < 7 && c.i("broadcast").unwrap_or(0) != 0 {
        b = legacy_broadcast(imp, c, &a, b)?;
    }
    if c.op_type == "Pow" && b.ty.dtype != a.ty.dtype {
        // ONNX Pow's exponent may have another type; the result has the base's.
        b = step(
            imp,
            c,
            "cast",
            Attrs::new().with("dtype", a.ty.dtype.name()),
            &[b],
            "exponent",
        )?;
    }
    out(imp, c, &name, Attrs::new(), &[a, b])
}

/// Before opset 7, `broadcast = 1` with `axis` aligns B's dims with A's
/// starting at `axis`: B gets trailing 1s so numpy broadcasting agrees.
fn legacy_broadcast(imp: &mut Importer, c: &NodeCtx, a: &Value, b: Value) -> Result<Value> {
    let Some(axis) = c.i("axis") else { return Ok(b) };
    let (Some(ra), Some(sb)) = (a.ty.rank(), b.ty.shape.clone()) else {
        return Err(c.unsupported("legacy broadcast needs both ranks at import time"));
    };
    let axis = if axis < 0 { axis + ra as i64 } else { axis };
    let pad = ra as i64 - axis - sb.len() as i64;
    if pad < 0 || sb.iter().any(|&d| d < 0) {
        return Err(c.bad_attr(
            "axis",
            format!("B {sb:?} does not fit A of rank {ra} at axis {axis}"),
        ));
    }
    if pad == 0 {
        return Ok(b);
    }
    let shape: Vec<i64> = sb
        .iter()
        .copied()
        .chain(std::iter::repeat_n(1, pad as usize))
        .collect();
    step(
        imp,
        c,
        "reshape",
        Attrs::new().with("shape", shape),
        &[b],
        "b_aligned",
    )
}

fn variadic(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let ins = (0..c.proto.input.len())
        .map(|k| input(imp, c, k))
        .collect::<Result<Vec<_>>>()?;
    let pair = match c.op_type.as_str() {
        "Max" => "maximum",
        "Min" => "minimum",
        _ => "add",
    };
    let n = ins.len();
    let mean = c.op_type == "Mean";
    let Some((first, rest)) = ins.split_first() else {
        return Err(c.unsupported("needs at least one input"));
    };
    if rest.is_empty() && !mean {
        return out(imp, c, "copy", Attrs::new(), std::slice::from_ref(first));
    }
    let mut acc = first.clone();
    for (k, v) in rest.iter().enumerate() {
        let last = k + 1 == rest.len() && !mean;
        acc = if last {
            out(imp, c, pair, Attrs::new(), &[acc, v.clone()])?
        } else {
            step(
                imp,
                c,
                pair,
                Attrs::new(),
                &[acc, v.clone()],
                &format!("{pair}{k}"),
            )?
        };
    }
    if mean {
        let d = scalar(imp, c, acc.ty.dtype, n as f64, "count")?;
        acc = out(imp, c, "div", Attrs::new(), &[acc, d])?;
    }
    Ok(acc)
}

fn gemm(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (mut a, mut b) = (input(imp, c, 0)?, input(imp, c, 1)?);
    if c.i("transA").unwrap_or(0) != 0 {
        a = step(imp, c, "transpose", Attrs::new(), &[a], "a_t")?;
    }
    if c.i("transB").unwrap_or(0) != 0 {
        b = step(imp, c, "transpose", Attrs::new(), &[b], "b_t")?;
    }
    let (alpha, beta) = (c.f("alpha").unwrap_or(1.0), c.f("beta").unwrap_or(1.0));
    let bias = optional(imp, c, 2)?;
    let dtype = a.ty.dtype;
    let last_is_matmul = alpha == 1.0 && bias.is_none();
    if last_is_matmul {
        return out(imp, c, "matmul", Attrs::new(), &[a, b]);
    }
    let mut y = step(imp, c, "matmul", Attrs::new(), &[a, b], "ab")?;
    if alpha != 1.0 {
        let s = scalar(imp, c, dtype, alpha, "alpha")?;
        y = if bias.is_none() {
            out(imp, c, "mul", Attrs::new(), &[y, s])?
        } else {
            step(imp, c, "mul", Attrs::new(), &[y, s], "alpha_ab")?
        };
    }
    if let Some(mut cv) = bias {
        if beta != 1.0 {
            let s = scalar(imp, c, dtype, beta, "beta")?;
            cv = step(imp, c, "mul", Attrs::new(), &[cv, s], "beta_c")?;
        }
        y = out(imp, c, "add", Attrs::new(), &[y, cv])?;
    }
    Ok(y)
}

fn reshape(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let sv = input(imp, c, 1)?;
    let mut shape = const_ints(c, &sv, "shape")?;
    if c.i("allowzero").unwrap_or(0) == 0 {
        for (i, d) in shape.iter_mut().enumerate() {
            if *d == 0 {
                let from =
                    x.ty.shape
                        .as_ref()
                        .and_then(|s| s.get(i).copied())
                        .filter(|&v| v >= 0);
                *d = from.ok_or_else(|| {
                    c.unsupported(format!(
                        "shape[{i}] is 0 (copy the input's dim) but that dim is not known at import time"
                    ))
                })?;
            }
        }
    }
    out(imp, c, "reshape", Attrs::new().with("shape", shape), &[x])
}

fn flatten(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let s =
        x.ty.shape
            .clone()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))?;
    let r = s.len() as i64;
    let mut axis = c.i("axis").unwrap_or(1);
    if axis < 0 {
        axis += r;
    }
    if !(0..=r).contains(&axis) {
        return Err(c.bad_attr("axis", format!("{axis} is out of range for rank {r}")));
    }
    let prod = |d: &[i64]| {
        if d.iter().any(|&v| v < 0) {
            -1
        } else {
            d.iter().product()
        }
    };
    let (a, b) = (prod(&s[..axis as usize]), prod(&s[axis as usize..]));
    if a < 0 && b < 0 {
        return Err(c.unsupported("both halves of the flattened shape are unknown at import time"));
    }
    out(imp, c, "reshape", Attrs::new().with("shape", vec![a, b]), &[x])
}

/// `axes` from the attr (opset < `input_from`) or from input 1.
fn axes_of(imp: &Importer, c: &NodeCtx, input_from: i64) -> Result<Option<Vec<i64>>> {
    if imp.opset < input_from {
        return Ok(c.ints("axes"));
    }
    match optional(imp, c, 1)? {
        None => Ok(None),
        Some(v) => const_ints(c, &v, "axes").map(Some),
    }
}

fn unsqueeze(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut x = input(imp, c, 0)?;
    let axes = axes_of(imp, c, 13)?.ok_or_else(|| c.bad_attr("axes", "is required"))?;
    let r =
        x.ty.rank()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))? as i64
            + axes.len() as i64;
    let mut norm: Vec<i64> = axes.iter().map(|&a| if a < 0 { a + r } else { a }).collect();
    norm.sort_unstable();
    for (k, &a) in norm.iter().enumerate() {
        let attrs = Attrs::new().with("axis", a);
        x = if k + 1 == norm.len() {
            out(imp, c, "expand_dims", attrs, &[x])?
        } else {
            step(imp, c, "expand_dims", attrs, &[x], &format!("axis{a}"))?
        };
    }
    Ok(x)
}

fn softmax(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let name = match c.op_type.as_str() {
        "Softmax" => "softmax",
        "LogSoftmax" => "log_softmax",
        _ => "hardmax",
    };
    if imp.opset >= 13 {
        return out(
            imp,
            c,
            name,
            Attrs::new().with("axis", c.i("axis").unwrap_or(-1)),
            &[x],
        );
    }
    // Before opset 13 the input is coerced to 2-D at `axis` (default 1).
    let s =
        x.ty.shape
            .clone()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))?;
    let r = s.len() as i64;
    let axis = c.i("axis").unwrap_or(1);
    let axis = if axis < 0 { axis + r } else { axis };
    if axis == r - 1 {
        return out(imp, c, name, Attrs::new().with("axis", -1), &[x]);
    }
    if s.iter().any(|&d| d < 0) {
        return Err(c.unsupported("softmax over several axes needs the input's shape at import time"));
    }
    let (a, b): (i64, i64) = (
        s[..axis as usize].iter().product(),
        s[axis as usize..].iter().product(),
    );
    let flat = step(
        imp,
        c,
        "reshape",
        Attrs::new().with("shape", vec![a, b]),
        &[x],
        "flat",
    )?;
    let y = step(imp, c, name, Attrs::new().with("axis", -1), &[flat], name)?;
    out(imp, c, "reshape", Attrs::new().with("shape", s), &[y])
}

fn reduce(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut x = input(imp, c, 0)?;
    // ReduceL1 … ReduceLogSumExp: an elementwise step, a sum, a final step.
    let (pre, name, post) = match c.op_type.as_str() {
        "ReduceSum" => (None, "sum", None),
        "ReduceMean" => (None, "mean", None),
        "ReduceMax" => (None, "max", None),
        "ReduceMin" => (None, "min", None),
        "ReduceProd" => (None, "prod", None),
        "ReduceL1" => (Some("abs"), "sum", None),
        "ReduceL2" => (Some("square"), "sum", Some("sqrt")),
        "ReduceSumSquare" => (Some("square"), "sum", None),
        "ReduceLogSum" => (None, "sum", Some("log")),
        _ => (Some("exp"), "sum", Some("log")),
    };
    let from = if c.op_type == "ReduceSum" { 13 } else { 18 };
    let axes = axes_of(imp, c, from)?.filter(|a| !a.is_empty());
    if axes.is_none() && c.i("noop_with_empty_axes").unwrap_or(0) != 0 {
        return Ok(x);
    }
    match pre {
        Some("square") => x = step(imp, c, "mul", Attrs::new(), &[x.clone(), x], "square")?,
        Some(f) => x = step(imp, c, f, Attrs::new(), &[x], f)?,
        None => {}
    }
    let keepdims = c.i("keepdims").unwrap_or(1) != 0;
    if matches!(name, "max" | "min") {
        if let Some(v) = empty_max_min(imp, c, &x, axes.as_deref(), keepdims, name == "max")? {
            return Ok(v);
        }
    }
    let mut a = Attrs::new().with("keepdims", keepdims);
    if let Some(axes) = axes {
        a = a.with("axes", axes);
    }
    if x.ty.dtype == DType::Bool && matches!(name, "max" | "min") {
        // Vigil's reductions take numbers: any/all through i32 and back.
        let xi = step(imp, c, "cast", Attrs::new().with("dtype", "i32"), &[x], "as_i32")?;
        let r = step(imp, c, name, a, &[xi], name)?;
        return out(imp, c, "cast", Attrs::new().with("dtype", "bool"), &[r]);
    }
    match post {
        None => out(imp, c, name, a, &[x]),
        Some(f) => {
            let r = step(imp, c, name, a, &[x], name)?;
            out(imp, c, f, Attrs::new(), &[r])
        }
    }
}

/// ONNX's max/min over an empty axis is the reduction's identity (-inf
/// or +inf, the integer extremes, false or true), where numpy and Vigil's
/// `max`/`min` raise: with a static shape it is a constant.
fn empty_max_min(
    imp: &mut Importer,
    c: &NodeCtx,
    x: &Value,
    axes: Option<&[i64]>,
    keepdims: bool,
    max: bool,
) -> Result<Option<Value>> {
    let Some(s) = x.ty.static_shape() else {
        return Ok(None);
    };
    let r = s.len() as i64;
    let reduced: Vec<bool> = match axes {
        None => vec![true; s.len()],
        Some(a) => {
            let norm: Vec<i64> = a.iter().map(|&v| if v < 0 { v + r } else { v }).collect();
            (0..r).map(|k| norm.contains(&k)).collect()
        }
    };
    if !s.iter().zip(&reduced).any(|(&d, &red)| red && d == 0) {
        return Ok(None);
    }
    let shape: Vec<usize> = s
        .iter()
        .zip(&reduced)
        .filter_map(|(&d, &red)| match (red, keepdims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    // A constant made here: attrs (JSON) cannot hold ±inf for a `full` node.
    fn make<T: Element>(shape: &[usize], v: T) -> vigil_engine::Result<Tensor> {
        Tensor::from_vec(shape, vec![v; shape.iter().product()])
    }
    let t = vigil_engine::dispatch_num!(x.ty.dtype,
        T => make::<T>(&shape, if max { <T as Num>::min_value() } else { <T as Num>::max_value() }),
        make(&shape, !max))
    .map_err(|e| c.unsupported(e.to_string()))?;
    Ok(Some(imp.constant(c.out(), t)))
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

/// Resize (opset 10 and 11+) and Upsample (opset 7 and 9) as one `resize`
/// node. Its roi, scales and sizes must be known at import time; `axes` and
/// `keep_aspect_ratio_policy` are resolved here, so the node gets a scale
/// per axis and, when X's shape is known, the whole output shape. Upsample
/// and Resize-10 take only scales and `nearest`/`linear`, with asymmetric
/// coordinates; their `nearest` floors when upsampling and (Resize-10, as
/// onnxruntime) ceils when downsampling.
fn resize(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let r =
        x.ty.rank()
            .ok_or_else(|| c.unsupported("the input's rank is not known at import time"))?;
    let shape = x.ty.static_shape();
    let known = |k: usize, what: &str| -> Result<Option<Vec<f64>>> {
        let Some(v) = optional(imp, c, k)? else {
            return Ok(None);
        };
        let t = v.known().ok_or_else(|| {
            c.unsupported(format!(
                "input '{what}' must be known at import time (a constant or foldable)"
            ))
        })?;
        let vals = t.to_f64_vec().map_err(|e| c.unsupported(e.to_string()))?;
        // An empty tensor stands for an absent input.
        Ok((!vals.is_empty()).then_some(vals))
    };
    let mode = c.s("mode").unwrap_or_else(|| "nearest".into());
    let legacy = c.op_type == "Upsample" || imp.opset < 11;
    let mut a = Attrs::new().with("mode", mode.as_str());
    let (scales, sizes, axes): (Option<Vec<f64>>, Option<Vec<i64>>, Vec<usize>) = if legacy {
        if imp.opset < 7 {
            return Err(c.unsupported("Upsample before opset 7 (height_scale, width_scale) is not supported"));
        }
        if mode != "nearest" && mode != "linear" {
            return Err(c.bad_attr("mode", format!("unknown value '{mode}' (nearest or linear)")));
        }
        let scales = match c.attr("scales") {
            Some(at) => at.floats.iter().map(|&f| f as f64).collect(),
            None => known(1, "scales")?.ok_or_else(|| c.unsupported("needs input 1 (scales)"))?,
        };
        let (up, down) = (scales.iter().all(|&s| s >= 1.0), scales.iter().all(|&s| s <= 1.0));
        let nearest = match (c.op_type == "Upsample", up, down) {
            (true, false, _) => {
                return Err(c.unsupported(format!("Upsample's scales must be at least 1, got {scales:?}")))
            }
            (_, true, _) => "floor",
            (_, false, true) => "ceil",
            _ => {
                return Err(c.unsupported(format!(
                    "nearest Resize before opset 11 that both up- and downsamples is not supported, scales {scales:?}"
                )))
            }
        };
        if mode == "nearest" {
            a = a.with("nearest_mode", nearest);
        }
        a = a.with("coordinate_transformation_mode", "asymmetric");
        (Some(scales), None, (0..r).collect())
    } else {
        let axes = match c.ints("axes") {
            None => (0..r).collect(),
            Some(v) => {
                let mut axes = Vec::with_capacity(v.len());
                for &ax in &v {
                    let n = if ax < 0 { ax + r as i64 } else { ax };
                    if n < 0 || n >= r as i64 || axes.contains(&(n as usize)) {
                        return Err(c.bad_attr(
                            "axes",
                            format!("{v:?} is not a list of distinct axes of rank {r}"),
                        ));
                    }
                    axes.push(n as usize);
                }
                axes
            }
        };
        let transform = c.s("coordinate_transformation_mode");
        if let Some(t) = &transform {
            a = a.with("coordinate_transformation_mode", t.as_str());
        }
        if transform.as_deref() == Some("tf_crop_and_resize") {
            if let Some(roi) = known(1, "roi")? {
                let k = axes.len();
                if roi.len() != 2 * k {
                    return Err(c.unsupported(format!(
                        "roi has {} values, {k} axes need {}",
                        roi.len(),
                        2 * k
                    )));
                }
                let mut full: Vec<f64> = [vec![0.0; r], vec![1.0; r]].concat();
                for (i, &d) in axes.iter().enumerate() {
                    full[d] = roi[i];
                    full[r + d] = roi[k + i];
                }
                a = a.with("roi", full);
            }
        }
        if let Some(m) = c.s("nearest_mode") {
            a = a.with("nearest_mode", m);
        }
        if let Some(v) = c.f("cubic_coeff_a") {
            a = a.with("cubic_coeff_a", v);
        }
        if let Some(v) = c.f("extrapolation_value") {
            if !v.is_finite() {
                return Err(c.bad_attr("extrapolation_value", format!("must be finite, got {v}")));
            }
            a = a.with("extrapolation_value", v);
        }
        a = a.with("exclude_outside", c.i("exclude_outside").unwrap_or(0) != 0);
        // Nearest has no kernel to stretch: antialias is moot there.
        a = a.with(
            "antialias",
            mode != "nearest" && c.i("antialias").unwrap_or(0) != 0,
        );
        let sizes = known(3, "sizes")?.map(|v| v.iter().map(|&s| s as i64).collect());
        (known(2, "scales")?, sizes, axes)
    };
    let k = axes.len();
    match (scales, sizes) {
        (Some(_), Some(_)) => Err(c.unsupported("takes 'scales' or 'sizes', not both")),
        (None, None) => Err(c.unsupported("needs input 'scales' or 'sizes'")),
        (Some(s), None) => {
            if s.len() != k || s.iter().any(|&v| !(v > 0.0 && v.is_finite())) {
                return Err(c.unsupported(format!("scales must be {k} positive numbers, got {s:?}")));
            }
            let mut full = vec![1.0; r];
            for (i, &d) in axes.iter().enumerate() {
                full[d] = s[i];
            }
            if let Some(sh) = &shape {
                let out: Vec<usize> = sh
                    .iter()
                    .zip(&full)
                    .map(|(&n, &f)| (n as f64 * f).floor() as usize)
                    .collect();
                a = a.with("sizes", out);
            }
            out(imp, c, "resize", a.with("scales", full), &[x])
        }
        (None, Some(s)) => {
            let sh = shape.ok_or_else(|| c.unsupported("'sizes' needs the input's shape at import time"))?;
            if s.len() != k || s.iter().any(|&v| v < 0) {
                return Err(c.unsupported(format!("sizes must be {k} non-negative integers, got {s:?}")));
            }
            let ratio = |i: usize| match sh[axes[i]] {
                0 => 1.0,
                n => s[i] as f64 / n as f64,
            };
            let mut full_sizes = sh.clone();
            let mut full_scales = vec![1.0; r];
            let policy = c.s("keep_aspect_ratio_policy");
            let keep = match policy.as_deref() {
                None | Some("stretch") => None,
                Some("not_larger") => Some((0..k).map(ratio).fold(f64::INFINITY, f64::min)),
                Some("not_smaller") => Some((0..k).map(ratio).fold(f64::NEG_INFINITY, f64::max)),
                Some(p) => {
                    return Err(c.bad_attr(
                        "keep_aspect_ratio_policy",
                        format!("unknown value '{p}' (stretch, not_larger, not_smaller)"),
                    ))
                }
            };
            for (i, &d) in axes.iter().enumerate() {
                (full_sizes[d], full_scales[d]) = match keep {
                    None => (s[i] as usize, ratio(i)),
                    // ONNX rounds half up: floor(scale · in + 1/2).
                    Some(f) => ((f * sh[d] as f64 + 0.5).floor() as usize, f),
                };
            }
            let a = a.with("sizes", full_sizes).with("scales", full_scales);
            out(imp, c, "resize", a, &[x])
        }
    }
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

fn clip(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut x = input(imp, c, 0)?;
    let dtype = x.ty.dtype;
    let (lo, hi) = if imp.opset < 11 {
        let lo = c.f("min").map(|v| scalar(imp, c, dtype, v, "min")).transpose()?;
        let hi = c.f("max").map(|v| scalar(imp, c, dtype, v, "max")).transpose()?;
        (lo, hi)
    } else {
        (optional(imp, c, 1)?, optional(imp, c, 2)?)
    };
    match (lo, hi) {
        (None, None) => out(imp, c, "copy", Attrs::new(), &[x]),
        (Some(lo), None) => out(imp, c, "maximum", Attrs::new(), &[x, lo]),
        (None, Some(hi)) => out(imp, c, "minimum", Attrs::new(), &[x, hi]),
        (Some(lo), Some(hi)) => {
            x = step(imp, c, "maximum", Attrs::new(), &[x, lo], "low")?;
            out(imp, c, "minimum", Attrs::new(), &[x, hi])
        }
    }
}

fn shape(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let s =
        x.ty.shape
            .clone()
            .filter(|s| s.iter().all(|&d| d >= 0))
            .ok_or_else(|| c.unsupported("the input's shape is not known at import time"))?;
    let r = s.len() as i64;
    let clampi = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let (a, b) = (clampi(c.i("start").unwrap_or(0)), clampi(c.i("end").unwrap_or(r)));
    let part = s[a..b.max(a)].to_vec();
    Ok(imp.constant(c.out(), Tensor::from_i64s(&part)))
}

fn constant_of_shape(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let sv = input(imp, c, 0)?;
    let shape = const_ints(c, &sv, "input")?;
    let shape: Vec<usize> = shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| c.unsupported(format!("negative dim in shape {shape:?}"))))
        .collect::<Result<_>>()?;
    let fill = match c.attr("value").and_then(|a| a.t.as_ref()) {
        Some(t) => to_tensor(t, &format!("{}.value", c.onnx_name))?,
        None => Tensor::from_vec(&[1], vec![0f32]).map_err(|e| c.unsupported(e.to_string()))?,
    };
    if fill.size() != 1 {
        return Err(c.bad_attr("value", "must hold one element"));
    }
    // Folded at any size the allocation limit allows: the case declares
    // it as a one-line `fill` constant. Past the limit, a `full` node.
    let n = vigil_engine::tensor::limit::numel(&shape).map_err(|e| c.unsupported(e.to_string()))?;
    if vigil_engine::tensor::limit::check_alloc(fill.dtype(), n).is_err() {
        let v = fill.to_f64_vec().map_err(|e| c.unsupported(e.to_string()))?[0];
        let attrs = Attrs::new()
            .with("shape", shape.clone())
            .with("dtype", fill.dtype().name())
            .with("value", v);
        return out(imp, c, "full", attrs, &[]);
    }
    let t = fill
        .reshape(&[])
        .and_then(|one| one.broadcast_to(&shape))
        .and_then(|b| b.to_contiguous())
        .map_err(|e| c.unsupported(e.to_string()))?;
    Ok(imp.constant(c.out(), t))
}

fn constant(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let bad = |e: vigil_engine::Error| c.unsupported(e.to_string());
    let t = if let Some(t) = c.attr("value").and_then(|a| a.t.as_ref()) {
        to_tensor(t, &c.onnx_name)?
    } else if let Some(a) = c.attr("value_float") {
        Tensor::from_vec(&[], vec![a.f]).map_err(bad)?
    } else if let Some(a) = c.attr("value_floats") {
        Tensor::from_vec(&[a.floats.len()], a.floats.clone()).map_err(bad)?
    } else if let Some(a) = c.attr("value_int") {
        Tensor::from_vec(&[], vec![a.i]).map_err(bad)?
    } else if let Some(a) = c.attr("value_ints") {
        Tensor::from_i64s(&a.ints)
    } else {
        return Err(c.unsupported("only tensor, float(s) and int(s) values are supported"));
    };
    Ok(imp.constant(c.out(), t))
}

fn slice(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let (starts, ends, axes, steps) = if imp.opset < 10 {
        (
            c.ints("starts")
                .ok_or_else(|| c.bad_attr("starts", "is required"))?,
            c.ints("ends").ok_or_else(|| c.bad_attr("ends", "is required"))?,
            c.ints("axes"),
            None,
        )
    } else {
        let get = |k: usize, what: &str| -> Result<Option<Vec<i64>>> {
            match optional(imp, c, k)? {
                None => Ok(None),
                Some(v) => const_ints(c, &v, what).map(Some),
            }
        };
        (
            get(1, "starts")?.ok_or_else(|| c.unsupported("needs input 1 (starts)"))?,
            get(2, "ends")?.ok_or_else(|| c.unsupported("needs input 2 (ends)"))?,
            get(3, "axes")?,
            get(4, "steps")?,
        )
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(c.unsupported("starts, ends, axes and steps differ in length"));
    }
    let mut ranges = Vec::with_capacity(starts.len());
    for k in 0..starts.len() {
        if steps[k] == 0 {
            return Err(c.unsupported("a step of 0"));
        }
        ranges.push((axes[k], starts[k], ends[k], steps[k]));
    }
    let name = c.out().to_string();
    view(imp, c, x, &ranges, &name)
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

fn expand(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let x = input(imp, c, 0)?;
    let sv = input(imp, c, 1)?;
    let want = const_ints(c, &sv, "shape")?;
    let s =
        x.ty.static_shape()
            .ok_or_else(|| c.unsupported("the input's shape is not known at import time"))?;
    // ONNX Expand broadcasts both ways: the result is the broadcast shape.
    let n = s.len().max(want.len());
    let mut shape = Vec::with_capacity(n);
    for i in 0..n {
        let a = if i + s.len() >= n {
            s[i + s.len() - n] as i64
        } else {
            1
        };
        let b = if i + want.len() >= n {
            want[i + want.len() - n]
        } else {
            1
        };
        shape.push(match (a, b) {
            (a, b) if a == b => a,
            (1, b) => b,
            (a, 1) => a,
            _ => return Err(c.unsupported(format!("shape {s:?} does not broadcast to {want:?}"))),
        });
    }
    out(imp, c, "broadcast_to", Attrs::new().with("shape", shape), &[x])
}

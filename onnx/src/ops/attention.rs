//! The transformer ops: Attention, RotaryEmbedding, TensorScatter (the KV
//! cache update), SwiGLU, LinearAttention and FlexAttention (domain
//! `ai.onnx.preview`).

use vigil_engine::{Attrs, DType};

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, optional, out, out_n, scalar, step};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Attention", 23, attention),
    Op::new("RotaryEmbedding", 23, rotary_embedding),
    Op::new("TensorScatter", 24, tensor_scatter),
    Op::new("SwiGLU", 28, swiglu),
    Op::new("LinearAttention", 27, linear_attention),
    Op::new("FlexAttention", 1, flex_attention),
];

/// ONNX output `j` when the model names it.
fn named(c: &NodeCtx, j: usize) -> Option<String> {
    c.proto.output.get(j).filter(|o| !o.is_empty()).cloned()
}

/// The static shape of `x`, or a refusal naming `what`.
fn shape_of(c: &NodeCtx, x: &Value, what: &str) -> Result<Vec<i64>> {
    match &x.ty.shape {
        Some(s) if s.iter().all(|&d| d >= 0) => Ok(s.clone()),
        _ => Err(c.unsupported(format!(
            "the shape of {what} must be known at import time (3-D inputs are split into heads)"
        ))),
    }
}

/// A 3-D `[batch, len, heads·size]` input as `[batch, heads, len, size]`:
/// a reshape and a transpose, views when the layout allows.
fn split_heads(imp: &mut Importer, c: &NodeCtx, x: Value, heads: i64, what: &str) -> Result<Value> {
    let s = shape_of(c, &x, what)?;
    if heads <= 0 || s[2] % heads != 0 {
        return Err(c.unsupported(format!(
            "{what}'s hidden size {} is not a multiple of its {heads} heads",
            s[2]
        )));
    }
    let a = Attrs::new().with("shape", vec![s[0], s[1], heads, s[2] / heads]);
    let x = step(imp, c, "reshape", a, &[x], &format!("{what}_heads"))?;
    let a = Attrs::new().with("perm", vec![0i64, 2, 1, 3]);
    step(imp, c, "transpose", a, &[x], &format!("{what}_bhsd"))
}

/// Attention (opsets 23 to 25): one `attention` node on 4-D q, k and v.
/// 3-D inputs are split into heads (`q_num_heads`, `kv_num_heads`) before
/// it and y merged back after it. The optional inputs are passed as the
/// node's attrs say; present_key and present_value are bound when named
/// (without a past they are k and v), and qk_matmul_output asks the node
/// for the scores at `qk_matmul_output_mode`.
fn attention(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (mut q, mut k, mut v) = (input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?);
    let mask = optional(imp, c, 3)?;
    let past = match (optional(imp, c, 4)?, optional(imp, c, 5)?) {
        (Some(a), Some(b)) => Some((a, b)),
        (None, None) => None,
        _ => return Err(c.unsupported("past_key and past_value must be given together")),
    };
    let nonpad = optional(imp, c, 6)?;
    if nonpad.is_some() && past.is_some() {
        return Err(c.unsupported("nonpad_kv_seqlen cannot be combined with past_key and past_value"));
    }
    let rank =
        q.ty.rank()
            .ok_or_else(|| c.unsupported("the rank of Q must be known at import time"))?;
    let three_d = rank == 3;
    if three_d {
        let heads = |a: &str| c.i(a).ok_or_else(|| c.bad_attr(a, "is required for 3-D inputs"));
        let (hq, hk) = (heads("q_num_heads")?, heads("kv_num_heads")?);
        q = split_heads(imp, c, q, hq, "q")?;
        k = split_heads(imp, c, k, hk, "k")?;
        v = split_heads(imp, c, v, hk, "v")?;
    } else if rank != 4 {
        return Err(c.unsupported(format!("Q must be 3-D or 4-D, got rank {rank}")));
    }
    let mut a = Attrs::new()
        .with("is_causal", c.i("is_causal").unwrap_or(0) != 0)
        .with("softcap", c.f("softcap").unwrap_or(0.0))
        .with("left_window", c.i("left_window_size").unwrap_or(-1))
        .with("right_window", c.i("right_window_size").unwrap_or(-1))
        .with("mask", mask.is_some())
        .with("past", past.is_some())
        .with("nonpad", nonpad.is_some());
    if let Some(s) = c.f("scale") {
        a = a.with("scale", s);
    }
    if let Some(p) = c.i("softmax_precision") {
        let name = match p {
            1 => "f32",
            10 => "f16",
            11 => "f64",
            _ => return Err(c.bad_attr("softmax_precision", format!("{p} is not a Vigil float dtype"))),
        };
        a = a.with("softmax_precision", name);
    }
    let qk_name = named(c, 3);
    if qk_name.is_some() {
        let m = c.i("qk_matmul_output_mode").unwrap_or(0);
        if !(0..=3).contains(&m) {
            return Err(c.bad_attr("qk_matmul_output_mode", format!("must be 0 to 3, got {m}")));
        }
        a = a.with("qk_mode", m);
    }
    let y = c.out().to_string();
    let y4 = if three_d { format!("{y}.heads") } else { y.clone() };
    let present: Vec<String> = [(1, "present_key"), (2, "present_value")]
        .iter()
        .map(|&(j, tag)| named(c, j).unwrap_or_else(|| format!("{y}.{tag}")))
        .collect();
    let qk_out = qk_name.clone().unwrap_or_default();
    let mut names: Vec<&str> = vec![&y4];
    if past.is_some() {
        names.extend([present[0].as_str(), present[1].as_str()]);
    }
    if qk_name.is_some() {
        names.push(&qk_out);
    }
    let mut ins = vec![q, k.clone(), v.clone()];
    ins.extend(mask);
    if let Some((pk, pv)) = past.clone() {
        ins.extend([pk, pv]);
    }
    ins.extend(nonpad);
    let mut vals = imp.emit_n(c, "attention", a, &ins, &names)?;
    if let Some(name) = qk_name {
        let qk = vals
            .pop()
            .ok_or_else(|| c.unsupported("internal: the attention node has no qk output"))?;
        imp.bind(&name, qk);
    }
    let (pk, pv) = if past.is_some() {
        (vals[1].clone(), vals[2].clone())
    } else {
        (k, v)
    };
    for (j, val) in [(1, pk), (2, pv)] {
        if let Some(name) = named(c, j) {
            imp.bind(&name, val);
        }
    }
    let y4 = vals.swap_remove(0);
    if !three_d {
        return Ok(y4);
    }
    let s = shape_of(c, &y4, "Y")?;
    let a = Attrs::new().with("perm", vec![0i64, 2, 1, 3]);
    let t = step(imp, c, "transpose", a, &[y4], "bshd")?;
    out(
        imp,
        c,
        "reshape",
        Attrs::new().with("shape", vec![s[0], s[2], -1]),
        &[t],
    )
}

/// RotaryEmbedding (opset 23): `rotary_embedding` (`interleaved`,
/// `rotary_embedding_dim` as `rotary_dim`, `num_heads` kept).
fn rotary_embedding(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?];
    ins.extend(optional(imp, c, 3)?);
    let a = Attrs::new()
        .with("interleaved", c.i("interleaved").unwrap_or(0) != 0)
        .with("rotary_dim", c.i("rotary_embedding_dim").unwrap_or(0))
        .with("num_heads", c.i("num_heads").unwrap_or(0));
    out(imp, c, "rotary_embedding", a, &ins)
}

/// TensorScatter (opset 24): `tensor_scatter` (`axis` kept, `mode`
/// linear or circular); the in-place pass may run it on the cache itself.
fn tensor_scatter(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?];
    ins.extend(optional(imp, c, 2)?);
    let circular = match c.s("mode").as_deref() {
        None | Some("linear") => false,
        Some("circular") => true,
        Some(m) => return Err(c.bad_attr("mode", format!("must be linear or circular, got '{m}'"))),
    };
    let a = Attrs::new()
        .with("axis", c.i("axis").unwrap_or(-2))
        .with("circular", circular);
    out(imp, c, "tensor_scatter", a, &ins)
}

/// SwiGLU (opset 28): `a · sigmoid(alpha · a) · b` in `mul` and `sigmoid`
/// nodes (the `mul` by alpha only when it is not 1); A and B must have one
/// shape, as ONNX does not broadcast them.
fn swiglu(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (a, b) = (input(imp, c, 0)?, input(imp, c, 1)?);
    if let (Some(sa), Some(sb)) = (&a.ty.shape, &b.ty.shape) {
        let differ = sa.len() != sb.len() || sa.iter().zip(sb).any(|(&x, &y)| x >= 0 && y >= 0 && x != y);
        if differ {
            return Err(c.unsupported(format!(
                "A {} and B {} must have one shape (SwiGLU does not broadcast)",
                a.ty.shape_string(),
                b.ty.shape_string()
            )));
        }
    }
    let alpha = c.f("alpha").unwrap_or(1.0);
    let gate_in = if alpha == 1.0 {
        a.clone()
    } else {
        let k = scalar(imp, c, a.ty.dtype, alpha, "alpha")?;
        step(imp, c, "mul", Attrs::new(), &[a.clone(), k], "scaled")?
    };
    let gate = step(imp, c, "sigmoid", Attrs::new(), &[gate_in], "gate")?;
    let swish = step(imp, c, "mul", Attrs::new(), &[a, gate], "swish")?;
    out(imp, c, "mul", Attrs::new(), &[swish, b])
}

/// LinearAttention (opset 27): one `linear_attention` node (`q_num_heads`,
/// `kv_num_heads`, `scale` and `update_rule` kept; `chunk_size` is a
/// tuning hint without effect on the result). The optional inputs the node
/// gives are passed in order, attr `past` saying whether past_state is one;
/// decay must be given exactly for the gated rules and beta exactly for the
/// delta rules. Outputs output and present_state.
fn linear_attention(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let heads = |a: &str| match c.i(a) {
        Some(h) if h > 0 => Ok(h),
        Some(h) => Err(c.bad_attr(a, format!("must be positive, got {h}"))),
        None => Err(c.bad_attr(a, "is required")),
    };
    let (hq, hk) = (heads("q_num_heads")?, heads("kv_num_heads")?);
    if hq % hk != 0 {
        return Err(c.bad_attr(
            "q_num_heads",
            format!("{hq} is not a multiple of kv_num_heads {hk}"),
        ));
    }
    let rule = c.s("update_rule").unwrap_or_else(|| "gated_delta".into());
    let (gated, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        r => {
            return Err(c.bad_attr(
                "update_rule",
                format!("must be linear, gated, delta or gated_delta, got '{r}'"),
            ))
        }
    };
    let mut ins = vec![input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?];
    let past = optional(imp, c, 3)?;
    let has_past = past.is_some();
    ins.extend(past);
    for (k, what, wanted) in [(4, "decay", gated), (5, "beta", delta)] {
        match (optional(imp, c, k)?, wanted) {
            (Some(v), true) => ins.push(v),
            (None, false) => {}
            (Some(_), false) => {
                return Err(c.bad_attr("update_rule", format!("'{rule}' takes no {what} input")))
            }
            (None, true) => return Err(c.bad_attr("update_rule", format!("'{rule}' needs the {what} input"))),
        }
    }
    let a = Attrs::new()
        .with("q_num_heads", hq)
        .with("kv_num_heads", hk)
        .with("scale", c.f("scale").unwrap_or(0.0))
        .with("update_rule", rule.as_str())
        .with("past", has_past);
    out_n(imp, c, "linear_attention", a, &ins, 2)
}

/// The dtype ONNX's `softmax_precision` attr names (a TensorProto type).
fn precision_dtype(c: &NodeCtx, p: i64) -> Result<DType> {
    Ok(match p {
        1 => DType::F32,
        10 => DType::F16,
        11 => DType::F64,
        16 => DType::BF16,
        _ => return Err(c.bad_attr("softmax_precision", format!("{p} is not a float dtype"))),
    })
}

/// `x` as `dtype`: itself, or a `cast` step tagged `tag`.
fn cast_to(imp: &mut Importer, c: &NodeCtx, x: Value, dtype: DType, tag: &str) -> Result<Value> {
    if x.ty.dtype == dtype {
        return Ok(x);
    }
    step(
        imp,
        c,
        "cast",
        Attrs::new().with("dtype", dtype.name()),
        &[x],
        tag,
    )
}

/// The graph attr `attr` (score_mod or prob_mod) applied to `x`: its one
/// input bound to `x`, its nodes imported in place, its one output cast to
/// `dtype`.
fn apply_mod(imp: &mut Importer, c: &NodeCtx, attr: &str, x: Value, dtype: DType) -> Result<Value> {
    let Some(g) = c.attr(attr).and_then(|a| a.g.as_ref()) else {
        return Ok(x);
    };
    if g.input.len() != 1 || g.output.len() != 1 {
        return Err(c.bad_attr(
            attr,
            format!(
                "must have one input and one output, has {} and {}",
                g.input.len(),
                g.output.len()
            ),
        ));
    }
    let name = g.input[0].name.clone();
    let shadowed = imp.value(&name).cloned();
    imp.bind(&name, x);
    let outs = imp.inline(g)?;
    if let Some(v) = shadowed {
        imp.bind(&name, v);
    }
    let y = outs
        .into_iter()
        .next()
        .ok_or_else(|| c.bad_attr(attr, "gives no output"))?;
    cast_to(imp, c, y, dtype, &format!("{attr}_cast"))
}

/// FlexAttention (domain `ai.onnx.preview`, version 1), in engine ops:
/// Q and K each `mul` by `sqrt(scale)` (default scale `1/sqrt(E)`; the
/// square root in f32, then Q's dtype, as ONNX's reference rounds it),
/// `matmul` with K `transpose`d, `cast` to the softmax dtype
/// (`softmax_precision`, else f32 for f16 and bf16, else Q's), the
/// `score_mod` graph inlined, `softmax` over the keys, the `prob_mod` graph
/// inlined, `matmul` by V in that dtype and a `cast` back to V's. With
/// fewer key/value heads than query heads, K and V are repeated per group
/// (`reshape`, `broadcast_to`, `reshape`). Shapes must be known at import
/// time.
fn flex_attention(imp: &mut Importer, c: &NodeCtx) -> Result<Value> {
    let (q, mut k, mut v) = (input(imp, c, 0)?, input(imp, c, 1)?, input(imp, c, 2)?);
    let (sq, sk, sv) = (
        shape_of(c, &q, "Q")?,
        shape_of(c, &k, "K")?,
        shape_of(c, &v, "V")?,
    );
    if sq.len() != 4 || sk.len() != 4 || sv.len() != 4 {
        return Err(c.unsupported(format!("Q {sq:?}, K {sk:?} and V {sv:?} must be 4-D")));
    }
    let (b, hq, e) = (sq[0], sq[1], sq[3]);
    let (hk, s) = (sk[1], sk[2]);
    if sk[0] != b || sv[0] != b || sv[1] != hk || sv[2] != s || sk[3] != e {
        return Err(c.unsupported(format!(
            "Q {sq:?}, K {sk:?} and V {sv:?} do not fit (one batch; K and V one head count and length; Q and K one head size)"
        )));
    }
    if hk <= 0 || hq % hk != 0 {
        return Err(c.unsupported(format!("Q's {hq} heads are not a multiple of K's and V's {hk}")));
    }
    let dt = q.ty.dtype;
    if !dt.is_float() || k.ty.dtype != dt || v.ty.dtype != dt {
        return Err(c.unsupported(format!(
            "Q, K and V must be one float dtype, got {}, {} and {}",
            dt, k.ty.dtype, v.ty.dtype
        )));
    }
    let compute = match c.i("softmax_precision") {
        Some(p) => precision_dtype(c, p)?,
        None if matches!(dt, DType::F16 | DType::BF16) => DType::F32,
        None => dt,
    };
    if hq != hk {
        let g = hq / hk;
        let mut repeat = |x: Value, sh: &[i64], tag: &str| -> Result<Value> {
            let five = vec![sh[0], hk, 1, sh[2], sh[3]];
            let x = step(
                imp,
                c,
                "reshape",
                Attrs::new().with("shape", five),
                &[x],
                &format!("{tag}_5d"),
            )?;
            let wide = vec![sh[0], hk, g, sh[2], sh[3]];
            let x = step(
                imp,
                c,
                "broadcast_to",
                Attrs::new().with("shape", wide),
                &[x],
                &format!("{tag}_rep"),
            )?;
            let a = Attrs::new().with("shape", vec![sh[0], hq, sh[2], sh[3]]);
            step(imp, c, "reshape", a, &[x], &format!("{tag}_gqa"))
        };
        k = repeat(k, &sk, "k")?;
        v = repeat(v, &sv, "v")?;
    }
    let scale = match c.f("scale") {
        Some(x) => x,
        None => 1.0 / (e as f64).sqrt(),
    };
    let root = f64::from((scale as f32).sqrt());
    let r = scalar(imp, c, dt, root, "sqrt_scale")?;
    let qs = step(imp, c, "mul", Attrs::new(), &[q, r.clone()], "q_scaled")?;
    let ks = step(imp, c, "mul", Attrs::new(), &[k, r], "k_scaled")?;
    let kt = step(
        imp,
        c,
        "transpose",
        Attrs::new().with("perm", vec![0i64, 1, 3, 2]),
        &[ks],
        "k_t",
    )?;
    let scores = step(imp, c, "matmul", Attrs::new(), &[qs, kt], "scores")?;
    let scores = cast_to(imp, c, scores, compute, "scores_cast")?;
    let scores = apply_mod(imp, c, "score_mod", scores, compute)?;
    let probs = step(
        imp,
        c,
        "softmax",
        Attrs::new().with("axis", -1i64),
        &[scores],
        "probs",
    )?;
    let probs = apply_mod(imp, c, "prob_mod", probs, compute)?;
    let vd = v.ty.dtype;
    let vc = cast_to(imp, c, v, compute, "v_cast")?;
    if compute == vd {
        return out(imp, c, "matmul", Attrs::new(), &[probs, vc]);
    }
    let y = step(imp, c, "matmul", Attrs::new(), &[probs, vc], "y_wide")?;
    out(imp, c, "cast", Attrs::new().with("dtype", vd.name()), &[y])
}

//! The transformer ops: Attention, RotaryEmbedding, TensorScatter (the KV
//! cache update) and SwiGLU.

use vigil_engine::Attrs;

use crate::error::Result;
use crate::import::{Importer, NodeCtx, Value};

use super::emit::{input, optional, out, scalar, step};
use super::Op;

/// This family's ONNX ops: `(op_type, since_opset, translate)`.
pub(super) const OPS: &[Op] = &[
    Op::new("Attention", 23, attention),
    Op::new("RotaryEmbedding", 23, rotary_embedding),
    Op::new("TensorScatter", 24, tensor_scatter),
    Op::new("SwiGLU", 28, swiglu),
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

//! `attention(q, k, v, [mask], [past_key, past_value], [nonpad_kv_seqlen])`:
//! scaled dot-product attention on 4-D inputs (ONNX Attention, opsets 23
//! to 25). `q` is `[batch, q_heads, q_len, head]`, `k` `[batch, kv_heads,
//! kv_len, head]`, `v` `[batch, kv_heads, kv_len, v_head]`; `q_heads` is a
//! multiple of `kv_heads` (grouped-query attention: query head `h` reads
//! key/value head `h / (q_heads / kv_heads)`).
//!
//! The optional inputs are present as attrs `mask`, `past` and `nonpad`
//! say, in that order:
//!
//! - `mask`: bool (true attends) or of q's dtype (added to the scores),
//!   broadcast (right-aligned) into `[batch, q_heads, q_len, total]`; a
//!   last dim shorter than `total` is padded with false / -inf.
//! - `past_key`, `past_value`: the cache; `total = past + kv_len` and the
//!   keys and values attended are `concat(past, new)` along axis 2, which
//!   the op also returns (`present_key`, `present_value`).
//! - `nonpad_kv_seqlen` (i64 `[batch]`): keys at or after it are padding.
//!
//! Per query row `i` of batch `b` the bias is the mask plus -inf where
//! `is_causal` forbids (`j > i + offset`), where the window forbids
//! (`offset + i - j > left_window`, `j - offset - i > right_window`, each
//! when not -1) and where `nonpad` marks padding. `offset` is the past
//! length with a cache, `nonpad[b] - q_len` with `nonpad` alone, else 0.
//! Then `scores = scale · q·kᵀ` (default scale `1/sqrt(head)`), softcapped
//! (`c · tanh(s / c)` for `softcap` c > 0), plus the bias, softmax over the
//! keys (in `softmax_precision` when given), times v. A row whose bias is
//! -inf everywhere (no key attended), or whose scores are all -inf, gets
//! zero probabilities and a zero output row, as ONNX defines.
//!
//! Outputs: y `[batch, q_heads, q_len, v_head]`; with `past`, the present
//! key and value; with attr `qk_mode` (0 to 3), the scores `[batch,
//! q_heads, q_len, total]` after the product (0), the softcap (1), the bias
//! (2) or the softmax (3). f16 inputs compute in f32 (`widen`).

use std::sync::Arc;

use ndarray::{Array2, Array4, ArrayD, ArrayView2, Axis, Ix2, IxDyn};

use crate::dtype::{DType, Element, Float};
use crate::error::{attr_err, dtype_err, rank_err, shape_err, Result};
use crate::kernels::softmax::softmax_rows;
use crate::kernels::vmath::VMath;
use crate::ops::linalg::MatMulElem;
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "attention";

/// The `attention` op.
#[derive(Clone, Debug, PartialEq)]
pub struct Attention {
    pub is_causal: bool,
    /// `None`: `1 / sqrt(head)`.
    pub scale: Option<f64>,
    /// 0: no softcap.
    pub softcap: f64,
    /// Which scores to return as the last output, if any (0 to 3).
    pub qk_mode: Option<i64>,
    /// The dtype the softmax runs in, when not the inputs'.
    pub softmax_precision: Option<DType>,
    pub left_window: i64,
    pub right_window: i64,
    pub mask: bool,
    pub past: bool,
    pub nonpad: bool,
}

/// Where each optional input sits.
struct Slots {
    mask: Option<usize>,
    past: Option<usize>,
    nonpad: Option<usize>,
}

/// The sizes of one call.
#[derive(Clone, Copy, Debug)]
struct Dims {
    b: usize,
    hq: usize,
    hk: usize,
    s: usize,
    d: usize,
    l: usize,
    dv: usize,
    p: usize,
}

impl Dims {
    fn t(&self) -> usize {
        self.p + self.l
    }
}

impl Attention {
    fn slots(&self) -> Slots {
        let mut k = 3;
        let mut take = |on: bool, n: usize| {
            let at = on.then_some(k);
            if on {
                k += n;
            }
            at
        };
        Slots {
            mask: take(self.mask, 1),
            past: take(self.past, 2),
            nonpad: take(self.nonpad, 1),
        }
    }

    fn n_inputs(&self) -> usize {
        3 + self.mask as usize + 2 * self.past as usize + self.nonpad as usize
    }

    /// Dtype and rank checks shared by `infer` and `compute`.
    fn check_types(&self, ins: &[TypeInfo]) -> Result<()> {
        let sl = self.slots();
        let dt = ins[0].dtype;
        if !dt.is_float() {
            return dtype_err(format!("op '{NAME}': q must be a float tensor, got {dt}"));
        }
        let mut same = vec![(1, "k"), (2, "v")];
        if let Some(p) = sl.past {
            same.extend([(p, "past_key"), (p + 1, "past_value")]);
        }
        for &(i, what) in &same {
            if ins[i].dtype != dt {
                return dtype_err(format!(
                    "op '{NAME}': {what} (input {i}) is {}, q is {dt}",
                    ins[i].dtype
                ));
            }
        }
        if let Some(m) = sl.mask {
            let md = ins[m].dtype;
            if md != DType::Bool && md != dt {
                return dtype_err(format!(
                    "op '{NAME}': mask (input {m}) must be bool or q's dtype {dt}, got {md}"
                ));
            }
            if ins[m].rank().is_some_and(|r| r == 0 || r > 4) {
                return rank_err(format!(
                    "op '{NAME}': mask (input {m}) must have 1 to 4 dims, got {}",
                    ins[m].shape_string()
                ));
            }
        }
        if let Some(n) = sl.nonpad {
            if ins[n].dtype != DType::I64 {
                return dtype_err(format!(
                    "op '{NAME}': nonpad_kv_seqlen (input {n}) must be i64, got {}",
                    ins[n].dtype
                ));
            }
        }
        for &(i, what) in [(0, "q")].iter().chain(&same) {
            if ins[i].rank().is_some_and(|r| r != 4) {
                return rank_err(format!(
                    "op '{NAME}': {what} (input {i}) must be 4-D, got {}",
                    ins[i].shape_string()
                ));
            }
        }
        Ok(())
    }

    /// The sizes of concrete inputs, every shape checked against them.
    fn dims(&self, ins: &[Tensor]) -> Result<Dims> {
        let sl = self.slots();
        let (q, k, v) = (ins[0].shape(), ins[1].shape(), ins[2].shape());
        let mut d = Dims {
            b: q[0],
            hq: q[1],
            hk: k[1],
            s: q[2],
            d: q[3],
            l: k[2],
            dv: v[3],
            p: 0,
        };
        let bad = |what: &str| shape_err(format!("op '{NAME}': {what} (q {q:?}, k {k:?}, v {v:?})"));
        if k[0] != d.b || v[0] != d.b {
            return bad("q, k and v must have one batch size");
        }
        if k[3] != d.d {
            return bad("q and k must have one head size");
        }
        if v[1] != d.hk || v[2] != d.l {
            return bad("k and v must have the same heads and length");
        }
        if d.hk == 0 || !d.hq.is_multiple_of(d.hk) {
            return bad("q's heads must be a multiple of k's");
        }
        if let Some(p) = sl.past {
            let (pk, pv) = (ins[p].shape(), ins[p + 1].shape());
            d.p = pk[2];
            if pk != [d.b, d.hk, d.p, d.d] || pv != [d.b, d.hk, d.p, d.dv] {
                return shape_err(format!(
                    "op '{NAME}': past_key {pk:?} and past_value {pv:?} must be [{}, {}, past, {}] and [.., {}]",
                    d.b, d.hk, d.d, d.dv
                ));
            }
        }
        if let Some(m) = sl.mask {
            let ms = ins[m].shape();
            let tm = ms[ms.len() - 1];
            let lead = &ms[..ms.len() - 1];
            let want = [d.b, d.hq, d.s];
            let fits = lead
                .iter()
                .rev()
                .zip(want.iter().rev())
                .all(|(&a, &w)| a == 1 || a == w);
            if tm > d.t() || !fits {
                return shape_err(format!(
                    "op '{NAME}': mask {ms:?} does not broadcast into [{}, {}, {}, {}]",
                    d.b,
                    d.hq,
                    d.s,
                    d.t()
                ));
            }
        }
        if let Some(n) = sl.nonpad {
            if ins[n].shape() != [d.b] {
                return shape_err(format!(
                    "op '{NAME}': nonpad_kv_seqlen {:?} must be [{}]",
                    ins[n].shape(),
                    d.b
                ));
            }
        }
        Ok(d)
    }
}

/// The mask's values for one `(batch, head)`: `[q_len, mask_len]`.
enum MaskRows<'a, T> {
    None,
    Bool(ArrayView2<'a, bool>),
    Float(ArrayView2<'a, T>),
}

/// `a` with leading 1s up to rank 4, broadcast to `[b, h, s, last]` (a
/// copy: the mask is no larger than the scores).
fn broadcast4<E: Clone>(a: &ArrayD<E>, d: &Dims) -> Result<Array4<E>> {
    let mut shape = vec![1usize; 4 - a.ndim()];
    shape.extend(a.shape());
    let last = shape[3];
    let v = a
        .view()
        .into_shape_with_order(IxDyn(&shape))
        .map_err(|e| crate::error::Error::Op(format!("internal: attention mask reshape: {e}")))?;
    let v = v
        .broadcast(IxDyn(&[d.b, d.hq, d.s, last]))
        .ok_or_else(|| crate::error::Error::Shape(format!("op '{NAME}': mask does not broadcast")))?
        .to_owned();
    v.into_dimensionality::<ndarray::Ix4>()
        .map_err(|e| crate::error::Error::Op(format!("internal: attention mask: {e}")))
}

/// `x` rounded to `p` (through f64).
fn round_to(p: DType, x: f64) -> f64 {
    match p {
        DType::F16 => half::f16::from_f64(x).to_f64(),
        DType::F32 => x as f32 as f64,
        _ => x,
    }
}

/// Softmax of each row of `t` elements of `x` into `o`, in `prec` when it
/// is given: f64 computes there, a narrower dtype rounds the scores and the
/// probabilities through it.
fn softmax_in<T: Float + VMath>(prec: Option<DType>, x: &[T], o: &mut [T], t: usize) {
    match prec {
        Some(DType::F64) if T::DTYPE != DType::F64 => {
            let w: Vec<f64> = x.iter().map(|&v| Element::to_f64(v)).collect();
            let mut wo = vec![0.0f64; w.len()];
            softmax_rows(&w, &mut wo, t, false);
            o.iter_mut().zip(wo).for_each(|(o, v)| *o = T::from_f64(v));
        }
        Some(p) if p.size() < T::DTYPE.size() => {
            let r: Vec<T> = x
                .iter()
                .map(|v| <T as Element>::from_f64(round_to(p, Element::to_f64(*v))))
                .collect();
            softmax_rows(&r, o, t, false);
            o.iter_mut()
                .for_each(|v| *v = <T as Element>::from_f64(round_to(p, Element::to_f64(*v))));
        }
        _ => softmax_rows(x, o, t, false),
    }
}

/// The `[len, head]` matrix of batch `b`, head `h` of a 4-D array.
fn block<T>(a: &ArrayD<T>, b: usize, h: usize) -> Result<ArrayView2<'_, T>> {
    a.index_axis(Axis(0), b)
        .index_axis_move(Axis(0), h)
        .into_dimensionality::<Ix2>()
        .map_err(|e| crate::error::Error::Op(format!("internal: attention block: {e}")))
}

/// `t` as an owned C-order array of `T`.
fn arr<T: Element>(t: &Tensor) -> Result<ArrayD<T>> {
    t.to_array::<T>()
}

fn kernel<T: Float + VMath + MatMulElem>(
    op: &Attention,
    ins: &[Tensor],
    d: Dims,
    outs: &[Tensor],
) -> Result<()> {
    let sl = op.slots();
    let neg = T::neg_infinity();
    let zero = T::zero();
    let q = arr::<T>(&ins[0])?;
    let (k, v) = match sl.past {
        None => (arr::<T>(&ins[1])?, arr::<T>(&ins[2])?),
        Some(p) => {
            let cat = |past: &Tensor, new: &Tensor| -> Result<ArrayD<T>> {
                let (a, b) = (arr::<T>(past)?, arr::<T>(new)?);
                ndarray::concatenate(Axis(2), &[a.view(), b.view()])
                    .map(|c| c.as_standard_layout().into_owned())
                    .map_err(|e| crate::error::Error::Op(format!("internal: attention cache concat: {e}")))
            };
            (cat(&ins[p], &ins[1])?, cat(&ins[p + 1], &ins[2])?)
        }
    };
    if sl.past.is_some() {
        for (o, a) in outs[1..3].iter().zip([&k, &v]) {
            o.write_c_order(|o: &mut [T]| o.iter_mut().zip(a.iter()).for_each(|(o, &x)| *o = x))?;
        }
    }
    let nonpad: Option<Vec<i64>> = match sl.nonpad {
        Some(n) => Some(arr::<i64>(&ins[n])?.iter().copied().collect()),
        None => None,
    };
    let (mask_b, mask_f) = match sl.mask {
        Some(m) if ins[m].dtype() == DType::Bool => (Some(arr::<bool>(&ins[m])?), None),
        Some(m) => (None, Some(arr::<T>(&ins[m])?)),
        None => (None, None),
    };
    let mb = mask_b.as_ref().map(|m| broadcast4(m, &d)).transpose()?;
    let mf = mask_f.as_ref().map(|m| broadcast4(m, &d)).transpose()?;

    let t = d.t();
    let scale = T::from_f64(op.scale.unwrap_or(1.0 / (d.d as f64).sqrt()));
    let cap = T::from_f64(op.softcap);
    let group = d.hq / d.hk;
    let mut y = vec![zero; d.b * d.hq * d.s * d.dv];
    let mut qk = vec![
        zero;
        if op.qk_mode.is_some() {
            d.b * d.hq * d.s * t
        } else {
            0
        }
    ];
    let mut scores = Array2::<T>::zeros((d.s, t));
    let mut probs = vec![zero; d.s * t];
    let mut bias = vec![zero; t];
    let mut dead = vec![false; d.s];
    let mut yb = Array2::<T>::zeros((d.s, d.dv));
    for b in 0..d.b {
        let offset: i64 = match (&nonpad, sl.past) {
            (_, Some(_)) => d.p as i64,
            (Some(n), None) => n[b] - d.s as i64,
            (None, None) => 0,
        };
        for h in 0..d.hq {
            let kh = h / group;
            let (qb, kb, vb) = (block(&q, b, h)?, block(&k, b, kh)?, block(&v, b, kh)?);
            T::gemm(&qb, &kb.t(), &mut scores.view_mut());
            let mask = match (&mb, &mf) {
                (Some(m), _) => MaskRows::Bool(m.index_axis(Axis(0), b).index_axis_move(Axis(0), h)),
                (_, Some(m)) => MaskRows::Float(m.index_axis(Axis(0), b).index_axis_move(Axis(0), h)),
                _ => MaskRows::None,
            };
            let at = (b * d.hq + h) * d.s * t;
            let sc = scores.as_slice_mut().unwrap_or_default();
            for (i, row) in sc.chunks_mut(t.max(1)).enumerate().take(d.s) {
                let keep = |mode: i64, row: &[T], qk: &mut [T]| {
                    if op.qk_mode == Some(mode) {
                        qk[at + i * t..at + (i + 1) * t].copy_from_slice(row);
                    }
                };
                row.iter_mut().for_each(|x| *x *= scale);
                keep(0, row, &mut qk);
                if op.softcap > 0.0 {
                    row.iter_mut().for_each(|x| *x = cap * (*x / cap).tanh());
                }
                keep(1, row, &mut qk);
                let pos = i as i64 + offset;
                for (j, bj) in bias.iter_mut().enumerate() {
                    *bj = match &mask {
                        MaskRows::None => zero,
                        MaskRows::Bool(m) if j < m.ncols() && m[[i, j]] => zero,
                        MaskRows::Bool(_) => neg,
                        MaskRows::Float(m) if j < m.ncols() => m[[i, j]],
                        MaskRows::Float(_) => neg,
                    };
                    let j = j as i64;
                    let forbid = (op.is_causal && j > pos)
                        || (op.left_window >= 0 && pos - j > op.left_window)
                        || (op.right_window >= 0 && j - pos > op.right_window)
                        || nonpad.as_ref().is_some_and(|n| j >= n[b]);
                    if forbid {
                        *bj += neg;
                    }
                }
                let mut top = neg;
                for (x, &bj) in row.iter_mut().zip(&bias) {
                    *x += bj;
                    if *x > top {
                        top = *x;
                    }
                }
                dead[i] = bias.iter().all(|&bj| bj == neg) || top == neg;
                keep(2, row, &mut qk);
            }
            softmax_in(op.softmax_precision, sc, &mut probs, t);
            for (i, pr) in probs.chunks_mut(t.max(1)).enumerate().take(d.s) {
                if dead[i] {
                    pr.fill(zero);
                }
                if op.qk_mode == Some(3) {
                    qk[at + i * t..at + (i + 1) * t].copy_from_slice(pr);
                }
            }
            let pv = ArrayView2::from_shape((d.s, t), &probs[..])
                .map_err(|e| crate::error::Error::Op(format!("internal: attention probs: {e}")))?;
            T::gemm(&pv, &vb, &mut yb.view_mut());
            let yat = (b * d.hq + h) * d.s * d.dv;
            y[yat..yat + d.s * d.dv].copy_from_slice(yb.as_slice().unwrap_or_default());
        }
    }
    outs[0].write_c_order(|o: &mut [T]| o.copy_from_slice(&y))?;
    if op.qk_mode.is_some() {
        outs[outs.len() - 1].write_c_order(|o: &mut [T]| o.copy_from_slice(&qk))?;
    }
    Ok(())
}

/// Dim `i` of a shape that may be unknown (-1 when it is).
fn dim(ti: &TypeInfo, i: usize) -> i64 {
    ti.shape.as_ref().and_then(|s| s.get(i).copied()).unwrap_or(-1)
}

impl Op for Attention {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity::exactly(self.n_inputs())
    }
    fn num_outputs(&self) -> usize {
        1 + 2 * self.past as usize + self.qk_mode.is_some() as usize
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check_types(inputs)?;
        let sl = self.slots();
        let (q, k, v) = (&inputs[0], &inputs[1], &inputs[2]);
        let (b, hq, s, hk, dh, dv) = (dim(q, 0), dim(q, 1), dim(q, 2), dim(k, 1), dim(k, 3), dim(v, 3));
        let t = match sl.past {
            None => dim(k, 2),
            Some(p) => match (dim(&inputs[p], 2), dim(k, 2)) {
                (a, c) if a >= 0 && c >= 0 => a + c,
                _ => -1,
            },
        };
        let ti = |shape: Vec<i64>| TypeInfo::new(q.dtype, Some(shape));
        let mut out = vec![ti(vec![b, hq, s, dv])];
        if sl.past.is_some() {
            out.push(ti(vec![b, hk, t, dh]));
            out.push(ti(vec![b, hk, t, dv]));
        }
        if self.qk_mode.is_some() {
            out.push(ti(vec![b, hq, s, t]));
        }
        Ok(out)
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check_types(&tys)?;
        let d = self.dims(inputs)?;
        let dt = inputs[0].dtype();
        let mut outs = vec![ctx.output(0, dt, &[d.b, d.hq, d.s, d.dv])?];
        if self.past {
            outs.push(ctx.output(1, dt, &[d.b, d.hk, d.t(), d.d])?);
            outs.push(ctx.output(2, dt, &[d.b, d.hk, d.t(), d.dv])?);
        }
        if self.qk_mode.is_some() {
            outs.push(ctx.output(outs.len(), dt, &[d.b, d.hq, d.s, d.t()])?);
        }
        match dt {
            DType::F32 => kernel::<f32>(self, inputs, d, &outs)?,
            DType::F64 => kernel::<f64>(self, inputs, d, &outs)?,
            _ => return dtype_err(format!("op '{NAME}' takes f16, f32 or f64 inputs, got {dt}")),
        }
        Ok(outs)
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new()
            .with("is_causal", self.is_causal)
            .with("softcap", self.softcap)
            .with("left_window", self.left_window)
            .with("right_window", self.right_window)
            .with("mask", self.mask)
            .with("past", self.past)
            .with("nonpad", self.nonpad);
        if let Some(s) = self.scale {
            a = a.with("scale", s);
        }
        if let Some(m) = self.qk_mode {
            a = a.with("qk_mode", m);
        }
        if let Some(p) = self.softmax_precision {
            a = a.with("softmax_precision", p.name());
        }
        a
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(
            NAME,
            &[
                "is_causal",
                "scale",
                "softcap",
                "qk_mode",
                "softmax_precision",
                "left_window",
                "right_window",
                "mask",
                "past",
                "nonpad",
            ],
        )?;
        let qk_mode = a.i64("qk_mode")?;
        if qk_mode.is_some_and(|m| !(0..=3).contains(&m)) {
            return attr_err(format!(
                "op '{NAME}': attr 'qk_mode' must be 0 to 3, got {qk_mode:?}"
            ));
        }
        let softmax_precision = a.dtype("softmax_precision")?;
        if softmax_precision.is_some_and(|p| !p.is_float()) {
            return attr_err(format!(
                "op '{NAME}': attr 'softmax_precision' must be a float dtype, got {softmax_precision:?}"
            ));
        }
        let window = |k: &str| -> Result<i64> {
            let w = a.i64(k)?.unwrap_or(-1);
            if w < -1 {
                return attr_err(format!(
                    "op '{NAME}': attr '{k}' must be -1 or at least 0, got {w}"
                ));
            }
            Ok(w)
        };
        Ok(Arc::new(Attention {
            is_causal: a.bool("is_causal")?.unwrap_or(false),
            scale: a.f64("scale")?,
            softcap: a.f64("softcap")?.unwrap_or(0.0),
            qk_mode,
            softmax_precision,
            left_window: window("left_window")?,
            right_window: window("right_window")?,
            mask: a.bool("mask")?.unwrap_or(false),
            past: a.bool("past")?.unwrap_or(false),
            nonpad: a.bool("nonpad")?.unwrap_or(false),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests;

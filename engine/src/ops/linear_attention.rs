//! `linear_attention(q, k, v, [past_state], [decay], [beta])` (ONNX
//! LinearAttention, opset 27): causal linear attention as a recurrence over
//! the tokens. q is `[batch, len, q_heads·dk]`, k `[batch, len,
//! kv_heads·dk]`, v `[batch, len, kv_heads·dv]`; each key/value head keeps
//! a state `S` of `[dk, dv]` (zero, or `past_state` `[batch, kv_heads, dk,
//! dv]`). Per token t, by attr `update_rule`:
//!
//! - `linear`: `S += k_t ⊗ v_t`
//! - `gated`: `S = exp(g_t)·S + k_t ⊗ v_t`
//! - `delta`: `S += k_t ⊗ β_t·(v_t − Sᵀk_t)`
//! - `gated_delta`: `S = exp(g_t)·S`, then as `delta`
//!
//! and `o_t = scale · q_tᵀ S` for each query head, query head `h` reading
//! key/value head `h / (q_heads / kv_heads)`. `decay` (g, log-space) is
//! `[batch, len, kv_heads]` or `[batch, len, kv_heads·dk]` and is an input
//! exactly for the gated rules; `beta` is `[batch, len, kv_heads]` or
//! `[batch, len, 1]` and is an input exactly for the delta rules. attr
//! `past` says whether `past_state` is given. `scale` 0 means `1/sqrt(dk)`.
//!
//! Outputs: `[batch, len, q_heads·dv]` of q's dtype, and the final state
//! of past_state's dtype (q's without one). The recurrence runs in f64 for
//! f64 q, else in f32 (f16 and bf16 inputs widen, each output rounds once).

use std::sync::Arc;

use crate::dtype::{DType, Float};
use crate::error::{attr_err, dtype_err, rank_err, shape_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "linear_attention";

/// How the state is updated per token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateRule {
    Linear,
    Gated,
    Delta,
    GatedDelta,
}

impl UpdateRule {
    pub fn parse(s: &str) -> Option<UpdateRule> {
        Some(match s {
            "linear" => UpdateRule::Linear,
            "gated" => UpdateRule::Gated,
            "delta" => UpdateRule::Delta,
            "gated_delta" => UpdateRule::GatedDelta,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            UpdateRule::Linear => "linear",
            UpdateRule::Gated => "gated",
            UpdateRule::Delta => "delta",
            UpdateRule::GatedDelta => "gated_delta",
        }
    }
    /// Whether the rule decays the state (takes `decay`).
    pub fn gated(self) -> bool {
        matches!(self, UpdateRule::Gated | UpdateRule::GatedDelta)
    }
    /// Whether the rule corrects by the retrieved value (takes `beta`).
    pub fn delta(self) -> bool {
        matches!(self, UpdateRule::Delta | UpdateRule::GatedDelta)
    }
}

/// The `linear_attention` op.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearAttention {
    pub q_heads: usize,
    pub kv_heads: usize,
    /// 0: `1 / sqrt(dk)`.
    pub scale: f64,
    pub rule: UpdateRule,
    /// Whether input 3 is `past_state`.
    pub past: bool,
}

/// The sizes of one call.
#[derive(Clone, Copy, Debug)]
struct Dims {
    b: usize,
    t: usize,
    dk: usize,
    dv: usize,
    /// decay holds one value per key dim (else one per head).
    decay_per_dim: bool,
    /// beta holds one value per head (else one for all).
    beta_per_head: bool,
}

impl LinearAttention {
    fn n_inputs(&self) -> usize {
        3 + self.past as usize + self.rule.gated() as usize + self.rule.delta() as usize
    }
    /// Where past_state, decay and beta sit.
    fn slots(&self) -> (Option<usize>, Option<usize>, Option<usize>) {
        let past = self.past.then_some(3);
        let decay = self.rule.gated().then_some(3 + self.past as usize);
        let beta = self
            .rule
            .delta()
            .then_some(3 + self.past as usize + self.rule.gated() as usize);
        (past, decay, beta)
    }

    fn check_types(&self, ins: &[TypeInfo]) -> Result<()> {
        if ins.len() != self.n_inputs() {
            return crate::error::arity_err(format!(
                "op '{NAME}' with update_rule '{}' and past {} takes {} inputs, got {}",
                self.rule.name(),
                self.past,
                self.n_inputs(),
                ins.len()
            ));
        }
        let dt = ins[0].dtype;
        if !dt.is_float() {
            return dtype_err(format!("op '{NAME}': query must be a float tensor, got {dt}"));
        }
        let (past, decay, _) = self.slots();
        for (i, t) in ins.iter().enumerate() {
            let what = match i {
                0 => "query",
                1 => "key",
                2 => "value",
                _ if Some(i) == past => "past_state",
                _ if Some(i) == decay => "decay",
                _ => "beta",
            };
            if Some(i) == past {
                if !t.dtype.is_float() {
                    return dtype_err(format!(
                        "op '{NAME}': past_state must be a float tensor, got {}",
                        t.dtype
                    ));
                }
            } else if t.dtype != dt {
                return dtype_err(format!(
                    "op '{NAME}': {what} (input {i}) is {}, query is {dt}",
                    t.dtype
                ));
            }
            let want = if Some(i) == past { 4 } else { 3 };
            if t.rank().is_some_and(|r| r != want) {
                return rank_err(format!(
                    "op '{NAME}': {what} must be {want}-D, got {}",
                    t.shape_string()
                ));
            }
        }
        Ok(())
    }

    fn dims(&self, ins: &[Tensor]) -> Result<Dims> {
        let (q, k, v) = (ins[0].shape(), ins[1].shape(), ins[2].shape());
        let (b, t) = (q[0], q[1]);
        let (hq, hk) = (self.q_heads, self.kv_heads);
        if !q[2].is_multiple_of(hq) || !v[2].is_multiple_of(hk) {
            return shape_err(format!(
                "op '{NAME}': query's last dim {} must be a multiple of q_num_heads {hq}, value's {} of kv_num_heads {hk}",
                q[2], v[2]
            ));
        }
        let (dk, dv) = (q[2] / hq, v[2] / hk);
        if k != [b, t, hk * dk] || v[..2] != [b, t] {
            return shape_err(format!(
                "op '{NAME}': query {q:?}, key {k:?} and value {v:?} do not fit: key must be [{b}, {t}, {}] and value [{b}, {t}, {hk}·dv]",
                hk * dk
            ));
        }
        let (past, decay, beta) = self.slots();
        if let Some(p) = past {
            let s = ins[p].shape();
            if s != [b, hk, dk, dv] {
                return shape_err(format!(
                    "op '{NAME}': past_state {s:?} must be [{b}, {hk}, {dk}, {dv}]"
                ));
            }
        }
        let mut decay_per_dim = false;
        if let Some(g) = decay {
            let s = ins[g].shape();
            if s[..2] != [b, t] || (s[2] != hk && s[2] != hk * dk) {
                return shape_err(format!(
                    "op '{NAME}': decay {s:?} must be [{b}, {t}, {hk}] or [{b}, {t}, {}]",
                    hk * dk
                ));
            }
            decay_per_dim = s[2] == hk * dk && s[2] != hk;
        }
        let mut beta_per_head = false;
        if let Some(be) = beta {
            let s = ins[be].shape();
            if s[..2] != [b, t] || (s[2] != hk && s[2] != 1) {
                return shape_err(format!(
                    "op '{NAME}': beta {s:?} must be [{b}, {t}, {hk}] or [{b}, {t}, 1]"
                ));
            }
            beta_per_head = s[2] == hk && hk != 1;
        }
        Ok(Dims {
            b,
            t,
            dk,
            dv,
            decay_per_dim,
            beta_per_head,
        })
    }
}

/// The elements of `x` in C order, as `C`.
fn flat<C: Float>(x: &Tensor) -> Result<Vec<C>> {
    let x = if x.dtype() == C::DTYPE {
        x.clone()
    } else {
        x.cast(C::DTYPE)?
    };
    Ok(x.to_array::<C>()?.iter().copied().collect())
}

/// The output and the final state, in `C`.
fn kernel<C: Float>(op: &LinearAttention, ins: &[Tensor], d: Dims) -> Result<(Vec<C>, Vec<C>)> {
    let (q, k, v) = (flat::<C>(&ins[0])?, flat::<C>(&ins[1])?, flat::<C>(&ins[2])?);
    let (past, decay, beta) = op.slots();
    let (hq, hk, dk, dv) = (op.q_heads, op.kv_heads, d.dk, d.dv);
    let group = hq / hk;
    let mut state = match past {
        Some(p) => flat::<C>(&ins[p])?,
        None => vec![C::zero(); d.b * hk * dk * dv],
    };
    let g = decay.map(|i| flat::<C>(&ins[i])).transpose()?;
    let be = beta.map(|i| flat::<C>(&ins[i])).transpose()?;
    let scale = C::from_f64(if op.scale == 0.0 {
        1.0 / (dk as f64).sqrt()
    } else {
        op.scale
    });
    let mut out = vec![C::zero(); d.b * d.t * hq * dv];
    let mut vt = vec![C::zero(); dv];
    for b in 0..d.b {
        for h in 0..hk {
            let s = &mut state[(b * hk + h) * dk * dv..][..dk * dv];
            for t in 0..d.t {
                let bt = b * d.t + t;
                let kt = &k[(bt * hk + h) * dk..][..dk];
                vt.copy_from_slice(&v[(bt * hk + h) * dv..][..dv]);
                if let Some(g) = &g {
                    for (i, row) in s.chunks_mut(dv.max(1)).enumerate() {
                        let gi = if d.decay_per_dim {
                            g[(bt * hk + h) * dk + i]
                        } else {
                            g[bt * hk + h]
                        };
                        let e = gi.exp();
                        row.iter_mut().for_each(|x| *x *= e);
                    }
                }
                if let Some(be) = &be {
                    let bv = if d.beta_per_head { be[bt * hk + h] } else { be[bt] };
                    for (m, x) in vt.iter_mut().enumerate() {
                        let got = (0..dk).fold(C::zero(), |acc, i| acc + s[i * dv + m] * kt[i]);
                        *x = bv * (*x - got);
                    }
                }
                for (i, row) in s.chunks_mut(dv.max(1)).enumerate() {
                    for (x, &y) in row.iter_mut().zip(&vt) {
                        *x += kt[i] * y;
                    }
                }
                for j in h * group..(h + 1) * group {
                    let qt = &q[(bt * hq + j) * dk..][..dk];
                    let o = &mut out[(bt * hq + j) * dv..][..dv];
                    for (m, x) in o.iter_mut().enumerate() {
                        let dot = (0..dk).fold(C::zero(), |acc, i| acc + qt[i] * s[i * dv + m]);
                        *x = scale * dot;
                    }
                }
            }
        }
    }
    Ok((out, state))
}

/// `vals` (in `C`) as a new output `i` of `dtype` and `shape`.
fn emit<C: Float>(ctx: &mut OpCtx, i: usize, dtype: DType, shape: &[usize], vals: Vec<C>) -> Result<Tensor> {
    let wide = Tensor::from_vec(shape, vals)?;
    let o = ctx.output(i, dtype, shape)?;
    wide.cast_into(&o)?;
    Ok(o)
}

impl LinearAttention {
    fn run<C: Float>(&self, inputs: &[Tensor], d: Dims, ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let (out, state) = kernel::<C>(self, inputs, d)?;
        let state_dtype = match self.slots().0 {
            Some(p) => inputs[p].dtype(),
            None => inputs[0].dtype(),
        };
        Ok(vec![
            emit(ctx, 0, inputs[0].dtype(), &[d.b, d.t, self.q_heads * d.dv], out)?,
            emit(ctx, 1, state_dtype, &[d.b, self.kv_heads, d.dk, d.dv], state)?,
        ])
    }
}

impl Op for LinearAttention {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity { min: 3, max: Some(6) }
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check_types(inputs)?;
        let dim = |x: &TypeInfo, i: usize| x.shape.as_ref().map_or(-1, |s| s[i]);
        let per = |n: i64, h: usize| if n < 0 { -1 } else { n / h as i64 };
        let (q, v) = (&inputs[0], &inputs[2]);
        let (b, t) = (dim(q, 0), dim(q, 1));
        let (dk, dv) = (per(dim(q, 2), self.q_heads), per(dim(v, 2), self.kv_heads));
        let qv = if dv < 0 { -1 } else { dv * self.q_heads as i64 };
        let state_dtype = match self.slots().0 {
            Some(p) => inputs[p].dtype,
            None => q.dtype,
        };
        Ok(vec![
            TypeInfo::new(q.dtype, Some(vec![b, t, qv])),
            TypeInfo::new(state_dtype, Some(vec![b, self.kv_heads as i64, dk, dv])),
        ])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check_types(&tys)?;
        let d = self.dims(inputs)?;
        match inputs[0].dtype() {
            DType::F64 => self.run::<f64>(inputs, d, ctx),
            DType::F32 | DType::F16 | DType::BF16 => self.run::<f32>(inputs, d, ctx),
            dt => dtype_err(format!("op '{NAME}' takes f16, bf16, f32 or f64, got {dt}")),
        }
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("q_num_heads", self.q_heads)
            .with("kv_num_heads", self.kv_heads)
            .with("scale", self.scale)
            .with("update_rule", self.rule.name())
            .with("past", self.past)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(NAME, &["q_num_heads", "kv_num_heads", "scale", "update_rule", "past"])?;
        let heads = |key: &str| -> Result<usize> {
            match a.i64(key)? {
                Some(v) if v > 0 => Ok(v as usize),
                v => attr_err(format!("op '{NAME}': attr '{key}' must be a positive count, got {v:?}")),
            }
        };
        let (q_heads, kv_heads) = (heads("q_num_heads")?, heads("kv_num_heads")?);
        if !q_heads.is_multiple_of(kv_heads) {
            return attr_err(format!(
                "op '{NAME}': q_num_heads {q_heads} must be a multiple of kv_num_heads {kv_heads}"
            ));
        }
        let rule = a.str("update_rule")?.unwrap_or("gated_delta");
        let rule = UpdateRule::parse(rule).map_or_else(
            || {
                attr_err(format!(
                    "op '{NAME}': attr 'update_rule' must be linear, gated, delta or gated_delta, got '{rule}'"
                ))
            },
            Ok,
        )?;
        Ok(Arc::new(LinearAttention {
            q_heads,
            kv_heads,
            scale: a.f64("scale")?.unwrap_or(0.0),
            rule,
            past: a.bool("past")?.unwrap_or(false),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests;

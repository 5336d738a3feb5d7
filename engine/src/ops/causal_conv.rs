//! `causal_conv_with_state(x, weight, [bias], [past_state])` (ONNX
//! CausalConvWithState, opset 27): a causal depthwise 1-D convolution that
//! carries its left context. x is `[batch, channels, len]`, weight
//! `[channels, 1, k]`, bias `[channels]`, past_state `[batch, channels,
//! k−1]` (zeros without it); attrs `bias` and `past` say which optional
//! inputs are given, in that order. With `p = concat(past_state, x)` along
//! the last axis:
//!
//! `y[b, c, t] = bias[c] + Σ_j weight[c, 0, j] · p[b, c, t + j]`
//!
//! then `y · sigmoid(y)` for attr `activation` `silu` (or its alias
//! `swish`), unchanged for `none`. Outputs: y `[batch, channels, len]` and
//! the present state, the last k−1 positions of p. f16 and bf16 compute in
//! f32; the convolution rounds to x's dtype before the activation, as ONNX's
//! reference does.

use std::sync::Arc;

use crate::dtype::{DType, Float};
use crate::error::{attr_err, dtype_err, rank_err, shape_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "causal_conv_with_state";

/// The `causal_conv_with_state` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CausalConv {
    /// `y · sigmoid(y)` after the convolution.
    pub silu: bool,
    /// Whether a bias input follows the weight.
    pub bias: bool,
    /// Whether a past_state input is last.
    pub past: bool,
}

/// The sizes of one call.
#[derive(Clone, Copy, Debug)]
struct Dims {
    b: usize,
    c: usize,
    l: usize,
    k: usize,
}

impl CausalConv {
    fn n_inputs(&self) -> usize {
        2 + self.bias as usize + self.past as usize
    }

    fn check_types(&self, ins: &[TypeInfo]) -> Result<()> {
        if ins.len() != self.n_inputs() {
            return crate::error::arity_err(format!(
                "op '{NAME}' with bias {} and past {} takes {} inputs, got {}",
                self.bias,
                self.past,
                self.n_inputs(),
                ins.len()
            ));
        }
        let dt = ins[0].dtype;
        if !dt.is_float() {
            return dtype_err(format!("op '{NAME}': input must be a float tensor, got {dt}"));
        }
        let mut what = vec![("input", 3), ("weight", 3)];
        if self.bias {
            what.push(("bias", 1));
        }
        if self.past {
            what.push(("past_state", 3));
        }
        for (i, (t, (name, rank))) in ins.iter().zip(what).enumerate() {
            if t.dtype != dt {
                return dtype_err(format!(
                    "op '{NAME}': {name} (input {i}) is {}, input is {dt}",
                    t.dtype
                ));
            }
            if t.rank().is_some_and(|r| r != rank) {
                return rank_err(format!(
                    "op '{NAME}': {name} must be {rank}-D, got {}",
                    t.shape_string()
                ));
            }
        }
        Ok(())
    }

    fn dims(&self, ins: &[Tensor]) -> Result<Dims> {
        let (x, w) = (ins[0].shape(), ins[1].shape());
        let (b, c, l) = (x[0], x[1], x[2]);
        let k = w[2];
        if w[..2] != [c, 1] || k == 0 {
            return shape_err(format!(
                "op '{NAME}': weight {w:?} must be [{c}, 1, k] with k at least 1 (input is {x:?})"
            ));
        }
        if self.bias && ins[2].shape() != [c] {
            return shape_err(format!("op '{NAME}': bias {:?} must be [{c}]", ins[2].shape()));
        }
        if self.past {
            let p = ins[self.n_inputs() - 1].shape();
            if p != [b, c, k - 1] {
                return shape_err(format!(
                    "op '{NAME}': past_state {p:?} must be [{b}, {c}, {}]",
                    k - 1
                ));
            }
        }
        Ok(Dims { b, c, l, k })
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

/// The convolution (before the activation) and the present state, in `C`.
fn kernel<C: Float>(op: &CausalConv, ins: &[Tensor], d: Dims) -> Result<(Vec<C>, Vec<C>)> {
    let (x, w) = (flat::<C>(&ins[0])?, flat::<C>(&ins[1])?);
    let bias = if op.bias { Some(flat::<C>(&ins[2])?) } else { None };
    let past = if op.past {
        Some(flat::<C>(&ins[op.n_inputs() - 1])?)
    } else {
        None
    };
    let (l, k, ctx) = (d.l, d.k, d.k - 1);
    let mut y = vec![C::zero(); d.b * d.c * l];
    let mut state = vec![C::zero(); d.b * d.c * ctx];
    let mut p = vec![C::zero(); ctx + l];
    for bc in 0..d.b * d.c {
        let c = bc % d.c;
        match &past {
            Some(ps) => p[..ctx].copy_from_slice(&ps[bc * ctx..][..ctx]),
            None => p[..ctx].fill(C::zero()),
        }
        p[ctx..].copy_from_slice(&x[bc * l..][..l]);
        let wc = &w[c * k..][..k];
        let b0 = bias.as_ref().map_or(C::zero(), |b| b[c]);
        for (t, yt) in y[bc * l..][..l].iter_mut().enumerate() {
            *yt = b0
                + wc.iter()
                    .zip(&p[t..t + k])
                    .fold(C::zero(), |a, (&wj, &pj)| a + wj * pj);
        }
        state[bc * ctx..][..ctx].copy_from_slice(&p[l..]);
    }
    Ok((y, state))
}

impl CausalConv {
    fn run<C: Float>(&self, inputs: &[Tensor], d: Dims, ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        let dt = inputs[0].dtype();
        let (y, state) = kernel::<C>(self, inputs, d)?;
        let y_shape = [d.b, d.c, d.l];
        let out = ctx.output(0, dt, &y_shape)?;
        Tensor::from_vec(&y_shape, y)?.cast_into(&out)?;
        if self.silu {
            // The convolution as x's dtype holds it, then the activation.
            let y: Vec<C> = flat::<C>(&out)?;
            let act: Vec<C> = y.into_iter().map(|v| v / (C::one() + (-v).exp())).collect();
            Tensor::from_vec(&y_shape, act)?.cast_into(&out)?;
        }
        let s_shape = [d.b, d.c, d.k - 1];
        let present = ctx.output(1, dt, &s_shape)?;
        Tensor::from_vec(&s_shape, state)?.cast_into(&present)?;
        Ok(vec![out, present])
    }
}

impl Op for CausalConv {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(4) }
    }
    fn num_outputs(&self) -> usize {
        2
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check_types(inputs)?;
        let dim = |x: &TypeInfo, i: usize| x.shape.as_ref().map_or(-1, |s| s[i]);
        let (x, w) = (&inputs[0], &inputs[1]);
        let k = dim(w, 2);
        let ctx = if k > 0 { k - 1 } else { -1 };
        Ok(vec![
            TypeInfo::new(x.dtype, Some(vec![dim(x, 0), dim(x, 1), dim(x, 2)])),
            TypeInfo::new(x.dtype, Some(vec![dim(x, 0), dim(x, 1), ctx])),
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
            .with("activation", if self.silu { "silu" } else { "none" })
            .with("bias", self.bias)
            .with("past", self.past)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(NAME, &["activation", "bias", "past"])?;
        let silu = match a.str("activation")?.unwrap_or("none") {
            "none" => false,
            "silu" | "swish" => true,
            s => {
                return attr_err(format!(
                    "op '{NAME}': attr 'activation' must be none, silu or swish, got '{s}'"
                ))
            }
        };
        Ok(Arc::new(CausalConv {
            silu,
            bias: a.bool("bias")?.unwrap_or(false),
            past: a.bool("past")?.unwrap_or(false),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_all, t};

    fn cc(a: Attrs) -> Arc<dyn Op> {
        op(NAME, a)
    }

    /// The definition: the full sequence `past ++ x` convolved, each output
    /// reading positions `t .. t+k` of it, the state its last k−1.
    fn reference(
        x: &[f64],
        w: &[f64],
        bias: &[f64],
        past: &[f64],
        (b, c, l, k): (usize, usize, usize, usize),
    ) -> (Vec<f64>, Vec<f64>) {
        let mut y = Vec::new();
        let mut st = Vec::new();
        for bb in 0..b {
            for cc in 0..c {
                let mut seq: Vec<f64> = past[(bb * c + cc) * (k - 1)..][..k - 1].to_vec();
                seq.extend_from_slice(&x[(bb * c + cc) * l..][..l]);
                for t in 0..l {
                    y.push(bias[cc] + (0..k).map(|j| w[cc * k + j] * seq[t + j]).sum::<f64>());
                }
                st.extend_from_slice(&seq[seq.len() - (k - 1)..]);
            }
        }
        (y, st)
    }

    fn seq(n: usize, at: f64) -> Vec<f64> {
        (0..n).map(|i| ((i as f64 + at) * 0.37).sin()).collect()
    }

    #[test]
    fn zero_past_bias_and_silu() {
        // One channel, k = 2: y_t = 2·x_{t−1} + 3·x_t + 1 with x_{−1} = 0.
        let x = t(&[1, 1, 3], vec![1.0f64, 2.0, 4.0]);
        let w = t(&[1, 1, 2], vec![2.0f64, 3.0]);
        let bias = t(&[1], vec![1.0f64]);
        let out = run_all(
            &*cc(Attrs::new().with("bias", true)),
            &[x.clone(), w.clone(), bias.clone()],
        )
        .unwrap();
        assert_eq!(out[0].to_f64_vec().unwrap(), [4.0, 9.0, 17.0]);
        assert_eq!(out[1].shape(), [1, 1, 1]);
        assert_eq!(out[1].to_f64_vec().unwrap(), [4.0]);
        let a = Attrs::new().with("bias", true).with("activation", "swish");
        let out = run_all(&*cc(a), &[x, w, bias]).unwrap();
        let silu = |v: f64| v / (1.0 + (-v).exp());
        assert_eq!(out[0].to_f64_vec().unwrap(), [silu(4.0), silu(9.0), silu(17.0)]);
    }

    /// A past longer than x: the present state keeps part of the past.
    #[test]
    fn short_input_shifts_the_state() {
        let x = t(&[1, 1, 1], vec![5.0f32]);
        let w = t(&[1, 1, 3], vec![1.0f32, 0.0, 0.0]);
        let past = t(&[1, 1, 2], vec![7.0f32, 8.0]);
        let out = run_all(&*cc(Attrs::new().with("past", true)), &[x, w, past]).unwrap();
        assert_eq!(out[0].to_f64_vec().unwrap(), [7.0]);
        assert_eq!(out[1].to_f64_vec().unwrap(), [8.0, 5.0]);
        // k = 1: an empty state.
        let out = run_all(
            &*cc(Attrs::new()),
            &[t(&[1, 2, 1], vec![1.0f32, 2.0]), t(&[2, 1, 1], vec![3.0f32, 4.0])],
        )
        .unwrap();
        assert_eq!(out[0].to_f64_vec().unwrap(), [3.0, 8.0]);
        assert_eq!(out[1].shape(), [1, 2, 0]);
    }

    #[test]
    fn f16_rounds_and_bad_input_is_an_error() {
        let h = |v: Vec<f32>, s: &[usize]| t(s, v.into_iter().map(half::f16::from_f32).collect());
        let out = run_all(
            &*cc(Attrs::new()),
            &[h(vec![1.0, 2.0], &[1, 1, 2]), h(vec![0.5, 0.25], &[1, 1, 2])],
        )
        .unwrap();
        assert_eq!(out[0].dtype(), DType::F16);
        assert_eq!(out[0].to_f64_vec().unwrap(), [0.25, 1.0]);
        let x = t(&[1, 2, 3], vec![0.0f32; 6]);
        let e = run_all(&*cc(Attrs::new()), &[x.clone(), t(&[3, 1, 2], vec![0.0f32; 6])]).unwrap_err();
        assert_cause!(e, Shape, "weight");
        let e = run_all(
            &*cc(Attrs::new().with("past", true)),
            &[
                x.clone(),
                t(&[2, 1, 2], vec![0.0f32; 4]),
                t(&[1, 2, 2], vec![0.0f32; 4]),
            ],
        )
        .unwrap_err();
        assert_cause!(e, Shape, "past_state");
        let e = run_all(&*cc(Attrs::new()), &[x.clone(), t(&[2, 1, 0], Vec::<f32>::new())]).unwrap_err();
        assert_cause!(e, Shape, "weight");
        let e = run_all(&*cc(Attrs::new()), &[x, t(&[2, 1, 2], vec![0.0f64; 4])]).unwrap_err();
        assert_cause!(e, DType, "weight");
        let e = OpRegistry::builtin()
            .make(NAME, &Attrs::new().with("activation", "gelu"))
            .unwrap_err();
        assert_cause!(e, Attr, "activation");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn matches_the_definition(b in 1usize..3, c in 1usize..4, l in 1usize..6, k in 1usize..5, with_past: bool, with_bias: bool, at in 0.0f64..10.0) {
            let x = seq(b * c * l, at);
            let w = seq(c * k, at + 1.0);
            let bias = if with_bias { seq(c, at + 2.0) } else { vec![0.0; c] };
            let past = if with_past { seq(b * c * (k - 1), at + 3.0) } else { vec![0.0; b * c * (k - 1)] };
            let mut ins = vec![t(&[b, c, l], x.clone()), t(&[c, 1, k], w.clone())];
            if with_bias { ins.push(t(&[c], bias.clone())); }
            if with_past { ins.push(t(&[b, c, k - 1], past.clone())); }
            let out = run_all(&*cc(Attrs::new().with("bias", with_bias).with("past", with_past)), &ins).unwrap();
            let (y, st) = reference(&x, &w, &bias, &past, (b, c, l, k));
            let got = out[0].to_f64_vec().unwrap();
            for (g, w) in got.iter().zip(&y) {
                prop_assert!((g - w).abs() < 1e-12);
            }
            prop_assert_eq!(out[1].to_f64_vec().unwrap(), st);
        }
    }
}

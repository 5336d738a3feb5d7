//! `rnn`, `gru` and `lstm` (ONNX RNN, GRU, LSTM): recurrent layers over a
//! sequence, one direction or both.
//!
//! Inputs, as ONNX orders them (a trailing optional one may be left out;
//! an empty tensor stands for one left out before a given one):
//! `x` `[seq, batch, in]`, `w` `[dirs, G·H, in]`, `r` `[dirs, G·H, H]`,
//! then `b` `[dirs, 2·G·H]` (the input biases, then the recurrent ones),
//! `sequence_lens` (i64 `[batch]`), `initial_h` `[dirs, batch, H]`, and
//! for `lstm` `initial_c` `[dirs, batch, H]` and the peepholes `p`
//! `[dirs, 3·H]` (input, output, forget). G is 1, 3 (gates z, r, h) or 4
//! (gates i, o, f, c). Outputs: `y` `[seq, dirs, batch, H]`, `y_h`
//! `[dirs, batch, H]`, and for `lstm` `y_c`. With attr `layout` 1, x, y
//! and the states put batch first (`[batch, seq, in]`, `[batch, seq,
//! dirs, H]`, `[batch, dirs, H]`).
//!
//! Attrs: `hidden_size` (H, required), `direction` (`forward`, `reverse`,
//! `bidirectional`), `activations` (per direction: 1, 2 or 3 names;
//! defaults Tanh; Sigmoid, Tanh; Sigmoid, Tanh, Tanh) with
//! `activation_alpha`/`activation_beta`, `clip` (gate inputs clamped to
//! ±clip), `linear_before_reset` (gru) and `input_forget` (lstm: the
//! forget gate is 1 − input gate).
//!
//! Step t of a batch entry with length L runs only for t < L (backwards
//! from L − 1 in reverse); y is 0 past L, and y_h/y_c hold the state
//! after its last step. Float dtypes; in f64, rounded once.

use std::sync::Arc;

use serde_json::Value as Json;

use crate::dtype::DType;
use crate::error::{attr_err, op_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// Which recurrent cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    Rnn,
    Gru,
    Lstm,
}

impl Cell {
    fn name(self) -> &'static str {
        match self {
            Cell::Rnn => "rnn",
            Cell::Gru => "gru",
            Cell::Lstm => "lstm",
        }
    }
    fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }
    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
    fn outputs(self) -> usize {
        if self == Cell::Lstm {
            3
        } else {
            2
        }
    }
}

/// An activation ONNX's recurrent ops name, with its alpha and beta.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Act {
    Tanh,
    Sigmoid,
    Relu,
    Affine(f64, f64),
    LeakyRelu(f64),
    ThresholdedRelu(f64),
    ScaledTanh(f64, f64),
    HardSigmoid(f64, f64),
    Elu(f64),
    Softsign,
    Softplus,
}

impl Act {
    /// The activation `name`, taking its alpha and beta (for the kinds
    /// that have them) as the next values of the attrs' lists.
    fn parse(
        name: &str,
        alpha: &mut impl Iterator<Item = f64>,
        beta: &mut impl Iterator<Item = f64>,
    ) -> Result<Act> {
        let mut a = |default: f64| alpha.next().unwrap_or(default);
        Ok(match name.to_ascii_lowercase().as_str() {
            "tanh" => Act::Tanh,
            "sigmoid" => Act::Sigmoid,
            "relu" => Act::Relu,
            "affine" => Act::Affine(a(1.0), beta.next().unwrap_or(0.0)),
            "leakyrelu" => Act::LeakyRelu(a(0.01)),
            "thresholdedrelu" => Act::ThresholdedRelu(a(1.0)),
            "scaledtanh" => Act::ScaledTanh(a(1.0), beta.next().unwrap_or(1.0)),
            "hardsigmoid" => Act::HardSigmoid(a(0.2), beta.next().unwrap_or(0.5)),
            "elu" => Act::Elu(a(1.0)),
            "softsign" => Act::Softsign,
            "softplus" => Act::Softplus,
            _ => return attr_err(format!("recurrent op: unknown activation '{name}'")),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Act::Tanh => "Tanh",
            Act::Sigmoid => "Sigmoid",
            Act::Relu => "Relu",
            Act::Affine(..) => "Affine",
            Act::LeakyRelu(_) => "LeakyRelu",
            Act::ThresholdedRelu(_) => "ThresholdedRelu",
            Act::ScaledTanh(..) => "ScaledTanh",
            Act::HardSigmoid(..) => "HardSigmoid",
            Act::Elu(_) => "Elu",
            Act::Softsign => "Softsign",
            Act::Softplus => "Softplus",
        }
    }

    fn apply(self, x: f64) -> f64 {
        match self {
            Act::Tanh => x.tanh(),
            Act::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Act::Relu => x.max(0.0),
            Act::Affine(a, b) => a * x + b,
            Act::LeakyRelu(a) => {
                if x < 0.0 {
                    a * x
                } else {
                    x
                }
            }
            Act::ThresholdedRelu(a) => {
                if x > a {
                    x
                } else {
                    0.0
                }
            }
            Act::ScaledTanh(a, b) => a * (b * x).tanh(),
            Act::HardSigmoid(a, b) => (a * x + b).clamp(0.0, 1.0),
            Act::Elu(a) => {
                if x < 0.0 {
                    a * (x.exp() - 1.0)
                } else {
                    x
                }
            }
            Act::Softsign => x / (1.0 + x.abs()),
            Act::Softplus => x.max(0.0) + (-x.abs()).exp().ln_1p(),
        }
    }
}

/// The `rnn`, `gru` or `lstm` op.
#[derive(Clone, Debug, PartialEq)]
pub struct Recurrent {
    pub cell: Cell,
    pub hidden: usize,
    /// Forward, reverse, or both (forward first).
    pub reverse: Vec<bool>,
    /// Per direction, the cell's activations.
    pub acts: Vec<Vec<Act>>,
    pub clip: Option<f64>,
    pub linear_before_reset: bool,
    pub input_forget: bool,
    pub batch_first: bool,
    alphas: Vec<f64>,
    betas: Vec<f64>,
}

fn floats(a: &Attrs, key: &str) -> Result<Vec<f64>> {
    match a.0.get(key) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Array(v)) => v
            .iter()
            .map(|x| x.as_f64().ok_or(()))
            .collect::<std::result::Result<Vec<f64>, ()>>()
            .or_else(|_| attr_err(format!("recurrent op: attr '{key}' must be a list of numbers"))),
        Some(v) => attr_err(format!(
            "recurrent op: attr '{key}' must be a list of numbers, got {v}"
        )),
    }
}

impl Recurrent {
    pub fn from_attrs(cell: Cell, a: &Attrs) -> Result<Recurrent> {
        a.only(
            cell.name(),
            &[
                "hidden_size",
                "direction",
                "activations",
                "activation_alpha",
                "activation_beta",
                "clip",
                "linear_before_reset",
                "input_forget",
                "layout",
            ],
        )?;
        let name = cell.name();
        let hidden = match a.i64("hidden_size")? {
            Some(h) if h > 0 => h as usize,
            _ => return attr_err(format!("op '{name}' needs a positive attr 'hidden_size'")),
        };
        let dir = a.0.get("direction").and_then(Json::as_str).unwrap_or("forward");
        let reverse = match dir {
            "forward" => vec![false],
            "reverse" => vec![true],
            "bidirectional" => vec![false, true],
            d => return attr_err(format!("op '{name}': attr 'direction': unknown value '{d}'")),
        };
        let names: Vec<String> = match a.0.get("activations") {
            None | Some(Json::Null) => {
                let d = cell.default_activations();
                reverse
                    .iter()
                    .flat_map(|_| d.iter().map(|s| s.to_string()))
                    .collect()
            }
            Some(Json::Array(v)) => v
                .iter()
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect(),
            Some(v) => return attr_err(format!("op '{name}': attr 'activations' must be a list, got {v}")),
        };
        let per = cell.default_activations().len();
        if names.len() != per * reverse.len() {
            return attr_err(format!(
                "op '{name}': attr 'activations' needs {} names ({per} per direction), got {}",
                per * reverse.len(),
                names.len()
            ));
        }
        let (alphas, betas) = (floats(a, "activation_alpha")?, floats(a, "activation_beta")?);
        let (mut al, mut be) = (alphas.clone().into_iter(), betas.clone().into_iter());
        let mut acts = Vec::new();
        for chunk in names.chunks(per) {
            let row = chunk
                .iter()
                .map(|n| Act::parse(n, &mut al, &mut be))
                .collect::<Result<Vec<Act>>>()?;
            acts.push(row);
        }
        let clip = a.f64("clip")?;
        if clip.is_some_and(|c| c.is_nan() || c < 0.0) {
            return attr_err(format!("op '{name}': attr 'clip' must not be negative"));
        }
        let layout = a.i64("layout")?.unwrap_or(0);
        if !matches!(layout, 0 | 1) {
            return attr_err(format!("op '{name}': attr 'layout' must be 0 or 1, got {layout}"));
        }
        Ok(Recurrent {
            cell,
            hidden,
            reverse,
            acts,
            clip,
            linear_before_reset: a.i64("linear_before_reset")?.unwrap_or(0) != 0,
            input_forget: a.i64("input_forget")?.unwrap_or(0) != 0,
            batch_first: layout == 1,
            alphas,
            betas,
        })
    }

    /// `(seq, batch, input)` from x's shape.
    fn dims(&self, x: &[i64]) -> (i64, i64, i64) {
        if self.batch_first {
            (x[1], x[0], x[2])
        } else {
            (x[0], x[1], x[2])
        }
    }

    fn out_shapes(&self, x: &[i64]) -> Vec<Vec<i64>> {
        let (s, b, _) = self.dims(x);
        let (d, h) = (self.reverse.len() as i64, self.hidden as i64);
        let (y, state) = if self.batch_first {
            (vec![b, s, d, h], vec![b, d, h])
        } else {
            (vec![s, d, b, h], vec![d, b, h])
        };
        let mut v = vec![y, state.clone()];
        if self.cell == Cell::Lstm {
            v.push(state);
        }
        v
    }

    fn check(&self, inputs: &[TypeInfo]) -> Result<()> {
        let name = self.cell.name();
        let floats: Vec<TypeInfo> = inputs
            .iter()
            .enumerate()
            .filter(|&(k, t)| k != 4 && !t.shape.as_ref().is_some_and(|s| s.contains(&0)))
            .map(|(_, t)| t.clone())
            .collect();
        TypeInfo::common_dtype(name, &floats, "float", DType::is_float)?;
        let (g, h, d) = (
            self.cell.gates() as i64,
            self.hidden as i64,
            self.reverse.len() as i64,
        );
        let want = |k: usize, what: &str, dims: &[i64]| -> Result<()> {
            let Some(s) = inputs.get(k).and_then(|t| t.shape.as_ref()) else {
                return Ok(());
            };
            if s.contains(&0) && k >= 3 {
                return Ok(());
            }
            let fits = s.len() == dims.len() && s.iter().zip(dims).all(|(&a, &b)| a < 0 || b < 0 || a == b);
            if fits {
                Ok(())
            } else {
                op_err(format!(
                    "op '{name}': {what} must be {dims:?} (-1: any), got {}",
                    inputs[k].shape_string()
                ))
            }
        };
        want(0, "x", &[-1, -1, -1])?;
        let i = inputs[0].shape.as_ref().map_or(-1, |s| s[2]);
        want(1, "w", &[d, g * h, i])?;
        want(2, "r", &[d, g * h, h])?;
        want(3, "b", &[d, 2 * g * h])?;
        if self.cell == Cell::Lstm {
            want(7, "p", &[d, 3 * h])?;
        }
        Ok(())
    }
}

/// The values of optional input `k`, when given.
fn optional(inputs: &[Tensor], k: usize) -> Result<Option<Vec<f64>>> {
    match inputs.get(k) {
        Some(t) if t.size() > 0 => Ok(Some(t.to_contiguous()?.to_f64_vec()?)),
        _ => Ok(None),
    }
}

/// `out[j] = Σ_k m[j, k]·v[k]` for row-major `m` of `v.len()` columns, added to `out`.
fn mat_vec_add(m: &[f64], v: &[f64], out: &mut [f64]) {
    let n = v.len();
    for (o, row) in out.iter_mut().zip(m.chunks_exact(n)) {
        *o += row.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
    }
}

struct Outputs {
    y: Vec<f64>,
    h: Vec<f64>,
    c: Vec<f64>,
}

fn run_kernel(op: &Recurrent, inputs: &[Tensor], seq: usize, batch: usize, input: usize) -> Result<Outputs> {
    let (g, hs, dirs) = (op.cell.gates(), op.hidden, op.reverse.len());
    let x = inputs[0].to_contiguous()?.to_f64_vec()?;
    let w = inputs[1].to_contiguous()?.to_f64_vec()?;
    let r = inputs[2].to_contiguous()?.to_f64_vec()?;
    let b = optional(inputs, 3)?;
    let lens: Vec<usize> = match inputs.get(4).filter(|t| t.size() > 0) {
        Some(t) => t.to_f64_vec()?.iter().map(|&v| v as usize).collect(),
        None => vec![seq; batch],
    };
    if lens.len() != batch || lens.iter().any(|&l| l > seq) {
        return op_err(format!(
            "op '{}': sequence_lens {lens:?} must hold {batch} lengths within [0, {seq}]",
            op.cell.name()
        ));
    }
    let h0 = optional(inputs, 5)?;
    let c0 = if op.cell == Cell::Lstm {
        optional(inputs, 6)?
    } else {
        None
    };
    let p = if op.cell == Cell::Lstm {
        optional(inputs, 7)?
    } else {
        None
    };
    let x_at = |t: usize, n: usize| -> &[f64] {
        let at = if op.batch_first {
            n * seq + t
        } else {
            t * batch + n
        };
        &x[at * input..][..input]
    };
    // State index (dir, n) in the layout's order.
    let state_at = |d: usize, n: usize| {
        if op.batch_first {
            n * dirs + d
        } else {
            d * batch + n
        }
    };
    let y_at = |t: usize, d: usize, n: usize| {
        if op.batch_first {
            ((n * seq + t) * dirs + d) * hs
        } else {
            ((t * dirs + d) * batch + n) * hs
        }
    };
    let mut out = Outputs {
        y: vec![0.0; seq * dirs * batch * hs],
        h: vec![0.0; dirs * batch * hs],
        c: vec![0.0; dirs * batch * hs],
    };
    let clip = |v: f64| op.clip.map_or(v, |c| v.clamp(-c, c));
    let mut gx = vec![0.0; g * hs];
    let mut gh = vec![0.0; g * hs];
    for (d, &rev) in op.reverse.iter().enumerate() {
        let wd = &w[d * g * hs * input..][..g * hs * input];
        let rd = &r[d * g * hs * hs..][..g * hs * hs];
        let (wb, rb) = match &b {
            Some(b) => (
                &b[d * 2 * g * hs..][..g * hs],
                &b[(d * 2 + 1) * g * hs..][..g * hs],
            ),
            None => (&[][..], &[][..]),
        };
        let acts = &op.acts[d];
        for (n, &len) in lens.iter().enumerate() {
            let s = state_at(d, n) * hs;
            let mut h: Vec<f64> = h0.as_ref().map_or(vec![0.0; hs], |v| v[s..s + hs].to_vec());
            let mut c: Vec<f64> = c0.as_ref().map_or(vec![0.0; hs], |v| v[s..s + hs].to_vec());
            let steps: Vec<usize> = if rev {
                (0..len).rev().collect()
            } else {
                (0..len).collect()
            };
            for t in steps {
                gx.iter_mut().for_each(|v| *v = 0.0);
                gh.iter_mut().for_each(|v| *v = 0.0);
                mat_vec_add(wd, x_at(t, n), &mut gx);
                mat_vec_add(rd, &h, &mut gh);
                if !wb.is_empty() {
                    gx.iter_mut().zip(wb).for_each(|(a, b)| *a += b);
                    gh.iter_mut().zip(rb).for_each(|(a, b)| *a += b);
                }
                match op.cell {
                    Cell::Rnn => {
                        for j in 0..hs {
                            h[j] = acts[0].apply(clip(gx[j] + gh[j]));
                        }
                    }
                    Cell::Gru => {
                        let (f, gg) = (acts[0], acts[1]);
                        let z: Vec<f64> = (0..hs).map(|j| f.apply(clip(gx[j] + gh[j]))).collect();
                        let rr: Vec<f64> = (0..hs).map(|j| f.apply(clip(gx[hs + j] + gh[hs + j]))).collect();
                        let cand: Vec<f64> = if op.linear_before_reset {
                            (0..hs)
                                .map(|j| gg.apply(clip(gx[2 * hs + j] + rr[j] * gh[2 * hs + j])))
                                .collect()
                        } else {
                            // (r ⊙ h)·Rhᵀ + Rbh, computed apart from gh.
                            let rh: Vec<f64> = (0..hs).map(|j| rr[j] * h[j]).collect();
                            let mut m = vec![0.0; hs];
                            mat_vec_add(&rd[2 * hs * hs..], &rh, &mut m);
                            (0..hs)
                                .map(|j| {
                                    let rbh = if rb.is_empty() { 0.0 } else { rb[2 * hs + j] };
                                    gg.apply(clip(gx[2 * hs + j] + m[j] + rbh))
                                })
                                .collect()
                        };
                        for j in 0..hs {
                            h[j] = (1.0 - z[j]) * cand[j] + z[j] * h[j];
                        }
                    }
                    Cell::Lstm => {
                        let (f, gg, hh) = (acts[0], acts[1], acts[2]);
                        let peep =
                            |k: usize, j: usize| p.as_ref().map_or(0.0, |p| p[d * 3 * hs + k * hs + j]);
                        for j in 0..hs {
                            let pre = |k: usize| gx[k * hs + j] + gh[k * hs + j];
                            let i = f.apply(clip(pre(0) + peep(0, j) * c[j]));
                            let fg = if op.input_forget {
                                1.0 - i
                            } else {
                                f.apply(clip(pre(2) + peep(2, j) * c[j]))
                            };
                            let cand = gg.apply(clip(pre(3)));
                            c[j] = fg * c[j] + i * cand;
                            let o = f.apply(clip(pre(1) + peep(1, j) * c[j]));
                            h[j] = o * hh.apply(c[j]);
                        }
                    }
                }
                out.y[y_at(t, d, n)..][..hs].copy_from_slice(&h);
            }
            out.h[s..s + hs].copy_from_slice(&h);
            out.c[s..s + hs].copy_from_slice(&c);
        }
    }
    Ok(out)
}

impl Op for Recurrent {
    fn name(&self) -> &str {
        self.cell.name()
    }
    fn num_outputs(&self) -> usize {
        self.cell.outputs()
    }
    fn arity(&self) -> Arity {
        let max = if self.cell == Cell::Lstm { 8 } else { 6 };
        Arity {
            min: 3,
            max: Some(max),
        }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(inputs)?;
        let x = &inputs[0];
        let shapes = x.shape.as_ref().map(|s| self.out_shapes(s));
        Ok((0..self.cell.outputs())
            .map(|k| TypeInfo::new(x.dtype, shapes.as_ref().map(|s| s[k].clone())))
            .collect())
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check(&tys)?;
        let xs: Vec<i64> = inputs[0].shape().iter().map(|&d| d as i64).collect();
        let (s, b, i) = self.dims(&xs);
        let o = run_kernel(self, inputs, s as usize, b as usize, i as usize)?;
        let dtype = inputs[0].dtype();
        let mut outs = Vec::new();
        for (k, (shape, v)) in self.out_shapes(&xs).iter().zip([&o.y, &o.h, &o.c]).enumerate() {
            let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
            let t = ctx.output(k, dtype, &shape)?;
            if !dtype.is_computable() {
                return op_err(format!("op '{}' takes float inputs", self.name()));
            }
            t.write_f64s(v)?;
            outs.push(t);
        }
        Ok(outs)
    }
    fn attrs(&self) -> Attrs {
        let dir = match self.reverse.as_slice() {
            [false] => "forward",
            [true] => "reverse",
            _ => "bidirectional",
        };
        let names: Vec<&str> = self.acts.iter().flatten().map(|a| a.name()).collect();
        let mut a = Attrs::new()
            .with("hidden_size", self.hidden)
            .with("direction", dir)
            .with("activations", names)
            .with("layout", self.batch_first as i64);
        if !self.alphas.is_empty() {
            a = a.with("activation_alpha", self.alphas.clone());
        }
        if !self.betas.is_empty() {
            a = a.with("activation_beta", self.betas.clone());
        }
        if let Some(c) = self.clip {
            a = a.with("clip", c);
        }
        match self.cell {
            Cell::Gru => a.with("linear_before_reset", self.linear_before_reset as i64),
            Cell::Lstm => a.with("input_forget", self.input_forget as i64),
            Cell::Rnn => a,
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    for cell in [Cell::Rnn, Cell::Gru, Cell::Lstm] {
        r.register(cell.name(), move |a: &Attrs| {
            Ok(Arc::new(Recurrent::from_attrs(cell, a)?) as Arc<dyn Op>)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_all, t};

    fn vals(t: &Tensor) -> Vec<f64> {
        t.to_f64_vec().unwrap()
    }

    #[test]
    fn a_linear_rnn_accumulates_its_inputs() {
        // H = 1, Affine(1, 0) activation, w = r = 1: h_t = x_t + h_{t-1}.
        let o = op(
            "rnn",
            Attrs::new()
                .with("hidden_size", 1)
                .with("activations", vec!["Affine"])
                .with("activation_alpha", vec![1.0])
                .with("activation_beta", vec![0.0]),
        );
        let x = t(&[3, 1, 1], vec![1.0f64, 2.0, 3.0]);
        let one = t(&[1, 1, 1], vec![1.0f64]);
        let out = run_all(&*o, &[x.clone(), one.clone(), one.clone()]).unwrap();
        assert_eq!(out[0].shape(), &[3, 1, 1, 1]);
        assert_eq!(vals(&out[0]), [1.0, 3.0, 6.0]);
        assert_eq!(vals(&out[1]), [6.0]);
        // Reverse, and a sequence length of 2: steps 1 then 0; y[2] stays 0.
        let o = op(
            "rnn",
            Attrs::new()
                .with("hidden_size", 1)
                .with("direction", "reverse")
                .with("activations", vec!["Affine"])
                .with("activation_alpha", vec![1.0]),
        );
        let empty = t(&[0], Vec::<f64>::new());
        let lens = t(&[1], vec![2i64]);
        let out = run_all(&*o, &[x, one.clone(), one, empty, lens]).unwrap();
        assert_eq!(vals(&out[0]), [3.0, 2.0, 0.0]);
        assert_eq!(vals(&out[1]), [3.0]);
    }

    #[test]
    fn gru_and_lstm_steps_follow_their_gate_equations() {
        // One step, H = 1, x = 1, zero recurrent weights.
        let x = t(&[1, 1, 1], vec![1.0f64]);
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        // GRU gates z, r, h with input weights 0.5, 1, 2; h0 = 0.
        let g = op("gru", Attrs::new().with("hidden_size", 1));
        let out = run_all(
            &*g,
            &[
                x.clone(),
                t(&[1, 3, 1], vec![0.5f64, 1.0, 2.0]),
                t(&[1, 3, 1], vec![0.0f64; 3]),
            ],
        )
        .unwrap();
        let want = (1.0 - sig(0.5)) * 2.0f64.tanh();
        assert!((vals(&out[1])[0] - want).abs() < 1e-12, "{:?}", vals(&out[1]));
        // LSTM gates i, o, f, c with input weights 1, 2, 3, 4; c0 = 0.
        let l = op("lstm", Attrs::new().with("hidden_size", 1));
        let out = run_all(
            &*l,
            &[
                x,
                t(&[1, 4, 1], vec![1.0f64, 2.0, 3.0, 4.0]),
                t(&[1, 4, 1], vec![0.0f64; 4]),
            ],
        )
        .unwrap();
        assert_eq!(out.len(), 3);
        let c = sig(1.0) * 4.0f64.tanh();
        let h = sig(2.0) * c.tanh();
        assert!((vals(&out[2])[0] - c).abs() < 1e-12);
        assert!((vals(&out[1])[0] - h).abs() < 1e-12);
    }

    #[test]
    fn shapes_and_attrs_are_checked() {
        let o = op("rnn", Attrs::new().with("hidden_size", 2));
        let e = run_all(
            &*o,
            &[
                t(&[1, 1, 1], vec![0.0f64]),
                t(&[1, 3, 1], vec![0.0f64; 3]),
                t(&[1, 2, 2], vec![0.0f64; 4]),
            ],
        )
        .unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
        let r = OpRegistry::builtin();
        assert!(r.make("gru", &Attrs::new()).is_err());
        assert!(r
            .make(
                "lstm",
                &Attrs::new()
                    .with("hidden_size", 1)
                    .with("activations", vec!["Tanh"])
            )
            .is_err());
    }
}

//! `dft(x[, dft_length, axis])` (ONNX DFT): the discrete Fourier
//! transform of x along one axis. x is `[..., 1]` (real) or `[..., 2]`
//! (complex); the output is complex `[..., 2]`, or real `[..., 1]` for
//! an inverse one-sided transform.
//!
//! - `dft_length` (optional i64 scalar input; an empty tensor is absent):
//!   the transform length `n`, the signal zero-padded or cut to it;
//!   default the axis's length, or `2·(m − 1)` for an inverse one-sided
//!   transform of `m` bins.
//! - `axis` (optional i64 scalar input, else attr `axis`, default -2):
//!   the axis of the signal, counted over x's axes (negative from the
//!   end); never the last.
//! - attr `inverse` (false): `e^(+2πi·jk/n)` and a division by `n`.
//! - attr `onesided` (false): forward, only the `n/2 + 1` bins a real
//!   signal needs; inverse, those bins in, the real signal of length `n`
//!   out (the rest of the spectrum taken as their conjugates).
//!
//! Float dtypes; in f64, rounded once. The length of the transformed
//! axis is decided when the op runs when `dft_length` or `axis` is a
//! run-time value.

use std::sync::Arc;

use super::{transform, Complex};
use crate::dtype::DType;
use crate::error::{op_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `dft` op.
#[derive(Clone, Debug, PartialEq)]
pub struct Dft {
    pub axis: i64,
    pub inverse: bool,
    pub onesided: bool,
}

/// The value of an optional scalar input, if given (non-empty).
fn scalar_input(inputs: &[Tensor], k: usize) -> Result<Option<i64>> {
    match inputs.get(k) {
        Some(t) if t.size() > 0 => Ok(t.to_f64_vec()?.first().map(|&v| v as i64)),
        _ => Ok(None),
    }
}

impl Dft {
    fn resolve_axis(&self, axis: i64, rank: usize) -> Result<usize> {
        let a = if axis < 0 { axis + rank as i64 } else { axis };
        if a < 0 || a as usize + 1 >= rank {
            return op_err(format!(
                "op 'dft': axis {axis} must name a signal axis of x (rank {rank}), not the last"
            ));
        }
        Ok(a as usize)
    }

    /// The transform length and the output length of the axis.
    fn lengths(&self, m: usize, dft_length: Option<i64>) -> Result<(usize, usize)> {
        let n = match dft_length {
            Some(n) if n < 1 => return op_err(format!("op 'dft': dft_length must be positive, got {n}")),
            Some(n) => n as usize,
            None if self.inverse && self.onesided => 2 * m.saturating_sub(1),
            None => m,
        };
        if n == 0 {
            return op_err("op 'dft': the transform length is 0");
        }
        let out = if self.onesided && !self.inverse {
            n / 2 + 1
        } else {
            n
        };
        Ok((n, out))
    }

    fn check(&self, inputs: &[TypeInfo]) -> Result<()> {
        TypeInfo::common_dtype("dft", &inputs[..1], "float", DType::is_float)?;
        if let Some(s) = &inputs[0].shape {
            let last = s.last().copied().unwrap_or(0);
            if s.len() < 2 || !(last == 1 || last == 2 || last < 0) {
                return op_err(format!(
                    "op 'dft': x must be [..., 1] (real) or [..., 2] (complex), got {}",
                    inputs[0].shape_string()
                ));
            }
        }
        for (k, t) in inputs.iter().enumerate().skip(1) {
            if t.dtype.is_float() || t.dtype == DType::Bool {
                return op_err(format!(
                    "op 'dft': input {k} must be an integer scalar, got {}",
                    t.dtype
                ));
            }
        }
        Ok(())
    }
}

fn dft_kernel(op: &Dft, x: &Tensor, axis: usize, n: usize, shape: &[usize], out: &Tensor) -> Result<()> {
    let v = x.to_contiguous()?.to_f64_vec()?;
    let xs = x.shape();
    let parts = xs[xs.len() - 1];
    let m = xs[axis];
    let outer: usize = xs[..axis].iter().product();
    let inner: usize = xs[axis + 1..xs.len() - 1].iter().product();
    let (bins, oparts) = (shape[axis], shape[shape.len() - 1]);
    let mut y = vec![0f64; shape.iter().product()];
    let mut line: Vec<Complex> = Vec::with_capacity(m.max(n));
    for o in 0..outer {
        for i in 0..inner {
            line.clear();
            line.extend((0..m).map(|j| {
                let at = ((o * m + j) * inner + i) * parts;
                (v[at], if parts == 2 { v[at + 1] } else { 0.0 })
            }));
            let f = if op.inverse && op.onesided {
                // The full spectrum: the given bins and their conjugates.
                let mut full = vec![(0.0, 0.0); n];
                let given = line.len().min(n / 2 + 1);
                full[..given].copy_from_slice(&line[..given]);
                for k in 1..n.div_ceil(2) {
                    let (re, im) = full[k];
                    full[n - k] = (re, -im);
                }
                transform(&full, n, bins, true)
            } else {
                transform(&line, n, bins, op.inverse)
            };
            for (k, (re, im)) in f.into_iter().enumerate() {
                let at = ((o * bins + k) * inner + i) * oparts;
                y[at] = re;
                if oparts == 2 {
                    y[at + 1] = im;
                }
            }
        }
    }
    out.write_f64s(&y)
}

impl Op for Dft {
    fn name(&self) -> &str {
        "dft"
    }
    fn arity(&self) -> Arity {
        Arity { min: 1, max: Some(3) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(inputs)?;
        let x = &inputs[0];
        let Some(xs) = &x.shape else {
            return Ok(vec![TypeInfo::new(x.dtype, None)]);
        };
        let parts = if self.inverse && self.onesided { 1 } else { 2 };
        let known = |k: usize| -> Option<Option<i64>> {
            match inputs.get(k) {
                None => Some(None),
                Some(t) if t.shape.as_ref().is_some_and(|s| s.contains(&0)) => Some(None),
                Some(t) => t.value.as_ref().and_then(|v| v.first().copied()).map(Some),
            }
        };
        let mut shape = xs.clone();
        *shape.last_mut().unwrap_or(&mut 0) = parts;
        match (known(2), known(1)) {
            (Some(axis), Some(len)) => {
                let a = self.resolve_axis(axis.unwrap_or(self.axis), xs.len())?;
                shape[a] = if xs[a] < 0 && len.is_none() {
                    -1
                } else {
                    self.lengths(xs[a].max(0) as usize, len)?.1 as i64
                };
            }
            (Some(axis), None) => shape[self.resolve_axis(axis.unwrap_or(self.axis), xs.len())?] = -1,
            (None, _) => {
                // Which axis changes is known only when it runs.
                for d in shape.iter_mut().take(xs.len() - 1) {
                    *d = -1;
                }
            }
        }
        Ok(vec![TypeInfo::new(x.dtype, Some(shape))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(&inputs[..1]) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check(&tys)?;
        let x = &inputs[0];
        let axis = self.resolve_axis(scalar_input(inputs, 2)?.unwrap_or(self.axis), x.ndim())?;
        let (n, bins) = self.lengths(x.shape()[axis], scalar_input(inputs, 1)?)?;
        let mut shape = x.shape().to_vec();
        shape[axis] = bins;
        *shape.last_mut().unwrap_or(&mut 0) = if self.inverse && self.onesided { 1 } else { 2 };
        let out = ctx.output(0, x.dtype(), &shape)?;
        if !x.dtype().is_computable() {
            return op_err("op 'dft' takes float inputs");
        }
        dft_kernel(self, x, axis, n, &shape, &out)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new()
            .with("axis", self.axis)
            .with("inverse", self.inverse)
            .with("onesided", self.onesided)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("dft", |a: &Attrs| {
        a.only("dft", &["axis", "inverse", "onesided"])?;
        Ok(Arc::new(Dft {
            axis: a.i64("axis")?.unwrap_or(-2),
            inverse: a.bool("inverse")?.unwrap_or(false),
            onesided: a.bool("onesided")?.unwrap_or(false),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    fn dft(inverse: bool, onesided: bool) -> Arc<dyn Op> {
        op(
            "dft",
            Attrs::new()
                .with("axis", 1)
                .with("inverse", inverse)
                .with("onesided", onesided),
        )
    }

    #[test]
    fn forward_onesided_and_the_real_inverse_round_trip() {
        // One real signal of 4 along axis 1: [1, 2, 3, 4].
        let x = t(&[1, 4, 1], vec![1.0f64, 2.0, 3.0, 4.0]);
        let (s, f) = run_vec::<f64>(&*dft(false, false), std::slice::from_ref(&x)).unwrap();
        assert_eq!(s, [1, 4, 2]);
        let want = [10.0, 0.0, -2.0, 2.0, -2.0, 0.0, -2.0, -2.0];
        for (g, w) in f.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{f:?}");
        }
        let (s, half) = run_vec::<f64>(&*dft(false, true), &[x]).unwrap();
        assert_eq!(s, [1, 3, 2]);
        assert_eq!(half.len(), 6);
        let (s, back) = run_vec::<f64>(&*dft(true, true), &[t(&[1, 3, 2], half)]).unwrap();
        assert_eq!(s, [1, 4, 1]);
        for (g, w) in back.iter().zip([1.0, 2.0, 3.0, 4.0]) {
            assert!((g - w).abs() < 1e-12, "{back:?}");
        }
    }

    #[test]
    fn length_and_axis_inputs_pad_and_pick_the_axis() {
        // dft_length 4 pads [1, 1] with zeros; the axis comes from input 2.
        let x = t(&[2, 1], vec![1.0f64, 1.0]);
        let (s, f) = run_vec::<f64>(
            &*op("dft", Attrs::new()),
            &[x.clone(), t(&[], vec![4i64]), t(&[], vec![0i64])],
        )
        .unwrap();
        assert_eq!(s, [4, 2]);
        let want = [2.0, 0.0, 1.0, -1.0, 0.0, 0.0, 1.0, 1.0];
        for (g, w) in f.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{f:?}");
        }
        let e = run_vec::<f64>(&*op("dft", Attrs::new().with("axis", -1)), &[x]).unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
    }
}

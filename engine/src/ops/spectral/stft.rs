//! `stft(signal, frame_step[, window, frame_length])` (ONNX STFT): the
//! short-time Fourier transform. signal is `[B, L, 1]` (real) or
//! `[B, L, 2]` (complex); frames of `frame_length` samples start every
//! `frame_step`, `1 + (L − frame_length) / frame_step` of them; each is
//! multiplied by `window` (default all ones) and transformed at length
//! `frame_length`. The output is `[B, frames, bins, 2]`, with
//! `frame_length / 2 + 1` bins when attr `onesided` (default true), else
//! `frame_length`. `frame_length` defaults to the window's length, then
//! to L. The scalar inputs are read when the op runs (an empty tensor is
//! absent), so the frame count may be decided then. Float dtypes; in
//! f64, rounded once.

use std::sync::Arc;

use super::{transform, Complex};
use crate::dtype::DType;
use crate::error::{op_err, Result};
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// The `stft` op.
#[derive(Clone, Debug, PartialEq)]
pub struct Stft {
    pub onesided: bool,
}

/// An optional input, if given (non-empty).
fn given(inputs: &[Tensor], k: usize) -> Option<&Tensor> {
    inputs.get(k).filter(|t| t.size() > 0)
}

impl Stft {
    fn check(&self, inputs: &[TypeInfo]) -> Result<()> {
        TypeInfo::common_dtype("stft", &inputs[..1], "float", DType::is_float)?;
        if let Some(s) = &inputs[0].shape {
            if s.len() != 3 || !(s[2] == 1 || s[2] == 2 || s[2] < 0) {
                return op_err(format!(
                    "op 'stft': signal must be [B, L, 1] or [B, L, 2], got {}",
                    inputs[0].shape_string()
                ));
            }
        }
        Ok(())
    }
}

fn stft_kernel(
    op: &Stft,
    x: &Tensor,
    window: &[f64],
    step: usize,
    frames: usize,
    out: &Tensor,
) -> Result<()> {
    let v = x.to_contiguous()?.to_f64_vec()?;
    let (b, l, parts) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let n = window.len();
    let bins = if op.onesided { n / 2 + 1 } else { n };
    let mut y = Vec::with_capacity(b * frames * bins * 2);
    let mut frame: Vec<Complex> = Vec::with_capacity(n);
    for s in 0..b {
        for f in 0..frames {
            frame.clear();
            frame.extend(window.iter().enumerate().map(|(j, &w)| {
                let at = (s * l + f * step + j) * parts;
                (v[at] * w, if parts == 2 { v[at + 1] * w } else { 0.0 })
            }));
            for (re, im) in transform(&frame, n, bins, false) {
                y.extend([re, im]);
            }
        }
    }
    out.write_f64s(&y)
}

impl Op for Stft {
    fn name(&self) -> &str {
        "stft"
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(4) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        self.check(inputs)?;
        let x = &inputs[0];
        let Some(xs) = &x.shape else {
            return Ok(vec![TypeInfo::new(x.dtype, Some(vec![-1, -1, -1, 2]))]);
        };
        let value = |k: usize| {
            inputs
                .get(k)
                .and_then(|t| t.value.as_ref())
                .and_then(|v| v.first().copied())
        };
        // Given: a present input (absent ones are left out or empty).
        let given = |k: usize| {
            inputs
                .get(k)
                .is_some_and(|t| !t.shape.as_ref().is_some_and(|s| s.contains(&0)))
        };
        let window = inputs
            .get(2)
            .and_then(|t| t.shape.as_ref())
            .and_then(|s| s.first().copied());
        let len = if given(3) {
            value(3)
        } else if given(2) {
            window.filter(|&w| w >= 0)
        } else {
            (xs[1] >= 0).then_some(xs[1])
        };
        let (frames, bins) = match (len, value(1)) {
            (Some(n), Some(step)) if n > 0 && step > 0 && xs[1] >= n => {
                ((xs[1] - n) / step + 1, if self.onesided { n / 2 + 1 } else { n })
            }
            (Some(n), _) if n > 0 => (-1, if self.onesided { n / 2 + 1 } else { n }),
            _ => (-1, -1),
        };
        Ok(vec![TypeInfo::new(x.dtype, Some(vec![xs[0], frames, bins, 2]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.check(&tys)?;
        let x = &inputs[0];
        let step = inputs[1].to_f64_vec()?.first().copied().unwrap_or(0.0) as i64;
        let window = given(inputs, 2).map(Tensor::to_f64_vec).transpose()?;
        let len = match given(inputs, 3) {
            Some(t) => t.to_f64_vec()?.first().copied().unwrap_or(0.0) as i64,
            None => window.as_ref().map_or(x.shape()[1], Vec::len) as i64,
        };
        let l = x.shape()[1] as i64;
        if step < 1 || len < 1 || len > l {
            return op_err(format!(
                "op 'stft': frame_step {step} must be positive and frame_length {len} within the signal's {l}"
            ));
        }
        let window = window.unwrap_or_else(|| vec![1.0; len as usize]);
        if window.len() != len as usize {
            return op_err(format!(
                "op 'stft': the window has {} values for frames of {len}",
                window.len()
            ));
        }
        let frames = ((l - len) / step + 1) as usize;
        let bins = if self.onesided {
            len as usize / 2 + 1
        } else {
            len as usize
        };
        let out = ctx.output(0, x.dtype(), &[x.shape()[0], frames, bins, 2])?;
        if !x.dtype().is_computable() {
            return op_err("op 'stft' takes float inputs");
        }
        stft_kernel(self, x, &window, step as usize, frames, &out)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("onesided", self.onesided)
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("stft", |a: &Attrs| {
        a.only("stft", &["onesided"])?;
        Ok(Arc::new(Stft {
            onesided: a.bool("onesided")?.unwrap_or(true),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    #[test]
    fn frames_are_windowed_and_transformed() {
        // A signal of 6, frames of 4 every 2: frames [0..4) and [2..6).
        let x = t(&[1, 6, 1], vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let window = t(&[4], vec![1.0f64, 1.0, 1.0, 0.0]);
        let (s, v) = run_vec::<f64>(
            &*op("stft", Attrs::new()),
            &[x.clone(), t(&[], vec![2i64]), window],
        )
        .unwrap();
        assert_eq!(s, [1, 2, 3, 2]);
        // Bin 0 of each frame: the windowed sums 1+2+3 and 3+4+5.
        assert!((v[0] - 6.0).abs() < 1e-12 && (v[6] - 12.0).abs() < 1e-12, "{v:?}");
        let (s, _) = run_vec::<f64>(
            &*op("stft", Attrs::new().with("onesided", false)),
            &[
                x.clone(),
                t(&[], vec![1i64]),
                t(&[0], Vec::<f64>::new()),
                t(&[], vec![3i64]),
            ],
        )
        .unwrap();
        assert_eq!(s, [1, 4, 3, 2]);
        let e = run_vec::<f64>(&*op("stft", Attrs::new()), &[x, t(&[], vec![0i64])]).unwrap_err();
        assert!(matches!(e, crate::Error::Op(_)), "{e:?}");
    }
}

//! `layer_norm(x, [scale, [bias]])`: layer normalization over the axes from
//! attr `axis` (default -1, negative counts from the end) to the last (ONNX
//! LayerNormalization). Each block of those axes is normalized on its own:
//! `y = (x − mean) · inv_std · scale + bias` with `inv_std = 1 / sqrt(var +
//! epsilon)` (attr `epsilon`, default 1e-5; `var` is the biased variance).
//! `scale` and `bias` broadcast into the normalized shape `x.shape[axis:]`
//! (absent: 1 and 0).
//!
//! Three outputs: `y` (x's shape), then `mean` and `inv_std` with shape
//! `x.shape[:axis] + [1] * (rank − axis)`. Float dtypes, one for every
//! input; statistics are accumulated in f64 and rounded once. A block of no
//! elements has a NaN mean, as numpy's mean of nothing.
//!
//! `rms_norm(x, [scale])` (ONNX RMSNormalization) is the same walk without
//! centering: `y = x · inv_rms · scale` with `inv_rms = 1 / sqrt(mean(x²) +
//! epsilon)`, one output.

use std::sync::Arc;

use ndarray::ArrayViewMutD;

use crate::dtype::{DType, Float};
use crate::error::{dtype_err, rank_err, Result};
use crate::kernels::norm::{normalize_rows, NormSpec};
use crate::ops::copy::axis_of;
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const INPUTS: [&str; 3] = ["x", "scale", "bias"];

/// The `layer_norm` op, or `rms_norm` with `rms` (no centering, no bias,
/// one output).
#[derive(Clone, Debug, PartialEq)]
pub struct LayerNorm {
    pub axis: i64,
    pub epsilon: f64,
    pub rms: bool,
}

impl LayerNorm {
    fn axis(&self, r: usize) -> Result<usize> {
        if r == 0 {
            return rank_err(format!(
                "op '{}': x is 0-d, there is no axis to normalize",
                self.name()
            ));
        }
        axis_of(self.name(), self.axis, r)
    }

    fn stats_shape<D: Copy>(shape: &[D], ax: usize, one: D) -> Vec<D> {
        shape
            .iter()
            .enumerate()
            .map(|(d, &n)| if d < ax { n } else { one })
            .collect()
    }
}

/// `t` (scale or bias) broadcast into `inner` and flattened, as f64.
fn flat_param(op: &str, t: Option<&Tensor>, k: usize, inner: &[usize], fill: f64) -> Result<Vec<f64>> {
    let n = inner.iter().product();
    let Some(t) = t else {
        return Ok(vec![fill; n]);
    };
    let b = t.broadcast_to(inner).map_err(|_| {
        crate::error::Error::Shape(format!(
            "op '{op}': {} (input {k}) of shape {:?} does not broadcast into the normalized shape {inner:?}",
            INPUTS[k],
            t.shape()
        ))
    })?;
    b.to_f64_vec()
}

/// Normalizes each block of axes `ax..` of `inputs[0]` (x, scale, and
/// bias unless `rms`) into `outs`: y, then (not `rms`) the means and
/// inverse deviations; the rows go through [`normalize_rows`].
fn norm_kernel<T: Float>(p: &LayerNorm, inputs: &[Tensor], ax: usize, outs: &[Tensor]) -> Result<()> {
    let op = p.name();
    let x = &inputs[0];
    let inner_shape = &x.shape()[ax..];
    let scale = flat_param(op, inputs.get(1), 1, inner_shape, 1.0)?;
    let bias = flat_param(op, inputs.get(2), 2, inner_shape, 0.0)?;
    let spec = NormSpec {
        inner: scale.len(),
        scale: &scale,
        bias: &bias,
        epsilon: p.epsilon,
        rms: p.rms,
    };
    let outer: usize = x.shape()[..ax].iter().product();
    let run = |xs: &[T]| -> Result<()> {
        if outs.iter().all(Tensor::is_contiguous) {
            return outs[0].write_contiguous(|y: &mut [T]| match &outs[1..] {
                [m, i] => m.write_contiguous(|m: &mut [T]| {
                    i.write_contiguous(|i: &mut [T]| normalize_rows(&spec, xs, y, Some((m, i))))
                })?,
                _ => {
                    normalize_rows(&spec, xs, y, None);
                    Ok(())
                }
            })?;
        }
        // Outputs of another layout: normalize into owned rows, then copy.
        let mut y = vec![T::zero(); xs.len()];
        let (mut m, mut i) = (vec![T::zero(); outer], vec![T::zero(); outer]);
        normalize_rows(&spec, xs, &mut y, Some((&mut m, &mut i)));
        for (out, vals) in outs.iter().zip([y, m, i]) {
            out.write(|mut o: ArrayViewMutD<'_, T>| o.iter_mut().zip(vals).for_each(|(o, v)| *o = v))?;
        }
        Ok(())
    };
    if x.is_contiguous() {
        x.read_contiguous(|xs: &[T]| run(xs))?
    } else {
        let xa = x.to_array::<T>()?;
        run(xa.as_slice().unwrap_or_default())
    }
}

impl Op for LayerNorm {
    fn name(&self) -> &str {
        if self.rms {
            "rms_norm"
        } else {
            "layer_norm"
        }
    }
    fn arity(&self) -> Arity {
        Arity {
            min: 1,
            max: Some(if self.rms { 2 } else { 3 }),
        }
    }
    fn num_outputs(&self) -> usize {
        if self.rms {
            1
        } else {
            3
        }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let d = TypeInfo::common_dtype(self.name(), inputs, "float", DType::is_float)?;
        let stats = match &inputs[0].shape {
            None => None,
            Some(s) => Some(LayerNorm::stats_shape(s, self.axis(s.len())?, 1)),
        };
        if self.rms {
            return Ok(vec![inputs[0].clone()]);
        }
        let st = TypeInfo::new(d, stats);
        Ok(vec![inputs[0].clone(), st.clone(), st])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        self.infer(&tys)?;
        let x = &inputs[0];
        let ax = self.axis(x.ndim())?;
        let mut outs = vec![ctx.output(0, x.dtype(), x.shape())?];
        if !self.rms {
            let stats = LayerNorm::stats_shape(x.shape(), ax, 1);
            outs.push(ctx.output(1, x.dtype(), &stats)?);
            outs.push(ctx.output(2, x.dtype(), &stats)?);
        }
        crate::dispatch_float!(x.dtype(), T => norm_kernel::<T>(self, inputs, ax, &outs)?,
            return dtype_err(format!("op '{}' takes float inputs", self.name())));
        Ok(outs)
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("axis", self.axis).with("epsilon", self.epsilon)
    }
}

pub fn register(r: &mut OpRegistry) {
    for (name, rms) in [("layer_norm", false), ("rms_norm", true)] {
        r.register(name, move |a: &Attrs| {
            a.only(name, &["axis", "epsilon"])?;
            Ok(Arc::new(LayerNorm {
                axis: a.i64("axis")?.unwrap_or(-1),
                epsilon: a.f64("epsilon")?.unwrap_or(1e-5),
                rms,
            }) as Arc<dyn Op>)
        });
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;
    use crate::ops::testutil::{op, run_all, t};

    fn ln(axis: i64, eps: f64) -> Arc<dyn Op> {
        op("layer_norm", Attrs::new().with("axis", axis).with("epsilon", eps))
    }

    fn f64s(x: &Tensor) -> Vec<f64> {
        x.to_f64_vec().unwrap()
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len(), "{a:?} vs {b:?}");
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-6, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn normalizes_each_row_and_reports_mean_and_inv_std() {
        // Rows [1, 3] and [2, 6]: means 2 and 4, variances 1 and 4.
        let x = t(&[2, 2], vec![1.0f64, 3.0, 2.0, 6.0]);
        let o = run_all(&*ln(-1, 0.0), std::slice::from_ref(&x)).unwrap();
        close(&f64s(&o[0]), &[-1.0, 1.0, -1.0, 1.0]);
        assert_eq!(o[1].shape(), &[2, 1]);
        close(&f64s(&o[1]), &[2.0, 4.0]);
        close(&f64s(&o[2]), &[1.0, 0.5]);
        // Scale and bias broadcast into the normalized shape [2].
        let scale = t(&[2], vec![2.0f64, 3.0]);
        let bias = t(&[1], vec![10.0f64]);
        let o = run_all(&*ln(1, 0.0), &[x.clone(), scale, bias]).unwrap();
        close(&f64s(&o[0]), &[8.0, 13.0, 8.0, 13.0]);
        // axis 0 (= -2): one block of all four, mean 3, variance 3.5.
        let o = run_all(&*ln(-2, 0.5), &[x]).unwrap();
        assert_eq!(o[1].shape(), &[1, 1]);
        let inv = 1.0 / 4.0f64.sqrt();
        close(&f64s(&o[0]), &[-2.0 * inv, 0.0, -inv, 3.0 * inv]);
        close(&f64s(&o[2]), &[inv]);
    }

    #[test]
    fn f32_views_nan_and_empty_inputs() {
        // x.T of [[0, 4], [2, 2]] is [[0, 2], [4, 2]]: rows with mean 1 and 3.
        let x = t(&[2, 2], vec![0.0f32, 4.0, 2.0, 2.0]).transpose(None).unwrap();
        let o = run_all(&*ln(-1, 0.0), &[x]).unwrap();
        close(&f64s(&o[0]), &[-1.0, 1.0, 1.0, -1.0]);
        close(&f64s(&o[1]), &[1.0, 3.0]);
        let x = t(&[2, 2], vec![f32::NAN, 1.0, 1.0, 3.0]);
        let o = run_all(&*ln(-1, 0.0), &[x]).unwrap();
        let y = f64s(&o[0]);
        assert!(y[0].is_nan() && y[1].is_nan() && y[2] == -1.0 && y[3] == 1.0);
        let o = run_all(&*ln(0, 1e-5), &[t::<f32>(&[0, 3], vec![])]).unwrap();
        assert_eq!((o[0].shape(), o[1].shape()), (&[0usize, 3][..], &[1usize, 1][..]));
        assert!(f64s(&o[1])[0].is_nan());
        let o = run_all(&*ln(-1, 1e-5), &[t::<f64>(&[2, 0], vec![])]).unwrap();
        assert_eq!(o[1].shape(), &[2, 1]);
    }

    /// Scale and bias read in place (a contiguous slice at an offset), or
    /// copied (reversed, broadcast) give what their contiguous copies give,
    /// bit for bit.
    #[test]
    fn parameters_of_any_layout_act_as_their_contiguous_copies() {
        use crate::tensor::IndexSpec;
        let x = t(&[3, 4], (0..12).map(|i| (i * i % 7) as f32 - 2.5).collect());
        let run = |s: &Tensor, b: &Tensor| -> Vec<u64> {
            let o = run_all(&*ln(-1, 1e-5), &[x.clone(), s.clone(), b.clone()]).unwrap();
            f64s(&o[0]).iter().map(|v| v.to_bits()).collect()
        };
        let plain = |v: Vec<f32>| t(&[4], v);
        let want = run(
            &plain(vec![0.5, -1.0, 2.0, 1.5]),
            &plain(vec![0.25, 0.0, -0.75, 3.0]),
        );
        // Elements 1..5 of a longer buffer.
        let buf = t(&[6], vec![9.0f32, 0.5, -1.0, 2.0, 1.5, 9.0]);
        let offset = buf.slice(&[IndexSpec::range(1, 5, 1)]).unwrap();
        let bias = t(&[6], vec![9.0f32, 0.25, 0.0, -0.75, 3.0, 9.0])
            .slice(&[IndexSpec::range(1, 5, 1)])
            .unwrap();
        assert!(offset.is_contiguous() && bias.is_contiguous());
        assert_eq!(run(&offset, &bias), want);
        let reversed = t(&[4], vec![1.5f32, 2.0, -1.0, 0.5])
            .slice(&[IndexSpec::range(-1, i64::MIN, -1)])
            .unwrap();
        assert!(!reversed.is_contiguous());
        assert_eq!(run(&reversed, &bias), want);
        let ones = run(&plain(vec![2.0; 4]), &plain(vec![1.0; 4]));
        assert_eq!(run(&t(&[1], vec![2.0f32]), &t(&[1], vec![1.0f32])), ones);
    }

    fn rms(axis: i64, eps: f64) -> Arc<dyn Op> {
        op("rms_norm", Attrs::new().with("axis", axis).with("epsilon", eps))
    }

    #[test]
    fn rms_norm_scales_each_block_by_its_root_mean_square() {
        // Rows [3, 4] and [1, -1]: mean squares 12.5 and 1, no centering.
        let x = t(&[2, 2], vec![3.0f64, 4.0, 1.0, -1.0]);
        let o = run_all(&*rms(-1, 0.0), std::slice::from_ref(&x)).unwrap();
        assert_eq!(o.len(), 1);
        let r = 12.5f64.sqrt();
        close(&f64s(&o[0]), &[3.0 / r, 4.0 / r, 1.0, -1.0]);
        // Scale broadcasts into the normalized shape; epsilon joins the mean.
        let scale = t(&[2], vec![2.0f64, -1.0]);
        let o = run_all(&*rms(1, 3.0), &[x.clone(), scale]).unwrap();
        close(
            &f64s(&o[0]),
            &[6.0 / 15.5f64.sqrt(), -4.0 / 15.5f64.sqrt(), 1.0, 0.5],
        );
        // axis 0: one block of all four, mean square 27 / 4.
        let o = run_all(&*rms(-2, 0.0), &[x]).unwrap();
        let r = 6.75f64.sqrt();
        close(&f64s(&o[0]), &[3.0 / r, 4.0 / r, 1.0 / r, -1.0 / r]);
        // f32 views, NaN stays in its block, empty inputs.
        let x = t(&[2, 2], vec![0.0f32, 2.0, f32::NAN, 2.0])
            .transpose(None)
            .unwrap();
        let y = f64s(&run_all(&*rms(-1, 0.0), &[x]).unwrap()[0]);
        assert!(
            y[0].is_nan() && y[1].is_nan() && y[2] == 1.0 && y[3] == 1.0,
            "{y:?}"
        );
        let o = run_all(&*rms(-1, 1e-5), &[t::<f32>(&[2, 0], vec![])]).unwrap();
        assert_eq!(o[0].shape(), &[2, 0]);
        // No bias input; the same errors as layer_norm's otherwise.
        let x = t(&[2, 3], vec![1.0f32; 6]);
        let one = t(&[3], vec![1.0f32; 3]);
        assert!(run_all(&*rms(-1, 0.0), &[x.clone(), one.clone(), one]).is_err());
        let e = run_all(&*rms(-1, 0.0), &[x.clone(), t(&[2], vec![1.0f32, 1.0])]).unwrap_err();
        assert_cause!(e, Shape, "'rms_norm'", "scale (input 1)", "[2]");
        assert!(run_all(&*rms(2, 0.0), &[x]).is_err());
        assert!(run_all(&*rms(0, 0.0), &[t(&[2], vec![1i64, 2])]).is_err());
        let e = run_all(&*rms(0, 0.0), &[t(&[], vec![1.0f32])]).unwrap_err();
        assert_cause!(e, Rank, "0-d");
    }

    #[test]
    fn bad_inputs_are_errors() {
        let x = t(&[2, 3], vec![0.0f32; 6]);
        let e = run_all(&*ln(-1, 0.0), &[x.clone(), t(&[2], vec![1.0f32, 1.0])]).unwrap_err();
        assert_cause!(e, Shape, "scale (input 1)", "[2]");
        let e = run_all(&*ln(-1, 0.0), &[x.clone(), t(&[3], vec![1.0f64; 3])]).unwrap_err();
        assert_cause!(e, DType, "f32", "f64");
        assert!(run_all(&*ln(2, 0.0), &[x]).is_err());
        assert!(run_all(&*ln(0, 0.0), &[t(&[2], vec![1i64, 2])]).is_err());
    }
}

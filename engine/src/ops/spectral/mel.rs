//! `mel_weight_matrix(num_mel_bins, dft_length, sample_rate,
//! lower_edge_hertz, upper_edge_hertz)` (ONNX MelWeightMatrix): the
//! `[dft_length/2 + 1, num_mel_bins]` matrix that maps a one-sided
//! spectrum onto triangular mel bands. The first three inputs are integer
//! scalars, the edges float scalars; all are read when the op runs, so
//! the shape may be decided then. Attr `dtype` (default f32) is the
//! output's.
//!
//! As ONNX's reference computes it (in f64): with `mel(f) = 2595·log10(1 +
//! f/700)`, `M` bins and `step = (mel(upper) − mel(lower)) / (M + 2)`,
//! point `p` (0 ≤ p ≤ M+1) is the spectrum bin `floor((dft_length + 1) ·
//! hz(mel(lower) + p·step) / sample_rate)`. Band `i` rises linearly from
//! bin `p_i` (0) to `p_{i+1}` (1) and falls to `p_{i+2}` (exclusive); a
//! zero-width rise is a single 1 at `p_{i+1}`. A point outside the matrix
//! is an error.

use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{op_err, Result};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

const NAME: &str = "mel_weight_matrix";

/// The `mel_weight_matrix` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MelWeightMatrix {
    pub dtype: DType,
}

const INPUTS: [&str; 5] = [
    "num_mel_bins",
    "dft_length",
    "sample_rate",
    "lower_edge_hertz",
    "upper_edge_hertz",
];

fn check(ins: &[TypeInfo]) -> Result<()> {
    for (i, (t, what)) in ins.iter().zip(INPUTS).enumerate() {
        let float = i >= 3;
        let ok_dtype = if float {
            t.dtype.is_float()
        } else {
            matches!(t.dtype, DType::I32 | DType::I64)
        };
        if !ok_dtype
            || t.rank()
                .is_some_and(|r| r != 0 && !(r == 1 && t.shape.as_ref().is_some_and(|s| s[0] == 1)))
        {
            return op_err(format!(
                "op '{NAME}': {what} must be {} scalar, got {} {}",
                if float { "a float" } else { "an i32 or i64" },
                t.dtype,
                t.shape_string()
            ));
        }
    }
    Ok(())
}

/// The matrix, row-major `[bins, m]`, or an error.
pub fn matrix(m: i64, dft: i64, rate: i64, lower: f64, upper: f64) -> Result<(usize, usize, Vec<f64>)> {
    if m < 0 || dft < 0 || rate <= 0 {
        return op_err(format!(
            "op '{NAME}': num_mel_bins {m} and dft_length {dft} must not be negative, sample_rate {rate} must be positive"
        ));
    }
    let (m, bins) = (m as usize, (dft / 2 + 1) as usize);
    let mel = |f: f64| 2595.0 * (f / 700.0).ln_1p() / 10f64.ln();
    let (lo, hi) = (mel(lower), mel(upper));
    let step = (hi - lo) / (m + 2) as f64;
    let points: Vec<i64> = (0..m + 2)
        .map(|p| {
            let hz = 700.0 * ((p as f64 * step + lo) / 2595.0 * 10f64.ln()).exp_m1();
            (((dft + 1) as f64 * hz) / rate as f64).floor() as i64
        })
        .collect();
    let mut out = vec![0.0; bins * m];
    let at = |j: i64, i: usize| -> Result<usize> {
        match usize::try_from(j) {
            Ok(j) if j < bins => Ok(j * m + i),
            _ => op_err(format!(
                "op '{NAME}': band {i} reaches spectrum bin {j}, outside the {bins} bins of dft_length {dft}"
            )),
        }
    };
    for i in 0..m {
        let (l, c, h) = (points[i], points[i + 1], points[i + 2]);
        if c == l {
            out[at(c, i)?] = 1.0;
        } else {
            for j in l..=c {
                out[at(j, i)?] = (j - l) as f64 / (c - l) as f64;
            }
        }
        if h > c {
            for j in c..h {
                out[at(j, i)?] = (h - j) as f64 / (h - c) as f64;
            }
        }
    }
    Ok((bins, m, out))
}

impl Op for MelWeightMatrix {
    fn name(&self) -> &str {
        NAME
    }
    fn arity(&self) -> Arity {
        Arity::exactly(5)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check(inputs)?;
        let known = |t: &TypeInfo| match t.value.as_deref() {
            Some(&[n]) if n >= 0 => Some(n),
            _ => None,
        };
        let rows = known(&inputs[1]).map_or(-1, |d| d / 2 + 1);
        let cols = known(&inputs[0]).unwrap_or(-1);
        Ok(vec![TypeInfo::new(self.dtype, Some(vec![rows, cols]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let tys: Vec<TypeInfo> = inputs.iter().map(TypeInfo::of).collect();
        check(&tys)?;
        let mut v = Vec::with_capacity(5);
        for t in inputs {
            v.push(t.to_f64_vec()?.first().copied().unwrap_or(0.0));
        }
        let (rows, cols, vals) = matrix(v[0] as i64, v[1] as i64, v[2] as i64, v[3], v[4])?;
        let out = ctx.output(0, self.dtype, &[rows, cols])?;
        out.write_f64s(&vals)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        Attrs::new().with("dtype", self.dtype.name())
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register(NAME, |a: &Attrs| {
        a.only(NAME, &["dtype"])?;
        Ok(Arc::new(MelWeightMatrix {
            dtype: a.dtype("dtype")?.unwrap_or(DType::F32),
        }) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::testutil::{op, run_vec, t};

    /// The band edges from their definition, by a search over bins: the
    /// first bin whose frequency `bin·rate/(dft+1)` reaches each edge.
    #[test]
    fn bands_are_triangles_between_mel_spaced_bins() {
        let (m, dft, rate) = (4i64, 64i64, 16000i64);
        let (rows, cols, w) = matrix(m, dft, rate, 100.0, 7000.0).unwrap();
        assert_eq!((rows, cols), (33, 4));
        let mel = |f: f64| 2595.0 * (1.0 + f / 700.0).log10();
        let hz = |x: f64| 700.0 * (10f64.powf(x / 2595.0) - 1.0);
        let step = (mel(7000.0) - mel(100.0)) / 6.0;
        let edge = |p: usize| {
            let f = hz(mel(100.0) + p as f64 * step);
            (0..)
                .find(|&b: &i64| (b + 1) as f64 * rate as f64 / (dft + 1) as f64 > f)
                .unwrap()
        };
        for i in 0..m as usize {
            let (l, c, h) = (edge(i), edge(i + 1), edge(i + 2));
            assert!(l < c && c < h, "{l} {c} {h}");
            for b in 0..rows as i64 {
                let want = if b >= l && b <= c {
                    (b - l) as f64 / (c - l) as f64
                } else if b > c && b < h {
                    (h - b) as f64 / (h - c) as f64
                } else {
                    0.0
                };
                assert!(
                    (w[b as usize * cols + i] - want).abs() < 1e-12,
                    "band {i} bin {b}"
                );
            }
        }
    }

    #[test]
    fn runs_with_scalar_inputs_and_refuses_bad_ones() {
        let o = op(NAME, Attrs::new().with("dtype", "f64"));
        let ins = [
            t(&[], vec![2i32]),
            t(&[], vec![8i32]),
            t(&[], vec![8000i32]),
            t(&[], vec![0.0f32]),
            t(&[], vec![4000.0f32]),
        ];
        let (shape, v) = run_vec::<f64>(&*o, &ins).unwrap();
        assert_eq!(shape, [5, 2]);
        assert_eq!(v, matrix(2, 8, 8000, 0.0, 4000.0).unwrap().2);
        let mut bad = ins.clone();
        bad[2] = t(&[], vec![0i32]);
        assert!(matches!(
            run_vec::<f64>(&*o, &bad).unwrap_err().cause(),
            crate::Error::Op(_)
        ));
        // An upper edge past Nyquist reaches beyond the matrix.
        let mut far = ins.clone();
        far[4] = t(&[], vec![40000.0f32]);
        assert!(matches!(
            run_vec::<f64>(&*o, &far).unwrap_err().cause(),
            crate::Error::Op(_)
        ));
        let mut float_bins = ins;
        float_bins[0] = t(&[], vec![2.0f32]);
        assert!(matches!(
            run_vec::<f64>(&*o, &float_bins).unwrap_err().cause(),
            crate::Error::Op(_)
        ));
    }
}

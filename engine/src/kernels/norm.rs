//! Layer and RMS normalization of contiguous rows (the `layer_norm` op's
//! kernel): each row of `inner` elements is normalized on its own, its
//! statistics accumulated in f64 over eight independent lanes (so the
//! loops vectorize; the f64 sums differ from a left-to-right sum by far
//! less than an f32 or f64 result's rounding) and each output rounded once.
//! Rows split across the rayon pool when there are enough elements.

use rayon::prelude::*;
use rten_simd::{Isa, SimdOp};

use crate::dtype::Element;
use crate::parallel::split;

/// Lanes of the f64 accumulators.
const LANES: usize = 8;

/// What to compute for each row.
#[derive(Clone, Copy, Debug)]
pub struct NormSpec<'a> {
    /// Elements per row (the normalized axes).
    pub inner: usize,
    /// `scale` and `bias`, one per element of a row, as f64.
    pub scale: &'a [f64],
    pub bias: &'a [f64],
    pub epsilon: f64,
    /// RMS normalization: no centering (the mean is taken as 0).
    pub rms: bool,
}

/// `sum(f(v))` over `xs` in f64, in [`LANES`] lanes.
#[inline(always)]
fn lane_sum<T: Element>(xs: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f(v.to_f64());
        }
    }
    let mut s = acc.iter().sum::<f64>();
    for &v in tail {
        s += f(v.to_f64());
    }
    s
}

/// Normalizes one row into `y`; returns its mean and inverse deviation.
#[inline(always)]
fn row<T: Element>(p: &NormSpec<'_>, x: &[T], y: &mut [T]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = if p.rms { 0.0 } else { lane_sum(x, |v| v) / n };
    let var = lane_sum(x, |v| (v - mean) * (v - mean)) / n;
    let inv = 1.0 / (var + p.epsilon).sqrt();
    for (((o, &v), &s), &b) in y.iter_mut().zip(x).zip(p.scale).zip(p.bias) {
        *o = T::from_f64((v.to_f64() - mean) * inv * s + b);
    }
    (mean, inv)
}

/// [`row`] compiled for the CPU's widest SIMD, chosen at run time (see
/// `kernels/wide_loop.rs`): in a portable build its f64 lanes ran two to
/// an SSE2 vector.
struct Row<'a, 'p, T> {
    p: &'a NormSpec<'p>,
    x: &'a [T],
    y: &'a mut [T],
}

impl<T: Element> SimdOp for Row<'_, '_, T> {
    type Output = (f64, f64);

    #[inline(always)]
    fn eval<I: Isa>(self, _isa: I) -> (f64, f64) {
        row(self.p, self.x, self.y)
    }
}

/// Normalizes every row of `x` (C order, rows of `p.inner`) into `y`, and
/// writes each row's mean and inverse deviation to `stats` when given.
pub fn normalize_rows<T: Element>(
    p: &NormSpec<'_>,
    x: &[T],
    y: &mut [T],
    stats: Option<(&mut [T], &mut [T])>,
) {
    let inner = p.inner;
    if inner == 0 {
        // Every row is empty: NaN statistics (the mean of nothing).
        if let Some((m, i)) = stats {
            m.fill(T::from_f64(f64::NAN));
            i.fill(T::from_f64(1.0 / (f64::NAN + p.epsilon).sqrt()));
        }
        return;
    }
    let rows = x.len() / inner;
    let mut st = vec![(0.0, 0.0); if stats.is_some() { rows } else { 0 }];
    let go = |(x, y): (&[T], &mut [T])| Row { p, x, y }.dispatch();
    if split(x.len()) && rows > 1 {
        let res: Vec<(f64, f64)> = x.par_chunks(inner).zip(y.par_chunks_mut(inner)).map(go).collect();
        if !st.is_empty() {
            st = res;
        }
    } else {
        for (k, r) in x.chunks(inner).zip(y.chunks_mut(inner)).enumerate() {
            let s = go(r);
            if let Some(slot) = st.get_mut(k) {
                *slot = s;
            }
        }
    }
    if let Some((m, i)) = stats {
        for ((m, i), &(mean, inv)) in m.iter_mut().zip(i.iter_mut()).zip(&st) {
            *m = T::from_f64(mean);
            *i = T::from_f64(inv);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition: left-to-right f64 sums, one row at a time.
    fn definition(x: &[f64], inner: usize, scale: &[f64], bias: &[f64], eps: f64, rms: bool) -> Vec<f64> {
        let mut y = Vec::new();
        for r in x.chunks(inner) {
            let n = inner as f64;
            let mean = if rms { 0.0 } else { r.iter().sum::<f64>() / n };
            let var = r.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
            let inv = 1.0 / (var + eps).sqrt();
            y.extend(
                r.iter()
                    .enumerate()
                    .map(|(k, v)| (v - mean) * inv * scale[k] + bias[k]),
            );
        }
        y
    }

    proptest! {
        #[test]
        fn rows_match_the_definition(
            rows in 1usize..5,
            inner in 1usize..40,
            seed in prop::collection::vec(-100.0f32..100.0, 200),
            rms in any::<bool>(),
        ) {
            let x: Vec<f32> = (0..rows * inner).map(|i| seed[i % seed.len()] * (1.0 + i as f32 * 0.01)).collect();
            let scale: Vec<f64> = (0..inner).map(|k| 0.5 + k as f64 * 0.1).collect();
            let bias: Vec<f64> = (0..inner).map(|k| k as f64 - 3.0).collect();
            let p = NormSpec { inner, scale: &scale, bias: &bias, epsilon: 1e-5, rms };
            let mut y = vec![0f32; x.len()];
            let (mut m, mut i) = (vec![0f32; rows], vec![0f32; rows]);
            normalize_rows(&p, &x, &mut y, Some((&mut m, &mut i)));
            let xd: Vec<f64> = x.iter().map(|&v| v as f64).collect();
            let want = definition(&xd, inner, &scale, &bias, 1e-5, rms);
            for (g, w) in y.iter().zip(&want) {
                // One f32 rounding of an f64 value (the f64 sums' order
                // moves it by far less).
                prop_assert!((*g as f64 - w).abs() <= 1e-6 * w.abs().max(1.0), "{g} vs {w}");
            }
        }
    }

    #[test]
    fn empty_rows_have_nan_statistics() {
        let p = NormSpec {
            inner: 0,
            scale: &[],
            bias: &[],
            epsilon: 1e-5,
            rms: false,
        };
        let (mut m, mut i) = (vec![0f32; 2], vec![0f32; 2]);
        normalize_rows::<f32>(&p, &[], &mut [], Some((&mut m, &mut i)));
        assert!(m.iter().chain(&i).all(|v| v.is_nan()));
    }
}

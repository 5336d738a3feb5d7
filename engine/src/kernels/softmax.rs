//! Softmax and log-softmax over contiguous rows (the `softmax` op's kernel
//! when its axis is the last and both views are contiguous): per row, the
//! maximum in lanes (NaN if any element is NaN), `exp(x - max)` through the
//! slice kernels of [`VMath`], their sum in lanes, then the quotients (or
//! `x - max - ln(sum)`). Rows split across the rayon pool when there are
//! enough elements.

use rayon::prelude::*;

use crate::dtype::Float;
use crate::kernels::vmath::VMath;
use crate::kernels::MathFn;
use crate::parallel::split;

const LANES: usize = 8;

/// The maximum of `xs`, NaN if any element is NaN, -inf when empty.
#[inline(always)]
fn row_max<T: Float>(xs: &[T]) -> T {
    let mut acc = [T::neg_infinity(); LANES];
    let mut nan = false;
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = if v > *a { v } else { *a };
            nan |= v.is_nan();
        }
    }
    let mut m = T::neg_infinity();
    for &v in acc.iter().chain(tail) {
        m = if v > m { v } else { m };
        nan |= v.is_nan();
    }
    if nan {
        T::nan()
    } else {
        m
    }
}

/// The sum of `xs` in [`LANES`] lanes.
#[inline(always)]
fn row_sum<T: Float>(xs: &[T]) -> T {
    let mut acc = [T::zero(); LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().chain(tail).fold(T::zero(), |s, &v| s + v)
}

fn row<T: Float + VMath>(x: &[T], o: &mut [T], log: bool) {
    let m = row_max(x);
    for (o, &v) in o.iter_mut().zip(x) {
        *o = v - m;
    }
    if log {
        // o holds x - max; the exps go to a scratch row.
        let mut e = o.to_vec();
        T::map_inplace(MathFn::Exp, &mut e);
        let lse = row_sum(&e).ln();
        o.iter_mut().for_each(|v| *v = *v - lse);
    } else {
        T::map_inplace(MathFn::Exp, o);
        let s = row_sum(o);
        o.iter_mut().for_each(|v| *v = *v / s);
    }
}

/// Softmax (or log-softmax) of every row of `inner` elements of `x` into `o`.
pub fn softmax_rows<T: Float + VMath>(x: &[T], o: &mut [T], inner: usize, log: bool) {
    if inner == 0 {
        return;
    }
    if split(x.len()) && x.len() > inner {
        x.par_chunks(inner)
            .zip(o.par_chunks_mut(inner))
            .for_each(|(x, o)| row(x, o, log));
    } else {
        for (x, o) in x.chunks(inner).zip(o.chunks_mut(inner)) {
            row(x, o, log);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition in f64: shifted by the maximum, left-to-right sums.
    fn definition(x: &[f64], log: bool) -> Vec<f64> {
        let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = x.iter().map(|v| (v - m).exp()).collect();
        let s: f64 = e.iter().sum();
        if log {
            x.iter().map(|v| v - m - s.ln()).collect()
        } else {
            e.iter().map(|v| v / s).collect()
        }
    }

    proptest! {
        #[test]
        fn rows_match_the_definition(
            rows in 1usize..4,
            inner in 1usize..50,
            seed in prop::collection::vec(-30.0f32..30.0, 150),
            log in any::<bool>(),
        ) {
            let x: Vec<f32> = seed[..rows * inner].to_vec();
            let mut o = vec![0f32; x.len()];
            softmax_rows(&x, &mut o, inner, log);
            for (xr, or) in x.chunks(inner).zip(o.chunks(inner)) {
                let want = definition(&xr.iter().map(|&v| v as f64).collect::<Vec<_>>(), log);
                for (g, w) in or.iter().zip(&want) {
                    // f32 roundings of x - max (up to an ulp of 60), the
                    // exps and the sum.
                    let tol = if log { 1e-5 * w.abs().max(1.0) } else { 1e-5 * w.abs() + 1e-12 };
                    prop_assert!((*g as f64 - w).abs() <= tol, "{g} vs {w}");
                }
            }
        }
    }

    #[test]
    fn nan_and_infinite_maxima_give_nan_rows() {
        let x = [1.0f32, f32::NAN, 2.0, 0.0, 1.0, f32::INFINITY];
        let mut o = [0f32; 6];
        softmax_rows(&x, &mut o, 3, false);
        assert!(o.iter().all(|v| v.is_nan()), "{o:?}");
        let x = [f32::NEG_INFINITY; 9];
        let mut o = [0f32; 9];
        softmax_rows(&x, &mut o, 9, true);
        assert!(o.iter().all(|v| v.is_nan()), "{o:?}");
    }
}

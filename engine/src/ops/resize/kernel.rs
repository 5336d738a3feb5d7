//! The resize kernels: separable weighted row sums in f64 (one pass per
//! interpolated axis, in the cheapest order) and the nearest gather.

use ndarray::{ArrayViewD, ArrayViewMutD};

use crate::dtype::{DType, Element, Num};
use crate::error::{op_err, Error, Result};
use crate::ops::window::odometer;
use crate::tensor::limit::{check_alloc, numel};
use crate::tensor::Tensor;

use super::geometry::{Axis, Taps, OUTSIDE};
use super::Resize;

impl Resize {
    /// Linear or cubic interpolation of contiguous `x` (of the axes'
    /// input shape) into contiguous `out`, an axis at a time.
    pub(super) fn interpolate(&self, x: &[f64], axes: &[Axis], out: &mut [f64]) -> Result<()> {
        let passes: Vec<(usize, Taps)> = axes
            .iter()
            .enumerate()
            .filter(|(_, a)| !self.is_identity(a))
            .map(|(d, a)| (d, self.taps(a)))
            .collect();
        if passes.is_empty() {
            out.copy_from_slice(x);
            return Ok(());
        }
        let fill = self.extrapolation_value;
        let mut shape: Vec<usize> = axes.iter().map(|a| a.input).collect();
        let order = pass_order(&shape, &passes);
        let mut held: Vec<f64> = Vec::new();
        for (k, (d, taps)) in order.iter().map(|&p| &passes[p]).enumerate() {
            let outer: usize = shape[..*d].iter().product();
            let inner: usize = shape[d + 1..].iter().product();
            let n_in = shape[*d];
            shape[*d] = taps.output;
            let src: &[f64] = if k == 0 { x } else { &held };
            if k + 1 == passes.len() {
                resample(src, outer, n_in, inner, taps, fill, out);
            } else {
                let len = numel(&shape)?;
                check_alloc(DType::F64, len)?;
                let mut next = vec![0.0; len];
                resample(src, outer, n_in, inner, taps, fill, &mut next);
                held = next;
            }
        }
        Ok(())
    }
}

/// The order to run `passes` (axis, taps) in on a tensor of `shape`: the
/// cheapest of every order (up to six passes; more keep theirs) by a cost
/// model where a pass costs its output size times its taps, four times as
/// much when its rows are shorter than a vector (a gather per element).
/// Upsampling 2x in H and W, that runs W first, on the smaller tensor.
/// Only rounding depends on the order (in f64, below what an f32 or f16
/// output keeps); a `tf_crop_and_resize` position outside on any axis
/// still gets the extrapolation value.
pub(super) fn pass_order(shape: &[usize], passes: &[(usize, Taps)]) -> Vec<usize> {
    let natural: Vec<usize> = (0..passes.len()).collect();
    if passes.len() > 6 {
        return natural;
    }
    let cost = |order: &[usize]| -> f64 {
        let mut s: Vec<f64> = shape.iter().map(|&v| v as f64).collect();
        let mut total = 0.0;
        for &p in order {
            let (d, taps) = &passes[p];
            s[*d] = taps.output as f64;
            let inner: f64 = s[d + 1..].iter().product();
            let size: f64 = s.iter().product();
            total += size * taps.n as f64 * if inner < 8.0 { 4.0 } else { 1.0 };
        }
        total
    };
    let mut best = (cost(&natural), natural.clone());
    let mut order = natural;
    // Heap's algorithm: every permutation, one swap apart.
    let mut c = vec![0usize; order.len()];
    let mut i = 1;
    while i < order.len() {
        if c[i] < i {
            order.swap(if i % 2 == 0 { 0 } else { c[i] }, i);
            let k = cost(&order);
            if k < best.0 {
                best = (k, order.clone());
            }
            c[i] += 1;
            i = 1;
        } else {
            c[i] = 0;
            i += 1;
        }
    }
    best.1
}

/// Scales `w` to sum to 1 (left alone when it sums to 0).
pub(super) fn normalize(w: &mut [f64]) {
    let sum: f64 = w.iter().sum();
    if sum != 0.0 {
        w.iter_mut().for_each(|v| *v /= sum);
    }
}

/// One axis of `src` (`[outer, n_in, inner]`) resampled into `dst`
/// (`[outer, taps.output, inner]`).
pub(super) fn resample(
    src: &[f64],
    outer: usize,
    n_in: usize,
    inner: usize,
    taps: &Taps,
    fill: f64,
    dst: &mut [f64],
) {
    let (out, n) = (taps.output, taps.n);
    for b in 0..outer {
        let s = &src[b * n_in * inner..(b + 1) * n_in * inner];
        let d = &mut dst[b * out * inner..(b + 1) * out * inner];
        if inner == 1 {
            match n {
                2 => gather_row::<2>(s, taps, fill, d),
                4 => gather_row::<4>(s, taps, fill, d),
                _ => gather_row::<0>(s, taps, fill, d),
            }
            continue;
        }
        for (o, row) in d.chunks_exact_mut(inner).enumerate() {
            if taps.outside[o] {
                row.fill(fill);
                continue;
            }
            let (idx, w) = (&taps.idx[o * n..][..n], &taps.w[o * n..][..n]);
            let first = &s[idx[0] * inner..][..inner];
            for (y, &v) in row.iter_mut().zip(first) {
                *y = w[0] * v;
            }
            for (&i, &wk) in idx.iter().zip(w).skip(1) {
                let from = &s[i * inner..][..inner];
                for (y, &v) in row.iter_mut().zip(from) {
                    *y += wk * v;
                }
            }
        }
    }
}

/// One row of an innermost axis: `d[o] = Σₖ w·s[idx]` over output `o`'s
/// taps. `N` is the tap count when it is 2 or 4 (so the sum unrolls), 0
/// for any other count.
pub(super) fn gather_row<const N: usize>(s: &[f64], taps: &Taps, fill: f64, d: &mut [f64]) {
    let n = if N == 0 { taps.n } else { N };
    let rows = taps.idx.chunks_exact(n).zip(taps.w.chunks_exact(n));
    for ((y, (idx, w)), &outside) in d.iter_mut().zip(rows).zip(&taps.outside) {
        *y = if outside {
            fill
        } else if N == 0 {
            idx.iter().zip(w).fold(0.0, |acc, (&i, &wk)| acc + wk * s[i])
        } else {
            let mut acc = 0.0;
            for k in 0..N {
                acc += w[k] * s[idx[k]];
            }
            acc
        };
    }
}

/// `out[o] = x[Σ maps[d][o_d]]` over the output's multi-index (the maps
/// hold offsets into contiguous `x`), or `fill` where some map is
/// [`OUTSIDE`].
pub(super) fn gather<T: Copy>(x: &[T], maps: &[Vec<usize>], shape: &[usize], fill: T, out: &mut [T]) {
    let Some((last, rows)) = maps.split_last() else {
        out.copy_from_slice(&x[..out.len()]);
        return;
    };
    let width = last.len();
    if width == 0 || out.is_empty() {
        return;
    }
    let mut idx = vec![0usize; rows.len()];
    for row in out.chunks_exact_mut(width) {
        let base = idx.iter().zip(rows).try_fold(0usize, |acc, (&i, m)| {
            let v = m[i];
            (v != OUTSIDE).then(|| acc + v)
        });
        match base {
            None => row.fill(fill),
            Some(base) => {
                for (y, &m) in row.iter_mut().zip(last) {
                    *y = if m == OUTSIDE { fill } else { x[base + m] };
                }
            }
        }
        odometer(&mut idx, shape[..rows.len()].iter().copied());
    }
}

/// `v` as an element of `T` the way ONNX's reference stores its float
/// result: integers rounded half to even and saturated.
pub(super) fn saturate<T: Num>(v: f64) -> T {
    if T::DTYPE.is_float() {
        return T::from_f64(v);
    }
    let (lo, hi) = (T::min_value(), T::max_value());
    let r = v.round_ties_even();
    if r <= lo.to_f64() {
        lo
    } else if r >= hi.to_f64() {
        hi
    } else {
        T::from_f64(r)
    }
}

/// Runs `kernel` on `x`'s elements in C order and `out`'s (through a
/// scratch buffer when `out` is not contiguous).
pub(super) fn run<T: Element>(
    x: &Tensor,
    out: &Tensor,
    kernel: impl FnOnce(&[T], &mut [T]) -> Result<()>,
) -> Result<()> {
    x.read(|xv: ArrayViewD<'_, T>| {
        let xc = xv.as_standard_layout();
        let Some(xs) = xc.as_slice() else {
            return op_err("internal: resize input is not contiguous");
        };
        out.write(|mut ov: ArrayViewMutD<'_, T>| match ov.as_slice_mut() {
            Some(s) => kernel(xs, s),
            None => {
                let mut tmp = vec![T::default(); ov.len()];
                kernel(xs, &mut tmp)?;
                let tmp = ArrayViewD::from_shape(ov.shape(), &tmp[..])
                    .map_err(|e| Error::Op(format!("internal: resize output: {e}")))?;
                ov.assign(&tmp);
                Ok(())
            }
        })?
    })?
}

impl Resize {
    /// Linear or cubic interpolation of `x` into `out`: f64 directly, f32
    /// and f16 widened to f64 and rounded once on the way out, as ONNX's
    /// reference computes (an output near 0 from inputs that cancel keeps
    /// its digits).
    pub(super) fn interpolate_as<T: Element>(&self, x: &Tensor, axes: &[Axis], out: &Tensor) -> Result<()> {
        if T::DTYPE == DType::F64 {
            return run::<f64>(x, out, |xs, o| self.interpolate(xs, axes, o));
        }
        let xs: Vec<f64> = x.read(|v: ArrayViewD<'_, T>| {
            let c = v.as_standard_layout();
            match c.as_slice() {
                Some(s) => s.iter().map(|e| e.to_f64()).collect(),
                None => c.iter().map(|e| e.to_f64()).collect(),
            }
        })?;
        check_alloc(DType::F64, out.size())?;
        let mut y = vec![0.0; out.size()];
        self.interpolate(&xs, axes, &mut y)?;
        out.write_f64s(&y)
    }
}

/// [`gather`] from `x` into `out`.
pub(super) fn run_nearest<T: Element>(
    x: &Tensor,
    out: &Tensor,
    maps: &[Vec<usize>],
    shape: &[usize],
    fill: T,
) -> Result<()> {
    run::<T>(x, out, |xs, o| {
        gather(xs, maps, shape, fill, o);
        Ok(())
    })
}

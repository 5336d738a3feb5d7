//! The one tolerance comparison of two tensors, shared by the suite runner,
//! `vigil compare` and DebugMode.
//!
//! Rules: elements are compared in logical order; integers and bools
//! compare exactly; floats match when `|got - want| <= atol + rtol * |want|`
//! (numpy's `allclose`), NaN matches NaN, an infinity matches only the same
//! infinity, and NaN against a number is an infinite error.

use serde::Serialize;

use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::parallel::PASS_CHUNK;
use crate::tensor::Tensor;

/// How close two values must be.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

impl Tolerance {
    pub const EXACT: Tolerance = Tolerance { rtol: 0.0, atol: 0.0 };

    pub fn new(rtol: f64, atol: f64) -> Tolerance {
        Tolerance { rtol, atol }
    }

    /// The default for comparing values of `dtype`: a few ULP of relative
    /// error for floats (f16's epsilon is 2^-10, about 1e-3; f32's 1.2e-7;
    /// f64's 2.2e-16), exact for integers and bools.
    pub fn default_for(dtype: DType) -> Tolerance {
        match dtype {
            DType::F16 => Tolerance::new(1e-3, 1e-5),
            // bf16's epsilon is 2^-7.
            DType::BF16 => Tolerance::new(8e-3, 1e-5),
            // One step of the format's mantissa: a value rounded from f32
            // and one rounded from f64 may differ by one code.
            DType::F8E4M3FN | DType::F8E4M3FNUZ => Tolerance::new(0.125, 0.0),
            DType::F8E5M2 | DType::F8E5M2FNUZ => Tolerance::new(0.25, 0.0),
            DType::F4E2M1 => Tolerance::new(0.5, 0.0),
            DType::F8E8M0 => Tolerance::new(1.0, 0.0),
            DType::F32 => Tolerance::new(1e-5, 1e-6),
            DType::F64 => Tolerance::new(1e-12, 1e-12),
            _ => Tolerance::EXACT,
        }
    }
}

/// At most this many mismatching elements are listed.
pub const MAX_LISTED: usize = 10;

/// At most this many element errors are kept in [`Comparison::sample`]:
/// enough to plot where two tensors diverge.
pub const MAX_SAMPLE: usize = 256;

/// One element outside tolerance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mismatch {
    pub index: Vec<usize>,
    pub got: f64,
    pub want: f64,
}

/// What [`compare`] found.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Comparison {
    /// The reference's dtype (for printing values at its precision).
    pub dtype: Option<DType>,
    pub elements: usize,
    /// Elements outside tolerance.
    pub mismatched: usize,
    /// Elements not bit-for-bit (numerically) equal, within tolerance or not.
    pub differing: usize,
    pub max_abs: f64,
    pub max_rel: f64,
    /// Largest distance in units in the last place (floats only).
    pub max_ulp: u64,
    /// The first [`MAX_LISTED`] mismatches, in logical order.
    pub first: Vec<Mismatch>,
    /// When any element differs: the absolute error of every
    /// `sample_step`-th element in logical order (at most [`MAX_SAMPLE`];
    /// NaN against a number is infinite). Empty when all agree.
    pub sample: Vec<f64>,
    pub sample_step: usize,
    pub dtype_differs: bool,
    pub shape_differs: bool,
    /// Same values, different memory layout (not a mismatch by itself).
    pub strides_differ: bool,
}

impl Comparison {
    /// Same dtype, shape and values, element for element.
    pub fn is_exact(&self) -> bool {
        !self.dtype_differs && !self.shape_differs && self.differing == 0
    }

    /// Same dtype and shape, every element within tolerance.
    pub fn is_close(&self) -> bool {
        !self.dtype_differs && !self.shape_differs && self.mismatched == 0
    }
}

/// Compares `got` with `want`.
pub fn compare(got: &Tensor, want: &Tensor, tol: Tolerance) -> Result<Comparison> {
    let mut c = Comparison {
        dtype: Some(want.dtype()),
        elements: want.size(),
        dtype_differs: got.dtype() != want.dtype(),
        shape_differs: got.shape() != want.shape(),
        strides_differ: got.strides() != want.strides(),
        ..Comparison::default()
    };
    if c.dtype_differs || c.shape_differs {
        return Ok(c);
    }
    let dtype = got.dtype();
    crate::dispatch_all!(dtype, T => compare_typed::<T>(got, want, dtype, tol, &mut c)?);
    Ok(c)
}

fn same<T: Element>(x: T, y: T) -> bool {
    #[allow(clippy::eq_op)]
    let both_nan = (x != x) & (y != y);
    (x == y) | both_nan
}

fn compare_typed<T: Element>(
    got: &Tensor,
    want: &Tensor,
    dtype: DType,
    tol: Tolerance,
    c: &mut Comparison,
) -> Result<()> {
    got.read::<T, _>(|a| {
        want.read::<T, _>(|b| {
            // Fast path: one pass, no arithmetic, when all elements agree.
            if all_same(&a, &b) {
                return;
            }
            let step = c.elements.div_ceil(MAX_SAMPLE).max(1);
            c.sample_step = step;
            for (i, ((idx, &x), &y)) in a.indexed_iter().zip(b.iter()).enumerate() {
                let sampled = i % step == 0;
                if same(x, y) {
                    if sampled {
                        c.sample.push(0.0);
                    }
                    continue;
                }
                c.differing += 1;
                let (xf, yf) = (x.to_f64(), y.to_f64());
                let d = (xf - yf).abs();
                let d = if d.is_nan() { f64::INFINITY } else { d };
                let rel = if yf != 0.0 && yf.is_finite() {
                    d / yf.abs()
                } else {
                    f64::INFINITY
                };
                if sampled {
                    c.sample.push(d);
                }
                c.max_abs = c.max_abs.max(d);
                c.max_rel = c.max_rel.max(rel);
                c.max_ulp = c.max_ulp.max(ulp_distance(xf, yf, dtype));
                let limit = tol.atol + tol.rtol * yf.abs();
                let bad = !dtype.is_float() || !xf.is_finite() || !yf.is_finite() || d > limit;
                if bad {
                    c.mismatched += 1;
                    if c.first.len() < MAX_LISTED {
                        c.first.push(Mismatch {
                            index: ndarray::Dimension::slice(&idx).to_vec(),
                            got: xf,
                            want: yf,
                        });
                    }
                }
            }
        })
    })??;
    Ok(())
}

/// Whether every element of `a` is [`same`] as its partner in `b`. On
/// contiguous data of one layout this runs over fixed-size blocks without
/// an early exit inside a block, so the compiler vectorizes it, and long
/// slices are split across the rayon pool like the elementwise kernels
/// (see [`crate::parallel`]): the check runs at memory bandwidth.
fn all_same<T: Element>(a: &ndarray::ArrayViewD<'_, T>, b: &ndarray::ArrayViewD<'_, T>) -> bool {
    let blocks_same = slices_same::<T>;
    match (a.as_slice_memory_order(), b.as_slice_memory_order()) {
        (Some(x), Some(y)) if a.strides() == b.strides() => {
            use rayon::prelude::*;
            if !crate::parallel::split(x.len()) {
                return blocks_same(x, y);
            }
            x.par_chunks(PASS_CHUNK)
                .zip(y.par_chunks(PASS_CHUNK))
                .all(|(p, q)| blocks_same(p, q))
        }
        _ => ndarray::Zip::from(a).and(b).all(|&x, &y| same(x, y)),
    }
}

/// Whether `x` and `y` (of one length) agree element for element, NaN
/// matching NaN: the fast path of [`compare`], over fixed-size blocks
/// without an early exit inside a block, so the compiler vectorizes it.
pub fn slices_same<T: Element>(x: &[T], y: &[T]) -> bool {
    const BLOCK: usize = 256;
    x.len() == y.len()
        && x.chunks(BLOCK)
            .zip(y.chunks(BLOCK))
            .all(|(p, q)| p.iter().zip(q).fold(true, |ok, (&u, &v)| ok & same(u, v)))
}

/// Distance in representable values of `dtype` between two floats (0 for
/// other dtypes, `u64::MAX` when one is NaN).
pub fn ulp_distance(x: f64, y: f64, dtype: DType) -> u64 {
    if x.is_nan() || y.is_nan() {
        return if x.is_nan() && y.is_nan() { 0 } else { u64::MAX };
    }
    // Map the bit patterns to a monotonic integer line.
    fn ordered32(v: f32) -> i64 {
        let b = v.to_bits() as i32;
        (if b < 0 { i32::MIN - b } else { b }) as i64
    }
    fn ordered64(v: f64) -> i128 {
        let b = v.to_bits() as i64;
        (if b < 0 { i64::MIN - b } else { b }) as i128
    }
    fn ordered16(v: f64) -> i64 {
        let b = crate::dtype::f16_from_f64(v).to_bits() as i16;
        (if b < 0 { i16::MIN - b } else { b }) as i64
    }
    match dtype {
        DType::F32 => (ordered32(x as f32) - ordered32(y as f32)).unsigned_abs(),
        DType::F16 => (ordered16(x) - ordered16(y)).unsigned_abs(),
        DType::BF16 => {
            let o = |v: f64| {
                let b = crate::dtype::bf16_from_f64(v).to_bits() as i16;
                (if b < 0 { i16::MIN - b } else { b }) as i64
            };
            (o(x) - o(y)).unsigned_abs()
        }
        d if d.is_small_float() => (crate::small::ordinal(d, x) - crate::small::ordinal(d, y)).unsigned_abs(),
        DType::F64 => (ordered64(x) - ordered64(y)).unsigned_abs().min(u64::MAX as u128) as u64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t32(v: &[f32]) -> Tensor {
        Tensor::from_vec(&[v.len()], v.to_vec()).unwrap()
    }

    #[test]
    fn nan_and_infinities_follow_the_rules() {
        let a = t32(&[f32::NAN, f32::INFINITY, 1.0, -0.0]);
        let b = t32(&[f32::NAN, f32::INFINITY, 1.0, 0.0]);
        assert!(compare(&a, &b, Tolerance::EXACT).unwrap().is_exact());
        let c = compare(
            &t32(&[f32::NAN, f32::INFINITY]),
            &t32(&[1.0, f32::NEG_INFINITY]),
            Tolerance::new(1.0, 1.0),
        )
        .unwrap();
        assert_eq!(
            c.mismatched, 2,
            "NaN vs a number and opposite infinities never match"
        );
        assert_eq!(c.max_abs, f64::INFINITY);
        assert_eq!(c.max_rel, f64::INFINITY);
    }

    #[test]
    fn tolerance_ulps_and_first_indices() {
        let want: Vec<f32> = (0..30).map(|i| i as f32).collect();
        let mut got = want.clone();
        got[3] = f32::from_bits(3f32.to_bits() + 2); // 2 ULP off
        for g in got.iter_mut().skip(10) {
            *g += 0.5;
        }
        let a = Tensor::from_vec(&[5, 6], got).unwrap();
        let b = Tensor::from_vec(&[5, 6], want).unwrap();
        let c = compare(&a, &b, Tolerance::new(1e-5, 1e-5)).unwrap();
        assert_eq!(c.differing, 21);
        assert_eq!(c.mismatched, 20, "the 2-ULP element is within tolerance");
        assert_eq!(c.first.len(), MAX_LISTED);
        assert_eq!(c.first[0].index, vec![1, 4]);
        assert_eq!((c.first[0].got, c.first[0].want), (10.5, 10.0));
        assert_eq!(c.max_abs, 0.5);
        assert!(c.max_ulp >= 2);
        assert!(!c.is_close() && !c.is_exact());
        assert_eq!(c.sample_step, 1);
        assert_eq!(c.sample.len(), 30);
        assert_eq!((c.sample[0], c.sample[12]), (0.0, 0.5));
        assert_eq!(
            ulp_distance(1.0, f32::from_bits(1f32.to_bits() + 1) as f64, DType::F32),
            1
        );
        assert_eq!(ulp_distance(-0.0, 0.0, DType::F64), 0);
        assert_eq!(ulp_distance(f64::from_bits(1), -f64::from_bits(1), DType::F64), 2);
    }

    #[test]
    fn large_tensors_sample_their_errors_and_blocks_find_one_difference() {
        let want: Vec<f64> = (0..1000).map(f64::from).collect();
        let mut got = want.clone();
        got[517] = f64::NAN;
        let c = compare(
            &Tensor::from_vec(&[1000], got).unwrap(),
            &Tensor::from_vec(&[1000], want).unwrap(),
            Tolerance::EXACT,
        )
        .unwrap();
        assert_eq!((c.differing, c.sample_step, c.sample.len()), (1, 4, 250));
        assert!(c.sample.iter().all(|&e| e == 0.0), "517 is not a multiple of 4");
        assert_eq!(c.first[0].index, vec![517]);
        assert_eq!(c.max_abs, f64::INFINITY);
    }

    #[test]
    fn long_tensors_find_one_difference_in_any_part_with_and_without_threads() {
        let n = 5 * PASS_CHUNK + 3;
        let want: Vec<f32> = (0..n).map(|i| i as f32).collect();
        for threads in [true, false] {
            crate::parallel::set_intra_op(threads);
            for at in [0, PASS_CHUNK - 1, PASS_CHUNK, 3 * PASS_CHUNK + 17, n - 1] {
                let mut got = want.clone();
                got[at] = -1.0;
                let c = compare(
                    &Tensor::from_vec(&[n], got).unwrap(),
                    &Tensor::from_vec(&[n], want.clone()).unwrap(),
                    Tolerance::EXACT,
                )
                .unwrap();
                assert_eq!(
                    (c.differing, c.first[0].index.clone()),
                    (1, vec![at]),
                    "threads {threads}"
                );
            }
            let same = Tensor::from_vec(&[n], want.clone()).unwrap();
            assert_eq!(
                compare(&same, &same.deep_copy().unwrap(), Tolerance::EXACT)
                    .unwrap()
                    .differing,
                0
            );
        }
        crate::parallel::set_intra_op(true);
    }

    #[test]
    fn integers_are_exact_and_layouts_are_reported() {
        let a = Tensor::from_vec(&[2, 2], vec![1i64, 2, 3, i64::MAX]).unwrap();
        let b = Tensor::from_vec(&[2, 2], vec![1i64, 2, 3, i64::MAX - 1]).unwrap();
        let c = compare(&a, &b, Tolerance::new(1.0, 1.0)).unwrap();
        assert_eq!(
            c.mismatched, 1,
            "above 2^53, f64 cannot tell them apart; exact can"
        );
        let t = a.t(None).unwrap();
        let tc = t.to_contiguous().unwrap();
        let c = compare(&t, &tc, Tolerance::EXACT).unwrap();
        assert!(c.is_exact() && c.strides_differ);
        let c = compare(&a, &t32(&[1.0]), Tolerance::EXACT).unwrap();
        assert!(c.dtype_differs && c.shape_differs && !c.is_close());
    }
}

//! The last few columns of an f32 product `C = A · B` as dot products:
//! `c_ij = a_i · b_j` for a row-major `A` and each column `b_j` of `B`
//! copied out contiguous.
//!
//! The GEMM crate's AVX2 kernel tiles the columns of a row-major `C` by 24
//! and runs the few left over (1 to 8) through a one-vector kernel that
//! costs about as much per column as a whole tile: a 1×1 conv over a 7×7
//! plane (49 columns) took 1.38x the time of the same product over 48
//! columns. Its AVX-512 kernel tiles by 16 and runs the rest as one masked
//! vector. Read as dot products, those columns cost one more pass over `A`.
//!
//! Each `c_ij` sums its products lane by lane in `k` order, one fused
//! multiply-add per vector of `k`, then adds up the lanes: the same bits on
//! any thread count.

use rayon::prelude::*;
use rten_simd::ops::{BitOps, NumOps};
use rten_simd::{Isa, SimdOp};

use super::fastmath;

/// Columns of `C` per pass over the rows of `A`.
pub const MAX_COLS: usize = 4;

/// Rows of `A` per task when the rows split among threads.
const TASK_ROWS: usize = 64;

/// `c[i · ldc + j] = Σ_k a[i · lda + k] · cols[j · k_len + k]` for every
/// row `i < c.len().div_ceil(ldc)` and column `j < cols.len() / k_len`.
/// Rows split among threads when `par`. False, with nothing written, when
/// the CPU lacks AVX2 and FMA or the slices are too short for that.
pub fn dots_f32(
    a: &[f32],
    lda: usize,
    k_len: usize,
    cols: &[f32],
    c: &mut [f32],
    ldc: usize,
    par: bool,
) -> bool {
    let t = cols.len().checked_div(k_len).unwrap_or(0);
    if !fastmath::available() || t == 0 || t > ldc || lda < k_len {
        return false;
    }
    let rows = c.len().div_ceil(ldc);
    if rows == 0 {
        return true;
    }
    if c.len() < (rows - 1) * ldc + t || a.len() < (rows - 1) * lda + k_len {
        return false;
    }
    let run = |(i, c): (usize, &mut [f32])| {
        let r0 = i * TASK_ROWS;
        let n = c.len().div_ceil(ldc);
        Rows {
            a: &a[r0 * lda..],
            lda,
            k: k_len,
            cols,
            c,
            ldc,
            rows: n,
        }
        .dispatch()
    };
    if par && rows > TASK_ROWS {
        c.par_chunks_mut(TASK_ROWS * ldc).enumerate().for_each(run);
    } else {
        run((0, c));
    }
    true
}

/// Rows `..rows` of `A` (row `i` at `a[i · lda..]`) against every column.
struct Rows<'a> {
    a: &'a [f32],
    lda: usize,
    k: usize,
    cols: &'a [f32],
    c: &'a mut [f32],
    ldc: usize,
    rows: usize,
}

impl SimdOp for Rows<'_> {
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) {
        let Rows {
            a,
            lda,
            k,
            cols,
            c,
            ldc,
            rows,
        } = self;
        let row = |i: usize| &a[i * lda..i * lda + k];
        let col = |j: usize| &cols[j * k..(j + 1) * k];
        let t = cols.len() / k;
        let mut j = 0;
        while j < t {
            let w = (t - j).min(MAX_COLS);
            let mut i = 0;
            macro_rules! block {
                ($r:literal, $t:literal) => {{
                    while i + $r <= rows {
                        let s = block::<I, $r, $t>(
                            isa,
                            std::array::from_fn(|q| row(i + q)),
                            std::array::from_fn(|q| col(j + q)),
                        );
                        for (q, s) in s.iter().enumerate() {
                            c[(i + q) * ldc + j..][..$t].copy_from_slice(s);
                        }
                        i += $r;
                    }
                    while i < rows {
                        let [s] = block::<I, 1, $t>(isa, [row(i)], std::array::from_fn(|q| col(j + q)));
                        c[i * ldc + j..][..$t].copy_from_slice(&s);
                        i += 1;
                    }
                }};
            }
            match w {
                1 => block!(8, 1),
                2 => block!(4, 2),
                3 => block!(2, 3),
                _ => block!(2, 4),
            }
            j += w;
        }
    }
}

/// The `R × T` dot products of `rows` with `cols` (all `k` long): `R · T`
/// vector accumulators, so the fused multiply-adds do not wait on one
/// another.
#[inline(always)]
fn block<I: Isa, const R: usize, const T: usize>(
    isa: I,
    rows: [&[f32]; R],
    cols: [&[f32]; T],
) -> [[f32; T]; R] {
    let ops = isa.f32();
    let lanes = ops.len();
    let k = cols[0].len();
    let mut acc = [[ops.zero(); T]; R];
    let mut p = 0;
    while p + lanes <= k {
        let cv: [_; T] = std::array::from_fn(|j| ops.load(&cols[j][p..]));
        for (r, acc) in rows.iter().zip(acc.iter_mut()) {
            let av = ops.load(&r[p..]);
            for (acc, &cv) in acc.iter_mut().zip(&cv) {
                *acc = ops.mul_add(av, cv, *acc);
            }
        }
        p += lanes;
    }
    if p < k {
        let cv: [_; T] = std::array::from_fn(|j| ops.load_pad(&cols[j][p..]).0);
        for (r, acc) in rows.iter().zip(acc.iter_mut()) {
            let av = ops.load_pad(&r[p..]).0;
            for (acc, &cv) in acc.iter_mut().zip(&cv) {
                *acc = ops.mul_add(av, cv, *acc);
            }
        }
    }
    acc.map(|a| a.map(|v| ops.sum(v)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `c` against the f64 definition, within the bound of an f32 sum of
    /// `k` products: `k · ε · Σ |a_ik b_kj|`.
    fn check(m: usize, k: usize, t: usize, lda: usize, ldc: usize, seed: u64) {
        let val = |i: usize, s: u64| ((i as u64 * 2_654_435_761 + s) % 1013) as f32 / 256.0 - 2.0;
        let a: Vec<f32> = (0..(m - 1) * lda + k).map(|i| val(i, seed)).collect();
        let cols: Vec<f32> = (0..t * k).map(|i| val(i, seed ^ 77)).collect();
        let mut c = vec![f32::NAN; (m - 1) * ldc + t];
        let par = m > TASK_ROWS;
        assert!(dots_f32(&a, lda, k, &cols, &mut c, ldc, par));
        for i in 0..m {
            for j in 0..t {
                let (mut want, mut mag) = (0f64, 0f64);
                for p in 0..k {
                    let x = f64::from(a[i * lda + p]) * f64::from(cols[j * k + p]);
                    want += x;
                    mag += x.abs();
                }
                let got = f64::from(c[i * ldc + j]);
                let bound = (k as f64 + 1.0) * f64::from(f32::EPSILON) * mag;
                assert!(
                    (got - want).abs() <= bound,
                    "m {m} k {k} t {t}: c[{i}, {j}] = {got}, want {want}"
                );
            }
        }
    }

    #[test]
    fn tail_columns_match_the_definition() {
        if !fastmath::available() {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        }
        for t in 1..=9 {
            check(19, 37, t, 40, 49, t as u64);
        }
        check(1152, 192, 1, 192, 49, 3);
        check(200, 7, 2, 7, 50, 4);
        // No rows: nothing written, and no panic.
        assert!(dots_f32(&[], 3, 3, &[1.0; 3], &mut [], 5, false));
    }

    proptest! {
        #[test]
        fn any_shape_matches_the_definition(m in 1usize..150, k in 1usize..70, t in 1usize..10, pad in 0usize..5, seed in 0u64..1000) {
            if fastmath::available() {
                check(m, k, t, k + pad, t + pad, seed);
            }
        }
    }
}

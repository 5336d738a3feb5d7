//! `y = x · B` for one f32 row `x` and a row-major `B`: a classifier's
//! Gemm at batch 1, bound by reading `B` once from memory.
//!
//! `B` is read row by row as it lies, four rows per pass over `y` (which
//! stays in L1), so the read is one contiguous stream. Two threads take a
//! band of columns each and stream their halves of every row ([1, 1024] ·
//! [1024, 1000] alone: 0.098 ms at best on two threads against 0.138 on
//! one; below [`crate::parallel::PARALLEL_MACS`] faer's product stayed on
//! one thread).
//!
//! Each `y_j` is `x_0 b_0j`, then one fused multiply-add per later row in
//! row order, whatever band or vector lane it falls in, so the result is
//! the same bits on any thread count.

use rayon::prelude::*;
use rten_simd::ops::{BitOps, NumOps};
use rten_simd::{Isa, SimdOp};

use super::fastmath;

/// Columns of a band are a multiple of this: whole cache lines of `y` and
/// of each row of `B` per thread.
const BAND_ALIGN: usize = 16;

/// Rows of `B` per pass over `y`.
const ROWS: usize = 4;

/// `y = x · B`, where row `k` of `B` is `b[k · ldb..][..y.len()]`, split
/// into one band of columns per thread when `par`. False, with nothing
/// written, when the CPU lacks AVX2 and FMA or `b` is too short.
pub fn gemv_f32(x: &[f32], b: &[f32], ldb: usize, y: &mut [f32], par: bool) -> bool {
    let (k, m) = (x.len(), y.len());
    let need = match k {
        0 => 0,
        _ => (k - 1).saturating_mul(ldb).saturating_add(m),
    };
    if !fastmath::available() || ldb < m || b.len() < need {
        return false;
    }
    let threads = if par {
        rayon::current_num_threads().max(1)
    } else {
        1
    };
    let band = m.div_ceil(threads).next_multiple_of(BAND_ALIGN).max(BAND_ALIGN);
    if threads > 1 && band < m {
        y.par_chunks_mut(band).enumerate().for_each(|(i, y)| {
            Band {
                x,
                b: &b[i * band..],
                ldb,
                y,
            }
            .dispatch()
        });
    } else {
        Band { x, b, ldb, y }.dispatch();
    }
    true
}

/// Columns `..y.len()` of `B` (row `k` at `b[k · ldb..]`) into `y`.
struct Band<'a> {
    x: &'a [f32],
    b: &'a [f32],
    ldb: usize,
    y: &'a mut [f32],
}

impl SimdOp for Band<'_> {
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) {
        let Band { x, b, ldb, y } = self;
        y.fill(0.0);
        let n = y.len();
        let row = |k: usize| &b[k * ldb..k * ldb + n];
        let mut k = 0;
        while k + ROWS <= x.len() {
            let rows: [&[f32]; ROWS] = std::array::from_fn(|i| row(k + i));
            let xs: [f32; ROWS] = std::array::from_fn(|i| x[k + i]);
            pass(isa, rows, xs, y);
            k += ROWS;
        }
        while k < x.len() {
            pass(isa, [row(k)], [x[k]], y);
            k += 1;
        }
    }
}

/// `y_j += x_0 b_0j`, then `+= x_1 b_1j`, …, one fused multiply-add each,
/// for every column `j` (the last partial vector padded with zeros).
#[inline(always)]
fn pass<I: Isa, const R: usize>(isa: I, rows: [&[f32]; R], xs: [f32; R], y: &mut [f32]) {
    let ops = isa.f32();
    let lanes = ops.len();
    let xv = xs.map(|x| ops.splat(x));
    let n = y.len();
    let mut j = 0;
    while j + lanes <= n {
        let mut v = ops.load(&y[j..]);
        for (r, &x) in rows.iter().zip(&xv) {
            v = ops.mul_add(ops.load(&r[j..]), x, v);
        }
        ops.store(v, &mut y[j..j + lanes]);
        j += lanes;
    }
    if j < n {
        let mut v = ops.load_pad(&y[j..]).0;
        for (r, &x) in rows.iter().zip(&xv) {
            v = ops.mul_add(ops.load_pad(&r[j..]).0, x, v);
        }
        let mut tail = [0f32; 64];
        ops.store(v, &mut tail[..lanes]);
        y[j..].copy_from_slice(&tail[..n - j]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(k: usize, m: usize, ldb: usize) -> (Vec<f32>, Vec<f32>) {
        let x = (0..k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 16.0).collect();
        let b = (0..k.saturating_sub(1) * ldb + m)
            .map(|i| ((i * 13 % 29) as f32 - 14.0) / 8.0)
            .collect();
        (x, b)
    }

    /// Every column against the f64 definition, over lengths around the
    /// vector width and the row unroll, with rows padded past `m`.
    #[test]
    fn a_row_times_a_matrix_matches_the_definition() {
        if !fastmath::available() {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        }
        for &(k, m, pad) in &[
            (1, 1, 0),
            (3, 7, 2),
            (4, 16, 0),
            (9, 33, 5),
            (576, 1000, 24),
            (17, 250, 0),
        ] {
            let ldb = m + pad;
            let (x, b) = inputs(k, m, ldb);
            let mut y = vec![f32::NAN; m];
            assert!(gemv_f32(&x, &b, ldb, &mut y, false));
            for (j, &got) in y.iter().enumerate() {
                let want: f64 = (0..k).map(|i| x[i] as f64 * b[i * ldb + j] as f64).sum();
                assert!(
                    (got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()),
                    "k {k} m {m}: y[{j}] {got} vs {want}"
                );
            }
        }
    }

    /// The bands of any thread count give the serial result's bits.
    #[test]
    fn a_row_times_a_matrix_is_the_same_on_any_thread_count() {
        if !fastmath::available() {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        }
        let (k, m) = (301, 1003);
        let (x, b) = inputs(k, m, m);
        let mut serial = vec![0f32; m];
        assert!(gemv_f32(&x, &b, m, &mut serial, false));
        for threads in [2, 3, 5] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut y = vec![0f32; m];
            assert!(pool.install(|| gemv_f32(&x, &b, m, &mut y, true)));
            let same = y.iter().zip(&serial).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{threads} threads");
        }
    }

    #[test]
    fn a_short_matrix_is_refused() {
        let mut y = vec![0f32; 4];
        assert!(!gemv_f32(&[1.0, 2.0], &[0.0; 7], 4, &mut y, false));
        assert!(!gemv_f32(&[1.0, 2.0], &[0.0; 8], 3, &mut y, false));
    }
}

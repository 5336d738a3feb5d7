//! Sums of contiguous rows. A reduction over the trailing axes of a
//! contiguous input (a global average pool, `mean` over `[2, 3]` of
//! `[N, C, H, W]`) reads each output's elements as one run: folding one axis
//! at a time instead walks short lanes and builds a temporary per axis,
//! several times slower on the squeeze-and-excite pools of the CNNs.

use rayon::prelude::*;

use crate::parallel::{split, PASS_CHUNK};

/// `out[r] = sum(&x[r * len..(r + 1) * len])` for every row `r` of `out`,
/// with the caller's `sum`, so each dtype keeps its accumulation rules.
/// `x` holds `out.len() * len` elements. Long inputs split by rows.
pub fn sum_rows<T, S>(x: &[T], len: usize, out: &mut [T], sum: S)
where
    T: Copy + Send + Sync,
    S: Fn(&[T]) -> T + Sync,
{
    debug_assert_eq!(x.len(), out.len() * len);
    if len == 0 {
        out.fill(sum(&[]));
        return;
    }
    if split(x.len()) {
        let min_rows = (PASS_CHUNK / len).max(1);
        out.par_iter_mut()
            .zip(x.par_chunks_exact(len))
            .with_min_len(min_rows)
            .for_each(|(o, row)| *o = sum(row));
    } else {
        for (o, row) in out.iter_mut().zip(x.chunks_exact(len)) {
            *o = sum(row);
        }
    }
}

/// `out[o·inner + i] = Σ_r x[(o·run + r)·inner + i]`: the sums over the
/// middle axis of `[outer, run, inner]`. A reduction over axes that lie
/// between kept ones in memory takes this form (`mean` over H and W of a
/// channels-last image sums its rows of channels), and adding whole rows
/// of `inner` elements keeps it a vector loop. Rows are added in order,
/// starting from the first.
pub fn sum_middle<T>(
    x: &[T],
    (outer, run, inner): (usize, usize, usize),
    out: &mut [T],
    zero: T,
    add: impl Fn(T, T) -> T,
) where
    T: Copy,
{
    debug_assert_eq!(x.len(), outer * run * inner);
    debug_assert_eq!(out.len(), outer * inner);
    if inner == 0 {
        return;
    }
    for (o, acc) in out.chunks_exact_mut(inner).enumerate().take(outer) {
        let block = &x[o * run * inner..(o + 1) * run * inner];
        acc.fill(zero);
        // One dispatch a block: rows of 16 channels are too short for one
        // a row.
        crate::kernels::wide_loop::run(|| {
            for row in block.chunks_exact(inner) {
                acc.iter_mut().zip(row).for_each(|(a, &v)| *a = add(*a, v));
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &[i64]) -> i64 {
        s.iter().sum()
    }

    #[test]
    fn each_row_sums_its_own_run() {
        let x: Vec<i64> = (0..12).collect();
        let mut out = vec![0; 3];
        sum_rows(&x, 4, &mut out, plain);
        assert_eq!(out, vec![6, 22, 38]);
    }

    #[test]
    fn middle_sums_add_the_rows_of_each_block() {
        // [2, 3, 4]: out[o, i] = Σ_r x[o, r, i].
        let x: Vec<i64> = (0..24).collect();
        let mut out = vec![-1; 8];
        sum_middle(&x, (2, 3, 4), &mut out, 0, |a, b| a + b);
        let want: Vec<i64> = (0..2)
            .flat_map(|o| (0..4).map(move |i| (0..3).map(|r| (o * 12 + r * 4 + i) as i64).sum::<i64>()))
            .collect();
        assert_eq!(out, want);
        let mut none = vec![-1; 4];
        sum_middle(&[], (1, 0, 4), &mut none, 0, |a: i64, b| a + b);
        assert_eq!(none, vec![0; 4]);
    }

    #[test]
    fn empty_rows_take_the_sum_of_nothing() {
        let mut out = vec![7; 3];
        sum_rows(&[], 0, &mut out, |s: &[i64]| s.iter().sum::<i64>() + 100);
        assert_eq!(out, vec![100; 3]);
    }

    #[test]
    fn long_inputs_split_across_the_pool_give_the_same_sums() {
        // Rows short enough that a task takes many of them, and long
        // enough in all to split.
        let len = 3;
        let rows = 2 * PASS_CHUNK;
        let x: Vec<i64> = (0..(rows * len) as i64).collect();
        let mut out = vec![0; rows];
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        pool.install(|| sum_rows(&x, len, &mut out, plain));
        for (r, &o) in out.iter().enumerate() {
            // 3r + (3r + 1) + (3r + 2)
            assert_eq!(o, 9 * r as i64 + 3, "row {r}");
        }
    }
}

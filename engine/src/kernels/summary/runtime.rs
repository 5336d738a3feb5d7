//! The all-finite f32 block of the summaries with the CPU's widest SIMD,
//! chosen at run time as `kernels::fastmath` chooses its kernels: AVX-512 or
//! AVX2 (16 or 8 lanes per instruction) where the baseline `wide` kernel
//! gets SSE2 (4). Validate mode summarizes every output of every op, so
//! this loop is most of its cost.
//!
//! Same counts, minimum and maximum as the `wide` kernel; the sum is added
//! in other lanes, so its last bits differ between the two (one process
//! always uses one: [`crate::kernels::fastmath::available`]).

use rten_simd::ops::{BitOps, NumOps};
use rten_simd::{Isa, Simd, SimdOp};

use super::Acc;

/// Summarizes `block` into `acc` when every element is finite; returns
/// false (and adds nothing) otherwise.
pub(super) fn finite_block(block: &[f32], acc: &mut Acc) -> bool {
    add(Finite::<false>(block, &[]).dispatch().0, block.len(), acc)
}

/// [`finite_block`], and whether `block` equals `want` (of its length)
/// element for element, NaN matching NaN: the comparison rides along, one
/// XOR and OR per vector.
pub(super) fn finite_block_compared(block: &[f32], want: &[f32], acc: &mut Acc) -> (bool, bool) {
    let (b, diff) = Finite::<true>(block, want).dispatch();
    // Equal bits are the same value; other differences (NaN payloads, 0
    // against -0) are for `slices_same` to judge.
    let same = !diff || crate::kernels::compare::slices_same(block, want);
    (add(b, block.len(), acc), same)
}

fn add(b: Option<Block>, len: usize, acc: &mut Acc) -> bool {
    let Some(b) = b else { return false };
    acc.negative += b.negative;
    acc.zero += b.zero;
    acc.positive += len - b.negative - b.zero;
    acc.lo = acc.lo.min(b.lo as f64);
    acc.hi = acc.hi.max(b.hi as f64);
    acc.sum += b.sum;
    true
}

/// A block, and with `CMP` the block it is compared with.
struct Finite<'a, const CMP: bool>(&'a [f32], &'a [f32]);

/// One all-finite block's statistics.
struct Block {
    negative: usize,
    zero: usize,
    lo: f32,
    hi: f32,
    sum: f64,
}

impl<const CMP: bool> SimdOp for Finite<'_, CMP> {
    /// The block's statistics when it is all finite, and with `CMP`
    /// whether any bit differs from the other block.
    type Output = (Option<Block>, bool);

    /// Two vectors per step, added to each other before the running sums.
    /// Class counts are f32 lanes (exact: at most 4096 per lane in a
    /// block). As in the `wide` kernel, finiteness needs no test of its
    /// own: a lane sum stays finite only while every element added to it
    /// is (a finite overflow sends the block to the counting path, which
    /// sums it again in f64).
    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) -> (Option<Block>, bool) {
        let ops = isa.f32();
        let n = ops.len();
        let (zero, one) = (ops.zero(), ops.one());
        let mut diff = zero;
        let mut wants = self.1.chunks_exact(2 * n);
        let (mut lt, mut eq, mut sum) = (zero, zero, zero);
        let mut lo = ops.splat(f32::INFINITY);
        let mut hi = ops.splat(f32::NEG_INFINITY);
        let mut pairs = self.0.chunks_exact(2 * n);
        for p in &mut pairs {
            let (a, b) = (ops.load(&p[..n]), ops.load(&p[n..]));
            if CMP {
                let w = wants.next().unwrap_or(p);
                let d = ops.or(ops.xor(a, ops.load(&w[..n])), ops.xor(b, ops.load(&w[n..])));
                diff = ops.or(diff, d);
            }
            let neg = ops.add(
                ops.select(one, zero, ops.lt(a, zero)),
                ops.select(one, zero, ops.lt(b, zero)),
            );
            let nil = ops.add(
                ops.select(one, zero, ops.eq(a, zero)),
                ops.select(one, zero, ops.eq(b, zero)),
            );
            lt = ops.add(lt, neg);
            eq = ops.add(eq, nil);
            lo = ops.min(lo, ops.min(a, b));
            hi = ops.max(hi, ops.max(a, b));
            sum = ops.add(sum, ops.add(a, b));
        }
        let mut singles = pairs.remainder().chunks_exact(n);
        let mut want_singles = wants.remainder().chunks_exact(n);
        for c in &mut singles {
            let a = ops.load(c);
            if CMP {
                let w = want_singles.next().unwrap_or(c);
                diff = ops.or(diff, ops.xor(a, ops.load(w)));
            }
            lt = ops.add(lt, ops.select(one, zero, ops.lt(a, zero)));
            eq = ops.add(eq, ops.select(one, zero, ops.eq(a, zero)));
            lo = ops.min(lo, a);
            hi = ops.max(hi, a);
            sum = ops.add(sum, a);
        }
        let tail = singles.remainder();
        // The tail's comparison is `slices_same`'s (called on any
        // difference): count its bits in.
        let tail_diff = CMP
            && tail
                .iter()
                .zip(want_singles.remainder())
                .any(|(x, w)| x.to_bits() != w.to_bits());
        let differs = tail_diff || diff.to_array().as_ref().iter().any(|d| d.to_bits() != 0);
        let sums = sum.to_array();
        if !sums.as_ref().iter().all(|s| s.is_finite()) || !tail.iter().all(|x| x.is_finite()) {
            return (None, differs);
        }
        let count = |v: I::F32| v.to_array().as_ref().iter().map(|&c| c as usize).sum::<usize>();
        let mut b = Block {
            negative: count(lt),
            zero: count(eq),
            lo: lo
                .to_array()
                .as_ref()
                .iter()
                .copied()
                .fold(f32::INFINITY, f32::min),
            hi: hi
                .to_array()
                .as_ref()
                .iter()
                .copied()
                .fold(f32::NEG_INFINITY, f32::max),
            sum: sums.as_ref().iter().map(|&s| s as f64).sum(),
        };
        for &x in tail {
            b.negative += (x < 0.0) as usize;
            b.zero += (x == 0.0) as usize;
            b.lo = b.lo.min(x);
            b.hi = b.hi.max(x);
            b.sum += x as f64;
        }
        (Some(b), differs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(finite, counts and range, differs)` of one evaluation.
    type Seen = (bool, Option<(usize, usize, f32, f32)>, bool);

    fn seen(r: (Option<Block>, bool)) -> Seen {
        let (b, differs) = r;
        (b.is_some(), b.map(|b| (b.negative, b.zero, b.lo, b.hi)), differs)
    }

    /// Every instruction set this CPU has gives the portable one's counts,
    /// range and comparison: the dispatcher picks only the widest, so the
    /// narrower ones (AVX2 on an AVX-512 machine) are run here directly.
    #[test]
    fn every_instruction_set_gives_the_same_counts_range_and_comparison() {
        let xs: Vec<f32> = (0..4096 + 40)
            .map(|i| match i % 11 {
                0 => 0.0,
                1 => -0.0,
                _ => ((i * 7919) % 1009) as f32 * 0.37 - 150.0,
            })
            .collect();
        let mut nan = xs.clone();
        nan[4100] = f32::NAN;
        let mut other = xs.clone();
        other[33] += 1.0;
        for len in [8, 40, 4096, xs.len()] {
            let cases = [
                (&xs[..len], &xs[..len]),
                (&xs[..len], &other[..len]),
                (&nan[..len], &xs[..len]),
            ];
            for (a, b) in cases {
                let want = seen(Finite::<true>(a, b).eval(rten_simd::isa::GenericIsa::new()));
                #[cfg(target_arch = "x86_64")]
                {
                    if let Some(isa) = rten_simd::isa::Avx2Isa::new() {
                        assert_eq!(seen(Finite::<true>(a, b).eval(isa)), want, "avx2, {len}");
                    }
                    if let Some(isa) = rten_simd::isa::Avx512Isa::new() {
                        assert_eq!(seen(Finite::<true>(a, b).eval(isa)), want, "avx512, {len}");
                    }
                }
                assert_eq!(seen(Finite::<true>(a, b).dispatch()), want, "dispatched, {len}");
            }
        }
    }
}

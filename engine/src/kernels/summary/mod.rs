//! One-pass element summaries: counts of NaN, ±inf, negative, zero and
//! positive elements, and the min, max and sum of the finite ones. The
//! numerics listener summarizes whole outputs with them, and a fused sweep
//! (`exec::fuse`) each node's output tile by tile, while the tile is in
//! cache.
//!
//! f32 runs go through `wide::f32x8` compares, blends and adds, one pass,
//! no branches. f64 runs use `L` independent scalar accumulators per
//! statistic (counters `u32` per lane, flushed every `CHUNK` elements; sums
//! in f64).

use ndarray::{ArrayViewD, Axis};
use wide::f32x8;

use crate::Element;

mod runtime;

/// Lanes per statistic.
const L: usize = 16;
/// Elements per flush of the lane counters (far below `u32::MAX` per lane).
const CHUNK: usize = L * 4096;

/// What a summary accumulates.
#[derive(Clone, Debug, PartialEq)]
pub struct Acc {
    pub nan: usize,
    pub neg_inf: usize,
    pub pos_inf: usize,
    pub negative: usize,
    pub zero: usize,
    pub positive: usize,
    /// Min and max of the finite elements (±inf while there are none).
    pub lo: f64,
    pub hi: f64,
    /// Sum of the finite elements.
    pub sum: f64,
}

impl Default for Acc {
    fn default() -> Acc {
        Acc {
            nan: 0,
            neg_inf: 0,
            pos_inf: 0,
            negative: 0,
            zero: 0,
            positive: 0,
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
            sum: 0.0,
        }
    }
}

impl Acc {
    /// Min and max of the finite elements, `None` while there are none.
    /// A zero comes out as +0: which zero a lane's min or max keeps depends
    /// on how the elements fell into lanes (and tiles), so its sign carries
    /// no information.
    pub fn range(&self) -> Option<(f64, f64)> {
        (self.negative + self.zero + self.positive > 0).then_some((self.lo + 0.0, self.hi + 0.0))
    }

    /// Adds the elements `other` summarized.
    pub fn merge(&mut self, other: &Acc) {
        self.nan += other.nan;
        self.neg_inf += other.neg_inf;
        self.pos_inf += other.pos_inf;
        self.negative += other.negative;
        self.zero += other.zero;
        self.positive += other.positive;
        self.lo = self.lo.min(other.lo);
        self.hi = self.hi.max(other.hi);
        self.sum += other.sum;
    }

    /// Adds one element, given as f64 (the scalar path).
    pub fn push(&mut self, f: f64) {
        if f.is_nan() {
            self.nan += 1;
        } else if f == f64::INFINITY {
            self.pos_inf += 1;
        } else if f == f64::NEG_INFINITY {
            self.neg_inf += 1;
        } else {
            if f < 0.0 {
                self.negative += 1;
            } else if f == 0.0 {
                self.zero += 1;
            } else {
                self.positive += 1;
            }
            self.lo = self.lo.min(f);
            self.hi = self.hi.max(f);
            self.sum += f;
        }
    }
}

/// Element types with a summary kernel over contiguous runs.
pub trait Summarize: Element {
    /// Elements per block of [`Summarize::summarize_run`]: summarizing a
    /// run block by block gives the same bits as summarizing it whole.
    const BLOCK: usize = 4096;
    fn summarize_run(run: &[Self], acc: &mut Acc);
    fn all_finite(run: &[Self]) -> bool;

    /// [`Summarize::summarize_run`] of `run`, and whether it equals `want`
    /// element for element, NaN matching NaN (never, at another length).
    fn summarize_compared(run: &[Self], want: &[Self], acc: &mut Acc) -> bool {
        let same = crate::kernels::compare::slices_same(run, want);
        Self::summarize_run(run, acc);
        same
    }
}

macro_rules! float_summary {
    ($t:ty) => {
        impl Summarize for $t {
            const BLOCK: usize = CHUNK;
            fn summarize_run(run: &[$t], acc: &mut Acc) {
                for chunk in run.chunks(CHUNK) {
                    let mut nan = [0u32; L];
                    let mut pinf = [0u32; L];
                    let mut ninf = [0u32; L];
                    let mut neg = [0u32; L];
                    let mut zero = [0u32; L];
                    let mut pos = [0u32; L];
                    let mut lo = [<$t>::INFINITY; L];
                    let mut hi = [<$t>::NEG_INFINITY; L];
                    let mut sum = [0f64; L];
                    let mut it = chunk.chunks_exact(L);
                    for c in &mut it {
                        for j in 0..L {
                            let x = c[j];
                            // x - x is 0 exactly for finite x, NaN otherwise.
                            let fin = (x - x) == 0.0;
                            nan[j] += (x != x) as u32;
                            pinf[j] += (x == <$t>::INFINITY) as u32;
                            ninf[j] += (x == <$t>::NEG_INFINITY) as u32;
                            neg[j] += (fin & (x < 0.0)) as u32;
                            zero[j] += (x == 0.0) as u32;
                            pos[j] += (fin & (x > 0.0)) as u32;
                            let xl = if fin { x } else { <$t>::INFINITY };
                            let xh = if fin { x } else { <$t>::NEG_INFINITY };
                            lo[j] = if xl < lo[j] { xl } else { lo[j] };
                            hi[j] = if xh > hi[j] { xh } else { hi[j] };
                            sum[j] += if fin { x as f64 } else { 0.0 };
                        }
                    }
                    for j in 0..L {
                        acc.nan += nan[j] as usize;
                        acc.pos_inf += pinf[j] as usize;
                        acc.neg_inf += ninf[j] as usize;
                        acc.negative += neg[j] as usize;
                        acc.zero += zero[j] as usize;
                        acc.positive += pos[j] as usize;
                        acc.lo = acc.lo.min(lo[j] as f64);
                        acc.hi = acc.hi.max(hi[j] as f64);
                        acc.sum += sum[j];
                    }
                    for &x in it.remainder() {
                        acc.push(x as f64);
                    }
                }
            }

            fn all_finite(run: &[$t]) -> bool {
                run.chunks(CHUNK).all(|chunk| {
                    let mut ok = [true; L];
                    let mut it = chunk.chunks_exact(L);
                    for c in &mut it {
                        for j in 0..L {
                            ok[j] &= (c[j] - c[j]) == 0.0;
                        }
                    }
                    ok.iter().all(|&o| o) && it.remainder().iter().all(|x| x.is_finite())
                })
            }
        }
    };
}
float_summary!(f64);

/// Vectors per block of the f32 kernel (16 KiB: a block stays in L1 cache
/// if it has to be summarized a second time).
const VCHUNK: usize = 512;

#[inline(always)]
fn vec8(c: &[f32]) -> f32x8 {
    f32x8::new(c.try_into().unwrap_or([0.0; 8]))
}

/// One block, assuming every element is finite: counts of negatives and
/// zeros, min, max and sum. Returns false (and adds nothing) when the block
/// holds a NaN or an infinity.
///
/// Two vectors per step, added to each other before the running sum, so
/// that one add per step waits on the previous one, and the class counts in
/// integer lanes (a true compare is -1); more accumulators than that spill
/// out of the 16 SSE registers.
/// Finiteness needs no test of its own: a lane's sum stays finite only
/// while every element added to it is finite (an infinity makes it ±inf or
/// NaN for good; a finite overflow sends the block to `mixed_block`, which
/// sums it again in f64).
fn finite_block<const CMP: bool>(block: &[f32], want: &[f32], acc: &mut Acc) -> (bool, bool) {
    use wide::bytemuck::cast;
    use wide::i32x8;
    let zero = f32x8::ZERO;
    let (mut lt, mut eq) = (i32x8::ZERO, i32x8::ZERO);
    // With CMP, the bits where `block` and `want` differ, OR-ed together.
    let mut diff = i32x8::ZERO;
    let bits = |v: f32x8| cast::<f32x8, i32x8>(v);
    let mut sum = zero;
    let mut lo = f32x8::splat(f32::INFINITY);
    let mut hi = f32x8::splat(f32::NEG_INFINITY);
    let neg = |v: f32x8| cast::<f32x8, i32x8>(v.simd_lt(zero));
    let nil = |v: f32x8| cast::<f32x8, i32x8>(v.simd_eq(zero));
    let mut pairs = block.chunks_exact(16);
    let mut wants = want.chunks_exact(16);
    for p in &mut pairs {
        let (a, b) = (vec8(&p[..8]), vec8(&p[8..]));
        if CMP {
            let w = wants.next().unwrap_or(&[0.0; 16]);
            diff |= (bits(a) ^ bits(vec8(&w[..8]))) | (bits(b) ^ bits(vec8(&w[8..])));
        }
        lt -= neg(a) + neg(b);
        eq -= nil(a) + nil(b);
        lo = lo.fast_min(a.fast_min(b));
        hi = hi.fast_max(a.fast_max(b));
        sum += a + b;
    }
    let rest = wants.remainder().chunks_exact(8);
    for (c, w) in pairs
        .remainder()
        .chunks_exact(8)
        .zip(rest.chain(std::iter::repeat(&[0.0; 8][..])))
    {
        let a = vec8(c);
        if CMP {
            diff |= bits(a) ^ bits(vec8(w));
        }
        lt -= neg(a);
        eq -= nil(a);
        lo = lo.fast_min(a);
        hi = hi.fast_max(a);
        sum += a;
    }
    // Equal bits are the same value; other differences (NaN payloads,
    // 0 against -0) are for `slices_same` to judge.
    let same = !CMP || diff == i32x8::ZERO || crate::kernels::compare::slices_same(block, want);
    if !sum.is_finite().all() {
        return (false, same);
    }
    let count = |x: i32x8| x.to_array().iter().map(|&c| c as usize).sum::<usize>();
    let (neg, zer) = (count(lt), count(eq));
    acc.negative += neg;
    acc.zero += zer;
    acc.positive += block.len() - neg - zer;
    acc.sum += sum.to_array().iter().map(|&x| x as f64).sum::<f64>();
    for (&l, &h) in lo.to_array().iter().zip(&hi.to_array()) {
        acc.lo = acc.lo.min(l as f64);
        acc.hi = acc.hi.max(h as f64);
    }
    (true, same)
}

/// One block with NaN or infinities: every class counted.
fn mixed_block(block: &[f32], acc: &mut Acc) {
    let (one, zero) = (f32x8::ONE, f32x8::ZERO);
    let (inf, ninf) = (f32x8::splat(f32::INFINITY), f32x8::splat(f32::NEG_INFINITY));
    let (mut lo, mut hi) = (inf, ninf);
    let mut n = [zero; 6];
    let mut sum = zero;
    for c in block.chunks_exact(8) {
        let v = vec8(c);
        let fin = v.is_finite();
        n[0] += v.simd_ne(v) & one;
        n[1] += v.simd_eq(inf) & one;
        n[2] += v.simd_eq(ninf) & one;
        n[3] += (fin & v.simd_lt(zero)) & one;
        n[4] += v.simd_eq(zero) & one;
        n[5] += (fin & v.simd_gt(zero)) & one;
        lo = lo.fast_min(fin.select(v, inf));
        hi = hi.fast_max(fin.select(v, ninf));
        sum += fin & v;
    }
    let count = |x: f32x8| x.to_array().iter().map(|&c| c as usize).sum::<usize>();
    acc.nan += count(n[0]);
    acc.pos_inf += count(n[1]);
    acc.neg_inf += count(n[2]);
    acc.negative += count(n[3]);
    acc.zero += count(n[4]);
    acc.positive += count(n[5]);
    acc.sum += if sum.is_finite().all() {
        sum.to_array().iter().map(|&x| x as f64).sum::<f64>()
    } else {
        // Only finite elements were added, so an f32 lane overflowed: the
        // f64 sum is finite (a mean of finite elements never is ±inf).
        block
            .iter()
            .filter(|x| x.is_finite())
            .map(|&x| x as f64)
            .sum::<f64>()
    };
    for (&l, &h) in lo.to_array().iter().zip(&hi.to_array()) {
        acc.lo = acc.lo.min(l as f64);
        acc.hi = acc.hi.max(h as f64);
    }
}

impl Summarize for f32 {
    /// `wide::f32x8` compares, blends and adds over blocks of 4096
    /// elements (AVX2 or AVX-512 chosen at run time where the CPU has them:
    /// [`runtime`]): an all-finite block (the usual case) needs only five
    /// accumulators; a block with NaN or infinities is summarized again,
    /// from cache, counting every class.
    fn summarize_run(run: &[f32], acc: &mut Acc) {
        let whole = run.len() - run.len() % 8;
        let simd = crate::kernels::fastmath::available();
        for block in run[..whole].chunks(VCHUNK * 8) {
            let finite = if simd {
                runtime::finite_block(block, acc)
            } else {
                finite_block::<false>(block, &[], acc).0
            };
            if !finite {
                mixed_block(block, acc);
            }
        }
        for &x in &run[whole..] {
            acc.push(x as f64);
        }
    }

    /// The comparison rides along in the all-finite kernel: one XOR and OR
    /// per vector, no second read of `run`.
    fn summarize_compared(run: &[f32], want: &[f32], acc: &mut Acc) -> bool {
        if run.len() != want.len() {
            Self::summarize_run(run, acc);
            return false;
        }
        let whole = run.len() - run.len() % 8;
        let mut same = true;
        let simd = crate::kernels::fastmath::available();
        for (block, w) in run[..whole]
            .chunks(VCHUNK * 8)
            .zip(want[..whole].chunks(VCHUNK * 8))
        {
            let (finite, s) = if simd {
                runtime::finite_block_compared(block, w, acc)
            } else {
                finite_block::<true>(block, w, acc)
            };
            same &= s;
            if !finite {
                mixed_block(block, acc);
            }
        }
        for &x in &run[whole..] {
            acc.push(x as f64);
        }
        same & crate::kernels::compare::slices_same(&run[whole..], &want[whole..])
    }

    fn all_finite(run: &[f32]) -> bool {
        let zero = f32x8::ZERO;
        let whole = run.len() - run.len() % 8;
        run[..whole].chunks(VCHUNK * 8).all(|block| {
            let mut bad = zero;
            for c in block.chunks_exact(8) {
                let v = vec8(c);
                bad |= !v.is_finite();
            }
            !bad.any()
        }) && run[whole..].iter().all(|x| x.is_finite())
    }
}

macro_rules! exact_summary {
    ($t:ty) => {
        impl Summarize for $t {
            fn summarize_run(run: &[$t], acc: &mut Acc) {
                for &x in run {
                    acc.push(x.to_f64());
                }
            }
            fn all_finite(_: &[$t]) -> bool {
                true
            }
        }
    };
}
exact_summary!(i32);
exact_summary!(i64);
exact_summary!(u8);
exact_summary!(i8);
exact_summary!(u16);
exact_summary!(i16);
exact_summary!(u32);
exact_summary!(u64);

/// The one-byte formats through f64 (exact), one element at a time: they
/// are storage formats, never the bulk of a model's tensors.
macro_rules! small_summary {
    ($($t:ty),*) => {$(
        impl Summarize for $t {
            fn summarize_run(run: &[$t], acc: &mut Acc) {
                for &x in run {
                    acc.push(x.to_f64());
                }
            }
            fn all_finite(run: &[$t]) -> bool {
                run.iter().all(|x| x.to_f64().is_finite())
            }
        }
    )*};
}
small_summary!(
    crate::small::F8E4M3Fn,
    crate::small::F8E4M3Fnuz,
    crate::small::F8E5M2,
    crate::small::F8E5M2Fnuz,
    crate::small::F4E2M1,
    crate::small::F8E8M0,
    crate::small::I4,
    crate::small::U4,
    crate::small::I2,
    crate::small::U2
);

/// f16 widened to f32 a block at a time and summarized by the f32 kernel
/// (exact: every f16 is an f32). Blocks match f32's, so summarizing block
/// by block still gives the bits of the whole.
macro_rules! summarize_half {
    ($($t:ty),*) => {$(
        impl Summarize for $t {
            const BLOCK: usize = <f32 as Summarize>::BLOCK;
            fn summarize_run(run: &[Self], acc: &mut Acc) {
                let mut wide = vec![0f32; run.len().min(Self::BLOCK)];
                for block in run.chunks(Self::BLOCK) {
                    let w = &mut wide[..block.len()];
                    w.iter_mut().zip(block).for_each(|(w, x)| *w = x.to_f32());
                    f32::summarize_run(w, acc);
                }
            }
            fn all_finite(run: &[Self]) -> bool {
                run.iter().all(|x| x.is_finite())
            }
        }
    )*};
}
summarize_half!(half::f16, half::bf16);

impl Summarize for bool {
    /// Masks (`gt`, `eq`...) are common outputs: count the trues in one
    /// vectorizable pass instead of converting every element to f64.
    fn summarize_run(run: &[bool], acc: &mut Acc) {
        let trues = run.iter().map(|&b| b as usize).sum::<usize>();
        let falses = run.len() - trues;
        acc.positive += trues;
        acc.zero += falses;
        acc.sum += trues as f64;
        if falses > 0 {
            acc.lo = acc.lo.min(0.0);
            acc.hi = acc.hi.max(0.0);
        }
        if trues > 0 {
            acc.lo = acc.lo.min(1.0);
            acc.hi = acc.hi.max(1.0);
        }
    }
    fn all_finite(_: &[bool]) -> bool {
        true
    }
}

/// Calls `f` on contiguous runs that together hold every logical element of
/// `v` (a broadcast element once per position it appears at): the whole
/// buffer range when `v` is contiguous in some memory order, else its
/// innermost rows, else single elements.
pub fn for_each_run<T: Element>(v: &ArrayViewD<'_, T>, mut f: impl FnMut(&[T])) {
    if let Some(s) = v.as_slice_memory_order() {
        f(s);
        return;
    }
    let Some(last) = v.ndim().checked_sub(1) else {
        v.iter().for_each(|x| f(std::slice::from_ref(x)));
        return;
    };
    for lane in v.lanes(Axis(last)) {
        match lane.as_slice() {
            Some(s) => f(s),
            None => lane.iter().for_each(|x| f(std::slice::from_ref(x))),
        }
    }
}

/// Summarizes every logical element of `v` into `acc`.
pub fn summarize<T: Summarize>(v: &ArrayViewD<'_, T>, acc: &mut Acc) {
    for_each_run(v, |run| summarize_long(run, acc));
}

/// Elements per part of a long run (a whole number of f32 blocks). The
/// parts fix the order of the sum, so they do not depend on the threads.
const TASK: usize = crate::parallel::PASS_CHUNK;

/// A run longer than [`TASK`] is summarized in parts of `TASK` elements,
/// merged in order: on the rayon pool when intra-op parallelism is on (see
/// `crate::parallel`), else on this thread. The parts are the same
/// either way, so the sum is bit-identical with or without threads.
fn summarize_long<T: Summarize>(run: &[T], acc: &mut Acc) {
    use rayon::prelude::*;
    if run.len() <= TASK {
        return T::summarize_run(run, acc);
    }
    let part = |c: &[T]| {
        let mut a = Acc::default();
        T::summarize_run(c, &mut a);
        a
    };
    let parts: Vec<Acc> = if crate::parallel::split(run.len()) {
        run.par_chunks(TASK).map(part).collect()
    } else {
        run.chunks(TASK).map(part).collect()
    };
    for p in &parts {
        acc.merge(p);
    }
}

/// Summarizes `got` into `acc` (the same bits as [`summarize`] over it)
/// and says whether it equals `want` element for element, NaN matching
/// NaN, reading both once: each block is compared and then summarized
/// while it is still in cache. DebugMode compares every in-place output
/// with the reference and summarizes it for the numerics listener; this is
/// both in the memory traffic of one.
pub fn summarize_comparing<T: Summarize>(got: &[T], want: &[T], acc: &mut Acc) -> bool {
    use rayon::prelude::*;
    if got.len() != want.len() {
        summarize_long(got, acc);
        return false;
    }
    let blocks = |g: &[T], w: &[T], a: &mut Acc| {
        let mut same = true;
        for (gb, wb) in g.chunks(T::BLOCK).zip(w.chunks(T::BLOCK)) {
            same &= T::summarize_compared(gb, wb, a);
        }
        same
    };
    // The parts of `summarize_long`, merged in the same order.
    if got.len() <= TASK {
        return blocks(got, want, acc);
    }
    let part = |(g, w): (&[T], &[T])| {
        let mut a = Acc::default();
        let same = blocks(g, w, &mut a);
        (a, same)
    };
    let parts: Vec<(Acc, bool)> = if crate::parallel::split(got.len()) {
        got.par_chunks(TASK)
            .zip(want.par_chunks(TASK))
            .map(part)
            .collect()
    } else {
        got.chunks(TASK).zip(want.chunks(TASK)).map(part).collect()
    };
    let mut same = true;
    for (p, s) in &parts {
        acc.merge(p);
        same &= s;
    }
    same
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2, Axis, Slice};

    fn scalar(xs: &[f32]) -> Acc {
        let mut a = Acc::default();
        xs.iter().for_each(|&x| a.push(x as f64));
        a
    }

    /// A range is +0 at a zero, whichever zero the min or max kept, and
    /// `None` with no finite element.
    #[test]
    fn a_range_reports_zero_as_plus_zero() {
        let bits = |a: &Acc| a.range().map(|(lo, hi)| (lo.to_bits(), hi.to_bits()));
        let zero = 0.0f64.to_bits();
        assert_eq!(bits(&scalar(&[-0.0, 0.0])), Some((zero, zero)));
        assert_eq!(bits(&scalar(&[0.0, -0.0])), Some((zero, zero)));
        assert_eq!(scalar(&[-0.0, 2.5]).range(), Some((0.0, 2.5)));
        assert_eq!(scalar(&[-1.0, -0.0]).range(), Some((-1.0, 0.0)));
        assert_eq!(scalar(&[f32::NAN, f32::INFINITY]).range(), None);
        assert_eq!(Acc::default().range(), None);
    }

    /// The run-time SIMD block gives the `wide` block's counts and range,
    /// and its sum up to the order of the adds; both refuse a block with a
    /// NaN or an infinity, wherever it sits.
    #[test]
    fn the_runtime_block_matches_the_wide_block() {
        if !crate::kernels::fastmath::available() {
            eprintln!("skipped: this CPU has no AVX2+FMA, so the run-time kernel is never used");
            return;
        }
        for len in [8, 24, 40, 128, 4096, 4088] {
            let xs: Vec<f32> = (0..len)
                .map(|i| match i % 13 {
                    0 => 0.0,
                    1 => -0.0,
                    _ => ((i * 7919) % 1009) as f32 * 0.37 - 150.0,
                })
                .collect();
            let (mut a, mut b) = (Acc::default(), Acc::default());
            assert!(runtime::finite_block(&xs, &mut a));
            assert!(finite_block::<false>(&xs, &[], &mut b).0);
            assert_eq!(
                (a.negative, a.zero, a.positive),
                (b.negative, b.zero, b.positive),
                "{len}"
            );
            assert_eq!((a.lo, a.hi), (b.lo, b.hi), "{len}");
            assert!((a.sum - b.sum).abs() <= 1e-5 * 150.0 * len as f64, "{len}");
            // Compared: equal to itself, unequal after one element changes
            // (in the pairs, the singles or the tail), -0 equal to 0.
            let mut c = Acc::default();
            assert_eq!(runtime::finite_block_compared(&xs, &xs, &mut c), (true, true));
            assert_eq!(c, a);
            for at in [0, len / 2, len - 1] {
                let mut ys = xs.clone();
                ys[at] += 1.0;
                assert_eq!(
                    runtime::finite_block_compared(&xs, &ys, &mut Acc::default()),
                    (true, false),
                    "{len} {at}"
                );
                ys[at] = if xs[at] == 0.0 { -xs[at] } else { xs[at] };
                let same = runtime::finite_block_compared(&xs, &ys, &mut Acc::default());
                assert_eq!(same, (true, true), "{len} {at}");
            }
            for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                for at in [0, len / 2, len - 1] {
                    let mut ys = xs.clone();
                    ys[at] = bad;
                    let mut c = Acc::default();
                    assert!(!runtime::finite_block(&ys, &mut c), "{len} {at} {bad}");
                    assert_eq!(c, Acc::default());
                    // The comparison still counts when the block is not finite.
                    assert_eq!(runtime::finite_block_compared(&ys, &xs, &mut c), (false, false));
                    assert!(
                        runtime::finite_block_compared(&ys, &ys, &mut c).1,
                        "NaN matches NaN"
                    );
                }
            }
        }
    }

    #[test]
    fn kernel_matches_the_scalar_path() {
        let mut xs: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.25).collect();
        xs[3] = f32::NAN;
        xs[77] = f32::INFINITY;
        xs[500] = -0.0;
        xs[999] = f32::NEG_INFINITY;
        xs[12] = f32::MIN_POSITIVE / 8.0;
        let mut a = Acc::default();
        f32::summarize_run(&xs, &mut a);
        let b = scalar(&xs);
        assert_eq!((a.nan, a.pos_inf, a.neg_inf), (1, 1, 1));
        assert_eq!((a.negative, a.zero, a.positive), (b.negative, b.zero, b.positive));
        assert_eq!((a.lo, a.hi), (b.lo, b.hi));
        assert!((a.sum - b.sum).abs() < 1e-9);
        assert!(!f32::all_finite(&xs));
        assert!(f32::all_finite(&xs[13..70]));
    }

    /// f16 runs, widened block by block, count like the scalar path of
    /// their f64 values, across more than one block.
    #[test]
    fn f16_runs_count_like_the_scalar_path() {
        use crate::f16;
        let n = 3 * <f16 as Summarize>::BLOCK + 5;
        let mut xs: Vec<f16> = (0..n).map(|i| f16::from_f32((i % 97) as f32 - 48.0)).collect();
        xs[3] = f16::NAN;
        xs[n - 1] = f16::NEG_INFINITY;
        xs[4000] = f16::INFINITY;
        xs[5000] = f16::from_bits(1); // the smallest subnormal
        let mut a = Acc::default();
        f16::summarize_run(&xs, &mut a);
        let mut b = Acc::default();
        xs.iter().for_each(|x| b.push(x.to_f64()));
        assert_eq!((a.nan, a.pos_inf, a.neg_inf), (1, 1, 1));
        assert_eq!((a.negative, a.zero, a.positive), (b.negative, b.zero, b.positive));
        assert_eq!((a.lo, a.hi), (b.lo, b.hi));
        assert!((a.sum - b.sum).abs() < 1e-6, "f32 lanes drop the subnormal");
        assert!(!f16::all_finite(&xs));
        assert!(f16::all_finite(&xs[4..3000]));
    }

    /// The finite kernel tells finiteness from its lane sums; a sum that
    /// overflows on finite elements must not count them as infinities.
    #[test]
    fn a_finite_block_whose_sum_overflows_counts_finite_elements() {
        let mut xs = vec![3.0e38f32; 4096];
        xs[5] = -1.5;
        xs[4000] = 0.0;
        let mut a = Acc::default();
        f32::summarize_run(&xs, &mut a);
        assert_eq!((a.nan, a.pos_inf, a.neg_inf), (0, 0, 0));
        assert_eq!((a.negative, a.zero, a.positive), (1, 1, 4094));
        assert_eq!((a.lo, a.hi), (-1.5, 3.0e38f32 as f64));
        // ... nor report their sum (and so the mean) as an infinity.
        let big = 3.0e38f32 as f64;
        let want = |k: f64| k * big - 1.5;
        assert!((a.sum - want(4094.0)).abs() <= 1e-12 * a.sum, "{}", a.sum);
        // An infinity among them is still one.
        xs[77] = f32::INFINITY;
        let mut a = Acc::default();
        f32::summarize_run(&xs, &mut a);
        assert_eq!((a.pos_inf, a.positive), (1, 4093));
        assert!((a.sum - want(4093.0)).abs() <= 1e-12 * a.sum, "{}", a.sum);
    }

    /// Another length is never equal, and the summary is still whole.
    #[test]
    fn comparing_with_another_length_is_unequal() {
        let xs: Vec<f32> = (0..40).map(|i| i as f32).collect();
        let (mut a, mut b) = (Acc::default(), Acc::default());
        assert!(!f32::summarize_compared(&xs, &xs[..39], &mut a));
        f32::summarize_run(&xs, &mut b);
        assert_eq!(a, b);
        assert!(f32::summarize_compared(&xs, &xs, &mut Acc::default()));
    }

    #[test]
    fn long_runs_flush_their_lanes() {
        // More than one flush of the f32 lanes, with specials throughout.
        let xs: Vec<f32> = (0..50_001)
            .map(|i| match i % 997 {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => 0.0,
                _ => ((i * 37) % 1001) as f32 * 0.01 - 5.0,
            })
            .collect();
        let mut a = Acc::default();
        f32::summarize_run(&xs, &mut a);
        let b = scalar(&xs);
        assert_eq!((a.nan, a.pos_inf, a.neg_inf), (b.nan, b.pos_inf, b.neg_inf));
        assert_eq!((a.negative, a.zero, a.positive), (b.negative, b.zero, b.positive));
        assert_eq!((a.lo, a.hi), (b.lo, b.hi));
        // f32 lane sums: within a few f32 roundings of the magnitudes added.
        let mag: f64 = xs.iter().filter(|x| x.is_finite()).map(|x| x.abs() as f64).sum();
        assert!((a.sum - b.sum).abs() <= 1e-7 * mag, "{} vs {}", a.sum, b.sum);
        assert!(!f32::all_finite(&xs));
        assert!(f32::all_finite(&[1.5f32; 40_000]));
    }

    #[test]
    fn long_runs_in_parts_are_bit_identical_with_and_without_threads() {
        let xs: Vec<f32> = (0..(3 * TASK + 1234))
            .map(|i| match i % 65_537 {
                5 => f32::NAN,
                9 => f32::NEG_INFINITY,
                _ => ((i * 7919) % 10_007) as f32 * 1e-3 - 4.0,
            })
            .collect();
        let v = Array1::from(xs.clone()).into_dyn();
        let run = |threads: bool| {
            crate::parallel::set_intra_op(threads);
            let mut a = Acc::default();
            summarize(&v.view(), &mut a);
            crate::parallel::set_intra_op(true);
            a
        };
        let (par, seq) = (run(true), run(false));
        assert_eq!(par, seq);
        assert_eq!(par.sum.to_bits(), seq.sum.to_bits());
        let b = scalar(&xs);
        assert_eq!((par.nan, par.neg_inf), (b.nan, b.neg_inf));
        assert_eq!(
            (par.negative, par.zero, par.positive),
            (b.negative, b.zero, b.positive)
        );
        assert_eq!((par.lo, par.hi), (b.lo, b.hi));
    }

    #[test]
    fn bool_runs_count_like_the_scalar_path() {
        for xs in [vec![true, false, true], vec![true; 5], vec![false; 4], vec![]] {
            let mut a = Acc::default();
            bool::summarize_run(&xs, &mut a);
            let mut b = Acc::default();
            xs.iter().for_each(|&x| b.push(x as u8 as f64));
            assert_eq!(a, b);
        }
    }

    #[test]
    fn strided_and_broadcast_views_count_logical_elements() {
        let a = Array2::from_shape_fn((5, 7), |(i, j)| (i * 7 + j) as f64 - 10.0);
        let v = a.slice_axis(Axis(1), Slice::new(0, None, 2)).into_dyn();
        let mut got = Acc::default();
        summarize(&v, &mut got);
        let mut want = Acc::default();
        v.iter().for_each(|&x| want.push(x));
        assert_eq!(got, want);
        let row = Array1::from(vec![1.0f32, f32::NAN]);
        let b = row.broadcast((3, 2)).unwrap().into_dyn();
        let mut got = Acc::default();
        summarize(&b, &mut got);
        assert_eq!((got.nan, got.positive), (3, 3));
        let t = a.t().into_dyn();
        let mut got = Acc::default();
        summarize(&t, &mut got);
        assert_eq!(got.negative + got.zero + got.positive, 35);
    }
}

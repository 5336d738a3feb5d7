//! The window reduction a pool applies ([`Reduce`]): its step, its finish,
//! the plan of a plane's rows and the gather-table path for any number of
//! spatial axes. The separable 1-D/2-D folds are in `planar.rs`.

use rten_simd::{Isa, SimdOp};

use crate::dtype::Num;
use crate::error::Result;
use crate::kernels::fastmath;
use crate::ops::window::{gather_table, planar, Axis1, PAD};

use super::planar::BLOCK;

/// A window reduction: the elements inside the input are folded into
/// `init` with `step`, then `finish` gives the output.
pub(super) struct Reduce<'a, T, S> {
    pub(super) init: T,
    pub(super) step: S,
    pub(super) finish: Finish<'a>,
}

/// What turns a window's folded value into its output.
#[derive(Clone, Copy, Debug)]
pub(super) enum Finish<'a> {
    /// The value itself, a NaN as [`Num::maximum`]'s own NaN.
    Max,
    /// The sum over the number of taps inside the input or, with `padded`
    /// (`count_include_pad`), the window's count inside the padded input.
    Mean { padded: Option<&'a [usize]> },
}

impl Finish<'_> {
    /// The output of window `i` whose `inside` taps folded to `acc`.
    pub(super) fn one<T: Num>(self, acc: T, inside: usize, i: usize) -> T {
        match self {
            Finish::Max => T::maximum(acc, acc),
            Finish::Mean { padded } => acc / count::<T>(padded.map_or(inside, |c| c[i])),
        }
    }

    /// The divisor of every output of a plane (none for max): the window's
    /// count inside the padded input, or the taps inside the input, which
    /// for a 1-D or 2-D window `h` × `w` are the rows inside times the
    /// columns inside.
    pub(super) fn divisors<T: Num>(self, h: &Axis1, w: &Axis1) -> Vec<T> {
        let Finish::Mean { padded } = self else {
            return Vec::new();
        };
        let o = h.output * w.output;
        if let Some(c) = padded {
            return c[..o].iter().map(|&n| count::<T>(n)).collect();
        }
        let inside = |a: &Axis1, i: usize| {
            let (lo, hi) = a.taps_inside(i);
            hi - lo
        };
        let cols: Vec<usize> = (0..w.output).map(|i| inside(w, i)).collect();
        let mut divs = Vec::with_capacity(o);
        for oh in 0..h.output {
            let rows = inside(h, oh);
            divs.extend(cols.iter().map(|&c| count::<T>(rows * c)));
        }
        divs
    }
}

/// How [`Reduce::planar`] finishes its output rows: what [`Finish`] does,
/// with what a plane's input allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Last {
    /// Max over a plane without NaN: the folded value is the output.
    Keep,
    /// Max: a NaN becomes [`Num::maximum`]'s own NaN.
    Canonical,
    /// Mean: the sum (plus `+0`, the fold's start, see
    /// [`Reduce::fold_slices`]) over its divisor.
    Divide,
}

impl Last {
    /// Finishes a plane's outputs `row`, given their divisors (mean only).
    #[inline(always)]
    pub(super) fn all<T: Num>(self, row: &mut [T], divs: &[T]) {
        match self {
            Last::Keep => {}
            Last::Canonical => {
                for m in row.iter_mut() {
                    *m = T::maximum(*m, *m);
                }
            }
            Last::Divide => {
                let divs = &divs[..row.len()];
                for i in 0..row.len() {
                    row[i] = Last::mean(row[i], divs[i]);
                }
            }
        }
    }

    /// A mean from its sum (plus `+0`, the fold's start, see
    /// [`Reduce::fold_slices`]) and divisor.
    #[inline(always)]
    pub(super) fn mean<T: Num>(sum: T, div: T) -> T {
        (sum + T::zero()) / div
    }
}

/// `n` as a divisor in T.
pub(super) fn count<T: Num>(n: usize) -> T {
    <T as num_traits::NumCast>::from(n).unwrap_or_else(T::one)
}

/// The geometry of a 1-D or 2-D pool, worked out once per call and shared
/// by every plane (see [`Reduce::planar`]).
pub(super) struct Plan<T> {
    pub(super) h: Axis1,
    pub(super) w: Axis1,
    /// The length of one phase of a split row (`w.input / w.stride`, rounded up).
    pub(super) len: usize,
    /// The output columns `lo..hi` whose every kernel tap reads inside the
    /// input (empty as `(0, 0)`).
    pub(super) mid: (usize, usize),
    /// Where each kernel column's tap of window `mid.0` sits in the split row.
    pub(super) taps: Vec<usize>,
    /// The other output columns: each one's index and its taps inside the
    /// input, as `edge_at[lo..hi]` (positions in the split row, in order).
    pub(super) edges: Vec<(usize, usize, usize)>,
    pub(super) edge_at: Vec<usize>,
    /// Input rows a window spans: the ring of row results holds this many
    /// (at most the input's height).
    pub(super) slots: usize,
    /// Each output row's kernel rows inside the input, as
    /// `row_at[lo..hi]`: (input row, its ring slot).
    pub(super) rows: Vec<(usize, usize)>,
    pub(super) row_at: Vec<(usize, usize)>,
    /// Every output's divisor (mean only).
    pub(super) divs: Vec<T>,
    /// Output rows [`Reduce::planar_flat`] folds at a time, and the most
    /// input rows such a block reads.
    pub(super) block: usize,
    pub(super) most: usize,
}

/// The buffers one thread's planes reuse, plane after plane: row results
/// (a block's, or the ring), split rows, tag of each ring slot, and tap or
/// row positions. What a plane reads from them it wrote first, so they
/// are never cleared.
pub(super) struct Scratch<T> {
    pub(super) rows: Vec<T>,
    pub(super) phased: Vec<T>,
    pub(super) tags: Vec<usize>,
    pub(super) at: Vec<usize>,
    pub(super) starts: Vec<usize>,
}

impl<T: Num> Scratch<T> {
    pub(super) fn new(plan: &Plan<T>) -> Scratch<T> {
        let (w, s) = (&plan.w, plan.w.stride);
        let rows = (plan.most * w.input).max(plan.slots * w.output);
        let phased = if s == 1 {
            0
        } else {
            (plan.most * plan.len).max(plan.len) * s
        };
        Scratch {
            rows: vec![T::zero(); rows],
            phased: vec![T::zero(); phased],
            tags: vec![usize::MAX; plan.slots],
            at: Vec::with_capacity(plan.edge_at.len().max(w.kernel)),
            starts: Vec::with_capacity(plan.h.kernel),
        }
    }
}

impl<T: Num> Plan<T> {
    pub(super) fn new(h: Axis1, w: Axis1, finish: Finish<'_>) -> Plan<T> {
        let len = w.input.div_ceil(w.stride);
        let at = |o: usize, k: usize| {
            let iw = (w.start(o) + (k * w.dilation) as i64) as usize;
            (iw % w.stride) * len + iw / w.stride
        };
        let spans = (0..w.kernel).map(|kw| w.outputs_inside(kw));
        let lo = spans.clone().map(|r| r.0).max().unwrap_or(0);
        let hi = spans.map(|r| r.1).min().unwrap_or(0);
        let mid = if lo < hi { (lo, hi) } else { (0, 0) };
        let taps = if mid.0 < mid.1 {
            (0..w.kernel).map(|kw| at(mid.0, kw)).collect()
        } else {
            Vec::new()
        };
        let (mut edges, mut edge_at) = (Vec::new(), Vec::new());
        for o in (0..mid.0).chain(mid.1..w.output) {
            let (a, b) = w.taps_inside(o);
            edges.push((o, edge_at.len(), edge_at.len() + b - a));
            edge_at.extend((a..b).map(|kw| at(o, kw)));
        }
        let slots = ((h.kernel - 1) * h.dilation + 1).min(h.input).max(1);
        let (mut rows, mut row_at) = (Vec::new(), Vec::new());
        for oh in 0..h.output {
            let (a, b) = h.taps_inside(oh);
            rows.push((row_at.len(), row_at.len() + b - a));
            row_at.extend((a..b).map(|kh| {
                let ih = (h.start(oh) + (kh * h.dilation) as i64) as usize;
                (ih, ih % slots)
            }));
        }
        let block = (BLOCK / w.input.max(1)).max(1);
        let most = ((block - 1) * h.stride + (h.kernel - 1) * h.dilation + 1).min(h.input);
        Plan {
            divs: finish.divisors(&h, &w),
            block,
            most,
            h,
            w,
            len,
            mid,
            taps,
            edges,
            edge_at,
            slots,
            rows,
            row_at,
        }
    }
}

/// One plane of a 1-D or 2-D pool ([`Reduce::plane`]) as a `rten-simd`
/// operation: `rten-simd` compiles it once per instruction set (AVX-512,
/// AVX2 with FMA, baseline) and runs the one the CPU has, so the row folds'
/// vector loops use 8 or 16 lanes where the portable build has 4. The
/// loops are the same scalar code either way, which LLVM vectorizes without
/// reordering a float operation (no FMA contraction, the division kept), so
/// every instruction set gives the same bits, but for which of two NaNs a
/// NaN sum carries (an addition's operands may be swapped).
pub(super) struct PlaneOp<'a, 'r, T, S> {
    pub(super) reduce: &'a Reduce<'r, T, S>,
    pub(super) xp: &'a [T],
    pub(super) dst: &'a mut [T],
    pub(super) plan: &'a Plan<T>,
    pub(super) scratch: &'a mut Scratch<T>,
}

impl<T: Num, S> SimdOp for PlaneOp<'_, '_, T, S>
where
    S: Fn(T, T) -> T + Sync,
{
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, _isa: I) {
        self.reduce.plane(self.xp, self.dst, self.plan, self.scratch)
    }
}

impl<T: Num, S> Reduce<'_, T, S>
where
    S: Fn(T, T) -> T + Sync,
{
    /// Pools every contiguous input plane of `x` into the matching plane of
    /// `out`: 1-D and 2-D windows walk the input rows directly (see
    /// [`Reduce::planar`]), more spatial axes go through the gather table.
    /// Large inputs split their planes across the rayon pool (each plane
    /// is computed the same way on any thread).
    ///
    /// A max plane without NaN folds with `if b > a { b } else { a }` (one
    /// vector max instruction) and needs no finishing: it is the max step
    /// for any tap `b` that is not NaN (both keep `a` on ties and on a NaN
    /// `a`, and take a larger `b`), and a NaN-free fold gives no NaN to
    /// canonicalize. `Finish::Max` is only [`max_reduce`]'s.
    ///
    /// With `wide` (the CPU has AVX2 and FMA, see [`fastmath::available`])
    /// each 1-D or 2-D plane runs as a [`PlaneOp`], the same code compiled
    /// for the widest vectors the CPU has; the results are the same bits
    /// (see [`PlaneOp`]).
    pub(super) fn planes(&self, x: &[T], out: &mut [T], axes: &[Axis1]) -> Result<()> {
        self.planes_on(x, out, axes, fastmath::available())
    }

    /// [`Reduce::planes`], with or without the run-time vector kernels.
    pub(super) fn planes_on(&self, x: &[T], out: &mut [T], axes: &[Axis1], wide: bool) -> Result<()> {
        use rayon::prelude::*;
        let plane: usize = axes.iter().map(|a| a.input).product();
        let o: usize = axes.iter().map(|a| a.output).product();
        if let Some((h, w)) = planar(axes) {
            let plan = Plan::new(h, w, self.finish);
            let one = |scratch: &mut Scratch<T>, (p, dst): (usize, &mut [T])| {
                let xp = &x[p * plane..(p + 1) * plane];
                if wide {
                    PlaneOp {
                        reduce: self,
                        xp,
                        dst,
                        plan: &plan,
                        scratch,
                    }
                    .dispatch()
                } else {
                    self.plane(xp, dst, &plan, scratch)
                }
            };
            let chunks = o.max(1);
            if crate::parallel::split(x.len().max(out.len())) {
                let planes = out.par_chunks_mut(chunks).enumerate();
                planes.for_each_init(|| Scratch::new(&plan), one);
            } else {
                let mut scratch = Scratch::new(&plan);
                for pair in out.chunks_exact_mut(chunks).enumerate() {
                    one(&mut scratch, pair);
                }
            }
            return Ok(());
        }
        self.table(x, out, axes)
    }

    /// One 1-D or 2-D plane: a max plane without NaN folds with the plain
    /// max step and needs no finishing (see [`Reduce::planes`]).
    ///
    /// Whether a max plane has a NaN is learned while it is folded: the
    /// plain fold also watches every input it reads (see
    /// [`Reduce::planar`]), and a plane that read a NaN is folded again
    /// with this reduction's own step and finished as [`Finish::Max`].
    #[inline(always)]
    pub(super) fn plane(&self, xp: &[T], dst: &mut [T], plan: &Plan<T>, scratch: &mut Scratch<T>) {
        let sc = scratch;
        match self.finish {
            Finish::Max => {
                let step = |a: T, b: T| if b > a { b } else { a };
                if self.planar::<_, true>(&step, Last::Keep, xp, dst, plan, sc) {
                    self.planar::<_, false>(&self.step, Last::Canonical, xp, dst, plan, sc);
                }
            }
            Finish::Mean { .. } => {
                self.planar::<_, false>(&self.step, Last::Divide, xp, dst, plan, sc);
            }
        }
    }

    /// Any number of spatial axes, each window read through the gather table.
    pub(super) fn table(&self, x: &[T], out: &mut [T], axes: &[Axis1]) -> Result<()> {
        let plane: usize = axes.iter().map(|a| a.input).product();
        let o: usize = axes.iter().map(|a| a.output).product();
        let table = gather_table(axes)?;
        for (p, dst) in out.chunks_exact_mut(o.max(1)).enumerate() {
            let xp = &x[p * plane..(p + 1) * plane];
            for (i, d) in dst.iter_mut().enumerate() {
                let (mut acc, mut n) = (self.init, 0usize);
                for off in table[i..].iter().step_by(o) {
                    if *off != PAD {
                        acc = (self.step)(acc, xp[*off as usize]);
                        n += 1;
                    }
                }
                *d = self.finish.one(acc, n, i);
            }
        }
        Ok(())
    }
}

/// Max pooling: [`Num::maximum`] folded over each window, NaN winning.
/// The step keeps the accumulator on ties (as `maximum` keeps its first
/// operand) and on NaN, and takes a NaN tap, as one compare and select
/// that vectorizes; [`Finish::Max`] turns a NaN into `maximum`'s own NaN,
/// so the result is `maximum`'s bit for bit.
#[allow(clippy::eq_op)] // `a != a`: NaN, for any numeric T
pub(super) fn max_reduce<T: Num>() -> Reduce<'static, T, impl Fn(T, T) -> T> {
    Reduce {
        init: T::min_value(),
        step: |a: T, b: T| if (a >= b) | (a != a) { a } else { b },
        finish: Finish::Max,
    }
}

/// Average pooling: the sum of the taps inside the input over their
/// number or, with `padded` (`count_include_pad`), the window's count
/// inside the padded input.
pub(super) fn average_reduce<T: Num>(padded: Option<&[usize]>) -> Reduce<'_, T, impl Fn(T, T) -> T> {
    Reduce {
        init: T::zero(),
        step: |s: T, v: T| s + v,
        finish: Finish::Mean { padded },
    }
}

//! Pooling over the spatial axes of `[N, C, spatial…]` inputs, with ONNX's
//! semantics:
//!
//! - `max_pool(x)`: the window attrs (`kernel_shape` required, `strides`,
//!   `dilations`, `pads`, `auto_pad`, `ceil_mode`); padding never wins
//!   (it counts as -inf); NaN propagates. Numeric dtypes.
//! - `average_pool(x)`: the same attrs and `count_include_pad` (default 0):
//!   the divisor is the number of window positions inside the input, or,
//!   with `count_include_pad`, inside the padded input. Float dtypes.
//! - `global_average_pool(x)`, `global_max_pool(x)`: one window covering
//!   every spatial axis; the output keeps them as length 1.

use std::sync::Arc;

use ndarray::{ArrayViewD, ArrayViewMutD};
use rten_simd::{Isa, SimdOp};

use crate::dtype::{DType, Float, Num};
use crate::error::{op_err, Result};
use crate::kernels::fastmath;
use crate::ops::widen;
use crate::ops::window::{
    gather_table, infer_spatial, padded_counts, planar, Axis1, Window, PAD, WINDOW_ATTRS,
};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// Which reduction a pool applies to each window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    Max,
    Average { count_include_pad: bool },
}

/// `max_pool`, `average_pool`, or (with `global`) their global forms.
#[derive(Clone, Debug)]
pub struct Pool {
    pub kind: PoolKind,
    pub window: Window,
    pub global: bool,
}

impl Pool {
    fn op_name(&self) -> &'static str {
        match (self.kind, self.global) {
            (PoolKind::Max, false) => "max_pool",
            (PoolKind::Max, true) => "global_max_pool",
            (PoolKind::Average { .. }, false) => "average_pool",
            (PoolKind::Average { .. }, true) => "global_average_pool",
        }
    }

    fn kernel(&self, spatial: &[usize]) -> Result<Vec<usize>> {
        if self.global {
            return Ok(spatial.to_vec());
        }
        if self.window.kernel.is_empty() {
            return op_err(format!("op '{}' needs attr 'kernel_shape'", self.op_name()));
        }
        Ok(self.window.kernel.clone())
    }

    fn check_dtype(&self, dtype: DType) -> Result<()> {
        let ok = match self.kind {
            PoolKind::Max => dtype != DType::Bool,
            PoolKind::Average { .. } => dtype.is_float(),
        };
        if !ok {
            return op_err(format!("op '{}' does not take {dtype} inputs", self.op_name()));
        }
        Ok(())
    }

    fn axes(&self, shape: &[usize]) -> Result<Vec<Axis1>> {
        if shape.len() < 3 {
            return op_err(format!(
                "op '{}': input must be [N, C, spatial…], got shape {shape:?}",
                self.op_name()
            ));
        }
        let kernel = self.kernel(&shape[2..])?;
        self.window.resolve(self.op_name(), &shape[2..], &kernel)
    }
}

/// A window reduction: the elements inside the input are folded into
/// `init` with `step`, then `finish` gives the output.
struct Reduce<'a, T, S> {
    init: T,
    step: S,
    finish: Finish<'a>,
}

/// What turns a window's folded value into its output.
#[derive(Clone, Copy, Debug)]
enum Finish<'a> {
    /// The value itself, a NaN as [`Num::maximum`]'s own NaN.
    Max,
    /// The sum over the number of taps inside the input or, with `padded`
    /// (`count_include_pad`), the window's count inside the padded input.
    Mean { padded: Option<&'a [usize]> },
}

impl Finish<'_> {
    /// The output of window `i` whose `inside` taps folded to `acc`.
    fn one<T: Num>(self, acc: T, inside: usize, i: usize) -> T {
        match self {
            Finish::Max => T::maximum(acc, acc),
            Finish::Mean { padded } => acc / count::<T>(padded.map_or(inside, |c| c[i])),
        }
    }

    /// The divisor of every output of a plane (none for max): the window's
    /// count inside the padded input, or the taps inside the input, which
    /// for a 1-D or 2-D window `h` × `w` are the rows inside times the
    /// columns inside.
    fn divisors<T: Num>(self, h: &Axis1, w: &Axis1) -> Vec<T> {
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
enum Last {
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
    fn all<T: Num>(self, row: &mut [T], divs: &[T]) {
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
    fn mean<T: Num>(sum: T, div: T) -> T {
        (sum + T::zero()) / div
    }
}

/// `n` as a divisor in T.
fn count<T: Num>(n: usize) -> T {
    <T as num_traits::NumCast>::from(n).unwrap_or_else(T::one)
}

/// The geometry of a 1-D or 2-D pool, worked out once per call and shared
/// by every plane (see [`Reduce::planar`]).
struct Plan<T> {
    h: Axis1,
    w: Axis1,
    /// The length of one phase of a split row (`w.input / w.stride`, rounded up).
    len: usize,
    /// The output columns `lo..hi` whose every kernel tap reads inside the
    /// input (empty as `(0, 0)`).
    mid: (usize, usize),
    /// Where each kernel column's tap of window `mid.0` sits in the split row.
    taps: Vec<usize>,
    /// The other output columns: each one's index and its taps inside the
    /// input, as `edge_at[lo..hi]` (positions in the split row, in order).
    edges: Vec<(usize, usize, usize)>,
    edge_at: Vec<usize>,
    /// Input rows a window spans: the ring of row results holds this many
    /// (at most the input's height).
    slots: usize,
    /// Each output row's kernel rows inside the input, as
    /// `row_at[lo..hi]`: (input row, its ring slot).
    rows: Vec<(usize, usize)>,
    row_at: Vec<(usize, usize)>,
    /// Every output's divisor (mean only).
    divs: Vec<T>,
    /// Output rows [`Reduce::planar_flat`] folds at a time, and the most
    /// input rows such a block reads.
    block: usize,
    most: usize,
}

/// The buffers one thread's planes reuse, plane after plane: row results
/// (a block's, or the ring), split rows, tag of each ring slot, and tap or
/// row positions. What a plane reads from them it wrote first, so they
/// are never cleared.
struct Scratch<T> {
    rows: Vec<T>,
    phased: Vec<T>,
    tags: Vec<usize>,
    at: Vec<usize>,
    starts: Vec<usize>,
}

impl<T: Num> Scratch<T> {
    fn new(plan: &Plan<T>) -> Scratch<T> {
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
    fn new(h: Axis1, w: Axis1, finish: Finish<'_>) -> Plan<T> {
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
struct PlaneOp<'a, 'r, T, S> {
    reduce: &'a Reduce<'r, T, S>,
    xp: &'a [T],
    dst: &'a mut [T],
    plan: &'a Plan<T>,
    scratch: &'a mut Scratch<T>,
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
    fn planes(&self, x: &[T], out: &mut [T], axes: &[Axis1]) -> Result<()> {
        self.planes_on(x, out, axes, fastmath::available())
    }

    /// [`Reduce::planes`], with or without the run-time vector kernels.
    fn planes_on(&self, x: &[T], out: &mut [T], axes: &[Axis1], wide: bool) -> Result<()> {
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
    fn plane(&self, xp: &[T], dst: &mut [T], plan: &Plan<T>, scratch: &mut Scratch<T>) {
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
    fn table(&self, x: &[T], out: &mut [T], axes: &[Axis1]) -> Result<()> {
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

    /// One 2-D plane, separably, with `step` (this reduction's own or, for
    /// max, one the plane allows; see [`Reduce::planes`]) and `last`: each
    /// input row a window reads is first folded along the row, every output
    /// column's taps inside the input into one row result
    /// ([`Reduce::fold_row`]), once per input row; then each output row
    /// folds the row results of its kernel rows inside the input, column by
    /// column ([`Reduce::fold_slices`]). Row results are kept for a block
    /// of rows, folded a block at a time ([`Reduce::planar_flat`]) or,
    /// when a window reaches past the end of a split row's phase
    /// (`ceil_mode`), in a ring of as many rows as a window spans
    /// ([`Reduce::planar_ring`]); each input row is read and folded once
    /// (once per block that reads it), and every step is a straight vector
    /// loop over a block or a row. A 3×3 window costs 2 steps along the row and 2 down the
    /// column instead of 9. `last` then finishes the plane's outputs.
    ///
    /// Max stays bit for bit the gather table's fold (rows, then columns,
    /// from `init`): that fold returns the first NaN in tap order if there
    /// is one, else the first tap (or `init`) equal to the largest value
    /// (a tap replaces the accumulator only when strictly greater). A row
    /// result is that same pick within its row; folding the row results in
    /// row order then picks the first row holding a NaN, and its first NaN,
    /// or else the first row holding the largest value, and its first tap
    /// with it (earlier rows' results are smaller, later ones not larger;
    /// `init` is the least value of T, so it is kept only if every tap
    /// equals it, bit for bit). Integers likewise. Average sums each row
    /// first, so a sum may differ from the table's in its last bits
    /// (rounding in another order; never in the sign of a zero).
    ///
    /// With `WATCH`, returns whether any input the plane's folds read is a
    /// NaN (inputs no window reads may go unwatched); else `false`.
    #[inline(always)]
    fn planar<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        last: Last,
        xp: &[T],
        dst: &mut [T],
        plan: &Plan<T>,
        scratch: &mut Scratch<T>,
    ) -> bool {
        let w = &plan.w;
        let ow = w.output;
        if ow == 0 {
            return false;
        }
        if w.stride == 1 && ow <= w.input {
            self.planar_flat::<F, WATCH, false>(step, last, xp, dst, plan, scratch)
        } else if ow <= plan.len {
            self.planar_flat::<F, WATCH, true>(step, last, xp, dst, plan, scratch)
        } else {
            self.planar_ring::<F, WATCH>(step, last, xp, dst, plan, scratch)
        }
    }

    /// [`Reduce::planar`] through a ring of row results, for output rows
    /// wider than the input's (stride 1) or a phase's (strided): each
    /// input row a window reads is folded (split into phases when strided)
    /// when its first output row needs it, then each output row folds its
    /// rows' results, then `last` finishes it. With `WATCH`, the plane is
    /// scanned for NaN first, in one pass.
    #[inline(always)]
    fn planar_ring<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        last: Last,
        xp: &[T],
        dst: &mut [T],
        plan: &Plan<T>,
        scratch: &mut Scratch<T>,
    ) -> bool {
        let w = &plan.w;
        let ow = w.output;
        if WATCH && any_nan(xp) {
            return true;
        }
        let Scratch {
            rows: ring,
            phased: split,
            tags,
            starts,
            ..
        } = scratch;
        tags.fill(usize::MAX);
        let split = &mut split[..if w.stride == 1 { 0 } else { w.stride * plan.len }];
        for (oh, row) in dst.chunks_exact_mut(ow).enumerate() {
            let (lo, hi) = plan.rows[oh];
            starts.clear();
            for &(ih, slot) in &plan.row_at[lo..hi] {
                if tags[slot] != ih {
                    tags[slot] = ih;
                    let src = &xp[ih * w.input..(ih + 1) * w.input];
                    let src = if w.stride == 1 {
                        src
                    } else {
                        phases(src, w.stride, split);
                        &split[..]
                    };
                    self.fold_row(step, src, &mut ring[slot * ow..(slot + 1) * ow], plan);
                }
                starts.push(slot * ow);
            }
            self.fold_slices::<F, false>(step, row, ring, starts);
        }
        last.all(dst, &plan.divs);
        false
    }

    /// [`Reduce::planar`] for output rows no wider than the input's (at
    /// stride 1) or, with `SPLIT`, than a phase of a split row, a block
    /// of rows at a time rather than a row at a time: the row results of
    /// the block's input rows are kept with the input's row length (or a
    /// phase's, the block's rows being split into phases first, see
    /// [`Reduce::fold_split_rows`]), so each of the kernel's taps is one vector loop
    /// over the block (values a tap reads across a row's end land in the
    /// edge columns, which are then folded row by row, or past the
    /// output's width, which nothing reads). With same-size output rows
    /// and a stride-1 column axis, the block's output rows whose kernel
    /// rows are all inside fold the same way, one loop per kernel row (a
    /// 3-row mean divides in that loop); the others row by row, and `last`
    /// finishes the block's other output rows. A block covers about
    /// [`BLOCK`] elements, so its input, row results and output stay in
    /// the L1 cache; the input rows two blocks share are folded in each. Every output folds the same
    /// taps in the same order as [`Reduce::planar_ring`], so the results
    /// are the same bits. With `WATCH`, the row folds watch their inputs for
    /// NaN: the first tap's loop and the few inputs only later taps read,
    /// and each edge tap; split rows, every input as they are split.
    #[inline(always)]
    fn planar_flat<F: Fn(T, T) -> T, const WATCH: bool, const SPLIT: bool>(
        &self,
        step: &F,
        last: Last,
        xp: &[T],
        dst: &mut [T],
        plan: &Plan<T>,
        scratch: &mut Scratch<T>,
    ) -> bool {
        let (h, w) = (&plan.h, &plan.w);
        let (iw, ow) = (w.input, w.output);
        let hspan = (h.kernel - 1) * h.dilation;
        // Row results are kept at the input's row length, or a phase's
        // when the rows are split.
        let split = SPLIT;
        let pitch = if split { plan.len } else { iw };
        // The output rows whose kernel rows are all inside, when they can
        // fold as one loop per kernel row.
        let (mut vlo, mut vhi) = (0, 0);
        if h.stride == 1 && ow == pitch {
            let spans = (0..h.kernel).map(|k| h.outputs_inside(k));
            vlo = spans.clone().map(|r| r.0).max().unwrap_or(0);
            vhi = spans.map(|r| r.1).min().unwrap_or(0);
        }
        let block = plan.block;
        let Scratch {
            rows,
            phased,
            at,
            starts,
            ..
        } = scratch;
        let mut nan = false;
        for oa in (0..h.output).step_by(block) {
            let ob = (oa + block).min(h.output);
            // The input rows the block's windows read.
            let ia = (h.start(oa).max(0) as usize).min(h.input);
            let ib = ((h.start(ob - 1) + hspan as i64 + 1).max(0) as usize).min(h.input);
            let ib = ib.max(ia);
            let buf = &mut rows[..(ib - ia) * pitch];
            nan |= if split {
                let b = (ib - ia) * pitch;
                let src = &xp[ia * iw..ib * iw];
                let phased = &mut phased[..b * w.stride];
                self.fold_split_rows::<F, WATCH>(step, src, phased, buf, plan, at)
            } else {
                self.fold_flat_rows::<F, WATCH>(step, xp, (ia, ib), buf, plan, at)
            };
            let (ma, mb) = (vlo.max(oa), vhi.min(ob));
            // Whether the inner rows were divided as they were folded.
            let mut divided = false;
            if ma < mb {
                starts.clear();
                starts.extend(
                    (0..h.kernel).map(|k| ((h.start(ma) + (k * h.dilation) as i64) as usize - ia) * pitch),
                );
                let out = &mut dst[ma * ow..mb * ow];
                if let (Last::Divide, &[p, q, r]) = (last, &starts[..]) {
                    // A 3-row mean divides in the column fold's loop: one
                    // pass less over the output (the same operations, so
                    // the same bits as folding, then `Last::all`).
                    let len = out.len();
                    let divs = &plan.divs[ma * ow..ma * ow + len];
                    let (a, b, c) = (&buf[p..p + len], &buf[q..q + len], &buf[r..r + len]);
                    for i in 0..len {
                        out[i] = Last::mean(step(step(a[i], b[i]), c[i]), divs[i]);
                    }
                    divided = true;
                } else {
                    self.fold_slices::<F, false>(step, out, buf, starts);
                }
            }
            for oh in oa..ob {
                if ma <= oh && oh < mb {
                    continue;
                }
                let (a, b) = plan.rows[oh];
                starts.clear();
                starts.extend(plan.row_at[a..b].iter().map(|&(ih, _)| (ih - ia) * pitch));
                self.fold_slices::<F, false>(step, &mut dst[oh * ow..(oh + 1) * ow], buf, starts);
            }
            if WATCH && nan {
                return true;
            }
            // The rows not finished yet: all, or those around `ma..mb`.
            let done = if divided { ma..mb } else { ob..ob };
            for (ra, rb) in [(oa, done.start), (done.end, ob)] {
                if ra < rb {
                    let divs = plan.divs.get(ra * ow..).unwrap_or(&[]);
                    last.all(&mut dst[ra * ow..rb * ow], divs);
                }
            }
        }
        nan
    }

    /// The row results of input rows `ia..ib` of a stride-1 row axis, at
    /// the input's row length in `buf`: each kernel tap is one vector loop
    /// over the rows (see [`Reduce::planar_flat`]), then the edge columns
    /// are folded again. With `WATCH`, whether an input they read is NaN.
    #[inline(always)]
    fn fold_flat_rows<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        xp: &[T],
        (ia, ib): (usize, usize),
        buf: &mut [T],
        plan: &Plan<T>,
        at: &mut Vec<usize>,
    ) -> bool {
        let w = &plan.w;
        let iw = w.input;
        let span = (w.kernel - 1) * w.dilation;
        let n = plan.h.input * iw;
        let mut nan = false;
        if plan.mid.0 < plan.mid.1 {
            // Flat position j (row j / iw, column j % iw) reads tap k
            // at j + k * dilation - pad_begin.
            let lo = (ia * iw).max(w.pad_begin);
            let hi = (ib * iw).min((n + w.pad_begin).saturating_sub(span));
            if lo < hi {
                at.clear();
                at.extend((0..w.kernel).map(|k| k * w.dilation));
                let out = &mut buf[lo - ia * iw..hi - ia * iw];
                let src = &xp[lo - w.pad_begin..];
                nan |= self.fold_slices::<F, WATCH>(step, out, src, at);
                nan |= WATCH && any_nan(&src[hi - lo..hi - lo + span]);
            }
        }
        let src = &xp[ia * iw..ib * iw];
        nan | self.fold_edge_columns::<F, WATCH>(step, src, buf, plan, iw, &plan.edge_at)
    }

    /// The row results of the input rows `src` of a strided row axis, at a
    /// phase's length in `buf`: the rows are split into phases as one block
    /// (`phased` holds phase p of every row as `p * b..(p + 1) * b`, with
    /// `b = buf.len()`; a row ends where a phase does when the stride
    /// divides the row), each kernel tap is then one vector loop over the
    /// block, as in [`Reduce::fold_flat_rows`], and the edge columns are
    /// folded again. With `WATCH`, whether any input is NaN (the split
    /// reads them all).
    #[inline(always)]
    fn fold_split_rows<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        src: &[T],
        phased: &mut [T],
        buf: &mut [T],
        plan: &Plan<T>,
        at: &mut Vec<usize>,
    ) -> bool {
        let (s, len, iw) = (plan.w.stride, plan.len, plan.w.input);
        let b = buf.len();
        let nan = split_block::<T, WATCH>(src, s, iw, len, phased);
        let (lo, hi) = plan.mid;
        if lo < hi && b > 0 {
            // Flat position j (row j / len, column j % len) of a middle
            // window reads tap k at `p_k * b + i_k + (j - lo)`.
            at.clear();
            at.extend(plan.taps.iter().map(|&t| (t / len) * b + t % len));
            let out = &mut buf[lo..b - len + hi];
            self.fold_slices::<F, false>(step, out, phased, at);
        }
        at.clear();
        at.extend(plan.edge_at.iter().map(|&t| (t / len) * b + t % len));
        self.fold_edge_columns::<F, false>(step, phased, buf, plan, len, at);
        nan
    }

    /// One input row's results: `out[ow]` folds window `ow`'s taps inside
    /// the row (`src`, split into phases when strided) in kernel order,
    /// starting from the first tap (`init` when none is inside). The
    /// windows every tap reads inside take their taps as `K` slices side by
    /// side ([`Reduce::fold_slices`]), the few at the edges one by one.
    #[inline(always)]
    fn fold_row<F: Fn(T, T) -> T>(&self, step: &F, src: &[T], out: &mut [T], plan: &Plan<T>) {
        let (lo, hi) = plan.mid;
        if lo < hi {
            self.fold_slices::<F, false>(step, &mut out[lo..hi], src, &plan.taps);
        }
        self.fold_edges(step, src, out, plan);
    }

    /// The edge windows of every row's results in `out` (rows `pitch`
    /// apart, read from `src` at the same offsets: window `o`'s taps at
    /// `edge_at`, plan.edges' ranges, from each row's start), an edge
    /// column at a time down the rows: a window's taps sit at the same
    /// places in every row. The same folds as [`Reduce::fold_edges`] row
    /// by row; with `WATCH`, whether any tap is NaN.
    #[inline(always)]
    fn fold_edge_columns<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        src: &[T],
        out: &mut [T],
        plan: &Plan<T>,
        pitch: usize,
        edge_at: &[usize],
    ) -> bool {
        let iw = pitch;
        let n = out.len() / iw.max(1);
        let mut nan = false;
        // Index loops over the rows: an iterator's `for_each` may be left
        // out of line, built for the baseline (a tenth of a 3x3/1 max
        // pool's time, before).
        for &(o, a, b) in &plan.edges {
            match edge_at[a..b] {
                [] => {
                    for r in 0..n {
                        out[r * iw + o] = self.init;
                    }
                }
                [p] => {
                    for r in 0..n {
                        let s = &src[r * iw..];
                        nan |= WATCH && is_nan(s[p]);
                        out[r * iw + o] = s[p];
                    }
                }
                [p, q] => {
                    for r in 0..n {
                        let s = &src[r * iw..];
                        nan |= WATCH && (is_nan(s[p]) | is_nan(s[q]));
                        out[r * iw + o] = step(s[p], s[q]);
                    }
                }
                [p, q, t] => {
                    for r in 0..n {
                        let s = &src[r * iw..];
                        nan |= WATCH && (is_nan(s[p]) | is_nan(s[q]) | is_nan(s[t]));
                        out[r * iw + o] = step(step(s[p], s[q]), s[t]);
                    }
                }
                [p, ref more @ ..] => {
                    for r in 0..n {
                        let s = &src[r * iw..];
                        nan |= WATCH && is_nan(s[p]);
                        let mut m = s[p];
                        for &i in more {
                            nan |= WATCH && is_nan(s[i]);
                            m = step(m, s[i]);
                        }
                        out[r * iw + o] = m;
                    }
                }
            }
        }
        nan
    }

    /// The edge windows of one row's results (see [`Reduce::fold_row`]).
    #[inline(always)]
    fn fold_edges<F: Fn(T, T) -> T>(&self, step: &F, src: &[T], out: &mut [T], plan: &Plan<T>) {
        for &(o, a, b) in &plan.edges {
            let mut taps = plan.edge_at[a..b].iter().map(|&i| src[i]);
            out[o] = match taps.next() {
                Some(first) => taps.fold(first, step),
                None => self.init,
            };
        }
    }

    /// `out[i]` folds `src[starts[k] + i]` over k in order, up to three
    /// slices per pass: a row's middle windows over their kernel taps, or
    /// output rows over their kernel rows' results (inside the input);
    /// `init` when there are none. Folding an output into `init` first is
    /// left to [`Last::all`]: a max step from `init`, the least value of
    /// T, returns the tap bit for bit (it keeps `init` only on a tap equal
    /// to it, with the same bits), and a sum from `+0` only turns an all
    /// `-0` sum into `+0`, which adding `+0` last does too. With `WATCH`,
    /// returns whether the first slice holds a NaN (else `false`).
    #[inline(always)]
    fn fold_slices<F: Fn(T, T) -> T, const WATCH: bool>(
        &self,
        step: &F,
        out: &mut [T],
        src: &[T],
        starts: &[usize],
    ) -> bool {
        // Index loops over slices cut to `out`'s length: they vectorize and
        // inline into a `PlaneOp`'s instruction set (an iterator's
        // `for_each` may be left out of line, built for the baseline).
        let n = out.len();
        let r = |k: usize| &src[starts[k]..starts[k] + n];
        let first = starts.len().min(3);
        let mut nan = false;
        match first {
            0 => out.fill(self.init),
            1 => {
                out.copy_from_slice(r(0));
                nan = WATCH && any_nan(r(0));
            }
            2 => {
                let (a, b) = (r(0), r(1));
                for i in 0..n {
                    out[i] = step(a[i], b[i]);
                    nan |= WATCH && is_nan(a[i]);
                }
            }
            _ => {
                let (a, b, c) = (r(0), r(1), r(2));
                for i in 0..n {
                    out[i] = step(step(a[i], b[i]), c[i]);
                    nan |= WATCH && is_nan(a[i]);
                }
            }
        }
        let mut k = first;
        while k < starts.len() {
            if k + 1 < starts.len() {
                let (a, b) = (r(k), r(k + 1));
                for i in 0..n {
                    out[i] = step(step(out[i], a[i]), b[i]);
                }
                k += 2;
            } else {
                let a = r(k);
                for i in 0..n {
                    out[i] = step(out[i], a[i]);
                }
                k += 1;
            }
        }
        nan
    }
}

/// About how many elements of input rows [`Reduce::planar_flat`] folds
/// at a time (8 KiB of f32).
const BLOCK: usize = 2048;

/// Whether `v` is NaN, for any numeric T.
#[allow(clippy::eq_op)]
#[inline(always)]
fn is_nan<T: Num>(v: T) -> bool {
    v != v
}

/// Whether any of `v` is NaN.
#[inline(always)]
fn any_nan<T: Num>(v: &[T]) -> bool {
    v.iter().fold(false, |n, &v| n | is_nan(v))
}

/// Splits the rows `src` (`iw` long) into their `s` phases as one block:
/// `phased[p * b + r * len + j] = src[r * iw + j * s + p]`, where
/// `b = phased.len() / s` and `len = iw.div_ceil(s)` (a phase's missing
/// tail is left as is; no window reads it). When `s` divides the rows,
/// row r's phase ends where row r + 1's starts, so each phase is one loop
/// over the block. With `WATCH`, returns whether any of `src` is NaN.
#[inline(always)]
fn split_block<T: Num, const WATCH: bool>(
    src: &[T],
    s: usize,
    iw: usize,
    len: usize,
    phased: &mut [T],
) -> bool {
    let b = phased.len() / s;
    if b == 0 || iw == 0 {
        return false;
    }
    if !iw.is_multiple_of(s) {
        for (r, row) in src.chunks_exact(iw).enumerate() {
            for (p, phase) in phased.chunks_exact_mut(b).enumerate() {
                let phase = &mut phase[r * len..(r + 1) * len];
                for j in 0..iw.saturating_sub(p).div_ceil(s) {
                    phase[j] = row[j * s + p];
                }
            }
        }
        return WATCH && any_nan(src);
    }
    let src = &src[..s * b];
    if s == 2 {
        let (even, odd) = phased.split_at_mut(b);
        let mut nan = false;
        for ((e, o), pair) in even.iter_mut().zip(odd.iter_mut()).zip(src.chunks_exact(2)) {
            (*e, *o) = (pair[0], pair[1]);
            nan |= WATCH && (is_nan(pair[0]) | is_nan(pair[1]));
        }
        return nan;
    }
    for (p, phase) in phased.chunks_exact_mut(b).enumerate() {
        for j in 0..b {
            phase[j] = src[j * s + p];
        }
    }
    WATCH && any_nan(src)
}

/// Splits `src` into its `s` phases: `out[p * len + j] = src[j * s + p]`
/// with `len = ceil(src.len() / s)` (a phase's missing tail is left as is;
/// no window reads it).
#[inline(always)]
fn phases<T: Copy>(src: &[T], s: usize, out: &mut [T]) {
    let len = src.len().div_ceil(s);
    if s == 2 {
        let (even, odd) = out.split_at_mut(len);
        for ((e, o), pair) in even.iter_mut().zip(odd.iter_mut()).zip(src.chunks_exact(2)) {
            *e = pair[0];
            *o = pair[1];
        }
        if src.len() % 2 == 1 {
            even[len - 1] = src[src.len() - 1];
        }
        return;
    }
    for (j, chunk) in src.chunks(s).enumerate() {
        for (p, &v) in chunk.iter().enumerate() {
            out[p * len + j] = v;
        }
    }
}

/// Max pooling: [`Num::maximum`] folded over each window, NaN winning.
/// The step keeps the accumulator on ties (as `maximum` keeps its first
/// operand) and on NaN, and takes a NaN tap, as one compare and select
/// that vectorizes; [`Finish::Max`] turns a NaN into `maximum`'s own NaN,
/// so the result is `maximum`'s bit for bit.
#[allow(clippy::eq_op)] // `a != a`: NaN, for any numeric T
fn max_reduce<T: Num>() -> Reduce<'static, T, impl Fn(T, T) -> T> {
    Reduce {
        init: T::min_value(),
        step: |a: T, b: T| if (a >= b) | (a != a) { a } else { b },
        finish: Finish::Max,
    }
}

/// Average pooling: the sum of the taps inside the input over their
/// number or, with `padded` (`count_include_pad`), the window's count
/// inside the padded input.
fn average_reduce<T: Num>(padded: Option<&[usize]>) -> Reduce<'_, T, impl Fn(T, T) -> T> {
    Reduce {
        init: T::zero(),
        step: |s: T, v: T| s + v,
        finish: Finish::Mean { padded },
    }
}

fn run_pool<T: Num>(p: &Pool, x: &Tensor, out: &Tensor, axes: &[Axis1]) -> Result<()> {
    x.read(|xv: ArrayViewD<'_, T>| {
        let xc = xv.as_standard_layout();
        let xs = xc
            .as_slice()
            .ok_or_else(|| crate::error::Error::Op("internal: pool input".into()))?;
        out.write(|mut ov: ArrayViewMutD<'_, T>| {
            let standard = ov.is_standard_layout();
            let mut tmp = if standard {
                Vec::new()
            } else {
                vec![T::zero(); ov.len()]
            };
            let shape = ov.shape().to_vec();
            let dst = match ov.as_slice_mut() {
                Some(s) => s,
                None => &mut tmp[..],
            };
            match p.kind {
                PoolKind::Max => max_reduce::<T>().planes(xs, dst, axes)?,
                PoolKind::Average { count_include_pad } => {
                    let counts = count_include_pad.then(|| padded_counts(axes));
                    let r = average_reduce::<T>(counts.as_deref());
                    r.planes(xs, dst, axes)?
                }
            }
            if !standard {
                let v = ArrayViewD::from_shape(shape, &tmp[..])
                    .map_err(|e| crate::error::Error::Op(format!("internal: pool output: {e}")))?;
                ov.assign(&v);
            }
            Ok(())
        })?
    })?
}

fn run_float<T: Float>(p: &Pool, x: &Tensor, out: &Tensor, axes: &[Axis1]) -> Result<()> {
    run_pool::<T>(p, x, out, axes)
}

impl Op for Pool {
    fn name(&self) -> &str {
        self.op_name()
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype)?;
        let Some(s) = &x.shape else {
            return Ok(vec![x.clone()]);
        };
        if s.len() < 3 {
            return op_err(format!(
                "op '{}': input must be [N, C, spatial…], got rank {}",
                self.op_name(),
                s.len()
            ));
        }
        if self.global {
            let mut out = s[..2].to_vec();
            out.extend(std::iter::repeat_n(1, s.len() - 2));
            return Ok(vec![TypeInfo::new(x.dtype, Some(out))]);
        }
        let kernel = self.kernel(&[])?;
        Ok(vec![TypeInfo::new(
            x.dtype,
            infer_spatial(self.op_name(), &self.window, &x.shape, &kernel, s[1])?,
        )])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if self.kind != PoolKind::Max && widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype())?;
        let axes = self.axes(x.shape())?;
        let mut shape = x.shape()[..2].to_vec();
        shape.extend(axes.iter().map(|a| a.output));
        let out = ctx.output(0, x.dtype(), &shape)?;
        match self.kind {
            PoolKind::Max => crate::dispatch_num!(x.dtype(), T => run_pool::<T>(self, x, &out, &axes)?,
                return op_err(format!("op '{}' does not take bool inputs", self.op_name()))),
            PoolKind::Average { .. } => {
                crate::dispatch_float!(x.dtype(), T => run_float::<T>(self, x, &out, &axes)?,
                return op_err(format!("op '{}' takes float inputs", self.op_name())))
            }
        }
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let a = match self.kind {
            PoolKind::Average {
                count_include_pad: true,
            } => Attrs::new().with("count_include_pad", 1),
            _ => Attrs::new(),
        };
        if self.global {
            a
        } else {
            self.window.to_attrs(a)
        }
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("max_pool", |a: &Attrs| {
        a.only("max_pool", &WINDOW_ATTRS)?;
        let p = Pool {
            kind: PoolKind::Max,
            window: Window::from_attrs(a)?,
            global: false,
        };
        p.kernel(&[])?;
        Ok(Arc::new(p) as Arc<dyn Op>)
    });
    r.register("average_pool", |a: &Attrs| {
        let mut known = WINDOW_ATTRS.to_vec();
        known.push("count_include_pad");
        a.only("average_pool", &known)?;
        let p = Pool {
            kind: PoolKind::Average {
                count_include_pad: a.i64("count_include_pad")?.unwrap_or(0) != 0,
            },
            window: Window::from_attrs(a)?,
            global: false,
        };
        p.kernel(&[])?;
        Ok(Arc::new(p) as Arc<dyn Op>)
    });
    for kind in [
        PoolKind::Max,
        PoolKind::Average {
            count_include_pad: false,
        },
    ] {
        r.register_op(Arc::new(Pool {
            kind,
            window: Window::default(),
            global: true,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn axis() -> impl Strategy<Value = (usize, usize, usize, usize, usize, usize)> {
        (0usize..8, 1usize..4, 1usize..4, 1usize..3, 0usize..3, 0usize..3)
    }

    /// A stride-1 axis: input 0..12 (also narrower than the kernel) or
    /// 17..40 (wider than one vector of f32 on each side of the edges),
    /// kernel 2..=5, dilation 1 or 2, pads up to the kernel each side.
    fn stride_one_axis() -> impl Strategy<Value = (usize, usize, usize, usize, usize, usize)> {
        (prop_oneof![0usize..12, 17usize..40], 2usize..6, 1usize..3)
            .prop_flat_map(|(n, k, d)| (Just(n), Just(k), Just(1usize), Just(d), 0..=k, 0..=k))
    }

    /// Bit equality, any NaN matching only a NaN with the same bits.
    fn same_bits(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits())
    }

    /// The pool of `spec` (input, kernel, stride, dilation, pad begin, pad
    /// end per axis) with `ceil_mode`, or `None` when it has no valid shape.
    fn resolve(
        spec: &[(usize, usize, usize, usize, usize, usize)],
        ceil: bool,
    ) -> Option<(Vec<Axis1>, usize)> {
        let win = Window {
            strides: spec.iter().map(|a| a.2).collect(),
            dilations: spec.iter().map(|a| a.3).collect(),
            pads: spec.iter().map(|a| a.4).chain(spec.iter().map(|a| a.5)).collect(),
            ceil_mode: ceil,
            ..Window::default()
        };
        let input: Vec<usize> = spec.iter().map(|a| a.0).collect();
        let kernel: Vec<usize> = spec.iter().map(|a| a.1).collect();
        let axes = win.resolve("pool", &input, &kernel).ok()?;
        Some((axes, kernel.iter().product()))
    }

    /// The run-time vector path ([`PlaneOp`]) against the baseline build of
    /// the same walk: max and both averages bit for bit (no operation is
    /// reordered between them), a NaN average matching any NaN (which of
    /// two NaNs a sum carries is up to the instruction's operand order),
    /// the averages with `avg` (floats). Without
    /// AVX2 and FMA both are the baseline.
    fn paths_agree<T: Num>(x: &[T], axes: &[Axis1], avg: bool) -> std::result::Result<(), String> {
        let o = x.len() / axes.iter().map(|a| a.input).product::<usize>().max(1)
            * axes.iter().map(|a| a.output).product::<usize>();
        let bits = |v: &[T]| bytemuck::cast_slice::<T, u8>(v).to_vec();
        let (mut wide, mut base) = (vec![T::one(); o], vec![T::zero(); o]);
        max_reduce::<T>().planes_on(x, &mut wide, axes, true).unwrap();
        max_reduce::<T>().planes_on(x, &mut base, axes, false).unwrap();
        if bits(&wide) != bits(&base) {
            return Err(format!("max paths {axes:?}: {wide:?} vs {base:?}"));
        }
        let counts = padded_counts(axes);
        for c in [None, Some(&counts[..])].into_iter().filter(|_| avg) {
            let (mut wide, mut base) = (vec![T::one(); o], vec![T::zero(); o]);
            average_reduce::<T>(c)
                .planes_on(x, &mut wide, axes, true)
                .unwrap();
            average_reduce::<T>(c)
                .planes_on(x, &mut base, axes, false)
                .unwrap();
            let same = |(p, q): (&T, &T)| bits(&[*p]) == bits(&[*q]) || (is_nan(*p) && is_nan(*q));
            if !wide.iter().zip(&base).all(same) {
                return Err(format!("avg paths {c:?} {axes:?}: {wide:?} vs {base:?}"));
            }
        }
        Ok(())
    }

    /// The average pools of the planar walk against the gather table's (the
    /// reference step `+`, taps in row-major order). The planar walk sums
    /// each kernel row first, so sums may round differently: outputs must
    /// agree within 4 ULP per kernel tap of the mean of the taps' magnitudes
    /// (the bound on reordered summation, over the same divisor), NaN with
    /// any NaN, infinities exactly.
    fn averages_agree<T: Float>(
        x: &[T],
        axes: &[Axis1],
        taps: usize,
        eps: f64,
    ) -> std::result::Result<(), String> {
        let o = x.len() / axes.iter().map(|a| a.input).product::<usize>().max(1)
            * axes.iter().map(|a| a.output).product::<usize>();
        let counts = padded_counts(axes);
        for c in [None, Some(&counts[..])] {
            let (mut fast, mut general, mut scale) =
                (vec![T::one(); o], vec![T::zero(); o], vec![T::zero(); o]);
            average_reduce::<T>(c).planes(x, &mut fast, axes).unwrap();
            let avg = Reduce {
                init: T::zero(),
                step: |s: T, v: T| s + v,
                finish: Finish::Mean { padded: c },
            };
            avg.table(x, &mut general, axes).unwrap();
            let abs = Reduce {
                init: T::zero(),
                step: |s: T, v: T| s + <T as Num>::abs(v),
                finish: Finish::Mean { padded: c },
            };
            abs.table(x, &mut scale, axes).unwrap();
            for i in 0..o {
                let f = <T as crate::dtype::Element>::to_f64;
                let (p, q, m) = (f(fast[i]), f(general[i]), f(scale[i]));
                let ok = (p.is_nan() && q.is_nan())
                    || p == q
                    || (p.is_finite() && q.is_finite() && (p - q).abs() <= 4.0 * eps * taps as f64 * m);
                if !ok {
                    return Err(format!("avg {c:?} {axes:?} at {i}: {p:e} vs {q:e} (scale {m:e})"));
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The planar walk gives what the gather table gives with the
        /// reference steps ([`Num::maximum`], `+`): max bit for bit (NaN,
        /// -inf, NaN with its sign bit set, and ±0 among the inputs), both
        /// averages within reordered summation's rounding (see
        /// [`averages_agree`]), with strides, dilations, pads and ceil_mode,
        /// in 1-D and 2-D.
        #[test]
        fn planar_pools_match_the_gather_table(
            h in axis(),
            w in axis(),
            ceil in any::<bool>(),
            planes in 1usize..3,
            specials in prop::collection::vec((any::<prop::sample::Index>(), 0usize..5), 0..4),
        ) {
            for spec in [vec![w], vec![h, w]] {
                let Some((axes, taps)) = resolve(&spec, ceil) else { continue };
                let n = planes * spec.iter().map(|a| a.0).product::<usize>();
                let o = planes * axes.iter().map(|a| a.output).product::<usize>();
                let mut x: Vec<f64> = (0..n).map(|i| (((i * 7919) % 101) as f64 - 50.0) * 0.37).collect();
                for (at, kind) in &specials {
                    if n > 0 {
                        x[at.index(n)] = [f64::NAN, -f64::NAN, f64::NEG_INFINITY, 0.0, -0.0][*kind];
                    }
                }
                let max = Reduce { init: <f64 as Num>::min_value(), step: <f64 as Num>::maximum, finish: Finish::Max };
                let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
                max_reduce::<f64>().planes(&x, &mut fast, &axes).unwrap();
                max.table(&x, &mut general, &axes).unwrap();
                prop_assert!(same_bits(&fast, &general), "max {:?}: {:?} vs {:?}", axes, fast, general);
                if let Err(e) = averages_agree(&x, &axes, taps, f64::EPSILON) {
                    prop_assert!(false, "{}", e);
                }
                if let Err(e) = paths_agree(&x, &axes, true) {
                    prop_assert!(false, "{}", e);
                }
            }
        }

        /// Stride-1 windows (kernels 2 to 5, dilation 1 and 2, pads up to
        /// the kernel, ceil_mode, planes narrower than the kernel) in f32,
        /// with ties, ±0, ±inf and NaNs of both signs among the inputs: max
        /// bit for bit, integer max exactly, averages as above.
        #[test]
        fn stride_one_pools_match_the_gather_table(
            h in stride_one_axis(),
            w in stride_one_axis(),
            ceil in any::<bool>(),
            planes in 1usize..3,
            vals in prop::collection::vec(-100f32..100f32, 1..40),
            specials in prop::collection::vec((any::<prop::sample::Index>(), 0usize..6), 0..5),
        ) {
            for spec in [vec![w], vec![h, w]] {
                let Some((axes, taps)) = resolve(&spec, ceil) else { continue };
                let n = planes * spec.iter().map(|a| a.0).product::<usize>();
                let o = planes * axes.iter().map(|a| a.output).product::<usize>();
                let mut x: Vec<f32> = (0..n).map(|i| vals[i % vals.len()]).collect();
                for (at, kind) in &specials {
                    if n > 0 {
                        x[at.index(n)] = [f32::NAN, -f32::NAN, f32::NEG_INFINITY, f32::INFINITY, 0.0, -0.0][*kind];
                    }
                }
                let max = Reduce { init: <f32 as Num>::min_value(), step: <f32 as Num>::maximum, finish: Finish::Max };
                let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
                max_reduce::<f32>().planes(&x, &mut fast, &axes).unwrap();
                max.table(&x, &mut general, &axes).unwrap();
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                prop_assert_eq!(bits(&fast), bits(&general), "max {:?}", axes);
                let xi: Vec<i32> = x.iter().map(|&f| if f.is_nan() { 7 } else { f.clamp(-1e9, 1e9) as i32 }).collect();
                let imax = Reduce { init: <i32 as Num>::min_value(), step: <i32 as Num>::maximum, finish: Finish::Max };
                let (mut ifast, mut igeneral) = (vec![1; o], vec![2; o]);
                max_reduce::<i32>().planes(&xi, &mut ifast, &axes).unwrap();
                imax.table(&xi, &mut igeneral, &axes).unwrap();
                prop_assert_eq!(ifast, igeneral, "int max {:?}", axes);
                if let Err(e) = averages_agree(&x, &axes, taps, f32::EPSILON as f64) {
                    prop_assert!(false, "{}", e);
                }
                for e in [paths_agree(&x, &axes, true), paths_agree(&xi, &axes, false)] {
                    if let Err(e) = e {
                        prop_assert!(false, "{}", e);
                    }
                }
            }
        }

        /// Integer max pools agree with the table too (no NaN to carry).
        #[test]
        fn integer_max_pools_match_the_gather_table(h in axis(), w in axis(), ceil in any::<bool>()) {
            let win = Window {
                strides: vec![h.2, w.2],
                dilations: vec![h.3, w.3],
                pads: vec![h.4, w.4, h.5, w.5],
                ceil_mode: ceil,
                ..Window::default()
            };
            let Ok(axes) = win.resolve("pool", &[h.0, w.0], &[h.1, w.1]) else { return Ok(()) };
            let x: Vec<i64> = (0..h.0 * w.0).map(|i| ((i * 7919) % 101) as i64 - 50).collect();
            let o = axes.iter().map(|a| a.output).product::<usize>();
            let reference = Reduce { init: <i64 as Num>::min_value(), step: <i64 as Num>::maximum, finish: Finish::Max };
            let (mut fast, mut general) = (vec![1; o], vec![2; o]);
            max_reduce::<i64>().planes(&x, &mut fast, &axes).unwrap();
            reference.table(&x, &mut general, &axes).unwrap();
            prop_assert_eq!(fast, general);
        }
    }

    /// Planes taller than one of [`planar_flat`]'s blocks: the blocks'
    /// shared input rows, their middle and edge output rows, column
    /// strides of 2 and 3, and strided rows (the ring walk) for
    /// comparison; max (with NaN of both signs and inf) bit for bit,
    /// averages within rounding, and the vector path as the baseline.
    ///
    /// [`planar_flat`]: Reduce::planar_flat
    #[test]
    fn tall_planes_fold_in_blocks() {
        // An odd width splits strided rows row by row, an even one as a
        // block (stride 2).
        for width in [23, 24] {
            assert!(BLOCK / width < 150);
            for (kh, sh, dh, ph, kw, sw, dw, pw) in [
                (3, 1, 1, 1, 3, 1, 1, 1),
                (3, 2, 1, 1, 3, 1, 1, 1),
                (5, 1, 2, 2, 5, 1, 2, 2),
                (2, 1, 1, 0, 2, 1, 1, 0),
                (7, 1, 1, 3, 3, 1, 2, 2),
                (3, 3, 1, 0, 4, 1, 1, 1),
                (1, 1, 1, 0, 3, 1, 1, 0),
                (3, 2, 1, 1, 3, 2, 1, 1),
                (2, 2, 1, 0, 2, 2, 1, 0),
                (4, 3, 1, 2, 5, 3, 2, 3),
            ] {
                let spec = [(301, kh, sh, dh, ph, ph), (width, kw, sw, dw, pw, pw)];
                let (axes, taps) = resolve(&spec, false).unwrap();
                let n = 2 * 301 * width;
                let o = 2 * axes.iter().map(|a| a.output).product::<usize>();
                let mut x: Vec<f32> = (0..n)
                    .map(|i| ((i * 7919) % 1009) as f32 * 0.173 - 80.0)
                    .collect();
                let max = Reduce {
                    init: <f32 as Num>::min_value(),
                    step: <f32 as Num>::maximum,
                    finish: Finish::Max,
                };
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                for specials in [false, true] {
                    if specials {
                        x[2000] = f32::NAN;
                        x[4700] = -f32::NAN;
                        x[9000] = f32::INFINITY;
                        x[n - 5] = -0.0;
                    }
                    let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
                    max_reduce::<f32>().planes(&x, &mut fast, &axes).unwrap();
                    max.table(&x, &mut general, &axes).unwrap();
                    assert_eq!(bits(&fast), bits(&general), "max {axes:?}");
                    averages_agree(&x, &axes, taps, f32::EPSILON as f64).unwrap();
                    paths_agree(&x, &axes, true).unwrap();
                }
            }
        }
    }

    /// A single NaN (of either sign) at every position of a small plane in
    /// turn, also where only an edge window or only a later tap reads it
    /// or where no window reads it: the max pools that learn of NaN while
    /// folding (see [`Reduce::plane`]) match the gather table bit for bit,
    /// with stride-1 and strided rows, and the vector path the baseline.
    #[test]
    fn every_nan_position_is_seen() {
        for (kh, sh, ph, kw, sw, dw, pw) in [
            (3, 1, 1, 3, 1, 1, 1),
            (2, 1, 0, 2, 1, 1, 0),
            (3, 1, 0, 3, 1, 1, 0),
            (2, 1, 2, 2, 1, 1, 2),
            (3, 1, 1, 5, 1, 2, 1),
            (1, 1, 0, 4, 1, 1, 3),
            (3, 2, 1, 3, 2, 1, 1),
            (2, 2, 0, 2, 2, 1, 0),
            (3, 2, 0, 3, 3, 1, 0),
        ] {
            // Width 21: the middle windows are wider than one vector of f32;
            // 22: stride-2 rows split as a block.
            for width in [9, 21, 22] {
                let spec = [(6, kh, sh, 1, ph, ph), (width, kw, sw, dw, pw, pw)];
                let (axes, _) = resolve(&spec, false).unwrap();
                let n = 6 * width;
                let o = axes.iter().map(|a| a.output).product::<usize>();
                let max = Reduce {
                    init: <f32 as Num>::min_value(),
                    step: <f32 as Num>::maximum,
                    finish: Finish::Max,
                };
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                for at in 0..n {
                    for nan in [f32::NAN, -f32::NAN] {
                        let mut x: Vec<f32> = (0..n).map(|i| ((i * 37) % 23) as f32 - 11.0).collect();
                        x[at] = nan;
                        let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
                        max_reduce::<f32>().planes(&x, &mut fast, &axes).unwrap();
                        max.table(&x, &mut general, &axes).unwrap();
                        assert_eq!(bits(&fast), bits(&general), "max {axes:?} NaN at {at}");
                        paths_agree(&x, &axes, false).unwrap();
                    }
                }
            }
        }
    }

    /// A wide plane: the ring of row results wraps many times, and the
    /// middle windows run as slices (the proptests' planes are small).
    #[test]
    fn wide_planes_match_the_gather_table() {
        for (k, s, d, p, even) in [
            (3, 1, 1, 1, 0),
            (3, 2, 1, 1, 0),
            (3, 2, 1, 1, 1),
            (2, 2, 1, 0, 0),
            (2, 2, 1, 0, 1),
            (3, 2, 2, 2, 1),
            (5, 1, 2, 2, 0),
            (4, 3, 1, 2, 0),
            (4, 3, 1, 2, 1),
            (7, 1, 1, 3, 0),
        ] {
            // Width 41 splits strided rows row by row, 42 as a block
            // (strides 2 and 3).
            let width = 41 + even;
            let spec = [(37, k, s, d, p, p), (width, k, s, d, p, p)];
            let (axes, taps) = resolve(&spec, false).unwrap();
            let n = 2 * 37 * width;
            let o = 2 * axes.iter().map(|a| a.output).product::<usize>();
            let mut x: Vec<f32> = (0..n)
                .map(|i| ((i * 7919) % 1009) as f32 * 0.173 - 80.0)
                .collect();
            x[500] = f32::NAN;
            x[900] = -f32::NAN;
            x[1700] = f32::INFINITY;
            let max = Reduce {
                init: <f32 as Num>::min_value(),
                step: <f32 as Num>::maximum,
                finish: Finish::Max,
            };
            let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
            max_reduce::<f32>().planes(&x, &mut fast, &axes).unwrap();
            max.table(&x, &mut general, &axes).unwrap();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&general), "max {axes:?}");
            averages_agree(&x, &axes, taps, f32::EPSILON as f64).unwrap();
            paths_agree(&x, &axes, true).unwrap();
            let xd: Vec<f64> = x.iter().map(|&v| v as f64 * 1.1).collect();
            paths_agree(&xd, &axes, true).unwrap();
        }
    }
}

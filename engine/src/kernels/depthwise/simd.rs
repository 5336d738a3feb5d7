//! The f32 depthwise kernel on the CPU's widest SIMD (AVX-512, or AVX2 with
//! FMA), chosen at run time through `rten-simd` as `fastmath` does.
//!
//! Each input plane is first copied into a zero-padded buffer split into
//! `stride_h · stride_w` phases (phase `(r, c)` holds the padded plane's
//! rows `r, r + stride_h, …` and, of those, the columns `c, c + stride_w,
//! …`), each `wq` wide. A tap then reads, for output `(oh, ow)`, element
//! `oh · wq + ow` of its phase shifted by a constant: over the flat grid of
//! `oh · wq + ow`, every tap of every output is one contiguous,
//! unconditional vector load, whatever the stride or padding, and vectors
//! run across output rows, so a 7- or 14-wide plane fills them (the grid's
//! `wq - wo` extra columns per row are computed and dropped). Each vector of
//! outputs accumulates its taps in tap order with fused multiply-adds, eight
//! vectors at a time so the adds do not wait on one another. Taps over the
//! zero padding add `w · 0`, as an im2col GEMM does. A narrow strided plane
//! keeps its columns whole instead ([`DENSE_MAX`]).

use rayon::prelude::*;
use rten_simd::ops::{BitOps, NumOps};
use rten_simd::{Isa, SimdOp};

use super::{parallel, AxisTaps, Depthwise};
use crate::kernels::fastmath;

/// Output vectors accumulated together.
const VECS: usize = 8;

/// Input columns times kernel columns up to which a strided conv's grid
/// computes every column (twice the multiply-adds at stride 2) rather than
/// splitting its input into column phases one element at a time. Measured
/// at stride 2, dense against phases: 240×28² 3×3 0.69x of the time,
/// 672×14² 5×5 0.73x, 72×56² 3×3 0.85x (168); 96×112² 3×3 1.0x, 16×112²
/// 3×3 1.18x, 144×56² 5×5 1.16x (280 and over).
const DENSE_MAX: usize = 192;

/// One padded axis: taps become (phase, shift) reads of a phase buffer.
struct Axis {
    /// Padded coordinate of each tap at output 0 (`first[k] - first[0]`).
    offset: Vec<usize>,
    /// Input coordinate of padded coordinate 0.
    base: i64,
    stride: usize,
    input: usize,
    output: usize,
}

impl Axis {
    fn new(a: &AxisTaps) -> Option<Axis> {
        let base = *a.first.first()?;
        let offset = a
            .first
            .iter()
            .map(|&f| usize::try_from(f - base).ok())
            .collect::<Option<Vec<_>>>()?;
        Some(Axis {
            offset,
            base,
            stride: a.stride.max(1),
            input: a.input,
            output: a.output,
        })
    }

    /// The axis as stride 1 over the same taps: outputs at every input
    /// position from output 0's to the last output's, of which the strided
    /// outputs are every `stride`-th.
    fn dense(self) -> Axis {
        Axis {
            output: self.output.saturating_sub(1) * self.stride + 1,
            stride: 1,
            ..self
        }
    }

    /// The padded length every tap of every output reads within.
    fn padded(&self) -> usize {
        (self.output - 1) * self.stride + self.offset.iter().max().copied().unwrap_or(0) + 1
    }

    /// Elements of the axis in each phase.
    fn phase_len(&self) -> usize {
        self.padded().div_ceil(self.stride)
    }

    /// The input element at padded coordinate `p`, if inside the input.
    fn input_at(&self, p: usize) -> Option<usize> {
        let i = p as i64 + self.base;
        (0..self.input as i64).contains(&i).then_some(i as usize)
    }
}

/// `⌈n / d⌉` for `d > 0` and any sign of `n`.
fn ceil_div(n: i64, d: i64) -> i64 {
    (n + d - 1).div_euclid(d)
}

/// The columns `lo..hi` of a column phase that are inside the input: phase
/// column `j` holds input column `j · stride + shift`.
struct Run {
    shift: i64,
    lo: usize,
    hi: usize,
}

/// The buffer layout of one channel for vectors of `lanes` f32.
struct Geometry {
    h: Axis,
    w: Axis,
    /// Rows of each phase, and the pitch of its rows: the padded row's
    /// length, or less where rows share their padding (see
    /// [`Geometry::new`]).
    hq: usize,
    wq: usize,
    /// Elements of each phase: `hq · wq` and the slack that the last
    /// vector's shifted loads read past it and that its last row's spilled
    /// vector lands in (see [`Geometry::fill`]).
    phase: usize,
    /// Outputs of the flat grid, `ho · wq`, rounded up to whole vectors.
    grid: usize,
    /// Buffer offset of each tap (row-major over the kernel).
    taps: Vec<usize>,
    /// Per column phase, the run of its columns inside the input.
    runs: Vec<Run>,
    /// The row copies that fill a buffer (see [`Geometry::plan_copies`]).
    copies: Vec<RowCopy>,
    /// Output columns, and grid columns per output column: the conv's
    /// column stride when the grid's columns are dense (see
    /// [`Geometry::new`]), else 1.
    wo: usize,
    step: usize,
}

impl Geometry {
    /// A column stride above 1 on a narrow plane makes the grid's columns
    /// dense (see [`DENSE_MAX`]): the buffer then holds the padded rows
    /// whole, copied with vector loads, instead of split into column phases
    /// one element at a time, and the grid computes every column, of which
    /// [`rows_out`] keeps every `stride`-th.
    fn new(h: &AxisTaps, w: &AxisTaps, lanes: usize) -> Option<Geometry> {
        let (h, w) = (Axis::new(h)?, Axis::new(w)?);
        let (wo, step) = (w.output, w.stride);
        let w = if step > 1 && w.input * w.offset.len() <= DENSE_MAX {
            w.dense()
        } else {
            w
        };
        let step = if w.stride == 1 { step } else { 1 };
        let (hq, wp) = (h.phase_len(), w.phase_len());
        let runs: Vec<Run> = (0..w.stride)
            .map(|pw| {
                // Phase column j holds padded column j·sw + pw.
                let shift = pw as i64 + w.base;
                let clamp = |j: i64| j.clamp(0, wp as i64) as usize;
                let lo = clamp(ceil_div(-shift, w.stride as i64));
                let hi = clamp(ceil_div(w.input as i64 - shift, w.stride as i64)).max(lo);
                Run { shift, lo, hi }
            })
            .collect();
        // Unit-stride rows share their padding: a row's right padding runs
        // on into the next row's left padding (zeros both), so the pitch
        // must only keep each row's data (up to `hi`) clear of the next
        // row and its right padding inside the next row's left padding.
        // The grid then computes fewer dropped columns: a 7-wide plane
        // under a 5×5 kernel takes a pitch of 9 instead of 11, 4 vectors
        // of 16 instead of 5.
        let wq = match &runs[..] {
            [r] => r.hi.max(wp - r.lo),
            _ => wp,
        };
        let grid = (h.output * wq).div_ceil(lanes) * lanes;
        let shift = |a: &Axis, o: usize| (o % a.stride, o / a.stride);
        let max_shift = {
            let (_, sh) = shift(&h, h.offset.iter().max().copied().unwrap_or(0));
            let (_, sw) = shift(&w, w.offset.iter().max().copied().unwrap_or(0));
            sh * wq + sw
        };
        // The spill of a phase's last row, and the right padding that its
        // taps read past the pitch, must stay out of the next phase, whose
        // first rows are written before it.
        let phase = (grid + max_shift).max(hq * wq + wp + lanes);
        let mut taps = Vec::with_capacity(h.offset.len() * w.offset.len());
        for &oh in &h.offset {
            let (ph, sh) = shift(&h, oh);
            for &ow in &w.offset {
                let (pw, sw) = shift(&w, ow);
                taps.push((ph * w.stride + pw) * phase + sh * wq + sw);
            }
        }
        let mut geo = Geometry {
            hq,
            wq,
            phase,
            grid,
            taps,
            runs,
            copies: Vec::new(),
            h,
            w,
            wo,
            step,
        };
        geo.copies = geo.plan_copies();
        Some(geo)
    }

    fn buffer_len(&self, lanes: usize) -> usize {
        self.h.stride * self.w.stride * self.phase + lanes
    }

    /// The copies that fill a buffer with the padded, phase-split copy of
    /// one input plane, in the order they must run (see [`Geometry::fill`]).
    /// Input rows are read in order, each once, its column phases written
    /// one after the other: filled phase by phase, a stride-2 plane would be
    /// read from memory once per row phase. Padding rows and columns are
    /// not in the plan: they are zero in a new buffer and stay zero.
    fn plan_copies(&self) -> Vec<RowCopy> {
        let (sh, sw, wq) = (self.h.stride, self.w.stride, self.wq);
        let mut copies = Vec::new();
        for r in 0..self.hq {
            for ph in 0..sh {
                let Some(ih) = self.h.input_at(r * sh + ph) else {
                    continue;
                };
                for (pw, run) in self.runs.iter().enumerate() {
                    if run.lo < run.hi {
                        let first = (run.lo as i64 * sw as i64 + run.shift) as usize;
                        copies.push(RowCopy {
                            src: ih * self.w.input + first,
                            dst: (ph * sw + pw) * self.phase + r * wq + run.lo,
                            run: pw,
                        });
                    }
                }
            }
        }
        copies
    }

    /// Copies the plane that `x` starts with (the rest of the input may
    /// follow it) into `buf`, a buffer this geometry's copies have filled
    /// before or a zeroed one. A unit-stride row is copied in whole vectors
    /// with the lanes past its end zeroed, so a short row costs no memcpy
    /// call: the last vector may spill zeros over the padding after it and
    /// the start of the next row of its phase, which is written after it
    /// (a phase's last row spills into the phase's slack, or into the
    /// `lanes` elements [`Geometry::buffer_len`] keeps past the last phase).
    /// Every element a spill reaches is padding, which is zero, or is
    /// written again after it. `tails` holds each column phase's
    /// last-vector mask (`first_n_mask` of its run's length modulo the
    /// lanes), made once per task: rten-simd builds a mask lane by lane.
    #[inline(always)]
    fn fill<I: Isa>(&self, isa: I, x: &[f32], buf: &mut [f32], tails: &[I::M32]) {
        let ops = isa.f32();
        let lanes = ops.len();
        let sw = self.w.stride;
        for c in &self.copies {
            let run = &self.runs[c.run];
            let n = run.hi - run.lo;
            let (src, row) = (&x[c.src..], &mut buf[c.dst..]);
            if sw > 1 {
                crate::kernels::stride::take_every(src, sw, &mut row[..n]);
                continue;
            }
            let mut i = 0;
            while i + lanes <= n {
                ops.store(ops.load(&src[i..i + lanes]), &mut row[i..i + lanes]);
                i += lanes;
            }
            if i < n {
                let v = match src.get(i..i + lanes) {
                    Some(s) => ops.select(ops.load(s), ops.zero(), tails[c.run]),
                    None => ops.load_pad(&src[i..n]).0,
                };
                ops.store(v, &mut row[i..i + lanes]);
            }
        }
    }
}

/// One row of a column phase to fill from the input: the elements of
/// column phase `run` from plane offset `src` on, to buffer offset `dst`.
struct RowCopy {
    src: usize,
    dst: usize,
    run: usize,
}

/// The depthwise convolution of one image (see
/// [`super::DepthwiseElem::depthwise_2d`]); false, with nothing written,
/// when the CPU lacks the instructions or the window is not one this
/// kernel lays out.
pub(super) fn depthwise_2d(d: Depthwise<'_, f32>, out: &mut [f32]) -> bool {
    fastmath::available() && Image { d, out }.dispatch()
}

struct Image<'a> {
    d: Depthwise<'a, f32>,
    out: &'a mut [f32],
}

impl SimdOp for Image<'_> {
    type Output = bool;

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) -> bool {
        let lanes = isa.f32().len();
        let d = self.d;
        let Some(geo) = Geometry::new(d.h, d.w, lanes) else {
            return false;
        };
        let (ip, op) = (geo.h.input * geo.w.input, geo.h.output * geo.wo);
        let k = geo.taps.len();
        if op == 0 || k == 0 {
            d.wts.fill_bias(self.out, op);
            return true;
        }
        // Channels in runs, one buffer per run.
        let channels = self.out.len() / op;
        let run = if parallel(self.out.len(), k) {
            channels.div_ceil(4 * rayon::current_num_threads()).max(1)
        } else {
            channels
        };
        let task = |(t, o): (usize, &mut [f32])| {
            Channels {
                geo: &geo,
                d,
                first: t * run,
                out: o,
                ip,
                op,
                k,
            }
            .dispatch()
        };
        if run < channels {
            self.out.par_chunks_mut(run * op).enumerate().for_each(task);
        } else {
            task((0, self.out));
        }
        true
    }
}

/// Output channels `first..` of one image, into `out`.
struct Channels<'a> {
    geo: &'a Geometry,
    d: Depthwise<'a, f32>,
    first: usize,
    out: &'a mut [f32],
    ip: usize,
    op: usize,
    k: usize,
}

impl SimdOp for Channels<'_> {
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) {
        let (geo, d) = (self.geo, self.d);
        let ops = isa.f32();
        let mut buf = vec![0f32; geo.buffer_len(ops.len())];
        let tails: Vec<I::M32> = geo
            .runs
            .iter()
            .map(|r| ops.first_n_mask((r.hi - r.lo) % ops.len()))
            .collect();
        let mut grid = vec![0f32; geo.grid];
        let mut filled = None;
        for (i, o) in self.out.chunks_exact_mut(self.op).enumerate() {
            let m = self.first + i;
            let c = m / d.per;
            if filled != Some(c) {
                geo.fill(isa, &d.x[c * self.ip..], &mut buf, &tails);
                filled = Some(c);
            }
            let wt = &d.wts.taps[m * self.k..(m + 1) * self.k];
            plane(isa, geo, &buf, wt, d.wts.bias(m), &mut grid);
            rows_out(isa, geo, &grid, o);
        }
    }
}

/// The grid's rows, without their extra columns, into output plane `o`:
/// whole vectors while the last one stays inside `o` (it may spill into
/// the next row, written after it), `copy_from_slice` for the rest.
#[inline(always)]
fn rows_out<I: Isa>(isa: I, geo: &Geometry, grid: &[f32], o: &mut [f32]) {
    let (wq, wo) = (geo.wq, geo.wo);
    if geo.step > 1 {
        for (r, row) in o.chunks_exact_mut(wo).enumerate() {
            crate::kernels::stride::take_every(&grid[r * wq..], geo.step, row);
        }
        return;
    }
    if wq == wo {
        o.copy_from_slice(&grid[..o.len()]);
        return;
    }
    let ops = isa.f32();
    let lanes = ops.len();
    let span = wo.div_ceil(lanes) * lanes;
    for r in 0..geo.h.output {
        let (d, s) = (r * wo, r * wq);
        if d + span <= o.len() && s + span <= grid.len() {
            let mut i = 0;
            while i < span {
                ops.store(
                    ops.load(&grid[s + i..s + i + lanes]),
                    &mut o[d + i..d + i + lanes],
                );
                i += lanes;
            }
        } else {
            o[d..d + wo].copy_from_slice(&grid[s..s + wo]);
        }
    }
}

/// One output plane's flat grid from its channel's phase buffer, taps
/// `wt` and bias `b`: [`VECS`] vectors at a time, then the rest as one
/// group (a 7×7 plane's grid is 5 vectors of 16), so no vector's sum waits
/// alone on its own chain of fused multiply-adds.
#[inline(always)]
fn plane<I: Isa>(isa: I, geo: &Geometry, buf: &[f32], wt: &[f32], b: f32, grid: &mut [f32]) {
    let lanes = isa.f32().len();
    let mut at = 0;
    while at + VECS * lanes <= geo.grid {
        vectors::<I, VECS>(isa, geo, buf, (wt, b), at, &mut grid[at..at + VECS * lanes]);
        at += VECS * lanes;
    }
    let rest = &mut grid[at..geo.grid];
    // Up to VECS - 1 vectors remain: one arm for each count.
    const _: () = assert!(VECS == 8);
    match rest.len() / lanes {
        0 => {}
        1 => vectors::<I, 1>(isa, geo, buf, (wt, b), at, rest),
        2 => vectors::<I, 2>(isa, geo, buf, (wt, b), at, rest),
        3 => vectors::<I, 3>(isa, geo, buf, (wt, b), at, rest),
        4 => vectors::<I, 4>(isa, geo, buf, (wt, b), at, rest),
        5 => vectors::<I, 5>(isa, geo, buf, (wt, b), at, rest),
        6 => vectors::<I, 6>(isa, geo, buf, (wt, b), at, rest),
        _ => vectors::<I, 7>(isa, geo, buf, (wt, b), at, rest),
    }
}

/// `V` vectors of the grid from element `at` on (`out`).
#[inline(always)]
fn vectors<I: Isa, const V: usize>(
    isa: I,
    geo: &Geometry,
    buf: &[f32],
    (wt, b): (&[f32], f32),
    at: usize,
    out: &mut [f32],
) {
    let ops = isa.f32();
    let lanes = ops.len();
    let mut acc = [ops.splat(b); V];
    for (&t, &c) in geo.taps.iter().zip(wt) {
        let wv = ops.splat(c);
        let xs = ops.load_many::<V>(&buf[t + at..]);
        for (a, x) in acc.iter_mut().zip(xs) {
            *a = ops.mul_add(x, wv, *a);
        }
    }
    for (a, dst) in acc.into_iter().zip(out.chunks_exact_mut(lanes)) {
        ops.store(a, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::depthwise::tests::{check_against_definition, Case};

    /// The SIMD kernel against the definition in f64, over strides,
    /// dilations, paddings, kernel sizes and a channel multiplier, at
    /// widths around the vector length, with a bias, on channel counts
    /// below and above a vector's lanes.
    #[test]
    fn the_simd_kernel_matches_the_definition() {
        let cases = [
            Case::square(14, 5, 1, 1, (2, 2)),
            Case::square(17, 3, 2, 1, (1, 1)),
            Case::square(9, 3, 3, 2, (2, 2)).per(2),
            Case::square(33, 7, 1, 1, (3, 3)),
            Case::square(5, 5, 2, 1, (0, 0)),
            Case::square(1, 1, 1, 1, (0, 0)).per(3),
            Case::square(20, 4, 2, 1, (1, 1)),
            Case::square(6, 3, 1, 9, (18, 18)),
            Case::square(40, 3, 2, 1, (1, 1)),
            Case::square(70, 3, 2, 1, (1, 1)),
            Case::square(61, 5, 2, 1, (2, 2)),
            // Column phases without padding: a phase's first row holds
            // input, where the last row of the phase before it could spill.
            Case::square(70, 3, 2, 1, (0, 0)),
            Case::square(66, 3, 2, 1, (0, 0)),
            Case::square(67, 5, 2, 1, (0, 0)),
            // Unit-stride rows sharing their padding, wider on either side,
            // with no padding on one side, and wider than the kernel.
            Case::square(7, 5, 1, 1, (2, 1)),
            Case::square(7, 5, 1, 1, (1, 3)),
            Case::square(14, 5, 1, 1, (0, 2)),
            Case::square(7, 3, 1, 1, (4, 0)),
            Case::square(9, 3, 1, 2, (5, 2)),
            Case::square(14, 5, 2, 1, (3, 1)),
        ]
        .map(Case::wider);
        check_against_definition(depthwise_2d, &cases, true);
    }
}

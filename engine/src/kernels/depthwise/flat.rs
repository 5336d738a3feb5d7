//! The f32 depthwise kernel for small stride-1 planes whose output is as
//! wide as their input ("same" padding across: EfficientNet's and
//! MobileNet's 7×7 and 14×14 planes).
//!
//! The grid is the output plane itself: output `(oh, ow)` is element
//! `oh · w + ow`, and a tap reads the input at that index shifted by a
//! constant, from a buffer holding the plane between zero rows. A read
//! past either end of an input row lands in the row before or after it,
//! so each vector's lanes whose column falls outside the input are zeroed
//! by a mask (one per kernel column and phase of the vector against the
//! row). Against [`super::simd`]'s padded grid, the buffer is filled with
//! one contiguous copy instead of a copy per row, the result vectors go
//! straight to the output instead of through a grid copied out row by
//! row, and no dropped padding columns are computed: single convs at
//! EfficientNet's shapes took 0.63x-0.95x of the time.

use rayon::prelude::*;
use rten_simd::ops::{BitOps, MaskOps, NumOps};
use rten_simd::{Isa, SimdOp};

use super::{parallel, AxisTaps, Depthwise};
use crate::kernels::fastmath;

/// Output vectors accumulated together.
const VECS: usize = 8;

/// Output planes up to this many elements take this kernel; larger ones
/// keep [`super::simd`]'s padded grid. On the flat kernel, against the
/// grid (one thread): 240×28×28 5×5 1.03x, 192×28×28 7×7 1.17x and
/// 144×56×56 3×3 1.1x of the time, 88×28×28 3×3 0.95x; one threshold
/// for every kernel size leaves the last gain out.
const FLAT_MAX: usize = 256;

/// Where each tap reads, for one plane (the flat counterpart of
/// [`super::simd`]'s geometry): the buffer is zeros before the plane
/// (enough for the taps left of and above output 0), the input plane,
/// then zeros to `len`.
struct Geometry {
    /// Input (= output) row length, and the output and input rows.
    w: usize,
    ho: usize,
    hi: usize,
    /// Buffer offset of each tap at output 0, column-major over the
    /// kernel (all the rows of kernel column 0, then column 1, ...), so
    /// the taps of one column share its masks.
    taps: Vec<usize>,
    /// Input column minus output column of each kernel column.
    cols: Vec<i64>,
    /// Buffer offset of the plane's first element, and the buffer length.
    data: usize,
    len: usize,
    /// Vectors after which the lanes' columns repeat: `w / gcd(w, lanes)`.
    period: usize,
}

impl Geometry {
    fn new(h: &AxisTaps, w: &AxisTaps, lanes: usize) -> Option<Geometry> {
        let fits = h.stride == 1 && w.stride == 1 && w.output == w.input && h.output * w.output <= FLAT_MAX;
        if !fits || h.first.is_empty() || w.first.is_empty() || w.input == 0 || h.output == 0 {
            return None;
        }
        let width = w.input as i64;
        let top = (-h.first.iter().min()?).max(0);
        let lead = (-w.first.iter().min()?).max(0);
        let mut taps = Vec::with_capacity(h.first.len() * w.first.len());
        for &c in &w.first {
            for &r in &h.first {
                taps.push(usize::try_from(lead + (r + top) * width + c).ok()?);
            }
        }
        let grid = (h.output * w.input).div_ceil(lanes) * lanes;
        let data = usize::try_from(lead + top * width).ok()?;
        let len = (taps.iter().max()? + grid).max(data + h.input * w.input + lanes);
        Some(Geometry {
            w: w.input,
            ho: h.output,
            hi: h.input,
            taps,
            cols: w.first.clone(),
            data,
            len,
            period: w.input / gcd(w.input, lanes),
        })
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The depthwise convolution of one image (see
/// [`super::DepthwiseElem::depthwise_2d`]); false, with nothing written,
/// when the CPU lacks the instructions or the window is not a small
/// stride-1 one as wide as its input.
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
        let Some(geo) = Geometry::new(self.d.h, self.d.w, isa.f32().len()) else {
            return false;
        };
        let op = geo.ho * geo.w;
        let channels = self.out.len() / op;
        let run = if parallel(self.out.len(), geo.taps.len()) {
            channels.div_ceil(4 * rayon::current_num_threads()).max(1)
        } else {
            channels
        };
        let d = self.d;
        let task = |(t, o): (usize, &mut [f32])| {
            Channels {
                geo: &geo,
                d,
                first: t * run,
                out: o,
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
}

impl SimdOp for Channels<'_> {
    type Output = ();

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) {
        let Channels { geo, d, first, out } = self;
        let ops = isa.f32();
        let lanes = ops.len();
        let masks = column_masks(isa, geo);
        let (ip, op, k) = (geo.hi * geo.w, geo.ho * geo.w, geo.taps.len());
        let mut buf = vec![0f32; geo.len];
        let mut tmp = vec![0f32; VECS * lanes];
        let mut filled = None;
        let total = out.len();
        for i in 0..total / op {
            let m = first + i;
            let c = m / d.per;
            if filled != Some(c) {
                let (x, dst) = (&d.x[c * ip..(c + 1) * ip], &mut buf[geo.data..]);
                let mut j = 0;
                while j + lanes <= ip {
                    ops.store(ops.load(&x[j..j + lanes]), &mut dst[j..j + lanes]);
                    j += lanes;
                }
                if j < ip {
                    // Zeros past the plane land on zero rows or slack.
                    ops.store(ops.load_pad(&x[j..]).0, &mut dst[j..j + lanes]);
                }
                filled = Some(c);
            }
            let wt = Taps {
                w: &d.wts.taps[m * k..(m + 1) * k],
                b: d.wts.bias(m),
            };
            let base = i * op;
            let mut at = 0;
            while at < op {
                let n = (op - at).div_ceil(lanes).min(VECS);
                // Whole vectors may spill into the next plane, which is
                // written after; the task's last plane ends through `tmp`.
                let direct = base + at + n * lanes <= total;
                let dst = if direct {
                    &mut out[base + at..base + at + n * lanes]
                } else {
                    &mut tmp[..n * lanes]
                };
                // Up to VECS vectors: one arm for each count.
                const _: () = assert!(VECS == 8);
                match n {
                    8 => vectors::<I, 8>(isa, geo, &buf, &masks, wt, at, dst),
                    7 => vectors::<I, 7>(isa, geo, &buf, &masks, wt, at, dst),
                    6 => vectors::<I, 6>(isa, geo, &buf, &masks, wt, at, dst),
                    5 => vectors::<I, 5>(isa, geo, &buf, &masks, wt, at, dst),
                    4 => vectors::<I, 4>(isa, geo, &buf, &masks, wt, at, dst),
                    3 => vectors::<I, 3>(isa, geo, &buf, &masks, wt, at, dst),
                    2 => vectors::<I, 2>(isa, geo, &buf, &masks, wt, at, dst),
                    _ => vectors::<I, 1>(isa, geo, &buf, &masks, wt, at, dst),
                }
                if !direct {
                    let e = (op - at).min(n * lanes);
                    out[base + at..base + at + e].copy_from_slice(&tmp[..e]);
                }
                at += n * lanes;
            }
        }
    }
}

/// One output channel's taps (in the kernel's row-major order) and bias.
#[derive(Clone, Copy)]
struct Taps<'a> {
    w: &'a [f32],
    b: f32,
}

/// Per phase `p` of a vector against the row (`p = vector index mod
/// period`) and kernel column `j`, at `p · cols + j`: the lanes whose
/// input column is inside the row.
#[inline(always)]
fn column_masks<I: Isa>(isa: I, geo: &Geometry) -> Vec<I::M32> {
    let ops = isa.f32();
    let lanes = ops.len();
    let mut column = vec![0f32; lanes];
    let (zero, width) = (ops.zero(), ops.splat(geo.w as f32));
    let mut masks = Vec::with_capacity(geo.period * geo.cols.len());
    for p in 0..geo.period {
        for (l, c) in column.iter_mut().enumerate() {
            *c = ((p * lanes + l) % geo.w) as f32;
        }
        let at = ops.load(&column);
        for &c in &geo.cols {
            let input = ops.add(at, ops.splat(c as f32));
            masks.push(isa.m32().and(ops.ge(input, zero), ops.lt(input, width)));
        }
    }
    masks
}

/// `V` vectors of one output plane from element `at` on, into `out`: the
/// bias, then the taps kernel column by kernel column.
#[inline(always)]
fn vectors<I: Isa, const V: usize>(
    isa: I,
    geo: &Geometry,
    buf: &[f32],
    masks: &[I::M32],
    wt: Taps<'_>,
    at: usize,
    out: &mut [f32],
) {
    let ops = isa.f32();
    let lanes = ops.len();
    let (kw, kh) = (geo.cols.len(), geo.taps.len() / geo.cols.len());
    let v0 = at / lanes;
    let phase: [usize; V] = std::array::from_fn(|v| ((v0 + v) % geo.period) * kw);
    let mut acc = [ops.splat(wt.b); V];
    for j in 0..kw {
        let inside: [I::M32; V] = std::array::from_fn(|v| masks[phase[v] + j]);
        for r in 0..kh {
            let c = ops.splat(wt.w[r * kw + j]);
            let xs = ops.load_many::<V>(&buf[geo.taps[j * kh + r] + at..]);
            for ((a, x), m) in acc.iter_mut().zip(xs).zip(inside) {
                *a = ops.mul_add(ops.select(x, ops.zero(), m), c, *a);
            }
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

    /// The flat kernel against the definition on the planes it takes:
    /// widths around the vector length, asymmetric and one-sided padding,
    /// dilation, uneven heights and a channel multiplier.
    #[test]
    fn the_flat_kernel_matches_the_definition() {
        let cases = [
            Case::square(7, 5, 1, 1, (2, 2)),
            Case::square(7, 3, 1, 1, (1, 1)),
            Case::square(14, 5, 1, 1, (2, 2)),
            Case::square(14, 3, 1, 1, (1, 1)),
            Case::square(16, 3, 1, 1, (1, 1)),
            Case::square(9, 5, 1, 1, (1, 3)),
            Case::square(9, 5, 1, 1, (4, 0)),
            Case::square(11, 3, 1, 2, (2, 2)),
            Case::square(1, 1, 1, 1, (0, 0)).per(3),
            Case::square(6, 7, 1, 1, (3, 3)),
            Case::rect((5, 3, (0, 2)), (12, 3, (1, 1))),
            Case::rect((3, 3, (2, 0)), (17, 3, (1, 1))),
            Case::rect((6, 5, (2, 2)), (10, 3, (1, 1))),
            Case::rect((9, 3, (1, 1)), (8, 5, (2, 2))),
        ];
        check_against_definition(depthwise_2d, &cases, true);
    }

    /// Strided windows, outputs narrower or wider than the input and
    /// planes past [`FLAT_MAX`] are left to the other kernels.
    #[test]
    fn the_flat_kernel_declines_other_windows() {
        let cases = [
            Case::square(14, 3, 2, 1, (1, 1)),
            Case::square(14, 3, 1, 1, (0, 0)),
            Case::square(14, 3, 1, 1, (2, 2)),
            Case::square(28, 3, 1, 1, (1, 1)),
        ];
        check_against_definition(depthwise_2d, &cases, false);
    }
}

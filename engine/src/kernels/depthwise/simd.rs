//! The f32 depthwise kernel on the CPU's widest SIMD (AVX-512, or AVX2 with
//! FMA), chosen at run time through `rten-simd` as `fastmath` does.
//!
//! Each input plane is first copied into a zero-padded buffer split into
//! `stride` phases per row (phase `r` holds the padded row's elements
//! `r, r + stride, …`), so that every tap of every output row is one
//! contiguous, unconditional vector load: a strided or padded window
//! becomes plain shifted rows. Each output vector then accumulates its
//! taps in tap order with fused multiply-adds, four output rows at a time
//! so the adds do not wait on one another. Taps over the zero padding add
//! `w · 0`, as an im2col GEMM does.

use rayon::prelude::*;
use rten_simd::ops::{BitOps, NumOps};
use rten_simd::{Isa, SimdOp};

use super::{parallel, AxisTaps};
use crate::kernels::fastmath;

/// Output rows accumulated together.
const ROWS: usize = 4;

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

    /// The padded length every tap of every output reads within.
    fn padded(&self) -> usize {
        (self.output - 1) * self.stride + self.offset.iter().max().copied().unwrap_or(0) + 1
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

/// The buffer layout of one channel for vectors of `lanes` f32.
struct Geometry {
    h: Axis,
    w: Axis,
    /// Padded rows.
    rows: usize,
    /// Elements per phase row: the output row rounded up to whole vectors,
    /// plus the largest shift.
    width: usize,
    /// (phase, shift) of each horizontal tap.
    taps: Vec<(usize, usize)>,
}

impl Geometry {
    fn new(h: &AxisTaps, w: &AxisTaps, lanes: usize) -> Option<Geometry> {
        let (h, w) = (Axis::new(h)?, Axis::new(w)?);
        let taps: Vec<(usize, usize)> = w.offset.iter().map(|&o| (o % w.stride, o / w.stride)).collect();
        let shift = taps.iter().map(|t| t.1).max().unwrap_or(0);
        let width = w.output.div_ceil(lanes) * lanes + shift;
        Some(Geometry {
            rows: h.padded(),
            width,
            taps,
            h,
            w,
        })
    }

    fn buffer_len(&self) -> usize {
        self.rows * self.w.stride * self.width
    }

    /// Fills `buf` with the padded, phase-split copy of plane `x`.
    fn fill(&self, x: &[f32], buf: &mut [f32]) {
        let s = self.w.stride;
        for (p, row) in buf.chunks_exact_mut(s * self.width).enumerate() {
            let Some(ih) = self.h.input_at(p) else {
                row.fill(0.0);
                continue;
            };
            let src = &x[ih * self.w.input..(ih + 1) * self.w.input];
            for (r, phase) in row.chunks_exact_mut(self.width).enumerate() {
                // Phase element j holds input j·s + r + base: inside the
                // row for j in lo..hi.
                let shift = r as i64 + self.w.base;
                let clamp = |j: i64| j.clamp(0, phase.len() as i64) as usize;
                let lo = clamp(ceil_div(-shift, s as i64));
                let hi = clamp(ceil_div(src.len() as i64 - shift, s as i64)).max(lo);
                phase[..lo].fill(0.0);
                phase[hi..].fill(0.0);
                if lo < hi {
                    let first = (lo as i64 * s as i64 + shift) as usize;
                    if s == 1 {
                        // A plain copy: the element loop below left a
                        // stride-1 3×3 plane mostly copying.
                        phase[lo..hi].copy_from_slice(&src[first..first + (hi - lo)]);
                    } else {
                        for (v, &e) in phase[lo..hi].iter_mut().zip(src[first..].iter().step_by(s)) {
                            *v = e;
                        }
                    }
                }
            }
        }
    }
}

/// The depthwise convolution of one image (see
/// [`super::DepthwiseElem::depthwise_2d`]); false, with nothing written,
/// when the CPU lacks the instructions or the window is not one this
/// kernel lays out.
pub(super) fn depthwise_2d(
    x: &[f32],
    wts: &[f32],
    per: usize,
    h: &AxisTaps,
    w: &AxisTaps,
    out: &mut [f32],
) -> bool {
    if !fastmath::available() {
        return false;
    }
    Image {
        x,
        wts,
        per,
        h,
        w,
        out,
    }
    .dispatch()
}

struct Image<'a> {
    x: &'a [f32],
    wts: &'a [f32],
    per: usize,
    h: &'a AxisTaps,
    w: &'a AxisTaps,
    out: &'a mut [f32],
}

impl SimdOp for Image<'_> {
    type Output = bool;

    #[inline(always)]
    fn eval<I: Isa>(self, isa: I) -> bool {
        let lanes = isa.f32().len();
        let Some(geo) = Geometry::new(self.h, self.w, lanes) else {
            return false;
        };
        let (ip, op) = (geo.h.input * geo.w.input, geo.h.output * geo.w.output);
        let k = geo.h.offset.len() * geo.w.offset.len();
        if op == 0 || k == 0 {
            self.out.fill(0.0);
            return true;
        }
        let (x, wts, per) = (self.x, self.wts, self.per);
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
                x,
                wts,
                per,
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
    x: &'a [f32],
    wts: &'a [f32],
    per: usize,
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
        let geo = self.geo;
        let mut buf = vec![0f32; geo.buffer_len()];
        let mut filled = None;
        for (i, o) in self.out.chunks_exact_mut(self.op).enumerate() {
            let m = self.first + i;
            let c = m / self.per;
            if filled != Some(c) {
                geo.fill(&self.x[c * self.ip..(c + 1) * self.ip], &mut buf);
                filled = Some(c);
            }
            plane(isa, geo, &buf, &self.wts[m * self.k..(m + 1) * self.k], o);
        }
    }
}

/// One output plane from its channel's phase buffer and taps `wt`.
#[inline(always)]
fn plane<I: Isa>(isa: I, geo: &Geometry, buf: &[f32], wt: &[f32], out: &mut [f32]) {
    let (oh_n, ow_n) = (geo.h.output, geo.w.output);
    let mut oh = 0;
    while oh + ROWS <= oh_n {
        rows::<I, ROWS>(isa, geo, buf, wt, oh, &mut out[oh * ow_n..(oh + ROWS) * ow_n]);
        oh += ROWS;
    }
    while oh < oh_n {
        rows::<I, 1>(isa, geo, buf, wt, oh, &mut out[oh * ow_n..(oh + 1) * ow_n]);
        oh += 1;
    }
}

/// Output rows `oh..oh + R` (`out`), vector by vector along the row.
#[inline(always)]
fn rows<I: Isa, const R: usize>(isa: I, geo: &Geometry, buf: &[f32], wt: &[f32], oh: usize, out: &mut [f32]) {
    let ops = isa.f32();
    let lanes = ops.len();
    let (ow_n, kw_n) = (geo.w.output, geo.taps.len());
    let phase_row = geo.w.stride * geo.width;
    let mut c0 = 0;
    while c0 < ow_n {
        let mut acc = [ops.zero(); R];
        for (kh, &dh) in geo.h.offset.iter().enumerate() {
            for (kw, &(phase, shift)) in geo.taps.iter().enumerate() {
                let wv = ops.splat(wt[kh * kw_n + kw]);
                for (r, a) in acc.iter_mut().enumerate() {
                    let p = (oh + r) * geo.h.stride + dh;
                    let at = p * phase_row + phase * geo.width + shift + c0;
                    *a = ops.mul_add(ops.load(&buf[at..at + lanes]), wv, *a);
                }
            }
        }
        let n = lanes.min(ow_n - c0);
        for (r, a) in acc.into_iter().enumerate() {
            let dst = &mut out[r * ow_n + c0..r * ow_n + c0 + n];
            if n == lanes {
                ops.store(a, dst);
            } else {
                let mut tmp = [0f32; 16];
                ops.store(a, &mut tmp[..lanes]);
                dst.copy_from_slice(&tmp[..n]);
            }
        }
        c0 += lanes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taps(input: usize, kernel: usize, stride: usize, dilation: usize, pad: usize) -> AxisTaps {
        let output = (input + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
        let first: Vec<i64> = (0..kernel).map(|k| (k * dilation) as i64 - pad as i64).collect();
        let inside = first
            .iter()
            .map(|&f| {
                let lo = (0..output)
                    .find(|&o| (o * stride) as i64 + f >= 0)
                    .unwrap_or(output);
                let hi = (0..output)
                    .rev()
                    .find(|&o| (o * stride) as i64 + f < input as i64)
                    .map_or(lo, |o| o + 1)
                    .max(lo);
                (lo, hi)
            })
            .collect();
        AxisTaps {
            input,
            output,
            stride,
            inside,
            first,
        }
    }

    /// The SIMD kernel against the definition in f64, over strides,
    /// dilations, paddings, kernel sizes and a channel multiplier, at
    /// widths around the vector length.
    #[test]
    fn the_simd_kernel_matches_the_definition() {
        if !fastmath::available() {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        }
        for &(hw, k, s, d, p, per) in &[
            (14, 5, 1, 1, 2, 1),
            (17, 3, 2, 1, 1, 1),
            (9, 3, 3, 2, 2, 2),
            (33, 7, 1, 1, 3, 1),
            (5, 5, 2, 1, 0, 1),
            (1, 1, 1, 1, 0, 3),
            (20, 4, 2, 1, 1, 1),
        ] {
            let (hx, wx) = (hw, hw + 3);
            let (ht, wt) = (taps(hx, k, s, d, p), taps(wx, k, s, d, p));
            let (c, m) = (3, 3 * per);
            let x: Vec<f32> = (0..c * hx * wx)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 16.0)
                .collect();
            let w: Vec<f32> = (0..m * k * k)
                .map(|i| ((i * 13 % 29) as f32 - 14.0) / 8.0)
                .collect();
            let mut got = vec![f32::NAN; m * ht.output * wt.output];
            assert!(depthwise_2d(&x, &w, per, &ht, &wt, &mut got));
            for mo in 0..m {
                for oh in 0..ht.output {
                    for ow in 0..wt.output {
                        let mut want = 0.0f64;
                        for kh in 0..k {
                            for kw in 0..k {
                                let ih = (oh * s) as i64 + ht.first[kh];
                                let iw = (ow * s) as i64 + wt.first[kw];
                                if (0..hx as i64).contains(&ih) && (0..wx as i64).contains(&iw) {
                                    let xv = x[(mo / per) * hx * wx + ih as usize * wx + iw as usize];
                                    want += xv as f64 * w[mo * k * k + kh * k + kw] as f64;
                                }
                            }
                        }
                        let g = got[(mo * ht.output + oh) * wt.output + ow] as f64;
                        assert!(
                            (g - want).abs() <= 1e-5 * (1.0 + want.abs()),
                            "{hw} k{k} s{s} d{d} p{p}: [{mo},{oh},{ow}] {g} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

//! Depthwise 2-D convolution (each output channel reads one input channel:
//! MobileNet's and EfficientNet's 3×3 and 5×5, ConvNeXt's 7×7), computed
//! directly instead of as one tiny GEMM per channel over an im2col copy:
//! for each kernel tap, the run of outputs whose input is inside the plane
//! gets `w[tap] · input` added, a contiguous multiply-add over a row when
//! the stride is 1. Channels split across the rayon pool when the work is
//! large enough. Each output is the sum of its taps in tap order (the
//! GEMM's sum, in another order of roundings).
//!
//! f32 on CPUs with AVX2 and FMA (or AVX-512) takes [`simd`] instead: short
//! runs (a 14-wide row, a 5×5 kernel) left the tap-by-tap loop at a few
//! GFLOP/s, mostly loop overhead.

use rayon::prelude::*;

use crate::dtype::Float;
use crate::parallel::intra_op;

mod simd;

/// Multiply-adds from which the channels split across the pool: a
/// depthwise plane is cheap, so a quarter of a millisecond of work is
/// already worth a fork-join.
const PARALLEL_TAPS: usize = 1 << 18;

/// A depthwise conv's taps (`[M, kh·kw]`, row-major) and optional bias
/// (`[M]`).
#[derive(Clone, Copy, Debug)]
pub struct Weights<'a, T> {
    pub taps: &'a [T],
    pub bias: Option<&'a [T]>,
}

impl<T: Float> Weights<'_, T> {
    /// Output channel `m`'s bias, 0 without one.
    fn bias(&self, m: usize) -> T {
        self.bias.map_or(T::zero(), |b| b[m])
    }

    /// Output planes of `op` elements with only their bias (no taps).
    fn fill_bias(&self, out: &mut [T], op: usize) {
        for (m, o) in out.chunks_mut(op.max(1)).enumerate() {
            o.fill(self.bias(m));
        }
    }
}

/// One spatial axis of the window, as the kernel walks it.
#[derive(Clone, Debug)]
pub struct AxisTaps {
    /// Input and output lengths.
    pub input: usize,
    pub output: usize,
    pub stride: usize,
    /// Per kernel tap: the outputs `lo..hi` whose input is inside the
    /// axis, and the input coordinate output 0 would read (negative in
    /// the padding).
    pub inside: Vec<(usize, usize)>,
    pub first: Vec<i64>,
}

/// One output plane: `out = b + Σ_taps w[tap] · x shifted`, over one input
/// plane `x` (`h.input` rows of `w.input`) and the taps `wt` (row-major).
fn plane<T: Float>(x: &[T], wt: &[T], b: T, h: &AxisTaps, w: &AxisTaps, out: &mut [T]) {
    out.fill(b);
    let kw_n = w.inside.len();
    for (kh, &(oh_lo, oh_hi)) in h.inside.iter().enumerate() {
        for (kw, &(ow_lo, ow_hi)) in w.inside.iter().enumerate() {
            let c = wt[kh * kw_n + kw];
            if ow_hi <= ow_lo {
                continue;
            }
            let run = ow_hi - ow_lo;
            for oh in oh_lo..oh_hi {
                let ih = (oh * h.stride) as i64 + h.first[kh];
                let iw = (ow_lo * w.stride) as i64 + w.first[kw];
                let src = &x[ih as usize * w.input + iw as usize..(ih as usize + 1) * w.input];
                let dst = &mut out[oh * w.output + ow_lo..oh * w.output + ow_hi];
                if w.stride == 1 {
                    for (o, &v) in dst.iter_mut().zip(&src[..run]) {
                        *o += c * v;
                    }
                } else {
                    for (j, o) in dst.iter_mut().enumerate() {
                        *o += c * src[j * w.stride];
                    }
                }
            }
        }
    }
}

/// One image's depthwise convolution, all but its output: `x` holds its
/// `C` input planes, `wts` the `[M, kh·kw]` taps and the optional `[M]`
/// bias; output channel `m` reads input channel `m / per` (`per = M / C`,
/// the channel multiplier), over the window of axes `h` and `w`.
#[derive(Clone, Copy, Debug)]
pub struct Depthwise<'a, T> {
    pub x: &'a [T],
    pub wts: Weights<'a, T>,
    pub per: usize,
    pub h: &'a AxisTaps,
    pub w: &'a AxisTaps,
}

/// Elements with a depthwise kernel: the tap-by-tap loop of [`plane`] for
/// every float, f32 overriding it with the run-time SIMD kernel.
pub trait DepthwiseElem: Float {
    /// `d` into `out`, its `M` output planes. The bias is each output's
    /// first term, so it costs no pass of its own.
    fn depthwise_2d(d: Depthwise<'_, Self>, out: &mut [Self]) {
        depthwise_taps(d, out);
    }
}

impl DepthwiseElem for f64 {}
impl DepthwiseElem for half::f16 {}
impl DepthwiseElem for half::bf16 {}
impl DepthwiseElem for f32 {
    fn depthwise_2d(d: Depthwise<'_, f32>, out: &mut [f32]) {
        if !simd::depthwise_2d(d, out) {
            depthwise_taps(d, out);
        }
    }
}

/// Whether the channels of a depthwise conv with `outputs` elements and `k`
/// taps per output split across the pool.
fn parallel(outputs: usize, k: usize) -> bool {
    outputs * k >= PARALLEL_TAPS && intra_op()
}

/// [`DepthwiseElem::depthwise_2d`] tap by tap, for any float.
fn depthwise_taps<T: Float>(d: Depthwise<'_, T>, out: &mut [T]) {
    let Depthwise { x, wts, per, h, w } = d;
    let (ip, op) = (h.input * w.input, h.output * w.output);
    let k = h.inside.len() * w.inside.len();
    if op == 0 || k == 0 {
        wts.fill_bias(out, op);
        return;
    }
    let one = |(m, o): (usize, &mut [T])| {
        let c = m / per;
        plane(
            &x[c * ip..(c + 1) * ip],
            &wts.taps[m * k..(m + 1) * k],
            wts.bias(m),
            h,
            w,
            o,
        );
    };
    if parallel(out.len(), k) {
        out.par_chunks_mut(op).enumerate().for_each(one);
    } else {
        out.chunks_mut(op).enumerate().for_each(one);
    }
}

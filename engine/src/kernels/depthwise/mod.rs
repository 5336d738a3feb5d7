//! Depthwise 2-D convolution (each output channel reads one input channel:
//! MobileNet's and EfficientNet's 3×3 and 5×5, ConvNeXt's 7×7), computed
//! directly instead of as one tiny GEMM per channel over an im2col copy:
//! for each kernel tap, the run of outputs whose input is inside the plane
//! gets `w[tap] · input` added, a contiguous multiply-add over a row when
//! the stride is 1. Channels split across the rayon pool when the work is
//! large enough. Each output is the sum of its taps in tap order (the
//! GEMM's sum, in another order of roundings).
//!
//! f32 on CPUs with AVX2 and FMA (or AVX-512) takes [`flat`] for small
//! stride-1 planes as wide as their input, and [`simd`] for the rest:
//! short runs (a 14-wide row, a 5×5 kernel) left the tap-by-tap loop at a
//! few GFLOP/s, mostly loop overhead. Those two sum each output's taps in
//! their own orders.
//!
//! A channels-last image (`[H, W, C]`) takes
//! [`DepthwiseElem::depthwise_channels_last`]: [`nhwc`] for f32 on those
//! CPUs, a vector per position's run of channels, else a scalar loop.

use rayon::prelude::*;

use crate::dtype::Float;
use crate::parallel::intra_op;

mod flat;
mod nhwc;
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

    /// `d` with its image channels-last: `d.x` is `[H, W, C]` (channel
    /// fastest) and `out` is `[Ho, Wo, M]`. Needs `d.per == 1` (M == C).
    fn depthwise_channels_last(d: Depthwise<'_, Self>, out: &mut [Self]) {
        channels_last_taps(d, out);
    }
}

impl DepthwiseElem for f64 {}
impl DepthwiseElem for half::f16 {}
impl DepthwiseElem for half::bf16 {}
impl DepthwiseElem for f32 {
    fn depthwise_2d(d: Depthwise<'_, f32>, out: &mut [f32]) {
        if !flat::depthwise_2d(d, out) && !simd::depthwise_2d(d, out) {
            depthwise_taps(d, out);
        }
    }

    fn depthwise_channels_last(d: Depthwise<'_, f32>, out: &mut [f32]) {
        if !nhwc::depthwise(d, out) {
            channels_last_taps(d, out);
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

/// [`DepthwiseElem::depthwise_channels_last`] tap by tap, for any float:
/// each output position starts at the channels' biases and adds its taps
/// inside the image in kernel row-major order, all channels at once.
fn channels_last_taps<T: Float>(d: Depthwise<'_, T>, out: &mut [T]) {
    let Depthwise { x, wts, per, h, w } = d;
    let positions = h.output * w.output;
    if positions == 0 || out.is_empty() {
        return;
    }
    let m = out.len() / positions;
    let c = m / per.max(1);
    let (kw, k) = (w.first.len(), h.first.len() * w.first.len());
    for (p, o) in out.chunks_exact_mut(m).enumerate() {
        let (oh, ow) = (p / w.output, p % w.output);
        for (mo, v) in o.iter_mut().enumerate() {
            *v = wts.bias(mo);
        }
        for (i, &fh) in h.first.iter().enumerate() {
            let ih = (oh * h.stride) as i64 + fh;
            if !(0..h.input as i64).contains(&ih) {
                continue;
            }
            for (j, &fw) in w.first.iter().enumerate() {
                let iw = (ow * w.stride) as i64 + fw;
                if !(0..w.input as i64).contains(&iw) {
                    continue;
                }
                let at = (ih as usize * w.input + iw as usize) * c;
                let src = &x[at..at + c];
                for (mo, v) in o.iter_mut().enumerate() {
                    *v += wts.taps[mo * k + i * kw + j] * src[mo / per];
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One axis of a test window: input length, kernel, stride, dilation
    /// and the padding before and after.
    #[derive(Clone, Copy, Debug)]
    pub struct Axis {
        input: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
        pad: (usize, usize),
    }

    impl Axis {
        fn taps(&self) -> AxisTaps {
            let Axis {
                input,
                kernel,
                stride,
                dilation,
                pad: (pl, pr),
            } = *self;
            let output = (input + pl + pr - dilation * (kernel - 1) - 1) / stride + 1;
            let first: Vec<i64> = (0..kernel).map(|k| (k * dilation) as i64 - pl as i64).collect();
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
    }

    /// A test window over both axes, and the channel multiplier.
    #[derive(Clone, Copy, Debug)]
    pub struct Case {
        h: Axis,
        w: Axis,
        per: usize,
    }

    impl Case {
        /// The same window over both axes of a square plane.
        pub fn square(
            input: usize,
            kernel: usize,
            stride: usize,
            dilation: usize,
            pad: (usize, usize),
        ) -> Case {
            let a = Axis {
                input,
                kernel,
                stride,
                dilation,
                pad,
            };
            Case { h: a, w: a, per: 1 }
        }

        /// Stride 1 and dilation 1, each axis its own `(input, kernel,
        /// padding)`.
        pub fn rect(h: (usize, usize, (usize, usize)), w: (usize, usize, (usize, usize))) -> Case {
            let axis = |(input, kernel, pad)| Axis {
                input,
                kernel,
                stride: 1,
                dilation: 1,
                pad,
            };
            Case {
                h: axis(h),
                w: axis(w),
                per: 1,
            }
        }

        /// The window `w` plus three input columns, its padding swapped.
        pub fn wider(self) -> Case {
            let w = Axis {
                input: self.w.input + 3,
                pad: (self.w.pad.1, self.w.pad.0),
                ..self.w
            };
            Case { w, ..self }
        }

        pub fn per(self, per: usize) -> Case {
            Case { per, ..self }
        }
    }

    /// A test conv's input (`[C, H, W]`), taps and bias on `c` input
    /// channels.
    fn inputs(case: &Case, c: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let m = c * case.per;
        let x: Vec<f32> = (0..c * case.h.input * case.w.input)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 16.0)
            .collect();
        let w: Vec<f32> = (0..m * case.h.kernel * case.w.kernel)
            .map(|i| ((i * 13 % 29) as f32 - 14.0) / 8.0)
            .collect();
        let b: Vec<f32> = (0..m).map(|i| i as f32 * 0.25 - 0.5).collect();
        (x, w, b)
    }

    /// Output `(mo, oh, ow)` of a test conv by the definition, in f64.
    fn definition(
        case: &Case,
        (x, w, b): (&[f32], &[f32], &[f32]),
        (mo, oh, ow): (usize, usize, usize),
    ) -> f64 {
        let (hx, wx, per) = (case.h.input, case.w.input, case.per);
        let (kh, kw) = (case.h.kernel, case.w.kernel);
        let (sh, sw, dh, dw) = (case.h.stride, case.w.stride, case.h.dilation, case.w.dilation);
        let mut want = b[mo] as f64;
        for i in 0..kh {
            for j in 0..kw {
                let ih = (oh * sh + i * dh) as i64 - case.h.pad.0 as i64;
                let iw = (ow * sw + j * dw) as i64 - case.w.pad.0 as i64;
                if (0..hx as i64).contains(&ih) && (0..wx as i64).contains(&iw) {
                    let xv = x[(mo / per) * hx * wx + ih as usize * wx + iw as usize];
                    want += xv as f64 * w[(mo * kh + i) * kw + j] as f64;
                }
            }
        }
        want
    }

    /// `kernel` against the definition in f64 on each case, with a bias,
    /// on 3, 19 and (planes of up to 256 outputs) 600 channels, so runs
    /// of channels split across the pool too. With `taken` false, the
    /// kernel must decline every case and leave the output alone. A CPU
    /// without the kernels' instructions skips the check with one line.
    pub fn check_against_definition(
        kernel: fn(Depthwise<'_, f32>, &mut [f32]) -> bool,
        cases: &[Case],
        taken: bool,
    ) {
        if taken && !crate::kernels::fastmath::available() {
            eprintln!("skipped: this CPU has no AVX2+FMA");
            return;
        }
        for (i, case) in cases.iter().enumerate() {
            let (ht, wt) = (case.h.taps(), case.w.taps());
            let c = match i % 3 {
                0 => 3,
                2 if ht.output * wt.output <= 256 => 600,
                _ => 19,
            };
            let m = c * case.per;
            let (x, w, b) = inputs(case, c);
            let mut got = vec![f32::NAN; m * ht.output * wt.output];
            let conv = Depthwise {
                x: &x,
                wts: Weights {
                    taps: &w,
                    bias: Some(&b),
                },
                per: case.per,
                h: &ht,
                w: &wt,
            };
            if !taken {
                assert!(!kernel(conv, &mut got), "{case:?} taken");
                assert!(got.iter().all(|v| v.is_nan()), "{case:?} written");
                continue;
            }
            assert!(kernel(conv, &mut got), "{case:?} declined");
            for mo in 0..m {
                for oh in 0..ht.output {
                    for ow in 0..wt.output {
                        let want = definition(case, (&x, &w, &b), (mo, oh, ow));
                        let g = got[(mo * ht.output + oh) * wt.output + ow] as f64;
                        assert!(
                            (g - want).abs() <= 1e-5 * (1.0 + want.abs()),
                            "{case:?}: [{mo},{oh},{ow}] {g} vs {want}"
                        );
                    }
                }
            }
        }
    }

    /// `kernel`'s output (`[Ho, Wo, M]`) for `case` on `c` channels, its
    /// input transposed to `[H, W, C]`. It must take the conv and write
    /// every output.
    pub fn channels_last_output(
        kernel: fn(Depthwise<'_, f32>, &mut [f32]) -> bool,
        case: Case,
        c: usize,
    ) -> Vec<f32> {
        let (ht, wt) = (case.h.taps(), case.w.taps());
        let (x, w, b) = inputs(&case, c);
        let plane = case.h.input * case.w.input;
        let mut nhwc = vec![0f32; x.len()];
        for (ch, p) in x.chunks_exact(plane.max(1)).enumerate() {
            for (at, &v) in p.iter().enumerate() {
                nhwc[at * c + ch] = v;
            }
        }
        let mut got = vec![f32::NAN; c * case.per * ht.output * wt.output];
        let conv = Depthwise {
            x: &nhwc,
            wts: Weights {
                taps: &w,
                bias: Some(&b),
            },
            per: case.per,
            h: &ht,
            w: &wt,
        };
        assert!(kernel(conv, &mut got), "{case:?} declined");
        got
    }

    /// `kernel` on channels-last images against the definition in f64,
    /// each case on its number of input channels, with a bias.
    pub fn check_channels_last_against_definition(
        kernel: fn(Depthwise<'_, f32>, &mut [f32]) -> bool,
        cases: &[(Case, usize)],
    ) {
        for &(case, c) in cases {
            let (ho, wo) = (case.h.taps().output, case.w.taps().output);
            let got = channels_last_output(kernel, case, c);
            let (x, w, b) = inputs(&case, c);
            let m = c * case.per;
            for oh in 0..ho {
                for ow in 0..wo {
                    for mo in 0..m {
                        let want = definition(&case, (&x, &w, &b), (mo, oh, ow));
                        let g = got[(oh * wo + ow) * m + mo] as f64;
                        assert!(
                            (g - want).abs() <= 1e-5 * (1.0 + want.abs()),
                            "{case:?} on {c}: [{oh},{ow},{mo}] {g} vs {want}"
                        );
                    }
                }
            }
        }
    }

    /// The scalar channels-last loop against the definition, with a
    /// channel multiplier too, and through the trait's default for f64.
    #[test]
    fn the_channels_last_loop_matches_the_definition() {
        let cases = [
            (Case::square(14, 3, 1, 1, (1, 1)), 3),
            (Case::square(7, 5, 2, 1, (2, 2)), 19),
            (Case::square(9, 3, 3, 2, (2, 2)).per(2), 5),
            (Case::rect((5, 3, (0, 2)), (12, 3, (1, 1))), 16),
            (Case::square(1, 1, 1, 1, (0, 0)).per(3), 4),
        ];
        check_channels_last_against_definition(
            |d, out| {
                channels_last_taps(d, out);
                true
            },
            &cases,
        );
        // f64 through the trait, against the f32 loop.
        let (case, c) = cases[1];
        let want = channels_last_output(
            |d, out| {
                channels_last_taps(d, out);
                true
            },
            case,
            c,
        );
        let (ht, wt) = (case.h.taps(), case.w.taps());
        let (x, w, b) = inputs(&case, c);
        let plane = case.h.input * case.w.input;
        let mut nhwc = vec![0f64; x.len()];
        for (ch, p) in x.chunks_exact(plane).enumerate() {
            for (at, &v) in p.iter().enumerate() {
                nhwc[at * c + ch] = v as f64;
            }
        }
        let (w, b): (Vec<f64>, Vec<f64>) = (
            w.iter().map(|&v| v as f64).collect(),
            b.iter().map(|&v| v as f64).collect(),
        );
        let mut got = vec![f64::NAN; want.len()];
        let conv = Depthwise {
            x: &nhwc,
            wts: Weights {
                taps: &w,
                bias: Some(&b),
            },
            per: 1,
            h: &ht,
            w: &wt,
        };
        f64::depthwise_channels_last(conv, &mut got);
        for (g, &v) in got.iter().zip(&want) {
            assert!((g - v as f64).abs() <= 1e-5 * (1.0 + g.abs()), "{g} vs {v}");
        }
    }
}

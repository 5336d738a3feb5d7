//! `conv_transpose(x, w[, b])`: N-d transposed convolution with ONNX's
//! semantics (`ConvTranspose`, the input gradient of `conv`): `x` is
//! `[N, C, spatial…]`, `w` is `[C, M/group, kernel…]`, the optional bias `b`
//! is `[M]`, and the output `[N, M, out…]` with
//! `out = stride · (in - 1) + output_padding + (kernel - 1) · dilation + 1 - pads`.
//! Attrs: `group`, the window attrs but `ceil_mode`, `output_padding` and
//! `output_shape` (which, when given, sets the pads, as does `auto_pad`
//! `SAME_UPPER`/`SAME_LOWER` for `out = in · stride`; the odd pad goes at
//! the end for `SAME_UPPER`).
//!
//! Each (image, group) is one GEMM on the matmul path (faer),
//! `col[Mg·K, O] = wᵀ[Mg·K, Cg] · x[Cg, O]` (the weight read in place,
//! transposed), then each column of `col` is added into the output where
//! the matching `conv` would have read it (col2im through the window's
//! [`gather_table`]).

use std::sync::Arc;

use ndarray::{ArrayView2, ArrayViewMut2};

use crate::dtype::Float;
use crate::error::{attr_err, dtype_err, op_err, rank_err, shape_err, Result};
use crate::ops::conv::{check_float, run_contiguous};
use crate::ops::linalg::MatMulElem;
use crate::ops::widen;
use crate::ops::window::{odometer, AutoPad, Window, PAD, WINDOW_ATTRS};
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::Tensor;

/// `conv_transpose` with its window, group count and output geometry.
#[derive(Clone, Debug)]
pub struct ConvTranspose {
    pub window: Window,
    pub group: usize,
    pub output_padding: Vec<usize>,
    /// The output's spatial shape, when given (it sets the pads).
    pub output_shape: Vec<usize>,
}

/// Sizes of one transposed convolution.
struct Dims {
    n: usize,
    c: usize,
    m: usize,
    axes: Vec<Axis>,
}

/// One spatial axis: input element `i`'s tap `k` lands on output element
/// `i · stride + k · dilation - pad_begin` when that is inside `0..output`.
/// A negative `pad_begin` (from an `output_shape` past what the window
/// reaches) shifts the output right; the end is simply longer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Axis {
    input: usize,
    output: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad_begin: i64,
}

/// For every kernel tap `k` and input position `i` (row-major, as
/// `k · inputs + i`), the output element it adds into, or [`PAD`].
fn scatter_table(axes: &[Axis]) -> Result<Vec<u32>> {
    let plane: usize = axes.iter().map(|a| a.output).product();
    if plane >= PAD as usize {
        return op_err(format!(
            "op 'conv_transpose': output plane of {plane} elements is too large"
        ));
    }
    let kernels: usize = axes.iter().map(|a| a.kernel).product();
    let inputs: usize = axes.iter().map(|a| a.input).product();
    let mut table = vec![PAD; kernels * inputs];
    let mut kk = vec![0usize; axes.len()];
    for k in 0..kernels {
        let mut ii = vec![0usize; axes.len()];
        for i in 0..inputs {
            let mut off = Some(0usize);
            for (d, a) in axes.iter().enumerate() {
                let p = (ii[d] * a.stride + kk[d] * a.dilation) as i64 - a.pad_begin;
                off = off
                    .filter(|_| p >= 0 && p < a.output as i64)
                    .map(|o| o * a.output + p as usize);
            }
            if let Some(off) = off {
                table[k * inputs + i] = off as u32;
            }
            odometer(&mut ii, axes.iter().map(|a| a.input));
        }
        odometer(&mut kk, axes.iter().map(|a| a.kernel));
    }
    Ok(table)
}

impl ConvTranspose {
    fn dims(&self, x: &[usize], w: &[usize], b: Option<&[usize]>) -> Result<Dims> {
        if x.len() < 3 || w.len() != x.len() {
            return rank_err(format!(
                "op 'conv_transpose': x must be [N, C, spatial…] and w [C, M/group, kernel…] of the same rank, got {x:?} and {w:?}"
            ));
        }
        let (c, g) = (x[1], self.group);
        if w[0] != c || c % g != 0 {
            return op_err(format!(
                "op 'conv_transpose': group {g} does not fit x {x:?} (C = {c}) and w {w:?} (needs w[0] = C, divisible by group)"
            ));
        }
        let m = w[1] * g;
        let kernel = &w[2..];
        if !self.window.kernel.is_empty() && self.window.kernel != kernel {
            return attr_err(format!(
                "op 'conv_transpose': attr 'kernel_shape' {:?} differs from the weight's {kernel:?}",
                self.window.kernel
            ));
        }
        if let Some(b) = b {
            if b != [m] {
                return shape_err(format!("op 'conv_transpose': bias must be [{m}], got {b:?}"));
            }
        }
        let axes = self.axes(&x[2..], kernel)?;
        Ok(Dims { n: x[0], c, m, axes })
    }

    /// The geometry of every spatial axis of input extents `input`.
    fn axes(&self, input: &[usize], kernel: &[usize]) -> Result<Vec<Axis>> {
        let n = input.len();
        let list = |key: &str, v: &[usize], want: usize, default: usize| -> Result<Vec<usize>> {
            match v.len() {
                0 => Ok(vec![default; want]),
                k if k == want => Ok(v.to_vec()),
                k => attr_err(format!(
                    "op 'conv_transpose': attr '{key}' has {k} values, the input has {n} spatial axes (needs {want})"
                )),
            }
        };
        let w = &self.window;
        let strides = list("strides", &w.strides, n, 1)?;
        let dilations = list("dilations", &w.dilations, n, 1)?;
        let pads = list("pads", &w.pads, 2 * n, 0)?;
        let extra = list("output_padding", &self.output_padding, n, 0)?;
        if let Some(i) = kernel.iter().position(|&k| k == 0) {
            return shape_err(format!(
                "op 'conv_transpose': spatial axis {i}: the kernel has extent 0, weight kernel shape {kernel:?}"
            ));
        }
        // `output_shape` may also hold N and C first.
        let shape = match self.output_shape.len() {
            0 => None,
            k if k == n => Some(&self.output_shape[..]),
            k if k == n + 2 => Some(&self.output_shape[2..]),
            k => {
                return attr_err(format!(
                    "op 'conv_transpose': attr 'output_shape' has {k} values, the input has {n} spatial axes"
                ))
            }
        };
        let mut axes = Vec::with_capacity(n);
        for i in 0..n {
            let (k, s, d, e) = (kernel[i], strides[i], dilations[i], extra[i]);
            if e >= s.max(d) {
                return attr_err(format!(
                    "op 'conv_transpose': attr 'output_padding' {e} on spatial axis {i} must be less than its stride {s} or dilation {d}"
                ));
            }
            let full = (s * input[i].saturating_sub(1) + e + (k - 1) * d + 1) as i64;
            let want = match (shape, w.auto_pad) {
                (Some(sh), _) => Some(sh[i] as i64),
                (None, AutoPad::SameUpper | AutoPad::SameLower) => Some((input[i] * s) as i64),
                (None, _) => None,
            };
            // ONNX's split of the total, with floor division: a negative
            // total (an output past the window's reach) pads negatively.
            let (pb, pe) = match want {
                Some(out) => {
                    let total = full - out;
                    if w.auto_pad == AutoPad::SameUpper {
                        (total.div_euclid(2), total - total.div_euclid(2))
                    } else {
                        (total - total.div_euclid(2), total.div_euclid(2))
                    }
                }
                None if w.auto_pad == AutoPad::Valid => (0, 0),
                None => (pads[i] as i64, pads[n + i] as i64),
            };
            let out = full - pb - pe;
            if out <= 0 && input[i] > 0 {
                return op_err(format!(
                    "op 'conv_transpose': spatial axis {i}: pads {pb} + {pe} leave no output of the {full} the window reaches"
                ));
            }
            axes.push(Axis {
                input: input[i],
                output: out.max(0) as usize,
                kernel: k,
                stride: s,
                dilation: d,
                pad_begin: pb,
            });
        }
        Ok(axes)
    }
}

/// The transposed convolution of contiguous `x` and `w` into contiguous
/// `out` (overwritten).
fn conv_transpose_kernel<T: Float + MatMulElem>(
    d: &Dims,
    group: usize,
    x: &[T],
    w: &[T],
    b: Option<&[T]>,
    out: &mut [T],
) -> Result<()> {
    let plane: usize = d.axes.iter().map(|a| a.output).product();
    let k: usize = d.axes.iter().map(|a| a.kernel).product();
    let o: usize = d.axes.iter().map(|a| a.input).product();
    let (cg, mg) = (d.c / group, d.m / group);
    let table = scatter_table(&d.axes)?;
    let mut col = vec![T::zero(); mg * k * o];
    let shape_err =
        |e: ndarray::ShapeError| crate::error::Error::Op(format!("internal: conv_transpose block: {e}"));
    for (i, v) in out.iter_mut().enumerate() {
        *v = b.map_or(T::zero(), |b| b[(i / plane.max(1)) % d.m]);
    }
    for n in 0..d.n {
        for g in 0..group {
            let xg = &x[(n * d.c + g * cg) * o..(n * d.c + (g + 1) * cg) * o];
            let wg = &w[g * cg * mg * k..(g + 1) * cg * mg * k];
            let a = ArrayView2::from_shape((cg, mg * k), wg).map_err(shape_err)?;
            let bm = ArrayView2::from_shape((cg, o), xg).map_err(shape_err)?;
            let mut cm = ArrayViewMut2::from_shape((mg * k, o), &mut col[..]).map_err(shape_err)?;
            T::gemm(&a.t(), &bm, &mut cm);
            for m in 0..mg {
                let dst = &mut out[(n * d.m + g * mg + m) * plane..][..plane];
                let rows = &col[m * k * o..(m + 1) * k * o];
                for (&at, &v) in table.iter().zip(rows) {
                    if at != PAD {
                        dst[at as usize] += v;
                    }
                }
            }
        }
    }
    Ok(())
}

impl Op for ConvTranspose {
    fn name(&self) -> &str {
        "conv_transpose"
    }
    fn arity(&self) -> Arity {
        Arity { min: 2, max: Some(3) }
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        check_float(
            "conv_transpose",
            &inputs.iter().map(|t| t.dtype).collect::<Vec<_>>(),
        )?;
        let (x, w) = (&inputs[0], &inputs[1]);
        if let (Some(xs), Some(ws)) = (x.static_shape(), w.static_shape()) {
            let b = inputs.get(2).and_then(|b| b.static_shape());
            let d = self.dims(&xs, &ws, b.as_deref())?;
            let mut out = vec![d.n, d.m];
            out.extend(d.axes.iter().map(|a| a.output));
            return Ok(vec![TypeInfo::known(x.dtype, &out)]);
        }
        Ok(vec![TypeInfo::new(x.dtype, x.rank().map(|r| vec![-1; r]))])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        if widen::wants_f32(inputs) {
            return widen::compute_in_f32(self, inputs, ctx);
        }
        check_arity(self, inputs.len())?;
        check_float(
            "conv_transpose",
            &inputs.iter().map(|t| t.dtype()).collect::<Vec<_>>(),
        )?;
        let d = self.dims(
            inputs[0].shape(),
            inputs[1].shape(),
            inputs.get(2).map(|b| b.shape()),
        )?;
        let mut shape = vec![d.n, d.m];
        shape.extend(d.axes.iter().map(|a| a.output));
        let dtype = inputs[0].dtype();
        let out = ctx.output(0, dtype, &shape)?;
        let g = self.group;
        crate::dispatch_float!(dtype, T => run_contiguous::<T>("conv_transpose", inputs, &out, |x, w, b, o| conv_transpose_kernel(&d, g, x, w, b, o))?,
            return dtype_err("op 'conv_transpose' takes float inputs"));
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = if self.group == 1 {
            Attrs::new()
        } else {
            Attrs::new().with("group", self.group)
        };
        if !self.output_padding.is_empty() {
            a = a.with("output_padding", self.output_padding.clone());
        }
        if !self.output_shape.is_empty() {
            a = a.with("output_shape", self.output_shape.clone());
        }
        self.window.to_attrs(a)
    }
}

impl ConvTranspose {
    fn from_attrs(a: &Attrs) -> Result<ConvTranspose> {
        let mut known = WINDOW_ATTRS.to_vec();
        known.extend(["group", "output_padding", "output_shape"]);
        a.only("conv_transpose", &known)?;
        let window = Window::from_attrs(a)?;
        if window.ceil_mode {
            return attr_err("op 'conv_transpose' has no attr 'ceil_mode'");
        }
        let group = a.i64("group")?.unwrap_or(1);
        if group < 1 {
            return attr_err(format!(
                "op 'conv_transpose': attr 'group' must be positive, got {group}"
            ));
        }
        Ok(ConvTranspose {
            window,
            group: group as usize,
            output_padding: a.usize_list("output_padding")?.unwrap_or_default(),
            output_shape: a.usize_list("output_shape")?.unwrap_or_default(),
        })
    }
}

pub fn register(r: &mut OpRegistry) {
    r.register("conv_transpose", |a: &Attrs| {
        Ok(Arc::new(ConvTranspose::from_attrs(a)?) as Arc<dyn Op>)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Distinct values, so that a misplaced element shows.
    fn ramp(n: usize, seed: u64) -> Vec<f64> {
        (0..n)
            .map(|i| ((i as u64 * 2654435761 + seed) % 1009) as f64 / 97.0 - 5.0)
            .collect()
    }

    /// The definition, one input element at a time: `x[n, c, i]` adds
    /// `x · w[c, m, k]` to `y[n, g·Mg + m, i·stride + k·dilation - pad]`.
    fn reference(d: &Dims, group: usize, x: &[f64], w: &[f64]) -> Vec<f64> {
        let (cg, mg) = (d.c / group, d.m / group);
        let plane: usize = d.axes.iter().map(|a| a.output).product();
        let o: usize = d.axes.iter().map(|a| a.input).product();
        let k: usize = d.axes.iter().map(|a| a.kernel).product();
        let mut y = vec![0.0; d.n * d.m * plane];
        let index = |mut flat: usize, sizes: &mut dyn Iterator<Item = usize>| {
            let sizes: Vec<usize> = sizes.collect();
            let mut idx = vec![0; sizes.len()];
            for (i, s) in sizes.iter().enumerate().rev() {
                idx[i] = flat % s;
                flat /= s;
            }
            idx
        };
        for n in 0..d.n {
            for c in 0..d.c {
                let g = c / cg;
                for oi in 0..o {
                    let ii = index(oi, &mut d.axes.iter().map(|a| a.input));
                    for ki in 0..k {
                        let kk = index(ki, &mut d.axes.iter().map(|a| a.kernel));
                        let (mut off, mut inside) = (0usize, true);
                        for (j, a) in d.axes.iter().enumerate() {
                            let p = (ii[j] * a.stride + kk[j] * a.dilation) as i64 - a.pad_begin;
                            inside &= p >= 0 && p < a.output as i64;
                            off = off * a.output + p.max(0) as usize;
                        }
                        if !inside {
                            continue;
                        }
                        for m in 0..mg {
                            let wv = w[(c * mg + m) * k + ki];
                            y[(n * d.m + g * mg + m) * plane + off] += x[(n * d.c + c) * o + oi] * wv;
                        }
                    }
                }
            }
        }
        y
    }

    fn op(attrs: Attrs) -> ConvTranspose {
        ConvTranspose::from_attrs(&attrs).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The kernel (groups, bias, strides, dilations, pads, output
        /// padding) against the definition, in 1, 2 and 3 spatial axes.
        #[test]
        fn conv_transpose_matches_the_definition(
            spec in prop::collection::vec((1usize..5, 1usize..4, 1usize..4, 1usize..3, 0usize..3, 0usize..3, 0usize..3), 1..4),
            n in 1usize..3,
            cg in 1usize..3,
            mg in 1usize..3,
            group in 1usize..4,
            bias in any::<bool>(),
        ) {
            let t = op(Attrs::new()
                .with("group", group)
                .with("strides", spec.iter().map(|a| a.2).collect::<Vec<_>>())
                .with("dilations", spec.iter().map(|a| a.3).collect::<Vec<_>>())
                .with("pads", spec.iter().map(|a| a.4).chain(spec.iter().map(|a| a.5)).collect::<Vec<_>>())
                .with("output_padding", spec.iter().map(|a| a.6 % a.2.max(a.3)).collect::<Vec<_>>()));
            let c = cg * group;
            let mut xs = vec![n, c];
            xs.extend(spec.iter().map(|a| a.0));
            let mut ws = vec![c, mg];
            ws.extend(spec.iter().map(|a| a.1));
            let Ok(d) = t.dims(&xs, &ws, None) else { return Ok(()) };
            agrees(&d, group, bias).map_err(TestCaseError::fail)?;
        }
    }

    /// The kernel against [`reference`] on ramps, with or without a bias.
    fn agrees(d: &Dims, group: usize, bias: bool) -> std::result::Result<(), String> {
        let plane: usize = d.axes.iter().map(|a| a.output).product();
        let o: usize = d.axes.iter().map(|a| a.input).product();
        let k: usize = d.axes.iter().map(|a| a.kernel).product();
        let x = ramp(d.n * d.c * o, 1);
        let w = ramp(d.c * (d.m / group) * k, 2);
        let b = ramp(d.m, 5);
        let mut got = vec![f64::NAN; d.n * d.m * plane];
        conv_transpose_kernel(d, group, &x, &w, bias.then_some(&b[..]), &mut got).unwrap();
        let mut want = reference(d, group, &x, &w);
        if bias {
            want.iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v += b[(i / plane) % d.m]);
        }
        for (i, (g, r)) in got.iter().zip(&want).enumerate() {
            if (g - r).abs() > 1e-9 * (1.0 + r.abs()) {
                return Err(format!("at {i}: {g} vs {r} ({:?})", d.axes));
            }
        }
        Ok(())
    }

    /// An `output_shape` past the window's reach pads negatively at both
    /// ends: the taps land shifted, the rest is the bias.
    /// A weight with a zero-size kernel axis is a shape error in `infer`
    /// and `compute`, not an overflow.
    #[test]
    fn a_zero_size_kernel_is_a_shape_error() {
        let t = op(Attrs::new());
        for (x, w) in [
            (vec![1, 1, 0, 1], vec![1, 1, 0, 1]),
            (vec![1, 2, 3], vec![2, 1, 0]),
        ] {
            let ty = |s: &[usize]| TypeInfo::known(crate::dtype::DType::F64, s);
            let e = t.infer(&[ty(&x), ty(&w)]).unwrap_err();
            assert!(matches!(e, crate::error::Error::Shape(_)), "{e}");
            let xt = Tensor::zeros(crate::dtype::DType::F64, &x).unwrap();
            let wt = Tensor::zeros(crate::dtype::DType::F64, &w).unwrap();
            let e = t.compute(&[xt, wt], &mut OpCtx::new("n")).unwrap_err();
            assert!(matches!(e, crate::error::Error::Shape(_)), "{e}");
        }
    }

    #[test]
    fn a_negative_pad_shifts_the_output() {
        let t = op(Attrs::new()
            .with("strides", vec![2, 1])
            .with("output_shape", vec![9, 6]));
        let d = t.dims(&[1, 2, 3, 2], &[2, 3, 2, 2], None).unwrap();
        assert_eq!(d.axes.iter().map(|a| a.pad_begin).collect::<Vec<_>>(), [-1, -1]);
        agrees(&d, 1, true).unwrap();
    }

    /// The output extents ONNX defines: from the pads, from `output_shape`
    /// (pads split with the odd one first, or last for `SAME_UPPER`), and
    /// `in · stride` for `SAME_UPPER`/`SAME_LOWER`.
    #[test]
    fn output_extents_follow_onnx() {
        let extents = |a: Attrs| {
            let axes = op(a).axes(&[3, 3], &[3, 3]).unwrap();
            axes.iter().map(|a| (a.output, a.pad_begin)).collect::<Vec<_>>()
        };
        // 2 · (3 - 1) + 3 = 7 without pads; [1, 2] pads take 2 and 4.
        let pads = Attrs::new()
            .with("strides", vec![2, 2])
            .with("pads", vec![1, 2, 1, 2]);
        assert_eq!(extents(pads), [(5, 1), (3, 2)]);
        let padded = Attrs::new()
            .with("strides", vec![3, 2])
            .with("output_padding", vec![1, 1]);
        assert_eq!(extents(padded), [(10, 0), (8, 0)]);
        let shaped = Attrs::new()
            .with("strides", vec![3, 2])
            .with("output_shape", vec![10, 8]);
        // Past the window's reach (9 and 7): the end pads are negative.
        assert_eq!(extents(shaped.clone()), [(10, 0), (8, 0)]);
        let shaped = shaped.with("output_shape", vec![8, 6]);
        assert_eq!(extents(shaped), [(8, 1), (6, 1)]);
        // Two past: the beginning pads negatively too, the output shifts.
        let shifted = Attrs::new().with("output_shape", vec![7, 5]);
        assert_eq!(extents(shifted), [(7, -1), (5, 0)]);
        let upper = Attrs::new()
            .with("strides", vec![2, 2])
            .with("auto_pad", "SAME_UPPER");
        assert_eq!(extents(upper), [(6, 0), (6, 0)]);
        let lower = Attrs::new()
            .with("strides", vec![2, 2])
            .with("auto_pad", "SAME_LOWER");
        assert_eq!(extents(lower), [(6, 1), (6, 1)]);
        let none = Attrs::new().with("pads", vec![3, 0, 2, 0]);
        let err = op(none).axes(&[3, 3], &[3, 3]).unwrap_err().to_string();
        assert!(err.contains("pads 3 + 2 leave no output of the 5"), "{err}");
        let bad = Attrs::new()
            .with("strides", vec![2, 2])
            .with("output_padding", vec![2, 0]);
        let err = op(bad).axes(&[3, 3], &[3, 3]).unwrap_err().to_string();
        assert!(err.contains("'output_padding' 2"), "{err}");
    }
}

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

use crate::dtype::{DType, Float, Num};
use crate::error::{op_err, Result};
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

    /// [`Finish::one`] over output row `row` (windows from `first` on,
    /// `inside` taps each), as one vector loop: the divisors go through
    /// `divs` first.
    fn row<T: Num>(self, row: &mut [T], first: usize, inside: impl Iterator<Item = usize>, divs: &mut [T]) {
        match self {
            Finish::Max => row.iter_mut().for_each(|m| *m = T::maximum(*m, *m)),
            Finish::Mean { padded } => {
                let divs = &mut divs[..row.len()];
                match padded {
                    Some(c) => divs
                        .iter_mut()
                        .zip(&c[first..])
                        .for_each(|(d, &n)| *d = count::<T>(n)),
                    None => divs.iter_mut().zip(inside).for_each(|(d, n)| *d = count::<T>(n)),
                }
                row.iter_mut().zip(divs.iter()).for_each(|(s, &d)| *s = *s / d);
            }
        }
    }
}

/// `n` as a divisor in T.
fn count<T: Num>(n: usize) -> T {
    <T as num_traits::NumCast>::from(n).unwrap_or_else(T::one)
}

impl<T: Num, S> Reduce<'_, T, S>
where
    S: Fn(T, T) -> T,
{
    /// Pools every contiguous input plane of `x` into the matching plane of
    /// `out`: 1-D and 2-D windows walk the input rows directly (see
    /// [`Reduce::planar`]), more spatial axes go through the gather table.
    fn planes(&self, x: &[T], out: &mut [T], axes: &[Axis1]) -> Result<()> {
        let plane: usize = axes.iter().map(|a| a.input).product();
        let o: usize = axes.iter().map(|a| a.output).product();
        let input = |p: usize| &x[p * plane..(p + 1) * plane];
        if let Some((h, w)) = planar(axes) {
            let cols: Vec<(usize, usize)> = (0..w.output).map(|ow| w.taps_inside(ow)).collect();
            for (p, dst) in out.chunks_exact_mut(o.max(1)).enumerate() {
                self.planar(input(p), dst, &h, &w, &cols);
            }
            return Ok(());
        }
        self.table(x, out, axes)
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

    /// One 2-D plane, an output row at a time: each kernel tap updates the
    /// whole run of windows that read it inside the input, so consecutive
    /// steps touch independent accumulators (no chain of dependent max or add
    /// per window) and every run is a straight vector loop. A strided row is
    /// first split into its `stride` phases (`phases`), so that the inputs
    /// of consecutive windows sit side by side. Each window still folds its
    /// taps in the gather table's order (rows, then columns), so results are
    /// bit for bit the table's. The taps inside a window form the rectangle
    /// `h.taps_inside` × `cols`.
    fn planar(&self, xp: &[T], dst: &mut [T], h: &Axis1, w: &Axis1, cols: &[(usize, usize)]) {
        let s = w.stride;
        // Each kernel column's run of windows and where its first input
        // sits in the split row (phase-major: phase p at p * len).
        let len = w.input.div_ceil(s);
        let runs: Vec<(usize, usize, usize)> = (0..w.kernel)
            .map(|kw| {
                let (lo, hi) = w.outputs_inside(kw);
                let iw = if lo < hi {
                    (w.start(lo) + (kw * w.dilation) as i64) as usize
                } else {
                    0
                };
                (lo, hi, (iw % s) * len + iw / s)
            })
            .filter(|&(lo, hi, _)| lo < hi)
            .collect();
        let mut split = vec![self.init; if s == 1 { 0 } else { s * len }];
        let mut divs = vec![self.init; w.output];
        for (oh, row) in dst.chunks_exact_mut(w.output).enumerate() {
            row.fill(self.init);
            let (kh_lo, kh_hi) = h.taps_inside(oh);
            for kh in kh_lo..kh_hi {
                let ih = (h.start(oh) + (kh * h.dilation) as i64) as usize;
                let src = &xp[ih * w.input..(ih + 1) * w.input];
                let src = if s == 1 {
                    src
                } else {
                    phases(src, s, &mut split);
                    &split[..]
                };
                // Windows every tap reads inside take their taps in one pass
                // (2 or 3 wide), the rest tap by tap; either way in order.
                let (mid_lo, mid_hi) = match (runs.len() == w.kernel, w.kernel) {
                    (true, 2) => self.fused::<2>(row, src, &runs),
                    (true, 3) => self.fused::<3>(row, src, &runs),
                    _ => (0, 0),
                };
                for &(lo, hi, at) in &runs {
                    for (a, b) in [(lo, hi.min(mid_lo)), (lo.max(mid_hi), hi)] {
                        if a < b {
                            row[a..b]
                                .iter_mut()
                                .zip(&src[at + (a - lo)..at + (b - lo)])
                                .for_each(|(acc, &v)| *acc = (self.step)(*acc, v));
                        }
                    }
                }
            }
            let inside = cols.iter().map(|&(lo, hi)| (kh_hi - kh_lo) * (hi - lo));
            self.finish.row(row, oh * w.output, inside, &mut divs);
        }
    }

    /// Folds all `K` taps of the windows every tap reads inside the input
    /// (`runs`: one per tap, as [`Reduce::planar`] has them) in one pass,
    /// and returns those windows' range (empty when there are none).
    fn fused<const K: usize>(
        &self,
        row: &mut [T],
        src: &[T],
        runs: &[(usize, usize, usize)],
    ) -> (usize, usize) {
        let lo = runs.iter().map(|r| r.0).max().unwrap_or(0);
        let hi = runs.iter().map(|r| r.1).min().unwrap_or(0);
        if lo >= hi {
            return (0, 0);
        }
        let n = hi - lo;
        let taps: [&[T]; K] = std::array::from_fn(|k| {
            let at = runs[k].2 + (lo - runs[k].0);
            &src[at..at + n]
        });
        for (j, acc) in row[lo..hi].iter_mut().enumerate() {
            let mut v = *acc;
            for t in &taps {
                v = (self.step)(v, t[j]);
            }
            *acc = v;
        }
        (lo, hi)
    }
}

/// Splits `src` into its `s` phases: `out[p * len + j] = src[j * s + p]`
/// with `len = ceil(src.len() / s)` (a phase's missing tail is left as is;
/// no window reads it).
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

    /// Bit equality, any NaN matching only a NaN with the same bits.
    fn same_bits(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits())
    }

    /// Bit equality, except that any NaN matches any NaN: the bits of a NaN
    /// that arithmetic makes (a sum of NaN and -NaN) are not specified by
    /// Rust, and may change with the operand order the compiler picks.
    fn same_bits_any_nan(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The planar walk gives what the gather table gives with the
        /// reference steps ([`Num::maximum`], `+`), bit for bit, for max
        /// (NaN, -inf, NaN with its sign bit set, and ±0 among the inputs)
        /// and both averages (NaN bits aside), with strides, dilations, pads and ceil_mode,
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
                let win = Window {
                    strides: spec.iter().map(|a| a.2).collect(),
                    dilations: spec.iter().map(|a| a.3).collect(),
                    pads: spec.iter().map(|a| a.4).chain(spec.iter().map(|a| a.5)).collect(),
                    ceil_mode: ceil,
                    ..Window::default()
                };
                let input: Vec<usize> = spec.iter().map(|a| a.0).collect();
                let kernel: Vec<usize> = spec.iter().map(|a| a.1).collect();
                let Ok(axes) = win.resolve("pool", &input, &kernel) else { continue };
                let n = planes * input.iter().product::<usize>();
                let o = planes * axes.iter().map(|a| a.output).product::<usize>();
                let mut x: Vec<f64> = (0..n).map(|i| ((i * 7919) % 101) as f64 - 50.0).collect();
                for (at, kind) in &specials {
                    if n > 0 {
                        x[at.index(n)] = [f64::NAN, -f64::NAN, f64::NEG_INFINITY, 0.0, -0.0][*kind];
                    }
                }
                let max = Reduce { init: <f64 as Num>::min_value(), step: <f64 as Num>::maximum, finish: Finish::Max };
                let counts = padded_counts(&axes);
                let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
                max_reduce::<f64>().planes(&x, &mut fast, &axes).unwrap();
                max.table(&x, &mut general, &axes).unwrap();
                prop_assert!(same_bits(&fast, &general), "max {:?}: {:?} vs {:?}", axes, fast, general);
                for c in [None, Some(&counts[..])] {
                    let avg = Reduce { init: 0.0, step: |s, v| s + v, finish: Finish::Mean { padded: c } };
                    average_reduce::<f64>(c).planes(&x, &mut fast, &axes).unwrap();
                    avg.table(&x, &mut general, &axes).unwrap();
                    prop_assert!(same_bits_any_nan(&fast, &general), "avg {c:?} {:?}: {:?} vs {:?}", axes, fast, general);
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
}

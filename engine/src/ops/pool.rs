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
/// `init` with `step`, then `finish(acc, inside, window)` gives the output
/// (`inside`: how many taps read inside the input).
struct Reduce<T, S, F> {
    init: T,
    step: S,
    finish: F,
}

impl<T: Num, S, F> Reduce<T, S, F>
where
    S: Fn(T, T) -> T,
    F: Fn(T, usize, usize) -> T,
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
                *d = (self.finish)(acc, n, i);
            }
        }
        Ok(())
    }

    /// One 2-D plane, an output row at a time: each kernel tap updates the
    /// whole run of windows that read it inside the input, so consecutive
    /// steps touch independent accumulators (no chain of dependent max or add
    /// per window) and a stride-1 run is a straight vector loop. The taps
    /// inside a window form the rectangle `h.taps_inside` × `cols`.
    fn planar(&self, xp: &[T], dst: &mut [T], h: &Axis1, w: &Axis1, cols: &[(usize, usize)]) {
        let runs: Vec<(usize, usize)> = (0..w.kernel).map(|kw| w.outputs_inside(kw)).collect();
        for (oh, row) in dst.chunks_exact_mut(w.output).enumerate() {
            row.fill(self.init);
            let (kh_lo, kh_hi) = h.taps_inside(oh);
            for kh in kh_lo..kh_hi {
                let ih = (h.start(oh) + (kh * h.dilation) as i64) as usize;
                let src = &xp[ih * w.input..(ih + 1) * w.input];
                for (kw, &(lo, hi)) in runs.iter().enumerate() {
                    if lo == hi {
                        continue;
                    }
                    let iw = (w.start(lo) + (kw * w.dilation) as i64) as usize;
                    let acc = &mut row[lo..hi];
                    if w.stride == 1 {
                        acc.iter_mut()
                            .zip(&src[iw..])
                            .for_each(|(a, &v)| *a = (self.step)(*a, v));
                    } else {
                        acc.iter_mut()
                            .zip(src[iw..].iter().step_by(w.stride))
                            .for_each(|(a, &v)| *a = (self.step)(*a, v));
                    }
                }
            }
            for (ow, (d, &(kw_lo, kw_hi))) in row.iter_mut().zip(cols).enumerate() {
                *d = (self.finish)(*d, (kh_hi - kh_lo) * (kw_hi - kw_lo), oh * w.output + ow);
            }
        }
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
                PoolKind::Max => {
                    let r = Reduce {
                        init: T::min_value(),
                        step: T::maximum,
                        finish: |m, _, _| m,
                    };
                    r.planes(xs, dst, axes)?
                }
                PoolKind::Average { count_include_pad } => {
                    let counts = count_include_pad.then(|| padded_counts(axes));
                    let r = Reduce {
                        init: T::zero(),
                        step: |s, v| s + v,
                        finish: |s, n, i| {
                            let n = counts.as_ref().map_or(n, |c| c[i]);
                            s / <T as num_traits::NumCast>::from(n).unwrap_or_else(T::one)
                        },
                    };
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The planar walk gives what the gather table gives, for max (NaN
        /// included) and both averages, with ceil_mode, in 1-D and 2-D.
        #[test]
        fn planar_pools_match_the_gather_table(
            h in axis(),
            w in axis(),
            ceil in any::<bool>(),
            planes in 1usize..3,
            nan_at in any::<Option<prop::sample::Index>>(),
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
                if let (Some(at), true) = (&nan_at, n > 0) {
                    x[at.index(n)] = f64::NAN;
                }
                let max = Reduce { init: f64::MIN, step: <f64 as Num>::maximum, finish: |m, _, _| m };
                let counts = padded_counts(&axes);
                let avg = Reduce { init: 0.0, step: |s, v| s + v, finish: |s, n, _| s / n as f64 };
                let avg_pad = Reduce { init: 0.0, step: |s, v| s + v, finish: |s, _, i| s / counts[i] as f64 };
                let same = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(p, q)| p == q || (p.is_nan() && q.is_nan()));
                let (mut fast, mut general) = (vec![0.5; o], vec![0.25; o]);
                max.planes(&x, &mut fast, &axes).unwrap();
                max.table(&x, &mut general, &axes).unwrap();
                prop_assert!(same(&fast, &general), "max {:?}: {:?} vs {:?}", axes, fast, general);
                avg.planes(&x, &mut fast, &axes).unwrap();
                avg.table(&x, &mut general, &axes).unwrap();
                prop_assert!(same(&fast, &general), "avg {:?}: {:?} vs {:?}", axes, fast, general);
                avg_pad.planes(&x, &mut fast, &axes).unwrap();
                avg_pad.table(&x, &mut general, &axes).unwrap();
                prop_assert!(same(&fast, &general), "avg pad {:?}: {:?} vs {:?}", axes, fast, general);
            }
        }
    }
}

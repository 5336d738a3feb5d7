//! Reductions with numpy semantics: `sum`, `prod`, `mean`, `max`, `min` over the
//! attr `axes` (a list of ints, negative allowed, default every axis) with
//! `keepdims` (default false), and `argmax` over the attr `axis` (default:
//! the flattened array) with `keepdims`, giving i64.
//!
//! - `sum`, `prod`, `max` and `min` keep the input dtype; integer sums and
//!   products wrap on overflow (numpy's behaviour) instead of panicking.
//! - `mean` takes float inputs only (cast integers first).
//! - bool inputs are rejected by every reduction (cast them first).
//! - `axes: []` reduces nothing (the output is a copy, as numpy's
//!   `axis=()`); a repeated axis is an error, as in numpy.
//! - The sum of an empty reduction is 0, its product 1 and its mean NaN; `max`, `min`
//!   and `argmax` over a zero-length reduced axis are errors (numpy raises),
//!   even when the output itself is empty.
//! - NaN propagates through `max`/`min`; `argmax` returns the index of the
//!   first NaN, else of the first maximum (ties give the first index).
//! - `argmax` with an `axis` attr on a 0-d input is an error (the axis is
//!   out of range); without `axis` it returns 0.

use std::sync::Arc;

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Axis, IxDyn, Zip};

use crate::dtype::{DType, Element, Float, Num};
use crate::error::{attr_err, dtype_err, op_err, refuse_dtype, shape_err, Error, Result};
use crate::kernels::rowsum::sum_rows;
use crate::ops::widen;
use crate::ops::{check_arity, Arity, Attrs, Op, OpCtx, OpRegistry, TypeInfo};
use crate::tensor::layout::resolve_axis;
use crate::tensor::Tensor;

/// Which reduction a [`Reduce`] op computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceKind {
    Sum,
    Prod,
    Mean,
    Max,
    Min,
}

impl ReduceKind {
    pub const ALL: [ReduceKind; 5] = [
        ReduceKind::Sum,
        ReduceKind::Prod,
        ReduceKind::Mean,
        ReduceKind::Max,
        ReduceKind::Min,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Prod => "prod",
            ReduceKind::Mean => "mean",
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
        }
    }

    /// Reductions without an identity fail on empty reduced axes.
    fn needs_nonempty(self) -> bool {
        matches!(self, ReduceKind::Max | ReduceKind::Min)
    }
}

// ----- shared helpers ---------------------------------------------------

/// Per-axis flags: true for the axes `axes` names (all when `None`).
fn axis_flags(op: &str, attr: &str, axes: Option<&[i64]>, ndim: usize) -> Result<Vec<bool>> {
    let Some(axes) = axes else {
        return Ok(vec![true; ndim]);
    };
    let mut flags = vec![false; ndim];
    for &a in axes {
        let i = resolve_axis(a, ndim).map_err(|e| Error::Attr(format!("op '{op}': attr '{attr}': {e}")))?;
        if std::mem::replace(&mut flags[i], true) {
            return attr_err(format!(
                "op '{op}': attr '{attr}': axis {a} is repeated (axis {i} of {ndim} dimensions)"
            ));
        }
    }
    Ok(flags)
}

/// The shape after reducing the flagged axes.
fn reduced_shape<D: Copy>(shape: &[D], flags: &[bool], keepdims: bool, one: D) -> Vec<D> {
    shape
        .iter()
        .zip(flags)
        .filter_map(|(&d, &f)| match (f, keepdims) {
            (false, _) => Some(d),
            (true, true) => Some(one),
            (true, false) => None,
        })
        .collect()
}

/// Fails when a flagged axis has length 0 (a reduction without identity).
fn check_nonempty(op: &str, shape: &[usize], flags: &[bool]) -> Result<()> {
    if let Some(ax) = flags.iter().zip(shape).position(|(&f, &d)| f && d == 0) {
        return shape_err(format!(
            "op '{op}': zero-size reduction over axis {ax} of input shape {shape:?} has no identity"
        ));
    }
    Ok(())
}

/// Static-shape counterpart of [`check_nonempty`].
fn check_nonempty_static(op: &str, shape: &[i64], flags: &[bool], s: &TypeInfo) -> Result<()> {
    if let Some(ax) = flags.iter().zip(shape).position(|(&f, &d)| f && d == 0) {
        return shape_err(format!(
            "op '{op}': zero-size reduction over axis {ax} of input shape {} has no identity",
            s.shape_string()
        ));
    }
    Ok(())
}

/// Writes `res` (the reduced array, reduced axes removed) into `out`,
/// re-inserting the reduced axes as length 1 when `keepdims`.
fn write_result<T: Element>(out: &Tensor, res: ArrayD<T>, flags: &[bool], keepdims: bool) -> Result<()> {
    let mut rv = res.view();
    if keepdims {
        for (ax, _) in flags.iter().enumerate().filter(|(_, &f)| f) {
            rv = rv.insert_axis(Axis(ax));
        }
    }
    if rv.shape() != out.shape() {
        return op_err(format!(
            "internal: reduced shape {:?} does not match the output shape {:?}",
            rv.shape(),
            out.shape()
        ));
    }
    out.write(|mut o: ArrayViewMutD<'_, T>| o.assign(&rv))
}

/// True for NaN (the only value not equal to itself), for any element type.
fn is_nan<T: PartialOrd>(x: T) -> bool {
    x.partial_cmp(&x).is_none()
}

/// Folds axis `ax` of `v` with `f` starting from `init`, walking the
/// contiguous axis lane by lane and any other axis subview by subview.
fn fold_axis_with<T: Element>(v: &ArrayViewD<'_, T>, ax: usize, init: T, f: impl Fn(T, T) -> T) -> ArrayD<T> {
    let axis = Axis(ax);
    if v.strides().get(ax).is_some_and(|s| s.unsigned_abs() == 1) {
        Zip::from(v.lanes(axis)).map_collect(|lane| lane.fold(init, |a, &b| f(a, b)))
    } else {
        v.fold_axis(axis, init, |&a, &b| f(a, b))
    }
}

/// Per-dtype pieces of the reductions: float sums use ndarray's unrolled
/// summation, integer sums wrap on overflow.
trait Reducible: Num {
    fn sum_all(v: &ArrayViewD<'_, Self>) -> Self;
    fn sum_along(v: &ArrayViewD<'_, Self>, ax: usize) -> ArrayD<Self>;
    /// The sum of a contiguous run, accumulated as [`Reducible::sum_all`].
    fn sum_slice(s: &[Self]) -> Self;
}

macro_rules! reducible_float {
    ($t:ty) => {
        impl Reducible for $t {
            fn sum_all(v: &ArrayViewD<'_, Self>) -> Self {
                v.sum()
            }
            fn sum_along(v: &ArrayViewD<'_, Self>, ax: usize) -> ArrayD<Self> {
                v.sum_axis(Axis(ax))
            }
            fn sum_slice(s: &[Self]) -> Self {
                ndarray::ArrayView1::from(s).sum()
            }
        }
    };
}
reducible_float!(f32);
reducible_float!(f64);

/// Sums accumulate in f32 and round once, as numpy's float16 reductions.
macro_rules! reducible_half {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn sum_all(v: &ArrayViewD<'_, Self>) -> Self {
                <$t>::from_f32(v.mapv(<$t>::to_f32).sum())
            }
            fn sum_along(v: &ArrayViewD<'_, Self>, ax: usize) -> ArrayD<Self> {
                v.mapv(<$t>::to_f32)
                    .sum_axis(Axis(ax))
                    .mapv(<$t>::from_f32)
            }
            fn sum_slice(s: &[Self]) -> Self {
                <$t>::from_f32(s.iter().map(|x| x.to_f32()).sum())
            }
        }
    )*};
}
reducible_half!(half::f16, half::bf16);

macro_rules! reducible_int {
    ($t:ty) => {
        impl Reducible for $t {
            fn sum_all(v: &ArrayViewD<'_, Self>) -> Self {
                v.fold(0, |a, &b| a.wrapping_add(b))
            }
            fn sum_along(v: &ArrayViewD<'_, Self>, ax: usize) -> ArrayD<Self> {
                fold_axis_with(v, ax, 0, <$t>::wrapping_add)
            }
            fn sum_slice(s: &[Self]) -> Self {
                s.iter().fold(0, |a, &b| a.wrapping_add(b))
            }
        }
    };
}
reducible_int!(i32);
reducible_int!(i64);
reducible_int!(u8);
reducible_int!(i8);
reducible_int!(u16);
reducible_int!(i16);
reducible_int!(u32);
reducible_int!(u64);

/// Reduces the flagged axes of `v` one at a time (highest first, so lower
/// axis numbers stay valid), or all at once for a full reduction.
fn reduce_flagged<T: Element>(
    v: &ArrayViewD<'_, T>,
    flags: &[bool],
    all: impl Fn(&ArrayViewD<'_, T>) -> T,
    along: impl Fn(&ArrayViewD<'_, T>, usize) -> ArrayD<T>,
) -> ArrayD<T> {
    if flags.iter().all(|&f| f) {
        return ArrayD::from_elem(IxDyn(&[]), all(v));
    }
    let mut res: Option<ArrayD<T>> = None;
    for ax in (0..flags.len()).rev().filter(|&ax| flags[ax]) {
        let next = match &res {
            None => along(v, ax),
            Some(r) => along(&r.view(), ax),
        };
        res = Some(next);
    }
    res.unwrap_or_else(|| v.to_owned())
}

fn reduce_num<T: Reducible>(kind: ReduceKind, v: &ArrayViewD<'_, T>, flags: &[bool]) -> ArrayD<T> {
    match kind {
        ReduceKind::Max => reduce_flagged(
            v,
            flags,
            |v| v.fold(T::min_value(), |a, &b| T::maximum(a, b)),
            |v, ax| fold_axis_with(v, ax, T::min_value(), T::maximum),
        ),
        ReduceKind::Min => reduce_flagged(
            v,
            flags,
            |v| v.fold(T::max_value(), |a, &b| T::minimum(a, b)),
            |v, ax| fold_axis_with(v, ax, T::max_value(), T::minimum),
        ),
        ReduceKind::Prod => reduce_flagged(
            v,
            flags,
            |v| v.fold(T::one(), |a, &b| T::mul_w(a, b)),
            |v, ax| fold_axis_with(v, ax, T::one(), T::mul_w),
        ),
        // Mean is handled by `reduce_mean`; sum is its numerator.
        ReduceKind::Sum | ReduceKind::Mean => reduce_flagged(v, flags, T::sum_all, T::sum_along),
    }
}

fn reduce_mean<T: Reducible + Float>(v: &ArrayViewD<'_, T>, flags: &[bool]) -> ArrayD<T> {
    let count: usize = v
        .shape()
        .iter()
        .zip(flags)
        .filter(|(_, &f)| f)
        .map(|(&d, _)| d)
        .product();
    // An empty reduction gives 0 / 0 = NaN, as numpy's mean.
    let n = T::from_f64(count as f64);
    let mut s = reduce_num(ReduceKind::Sum, v, flags);
    s.mapv_inplace(|x| x / n);
    s
}

/// The length of the run each output element sums when the flagged axes
/// are the trailing ones (some, not all) of a contiguous input, whose
/// outputs then follow in C order whether or not the axes are kept.
fn trailing_run(x: &Tensor, flags: &[bool], out: &Tensor) -> Option<usize> {
    let first = flags.iter().position(|&f| f)?;
    let trailing = first > 0 && flags[first..].iter().all(|&f| f);
    (trailing && x.is_contiguous() && out.is_contiguous()).then(|| x.shape()[first..].iter().product())
}

/// For `x` laid out in another order without gaps (a channels-last
/// image): `(outer, run, inner)` when, in memory order, the flagged axes
/// form one block between the kept ones and the kept ones keep their
/// order, so each output sums `run` elements `inner` apart
/// ([`crate::kernels::rowsum::sum_middle`]) and the outputs follow in C
/// order.
fn middle_run(x: &Tensor, flags: &[bool], out: &Tensor) -> Option<(Tensor, (usize, usize, usize))> {
    let (xm, order) = x.in_memory_order()?;
    if !out.is_contiguous() || !flags.iter().any(|&f| f) {
        return None;
    }
    let first = order.iter().position(|&a| flags[a])?;
    let last = order.iter().rposition(|&a| flags[a])?;
    let kept: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&a| !flags[a] && x.shape()[a] != 1)
        .collect();
    let block = order[first..=last].iter().all(|&a| flags[a]);
    let in_order = kept.windows(2).all(|w| w[0] < w[1]);
    let len = |axes: &[usize]| axes.iter().map(|&a| x.shape()[a]).product::<usize>();
    let dims = (
        len(&order[..first]),
        len(&order[first..=last]),
        len(&order[last + 1..]),
    );
    (block && in_order).then_some((xm, dims))
}

/// Sums the blocks of [`middle_run`] (`xm`: the input in memory order)
/// into `out`.
fn sum_middle<T: Num>(xm: &Tensor, dims: (usize, usize, usize), out: &Tensor) -> Result<()> {
    xm.read_contiguous(|xs: &[T]| {
        out.write_contiguous(|o: &mut [T]| {
            crate::kernels::rowsum::sum_middle(xs, dims, o, T::zero(), T::add_w)
        })
    })?
}

/// Sums the runs of [`trailing_run`] straight into `out`.
fn sum_trailing<T: Reducible>(x: &Tensor, len: usize, out: &Tensor) -> Result<()> {
    x.read_contiguous(|xs: &[T]| out.write_contiguous(|o: &mut [T]| sum_rows(xs, len, o, T::sum_slice)))?
}

fn run_reduce<T: Reducible>(
    kind: ReduceKind,
    x: &Tensor,
    flags: &[bool],
    keepdims: bool,
    out: &Tensor,
) -> Result<()> {
    if kind == ReduceKind::Sum {
        if let (Some((xm, dims)), true) = (
            middle_run(x, flags, out),
            matches!(T::DTYPE, DType::F32 | DType::F64),
        ) {
            return sum_middle::<T>(&xm, dims, out);
        }
        if let Some(len) = trailing_run(x, flags, out) {
            return sum_trailing::<T>(x, len, out);
        }
    }
    let res = x.read(|v: ArrayViewD<'_, T>| reduce_num(kind, &v, flags))?;
    write_result(out, res, flags, keepdims)
}

fn run_mean<T: Reducible + Float>(x: &Tensor, flags: &[bool], keepdims: bool, out: &Tensor) -> Result<()> {
    if let (Some((xm, dims)), true) = (
        middle_run(x, flags, out),
        matches!(T::DTYPE, DType::F32 | DType::F64),
    ) {
        sum_middle::<T>(&xm, dims, out)?;
        let n = T::from_f64(dims.1 as f64);
        return out.write_contiguous(|o: &mut [T]| o.iter_mut().for_each(|v| *v = *v / n));
    }
    if let Some(len) = trailing_run(x, flags, out) {
        sum_trailing::<T>(x, len, out)?;
        // 0 / 0 = NaN for empty runs, as numpy's mean.
        let n = T::from_f64(len as f64);
        return out.write_contiguous(|o: &mut [T]| o.iter_mut().for_each(|v| *v = *v / n));
    }
    let res = x.read(|v: ArrayViewD<'_, T>| reduce_mean(&v, flags))?;
    write_result(out, res, flags, keepdims)
}

// ----- sum / mean / max / min -------------------------------------------

/// `sum`, `mean`, `max` or `min` over `axes` (all when `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduce {
    pub kind: ReduceKind,
    pub axes: Option<Vec<i64>>,
    pub keepdims: bool,
}

impl Reduce {
    pub fn new(kind: ReduceKind, axes: Option<Vec<i64>>, keepdims: bool) -> Reduce {
        Reduce { kind, axes, keepdims }
    }

    fn check_dtype(&self, dtype: DType) -> Result<()> {
        let name = self.kind.name();
        if !dtype.is_computable() {
            return refuse_dtype(name, dtype);
        }
        if self.kind == ReduceKind::Mean && !dtype.is_float() {
            return dtype_err(format!(
                "op 'mean' takes float inputs, got {dtype} (insert a cast)"
            ));
        }
        Ok(())
    }

    fn flags(&self, ndim: usize) -> Result<Vec<bool>> {
        axis_flags(self.kind.name(), "axes", self.axes.as_deref(), ndim)
    }
}

impl Op for Reduce {
    fn name(&self) -> &str {
        self.kind.name()
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype)?;
        let shape = match &x.shape {
            None => None,
            Some(s) => {
                let flags = self.flags(s.len())?;
                if self.kind.needs_nonempty() {
                    check_nonempty_static(self.kind.name(), s, &flags, x)?;
                }
                Some(reduced_shape(s, &flags, self.keepdims, 1))
            }
        };
        Ok(vec![TypeInfo::new(x.dtype, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        let dtype = x.dtype();
        self.check_dtype(dtype)?;
        if self.kind != ReduceKind::Max && self.kind != ReduceKind::Min && widen::wants_f32(inputs) {
            // numpy's float16 sums and products accumulate in f32.
            return widen::compute_in_f32(self, inputs, ctx);
        }
        let flags = self.flags(x.ndim())?;
        if self.kind.needs_nonempty() {
            check_nonempty(self.kind.name(), x.shape(), &flags)?;
        }
        let shape = reduced_shape(x.shape(), &flags, self.keepdims, 1);
        let out = ctx.output(0, dtype, &shape)?;
        let (kind, keepdims) = (self.kind, self.keepdims);
        let bad = || dtype_err(format!("op '{}' does not take {dtype} inputs", kind.name()));
        if kind == ReduceKind::Mean {
            crate::dispatch_float!(dtype, T => run_mean::<T>(x, &flags, keepdims, &out)?, return bad());
        } else {
            crate::dispatch_num!(dtype, T => run_reduce::<T>(kind, x, &flags, keepdims, &out)?, return bad());
        }
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new();
        if let Some(axes) = &self.axes {
            a = a.with("axes", axes.clone());
        }
        if self.keepdims {
            a = a.with("keepdims", true);
        }
        a
    }
}

// ----- argmax -------------------------------------------------------------

/// Index of the first NaN, else of the first (or with `last`, the last)
/// maximum (or with `min`, minimum); 0 when empty.
fn argmax_of<'a, T: Element>(it: impl Iterator<Item = &'a T>, min: bool, last: bool) -> i64 {
    let mut best: Option<(usize, T)> = None;
    for (i, &x) in it.enumerate() {
        match best {
            None => best = Some((i, x)),
            Some((_, b)) if is_nan(b) => break,
            Some((_, b)) => {
                let better = match (min, last) {
                    (false, false) => x > b,
                    (false, true) => x >= b,
                    (true, false) => x < b,
                    (true, true) => x <= b,
                };
                if better || is_nan(x) {
                    best = Some((i, x));
                }
            }
        }
    }
    best.map_or(0, |(i, _)| i as i64)
}

fn argmax_kernel<T: Element>(
    v: &ArrayViewD<'_, T>,
    axis: Option<usize>,
    min: bool,
    last: bool,
) -> ArrayD<i64> {
    match axis {
        // `iter` walks the logical (C) order whatever the strides.
        None => ArrayD::from_elem(IxDyn(&[]), argmax_of(v.iter(), min, last)),
        Some(ax) => Zip::from(v.lanes(Axis(ax))).map_collect(|lane| argmax_of(lane.iter(), min, last)),
    }
}

/// `argmax` (or, with `min`, `argmin`) over `axis` (the flattened array
/// when `None`), giving i64; ties go to the first index, or the last with
/// `select_last` (ONNX's `select_last_index`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgMax {
    pub axis: Option<i64>,
    pub keepdims: bool,
    pub min: bool,
    pub select_last: bool,
}

impl ArgMax {
    fn check_dtype(&self, dtype: DType) -> Result<()> {
        if !dtype.is_computable() {
            return refuse_dtype(self.name(), dtype);
        }
        Ok(())
    }

    /// Flags of the reduced axes and the resolved axis.
    fn flags(&self, ndim: usize) -> Result<(Vec<bool>, Option<usize>)> {
        match self.axis {
            None => Ok((vec![true; ndim], None)),
            Some(a) => {
                let flags = axis_flags(self.name(), "axis", Some(&[a]), ndim)?;
                let ax = flags.iter().position(|&f| f);
                Ok((flags, ax))
            }
        }
    }
}

impl Op for ArgMax {
    fn name(&self) -> &str {
        if self.min {
            "argmin"
        } else {
            "argmax"
        }
    }
    fn arity(&self) -> Arity {
        Arity::exactly(1)
    }
    fn infer(&self, inputs: &[TypeInfo]) -> Result<Vec<TypeInfo>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype)?;
        let shape = match (&x.shape, self.axis) {
            (None, None) if !self.keepdims => Some(Vec::new()),
            (None, _) => None,
            (Some(s), _) => {
                let (flags, ax) = self.flags(s.len())?;
                let empty = match ax {
                    Some(ax) => s.get(ax) == Some(&0),
                    None => s.contains(&0),
                };
                if empty {
                    return shape_err(format!(
                        "op '{0}': attempt to get {0} of an empty sequence (input shape {1})",
                        self.name(),
                        x.shape_string()
                    ));
                }
                Some(reduced_shape(s, &flags, self.keepdims, 1))
            }
        };
        Ok(vec![TypeInfo::new(DType::I64, shape)])
    }
    fn compute(&self, inputs: &[Tensor], ctx: &mut OpCtx) -> Result<Vec<Tensor>> {
        check_arity(self, inputs.len())?;
        let x = &inputs[0];
        self.check_dtype(x.dtype())?;
        let (flags, axis) = self.flags(x.ndim())?;
        let empty = match axis {
            Some(ax) => x.shape().get(ax) == Some(&0),
            None => x.size() == 0,
        };
        if empty {
            return shape_err(format!(
                "op '{0}': attempt to get {0} of an empty sequence (input shape {1:?})",
                self.name(),
                x.shape()
            ));
        }
        let shape = reduced_shape(x.shape(), &flags, self.keepdims, 1);
        let out = ctx.output(0, DType::I64, &shape)?;
        let (min, last) = (self.min, self.select_last);
        let res = crate::dispatch_num!(x.dtype(), T => x.read(|v: ArrayViewD<'_, T>| argmax_kernel(&v, axis, min, last))?,
            return refuse_dtype(self.name(), x.dtype()));
        write_result(&out, res, &flags, self.keepdims)?;
        Ok(vec![out])
    }
    fn attrs(&self) -> Attrs {
        let mut a = Attrs::new();
        if let Some(axis) = self.axis {
            a = a.with("axis", axis);
        }
        if self.keepdims {
            a = a.with("keepdims", true);
        }
        if self.select_last {
            a = a.with("select_last", true);
        }
        a
    }
}

pub fn register(r: &mut OpRegistry) {
    for kind in ReduceKind::ALL {
        r.register(kind.name(), move |a: &Attrs| {
            a.only(kind.name(), &["axes", "keepdims"])?;
            let op = Reduce::new(kind, a.i64_list("axes")?, a.bool("keepdims")?.unwrap_or(false));
            Ok(Arc::new(op) as Arc<dyn Op>)
        });
    }
    for (name, min) in [("argmax", false), ("argmin", true)] {
        r.register(name, move |a: &Attrs| {
            a.only(name, &["axis", "keepdims", "select_last"])?;
            let op = ArgMax {
                axis: a.i64("axis")?,
                keepdims: a.bool("keepdims")?.unwrap_or(false),
                min,
                select_last: a.bool("select_last")?.unwrap_or(false),
            };
            Ok(Arc::new(op) as Arc<dyn Op>)
        });
    }
}

#[cfg(test)]
mod tests;
